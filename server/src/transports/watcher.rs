//! A watcher of one session: the newest frame at once, then every reset and step as it happens,
//! and every change of control. It runs in its own task with its own socket, so a slow watcher
//! only delays itself; one that falls behind skips to the newest frame.
//!
//! A watcher may also take control of the session (hand-off, `control.rs`): `{"type":"take",
//! "data":{"name":…}}`, then `{"type":"step","data":<action>}` frames answered like `/ws` steps,
//! then `{"type":"release"}`. Reaching this socket already took the server's token. While it holds
//! control the socket is pinged like a `/ws` one, and however it ends (closed, dropped, silent
//! past `BROWSER_WS_PING_TIMEOUT_SECONDS`) control goes back to the agent.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{oneshot, watch};

use browserenv::models::StepResult;
use browserenv::protocol::{ClientMessage, ErrorCode, ErrorFrame, ServerMessage};

use crate::session::registry::{Hold, HumanAction, Registry};
use crate::settings::PeerTimeouts;
use crate::transports::websocket::Heartbeat;

/// The name shown for a person who took control without giving one.
const UNNAMED: &str = "a person";
/// The most characters of a person's note to the agent as they hand back.
const NOTE_LIMIT: usize = 2000;
/// Names are cut to this many characters (they are shown in status bars and observations).
const NAME_LIMIT: usize = 64;

/// A watcher that cannot take one frame in this long is dropped (its socket is not being read).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

type Sink = SplitSink<WebSocket, Message>;

/// Resolves once the server is stopping (without keeping the watch value borrowed).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Write one frame within `SEND_TIMEOUT` (false: it did not get through).
async fn write(sink: &mut Sink, message: Message) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, sink.send(message)).await,
        Ok(Ok(()))
    )
}

/// Send one frame, unless the server is stopping or the watcher stopped reading.
async fn deliver(sink: &mut Sink, text: &str, shutdown: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        sent = write(sink, Message::Text(text.to_string().into())) => sent,
        _ = stopped(shutdown) => false,
    }
}

pub async fn run(
    socket: WebSocket,
    registry: Arc<Registry>,
    id: String,
    timeouts: PeerTimeouts,
    mut shutdown: watch::Receiver<bool>,
) {
    let (mut sink, mut stream) = socket.split();
    let Some((latest, mut events)) = registry.watch(&id) else {
        let frame = ErrorFrame::new(ErrorCode::SessionError, format!("no session {id:?}"))
            .with_extra("reason", "SESSION_NOT_FOUND".into());
        let text = ServerMessage::Error(frame).to_text();
        if write(&mut sink, Message::Text(text.into())).await {
            let close = Message::Close(Some(CloseFrame {
                code: 1000,
                reason: Utf8Bytes::from_static(""),
            }));
            write(&mut sink, close).await;
        }
        return;
    };
    if let Some(frame) = latest {
        if !deliver(&mut sink, &frame, &mut shutdown).await {
            return;
        }
    }
    let mut stopping = shutdown.clone();
    let mut steering = Steering {
        registry: registry.clone(),
        session: id.clone(),
        hold: None,
        pending: None,
    };
    // Pings only while this socket holds control: a silent controller must not keep the agent
    // waiting, and read-only watchers are already let go when they stop taking frames.
    let mut heartbeat = Heartbeat::new(&timeouts);
    loop {
        tokio::select! {
            event = events.recv() => {
                let frame = match event {
                    Ok(frame) => frame,
                    // Fell behind: the frames in between are stale; show the newest.
                    Err(RecvError::Lagged(_)) => match registry.latest(&id) {
                        Some(frame) => frame,
                        None => continue,
                    },
                    // The session ended.
                    Err(RecvError::Closed) => break,
                };
                if !deliver(&mut sink, &frame, &mut shutdown).await {
                    return;
                }
            }
            result = async { steering.pending.as_mut().expect("guarded").await }, if steering.pending.is_some() => {
                steering.pending = None;
                let reply = match result {
                    Ok(Ok(result)) => ServerMessage::Observation(result),
                    Ok(Err(message)) => ServerMessage::Error(ErrorFrame::new(ErrorCode::ExecutionError, message)),
                    Err(_) => ServerMessage::Error(ErrorFrame::new(ErrorCode::ExecutionError, "the session ended")),
                };
                if !deliver(&mut sink, &reply.to_text(), &mut shutdown).await {
                    return;
                }
            }
            () = tokio::time::sleep_until(heartbeat.wake()), if steering.hold.is_some() => {
                if heartbeat.is_silent() {
                    tracing::info!(
                        "session {id}: the person in control answered no ping within {:?}; control is the agent's again",
                        timeouts.ping_timeout
                    );
                    return;
                }
                if !write(&mut sink, Message::Ping(Default::default())).await {
                    return;
                }
                heartbeat.pinged();
            }
            _ = stopped(&mut stopping) => break,
            incoming = stream.next() => {
                heartbeat.heard();
                match incoming {
                    Some(Ok(Message::Text(text))) => {
                        let was_holding = steering.hold.is_some();
                        let reply = steering.answer(&text);
                        if !was_holding && steering.hold.is_some() {
                            heartbeat = Heartbeat::new(&timeouts);
                        }
                        if let Some(reply) = reply {
                            if !deliver(&mut sink, &reply, &mut shutdown).await {
                                return;
                            }
                        }
                    }
                    Some(Ok(Message::Binary(_))) => {
                        let frame = ErrorFrame::new(ErrorCode::ExecutionError, "send JSON text frames");
                        if !deliver(&mut sink, &ServerMessage::Error(frame).to_text(), &mut shutdown).await {
                            return;
                        }
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                    Some(Ok(_)) => {}
                }
            }
        }
    }
    let close = Message::Close(Some(CloseFrame {
        code: 1000,
        reason: Utf8Bytes::from_static("session ended"),
    }));
    write(&mut sink, close).await;
}

/// A watcher's side of control: its hold (dropping it hands back) and its step in flight.
struct Steering {
    registry: Arc<Registry>,
    session: String,
    hold: Option<Hold>,
    pending: Option<oneshot::Receiver<Result<StepResult, String>>>,
}

impl Steering {
    /// Answer one frame from the watcher: take, step, release. A step's answer comes later
    /// (`pending`); None then.
    fn answer(&mut self, text: &str) -> Option<String> {
        let refuse = |message: String| {
            Some(
                ServerMessage::Error(ErrorFrame::new(ErrorCode::ExecutionError, message)).to_text(),
            )
        };
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(err) => {
                let frame = ErrorFrame::new(ErrorCode::InvalidJson, format!("Invalid JSON: {err}"));
                return Some(ServerMessage::Error(frame).to_text());
            }
        };
        match value.get("type").and_then(Value::as_str) {
            Some("take") => {
                if let Some(hold) = &self.hold {
                    return Some(control_reply(Some(&hold.controller.name)));
                }
                let name = value["data"]["name"]
                    .as_str()
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .unwrap_or(UNNAMED);
                // Shown in status bars, observations and the log: no control characters (a
                // newline would forge a log line, an escape would drive the terminal).
                let name = browserenv::text_layer::printable(name, NAME_LIMIT);
                match self.registry.take_control(&self.session, &name) {
                    Ok(hold) => {
                        tracing::info!("session {}: {name} took control", self.session);
                        self.hold = Some(hold);
                        Some(control_reply(Some(&name)))
                    }
                    Err(message) => Some(
                        ServerMessage::Error(
                            ErrorFrame::new(ErrorCode::ExecutionError, message)
                                .with_extra("reason", json!("CONTROL_HELD")),
                        )
                        .to_text(),
                    ),
                }
            }
            Some("release") => {
                // A note for the agent (the answer to its `request_human`), on one line of
                // printable text: it is shown in observations, recordings and the log.
                let note = value["data"]["note"]
                    .as_str()
                    .map(|note| browserenv::text_layer::printable(note, NOTE_LIMIT));
                if let (Some(hold), Some(note)) = (&self.hold, note) {
                    self.registry
                        .leave_note(&self.session, &hold.controller.id, note);
                }
                if let Some(hold) = self.hold.take() {
                    tracing::info!(
                        "session {}: {} handed back",
                        self.session,
                        hold.controller.name
                    );
                }
                Some(control_reply(None))
            }
            Some("step") => {
                let Some(hold) = &self.hold else {
                    return refuse(
                        "take control first ({\"type\":\"take\"}); watching alone is read-only"
                            .into(),
                    );
                };
                if self.pending.is_some() {
                    return refuse(
                        "one step at a time: wait for the answer to the last one".into(),
                    );
                }
                // `"secret": true` beside the action: the person's typing stays theirs (shown
                // and recorded as `<redacted:N characters>`). The rest is a step as on `/ws`.
                let mut frame = value.clone();
                let secret = match frame.as_object_mut().and_then(|f| f.remove("secret")) {
                    None | Some(Value::Bool(false)) => false,
                    Some(Value::Bool(true)) => true,
                    Some(_) => return refuse("\"secret\" is true or false".into()),
                };
                let action = match ClientMessage::parse(&frame.to_string()) {
                    Ok(ClientMessage::Step(action)) => action,
                    Ok(_) => return refuse("expected a step".into()),
                    Err(frame) => return Some(ServerMessage::Error(frame).to_text()),
                };
                let (reply, answer) = oneshot::channel();
                let action = HumanAction {
                    controller: hold.controller.id.clone(),
                    action,
                    secret,
                    reply,
                };
                match self.registry.send_human_action(&self.session, action) {
                    Ok(()) => {
                        self.pending = Some(answer);
                        None
                    }
                    Err(message) => refuse(message),
                }
            }
            _ => refuse(
                "watch streams take only take, step (while in control) and release; an agent \
                 drives the session through its own /ws connection"
                    .into(),
            ),
        }
    }
}

/// The answer to take and release: who is in control now, from this watcher's point of view.
fn control_reply(name: Option<&str>) -> String {
    let data = match name {
        Some(name) => json!({"control": "human", "name": name, "yours": true}),
        None => json!({"control": "agent", "yours": false}),
    };
    json!({"type": "control", "data": data}).to_string()
}
