//! Static pages (the test pages, the offline demo site) on a listener of their own. Pages in the
//! browser are untrusted and can reach loopback, so they are never served by the API's listener.

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::extract::Request;
use axum::http::Method;
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

/// A form posted to a page gets the page, as from a site that takes the form in (the demo site's
/// contact form posts, so a task can check what it sent); the body is not kept.
async fn posts_read_the_page(mut request: Request) -> Request {
    if request.method() == Method::POST {
        *request.method_mut() = Method::GET;
    }
    request
}

/// Serve `dir` on `127.0.0.1:0` until the handle is dropped.
pub async fn serve_dir(dir: impl Into<PathBuf>) -> std::io::Result<SiteHandle> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new()
        .fallback_service(ServeDir::new(dir.into()))
        .layer(axum::middleware::map_request(posts_read_the_page));
    let task = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            tracing::warn!("static site stopped: {err}");
        }
    });
    Ok(SiteHandle { addr, task })
}
