//! Static pages (the test pages, the offline demo site) on a listener of their own. Pages in the
//! browser are untrusted and can reach loopback, so they are never served by the API's listener.

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use futures_util::StreamExt;
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

/// The most a post's body may be: a form's or a test page's posts are far smaller.
const POST_BYTES: usize = 1024 * 1024;

/// A form posted to a page gets the page, as from a site that takes the form in (the demo site's
/// contact form posts, so a task can check what it sent); the body is not kept, but it is read
/// to its end first: a server that answers before the body has arrived (the file is ready at
/// once) stops reading and closes the connection, and the rest of the body arriving at a closed
/// socket makes the kernel reset it, which can destroy the answer before the browser reads it
/// (a page's `fetch` failed now and then under load: "Failed to fetch").
async fn posts_read_the_page(request: Request) -> Result<Request, StatusCode> {
    if request.method() != Method::POST {
        return Ok(request);
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|length| length > POST_BYTES) {
        return Err(StatusCode::PAYLOAD_TOO_LARGE);
    }
    let (mut parts, body) = request.into_parts();
    // Read and dropped as it comes: no post is held in memory.
    let mut read = 0;
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        read += chunk.map_err(|_| StatusCode::BAD_REQUEST)?.len();
        if read > POST_BYTES {
            return Err(StatusCode::PAYLOAD_TOO_LARGE);
        }
    }
    parts.method = Method::GET;
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove(header::CONTENT_TYPE);
    Ok(Request::from_parts(parts, Body::empty()))
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    /// Read one answer (head and a `Content-Length` body) from `stream`.
    async fn answer(stream: &mut TcpStream) -> std::io::Result<String> {
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&got).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|line| {
                        line.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(str::to_string)
                    })
                    .and_then(|n| n.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if got.len() >= end + 4 + length {
                    return Ok(text);
                }
            }
            let read = stream.read(&mut chunk).await?;
            if read == 0 {
                return Err(std::io::Error::other(format!("closed after {text:?}")));
            }
            got.extend_from_slice(&chunk[..read]);
        }
    }

    /// A post whose body arrives after the server could have answered is read to its end, so the
    /// answer arrives whole and the connection serves the next request (as a browser that sends
    /// the head and the body apart expects).
    #[tokio::test]
    async fn a_post_s_body_is_read_before_the_answer_and_the_connection_kept() {
        let dir = std::env::temp_dir().join(format!("browserenv-site-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("page.html"), "<p>the page</p>").unwrap();
        let site = serve_dir(&dir).await.unwrap();
        let mut stream = TcpStream::connect(site.addr).await.unwrap();
        let body = "n=1&".to_string() + &"z".repeat(20 * 1024);
        let head = format!(
            "POST /page.html HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n\r\n",
            site.addr,
            body.len()
        );
        for round in 0..2 {
            stream.write_all(head.as_bytes()).await.unwrap();
            stream.write_all(&body.as_bytes()[..100]).await.unwrap();
            // The server has the head and could answer with the file now.
            tokio::time::sleep(Duration::from_millis(150)).await;
            stream
                .write_all(&body.as_bytes()[100..])
                .await
                .unwrap_or_else(|err| panic!("round {round}: the rest of the body: {err}"));
            let text = answer(&mut stream)
                .await
                .unwrap_or_else(|err| panic!("round {round}: {err}"));
            assert!(text.starts_with("HTTP/1.1 200"), "round {round}: {text}");
            assert!(text.ends_with("<p>the page</p>"), "round {round}: {text}");
        }
        // A body past the bound is refused, not read without end.
        let huge = format!(
            "POST /page.html HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n\r\n",
            site.addr,
            POST_BYTES + 1
        );
        let mut stream = TcpStream::connect(site.addr).await.unwrap();
        stream.write_all(huge.as_bytes()).await.unwrap();
        let text = answer(&mut stream).await.unwrap();
        assert!(text.starts_with("HTTP/1.1 413"), "{text}");
        // So is one that says no length and sends more.
        let mut stream = TcpStream::connect(site.addr).await.unwrap();
        let chunked = format!(
            "POST /page.html HTTP/1.1\r\nHost: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
            site.addr
        );
        stream.write_all(chunked.as_bytes()).await.unwrap();
        // A byte past the bound in all, nothing after it: what the server refuses at, it has read
        // (a socket closed with data unread would be reset, the answer perhaps lost).
        let chunk = format!("10000\r\n{}\r\n", "z".repeat(0x10000));
        for _ in 0..POST_BYTES / 0x10000 {
            stream.write_all(chunk.as_bytes()).await.unwrap();
        }
        stream.write_all(b"1\r\nz\r\n").await.unwrap();
        let text = answer(&mut stream).await.unwrap();
        assert!(text.starts_with("HTTP/1.1 413"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
