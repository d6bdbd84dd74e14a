//! The HTTP transport: `/reset`, `/step` and `/state` (docs/wire.md §3) drive one shared HTTP
//! session, because the Python server's "fresh environment per request" cannot hold a browser
//! between calls. It is a session like any other (`server/src/session/mod.rs`): it takes a capacity slot on its
//! first `/reset`, is listed and watchable as `http-…`, and is recorded. It keeps the slot until no
//! request has come for the session timeout; the next `/reset` then starts a new one.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use tokio::sync::{watch, Mutex};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use browserenv::models::{BrowserAction, FieldError, StepResult};
use browserenv::protocol::step_result_body;

use crate::api_error::{ApiError, ErrorBody, ValidationErrors};
use crate::browser::Launcher;
use crate::openapi::raw::BrowserState;
use crate::openapi::{ResetRequest, StepReply, StepRequest};
use crate::operations::connection::Peer;
use crate::session::{Sessions, SharedSession, Transport};

pub struct HttpSession<L: Launcher> {
    sessions: Arc<Sessions<L>>,
    current: Mutex<Current<L>>,
}

struct Current<L: Launcher> {
    session: Option<SharedSession<L>>,
    /// When the last `/reset`, `/step` or `/state` on it was answered.
    last_used: Instant,
    /// Set when the session was closed for being idle this long, so `/step` can say why.
    expired_after: Option<Duration>,
}

impl<L: Launcher> HttpSession<L> {
    /// The actions the server takes (`BROWSER_ACTIONS`).
    fn actions(&self) -> browserenv::ActionSet {
        self.sessions.settings().actions
    }
}

/// The HTTP routes, over the shared session.
pub fn routes<L: Launcher, S: Clone + Send + Sync + 'static>(
    http: Arc<HttpSession<L>>,
) -> OpenApiRouter<S> {
    OpenApiRouter::new()
        .routes(routes!(reset))
        .routes(routes!(step))
        .routes(routes!(state))
        .with_state(http)
}

impl<L: Launcher> HttpSession<L> {
    pub fn new(sessions: Arc<Sessions<L>>) -> Self {
        HttpSession {
            sessions,
            current: Mutex::new(Current {
                session: None,
                last_used: Instant::now(),
                expired_after: None,
            }),
        }
    }

    /// End the session (the server is stopping).
    pub async fn close(&self) {
        if let Some(session) = self.current.lock().await.session.take() {
            session.lock().await.close().await;
        }
    }

    /// Release the session once no request has used it for `timeout` (OpenEnv's
    /// `session_timeout`): one `/reset` must not hold a browser and a slot for good. A request in
    /// flight holds the lock, so a long step is never cut. Ends with the server.
    pub async fn expire(http: Weak<Self>, timeout: Duration, mut shutdown: watch::Receiver<bool>) {
        loop {
            let deadline = {
                let Some(http) = http.upgrade() else { return };
                let current = http.current.lock().await;
                current
                    .session
                    .as_ref()
                    .map(|_| current.last_used + timeout)
            };
            // With no session, look again after `timeout`: one started meanwhile expires no
            // earlier than `timeout` after its own last request, which the next look finds.
            let wake = deadline.unwrap_or_else(|| Instant::now() + timeout);
            tokio::select! {
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
            let Some(http) = http.upgrade() else { return };
            let mut current = http.current.lock().await;
            if current.session.is_some() && current.last_used.elapsed() >= timeout {
                tracing::info!(
                    "closing the HTTP session: no request for {} s \
                     (BROWSER_SESSION_TIMEOUT_SECONDS)",
                    timeout.as_secs_f64()
                );
                if let Some(session) = current.session.take() {
                    session.lock().await.close().await;
                }
                current.expired_after = Some(timeout);
            }
        }
    }
}

#[utoipa::path(
    post,
    path = "/reset",
    tag = "openenv",
    summary = "Start a new episode in the shared HTTP session",
    description = "The shared HTTP session takes a capacity slot at its first `/reset` and keeps \
        it until no `/reset`, `/step` or `/state` has come for `BROWSER_SESSION_TIMEOUT_SECONDS`. \
        Agents should prefer `/ws`: one session per connection.",
    request_body(content = Option<ResetRequest>, description = "reset keyword arguments at the top level; \
        an empty body counts as `{}`", example = json!({"start_url": "https://example.com", "episode_id": "e1"})),
    responses(
        (status = 200, description = "the first observation", body = StepReply),
        (status = 400, description = "`EXECUTION_ERROR`: the environment failed (no or a refused \
            `start_url`, an unknown `task_id`, the browser did not start)", body = ErrorBody),
        (status = 422, description = "the body is not JSON, or not an object", body = ValidationErrors),
        (status = 503, description = "`CAPACITY_REACHED`: no session slot is free (with \
            `active_sessions` and `max_sessions`)", body = ErrorBody),
    ),
)]
async fn reset<L: Launcher>(
    State(http): State<Arc<HttpSession<L>>>,
    Peer(peer): Peer,
    body: Bytes,
) -> Result<Response, ApiError> {
    let kwargs = match json_body(&body, true)? {
        Value::Object(kwargs) => kwargs,
        other => {
            return Err(ApiError::unprocessable(vec![FieldError::new(
                "dict_type",
                vec![json!("body")],
                "Input should be a valid dictionary",
                other,
            )]))
        }
    };
    let mut current = http.current.lock().await;
    // A session a draining server closed is not reused: the next one is refused, saying why.
    let reusable = match &current.session {
        Some(session) => !session.lock().await.is_closed(),
        None => false,
    };
    let session = match &current.session {
        Some(session) if reusable => session.clone(),
        _ => {
            let session = http
                .sessions
                .open(Transport::Http, peer)
                .map_err(|refused| {
                    ApiError::from_frame(StatusCode::SERVICE_UNAVAILABLE, &refused.frame())
                })?;
            current.session = Some(session.clone());
            current.expired_after = None;
            session
        }
    };
    let result = crate::session::agent_reset(&session, &kwargs).await;
    // The idle clock starts when the answer is ready, not when the request came.
    current.last_used = Instant::now();
    Ok(reply(
        &result.map_err(|err| ApiError::execution(err.to_string()))?,
    ))
}

#[utoipa::path(
    post,
    path = "/step",
    tag = "openenv",
    summary = "Apply one action in the shared HTTP session",
    request_body(content = StepRequest, description = "the action, wrapped", example = json!({"action": {"op": "click", "x": 400, "y": 300}, "timeout_s": 5})),
    responses(
        (status = 200, description = "the next observation", body = StepReply),
        (status = 400, description = "`EXECUTION_ERROR`: `reset before stepping` (also after the \
            session expired), or the environment failed", body = ErrorBody),
        (status = 422, description = "the body is not JSON, has no `action`, or the action does \
            not validate (locations `[\"body\", \"action\", ...]`)", body = ValidationErrors),
    ),
)]
async fn step<L: Launcher>(
    State(http): State<Arc<HttpSession<L>>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request = json_body(&body, false)?;
    let Some(raw_action) = request.get("action") else {
        return Err(ApiError::unprocessable(vec![FieldError::new(
            "missing",
            vec![json!("body"), json!("action")],
            "Field required",
            request.clone(),
        )]));
    };
    let action = BrowserAction::from_value_in(raw_action, http.actions()).map_err(|errors| {
        // FastAPI puts the body path in front of the model's own location.
        let errors = errors
            .into_iter()
            .map(|mut error| {
                error.loc.splice(0..0, [json!("body"), json!("action")]);
                error
            })
            .collect();
        ApiError::unprocessable(errors)
    })?;
    let mut current = http.current.lock().await;
    let Some(session) = current.session.clone() else {
        return Err(ApiError::execution(match current.expired_after {
            Some(after) => format!(
                "reset before stepping: the HTTP session was closed after {} s without a \
                 request (BROWSER_SESSION_TIMEOUT_SECONDS)",
                after.as_secs_f64()
            ),
            None => "reset before stepping".into(),
        }));
    };
    let result = crate::session::agent_step(&session, &action).await;
    current.last_used = Instant::now();
    Ok(reply(
        &result.map_err(|err| ApiError::execution(err.to_string()))?,
    ))
}

#[utoipa::path(
    get,
    path = "/state",
    tag = "openenv",
    summary = "Episode metadata of the shared HTTP session",
    description = "`{\"episode_id\": null, \"step_count\": 0}` before its first reset.",
    responses((status = 200, description = "the state", body = BrowserState)),
)]
async fn state<L: Launcher>(State(http): State<Arc<HttpSession<L>>>) -> Json<Value> {
    let mut current = http.current.lock().await;
    current.last_used = Instant::now();
    let state = match &current.session {
        Some(session) => session.lock().await.state(),
        None => Default::default(),
    };
    Json(json!(state))
}

/// An observation as the HTTP routes answer it: `metadata` always present (null when empty).
fn reply(result: &StepResult) -> Response {
    let mut body = step_result_body(result);
    if body.get("metadata").is_none() {
        body["metadata"] = Value::Null;
    }
    Json(body).into_response()
}

/// Parse a JSON body; the error is FastAPI's for a body that is not JSON.
pub(crate) fn json_body(body: &Bytes, allow_empty: bool) -> Result<Value, ApiError> {
    if allow_empty && body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_slice(body).map_err(|err| {
        ApiError::unprocessable(vec![FieldError::new(
            "json_invalid",
            vec![json!("body"), json!(err.column())],
            "JSON decode error",
            json!({}),
        )])
    })
}
