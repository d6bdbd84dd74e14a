//! Watch mode: follow a session an agent drives, read-only, through the server's
//! `/sessions/{id}/watch` stream. The same picture, grid and status as control mode; the agent's
//! last action is drawn on the frame.

use std::sync::Arc;
use std::time::Duration;

use browserenv::models::{BrowserAction, StepResult};
use browserenv::protocol::parse_step_result;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use crate::app::{Msg, Request};
use crate::connection::{Link, LinkEvent};
use crate::picture::decode_png;

/// How long the watch stream's WebSocket handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Follow one session's stream; events arrive like a controlled session's replies.
pub fn watch(server: String, token: Option<String>, session: String) -> Link {
    // Watch links take no requests; the channel only keeps the Link shape.
    let (requests, _) = mpsc::channel::<Request>(1);
    let (event_tx, events) = mpsc::channel::<LinkEvent>(32);
    tokio::spawn(async move {
        let send = |event: LinkEvent| {
            let event_tx = event_tx.clone();
            async move { event_tx.send(event).await.is_ok() }
        };
        let url = format!(
            "{}/sessions/{session}/watch",
            server.trim_end_matches('/').replacen("http", "ws", 1)
        );
        let mut request = match url.as_str().into_client_request() {
            Ok(request) => request,
            Err(err) => {
                send(LinkEvent::Msg(Msg::Disconnected(err.to_string()))).await;
                return;
            }
        };
        if let Some(value) = token.and_then(|t| format!("Bearer {t}").parse().ok()) {
            request.headers_mut().insert("authorization", value);
        }
        let config = WebSocketConfig::default()
            .max_message_size(Some(100 << 20))
            .max_frame_size(Some(100 << 20));
        // A server that accepts the connection and then says nothing must not hold the UI.
        let connect = tokio_tungstenite::connect_async_with_config(request, Some(config), false);
        let mut socket = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(Ok((socket, _))) => socket,
            Ok(Err(err)) => {
                send(LinkEvent::Msg(Msg::Disconnected(err.to_string()))).await;
                return;
            }
            Err(_) => {
                send(LinkEvent::Msg(Msg::Disconnected(format!(
                    "{url}: no answer within {CONNECT_TIMEOUT:?}"
                ))))
                .await;
                return;
            }
        };
        if !send(LinkEvent::Msg(Msg::Connected)).await {
            return;
        }
        while let Some(message) = socket.next().await {
            let text = match message {
                Ok(Message::Text(text)) => text,
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => continue,
            };
            let Ok(frame) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            if frame["type"] == "error" {
                let message = frame["data"]["message"]
                    .as_str()
                    .unwrap_or("error")
                    .to_string();
                send(LinkEvent::Msg(Msg::Disconnected(message))).await;
                return;
            }
            let data = &frame["data"];
            let Ok(result) = parse_step_result(&data["result"]) else {
                continue;
            };
            let action = BrowserAction::from_value(&data["action"]).ok();
            let latency_ms = data["latency_ms"].as_f64().unwrap_or_default();
            let step = data["step"].as_u64().unwrap_or_default();
            let request = match &action {
                Some(action) => Request::Step(action.clone()),
                None => Request::Reset(result.observation.url.clone()),
            };
            let picture = picture(&result, action.as_ref()).await;
            let observed = Msg::Observation {
                url: result.observation.url.clone(),
                title: result
                    .observation
                    .metadata
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                error: result.observation.error.clone(),
                done: result.done,
                step,
                latency: Duration::from_secs_f64(latency_ms / 1000.0),
                reward: result.reward,
                verdict: None,
                max_steps: None,
            };
            let reply = LinkEvent::Reply {
                request,
                result,
                latency_ms,
                episode_id: data["episode_id"].as_str().map(str::to_string),
            };
            if !send(reply).await
                || !send(LinkEvent::Picture {
                    image: picture.as_ref().map(|(image, _)| image.clone()),
                    png: picture.and_then(|(_, png)| png),
                    step,
                })
                .await
                || !send(LinkEvent::Msg(observed)).await
            {
                return;
            }
        }
        send(LinkEvent::Msg(Msg::Disconnected(
            "the watched session ended".into(),
        )))
        .await;
    });
    Link { requests, events }
}

/// The frame, with the agent's action drawn where it happened.
/// The frame with the agent's action drawn on it; the PNG too when nothing was drawn.
async fn picture(
    result: &StepResult,
    action: Option<&BrowserAction>,
) -> Option<(Arc<image::DynamicImage>, Option<Arc<Vec<u8>>>)> {
    if result.observation.screenshot.is_empty() {
        return None;
    }
    let screenshot = result.observation.screenshot.clone();
    let action = action.map(BrowserAction::to_value);
    tokio::task::spawn_blocking(move || {
        let (frame, png) = decode_png(&screenshot).ok()?;
        Some(match action {
            Some(action) => (Arc::new(crate::viewer::mark(&frame, &action)), None),
            None => (Arc::new(frame), Some(Arc::new(png))),
        })
    })
    .await
    .ok()
    .flatten()
}
