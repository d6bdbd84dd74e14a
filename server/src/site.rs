//! Static pages (the test pages, the offline demo site) on a listener of their own. Pages in the
//! browser are untrusted and can reach loopback, so they are never served by the API's listener.

use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tower_http::services::ServeDir;

pub struct SiteHandle {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl SiteHandle {
    /// `http://127.0.0.1:PORT/<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{}", self.addr, path.trim_start_matches('/'))
    }
}

impl Drop for SiteHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serve `dir` on `127.0.0.1:0` until the handle is dropped.
pub async fn serve_dir(dir: impl Into<PathBuf>) -> std::io::Result<SiteHandle> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().fallback_service(ServeDir::new(dir.into()));
    let task = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            tracing::warn!("static site stopped: {err}");
        }
    });
    Ok(SiteHandle { addr, task })
}
