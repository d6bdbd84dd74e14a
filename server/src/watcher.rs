//! A read-only watcher of one session: the newest frame at once, then every reset and step as it
//! happens. It runs in its own task with its own socket, so a slow watcher only delays itself; one
//! that falls behind skips to the newest frame.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use browserenv::protocol::{ErrorCode, ErrorFrame, ServerMessage};

use crate::registry::Registry;

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
            _ = stopped(&mut stopping) => break,
            incoming = stream.next() => match incoming {
                Some(Ok(Message::Text(_) | Message::Binary(_))) => {
                    let frame = ErrorFrame::new(
                        ErrorCode::ExecutionError,
                        "watch streams are read-only: drive the session through its own /ws connection",
                    );
                    if !deliver(&mut sink, &ServerMessage::Error(frame).to_text(), &mut shutdown).await {
                        return;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
    let close = Message::Close(Some(CloseFrame {
        code: 1000,
        reason: Utf8Bytes::from_static("session ended"),
    }));
    write(&mut sink, close).await;
}
