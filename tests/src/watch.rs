//! A session's watch socket (`/sessions/{id}/watch`) as the tests drive it: a person watching,
//! taking control, stepping and handing back.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::Harness;

pub use crate::socket::Socket;

pub async fn watch(harness: &Harness, id: &str, token: Option<&str>) -> Result<Socket, String> {
    let url = format!("ws://{}/sessions/{id}/watch", harness.server.addr);
    let mut request = url.into_client_request().unwrap();
    if let Some(token) = token {
        let value = format!("Bearer {token}").parse().unwrap();
        request.headers_mut().insert("authorization", value);
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
        .map_err(|err| err.to_string())
}

/// The next JSON frame that `wanted` accepts (others skipped), within 20 s.
pub async fn until(socket: &mut Socket, wanted: impl Fn(&Value) -> bool) -> Value {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match socket.next().await.expect("a frame").expect("a frame") {
                Message::Text(text) => {
                    let frame: Value = serde_json::from_str(&text).unwrap();
                    if wanted(&frame) {
                        return frame;
                    }
                }
                Message::Close(frame) => panic!("closed: {frame:?}"),
                _ => {}
            }
        }
    })
    .await
    .expect("the frame came in time")
}

pub async fn send(socket: &mut Socket, frame: Value) {
    socket.send(Message::text(frame.to_string())).await.unwrap();
}

pub fn reply(frame: &Value) -> bool {
    matches!(
        frame["type"].as_str(),
        Some("observation" | "error" | "control")
    )
}

pub async fn session_id(harness: &Harness) -> String {
    let sessions: Value = reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    sessions[0]["id"].as_str().unwrap().to_string()
}
