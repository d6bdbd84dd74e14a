//! Async typed client over `/ws`: the Rust twin of the seed's Python `BrowserClient`.
//!
//! One request, one reply, in order, exactly like the OpenEnv Python client; the server's error
//! frames become [`ClientError::Server`] and leave the connection usable unless their code closes
//! the session.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Map, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::models::{BrowserAction, BrowserState, FieldError, StepResult};
use crate::protocol::{ClientMessage, ErrorFrame, ServerMessage};

/// The Python client accepts frames up to 100 MiB; so do we.
const MAX_FRAME_BYTES: usize = 100 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid server URL {0:?}: expected http(s):// or ws(s)://")]
    BadUrl(String),
    #[error("cannot connect to {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("connection failed: {0}")]
    Transport(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("server closed the connection")]
    Closed,
    #[error("server error: {0}")]
    Server(ErrorFrame),
    #[error("unexpected reply: {0}")]
    Protocol(String),
    #[error("invalid action: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    InvalidAction(Vec<FieldError>),
}

/// Arguments of `reset`. `extra` carries any other keyword the server understands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResetOptions {
    pub start_url: String,
    pub episode_id: Option<String>,
    pub seed: Option<i64>,
    pub extra: Map<String, Value>,
}

impl ResetOptions {
    pub fn new(start_url: impl Into<String>) -> Self {
        ResetOptions {
            start_url: start_url.into(),
            ..Default::default()
        }
    }

    pub fn episode_id(mut self, id: impl Into<String>) -> Self {
        self.episode_id = Some(id.into());
        self
    }

    fn into_kwargs(self) -> Map<String, Value> {
        let mut kwargs = self.extra;
        kwargs.insert("start_url".into(), Value::String(self.start_url));
        if let Some(id) = self.episode_id {
            kwargs.insert("episode_id".into(), Value::String(id));
        }
        if let Some(seed) = self.seed {
            kwargs.insert("seed".into(), Value::from(seed));
        }
        kwargs
    }
}

/// `http://host:port[/prefix]` or `ws://…` → the `/ws` endpoint.
pub fn websocket_url(base_url: &str) -> Result<String, ClientError> {
    let trimmed = base_url.trim_end_matches('/');
    let rest = if let Some(rest) = trimmed.strip_prefix("http://") {
        format!("ws://{rest}")
    } else if let Some(rest) = trimmed.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if trimmed.starts_with("ws://") || trimmed.starts_with("wss://") {
        trimmed.to_string()
    } else {
        return Err(ClientError::BadUrl(base_url.to_string()));
    };
    Ok(if rest.ends_with("/ws") {
        rest
    } else {
        format!("{rest}/ws")
    })
}

pub struct Client {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Client {
    pub async fn connect(base_url: &str) -> Result<Self, ClientError> {
        Self::connect_with_token(base_url, None).await
    }

    /// Connect to a server that requires `Authorization: Bearer <token>`.
    pub async fn connect_with_token(
        base_url: &str,
        token: Option<&str>,
    ) -> Result<Self, ClientError> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let url = websocket_url(base_url)?;
        let mut request =
            url.as_str()
                .into_client_request()
                .map_err(|err| ClientError::Connect {
                    url: url.clone(),
                    reason: err.to_string(),
                })?;
        if let Some(token) = token {
            let value = format!("Bearer {token}")
                .parse()
                .map_err(|_| ClientError::Connect {
                    url: url.clone(),
                    reason: "the token is not a valid header value".into(),
                })?;
            request.headers_mut().insert("authorization", value);
        }
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_FRAME_BYTES))
            .max_frame_size(Some(MAX_FRAME_BYTES));
        let (socket, _) =
            tokio_tungstenite::connect_async_with_config(request, Some(config), false)
                .await
                .map_err(|err| ClientError::Connect {
                    url: url.clone(),
                    reason: err.to_string(),
                })?;
        Ok(Client { socket })
    }

    pub async fn reset(&mut self, options: ResetOptions) -> Result<StepResult, ClientError> {
        self.reset_with(options.into_kwargs()).await
    }

    /// Reset with raw keyword arguments, exactly as sent.
    pub async fn reset_with(
        &mut self,
        kwargs: Map<String, Value>,
    ) -> Result<StepResult, ClientError> {
        let reply = self
            .request(&ClientMessage::Reset(kwargs).to_text())
            .await?;
        expect_observation(reply)
    }

    /// Validates locally first so an obviously bad action never costs a round trip.
    pub async fn step(&mut self, action: BrowserAction) -> Result<StepResult, ClientError> {
        action.validate().map_err(ClientError::InvalidAction)?;
        let reply = self.request(&ClientMessage::Step(action).to_text()).await?;
        expect_observation(reply)
    }

    pub async fn state(&mut self) -> Result<BrowserState, ClientError> {
        match self.request(&ClientMessage::State.to_text()).await? {
            ServerMessage::State(state) => Ok(state),
            other => Err(ClientError::Protocol(format!(
                "expected state, got {other:?}"
            ))),
        }
    }

    /// Send any text frame and read the reply; error frames are returned, not raised. For tests and
    /// tools that need to see the server's exact answer to a malformed frame.
    pub async fn send_raw(&mut self, text: &str) -> Result<ServerMessage, ClientError> {
        self.socket.send(Message::text(text)).await?;
        self.read_reply().await
    }

    /// Ends the session: the server closes the browser and the socket.
    pub async fn close(mut self) -> Result<(), ClientError> {
        self.socket
            .send(Message::text(ClientMessage::Close.to_text()))
            .await?;
        // Drain until the server's close frame so the session is gone when this returns.
        while let Some(message) = self.socket.next().await {
            if matches!(message, Ok(Message::Close(_)) | Err(_)) {
                break;
            }
        }
        Ok(())
    }

    /// Wait while idle until the server closes the connection (answering its pings meanwhile).
    /// Cancel-safe: drop it to send the next request.
    pub async fn closed(&mut self) -> ClientError {
        loop {
            match self.socket.next().await {
                Some(Ok(Message::Close(_))) | None => return ClientError::Closed,
                Some(Err(err)) => return err.into(),
                // An error frame between requests says why the server ends the session (it was
                // idle too long, or did not answer pings): that is the reason to report.
                Some(Ok(Message::Text(text))) => {
                    if let Ok(ServerMessage::Error(frame)) = ServerMessage::parse(&text) {
                        return ClientError::Server(frame);
                    }
                }
                // Nothing else is expected between requests; a stray frame is not a reply to
                // anything we will send, so it is dropped.
                Some(Ok(_)) => continue,
            }
        }
    }

    async fn request(&mut self, text: &str) -> Result<ServerMessage, ClientError> {
        match self.send_raw(text).await? {
            ServerMessage::Error(frame) => Err(ClientError::Server(frame)),
            reply => Ok(reply),
        }
    }

    async fn read_reply(&mut self) -> Result<ServerMessage, ClientError> {
        loop {
            match self.socket.next().await {
                Some(Ok(Message::Text(text))) => {
                    return ServerMessage::parse(&text).map_err(ClientError::Protocol)
                }
                Some(Ok(Message::Close(_))) | None => return Err(ClientError::Closed),
                // Pings are answered by tungstenite while we read; nothing else is expected.
                Some(Ok(_)) => continue,
                Some(Err(err)) => return Err(err.into()),
            }
        }
    }
}

fn expect_observation(reply: ServerMessage) -> Result<StepResult, ClientError> {
    match reply {
        ServerMessage::Observation(result) => Ok(result),
        other => Err(ClientError::Protocol(format!(
            "expected an observation, got {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_url_follows_the_python_client() {
        assert_eq!(
            websocket_url("http://127.0.0.1:8000").unwrap(),
            "ws://127.0.0.1:8000/ws"
        );
        assert_eq!(
            websocket_url("https://h.example/").unwrap(),
            "wss://h.example/ws"
        );
        assert_eq!(websocket_url("ws://h:1/ws").unwrap(), "ws://h:1/ws");
        assert!(websocket_url("ftp://h").is_err());
    }

    #[test]
    fn reset_options_become_kwargs() {
        let kwargs = ResetOptions::new("https://example.com/")
            .episode_id("e1")
            .into_kwargs();
        assert_eq!(kwargs["start_url"], "https://example.com/");
        assert_eq!(kwargs["episode_id"], "e1");
        assert!(!kwargs.contains_key("seed"));
    }
}
