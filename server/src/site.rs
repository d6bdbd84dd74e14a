//! Static pages (the test pages, the offline demo site) on a listener of their own. Pages in the
//! browser are untrusted and can reach loopback, so they are never served by the API's listener.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
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

/// How long a request's body may take to arrive (a client that stops sending is not waited for
/// without end; a form's or an upload's body on loopback takes milliseconds).
const BODY_TIME: Duration = Duration::from_secs(30);

/// Every request's body is read to its end, and dropped as it comes, before the request is
/// answered: a server that answers first (the file is ready at once) stops reading and closes the
/// connection, and the rest of the body arriving at a closed socket makes the kernel reset it,
/// which can destroy the answer before the browser reads it (a page's `fetch` failed now and then
/// under load: "Failed to fetch"). A form posted to a page then gets the page, as from a site that
/// takes the form in (the demo site's contact form posts, so a task can check what it sent).
async fn bodies_read_first(
    State(within): State<Duration>,
    request: Request,
) -> Result<Request, StatusCode> {
    let (mut parts, body) = request.into_parts();
    let mut chunks = body.into_data_stream();
    let read = async {
        while let Some(chunk) = chunks.next().await {
            chunk.map_err(|_| StatusCode::BAD_REQUEST)?;
        }
        Ok::<(), StatusCode>(())
    };
    tokio::time::timeout(within, read)
        .await
        .map_err(|_| StatusCode::REQUEST_TIMEOUT)??;
    if parts.method == Method::POST {
        parts.method = Method::GET;
    }
    for read in [
        header::CONTENT_LENGTH,
        header::CONTENT_TYPE,
        header::CONTENT_ENCODING,
        header::TRANSFER_ENCODING,
        header::EXPECT,
    ] {
        parts.headers.remove(read);
    }
    Ok(Request::from_parts(parts, Body::empty()))
}

/// Serve `dir` on `127.0.0.1:0` until the handle is dropped.
pub async fn serve_dir(dir: impl Into<PathBuf>) -> std::io::Result<SiteHandle> {
    serve(dir.into(), BODY_TIME).await
}

async fn serve(dir: PathBuf, body_time: Duration) -> std::io::Result<SiteHandle> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new()
        .fallback_service(ServeDir::new(dir))
        .layer(axum::middleware::map_request_with_state(
            body_time,
            bodies_read_first,
        ));
    let task = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            tracing::warn!("static site stopped: {err}");
        }
    });
    Ok(SiteHandle { addr, task })
}

#[cfg(test)]
mod tests {
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

    /// A request of `method` to the test page with `body`, its head and first 100 bytes sent a
    /// while before the rest (the server could answer in between).
    async fn send(stream: &mut TcpStream, method: &str, body: &[u8]) -> std::io::Result<()> {
        let head = format!(
            "{method} /page.html HTTP/1.1\r\nHost: site\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&body[..100]).await?;
        tokio::time::sleep(Duration::from_millis(150)).await;
        stream.write_all(&body[100..]).await
    }

    /// A body that arrives after the server could have answered is read to its end first, so
    /// the answer arrives whole and the connection serves the next request (as a browser that
    /// sends a post's head and body apart expects): a form's post, an upload's, a method the
    /// site refuses; a body that stops coming is not waited for without end.
    #[tokio::test]
    async fn a_body_is_read_before_the_answer_and_the_connection_kept() {
        let dir = std::env::temp_dir().join(format!("browserenv-site-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("page.html"), "<p>the page</p>").unwrap();
        let site = serve(dir.clone(), Duration::from_millis(500))
            .await
            .unwrap();
        let mut stream = TcpStream::connect(site.addr).await.unwrap();
        let form = ["n=1&".as_bytes(), &[b'z'; 20 * 1024]].concat();
        let upload = vec![b'u'; 2 * 1024 * 1024];
        for (what, method, body, status) in [
            ("a form", "POST", &form, "200"),
            ("a form again", "POST", &form, "200"),
            ("an upload", "POST", &upload, "200"),
            ("a refused method", "PUT", &form, "405"),
        ] {
            send(&mut stream, method, body)
                .await
                .unwrap_or_else(|err| panic!("{what}: sending the body: {err}"));
            let text = answer(&mut stream)
                .await
                .unwrap_or_else(|err| panic!("{what}: {err}"));
            assert!(
                text.starts_with(&format!("HTTP/1.1 {status}")),
                "{what}: {text}"
            );
            if status == "200" {
                assert!(text.ends_with("<p>the page</p>"), "{what}: {text}");
            }
        }
        // The same connection still serves.
        stream
            .write_all(b"GET /page.html HTTP/1.1\r\nHost: site\r\n\r\n")
            .await
            .unwrap();
        let text = answer(&mut stream).await.unwrap();
        assert!(text.ends_with("<p>the page</p>"), "{text}");
        // A body that stops coming gets 408 once its time is up.
        let mut stream = TcpStream::connect(site.addr).await.unwrap();
        stream
            .write_all(
                b"POST /page.html HTTP/1.1\r\nHost: site\r\nContent-Length: 100\r\n\r\n0123456789",
            )
            .await
            .unwrap();
        let text = tokio::time::timeout(Duration::from_secs(20), answer(&mut stream))
            .await
            .expect("an answer, not a wait without end")
            .unwrap();
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
