//! Connections: the server's own accept loop. `axum::serve` puts no bound on how long a client may
//! take to send its request headers and no cap on how many connections are open, so a few silent
//! or trickling sockets could hold the server's file descriptors and tasks for good.
//!
//! Here a connection that does not finish its request headers within the header read timeout is
//! closed, and so is a kept-alive connection whose next request does not come within it (hyper's
//! timer covers both). Past `max_connections` a new connection is answered 503 and closed at once;
//! the connections already open are not touched. A WebSocket keeps its connection's place until
//! the socket closes: the place travels with the socket through the upgrade.

use std::convert::Infallible;
use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

/// Connections over the cap answered with a 503 at the same time; past this a connection over the
/// cap is closed without a word, so a flood of connections costs no more than this many tasks.
/// Each holds its turn for `REFUSAL_READ_TIME` + `REFUSAL_DRAIN_TIME` at most, so silent
/// connections keep `/health` from its answer only past about 850 new ones a second.
pub const REFUSALS_AT_ONCE: usize = 256;
/// How long a refused connection may take to get its 503.
const REFUSAL_TIME: Duration = Duration::from_secs(1);
/// How long a refused client's further bytes are read (and dropped) after the answer, so the close
/// does not reset the connection before the answer is read.
const REFUSAL_DRAIN_TIME: Duration = Duration::from_millis(100);
/// How long a refused client has to send its request before the 503 goes out anyway.
const REFUSAL_READ_TIME: Duration = Duration::from_millis(200);
/// Incoming frames and bodies up to this size are accepted (docs/wire.md §2.5 asks for at least
/// 16 MiB).
pub const MAX_INCOMING_BYTES: usize = 32 * 1024 * 1024;

/// How long shutdown waits for requests still being answered, after a drain has already given the
/// running episodes their time (`drain.rs`); then their connections are cut. Short: the drain,
/// closing the browsers and this must fit in the stop budget (`docker stop`: 10 s).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// At most one log line per this long about refused connections (a flood must not flood the log).
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// `BROWSER_MAX_CONNECTIONS`: connections open at once (HTTP, WebSocket sessions, watchers).
    pub max_connections: usize,
    /// `BROWSER_HEADER_READ_TIMEOUT_SECONDS`.
    pub header_read_timeout: Duration,
}

/// Accept and serve connections until `shutdown` resolves with a grace, then let the requests in
/// flight finish for at most that long, and cut the connections still open (a request that
/// trickles its body, a step still running): nothing a client does holds the server past it.
/// Every request carries `ConnectInfo<N::Addr>` as with `axum::serve`'s
/// `into_make_service_with_connect_info`, and `LocalAddr`, where its connection arrived, when the
/// listener has one (TCP).
pub async fn serve<N>(
    mut listener: N,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = Duration>,
) where
    N: axum::serve::Listener,
    N::Io: Arrival,
    N::Addr: Debug + Clone + Send + Sync + 'static,
{
    let places = Arc::new(Semaphore::new(limits.max_connections));
    let refusals = Arc::new(Semaphore::new(REFUSALS_AT_ONCE));
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection task holds a sender; the receiver sees the channel close once all are done.
    let (open_tx, mut open_rx) = mpsc::channel::<Infallible>(1);
    let mut connections = tokio::task::JoinSet::new();
    let mut last_refusal_log: Option<Instant> = None;
    tokio::pin!(shutdown);
    let grace = loop {
        // Finished connections' tasks are let go as they end, so the set stays as big as what is open.
        while connections.try_join_next().is_some() {}
        let (io, addr) = tokio::select! {
            accepted = listener.accept() => accepted,
            grace = &mut shutdown => break grace,
        };
        let Ok(place) = places.clone().try_acquire_owned() else {
            if last_refusal_log.is_none_or(|at| at.elapsed() >= REFUSAL_LOG_EVERY) {
                tracing::warn!(
                    "refusing connections: {} are open (BROWSER_MAX_CONNECTIONS)",
                    limits.max_connections
                );
                last_refusal_log = Some(Instant::now());
            }
            refuse(io, &refusals, limits.max_connections);
            continue;
        };
        let local = io.local_addr();
        let io = Placed { io, _place: place };
        connections.spawn(serve_connection(
            io,
            addr,
            local,
            router.clone(),
            limits.header_read_timeout,
            stop_rx.clone(),
            open_tx.clone(),
        ));
    };
    drop(listener);
    let _ = stop_tx.send(true);
    drop(open_tx);
    if tokio::time::timeout(grace, open_rx.recv()).await.is_err() {
        tracing::warn!(
            "cutting {} connection(s) still open {:.1} s after shutdown began",
            connections.len(),
            grace.as_secs_f64()
        );
    }
    // Cut: each request's future is dropped, and with it whatever it held of the server.
    connections.shutdown().await;
}

async fn serve_connection<I, A>(
    io: I,
    addr: A,
    local: Option<LocalAddr>,
    router: Router,
    header_read_timeout: Duration,
    mut stop: watch::Receiver<bool>,
    _open: mpsc::Sender<Infallible>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    A: Clone + Send + Sync + 'static,
{
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(addr.clone()));
        if let Some(local) = local {
            request.extensions_mut().insert(local);
        }
        router.clone().oneshot(request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let connection = builder
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = stopping(&mut stop) => {
            // The request in flight is answered; an idle kept-alive connection closes now.
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(err) = result {
        tracing::debug!("connection ended: {err}");
    }
}

/// The address a request's connection arrived at on this server (the accepted socket's own
/// address: `10.0.0.5:8000` for a server bound to `0.0.0.0:8000`), a request extension. A peer's
/// signed request must name it in `Host` (`access::require_token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalAddr(pub std::net::SocketAddr);

/// A listener's connection that may know its own address.
pub trait Arrival {
    fn local_addr(&self) -> Option<LocalAddr>;
}

impl Arrival for tokio::net::TcpStream {
    fn local_addr(&self) -> Option<LocalAddr> {
        tokio::net::TcpStream::local_addr(self).ok().map(LocalAddr)
    }
}

/// No address: a signed request reaches a server behind a Unix socket only at an address it is
/// told is its own (`BROWSER_PEER_ADDRESSES`).
#[cfg(unix)]
impl Arrival for tokio::net::UnixStream {
    fn local_addr(&self) -> Option<LocalAddr> {
        None
    }
}

/// Resolves once the server stops (the watch value is not kept borrowed across the wait).
async fn stopping(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// Answer a connection over the cap with a 503 and close it, in a task of its own with a deadline.
fn refuse<I>(mut io: I, refusals: &Arc<Semaphore>, max_connections: usize)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Ok(turn) = refusals.clone().try_acquire_owned() else {
        return;
    };
    let body = crate::api_error::ApiError::new(
        crate::api_error::Code::TooManyConnections,
        format!(
            "the server has {max_connections} connections open, its limit \
             (BROWSER_MAX_CONNECTIONS); try again later"
        ),
    )
    .body()
    .to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    tokio::spawn(async move {
        let _turn = turn;
        let _ = tokio::time::timeout(REFUSAL_TIME, async {
            // Read the request first and drain the rest after: closing a socket with unread data
            // resets it, and the reset may reach the client before it has read our answer.
            let mut scratch = [0u8; 4096];
            let read = tokio::time::timeout(REFUSAL_READ_TIME, io.read(&mut scratch)).await;
            let asked = match read {
                Ok(Ok(n)) => &scratch[..n],
                _ => &[][..],
            };
            // Liveness still answers when connections fill the cap (a flood of silent ones):
            // the server is alive, and an orchestrator must not restart it for the flood.
            let response = if is_health_check(asked) {
                HEALTHY.to_string()
            } else {
                response
            };
            io.write_all(response.as_bytes()).await?;
            io.shutdown().await?;
            let _ = tokio::time::timeout(REFUSAL_DRAIN_TIME, async {
                while io.read(&mut scratch).await? > 0 {}
                Ok::<(), io::Error>(())
            })
            .await;
            Ok::<(), io::Error>(())
        })
        .await;
    });
}

/// `GET /health` (the request line, as far as it was read).
fn is_health_check(request: &[u8]) -> bool {
    ["GET /health ", "GET /health?"]
        .iter()
        .any(|line| request.starts_with(line.as_bytes()))
}

/// `/health`'s answer, as the refusal path writes it.
const HEALTHY: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 20\r\n\
    connection: close\r\n\r\n{\"status\":\"healthy\"}";

/// The time a request's body may take, from its headers to its end: a body trickled a byte at a
/// time would otherwise hold its connection for good (the header read timeout ends at the
/// headers). The same setting bounds both.
pub async fn body_deadline(
    axum::extract::State(limit): axum::extract::State<Duration>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use futures_util::StreamExt;
    let (parts, body) = request.into_parts();
    let deadline = Box::pin(tokio::time::sleep(limit));
    let timed = futures_util::stream::unfold(
        (body.into_data_stream(), deadline, false),
        move |(mut body, mut deadline, over)| async move {
            if over {
                return None;
            }
            tokio::select! {
                chunk = body.next() => chunk.map(|chunk| (chunk, (body, deadline, false))),
                () = &mut deadline => Some((
                    Err(axum::Error::new(format!(
                        "the request body did not arrive within {} s (BROWSER_HEADER_READ_TIMEOUT_SECONDS)",
                        limit.as_secs_f64()
                    ))),
                    (body, deadline, true),
                )),
            }
        },
    );
    let request = axum::extract::Request::from_parts(parts, axum::body::Body::from_stream(timed));
    next.run(request).await
}

/// A connection's IO together with its place under the cap. The place is given back when the IO
/// is dropped, which for a WebSocket is when the socket closes, since the upgrade moves the IO.
struct Placed<I> {
    io: I,
    _place: OwnedSemaphorePermit,
}

impl<I: AsyncRead + Unpin> AsyncRead for Placed<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Placed<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// The connection's remote address, as text, for the session registry (set by `remember_peer`;
/// "unknown" where the listener has none to give).
#[derive(Debug, Clone)]
pub struct Peer(pub String);

/// Keep the peer address of every request.
pub async fn remember_peer<A: std::fmt::Debug + Clone + Send + Sync + 'static>(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<A>>()
        .map_or_else(|| "unknown".to_string(), |info| format!("{:?}", info.0));
    request.extensions_mut().insert(Peer(peer));
    next.run(request).await
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Peer>()
            .cloned()
            .unwrap_or_else(|| Peer("unknown".into())))
    }
}
