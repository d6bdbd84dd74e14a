//! A session: one client's hold on the browser environment, whatever the transport. It owns the
//! environment (and so its browsers), a capacity slot, its handle on the recorder and its entry
//! in the registry, and its `reset`/`step` do a step's bookkeeping (latency, recording,
//! publishing to watchers) in this one place. The transports (`websocket.rs`, `http_session.rs`,
//! and any later one) only turn their frames into these calls and the results back.
//!
//! A session is shared behind a lock (`SharedSession`): its transport holds it for each request,
//! and the text-layer requests of the terminal UI (`GET /sessions/{id}/text`) take it between
//! those requests, never during one.

use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};
use tokio::sync::Mutex;

use browserenv::models::{BrowserAction, BrowserState, StepResult};
use browserenv::text_layer::TextLayer;
use browserenv::trajectory::RecordEvent;

use crate::browser::Launcher;
use crate::capacity::{AtCapacity, Capacity, Slot};
use crate::environment::{EnvError, Environment, TaskCatalog};
use crate::pool::WarmPool;
use crate::recording::SessionRecorder;
use crate::registry::{Registration, Registry};
use crate::settings::EnvSettings;

/// How a session's client reaches it; shown in `/sessions`, and the start of its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    WebSocket,
    Http,
    Mcp,
}

impl Transport {
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
        }
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
        let slot = self.capacity.try_acquire()?;
        let id = format!("{}{}", transport.id_prefix(), uuid::Uuid::new_v4());
        let registration = self.registry.register(id.clone(), transport.as_str(), peer);
        let text_requests = registration.serve_text();
        let env = Environment::new(self.pool.clone(), self.settings.clone())
            .with_tasks(self.tasks.clone());
        let session = Arc::new(Mutex::new(Session {
            recorder: Some(SessionRecorder::new(id.clone(), self.recorder.clone())),
            id,
            env,
            registration: Some(registration),
            slot: Some(slot),
        }));
        serve_text(Arc::downgrade(&session), text_requests);
        Ok(session)
    }
}

/// Answer the session's text-layer requests until it leaves the registry (which closes the
/// queue). The task holds the session only weakly: it never keeps a session alive.
fn serve_text<L: Launcher>(
    session: std::sync::Weak<Mutex<Session<L>>>,
    mut requests: tokio::sync::mpsc::Receiver<crate::registry::TextReply>,
) {
    tokio::spawn(async move {
        while let Some(reply) = requests.recv().await {
            let Some(session) = session.upgrade() else {
                break;
            };
            let text = session.lock().await.visible_text().await;
            let _ = reply.send(text.map_err(|err| err.0));
        }
    });
}

impl<L: Launcher> Session<L> {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn state(&self) -> BrowserState {
        self.env.state()
    }

    fn closed() -> EnvError {
        EnvError("the session is closed".into())
    }

    /// Start a new episode (keyword arguments as on the wire), record it and show it to watchers.
    pub async fn reset(&mut self, kwargs: &Map<String, Value>) -> Result<StepResult, EnvError> {
        if self.registration.is_none() {
            return Err(Self::closed());
        }
        let result = self.env.reset(kwargs).await?;
        let episode_id = self.env.state().episode_id;
        if let Some(recorder) = &self.recorder {
            recorder.reset(episode_id.clone(), self.env.task_id(), &result);
        }
        if let Some(registration) = &self.registration {
            registration.publish(episode_id, 0, None, &result, 0.0);
        }
        Ok(result)
    }

    /// Apply one action, then record it with its latency and show it to watchers.
    pub async fn step(&mut self, action: &BrowserAction) -> Result<StepResult, EnvError> {
        if self.registration.is_none() {
            return Err(Self::closed());
        }
        let started = Instant::now();
        let result = self.env.step(action).await?;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        if let Some(recorder) = &self.recorder {
            recorder.step(action, &result, latency_ms);
        }
        if let Some(registration) = &self.registration {
            let state = self.env.state();
            registration.publish(
                state.episode_id,
                state.step_count,
                Some(action),
                &result,
                latency_ms,
            );
        }
        Ok(result)
    }

    /// The current page's visible text (the terminal UI's text layer); the episode is untouched.
    pub async fn visible_text(&mut self) -> Result<TextLayer, EnvError> {
        if self.registration.is_none() {
            return Err(Self::closed());
        }
        self.env.visible_text(&self.id).await
    }

    /// End the session. It leaves the registry first (its watchers see it end), then its browser
    /// closes, then the recording ends and the slot is free: a client told that the session ended
    /// finds all of it released. Closing twice does nothing.
    pub async fn close(&mut self) {
        self.registration = None;
        self.env.close().await;
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
    async fn a_step_is_recorded_and_published_once_under_the_session_id() {
        let (sessions, recorded) = sessions(2);
        let shared = sessions.open(Transport::Http, "peer".into()).unwrap();
        let mut session = shared.lock().await;
        let id = session.id().to_string();
        assert!(id.starts_with("http-"));
        session.reset(&start("https://a.example/")).await.unwrap();
        let click = BrowserAction::click(10, 20);
        session.step(&click).await.unwrap();

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
        assert_eq!(refused, AtCapacity { active: 1, max: 1 });

        let mut session = first.lock().await;
        session.reset(&start("https://a.example/")).await.unwrap();
        let id = session.id().to_string();
        session.close().await;
        assert!(sessions.registry().get(&id).is_none());
        assert_eq!(sessions.capacity().active(), 0);
        assert!(
            matches!(recorded.try_iter().last(), Some(RecordEvent::End { session }) if session == id)
        );
        let after = session.step(&BrowserAction::wait()).await;
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
}
