//! How a replica leaves without cutting episodes short (SIGTERM, `docker stop`, a rolling update).
//!
//! Draining begins at the first stop signal: readiness (`/ready`) answers 503 at once, so a load
//! balancer or Kubernetes sends no new sessions here, and a session that asks anyway is refused
//! with `CAPACITY_REACHED` saying the server is draining. An episode that is running goes on for
//! at most `BROWSER_DRAIN_SECONDS`; a session whose episode ended (or that has none) is closed,
//! so its client, reconnecting, reaches another replica. When no session is left, or the time is
//! up, or a second signal comes, the server stops: whatever still runs is ended with a frame that
//! says why, recordings are closed, browsers and profiles removed.

use std::time::Duration;

use tokio::sync::watch;

/// `BROWSER_DRAIN_SECONDS` by default: inside the 10 s `docker stop` waits before it kills, with
/// room to close the browsers; Kubernetes manifests set their own (`deploy/kubernetes/`).
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(8);

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Serving,
    /// No new sessions or episodes; running episodes may finish until `until`.
    Draining {
        until: tokio::time::Instant,
    },
    /// Ending everything now.
    Stopping,
}

/// What the owner of a server asks of it (a signal, a test, the terminal UI's embedded server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Let running episodes finish (for at most the drain time), then stop.
    Drain,
    /// Stop now.
    Now,
}

/// The server's phase, as everything that must behave differently while draining sees it.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    phase: watch::Receiver<Phase>,
}

impl Lifecycle {
    /// A lifecycle that is serving, and the sender that moves it on.
    pub fn new() -> (watch::Sender<Phase>, Lifecycle) {
        let (sender, phase) = watch::channel(Phase::Serving);
        (sender, Lifecycle { phase })
    }

    /// A lifecycle that serves for good (a server nobody drains: the stdio MCP server, tests).
    pub fn serving() -> Lifecycle {
        Lifecycle::new().1
    }

    pub fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// No new sessions or episodes: draining or stopping.
    pub fn is_draining(&self) -> bool {
        self.phase() != Phase::Serving
    }

    /// Resolves once the server stops taking new work (at once if it already has).
    pub async fn draining(&self) {
        let mut phase = self.phase.clone();
        if phase
            .wait_for(|phase| *phase != Phase::Serving)
            .await
            .is_err()
        {
            // Nobody can move it on any more: it serves for good.
            std::future::pending::<()>().await;
        }
    }
}

/// What a drained session is told when its socket closes (the close frame's reason).
pub const DRAINED_REASON: &str = "server draining: connect again to reach another replica";

/// The message of a refused new session or episode while draining.
pub const DRAINING_MESSAGE: &str =
    "Server is draining (shutting down): it takes no new sessions or episodes; connect again to \
     reach another replica";
