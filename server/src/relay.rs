//! A watch socket for a session held by another replica (`replicas.rs`): the watcher's socket is
//! joined to the owner's `/sessions/{id}/watch`, frame for frame both ways, so watching, taking
//! control, stepping and handing back work through whichever replica the balancer picked.
//!
//! Each side is kept to time on its own: this replica pings the watcher, so a watcher that goes
//! silent is let go and, its upstream closed, control returns to the agent; and it pings the
//! owner, so an owner that stops answering (frozen, cut off) is told to the watcher as an error
//! frame, never a silent hang.

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

use crate::connection::MAX_INCOMING_BYTES;
use crate::settings::PeerTimeouts;
use crate::websocket::Heartbeat;

/// How long the owner has to accept the relayed socket.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one frame may take to either side before that side counts as gone.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Join `watcher` to the owner's watch socket at `upstream` (`ws://…/sessions/{id}/watch?local=true`).
pub async fn run(
    watcher: WebSocket,
    upstream: String,
    authorization: Option<String>,
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
    let owner = match connect(&upstream, authorization.as_deref()).await {
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

async fn connect(url: &str, authorization: Option<&str>) -> Result<Upstream, String> {
    let mut request = url.into_client_request().map_err(|err| err.to_string())?;
    if let Some(value) = authorization.and_then(|a| a.parse().ok()) {
        request.headers_mut().insert("authorization", value);
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
