//! The WebSocket transport (`/ws`): one socket is one session (`server/src/session/mod.rs`).
//!
//! A reader task owns the receiving half and keeps reading while a step runs, so pings are answered
//! and a vanished peer is noticed at once; the session task handles one request at a time, in order,
//! exactly like the OpenEnv Python server.
//!
//! No peer holds a session for good. The reader pings the peer every `ping_interval` and drops one
//! that sends nothing back within `ping_timeout`; every frame written has the same deadline, so a
//! peer that stops reading is dropped too; and a session that gets no request for the session
//! timeout is ended with a `SESSION_ERROR` saying so. Each way, the browser is closed, the slot
//! freed and the session leaves the registry (its watchers see it end).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::sync::{mpsc, watch, Mutex};

use browserenv::models::StepResult;
use browserenv::protocol::{ClientMessage, ErrorCode, ErrorFrame, ServerMessage};

use crate::browser::Launcher;
use crate::environment::EnvError;
use crate::session::{Sessions, Transport};
use crate::settings::PeerTimeouts;
use crate::transports::mcp::openenv::OpenEnvMcp;

/// Frames the reader may hold for the session while it works on a request (each up to 32 MiB).
/// Past that the reader stops reading, and TCP flow control pushes back on a peer that floods,
/// instead of the server buffering its frames. Two: the request after the current one is ready.
const INCOMING_BACKLOG: usize = 2;

/// How long each of the last frames to a peer that is being let go may take (it may not be
/// reading any more).
const FAREWELL_TIMEOUT: Duration = Duration::from_secs(2);

/// What the reader hands to the session.
enum Incoming {
    Text(Utf8Bytes),
    Binary,
}

/// Why the peer is no longer there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gone {
    /// It closed the socket, or the connection failed.
    Left,
    /// It sent nothing back within `ping_timeout` of a ping.
    Silent,
    /// A frame to it could not be written within `ping_timeout`: it stopped reading.
    Stalled,
}

/// How a session ended.
enum Ending {
    /// The client asked (`close`), or sent what ends a session (a binary frame).
    Done,
    /// No request for the session timeout.
    Idle,
    Peer(Gone),
    /// The server drains and this session has no episode running; its close frame is sent.
    Drained,
    Shutdown,
}

/// The sending half, shared by the session (its replies) and the reader (its pings). Every write
/// has a deadline, so a peer that stops reading cannot hold either of them.
#[derive(Clone)]
struct Outbox {
    sink: Arc<Mutex<SplitSink<WebSocket, Message>>>,
    deadline: Duration,
}

impl Outbox {
    async fn send(&self, message: &ServerMessage) -> Result<(), Gone> {
        self.write(Message::Text(message.to_text().into()), self.deadline)
            .await
    }

    async fn write(&self, message: Message, deadline: Duration) -> Result<(), Gone> {
        let sent = tokio::time::timeout(deadline, async {
            self.sink.lock().await.send(message).await
        })
        .await;
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Gone::Left),
            Err(_) => Err(Gone::Stalled),
        }
    }

    /// A ping, unless a reply is being written (None): that write has its own deadline.
    async fn ping(&self) -> Option<Result<(), Gone>> {
        let mut sink = self.sink.try_lock().ok()?;
        let sent =
            tokio::time::timeout(self.deadline, sink.send(Message::Ping(Bytes::new()))).await;
        Some(match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Gone::Left),
            Err(_) => Err(Gone::Stalled),
        })
    }

    /// A reply and the close frame in one write, so a client that reads the reply also finds its
    /// socket closed, and its next request opens a new one (OpenEnv's client does so by itself)
    /// instead of going out on a socket that is closing.
    async fn send_then_close(
        &self,
        message: &ServerMessage,
        code: u16,
        reason: &'static str,
    ) -> Result<(), Gone> {
        let close = Message::Close(Some(CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        }));
        let sent = tokio::time::timeout(self.deadline, async {
            let mut sink = self.sink.lock().await;
            sink.feed(Message::Text(message.to_text().into())).await?;
            sink.send(close).await
        })
        .await;
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Gone::Left),
            Err(_) => Err(Gone::Stalled),
        }
    }

    /// The last frames: an error frame saying why (if any), then the close frame.
    async fn farewell(&self, notice: Option<ErrorFrame>, code: u16, reason: &'static str) {
        if let Some(frame) = notice {
            let text = ServerMessage::Error(frame).to_text();
            if self
                .write(Message::Text(text.into()), FAREWELL_TIMEOUT)
                .await
                .is_err()
            {
                return;
            }
        }
        let close = Message::Close(Some(CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        }));
        if self.write(close, FAREWELL_TIMEOUT).await.is_ok() {
            let _ = tokio::time::timeout(FAREWELL_TIMEOUT, async {
                self.sink.lock().await.close().await
            })
            .await;
        }
    }
}

/// What a WebSocket session needs from the server besides its socket.
pub struct Context<L: Launcher> {
    pub sessions: Arc<Sessions<L>>,
    /// OpenEnv's MCP: its `"mcp"` frames, and the sessions a socket may attach to.
    pub openenv: Arc<OpenEnvMcp<L>>,
    /// Drive this session of OpenEnv's (`/ws?session_id=…`) instead of a new one.
    pub attach_to: Option<String>,
    /// Who opened the socket: a new session acts under their token (`caller.rs`).
    pub caller: crate::operations::caller::Caller,
    pub timeouts: PeerTimeouts,
    /// Turns true when the server shuts down.
    pub shutdown: watch::Receiver<bool>,
}

pub async fn run<L: Launcher>(socket: WebSocket, context: Context<L>, peer: String) {
    let Context {
        sessions,
        openenv,
        attach_to,
        caller,
        timeouts,
        mut shutdown,
    } = context;
    let (sink, stream) = socket.split();
    let outbox = Outbox {
        sink: Arc::new(Mutex::new(sink)),
        deadline: timeouts.ping_timeout,
    };
    // Capacity: accept the upgrade, say why, close (docs/wire.md §2.3; no HTTP 503 here).
    // An attached session is OpenEnv's to close: the socket only lets go of it at the end.
    let (session, attached) = match attach_to {
        None => match sessions.open_as(Transport::WebSocket, peer.clone(), caller.clone()) {
            Ok(session) => (session, None),
            Err(refused) => {
                outbox.farewell(Some(refused.frame()), 1000, "").await;
                return;
            }
        },
        Some(id) => match openenv.attach(&id, &caller) {
            Ok(attached) => (attached.session.clone(), Some(attached)),
            Err(message) => {
                let frame = ErrorFrame::new(ErrorCode::SessionError, message);
                outbox.farewell(Some(frame), 1000, "").await;
                return;
            }
        },
    };

    let (incoming_tx, mut incoming) = mpsc::channel::<Incoming>(INCOMING_BACKLOG);
    let (gone_tx, mut gone) = watch::channel(None::<Gone>);
    let reader = tokio::spawn({
        let (outbox, timeouts) = (outbox.clone(), timeouts.clone());
        async move {
            let why = read_frames(stream, &outbox, &timeouts, &incoming_tx).await;
            // Said before the queue closes, so the session knows why when it sees it closed.
            let _ = gone_tx.send(Some(why));
        }
    });

    let lifecycle = sessions.lifecycle().clone();
    // Once the drain has begun, the session is looked at after each reply instead.
    let mut drain_seen = false;
    let mut idle_until = deadline(timeouts.session_timeout);
    let ending = loop {
        let next = tokio::select! {
            next = incoming.recv() => Some(next),
            () = until(idle_until) => break Ending::Idle,
            why = departure(&mut gone) => break Ending::Peer(why),
            _ = shutdown.wait_for(|stop| *stop) => break Ending::Shutdown,
            () = lifecycle.draining(), if !drain_seen => None,
        };
        let Some(next) = next else {
            // The drain began while the session waited for a request.
            drain_seen = true;
            if session.lock().await.drained() {
                outbox
                    .farewell(None, 1001, crate::operations::drain::DRAINED_REASON)
                    .await;
                break Ending::Drained;
            }
            continue;
        };
        let text = match next {
            Some(Incoming::Text(text)) => text,
            Some(Incoming::Binary) => {
                let frame = ErrorFrame::new(
                    ErrorCode::SessionError,
                    "Binary frames are not supported; send JSON text frames",
                );
                let _ = outbox.send(&ServerMessage::Error(frame)).await;
                break Ending::Done;
            }
            None => break Ending::Peer(gone.borrow().unwrap_or(Gone::Left)),
        };
        let reply = match ClientMessage::parse_in(&text, sessions.settings().actions) {
            Ok(message) => {
                let work = async {
                    Some(match message {
                        ClientMessage::Reset(kwargs) => {
                            observation(crate::session::agent_reset(&session, &kwargs).await)
                        }
                        ClientMessage::Step(action) => {
                            observation(crate::session::agent_step(&session, &action).await)
                        }
                        ClientMessage::State => ServerMessage::State(session.lock().await.state()),
                        ClientMessage::Mcp(request) => ServerMessage::Mcp(
                            openenv
                                .answer(&request, Some(&session), &caller, &peer)
                                .await,
                        ),
                        ClientMessage::Close => return None,
                    })
                };
                // A peer that leaves (or a server that stops) mid-step ends the work at once:
                // the step's future is dropped, and the browser is closed below.
                let reply = tokio::select! {
                    reply = work => reply,
                    why = departure(&mut gone) => break Ending::Peer(why),
                    _ = shutdown.wait_for(|stop| *stop) => break Ending::Shutdown,
                };
                match reply {
                    Some(reply) => reply,
                    None => break Ending::Done,
                }
            }
            Err(frame) => ServerMessage::Error(frame),
        };
        if lifecycle.is_draining() && session.lock().await.drained() {
            // The episode is over on a draining server: this reply is the session's last.
            match outbox
                .send_then_close(&reply, 1001, crate::operations::drain::DRAINED_REASON)
                .await
            {
                Ok(()) => break Ending::Drained,
                Err(why) => break Ending::Peer(why),
            }
        }
        if let Err(why) = outbox.send(&reply).await {
            break Ending::Peer(why);
        }
        // The idle clock runs from the answer: time spent on a request is never idle time.
        idle_until = deadline(timeouts.session_timeout);
    };
    let (notice, close) = farewell_for(&ending, &timeouts);
    let id = session.lock().await.id().to_string();
    match &ending {
        Ending::Idle | Ending::Peer(Gone::Silent | Gone::Stalled) => tracing::info!(
            "session {id} ended: {}",
            notice
                .as_ref()
                .map_or("it stopped reading", |n| n.message.as_str())
        ),
        _ => {}
    }
    // The client hears why before the browser closes (which can take a moment); the close frame
    // follows.
    if let Some(notice) = notice {
        let _ = outbox
            .write(
                Message::Text(ServerMessage::Error(notice).to_text().into()),
                FAREWELL_TIMEOUT,
            )
            .await;
    }
    match attached {
        // A socket attached to OpenEnv's session lets go of it (a close asked through OpenEnv's
        // MCP meanwhile happens now), unless the session timed out under it.
        Some(attached) if !matches!(ending, Ending::Idle) => drop(attached),
        Some(attached) => attached.close().await,
        None => session.lock().await.close().await,
    }
    if matches!(ending, Ending::Idle) {
        // The session is over, but the socket stays open until the client speaks again (or for
        // one more timeout), so the error frame is read as the answer to its next request.
        // OpenEnv's Python client opens a new socket by itself when it finds its socket closed,
        // and its caller would only hear "reset before stepping" from the new session.
        tokio::select! {
            _ = incoming.recv() => {}
            _ = departure(&mut gone) => {}
            () = until(deadline(timeouts.session_timeout)) => {}
            _ = shutdown.wait_for(|stop| *stop) => {}
        }
    }
    if let Some((code, reason)) = close {
        outbox.farewell(None, code, reason).await;
    }
    reader.abort();
}

/// What a session that ended this way tells its peer: an error frame saying why, and the close
/// frame's code and reason. A peer that stopped reading is told nothing (nothing would get through).
fn farewell_for(
    ending: &Ending,
    timeouts: &PeerTimeouts,
) -> (Option<ErrorFrame>, Option<(u16, &'static str)>) {
    match ending {
        Ending::Idle => {
            let seconds = timeouts.session_timeout.unwrap_or_default().as_secs_f64();
            let frame = ErrorFrame::new(
                ErrorCode::SessionError,
                format!(
                    "Session ended: no message for {seconds} s (BROWSER_SESSION_TIMEOUT_SECONDS); \
                     its browser is closed. Connect again for a new session"
                ),
            )
            .with_extra("reason", json!("SESSION_TIMEOUT"))
            .with_extra("session_timeout", json!(seconds));
            (Some(frame), Some((1000, "session timeout")))
        }
        Ending::Peer(Gone::Silent) => {
            let seconds = timeouts.ping_timeout.as_secs_f64();
            let frame = ErrorFrame::new(
                ErrorCode::SessionError,
                format!(
                    "Session ended: no answer to a ping within {seconds} s \
                     (BROWSER_WS_PING_TIMEOUT_SECONDS); its browser is closed"
                ),
            )
            .with_extra("reason", json!("PING_TIMEOUT"));
            // 1011 with this reason is what Python's `websockets` sends in the same case.
            (Some(frame), Some((1011, "keepalive ping timeout")))
        }
        Ending::Shutdown => {
            let frame = ErrorFrame::new(
                ErrorCode::SessionError,
                "Session ended: the server is shutting down (an episode still running when \
                 BROWSER_DRAIN_SECONDS is over is ended); its browser is closed. Connect again to \
                 reach another replica",
            )
            .with_extra("reason", json!("SERVER_SHUTDOWN"));
            (Some(frame), Some((1001, "server shutting down")))
        }
        Ending::Peer(Gone::Stalled) | Ending::Drained => (None, None),
        Ending::Peer(Gone::Left) | Ending::Done => (None, Some((1000, ""))),
    }
}

/// Read the peer's frames into the session's queue, ping it, and return why it is gone.
async fn read_frames(
    mut stream: SplitStream<WebSocket>,
    outbox: &Outbox,
    timeouts: &PeerTimeouts,
    incoming: &mpsc::Sender<Incoming>,
) -> Gone {
    let mut heartbeat = Heartbeat::new(timeouts);
    loop {
        tokio::select! {
            frame = stream.next() => {
                heartbeat.heard();
                let forwarded = match frame {
                    // Waiting here while the queue is full is the back-pressure on a flood.
                    Some(Ok(Message::Text(text))) => incoming.send(Incoming::Text(text)).await,
                    Some(Ok(Message::Binary(_))) => incoming.send(Incoming::Binary).await,
                    // Pings are answered by the WebSocket layer as this loop reads.
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => Ok(()),
                    Some(Ok(Message::Close(_)) | Err(_)) | None => return Gone::Left,
                };
                if forwarded.is_err() {
                    // The session is over.
                    return Gone::Left;
                }
            }
            () = tokio::time::sleep_until(heartbeat.wake()) => {
                if heartbeat.is_silent() {
                    return Gone::Silent;
                }
                match outbox.ping().await {
                    Some(Ok(())) => heartbeat.pinged(),
                    Some(Err(gone)) => return gone,
                    // A reply is being written; the next ping comes at the next interval.
                    None => {}
                }
            }
        }
    }
}

/// When to ping a WebSocket peer and when it has gone silent: the one rule of `/ws` peers and of
/// a watcher holding control (`watcher.rs`).
pub(crate) struct Heartbeat {
    interval: Duration,
    timeout: Duration,
    next_ping: tokio::time::Instant,
    /// Set while a ping is unanswered: by then the peer must have sent something, its pong at least.
    answer_due: Option<tokio::time::Instant>,
}

impl Heartbeat {
    pub(crate) fn new(timeouts: &PeerTimeouts) -> Self {
        Heartbeat {
            interval: timeouts.ping_interval,
            timeout: timeouts.ping_timeout,
            next_ping: tokio::time::Instant::now() + timeouts.ping_interval,
            answer_due: None,
        }
    }

    /// When to look again: the answer's deadline while a ping is unanswered, else the next ping.
    pub(crate) fn wake(&self) -> tokio::time::Instant {
        self.answer_due.unwrap_or(self.next_ping)
    }

    /// The peer sent a frame: it is alive.
    pub(crate) fn heard(&mut self) {
        self.answer_due = None;
    }

    /// At `wake`: true when a ping went unanswered; otherwise the next ping is scheduled, and the
    /// caller sends this one.
    pub(crate) fn is_silent(&mut self) -> bool {
        if self.answer_due.is_some() {
            return true;
        }
        self.next_ping = tokio::time::Instant::now() + self.interval;
        false
    }

    /// A ping went out: the peer has `ping_timeout` to send something.
    pub(crate) fn pinged(&mut self) {
        self.answer_due = Some(tokio::time::Instant::now() + self.timeout);
    }
}

/// Resolves with why the peer is gone, once the reader says so.
async fn departure(gone: &mut watch::Receiver<Option<Gone>>) -> Gone {
    match gone.wait_for(Option::is_some).await {
        Ok(why) => why.unwrap_or(Gone::Left),
        Err(_) => Gone::Left,
    }
}

fn deadline(timeout: Option<Duration>) -> Option<tokio::time::Instant> {
    timeout.map(|timeout| tokio::time::Instant::now() + timeout)
}

/// Resolves at the deadline; never without one.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

fn observation(result: Result<StepResult, EnvError>) -> ServerMessage {
    match result {
        Ok(result) => ServerMessage::Observation(result),
        Err(err) => {
            ServerMessage::Error(ErrorFrame::new(ErrorCode::ExecutionError, err.to_string()))
        }
    }
}
