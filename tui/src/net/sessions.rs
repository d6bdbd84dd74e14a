//! The server's read-only session routes over HTTP (reqwest, with timeouts): the live sessions
//! (`GET /sessions`, for watch mode) and a session's text layer (`GET /sessions/{id}/text`).
//! Neither is part of the OpenEnv contract: against a server without them (the Python one) the
//! text layer is reported unavailable once and the picture goes on alone.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use browserenv::text_layer::TextLayer;

/// A server that has not answered in this long is not waited for (a text layer is optional).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The most bytes of an answer read: a campaign's longest episode with its screenshots fits; a
/// server sending more is not believed.
const MAX_REPLY_BYTES: usize = 128 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The server has no such route (a plain 404, not one of ours about a session).
    #[error("{0}")]
    NotOffered(String),
    #[error("{0}")]
    Failed(String),
}

#[derive(Clone)]
pub struct Sessions {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Sessions {
    pub fn new(server: &str, token: Option<String>) -> anyhow::Result<Sessions> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()?;
        Ok(Sessions {
            http,
            base: server.trim_end_matches('/').to_string(),
            token,
        })
    }

    pub async fn get(&self, path: &str) -> Result<Value, ApiError> {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// `POST path` with a JSON body: the answer's JSON, or what the server said was wrong.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let failed = |err: reqwest::Error| ApiError::Failed(format!("{method} {path}: {err}"));
        let mut response = request.send().await.map_err(failed)?;
        let status = response.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if bytes.len() + chunk.len() > MAX_REPLY_BYTES {
                return Err(ApiError::Failed(format!(
                    "{method} {path}: the answer is over {} MiB",
                    MAX_REPLY_BYTES >> 20
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(body);
        }
        let detail = body["detail"].as_str().unwrap_or("").to_string();
        // Our server says what it does not know (a session, a campaign) with a code; a route
        // it lacks is a bare 404.
        if status == reqwest::StatusCode::NOT_FOUND && body["code"].is_null() {
            return Err(ApiError::NotOffered(format!(
                "the server has no {path} route (HTTP 404)"
            )));
        }
        Err(ApiError::Failed(format!(
            "{method} {path}: HTTP {status} {detail}"
        )))
    }

    /// The live sessions, as `GET /sessions` lists them.
    pub async fn list(&self) -> Result<Vec<Value>, ApiError> {
        match self.get("/sessions").await? {
            Value::Array(sessions) => Ok(sessions),
            other => Err(ApiError::Failed(format!(
                "GET /sessions: not a list: {other}"
            ))),
        }
    }

    /// The session whose current episode is `episode_id` (the UI names its episodes).
    pub async fn find_by_episode(&self, episode_id: &str) -> Result<Option<String>, ApiError> {
        Ok(self
            .list()
            .await?
            .iter()
            .find(|s| s["episode_id"] == episode_id)
            .and_then(|s| s["id"].as_str())
            .map(str::to_string))
    }

    pub async fn text(&self, session: &str) -> Result<TextLayer, ApiError> {
        let body = self.get(&format!("/sessions/{session}/text")).await?;
        serde_json::from_value(body)
            .map_err(|err| ApiError::Failed(format!("an unreadable text layer: {err}")))
    }
}

/// What the UI wants the text layer of: the episode and step on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextWanted {
    pub episode_id: String,
    pub step: u64,
}

/// What the text fetcher reports.
#[derive(Debug, Clone, PartialEq)]
pub enum TextEvent {
    Layer(TextLayer),
    /// The server has no text layer: said once, then the fetcher stops.
    Unavailable(String),
}

/// Fetch text layers in the background, always for the newest `TextWanted` (older wants are
/// skipped, not queued). `session`: the session's id when known (watch mode); otherwise it is
/// found by the episode id.
pub fn spawn_text_fetcher(
    sessions: Sessions,
    mut session: Option<String>,
) -> (
    watch::Sender<Option<TextWanted>>,
    mpsc::UnboundedReceiver<TextEvent>,
) {
    let (wants, mut wanted) = watch::channel::<Option<TextWanted>>(None);
    let (events, received) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while wanted.changed().await.is_ok() {
            let Some(want) = wanted.borrow_and_update().clone() else {
                continue;
            };
            let id = match &session {
                Some(id) => id.clone(),
                None => match sessions.find_by_episode(&want.episode_id).await {
                    Ok(Some(id)) => {
                        session = Some(id.clone());
                        id
                    }
                    Ok(None) => continue,
                    Err(ApiError::NotOffered(reason)) => {
                        let _ = events.send(TextEvent::Unavailable(reason));
                        return;
                    }
                    Err(ApiError::Failed(err)) => {
                        tracing::warn!("text layer: {err}");
                        continue;
                    }
                },
            };
            match sessions.text(&id).await {
                Ok(layer) => {
                    if events.send(TextEvent::Layer(layer)).is_err() {
                        return;
                    }
                }
                Err(ApiError::NotOffered(reason)) => {
                    let _ = events.send(TextEvent::Unavailable(reason));
                    return;
                }
                Err(ApiError::Failed(err)) => tracing::warn!("text layer: {err}"),
            }
        }
    });
    (wants, received)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-route-less HTTP server answering every request with `status` and `body`.
    async fn answering(status: &'static str, body: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            }
        });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn a_server_without_the_routes_is_told_apart_from_an_unknown_session() {
        // OpenEnv's Python server (FastAPI) has no /sessions: a bare 404.
        let python = answering("404 Not Found", r#"{"detail":"Not Found"}"#).await;
        let sessions = Sessions::new(&python, None).unwrap();
        assert!(matches!(
            sessions.text("s1").await,
            Err(ApiError::NotOffered(_))
        ));
        assert!(matches!(
            sessions.find_by_episode("e1").await,
            Err(ApiError::NotOffered(_))
        ));
        // Ours knows the route but not the session: not a reason to give up on text layers.
        let ours = answering(
            "404 Not Found",
            r#"{"detail":"no session \"s1\"","code":"SESSION_NOT_FOUND"}"#,
        )
        .await;
        let sessions = Sessions::new(&ours, None).unwrap();
        match sessions.text("s1").await {
            Err(ApiError::Failed(message)) => assert!(message.contains("no session"), "{message}"),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn the_fetcher_says_once_that_there_is_no_text_layer() {
        let python = answering("404 Not Found", r#"{"detail":"Not Found"}"#).await;
        let (wants, mut events) = spawn_text_fetcher(Sessions::new(&python, None).unwrap(), None);
        for step in 0..3 {
            let _ = wants.send(Some(TextWanted {
                episode_id: "e1".into(),
                step,
            }));
            tokio::task::yield_now().await;
        }
        let first = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .unwrap();
        assert!(
            matches!(first, Some(TextEvent::Unavailable(_))),
            "{first:?}"
        );
        // The fetcher stopped: nothing more, ever.
        assert_eq!(events.recv().await, None);
    }
}
