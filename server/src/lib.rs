//! The browser environment server: OpenEnv's reset/step/state over WebSocket and HTTP, each
//! session driving its own private headless Chromium.
//!
//! `serve` is what both `main` and the tests call; `start` wraps it for in-process use (tests, the
//! benchmark, the terminal UI's embedded server).
//!
//! `docs/ARCHITECTURE.md` follows one step through these modules and says where each concern
//! lives; it also defines "the seed" (the original Python environment, whose settings, actions,
//! error codes and end conditions this server keeps). The wire contract is `docs/wire.md`.

pub mod api_error;
pub mod app;
pub mod archive;
pub mod browser;
pub mod campaign;
pub mod capped;
pub mod chromium;
pub mod cli;
pub mod environment;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod miniwob;
pub mod openapi;
pub mod operations;
pub mod pool;
pub mod replicas;
pub mod routes;
pub mod session;
pub mod settings;
pub mod site;
pub mod transports;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::app::AppState;
use crate::browser::Launcher;
use crate::operations::drain::{Lifecycle, Phase, Stop};
use crate::pool::WarmPool;
use crate::session::Sessions;
use crate::settings::{EnvSettings, PeerTimeouts};
use crate::transports::http_session::HttpSession;
use browserenv_collect::trajectory::{Actor, Recorder, RecorderHandle, TrajectoryWriter};

/// Everything about a server except where it listens and how it makes browsers.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub settings: EnvSettings,
    /// `max_concurrent_envs`: WebSocket sessions (and the shared HTTP session) at once.
    pub max_sessions: usize,
    /// Keep a browser launched ahead of the next reset.
    pub warm_spare: bool,
    /// Record every session's episodes here (trajectory format v1, `actor: "agent"`).
    pub record_dir: Option<std::path::PathBuf>,
    /// When set, every route but `/health` and `/ready` needs `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// Tasks `reset` may name with `task_id` (`--tasks`).
    pub tasks: Option<Arc<environment::TaskCatalog>>,
    /// Browser origins whose pages may use the server (`BROWSER_ALLOWED_ORIGINS`); any other
    /// request that carries an `Origin` is refused.
    pub allowed_origins: Vec<String>,
    /// Names besides IP literals and `localhost` accepted in `Host` (`BROWSER_ALLOWED_HOSTS`).
    pub allowed_hosts: Vec<String>,
    /// Check `Host` at all (not behind a Unix socket, where only the proxy connects).
    pub check_host: bool,
    /// How long sessions and connections may keep the server waiting.
    pub timeouts: PeerTimeouts,
    /// `BROWSER_MAX_CONNECTIONS`: connections open at once; one more gets a 503 and is closed.
    pub max_connections: usize,
    /// `BROWSER_DRAIN_SECONDS`: how long running episodes may go on once the server is asked to
    /// drain (`drain.rs`).
    pub drain: std::time::Duration,
    /// `BROWSER_PEERS`: the other replicas behind the same address (`replicas.rs`).
    pub peers: Vec<replicas::PeerEntry>,
    /// `BROWSER_PEER_ADDRESSES`: where the peers reach this replica when that is not the address
    /// its connections arrive at (a published port, NAT); a signed request is taken at those
    /// addresses and its own.
    pub peer_addresses: Vec<std::net::SocketAddr>,
    /// `--campaign DIR`: hand a team's people their tasks and record their demonstrations there
    /// (`campaign.rs`).
    pub campaign: Option<std::path::PathBuf>,
    /// Web archives: recording episodes into them, replaying episodes from them (`archive/`).
    pub archive: archive::ArchiveConfig,
    /// `--miniwob DIR`: MiniWoB++'s tasks, scored by their pages (`miniwob/`).
    pub miniwob: Option<Arc<miniwob::MiniWob>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            settings: EnvSettings::default(),
            max_sessions: 4,
            warm_spare: true,
            record_dir: None,
            token: None,
            tasks: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            check_host: true,
            timeouts: PeerTimeouts::default(),
            max_connections: 256,
            drain: operations::drain::DEFAULT_DRAIN,
            peers: Vec::new(),
            peer_addresses: Vec::new(),
            campaign: None,
            archive: archive::ArchiveConfig::default(),
            miniwob: None,
        }
    }
}

/// What the owner of a running server has asked of it so far (None: nothing yet).
pub type StopRequests = watch::Receiver<Option<Stop>>;

/// Serve until asked to stop: at `Stop::Drain` drain first (`drain.rs`), at `Stop::Now` (or
/// when the drain is over) end every session and close every browser.
pub async fn serve<N, L>(
    listener: N,
    launcher: L,
    config: ServerConfig,
    stop: StopRequests,
) -> anyhow::Result<()>
where
    N: axum::serve::Listener,
    N::Io: operations::connection::Arrival,
    N::Addr: std::fmt::Debug + Clone + Send + Sync + 'static,
    L: Launcher,
{
    let (phase, lifecycle) = Lifecycle::new();
    let core = Core::start(launcher, &config, lifecycle).await?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let sessions = core.sessions.clone();
    let replicas = Arc::new(replicas::Replicas::new(
        config.peers.clone(),
        config.token.clone(),
    ));
    let mcp = Arc::new(transports::mcp::endpoint::Mcp::new(
        sessions.clone(),
        &config.timeouts,
    ));
    let http = Arc::new(HttpSession::new(sessions.clone()));
    let state = Arc::new(AppState {
        sessions,
        http: http.clone(),
        mcp: mcp.clone(),
        shutdown: stop_rx.clone(),
        access: Arc::new(operations::access::Access {
            token: config.token.clone(),
            allowed_origins: config.allowed_origins.clone(),
            allowed_hosts: config.allowed_hosts.clone(),
            check_host: config.check_host,
            people: core
                .campaign
                .as_ref()
                .map(|hub| hub.roster() as Arc<dyn operations::access::People>),
            peer_signatures: Default::default(),
            peer_addresses: config.peer_addresses.clone(),
        }),
        timeouts: config.timeouts.clone(),
        replicas,
        tasks: Arc::new(task_api_of(&config)?),
        campaign: core.campaign.clone(),
    });
    let app = app::router(state.clone()).layer(axum::middleware::from_fn(
        operations::connection::remember_peer::<N::Addr>,
    ));
    if let Some(timeout) = config.timeouts.session_timeout {
        tokio::spawn(HttpSession::expire(
            Arc::downgrade(&http),
            timeout,
            stop_rx.clone(),
        ));
        tokio::spawn(transports::mcp::openenv::OpenEnvMcp::expire(
            Arc::downgrade(&mcp.openenv),
            timeout,
            stop_rx,
        ));
    }
    let stop_sessions = {
        let (mcp, sessions) = (mcp.clone(), core.sessions.clone());
        async move {
            let ended = drain(stop, phase, &sessions, config.drain).await;
            let _ = stop_tx.send(true);
            mcp.stop();
            // The requests in flight get a moment to be answered, unless asked to stop now.
            match ended {
                Stop::Drain => operations::connection::SHUTDOWN_GRACE,
                Stop::Now => std::time::Duration::ZERO,
            }
        }
    };
    let limits = operations::connection::ConnectionLimits {
        max_connections: config.max_connections,
        header_read_timeout: config.timeouts.header_read_timeout,
    };
    operations::connection::serve(listener, app, limits, stop_sessions).await;
    http.close().await;
    mcp.shutdown().await;
    drop((state, http, mcp));
    core.finish().await;
    Ok(())
}

/// Wait for the first stop request; for `Stop::Drain`, drain: no new sessions or episodes, and
/// running episodes go on until they end, the drain time is over or `Stop::Now` comes. Returns
/// how it ended: `Stop::Now` when asked to stop now.
async fn drain<L: Launcher>(
    mut stop: StopRequests,
    phase: watch::Sender<Phase>,
    sessions: &Sessions<L>,
    time: std::time::Duration,
) -> Stop {
    let asked = match stop.wait_for(Option::is_some).await {
        Ok(asked) => asked.unwrap_or(Stop::Now),
        // The owner is gone without a word: nothing can ask any more, so stop now.
        Err(_) => Stop::Now,
    };
    let mut ended = asked;
    if asked == Stop::Drain && !time.is_zero() {
        let until = tokio::time::Instant::now() + time;
        let _ = phase.send(Phase::Draining { until });
        let capacity = sessions.capacity();
        tracing::info!(
            "draining: not ready, no new sessions; {} session(s) open, running episodes get up to {} s (BROWSER_DRAIN_SECONDS)",
            capacity.active(),
            time.as_secs_f64()
        );
        tokio::select! {
            () = capacity.all_free() => tracing::info!("drained: every session has ended"),
            () = tokio::time::sleep_until(until) => tracing::info!(
                "the drain time is over: ending {} session(s)", capacity.active()
            ),
            _ = stop.wait_for(|asked| *asked == Some(Stop::Now)) => {
                tracing::info!("asked again to stop: ending {} session(s) now", capacity.active());
                ended = Stop::Now;
            }
        }
    }
    let _ = phase.send(Phase::Stopping);
    ended
}

/// Serve one MCP session over stdin and stdout (`browserenv-server mcp`), until stdin ends.
pub async fn serve_mcp_stdio<L: Launcher>(
    launcher: L,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let core = Core::start(launcher, &config, Lifecycle::serving()).await?;
    let served = tokio::select! {
        served = transports::mcp::serve_stdio(core.sessions.clone()) => served,
        () = shutdown => Ok(()),
    };
    core.finish().await;
    served
}

/// What every way of serving runs on: the browsers, the recorder, and the sessions made of them.
struct Core<L: Launcher> {
    pool: Arc<WarmPool<L>>,
    recorder: Option<RecorderHandle>,
    sessions: Arc<Sessions<L>>,
    /// The campaign (`--campaign`) and the recorder of its demonstrations.
    campaign: Option<Arc<campaign::Hub>>,
    campaign_recorder: Option<RecorderHandle>,
    archives: Arc<archive::Archives>,
}

impl<L: Launcher> Core<L> {
    async fn start(
        launcher: L,
        config: &ServerConfig,
        lifecycle: Lifecycle,
    ) -> anyhow::Result<Self> {
        let recorder = match &config.record_dir {
            Some(dir) => Some(start_recorder(dir)?),
            None => None,
        };
        let (campaign, campaign_recorder) = match &config.campaign {
            Some(dir) => {
                let base_url = config.tasks.as_ref().and_then(|t| t.base_url.clone());
                let (hub, recorder) = campaign::Hub::open(dir, base_url)?;
                (Some(Arc::new(hub)), Some(recorder))
            }
            None => (None, None),
        };
        let archives = Arc::new(archive::Archives::start(
            config.archive.clone(),
            config.settings.server_port,
        )?);
        let pool = Arc::new(WarmPool::new(launcher, config.warm_spare));
        pool.warm_up().await;
        let sessions = Arc::new(
            Sessions::new(
                pool.clone(),
                config.settings.clone(),
                config.tasks.clone(),
                config.max_sessions,
                recorder.as_ref().map(RecorderHandle::sender),
            )
            .with_handoff_wait(config.timeouts.handoff_wait, config.timeouts.ask_wait)
            .with_lifecycle(lifecycle)
            .with_campaign(campaign.clone())
            .with_archives(archives.clone())
            .with_miniwob(config.miniwob.clone()),
        );
        Ok(Core {
            pool,
            recorder,
            sessions,
            campaign,
            campaign_recorder,
            archives,
        })
    }

    /// Close every browser, and let everything recorded so far reach the disk.
    async fn finish(self) {
        drop(self.sessions);
        drop(self.campaign);
        self.pool.drain().await;
        self.archives
            .finish(std::time::Duration::from_secs(10))
            .await;
        for recorder in [self.recorder, self.campaign_recorder]
            .into_iter()
            .flatten()
        {
            let finished = tokio::task::spawn_blocking(move || recorder.finish());
            if tokio::time::timeout(std::time::Duration::from_secs(10), finished)
                .await
                .is_err()
            {
                tracing::warn!("the recorder did not finish within 10 s");
            }
        }
    }
}

/// The Task API of a server: the task file's split, then MiniWoB++'s `train` and `test`.
fn task_api_of(config: &ServerConfig) -> anyhow::Result<routes::task_api::TaskApi> {
    let api = routes::task_api::TaskApi::new(config.tasks.as_deref());
    match &config.miniwob {
        Some(miniwob) => api
            .with_splits(miniwob_splits(miniwob, config.settings.max_steps))
            .map_err(anyhow::Error::msg),
        None => Ok(api),
    }
}

/// MiniWoB++'s splits on the Task API: `train` and `test`, each task's instruction said at reset
/// (the page gives it).
fn miniwob_splits(
    miniwob: &miniwob::MiniWob,
    max_steps: u64,
) -> Vec<(String, Vec<routes::task_api::TaskRef>)> {
    miniwob::Split::ALL
        .iter()
        .map(|split| {
            let refs = miniwob
                .tasks()
                .iter()
                .filter(|task| task.split == *split)
                .enumerate()
                .map(|(index, task)| routes::task_api::TaskRef {
                    index,
                    task_id: task.id.clone(),
                    task_name: task.id.clone(),
                    dataset: split.name().to_string(),
                    instruction: format!(
                        "MiniWoB++ {}: the page gives this episode's instruction at reset \
                         (metadata.task.instruction); the page scores it",
                        task.page()
                    ),
                    category: browserenv_collect::tasks::Category::Interaction,
                    start_url: miniwob.url(task),
                    max_steps,
                    checks: Vec::new(),
                    reset: routes::task_api::ResetArgs {
                        task_id: task.id.clone(),
                    },
                })
                .collect();
            (split.name().to_string(), refs)
        })
        .collect()
}

fn start_recorder(dir: &std::path::Path) -> anyhow::Result<RecorderHandle> {
    use anyhow::Context;
    let (writer, recovery) = TrajectoryWriter::open(dir)
        .with_context(|| format!("cannot record into {}", dir.display()))?;
    if !recovery.incomplete.is_empty() {
        tracing::warn!(
            "{}: marked {} episode(s) left open by a stopped server as incomplete",
            dir.display(),
            recovery.incomplete.len()
        );
    }
    let recorder = Recorder::new(writer, Actor::Agent);
    Ok(RecorderHandle::spawn(recorder, |err| {
        tracing::error!("recording failed: {err}")
    })?)
}

/// A server running in this process on a loopback port.
pub struct ServerHandle {
    pub addr: SocketAddr,
    stop: watch::Sender<Option<Stop>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl ServerHandle {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Begin draining, as SIGTERM does (`drain.rs`); `stop` or `finished` waits for the end.
    pub fn drain(&self) {
        self.stop.send_if_modified(|asked| {
            let first = asked.is_none();
            if first {
                *asked = Some(Stop::Drain);
            }
            first
        });
    }

    /// Graceful shutdown now: sessions end, browsers close.
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(Some(Stop::Now));
        self.finished().await
    }

    /// Wait until the server has stopped by itself (after a drain).
    pub async fn finished(self) -> anyhow::Result<()> {
        let ServerHandle { stop, task, .. } = self;
        let served = task.await?;
        drop(stop);
        served
    }
}

/// Bind `127.0.0.1:0` and serve in a background task.
pub async fn start<L: Launcher>(launcher: L, config: ServerConfig) -> anyhow::Result<ServerHandle> {
    start_on(TcpListener::bind(("127.0.0.1", 0)).await?, launcher, config)
}

/// Serve on a listener bound already (its address may be needed first, e.g. by the peers of a
/// replica), in a background task.
pub fn start_on<L: Launcher>(
    listener: TcpListener,
    launcher: L,
    mut config: ServerConfig,
) -> anyhow::Result<ServerHandle> {
    let addr = listener.local_addr()?;
    config.settings.server_port = Some(addr.port());
    let (stop, requests) = watch::channel(None);
    let task = tokio::spawn(serve(listener, launcher, config, requests));
    Ok(ServerHandle { addr, stop, task })
}
