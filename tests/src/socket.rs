//! The server's wire as the tests drive it: the `/ws` socket frame by frame, and one OpenEnv MCP
//! call over HTTP. One place for every test crate: the server's and the UI's own integration tests
//! (`server/tests/`, `tui/tests/`) cannot depend on this crate, which depends on both, so they
//! include this file as a module of theirs (`#[path]`); it uses only what all of them have:
//! tokio-tungstenite, futures-util, reqwest and serde_json.

#![allow(dead_code)] // each test file uses what it needs

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How long a test waits for a frame: far beyond any step's bound in the tests' settings, so only
/// a frame that never comes reaches it (a hang becomes a failure, not a stuck run).
const FRAME_WAIT: Duration = Duration::from_secs(60);

/// A `/ws` session on the server at `addr`.
pub async fn connect(addr: SocketAddr) -> Socket {
    tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .unwrap()
        .0
}

/// Like the Python client: frames up to 100 MiB (an error frame echoes its input).
pub async fn connect_like_python(addr: SocketAddr) -> Socket {
    let limit = 100 * 1024 * 1024;
    let config = WebSocketConfig::default()
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit));
    tokio_tungstenite::connect_async_with_config(format!("ws://{addr}/ws"), Some(config), false)
        .await
        .unwrap()
        .0
}

/// A WebSocket at `url` with `Authorization: Bearer token`.
pub async fn connect_with_token(url: &str, token: &str) -> Socket {
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

/// Send `frame`, and the next frame back.
pub async fn request(socket: &mut Socket, frame: Value) -> Value {
    socket.send(Message::text(frame.to_string())).await.unwrap();
    next_json(socket).await
}

/// The next text frame as JSON, or `{"closed": code, "reason": …}` for a close frame (pings and
/// pongs passed over).
pub async fn next_json(socket: &mut Socket) -> Value {
    loop {
        match tokio::time::timeout(FRAME_WAIT, socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => return serde_json::from_str(&text).unwrap(),
            Ok(Some(Ok(Message::Close(frame)))) => {
                return match frame {
                    Some(frame) => {
                        json!({"closed": u16::from(frame.code), "reason": frame.reason.as_str()})
                    }
                    None => json!({"closed": null}),
                }
            }
            Ok(Some(Ok(_))) => {}
            other => panic!("no frame within {FRAME_WAIT:?}: {other:?}"),
        }
    }
}

/// The close frame after any other frames: its code and reason.
pub async fn close_frame(socket: &mut Socket) -> Option<(CloseCode, String)> {
    while let Some(message) = socket.next().await {
        if let Ok(Message::Close(frame)) = message {
            return frame.map(|f| (f.code, f.reason.to_string()));
        }
    }
    None
}

/// One JSON-RPC call to the MCP endpoint of the server at `base_url` (Streamable HTTP, JSON
/// answers), with `token` when the server wants one: its answer.
pub async fn mcp_call(base_url: &str, token: Option<&str>, body: Value) -> Value {
    let mut request = reqwest::Client::new()
        .post(format!("{base_url}/mcp"))
        .header("accept", "*/*")
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap().json().await.unwrap()
}
