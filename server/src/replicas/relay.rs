//! The one relay: a request about a session another replica holds (`routing.rs` decides that),
//! carried to that replica as it came, with `local=true` and signed (`signing.rs`), its answer
//! brought back as the owner gave it. A plain HTTP request is passed whole (method, path, body,
//! the headers that say what it is); a WebSocket (`/ws?session_id=…`, a watch socket) is joined
//! to the owner's, frame for frame both ways, so watching, taking control, stepping and handing
//! back work through whichever replica the balancer picked.
//!
//! Carried calls have limits of their own, apart from lookups (`mod.rs`): one call in flight
//! per session (its owner runs them one at a time anyway) and `FORWARDS_AT_ONCE` in all, each
//! waited for at most `TURN_WAIT`, after which the caller hears a clear "busy" at once instead
//! of queueing behind calls that may each take two minutes.
//!
//! Each side of a joined socket is kept to time on its own: this replica pings the watcher, so a
//! watcher that goes silent is let go and, its upstream closed, control returns to the agent;
//! and it pings the owner, so an owner that stops answering (frozen, cut off) is told to the
//! watcher as an error frame, never a silent hang.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame as UpCloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message as Up;

use browserenv::protocol::{ErrorCode, ErrorFrame, ServerMessage};

use crate::operations::connection::MAX_INCOMING_BYTES;
use crate::settings::PeerTimeouts;
use crate::transports::websocket::Heartbeat;

/// How long the owner has to accept the relayed socket.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a call carried to its owner may take: longer than the longest step (docs/server.md,
/// "Step time"), as long as the balancer waits for a reply (deploy/haproxy/haproxy.cfg).
const FORWARDED_TIMEOUT: Duration = Duration::from_secs(120);
/// The most read of the owner's answer to a carried call (an observation with its PNG).
const FORWARDED_LIMIT: usize = crate::operations::connection::MAX_INCOMING_BYTES;
/// Calls carried to other replicas at once.
const FORWARDS_AT_ONCE: usize = 64;
/// How long a call waits for its turn (its session's, then one of `FORWARDS_AT_ONCE`).
pub const TURN_WAIT: Duration = Duration::from_secs(2);
/// The request headers a carried call keeps: what says what its body is and what it accepts.
const KEPT_HEADERS: [axum::http::HeaderName; 2] =
    [axum::http::header::CONTENT_TYPE, axum::http::header::ACCEPT];
/// How long one frame may take to either side before that side counts as gone.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// The limits of carried calls (see the module's documentation).
pub struct Limits {
    forwards: Arc<tokio::sync::Semaphore>,
    /// A turn per session: one call at a time.
    sessions: Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            forwards: Arc::new(tokio::sync::Semaphore::new(FORWARDS_AT_ONCE)),
            sessions: Mutex::new(HashMap::new()),
        }
    }
}

/// Why a call was not carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Busy {
    /// Another call for the same session is in flight through this replica.
    Session,
    /// `FORWARDS_AT_ONCE` calls are in flight.
    Replica,
}

impl Busy {
    pub fn message(&self, session: &str) -> String {
        match self {
            Busy::Session => format!(
                "another call for session {session:?} is in flight through this replica: \
                 its owner runs them one at a time; send the next when it is answered"
            ),
            Busy::Replica => format!(
                "this replica carries {FORWARDS_AT_ONCE} calls to other replicas already: \
                 try again shortly"
            ),
        }
    }
}

/// A call's turn: held while it is carried.
pub struct Turn {
    _session: tokio::sync::OwnedSemaphorePermit,
    _replica: tokio::sync::OwnedSemaphorePermit,
}

impl Limits {
    /// A turn for a call about `session`, waited for at most `TURN_WAIT` at each limit.
    pub async fn turn(&self, session: &str) -> Result<Turn, Busy> {
        let own = {
            let mut sessions = self.sessions.lock().map_err(|_| Busy::Replica)?;
            // Sessions nobody is carrying a call for are forgotten.
            sessions.retain(|_, turn| Arc::strong_count(turn) > 1);
            sessions
                .entry(session.to_string())
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(1)))
                .clone()
        };
        let session_turn = tokio::time::timeout(TURN_WAIT, own.acquire_owned())
            .await
            .map_err(|_| Busy::Session)?
            .map_err(|_| Busy::Session)?;
        let replica_turn = tokio::time::timeout(TURN_WAIT, self.forwards.clone().acquire_owned())
            .await
            .map_err(|_| Busy::Replica)?
            .map_err(|_| Busy::Replica)?;
        Ok(Turn {
            _session: session_turn,
            _replica: replica_turn,
        })
    }
}

/// The owner's answer to a carried call: status, content type, body.
pub struct Answer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: axum::body::Bytes,
}

/// Carry an HTTP request to `url` (the owner's, `local=true` in its query): its method, body
/// and `KEPT_HEADERS`, signed.
pub async fn http(
    replicas: &super::Replicas,
    method: &axum::http::Method,
    url: &str,
    headers: &axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Result<Answer, String> {
    let method =
        reqwest::Method::from_bytes(method.as_str().as_bytes()).map_err(|err| err.to_string())?;
    // Exactly what is sent is signed: the client's own `Accept` would be added otherwise.
    let mut sent = axum::http::HeaderMap::new();
    for name in KEPT_HEADERS {
        for value in headers.get_all(&name) {
            sent.append(name.clone(), value.clone());
        }
    }
    if !sent.contains_key(axum::http::header::ACCEPT) {
        sent.insert(
            axum::http::header::ACCEPT,
            axum::http::HeaderValue::from_static("*/*"),
        );
    }
    let mut request = replicas
        .http()
        .request(method.clone(), url)
        .timeout(FORWARDED_TIMEOUT)
        .headers(sent.clone());
    if let Some(signature) = replicas.signature(method.as_str(), url, &sent, &body) {
        request = request.header(crate::operations::signing::HEADER, signature);
    }
    let response = request
        .body(body)
        .send()
        .await
        .map_err(|err| super::describe(&err))?;
    let status = response.status().as_u16();
    if response.status().is_redirection() {
        // Not followed (the client does not), nor passed on for the caller's client to follow:
        // a replica sends its sessions' answers, never elsewhere.
        return Err(format!(
            "it answered with a redirect (HTTP {status}), which is not followed"
        ));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let body = super::read_capped(response, FORWARDED_LIMIT).await?;
    Ok(Answer {
        status,
        content_type,
        body,
    })
}

/// Join `watcher` to the owner's socket at `upstream` (`ws://…?local=true`); `signature` signs
/// the upgrade request.
pub async fn socket(
    watcher: WebSocket,
    upstream: String,
    signature: Option<String>,
    session: String,
    timeouts: PeerTimeouts,
    mut shutdown: watch::Receiver<bool>,
) {
    let (mut to_watcher, mut from_watcher) = watcher.split();
    let say = |reason: &str, message: String| {
        let frame =
            ErrorFrame::new(ErrorCode::SessionError, message).with_extra("reason", json!(reason));
        Message::Text(ServerMessage::Error(frame).to_text().into())
    };
    let owner = match connect(&upstream, signature.as_deref()).await {
        Ok(owner) => owner,
        Err(err) => {
            let text = format!(
                "session {session:?} is held by the replica at {}, which cannot be reached: {err}",
                host_of(&upstream)
            );
            let _ = send(&mut to_watcher, say("REPLICA_UNREACHABLE", text)).await;
            let _ = send(&mut to_watcher, close(1011, "replica unreachable")).await;
            return;
        }
    };
    let (mut to_owner, mut from_owner) = owner.split();
    let mut heartbeat = Heartbeat::new(&timeouts);
    let mut owner_beat = Heartbeat::new(&timeouts);
    let gone = |why: &str| {
        format!(
            "the replica at {} that holds session {session:?} {why}",
            host_of(&upstream)
        )
    };
    loop {
        tokio::select! {
            frame = from_owner.next() => match frame {
                Some(Ok(Up::Text(text))) => {
                    if !send(&mut to_watcher, Message::Text(text.as_str().into())).await {
                        break;
                    }
                }
                Some(Ok(Up::Close(frame))) => {
                    let (code, reason) = frame.map_or((1000, String::new()), |f| (u16::from(f.code), f.reason.to_string()));
                    let _ = send(&mut to_watcher, Message::Close(Some(CloseFrame { code, reason: reason.into() }))).await;
                    return;
                }
                // Pings from the owner are answered by the WebSocket layer as this loop reads.
                Some(Ok(_)) => owner_beat.heard(),
                Some(Err(_)) | None => {
                    let _ = send(&mut to_watcher, say("REPLICA_GONE", gone("went away"))).await;
                    let _ = send(&mut to_watcher, close(1011, "replica gone")).await;
                    return;
                }
            },
            () = tokio::time::sleep_until(owner_beat.wake()) => {
                let pinged = !owner_beat.is_silent() && matches!(
                    tokio::time::timeout(SEND_TIMEOUT, to_owner.send(Up::Ping(Default::default()))).await,
                    Ok(Ok(()))
                );
                if !pinged {
                    let why = format!("answered no ping within {:?}", timeouts.ping_timeout);
                    let _ = send(&mut to_watcher, say("REPLICA_GONE", gone(&why))).await;
                    let _ = send(&mut to_watcher, close(1011, "replica gone")).await;
                    return;
                }
                owner_beat.pinged();
            }
            frame = from_watcher.next() => {
                heartbeat.heard();
                let passed = match frame {
                    Some(Ok(Message::Text(text))) => Up::Text(text.as_str().into()),
                    Some(Ok(Message::Binary(bytes))) => Up::Binary(bytes),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                };
                if !matches!(tokio::time::timeout(SEND_TIMEOUT, to_owner.send(passed)).await, Ok(Ok(()))) {
                    let _ = send(&mut to_watcher, say("REPLICA_GONE", gone("takes no more frames"))).await;
                    let _ = send(&mut to_watcher, close(1011, "replica gone")).await;
                    return;
                }
            }
            () = tokio::time::sleep_until(heartbeat.wake()) => {
                if heartbeat.is_silent() || !send(&mut to_watcher, Message::Ping(Default::default())).await {
                    break;
                }
                heartbeat.pinged();
            }
            () = stopped(&mut shutdown) => {
                let _ = send(&mut to_watcher, close(1001, "server shutting down")).await;
                break;
            }
        }
    }
    // The watcher is gone (or this replica stops): the owner hears the close, and a hold on
    // control ends with it.
    let goodbye = Up::Close(Some(UpCloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }));
    let _ = tokio::time::timeout(SEND_TIMEOUT, to_owner.send(goodbye)).await;
}

/// Resolves once the server stops (without keeping the watch value borrowed across the wait).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

type Upstream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(url: &str, signature: Option<&str>) -> Result<Upstream, String> {
    let mut request = url.into_client_request().map_err(|err| err.to_string())?;
    if let Some(value) = signature.and_then(|a| a.parse().ok()) {
        request
            .headers_mut()
            .insert(crate::operations::signing::HEADER, value);
    }
    // An observation with its screenshot is far below this; a peer that sends more is cut off.
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_INCOMING_BYTES))
        .max_frame_size(Some(MAX_INCOMING_BYTES));
    let connecting = tokio_tungstenite::connect_async_with_config(request, Some(config), false);
    match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err(format!("no answer within {CONNECT_TIMEOUT:?}")),
    }
}

async fn send(
    sink: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    message: Message,
) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, sink.send(message)).await,
        Ok(Ok(()))
    )
}

fn close(code: u16, reason: &'static str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    }))
}

/// `host:port` of a `ws://host:port/...` URL, for messages.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split('/').next().unwrap_or(rest)
}
