//! The browser environment server: OpenEnv's reset/step/state over WebSocket and HTTP, each
//! session driving its own private headless Chromium.
//!
//! `serve` is what both `main` and the tests call; `start` wraps it for in-process use (tests, the
//! benchmark, the terminal UI's embedded server).

pub mod app;
pub mod browser;
pub mod chromium;
pub mod cli;
pub mod environment;
pub mod fake;
pub mod pool;
pub mod session;
pub mod settings;
pub mod site;
pub mod verification;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::app::AppState;
use crate::browser::Launcher;
use crate::pool::WarmPool;
use crate::settings::EnvSettings;

/// Everything about a server except where it listens and how it makes browsers.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub settings: EnvSettings,
    /// `max_concurrent_envs`: WebSocket sessions (and the shared HTTP session) at once.
    pub max_sessions: usize,
    /// Keep a browser launched ahead of the next reset.
    pub warm_spare: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            settings: EnvSettings::default(),
            max_sessions: 4,
            warm_spare: true,
        }
    }
}

/// Serve until `shutdown` resolves, then end every session and close every browser.
pub async fn serve<N, L>(
    listener: N,
    launcher: L,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()>
where
    N: axum::serve::Listener,
    N::Addr: std::fmt::Debug,
    L: Launcher,
{
    let pool = Arc::new(WarmPool::new(launcher, config.warm_spare));
    pool.warm_up().await;
    let (stop_tx, stop_rx) = watch::channel(false);
    let state = Arc::new(AppState::new(
        pool.clone(),
        config.settings.clone(),
        config.max_sessions,
        stop_rx,
    ));
    let app = app::router(state.clone());
    let stop_sessions = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    axum::serve(listener, app)
        .with_graceful_shutdown(stop_sessions)
        .await?;
    state.http_session.lock().await.close().await;
    pool.drain().await;
    Ok(())
}

/// A server running in this process on a loopback port.
pub struct ServerHandle {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl ServerHandle {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Graceful shutdown: sessions end, browsers close.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await?
    }
}

/// Bind `127.0.0.1:0` and serve in a background task.
pub async fn start<L: Launcher>(launcher: L, config: ServerConfig) -> anyhow::Result<ServerHandle> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, launcher, config, async move {
        let _ = stop_rx.await;
    }));
    Ok(ServerHandle {
        addr,
        stop: Some(stop_tx),
        task,
    })
}
