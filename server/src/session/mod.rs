//! A session: one client's hold on the browser environment, whatever the transport. It owns the
//! environment (and so its browsers and the episode's secrets), a capacity slot, and its outlets
//! (`outlets.rs`: the watchers, the recording, the log, a campaign); `reset` and `step` are the
//! one path of every episode and action, the agent's and a person's, and delegate: the
//! environment makes the observation (`../environment/observation.rs`), the outlets take it, the
//! hand-off rules (`handoff.rs`) decide who may act. The transports (`websocket.rs`,
//! `http_session.rs`, `mcp/`) only turn their frames into these calls and the results back.
//!
//! A session is shared behind a lock (`SharedSession`): its transport holds it for each request,
//! and the text-layer requests of the terminal UI (`GET /sessions/{id}/text`) take it between
//! those requests, never during one.

pub mod control;
mod handoff;
mod outlets;
pub mod recording;
pub mod registry;

pub use handoff::{agent_reset, agent_step, ask_for_a_person};

use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::{Mutex, Notify};

use browserenv::models::{BrowserAction, BrowserState, StepResult};
use browserenv::secrets::{covered, shown_action};
use browserenv::text_layer::TextLayer;
use browserenv_collect::trajectory::{Actor, RecordEvent};

use crate::browser::Launcher;
use crate::environment::{EnvError, Environment, TaskCatalog};
use crate::operations::capacity::{AtCapacity, Capacity, Slot};
use crate::operations::drain::Lifecycle;
use crate::pool::WarmPool;
use crate::session::recording::SessionRecorder;
use crate::session::registry::{HumanAction, Registry, TextReply};
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
    /// The longest an agent's `request_human` waits.
    ask_wait: Duration,
    /// Serving or draining (`drain.rs`): a draining server opens no session and starts no episode.
    lifecycle: Lifecycle,
    /// The campaign (`--campaign`): a reset naming a lease makes the session a person's work.
    campaign: Option<Arc<crate::campaign::Hub>>,
    /// The server's archives (`archive/`).
    archives: Option<Arc<crate::archive::Archives>>,
    /// MiniWoB++'s tasks (`--miniwob`).
    miniwob: Option<Arc<crate::miniwob::MiniWob>>,
}

/// A session behind the lock its transport and its text-layer requests share.
pub type SharedSession<L> = Arc<Mutex<Session<L>>>;

pub struct Session<L: Launcher> {
    id: String,
    env: Environment<WarmPool<L>>,
    /// Where each reset and step goes besides its caller. Closing lets go of the registration,
    /// then the recorder, then the slot, in this order.
    outlets: outlets::Outlets,
    /// Who opened the session (`caller.rs`): a campaign person's session starts their leases.
    caller: crate::operations::caller::Caller,
    slot: Option<Slot>,
    handoff: handoff::HandOff,
    /// The newest observation (of either actor), as everyone but the person at the wheel sees
    /// it: what an agent that waited in vain gets.
    last: Option<StepResult>,
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
            ask_wait: crate::settings::DEFAULT_ASK_WAIT,
            lifecycle: Lifecycle::serving(),
            campaign: None,
            archives: None,
            miniwob: None,
        }
    }

    /// Record episodes into archives, and replay them from archives (`archive/`).
    pub fn with_archives(mut self, archives: Arc<crate::archive::Archives>) -> Self {
        self.archives = Some(archives);
        self
    }

    /// Let resets name MiniWoB++'s tasks (`--miniwob`).
    pub fn with_miniwob(mut self, miniwob: Option<Arc<crate::miniwob::MiniWob>>) -> Self {
        self.miniwob = miniwob;
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

    /// How long an agent's request waits while a person holds control, and how long its
    /// `request_human` may wait for one.
    pub fn with_handoff_wait(mut self, wait: Duration, ask_wait: Duration) -> Self {
        self.handoff_wait = wait;
        self.ask_wait = ask_wait;
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
        self.open_as(transport, peer, crate::operations::caller::Caller::Shared)
    }

    /// A new session opened by `caller`, whose token it keeps acting under (a campaign person's
    /// session is theirs: it starts their leases, and only they read its text).
    pub fn open_as(
        &self,
        transport: Transport,
        peer: String,
        caller: crate::operations::caller::Caller,
    ) -> Result<SharedSession<L>, AtCapacity> {
        if self.lifecycle.is_draining() {
            return Err(self.capacity.draining());
        }
        let slot = self.capacity.try_acquire()?;
        let id = format!("{}{}", transport.id_prefix(), uuid::Uuid::new_v4());
        let person = caller.person().map(str::to_string);
        let registration = self
            .registry
            .register(id.clone(), transport.as_str(), peer, person);
        let text_requests = registration.serve_text();
        let human_actions = registration.serve_human();
        let env = Environment::new(self.pool.clone(), self.settings.clone())
            .with_tasks(self.tasks.clone())
            .with_archives(self.archives.clone())
            .with_miniwob(self.miniwob.clone())
            .for_session(&id);
        let episode_ended = Arc::new(Notify::new());
        let control = registration.control().clone();
        let session = Arc::new(Mutex::new(Session {
            outlets: outlets::Outlets {
                recorder: Some(SessionRecorder::new(id.clone(), self.recorder.clone())),
                server_recorder: self.recorder.clone(),
                campaign: self.campaign.clone(),
                seat: None,
                recording_campaign: false,
                registration: Some(registration),
            },
            handoff: handoff::HandOff {
                control,
                wait: self.handoff_wait,
                ask_wait: self.ask_wait,
                human_steps: Vec::new(),
            },
            id,
            env,
            caller,
            slot: Some(slot),
            last: None,
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
                    let _ = reply.send(text.map_err(|err| err.to_string()));
                }
                action = human_actions.recv() => {
                    let Some(HumanAction { controller, action, secret, reply }) = action else { break };
                    let Some(session) = session.upgrade() else { break };
                    let result = session.lock().await.human_step(&controller, &action, secret).await;
                    let _ = reply.send(result.map_err(|err| err.to_string()));
                }
            }
        }
    });
}

impl<L: Launcher> Session<L> {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The actions this session takes (`BROWSER_ACTIONS`).
    pub fn actions(&self) -> browserenv::ActionSet {
        self.env.settings().actions
    }

    pub fn state(&self) -> BrowserState {
        self.env.state()
    }

    fn closed(&self) -> EnvError {
        if self.lifecycle.is_draining() {
            EnvError::ClosedByDrain
        } else {
            EnvError::Closed
        }
    }

    /// An episode has begun and not ended.
    pub fn running(&self) -> bool {
        !self.outlets.is_closed() && self.last.as_ref().is_some_and(|last| !last.done)
    }

    /// The server is draining and this session has no episode running: it may be closed.
    pub fn drained(&self) -> bool {
        self.lifecycle.is_draining() && !self.running()
    }

    pub fn is_closed(&self) -> bool {
        self.outlets.is_closed()
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
        if self.outlets.is_closed() {
            return Err(self.closed());
        }
        if self.lifecycle.is_draining() {
            return Err(EnvError::Draining);
        }
        let (seat, seat_kwargs) = self.take_seat(kwargs)?.unzip();
        // The session holds the lease from here, even if the reset fails: its end lets it go.
        self.outlets.seat = seat;
        let kwargs = seat_kwargs.as_ref().unwrap_or(kwargs);
        let own_view = self.env.reset(kwargs).await?;
        let result = covered(&own_view);
        // The person's steps belonged to the episode that just ended.
        self.handoff.human_steps.clear();
        let episode_id = self.env.state().episode_id;
        self.outlets
            .reset(&self.id, episode_id, self.env.task_id(), &result);
        self.remember(&result);
        // A campaign's client is the person demonstrating, at the wheel of their own page.
        Ok(if self.outlets.seat.is_some() {
            own_view
        } else {
            result
        })
    }

    /// The campaign seat a reset asks for (`campaign_lease`) and its keywords with the lease's
    /// task, for the session's caller (a lease is started by its own person's session only); a
    /// seat held until now and not asked for again goes back to the campaign.
    fn take_seat(
        &mut self,
        kwargs: &Map<String, Value>,
    ) -> Result<Option<crate::campaign::Seated>, EnvError> {
        let seated = match &self.outlets.campaign {
            Some(hub) => hub
                .seat(kwargs, &self.id, &self.caller)
                .map_err(EnvError::Campaign)?,
            None if kwargs.contains_key(crate::campaign::LEASE_KWARG) => {
                return Err(EnvError::NoCampaign)
            }
            None => None,
        };
        if let (Some(held), Some(hub)) = (self.outlets.seat.take(), &self.outlets.campaign) {
            if seated.as_ref().map(|(seat, _)| &seat.lease) != Some(&held.lease) {
                hub.leave(&held, &self.id);
            }
        }
        Ok(seated)
    }

    /// Apply one action by `actor`, then hand it to the outlets with its latency: the one step
    /// path of both the agent and the person in control. What a person marked `secret`, and
    /// typing into a secret field by anyone, leaves the server `redacted`; fields holding a
    /// secret are covered for everyone but the person at the wheel (`browserenv::secrets`).
    async fn step(
        &mut self,
        action: &BrowserAction,
        actor: Actor,
        secret: bool,
    ) -> Result<StepResult, EnvError> {
        if self.outlets.is_closed() {
            return Err(self.closed());
        }
        let started = Instant::now();
        let own_view = self.env.step(action, secret).await?;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        let shared = covered(&own_view);
        let shown = shown_action(action, &own_view, secret);
        let state = self.env.state();
        self.outlets.step(outlets::Stepped {
            session: &self.id,
            episode_id: state.episode_id,
            step: state.step_count,
            task: self.env.task_id(),
            action,
            shown: &shown,
            actor,
            result: &shared,
            latency_ms,
            verdict: self.env.take_verdict(),
        });
        self.remember(&shared);
        // The person at the wheel (in control of an agent's session, or a campaign's client
        // demonstrating) sees their own page; an agent sees what every outlet sees.
        let at_the_wheel = actor == Actor::Human || self.outlets.seat.is_some();
        Ok(if at_the_wheel { own_view } else { shared })
    }

    /// The current page's visible text (the terminal UI's text layer); the episode is untouched.
    pub async fn visible_text(&mut self) -> Result<TextLayer, EnvError> {
        if self.outlets.is_closed() {
            return Err(self.closed());
        }
        self.env.visible_text().await
    }

    /// End the session. It leaves the registry first (its watchers see it end), then its browser
    /// closes, then the recording ends and the slot is free: a client told that the session ended
    /// finds all of it released. Closing twice does nothing.
    pub async fn close(&mut self) {
        self.outlets.registration = None;
        if let (Some(seat), Some(hub)) = (self.outlets.seat.take(), &self.outlets.campaign) {
            hub.leave(&seat, &self.id);
        }
        self.env.close().await;
        self.outlets.recorder = None;
        self.slot = None;
    }
}

#[cfg(test)]
mod tests;
