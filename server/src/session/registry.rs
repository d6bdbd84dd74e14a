//! Live sessions, for `GET /sessions` and read-only watchers (`/sessions/{id}/watch`).
//!
//! Each session publishes every reset and step as one pre-serialized frame on a broadcast
//! channel; watchers subscribe. The session never waits: with no watcher nothing is even
//! serialized, and a slow watcher that falls behind skips to the newest frame.
//!
//! A session may also take text-layer requests (`GET /sessions/{id}/text`): the route queues a
//! reply slot here and the session answers between its own requests, from its own browser. A
//! person who took control (`control.rs`) from a watch connection sends actions the same way.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, oneshot};

use browserenv::models::{BrowserAction, StepResult};
use browserenv::protocol::step_result_body;
use browserenv::text_layer::TextLayer;
use browserenv_collect::trajectory::Actor;

use crate::session::control::{Ask, Control, Controller};

/// How many frames a watcher may fall behind before it skips to the newest.
const WATCH_BACKLOG: usize = 8;
/// Text-layer requests a session may have waiting; more are refused as busy.
const TEXT_BACKLOG: usize = 4;

/// Where a session sends one text-layer answer (or why it has none).
pub type TextReply = oneshot::Sender<Result<TextLayer, String>>;

/// Actions a person in control may have waiting; the watch connection sends one at a time.
const HUMAN_BACKLOG: usize = 4;

/// One action of the person in control, and where its result (or why it was refused) goes.
pub struct HumanAction {
    /// The controller id the action is sent under; the session checks it still holds control.
    pub controller: String,
    pub action: BrowserAction,
    /// The person marked it secret (the terminal UI's `s`): what they type is theirs alone.
    pub secret: bool,
    pub reply: oneshot::Sender<Result<StepResult, String>>,
}

/// A new watcher's start: the newest frame so far (if any), and the stream of what follows.
pub type Subscription = (Option<Arc<str>>, broadcast::Receiver<Arc<str>>);

/// What `GET /sessions` shows of a session.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SessionInfo {
    pub id: String,
    pub episode_id: Option<String>,
    pub started: String,
    pub step_count: u64,
    pub url: String,
    pub done: bool,
    /// How its client reaches it: `websocket`, `http` or `mcp`.
    pub transport: &'static str,
    pub peer: String,
    /// A controller (the WebSocket or HTTP client driving it) is attached.
    pub controller: bool,
    /// Who drives it now: `agent`, or `human` while a person holds control.
    pub control: &'static str,
    /// The name of the person in control.
    pub human: Option<String>,
    pub watchers: usize,
    /// With `BROWSER_PEERS`: the replica that holds the session (`http://10.0.0.5:8000`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// The agent asks for a person (`request_human`): why, and since when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asking: Option<Ask>,
    /// The campaign person whose own token opened it (`--campaign`): only they read its text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
}

struct Entry {
    info: SessionInfo,
    events: broadcast::Sender<Arc<str>>,
    /// The newest event, so a watcher that attaches (or falls behind) starts from the current page.
    last: Option<Arc<LastEvent>>,
    /// The session's inbox for text-layer requests, once it serves them.
    text: Option<mpsc::Sender<TextReply>>,
    /// Who drives the session; the session holds the same slot.
    control: Arc<Control>,
    /// The session's inbox for the actions of the person in control, once it serves them.
    human: Option<mpsc::Sender<HumanAction>>,
}

struct LastEvent {
    session: String,
    episode_id: Option<String>,
    step: u64,
    time: String,
    action: Option<BrowserAction>,
    /// Who took the step (a reset is the agent's).
    actor: Actor,
    latency_ms: f64,
    result: StepResult,
}

impl LastEvent {
    /// The event as watchers get it, with who is in control as of now.
    fn frame(&self, control: &Control) -> Arc<str> {
        json!({
            "type": "event",
            "data": {
                "session": self.session,
                "kind": if self.action.is_some() { "step" } else { "reset" },
                "episode_id": self.episode_id,
                "step": self.step,
                "time": self.time,
                "action": self.action.as_ref().map(BrowserAction::to_value).unwrap_or(Value::Null),
                "actor": self.actor,
                "control": control.view(),
                "latency_ms": self.latency_ms,
                "result": step_result_body(&self.result),
            }
        })
        .to_string()
        .into()
    }
}

/// The frame watchers get when control changes hands.
fn control_frame(session: &str, control: &Control) -> Arc<str> {
    json!({
        "type": "event",
        "data": {
            "session": session,
            "kind": "control",
            "time": browserenv_collect::trajectory::now(),
            "control": control.view(),
        }
    })
    .to_string()
    .into()
}

#[derive(Default)]
pub struct Registry {
    sessions: Mutex<BTreeMap<String, Entry>>,
}

/// A session's registration; dropping it removes the session from the registry.
pub struct Registration {
    registry: Arc<Registry>,
    pub id: String,
    control: Arc<Control>,
}

/// A watch connection's hold on a session's control; dropping it hands back to the agent (a
/// watch connection that ends, however it ends, never leaves the agent waiting).
pub struct Hold {
    registry: Arc<Registry>,
    session: String,
    pub controller: Arc<Controller>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.registry.release(&self.session, &self.controller.id);
    }
}

/// An agent's open request for a person (`request_human`, `session::ask_for_a_person`). Dropped
/// before `answered` (the call was cancelled: its socket closed, its HTTP client went away), it
/// closes the request and tells every watcher, so the session is not left asking for good, nor
/// refusing every later `request_human`.
pub struct Asking {
    registry: Arc<Registry>,
    session: String,
    control: Arc<Control>,
    open: bool,
}

impl Asking {
    /// The call is being answered: its own answer closes the request.
    pub fn answered(mut self) {
        self.open = false;
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        if self.open {
            self.control.answered();
            self.registry.tell_control(&self.session, &self.control);
        }
    }
}

impl Registry {
    /// Tell a session's watchers who is in control (and whether the agent asks for a person).
    fn tell_control(&self, id: &str, control: &Control) {
        if let Ok(sessions) = self.sessions.lock() {
            if let Some(entry) = sessions.get(id) {
                let _ = entry.events.send(control_frame(id, control));
            }
        }
    }

    pub fn register(
        self: &Arc<Self>,
        id: String,
        transport: &'static str,
        peer: String,
        person: Option<String>,
    ) -> Registration {
        let (events, _) = broadcast::channel(WATCH_BACKLOG);
        let info = SessionInfo {
            id: id.clone(),
            episode_id: None,
            started: browserenv_collect::trajectory::now(),
            step_count: 0,
            url: String::new(),
            done: false,
            transport,
            peer,
            controller: true,
            control: "agent",
            human: None,
            watchers: 0,
            replica: None,
            asking: None,
            person,
        };
        let control = Arc::new(Control::default());
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(
                id.clone(),
                Entry {
                    info,
                    events,
                    last: None,
                    text: None,
                    control: control.clone(),
                    human: None,
                },
            );
        }
        Registration {
            registry: self.clone(),
            id,
            control,
        }
    }

    pub fn list(&self) -> Vec<SessionInfo> {
        self.sessions
            .lock()
            .map(|sessions| {
                sessions
                    .values()
                    .map(|e| {
                        let human = e.control.holder().map(|c| c.name.clone());
                        SessionInfo {
                            watchers: e.events.receiver_count(),
                            control: if human.is_some() { "human" } else { "agent" },
                            human,
                            asking: e.control.asking(),
                            ..e.info.clone()
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn get(&self, id: &str) -> Option<SessionInfo> {
        self.list().into_iter().find(|s| s.id == id)
    }

    /// Subscribe to a session's frames: the newest frame so far, then every new one.
    pub fn watch(&self, id: &str) -> Option<Subscription> {
        let sessions = self.sessions.lock().ok()?;
        let entry = sessions.get(id)?;
        Some((
            entry.last.as_ref().map(|l| l.frame(&entry.control)),
            entry.events.subscribe(),
        ))
    }

    /// Take control of a session for the person `name`: refused while another person holds it.
    /// Every watcher is told.
    pub fn take_control(self: &Arc<Self>, id: &str, name: &str) -> Result<Hold, String> {
        let sessions = self
            .sessions
            .lock()
            .map_err(|_| "the registry is unavailable".to_string())?;
        let entry = sessions
            .get(id)
            .ok_or_else(|| format!("no session {id:?}"))?;
        let controller = entry.control.take(name)?;
        let _ = entry.events.send(control_frame(id, &entry.control));
        Ok(Hold {
            registry: self.clone(),
            session: id.to_string(),
            controller,
        })
    }

    /// Hand a session back to its agent, if `controller` still holds it; every watcher is told.
    fn release(&self, id: &str, controller: &str) {
        let Ok(sessions) = self.sessions.lock() else {
            return;
        };
        if let Some(entry) = sessions.get(id) {
            if entry.control.release(controller) {
                let _ = entry.events.send(control_frame(id, &entry.control));
            }
        }
    }

    /// What the person in control says to the agent as they hand back (`request_human`'s answer),
    /// if `controller` still holds the session.
    pub fn leave_note(&self, id: &str, controller: &str, note: String) {
        let Ok(sessions) = self.sessions.lock() else {
            return;
        };
        if let Some(entry) = sessions.get(id) {
            if entry.control.holder().is_some_and(|c| c.id == controller) {
                entry.control.leave_note(note);
            }
        }
    }

    /// Queue an action of the person in control for the session; refused when the session is
    /// gone or has too many waiting.
    pub fn send_human_action(&self, id: &str, action: HumanAction) -> Result<(), String> {
        let sender = self
            .sessions
            .lock()
            .ok()
            .and_then(|sessions| sessions.get(id)?.human.clone())
            .ok_or_else(|| "the session ended".to_string())?;
        sender.try_send(action).map_err(|err| match err {
            mpsc::error::TrySendError::Full(_) => {
                format!("more than {HUMAN_BACKLOG} actions waiting: send one at a time")
            }
            mpsc::error::TrySendError::Closed(_) => "the session ended".to_string(),
        })
    }

    /// Queue a text-layer request for a session. None: no such session (or it takes none);
    /// `Err` holds the reply slot back when the session has too many waiting.
    pub fn request_text(&self, id: &str, reply: TextReply) -> Option<Result<(), TextReply>> {
        let sender = self.sessions.lock().ok()?.get(id)?.text.clone()?;
        Some(sender.try_send(reply).map_err(|err| match err {
            mpsc::error::TrySendError::Full(reply) | mpsc::error::TrySendError::Closed(reply) => {
                reply
            }
        }))
    }

    /// The newest frame of a session (for a watcher that fell behind).
    pub fn latest(&self, id: &str) -> Option<Arc<str>> {
        self.sessions
            .lock()
            .ok()?
            .get(id)
            .and_then(|entry| Some(entry.last.as_ref()?.frame(&entry.control)))
    }
}

impl Registration {
    /// The session's control slot (shared with its registry entry).
    pub fn control(&self) -> &Arc<Control> {
        &self.control
    }

    /// The agent asks for a person, or (`None`) no longer does: every watcher is told.
    pub fn ask(&self, reason: Option<&str>) -> Result<(), String> {
        match reason {
            Some(reason) => self.control.ask(reason)?,
            None => self.control.answered(),
        }
        self.registry.tell_control(&self.id, &self.control);
        Ok(())
    }

    /// The open request for a person (after `ask(Some(…))`), closed when dropped unanswered.
    pub fn asking(&self) -> Asking {
        Asking {
            registry: self.registry.clone(),
            session: self.id.clone(),
            control: self.control.clone(),
            open: true,
        }
    }

    /// Publish a reset (`action` None) or a step by `actor` and update the session's facts.
    pub fn publish(
        &self,
        episode_id: Option<String>,
        step_count: u64,
        action: Option<&BrowserAction>,
        actor: Actor,
        result: &StepResult,
        latency_ms: f64,
    ) {
        let Ok(mut sessions) = self.registry.sessions.lock() else {
            return;
        };
        let Some(entry) = sessions.get_mut(&self.id) else {
            return;
        };
        entry.info.episode_id = episode_id.clone();
        entry.info.step_count = step_count;
        entry.info.url = result.observation.url.clone();
        entry.info.done = result.done;
        let last = Arc::new(LastEvent {
            session: self.id.clone(),
            episode_id,
            step: step_count,
            time: browserenv_collect::trajectory::now(),
            action: action.cloned(),
            actor,
            latency_ms,
            result: result.clone(),
        });
        // Nobody watching: keep the event, build no frame.
        if entry.events.receiver_count() > 0 {
            let _ = entry.events.send(last.frame(&entry.control));
        }
        entry.last = Some(last);
    }

    /// Take text-layer requests from now on; the session answers what arrives here.
    pub fn serve_text(&self) -> mpsc::Receiver<TextReply> {
        let (sender, requests) = mpsc::channel(TEXT_BACKLOG);
        if let Ok(mut sessions) = self.registry.sessions.lock() {
            if let Some(entry) = sessions.get_mut(&self.id) {
                entry.text = Some(sender);
            }
        }
        requests
    }

    /// Take the actions of the person in control from now on; the session runs what arrives here.
    pub fn serve_human(&self) -> mpsc::Receiver<HumanAction> {
        let (sender, actions) = mpsc::channel(HUMAN_BACKLOG);
        if let Ok(mut sessions) = self.registry.sessions.lock() {
            if let Some(entry) = sessions.get_mut(&self.id) {
                entry.human = Some(sender);
            }
        }
        actions
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut sessions) = self.registry.sessions.lock() {
            sessions.remove(&self.id);
        }
    }
}
