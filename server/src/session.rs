//! One WebSocket session: one episode owner with its own environment (and so its own browsers).
//!
//! A reader task owns the receiving half and keeps reading while a step runs, so pings are answered
//! and a vanished peer is noticed at once; the session task handles one request at a time, in order,
//! exactly like the OpenEnv Python server.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::sync::{mpsc, watch};

use browserenv::models::StepResult;
use browserenv::protocol::{ClientMessage, ErrorCode, ErrorFrame, ServerMessage};

use crate::app::AppState;
use crate::browser::Launcher;
use crate::environment::EnvError;
use crate::recording::SessionRecorder;

/// What the reader hands to the session.
enum Incoming {
    Text(Utf8Bytes),
    Binary,
}

/// What the session loop handles next.
enum Next {
    Client(Incoming),
    Text(crate::registry::TextReply),
}

type Sink = SplitSink<WebSocket, Message>;

pub async fn run<L: Launcher>(socket: WebSocket, app: Arc<AppState<L>>, peer: String) {
    let (mut sink, mut stream) = socket.split();
    // Capacity: accept the upgrade, say why, close (docs/wire.md §2.3; no HTTP 503 here).
    let Some(_slot) = app.capacity.try_acquire() else {
        let frame = ErrorFrame::new(ErrorCode::CapacityReached, "Server at capacity")
            .with_extra("active_sessions", json!(app.capacity.active()))
            .with_extra("max_sessions", json!(app.capacity.max()));
        let _ = send(&mut sink, &ServerMessage::Error(frame)).await;
        close(&mut sink).await;
        return;
    };

    let (incoming_tx, mut incoming) = mpsc::channel::<Incoming>(64);
    let (gone_tx, mut gone) = watch::channel(false);
    let reader = tokio::spawn(async move {
        while let Some(message) = stream.next().await {
            let forwarded = match message {
                Ok(Message::Text(text)) => incoming_tx.send(Incoming::Text(text)).await,
                Ok(Message::Binary(_)) => incoming_tx.send(Incoming::Binary).await,
                // Pings are answered by the WebSocket layer as this loop reads.
                Ok(Message::Ping(_) | Message::Pong(_)) => Ok(()),
                Ok(Message::Close(_)) | Err(_) => break,
            };
            if forwarded.is_err() {
                break;
            }
        }
        let _ = gone_tx.send(true);
    });

    let mut env = app.environment();
    let recorder = SessionRecorder::new(app.recorder.clone());
    let registration = app.registry.register(recorder.session().to_string(), peer);
    let mut text_requests = registration.serve_text();
    let mut shutdown = app.shutdown.clone();
    loop {
        let next = tokio::select! {
            next = incoming.recv() => next.map(Next::Client),
            Some(reply) = text_requests.recv() => Some(Next::Text(reply)),
            _ = shutdown.wait_for(|stop| *stop) => None,
        };
        let next = match next {
            Some(Next::Client(next)) => next,
            // A text-layer request is answered between the client's own requests, never during one.
            Some(Next::Text(reply)) => {
                let _ = reply.send(
                    env.visible_text(&registration.id)
                        .await
                        .map_err(|err| err.0),
                );
                continue;
            }
            None => break,
        };
        let text = match next {
            Incoming::Text(text) => text,
            Incoming::Binary => {
                let frame = ErrorFrame::new(
                    ErrorCode::SessionError,
                    "Binary frames are not supported; send JSON text frames",
                );
                let _ = send(&mut sink, &ServerMessage::Error(frame)).await;
                break;
            }
        };
        let message = match ClientMessage::parse(&text) {
            Ok(message) => message,
            Err(frame) => {
                if send(&mut sink, &ServerMessage::Error(frame)).await.is_err() {
                    break;
                }
                continue;
            }
        };
        let work = async {
            match message {
                ClientMessage::Reset(kwargs) => {
                    let result = env.reset(&kwargs).await;
                    if let Ok(result) = &result {
                        recorder.reset(env.state().episode_id, env.task_id(), result);
                        registration.publish(env.state().episode_id, 0, None, result, 0.0);
                    }
                    Some(observation(result))
                }
                ClientMessage::Step(action) => {
                    let started = Instant::now();
                    let result = env.step(&action).await;
                    if let Ok(result) = &result {
                        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
                        recorder.step(&action, result, latency_ms);
                        let state = env.state();
                        registration.publish(
                            state.episode_id,
                            state.step_count,
                            Some(&action),
                            result,
                            latency_ms,
                        );
                    }
                    Some(observation(result))
                }
                ClientMessage::State => Some(ServerMessage::State(env.state())),
                ClientMessage::Close => None,
            }
        };
        // A peer that leaves (or a server that stops) mid-step ends the work at once; dropping the
        // environment's future drops its browser, which kills the process.
        let reply = tokio::select! {
            reply = work => reply,
            _ = gone.wait_for(|gone| *gone) => break,
            _ = shutdown.wait_for(|stop| *stop) => break,
        };
        let Some(reply) = reply else { break };
        if send(&mut sink, &reply).await.is_err() {
            break;
        }
    }
    env.close().await;
    close(&mut sink).await;
    reader.abort();
}

fn observation(result: Result<StepResult, EnvError>) -> ServerMessage {
    match result {
        Ok(result) => ServerMessage::Observation(result),
        Err(EnvError(message)) => {
            ServerMessage::Error(ErrorFrame::new(ErrorCode::ExecutionError, message))
        }
    }
}

async fn send(sink: &mut Sink, message: &ServerMessage) -> Result<(), axum::Error> {
    sink.send(Message::Text(message.to_text().into())).await
}

async fn close(sink: &mut Sink) {
    let _ = sink
        .send(Message::Close(Some(CloseFrame {
            code: 1000,
            reason: Utf8Bytes::from_static(""),
        })))
        .await;
    let _ = sink.close().await;
}
