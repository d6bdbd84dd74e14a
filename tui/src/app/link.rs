//! The server link as the model sees it: the `Request`s the UI sends (one on the wire at a time,
//! the rest queued in order), the `LinkState` the status bar shows, and what a connect, an
//! observation (`Observed`), an error frame or a disconnect changes.

use std::time::Duration;

use browserenv::models::BrowserAction;

use super::{App, Effect, LineKind};

/// What the UI asks of the server connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Reset(String),
    /// Reset to a task of the server's task set (`task_id`).
    ResetTask(String),
    /// Start the task of a campaign's lease (`campaign_lease`), as the person it is leased to.
    ResetLease {
        lease: String,
        task: String,
    },
    Step(BrowserAction),
    /// Text typed into the page but recorded (and shown) only as `<secret:NAME>`.
    Secret {
        name: String,
        action: BrowserAction,
    },
}

impl Request {
    /// Short human description for the status bar (never a secret's value).
    pub fn describe(&self) -> String {
        match self {
            Request::Reset(url) => format!("reset {url}"),
            Request::ResetTask(id) | Request::ResetLease { task: id, .. } => format!("task {id}"),
            Request::Step(action) => crate::command::describe(action),
            Request::Secret { name, .. } => format!("type <secret:{name}>"),
        }
    }

    pub fn is_reset(&self) -> bool {
        matches!(
            self,
            Request::Reset(_) | Request::ResetTask(_) | Request::ResetLease { .. }
        )
    }
}

/// Connection to the server, as the status bar shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    Connecting,
    Connected,
    /// The server is gone or closed the socket; `r` reconnects.
    Lost(String),
}

/// What the last observation said, kept for the status bar and the picture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub url: String,
    pub title: String,
    pub error: String,
    pub done: bool,
    pub step: u64,
    pub latency: Duration,
    pub reward: Option<f64>,
    /// A task episode's verdict at finish: passed, and the checks that failed.
    pub verdict: Option<(bool, String)>,
    /// The episode's own step limit (a task's), when the server reports it.
    pub max_steps: Option<u64>,
}

impl App {
    /// Send now, or queue behind the request in flight (shown in the status bar).
    pub(super) fn request(&mut self, request: Request) -> Vec<Effect> {
        if self.watch_mode && !self.in_control {
            let session = self.watching.as_deref().unwrap_or("nothing yet");
            let text = format!(
                "watching {session}: read-only, {} not sent (c: take control, Tab: next session)",
                request.describe()
            );
            self.error(text);
            return Vec::new();
        }
        if self.watch_mode && request.is_reset() {
            // One episode: the agent's. A reset would start another under it.
            self.error("the episode is the agent's: hand back (c) and let it reset");
            return Vec::new();
        }
        if self.link != LinkState::Connected {
            self.error(format!(
                "not connected: {} not sent (press r to reconnect)",
                request.describe()
            ));
            return Vec::new();
        }
        if self.in_flight.is_some() {
            self.notice(format!("queued: {}", request.describe()));
            self.queue.push_back(request);
            return Vec::new();
        }
        self.in_flight = Some(request.clone());
        vec![Effect::Send(request)]
    }

    pub(super) fn step(&mut self, action: BrowserAction) -> Vec<Effect> {
        if let Err(errors) = action.validate() {
            let text = errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            self.error(format!("invalid action: {text}"));
            return Vec::new();
        }
        self.request(Request::Step(action))
    }

    fn send_next(&mut self) -> Vec<Effect> {
        match self.queue.pop_front() {
            Some(next) => {
                self.in_flight = Some(next.clone());
                vec![Effect::Send(next)]
            }
            None => Vec::new(),
        }
    }

    /// Connected (or reconnected): a new episode starts, at the current task or the start URL;
    /// a watcher only says whom it follows.
    pub(super) fn on_connected(&mut self) -> Vec<Effect> {
        self.link = LinkState::Connected;
        if self.watch_mode {
            let session = self.watching.as_deref().unwrap_or("?");
            let text = format!("watching session {session} (c: take control; Tab: next session)");
            self.notice(text);
            return Vec::new();
        }
        self.notice(format!("connected to {}", self.server_label));
        if self.collecting() {
            return self.collect_on_connected();
        }
        if !self.tasks.is_empty() {
            let index = self.task_index.unwrap_or(0);
            return self.start_task(index);
        }
        let url = self.start_url.clone();
        self.request(Request::Reset(url))
    }

    /// An observation ends the request in flight; the next queued one goes out.
    pub(super) fn on_observation(&mut self, observed: Observed) -> Vec<Effect> {
        // A watched session's frames are anyone's steps: only the answer to this UI's own step
        // (`on_stepped`) ends the request in flight.
        let finished = if self.watch_mode {
            None
        } else {
            self.in_flight.take()
        };
        if let Some(request) = &finished {
            if request.is_reset() {
                self.notice(format!("new episode at {}", observed.url));
            } else if observed.error.is_empty() {
                self.notice(format!(
                    "{} took {} ms",
                    request.describe(),
                    observed.latency.as_millis()
                ));
            }
        }
        if !observed.error.is_empty() {
            let ended = browserenv::ObservationError::parse(&observed.error)
                .is_some_and(browserenv::ObservationError::ends_episode);
            let after = if ended {
                " (the episode is over: r resets)"
            } else {
                ""
            };
            self.page_error(format!("page error: {}{after}", observed.error));
        } else {
            self.clear_page_error();
        }
        if let Some((passed, why)) = &observed.verdict {
            self.say_verdict(*passed, why, observed.reward);
        }
        if observed.done {
            // Nothing queued can run in an ended episode.
            self.queue.clear();
        }
        if finished.is_some() {
            self.collect_on_observation(observed.done);
        }
        self.observed = Some(observed);
        let mut effects = vec![Effect::Redraw];
        if !self.watch_mode {
            effects.extend(self.send_next());
        }
        effects
    }

    /// Watch mode: the server answered this UI's step on the watched session.
    pub(super) fn on_stepped(&mut self) -> Vec<Effect> {
        if let Some(request) = self.in_flight.take() {
            self.notice(format!("{} done (you are in control)", request.describe()));
        }
        self.send_next()
    }

    /// Watch mode: who is in control changed, or the server answered take / release.
    pub(super) fn on_control(
        &mut self,
        holder: Option<String>,
        yours: Option<bool>,
    ) -> Vec<Effect> {
        let was_mine = self.in_control;
        self.in_control = match yours {
            Some(yours) => yours,
            None => self.in_control && holder.is_some(),
        };
        if was_mine && !self.in_control {
            self.queue.clear();
            self.in_flight = None;
            self.notice("control handed back: the agent drives again");
        } else if !was_mine && self.in_control {
            self.notice(
                "YOU ARE IN CONTROL: the keys drive the session; c hands back to the agent",
            );
        } else if holder != self.controller {
            match &holder {
                Some(name) if !self.in_control => {
                    self.notice(format!("{name} took control of this session"))
                }
                None => self.notice("the agent is in control again"),
                _ => {}
            }
        }
        self.controller = holder;
        vec![Effect::Redraw]
    }

    /// Watch mode: ask for control of the watched session, or hand it back.
    pub(super) fn toggle_control(&mut self) -> Vec<Effect> {
        if self.link != LinkState::Connected || self.watching.is_none() {
            self.error("no session to take control of yet");
            return Vec::new();
        }
        if self.in_control {
            if self.asking.is_some() {
                // The agent asked for a person: it gets what they say with the hand-back.
                return self.line(LineKind::HandBackNote, String::new());
            }
            self.hand_back(None)
        } else {
            if let Some(name) = &self.controller {
                self.error(format!("{name} holds control of this session"));
                return Vec::new();
            }
            self.notice("asking for control...");
            vec![Effect::Take]
        }
    }

    /// An error frame ends the request in flight, but not the session.
    pub(super) fn on_server_error(&mut self, code: String, message: String) -> Vec<Effect> {
        self.in_flight = None;
        self.error(format!("{code}: {message}"));
        self.send_next()
    }

    pub(super) fn on_disconnected(&mut self, reason: String) -> Vec<Effect> {
        self.in_flight = None;
        self.in_control = false;
        self.queue.clear();
        self.link = LinkState::Lost(reason.clone());
        self.error(format!("disconnected: {reason} (press r to reconnect)"));
        Vec::new()
    }
}
