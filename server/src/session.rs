//! A session: one client's hold on the browser environment, whatever the transport. It owns the
//! environment (and so its browsers), a capacity slot, its handle on the recorder and its entry
//! in the registry, and its `reset`/`step` do a step's bookkeeping (latency, recording,
//! publishing to watchers) in this one place. The transports (`websocket.rs`, `http_session.rs`,
//! and any later one) only turn their frames into these calls and the results back.
//!
//! A session is shared behind a lock (`SharedSession`): its transport holds it for each request,
//! and the text-layer requests of the terminal UI (`GET /sessions/{id}/text`) take it between
//! those requests, never during one.
//!
//! Hand-off: a person watching the session may take control (`control.rs`). The rule lives here,
//! in `agent_reset` and `agent_step`, the only way the transports drive a session: while a person
//! holds control the agent's request waits (without the lock, so the person's actions can run) for
//! at most `BROWSER_HANDOFF_WAIT_SECONDS`; a step still waiting then gets the current observation
//! with `metadata.control = "human"`, nothing done. The person's actions (`human_step`) take the
//! same step path, so they are counted, recorded and shown to watchers like the agent's, with
//! `actor: "human"`; the agent's next observation lists them in `metadata.human_steps`.

use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::{Mutex, Notify};

use browserenv::models::{BrowserAction, BrowserState, StepResult};
use browserenv::tasks::Verdict;
use browserenv::text_layer::TextLayer;
use browserenv::trajectory::{shown_action, Actor, RecordEvent};

use crate::browser::Launcher;
use crate::capacity::{AtCapacity, Capacity, Slot};
use crate::control::Control;
use crate::drain::Lifecycle;
use crate::environment::{EnvError, Environment, TaskCatalog};
use crate::pool::WarmPool;
use crate::recording::SessionRecorder;
use crate::registry::{HumanAction, Registration, Registry, TextReply};
use crate::settings::{EnvSettings, DEFAULT_HANDOFF_WAIT};

/// How a session's client reaches it; shown in `/sessions`, and the start of its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    WebSocket,
    Http,
    Mcp,
}

impl Transport {
    pub const ALL: [Transport; 3] = [Transport::WebSocket, Transport::Http, Transport::Mcp];

    pub fn as_str(self) -> &'static str {
        match self {
            Transport::WebSocket => "websocket",
            Transport::Http => "http",
            Transport::Mcp => "mcp",
        }
    }

    /// WebSocket sessions keep the bare id they always had.
    fn id_prefix(self) -> &'static str {
        match self {
            Transport::WebSocket => "",
            Transport::Http => "http-",
            Transport::Mcp => "mcp-",
        }
    }
}

/// Whether `id` is a session id as `Sessions::open` makes them: a transport's prefix, then a UUID.
pub fn is_session_id(id: &str) -> bool {
    Transport::ALL.iter().any(|transport| {
        id.strip_prefix(transport.id_prefix())
            .is_some_and(|uuid| uuid::Uuid::try_parse(uuid).is_ok())
    })
}

/// What every session of a server is made from: the browsers, the settings and tasks, the
/// capacity, the recorder and the registry.
pub struct Sessions<L: Launcher> {
    pool: Arc<WarmPool<L>>,
    settings: EnvSettings,
    tasks: Option<Arc<TaskCatalog>>,
    capacity: Arc<Capacity>,
    /// The recorder thread's inbox, when the server records (`--record-dir`).
    recorder: Option<Sender<RecordEvent>>,
    registry: Arc<Registry>,
    /// How long an agent's request waits for a person to hand control back.
    handoff_wait: Duration,
    /// Serving or draining (`drain.rs`): a draining server opens no session and starts no episode.
    lifecycle: Lifecycle,
    /// The campaign (`--campaign`): a reset naming a lease makes the session a person's work.
    campaign: Option<Arc<crate::campaign::Hub>>,
    /// The server's archives (`archive/`).
    archives: Option<Arc<crate::archive::Archives>>,
}

/// The server log's line for a judged task episode: its whole verdict, details included (the
/// observation shows only `Verdict::shown`).
fn verdict_line(
    session: &str,
    episode_id: Option<&str>,
    task: Option<&str>,
    verdict: &Verdict,
) -> String {
    let failed: Vec<&str> = verdict.failed.iter().map(|part| part.name()).collect();
    let result = if verdict.passed {
        "passed".to_string()
    } else {
        format!("failed ({})", failed.join(", "))
    };
    format!(
        "session {session}: episode {} of task {} {result}: {}",
        episode_id.unwrap_or("-"),
        task.unwrap_or("-"),
        verdict.details.join("; ")
    )
}

/// A session behind the lock its transport and its text-layer requests share.
pub type SharedSession<L> = Arc<Mutex<Session<L>>>;

pub struct Session<L: Launcher> {
    id: String,
    env: Environment<WarmPool<L>>,
    /// These three are let go by `close`, in this order.
    registration: Option<Registration>,
    recorder: Option<SessionRecorder>,
    slot: Option<Slot>,
    /// The server's recorder (`--record-dir`), which records the session's episodes unless they
    /// are a campaign's (recorded by the campaign's, with the person's name).
    server_recorder: Option<Sender<RecordEvent>>,
    campaign: Option<Arc<crate::campaign::Hub>>,
    /// The campaign lease the current episode is done under.
    seat: Option<crate::campaign::Seat>,
    /// `recorder` writes to the campaign's recording (else to the server's).
    recording_campaign: bool,
    /// Who drives: the agent, or a person who took control.
    control: Arc<Control>,
    handoff_wait: Duration,
    /// The newest observation (of either actor): what an agent that waited in vain gets.
    last: Option<StepResult>,
    /// The person's steps since the agent's last observation, for its next one.
    human_steps: Vec<Value>,
    /// What the person typed as secrets this episode: it stays in a plain field on the page, where
    /// the probe would read it back (the element's text, the text layer). Memory only.
    secrets: crate::secrets::Secrets,
    lifecycle: Lifecycle,
    /// Told when an episode ends, so a draining server closes the session (`close_when_drained`).
    episode_ended: Arc<Notify>,
}

impl<L: Launcher> Sessions<L> {
    pub fn new(
        pool: Arc<WarmPool<L>>,
        settings: EnvSettings,
        tasks: Option<Arc<TaskCatalog>>,
        max_sessions: usize,
        recorder: Option<Sender<RecordEvent>>,
    ) -> Self {
        Sessions {
            pool,
            settings,
            tasks,
            capacity: Arc::new(Capacity::new(max_sessions)),
            recorder,
            registry: Arc::new(Registry::default()),
            handoff_wait: DEFAULT_HANDOFF_WAIT,
            lifecycle: Lifecycle::serving(),
            campaign: None,
            archives: None,
        }
    }

    /// Record episodes into archives, and replay them from archives (`archive/`).
    pub fn with_archives(mut self, archives: Arc<crate::archive::Archives>) -> Self {
        self.archives = Some(archives);
        self
    }

    /// Run this campaign's sessions (`--campaign`).
    pub fn with_campaign(mut self, campaign: Option<Arc<crate::campaign::Hub>>) -> Self {
        self.campaign = campaign;
        self
    }

    /// Follow this lifecycle: while it drains, no session opens and no episode starts.
    pub fn with_lifecycle(mut self, lifecycle: Lifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }

    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    /// Whether a new session would be taken now: `ready`, `at_capacity` or `draining` (what
    /// `/ready` answers, and peers tell each other).
    pub fn readiness(&self) -> &'static str {
        if self.lifecycle.is_draining() {
            "draining"
        } else if self.capacity.active() >= self.capacity.max() {
            "at_capacity"
        } else {
            "ready"
        }
    }

    /// How long an agent's request waits while a person holds control.
    pub fn with_handoff_wait(mut self, wait: Duration) -> Self {
        self.handoff_wait = wait;
        self
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    pub fn capacity(&self) -> &Capacity {
        &self.capacity
    }

    pub fn settings(&self) -> &EnvSettings {
        &self.settings
    }

    /// A new session, if a slot is free: listed in the registry from now on, answering text-layer
    /// requests whenever its transport does not hold it.
    pub fn open(&self, transport: Transport, peer: String) -> Result<SharedSession<L>, AtCapacity> {
        if self.lifecycle.is_draining() {
            return Err(self.capacity.draining());
        }
        let slot = self.capacity.try_acquire()?;
        let id = format!("{}{}", transport.id_prefix(), uuid::Uuid::new_v4());
        let registration = self.registry.register(id.clone(), transport.as_str(), peer);
        let text_requests = registration.serve_text();
        let human_actions = registration.serve_human();
        let env = Environment::new(self.pool.clone(), self.settings.clone())
            .with_tasks(self.tasks.clone())
            .with_archives(self.archives.clone());
        let episode_ended = Arc::new(Notify::new());
        let session = Arc::new(Mutex::new(Session {
            recorder: Some(SessionRecorder::new(id.clone(), self.recorder.clone())),
            server_recorder: self.recorder.clone(),
            campaign: self.campaign.clone(),
            seat: None,
            recording_campaign: false,
            id,
            env,
            control: registration.control().clone(),
            registration: Some(registration),
            slot: Some(slot),
            handoff_wait: self.handoff_wait,
            last: None,
            human_steps: Vec::new(),
            secrets: crate::secrets::Secrets::default(),
            lifecycle: self.lifecycle.clone(),
            episode_ended: episode_ended.clone(),
        }));
        // A WebSocket session's own loop closes it when drained, together with its socket.
        let drain =
            (transport != Transport::WebSocket).then(|| (self.lifecycle.clone(), episode_ended));
        serve_watchers(
            Arc::downgrade(&session),
            text_requests,
            human_actions,
            drain,
        );
        Ok(session)
    }
}

/// Answer the session's text-layer requests and run the actions of the person in control, one
/// at a time, until it leaves the registry (which closes both queues). With `drain`, also close
/// the session once the server drains and its episode is over. The task holds the session only
/// weakly: it never keeps a session alive.
fn serve_watchers<L: Launcher>(
    session: std::sync::Weak<Mutex<Session<L>>>,
    mut text_requests: tokio::sync::mpsc::Receiver<TextReply>,
    mut human_actions: tokio::sync::mpsc::Receiver<HumanAction>,
    drain: Option<(Lifecycle, Arc<Notify>)>,
) {
    tokio::spawn(async move {
        // Once the drain has begun, look again only when an episode ends.
        let mut drain_seen = false;
        loop {
            tokio::select! {
                () = async {
                    let (lifecycle, ended) = drain.as_ref().expect("guarded");
                    if drain_seen { ended.notified().await } else { lifecycle.draining().await }
                }, if drain.is_some() => {
                    drain_seen = true;
                    let Some(session) = session.upgrade() else { break };
                    let mut session = session.lock().await;
                    if session.drained() {
                        tracing::info!("session {}: closed, the server is draining and its episode is over", session.id);
                        session.close().await;
                    }
                }
                reply = text_requests.recv() => {
                    let Some(reply) = reply else { break };
                    let Some(session) = session.upgrade() else { break };
                    let text = session.lock().await.visible_text().await;
                    let _ = reply.send(text.map_err(|err| err.0));
                }
                action = human_actions.recv() => {
                    let Some(HumanAction { controller, action, secret, reply }) = action else { break };
                    let Some(session) = session.upgrade() else { break };
                    let result = session.lock().await.human_step(&controller, &action, secret).await;
                    let _ = reply.send(result.map_err(|err| err.0));
                }
            }
        }
    });
}

/// The agent's reset: waits while a person holds control (see the module's documentation); still
/// waiting after `BROWSER_HANDOFF_WAIT_SECONDS`, it is refused and the episode is left as it is.
pub async fn agent_reset<L: Launcher>(
    shared: &SharedSession<L>,
    kwargs: &Map<String, Value>,
) -> Result<StepResult, EnvError> {
    match agents_turn(shared).await {
        Ok(mut session) => session.reset(kwargs).await,
        Err((session, waited)) => {
            let name = session.control.holder().map(|c| c.name.clone());
            Err(EnvError(format!(
                "{} holds control of this session: the reset waited {:.1} s (BROWSER_HANDOFF_WAIT_SECONDS); try again after the hand-back",
                name.unwrap_or_else(|| "a person".into()),
                waited.as_secs_f64()
            )))
        }
    }
}

/// The agent's step: waits while a person holds control; still waiting after
/// `BROWSER_HANDOFF_WAIT_SECONDS`, it gets the current observation (nothing done) with
/// `metadata.control = "human"`. Either way the person's steps so far are in `metadata.human_steps`.
pub async fn agent_step<L: Launcher>(
    shared: &SharedSession<L>,
    action: &BrowserAction,
) -> Result<StepResult, EnvError> {
    match agents_turn(shared).await {
        Ok(mut session) => session.step_as_agent(action).await,
        Err((mut session, _)) => session.while_human(),
    }
}

type Locked<'a, L> = tokio::sync::MutexGuard<'a, Session<L>>;
type Turn<'a, L> = Result<Locked<'a, L>, (Locked<'a, L>, Duration)>;

/// The session, locked, once the agent may act; or, after the hand-off wait, locked with a person
/// still in control, and how long it waited.
async fn agents_turn<L: Launcher>(shared: &SharedSession<L>) -> Turn<'_, L> {
    let started = tokio::time::Instant::now();
    loop {
        let session = shared.lock().await;
        if session.control.holder().is_none() {
            return Ok(session);
        }
        let (control, deadline) = (session.control.clone(), started + session.handoff_wait);
        // Waiting without the lock: the person's actions need it.
        drop(session);
        if !control.agents_turn(deadline).await {
            let session = shared.lock().await;
            // Handed back just as the wait ran out: the agent goes on.
            if session.control.holder().is_none() {
                return Ok(session);
            }
            return Err((session, started.elapsed()));
        }
    }
}

/// The most characters of `metadata.text` (`BROWSER_OBSERVE_TEXT`): `read_page`'s default bound.
pub const OBSERVE_TEXT_CHARS: usize = browserenv::text_layer::DEFAULT_COMPACT_CHARS;

/// The most characters of a URL in `metadata.human_steps`.
const HUMAN_STEP_URL_CHARS: usize = 2048;

impl<L: Launcher> Session<L> {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn state(&self) -> BrowserState {
        self.env.state()
    }

    fn closed(&self) -> EnvError {
        if self.lifecycle.is_draining() {
            EnvError(format!(
                "the session is closed: {}",
                crate::drain::DRAINING_MESSAGE
            ))
        } else {
            EnvError("the session is closed".into())
        }
    }

    /// An episode has begun and not ended.
    pub fn running(&self) -> bool {
        self.registration.is_some() && self.last.as_ref().is_some_and(|last| !last.done)
    }

    /// The server is draining and this session has no episode running: it may be closed.
    pub fn drained(&self) -> bool {
        self.lifecycle.is_draining() && !self.running()
    }

    pub fn is_closed(&self) -> bool {
        self.registration.is_none()
    }

    /// Keep the newest observation; a draining server hears of an episode that ended.
    fn remember(&mut self, result: &StepResult) {
        self.last = Some(result.clone());
        if result.done {
            self.episode_ended.notify_one();
        }
    }

    /// Start a new episode (keyword arguments as on the wire), record it and show it to watchers.
    async fn reset(&mut self, kwargs: &Map<String, Value>) -> Result<StepResult, EnvError> {
        if self.registration.is_none() {
            return Err(self.closed());
        }
        if self.lifecycle.is_draining() {
            return Err(EnvError(crate::drain::DRAINING_MESSAGE.into()));
        }
        let (seat, seat_kwargs) = self.take_seat(kwargs)?.unzip();
        // The session holds the lease from here, even if the reset fails: its end lets it go.
        self.seat = seat;
        let kwargs = seat_kwargs.as_ref().unwrap_or(kwargs);
        let mut result = self.env.reset(kwargs).await?;
        // The episode that ended leaves its archive with its secrets hidden.
        self.env.store_archive(&self.secrets);
        // The person's steps and secrets belonged to the episode that just ended.
        self.human_steps.clear();
        self.secrets = crate::secrets::Secrets::default();
        self.observe_text(&mut result).await;
        let episode_id = self.env.state().episode_id;
        // A campaign's episode goes to the campaign's recording, with the person's name.
        let (campaign, person) = match (&self.seat, &self.campaign) {
            (Some(seat), Some(hub)) => (Some(hub.recorder()), Some(seat.person.clone())),
            _ => (None, None),
        };
        if campaign.is_some() != self.recording_campaign {
            // The recorder of the episode before goes first: its end (an open episode
            // abandoned) must reach its disk before this episode starts on the other.
            self.recorder = None;
            self.recording_campaign = campaign.is_some();
            let events = campaign.or_else(|| self.server_recorder.clone());
            self.recorder = Some(SessionRecorder::new(self.id.clone(), events));
        }
        if let Some(recorder) = &self.recorder {
            recorder.reset(episode_id.clone(), self.env.task_id(), person, &result);
        }
        if let Some(registration) = &self.registration {
            registration.publish(episode_id, 0, None, Actor::Agent, &result, 0.0);
        }
        self.remember(&result);
        Ok(result)
    }

    /// The campaign seat a reset asks for (`campaign_lease`) and its keywords with the lease's
    /// task; a seat held until now and not asked for again goes back to the campaign.
    fn take_seat(
        &mut self,
        kwargs: &Map<String, Value>,
    ) -> Result<Option<crate::campaign::Seated>, EnvError> {
        let seated = match &self.campaign {
            Some(hub) => hub.seat(kwargs, &self.id).map_err(EnvError)?,
            None if kwargs.contains_key(crate::campaign::LEASE_KWARG) => {
                return Err(EnvError(
                    "this server runs no campaign (start it with --campaign DIR)".into(),
                ))
            }
            None => None,
        };
        if let (Some(held), Some(hub)) = (self.seat.take(), &self.campaign) {
            if seated.as_ref().map(|(seat, _)| &seat.lease) != Some(&held.lease) {
                hub.leave(&held, &self.id);
            }
        }
        Ok(seated)
    }

    /// The agent's action, once it has control: its observation lists the person's steps since
    /// its last one. An episode the person ended is not stepped again: the agent gets how it ended.
    async fn step_as_agent(&mut self, action: &BrowserAction) -> Result<StepResult, EnvError> {
        let ended_by_person =
            !self.human_steps.is_empty() && self.last.as_ref().is_some_and(|last| last.done);
        if ended_by_person {
            return self.current_observation(None);
        }
        let mut result = self.step(action, Actor::Agent, false).await?;
        self.hand_over_human_steps(&mut result);
        Ok(result)
    }

    /// An action of the person holding control as `controller`; a `secret` one's text leaves the
    /// server as `<redacted:N characters>` only (`shown_action`).
    async fn human_step(
        &mut self,
        controller: &str,
        action: &BrowserAction,
        secret: bool,
    ) -> Result<StepResult, EnvError> {
        if self
            .control
            .holder()
            .is_none_or(|holder| holder.id != controller)
        {
            return Err(EnvError(
                "you do not hold control of this session: take it first".into(),
            ));
        }
        let result = self.step(action, Actor::Human, secret).await?;
        // The agent learns that a person typed, never what they typed into a secret field.
        let shown = shown_action(action, &result, secret);
        self.human_steps.push(serde_json::json!({
            "step": self.env.state().step_count,
            "action": shown.to_value(),
            // A page can make its URL 2 MiB long (Chromium's limit); the agent has it whole in
            // the observation, and a start of it here, once per human step.
            "url": crate::browser::first_chars(&result.observation.url, HUMAN_STEP_URL_CHARS),
            "error": result.observation.error,
        }));
        Ok(result)
    }

    /// What an agent that waited in vain for the hand-back gets: the current observation, no
    /// action performed, `metadata.control = "human"` and who holds it.
    fn while_human(&mut self) -> Result<StepResult, EnvError> {
        let name = self.control.holder().map(|c| c.name.clone());
        self.current_observation(name)
    }

    /// The newest observation again, with the person's steps since the agent's last observation
    /// (and, while a person holds control, `control` and `controller`).
    fn current_observation(&mut self, controller: Option<String>) -> Result<StepResult, EnvError> {
        if self.registration.is_none() {
            return Err(self.closed());
        }
        let Some(mut result) = self.last.clone() else {
            return Err(EnvError("reset before stepping".into()));
        };
        let metadata = &mut result.observation.metadata;
        metadata.insert("step".into(), self.env.state().step_count.into());
        if let Some(name) = controller {
            metadata.insert("control".into(), "human".into());
            metadata.insert("controller".into(), name.into());
        }
        self.hand_over_human_steps(&mut result);
        Ok(result)
    }

    fn hand_over_human_steps(&mut self, result: &mut StepResult) {
        if !self.human_steps.is_empty() {
            let steps = std::mem::take(&mut self.human_steps);
            result
                .observation
                .metadata
                .insert("human_steps".into(), Value::Array(steps));
        }
    }

    /// Apply one action by `actor`, then record it with its latency and show it to watchers: the
    /// one step path of both the agent and the person in control. What a person marked `secret`,
    /// and typing into a secret field by anyone, is recorded and shown redacted (`shown_action`).
    async fn step(
        &mut self,
        action: &BrowserAction,
        actor: Actor,
        secret: bool,
    ) -> Result<StepResult, EnvError> {
        if self.registration.is_none() {
            return Err(self.closed());
        }
        let started = Instant::now();
        let mut result = self.env.step(action).await?;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        // A person's secret, and what anyone typed into a secret field, is hidden wherever the
        // page gives it back, from this step on (`secrets.rs`).
        if action.op == browserenv::models::Op::Type
            && (secret || browserenv::trajectory::typed_into_secret_field(action, &result))
        {
            self.secrets.add(&action.text);
        }
        self.observe_text(&mut result).await;
        self.secrets.hide_in_result(&mut result);
        self.env.store_archive(&self.secrets);
        let shown = shown_action(action, &result, secret);
        // A finished task episode's whole verdict goes to the log and the recording only, with
        // what was typed as a secret hidden in its details (they quote what the page holds).
        let verdict = self.env.take_verdict().map(|mut verdict| {
            for detail in &mut verdict.details {
                self.secrets.hide_in(detail);
            }
            verdict
        });
        if let Some(verdict) = &verdict {
            let state = self.env.state();
            tracing::info!(
                "{}",
                verdict_line(
                    &self.id,
                    state.episode_id.as_deref(),
                    self.env.task_id().as_deref(),
                    verdict
                )
            );
        }
        let check = verdict.as_ref().map(|v| v.passed);
        if let Some(recorder) = &self.recorder {
            if let Some(verdict) = verdict {
                recorder.verdict(verdict);
            }
            // The raw action with what to record for its text: the recorder redacts typing into a
            // secret field itself, a person's secret mark it cannot see.
            let marked = (secret && shown.text != action.text).then(|| shown.text.clone());
            // In a campaign the client is the person demonstrating.
            let actor = if self.seat.is_some() {
                Actor::Human
            } else {
                actor
            };
            recorder.step(action, actor, &result, latency_ms, marked);
        }
        // After the step went to the recorder: a demonstration is saved only once its episode's
        // end is on its way to the disk.
        if let (Some(seat), Some(hub)) = (&self.seat, &self.campaign) {
            hub.stepped(seat, &self.id);
            if result.done {
                let episode = self.env.state().episode_id.unwrap_or_default();
                hub.episode_ended(seat, &self.id, &episode, check);
            }
        }
        if let Some(registration) = &self.registration {
            let state = self.env.state();
            registration.publish(
                state.episode_id,
                state.step_count,
                Some(&shown),
                actor,
                &result,
                latency_ms,
            );
        }
        self.remember(&result);
        Ok(result)
    }

    /// With `BROWSER_OBSERVE_TEXT`: the page's text, in the compact form `read_page` gives, into
    /// the observation's `metadata` (`text`, `text_truncated`, and `timings_ms.text`), read the
    /// way `GET /sessions/{id}/text` reads it (so secrets stay hidden). A page that could not be
    /// pictured is not asked; one that cannot answer gives no text, `text_truncated` and
    /// `text_error`.
    async fn observe_text(&mut self, result: &mut StepResult) {
        if !self.env.settings().observe_text || result.observation.screenshot.is_empty() {
            return;
        }
        let started = Instant::now();
        let read = self.visible_text().await;
        let metadata = &mut result.observation.metadata;
        match read {
            Ok(layer) => {
                let compact = layer.compact(OBSERVE_TEXT_CHARS);
                metadata.insert("text".into(), compact.text.into());
                metadata.insert("text_truncated".into(), compact.truncated.into());
            }
            Err(err) => {
                metadata.insert("text".into(), "".into());
                metadata.insert("text_truncated".into(), true.into());
                metadata.insert("text_error".into(), err.0.into());
            }
        }
        let ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
        if let Some(Value::Object(timings)) = metadata.get_mut("timings_ms") {
            timings.insert("text".into(), ms.into());
            if let Some(total) = timings.get("total").and_then(Value::as_f64) {
                let total = ((total + ms) * 10.0).round() / 10.0;
                timings.insert("total".into(), total.into());
            }
        }
    }

    /// The current page's visible text (the terminal UI's text layer); the episode is untouched.
    pub async fn visible_text(&mut self) -> Result<TextLayer, EnvError> {
        if self.registration.is_none() {
            return Err(self.closed());
        }
        let mut layer = self.env.visible_text(&self.id).await?;
        for run in &mut layer.runs {
            self.secrets.hide_in(&mut run.text);
        }
        Ok(layer)
    }

    /// End the session. It leaves the registry first (its watchers see it end), then its browser
    /// closes, then the recording ends and the slot is free: a client told that the session ended
    /// finds all of it released. Closing twice does nothing.
    pub async fn close(&mut self) {
        self.registration = None;
        if let (Some(seat), Some(hub)) = (self.seat.take(), &self.campaign) {
            hub.leave(&seat, &self.id);
        }
        self.env.close().await;
        self.env.store_archive(&self.secrets);
        self.recorder = None;
        self.slot = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeLauncher, FakeScript};
    use serde_json::json;
    use std::time::Duration;

    fn sessions(
        max: usize,
    ) -> (
        Sessions<FakeLauncher>,
        std::sync::mpsc::Receiver<RecordEvent>,
    ) {
        let (events, recorded) = std::sync::mpsc::channel();
        let settings = EnvSettings {
            action_wait: Duration::from_millis(10),
            ..EnvSettings::default()
        };
        let pool = Arc::new(WarmPool::new(
            FakeLauncher::new(FakeScript::default()),
            false,
        ));
        let sessions = Sessions::new(pool, settings, None, max, Some(events));
        (sessions, recorded)
    }

    fn start(url: &str) -> Map<String, Value> {
        json!({"start_url": url}).as_object().unwrap().clone()
    }

    #[tokio::test]
    async fn only_the_ids_sessions_get_are_session_ids() {
        let (sessions, _recorded) = sessions(3);
        for transport in Transport::ALL {
            let shared = sessions.open(transport, "peer".into()).unwrap();
            let id = shared.try_lock().unwrap().id().to_string();
            assert!(is_session_id(&id), "{id}");
        }
        let uuid = "67e55044-10b1-426f-9247-bb680e5fe0c8";
        for id in [
            "",
            ".",
            "..",
            "a/b",
            "mcp-",
            "mcp-..",
            "nobody",
            &format!("x-{uuid}"),
        ] {
            assert!(!is_session_id(id), "{id}");
        }
    }

    #[tokio::test]
    async fn a_step_is_recorded_and_published_once_under_the_session_id() {
        let (sessions, recorded) = sessions(2);
        let shared = sessions.open(Transport::Http, "peer".into()).unwrap();
        let mut session = shared.lock().await;
        let id = session.id().to_string();
        assert!(id.starts_with("http-"));
        session.reset(&start("https://a.example/")).await.unwrap();
        let click = BrowserAction::click(10, 20);
        session.step(&click, Actor::Agent, false).await.unwrap();

        let listed = sessions.registry().get(&id).unwrap();
        assert_eq!((listed.transport, listed.step_count), ("http", 1));
        assert_eq!(listed.peer, "peer");
        let events: Vec<RecordEvent> = recorded.try_iter().collect();
        assert!(matches!(&events[..], [
            RecordEvent::Reset { session: a, .. },
            RecordEvent::Step { session: b, latency_ms, .. },
        ] if *a == id && *b == id && *latency_ms >= 0.0));
        let frame: Value = serde_json::from_str(&sessions.registry().latest(&id).unwrap()).unwrap();
        assert_eq!(frame["data"]["kind"], "step");
        assert_eq!(frame["data"]["action"]["x"], 10);
    }

    #[tokio::test]
    async fn closing_releases_the_registry_entry_the_recording_and_the_slot() {
        let (sessions, recorded) = sessions(1);
        let first = sessions.open(Transport::WebSocket, "a".into()).unwrap();
        let refused = sessions.open(Transport::Mcp, "b".into()).err().unwrap();
        assert_eq!(
            refused,
            AtCapacity {
                active: 1,
                max: 1,
                draining: false
            }
        );

        let mut session = first.lock().await;
        session.reset(&start("https://a.example/")).await.unwrap();
        let id = session.id().to_string();
        session.close().await;
        assert!(sessions.registry().get(&id).is_none());
        assert_eq!(sessions.capacity().active(), 0);
        assert!(
            matches!(recorded.try_iter().last(), Some(RecordEvent::End { session }) if session == id)
        );
        let after = session
            .step(&BrowserAction::wait(), Actor::Agent, false)
            .await;
        assert_eq!(after.unwrap_err().0, "the session is closed");
        session.close().await;
        drop(session);

        let next = sessions.open(Transport::Mcp, "b".into()).unwrap();
        assert!(next.lock().await.id().starts_with("mcp-"));
    }

    #[tokio::test]
    async fn text_requests_are_answered_between_requests() {
        let (sessions, _recorded) = sessions(1);
        let shared = sessions.open(Transport::WebSocket, "a".into()).unwrap();
        let id = shared.lock().await.id().to_string();
        let ask = || {
            let (reply, answer) = tokio::sync::oneshot::channel();
            assert!(sessions
                .registry()
                .request_text(&id, reply)
                .unwrap()
                .is_ok());
            answer
        };
        let before = ask().await.unwrap();
        assert_eq!(before.unwrap_err(), "no page yet: reset first");

        // Asked while the transport holds the session (a step in flight): answered after it.
        let mut held = shared.lock().await;
        let mut answer = ask();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            answer.try_recv().is_err(),
            "answered while the transport held the session"
        );
        held.reset(&start("https://a.example/")).await.unwrap();
        drop(held);
        let layer = answer.await.unwrap().unwrap();
        assert_eq!(layer.session, id);
    }

    /// A WebSocket session an agent has reset, with this hand-off wait, and its id.
    async fn an_agents_session(
        handoff_wait: Duration,
    ) -> (
        Sessions<FakeLauncher>,
        std::sync::mpsc::Receiver<RecordEvent>,
        SharedSession<FakeLauncher>,
        String,
    ) {
        let (sessions, recorded) = sessions(1);
        let sessions = sessions.with_handoff_wait(handoff_wait);
        let shared = sessions.open(Transport::WebSocket, "a".into()).unwrap();
        let id = shared.lock().await.id().to_string();
        agent_reset(&shared, &start("https://a.example/"))
            .await
            .unwrap();
        (sessions, recorded, shared, id)
    }

    #[tokio::test]
    async fn an_agent_waits_for_the_hand_back_and_hears_of_the_human_steps() {
        let (sessions, recorded, shared, id) = an_agents_session(Duration::from_secs(10)).await;
        let hold = sessions.registry().take_control(&id, "ana").unwrap();
        assert_eq!(
            sessions.registry().take_control(&id, "bo").err().unwrap(),
            "ana holds control of this session: one person at a time"
        );
        let listed = sessions.registry().get(&id).unwrap();
        assert_eq!(
            (listed.control, listed.human.as_deref()),
            ("human", Some("ana"))
        );

        let agent = tokio::spawn({
            let shared = shared.clone();
            async move { agent_step(&shared, &BrowserAction::scroll(100)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !agent.is_finished(),
            "the agent's step ran while a person held control"
        );
        let controller = hold.controller.id.clone();
        for action in [BrowserAction::click(5, 6), BrowserAction::wait()] {
            shared
                .lock()
                .await
                .human_step(&controller, &action, false)
                .await
                .unwrap();
        }
        let refused = shared
            .lock()
            .await
            .human_step("other", &BrowserAction::wait(), false)
            .await;
        assert!(refused.unwrap_err().0.contains("take it first"));
        drop(hold);

        let result = agent.await.unwrap().unwrap();
        let metadata = &result.observation.metadata;
        assert_eq!(metadata["step"], 3);
        assert!(metadata.get("control").is_none());
        let steps = metadata["human_steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0]["step"], 1);
        assert_eq!(steps[0]["action"]["op"], "click");
        assert_eq!(steps[1]["step"], 2);
        assert_eq!(shared.lock().await.state().step_count, 3);
        let actors: Vec<Option<Actor>> = recorded
            .try_iter()
            .filter_map(|event| match event {
                RecordEvent::Step { actor, .. } => Some(actor),
                _ => None,
            })
            .collect();
        assert_eq!(
            actors,
            [Some(Actor::Human), Some(Actor::Human), Some(Actor::Agent)]
        );
        // Listed once: the next observation has none.
        let next = agent_step(&shared, &BrowserAction::wait()).await.unwrap();
        assert!(next.observation.metadata.get("human_steps").is_none());
    }

    #[tokio::test]
    async fn an_agent_that_waits_too_long_gets_the_current_observation() {
        let (sessions, _recorded, shared, id) = an_agents_session(Duration::from_millis(100)).await;
        let hold = sessions.registry().take_control(&id, "ana").unwrap();
        let controller = hold.controller.id.clone();
        shared
            .lock()
            .await
            .human_step(&controller, &BrowserAction::click(1, 2), false)
            .await
            .unwrap();

        let result = agent_step(&shared, &BrowserAction::scroll(100))
            .await
            .unwrap();
        let metadata = &result.observation.metadata;
        assert_eq!(
            (&metadata["control"], &metadata["controller"]),
            (&json!("human"), &json!("ana"))
        );
        assert_eq!(metadata["step"], 1);
        assert_eq!(metadata["human_steps"].as_array().unwrap().len(), 1);
        assert_eq!(
            shared.lock().await.state().step_count,
            1,
            "the agent's action ran"
        );

        let reset = agent_reset(&shared, &start("https://b.example/")).await;
        assert!(reset
            .unwrap_err()
            .0
            .starts_with("ana holds control of this session"));
        // A dropped hold (the watcher's connection ended) hands back.
        drop(hold);
        assert_eq!(sessions.registry().get(&id).unwrap().control, "agent");
        let result = agent_step(&shared, &BrowserAction::scroll(100))
            .await
            .unwrap();
        assert!(result.observation.metadata.get("control").is_none());
        assert_eq!(shared.lock().await.state().step_count, 2);
    }

    #[tokio::test]
    async fn observed_text_is_off_by_default_and_hides_what_a_person_typed_as_a_secret() {
        let run = browserenv::text_layer::TextRun {
            text: "Signed in as hunter22".into(),
            x: 10,
            y: 20,
            width: 100,
            height: 18,
            size: 16.0,
            color: [0, 0, 0],
            bold: false,
            link: false,
            kind: browserenv::text_layer::RunKind::Text,
        };
        let script = FakeScript {
            text_runs: vec![run],
            ..FakeScript::default()
        };
        for observe_text in [false, true] {
            let settings = EnvSettings {
                action_wait: Duration::from_millis(10),
                observe_text,
                ..EnvSettings::default()
            };
            let pool = Arc::new(WarmPool::new(FakeLauncher::new(script.clone()), false));
            let sessions = Sessions::new(pool, settings, None, 1, None);
            let shared = sessions.open(Transport::WebSocket, "a".into()).unwrap();
            let mut session = shared.lock().await;
            let first = session.reset(&start("https://a.example/")).await.unwrap();
            let metadata = &first.observation.metadata;
            if !observe_text {
                assert!(metadata.get("text").is_none(), "the seed's metadata");
                assert!(metadata.get("text_truncated").is_none());
                assert!(metadata["timings_ms"].get("text").is_none());
                continue;
            }
            assert_eq!(metadata["text"], "10,20,100,18 Signed in as hunter22");
            assert_eq!(metadata["text_truncated"], false);
            assert!(metadata["timings_ms"]["text"].is_number());
            let typed = session
                .step(&BrowserAction::type_text("hunter22"), Actor::Human, true)
                .await
                .unwrap();
            assert_eq!(
                typed.observation.metadata["text"],
                format!(
                    "10,20,100,18 Signed in as {}",
                    browserenv::trajectory::redacted("hunter22")
                )
            );
            assert_eq!(session.state().step_count, 1, "reading is not a step");
        }
    }
}
