//! The HTTP face of the server: every route of the OpenEnv wire contract (docs/wire.md §3) plus
//! the `/ws` upgrade. HTTP `/reset`, `/step` and `/state` drive one shared HTTP session, because the
//! Python server's "fresh environment per request" cannot hold a browser between calls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use tokio::sync::{watch, Mutex};

use browserenv::models::{
    action_schema, observation_schema, state_schema, BrowserAction, FieldError, StepResult,
};
use browserenv::protocol::step_result_body;

use crate::browser::Launcher;
use crate::environment::{Environment, TaskCatalog};
use crate::pool::WarmPool;
use crate::recording::SessionRecorder;
use crate::registry::{Registration, Registry};
use crate::settings::{EnvSettings, PeerTimeouts};

/// How long a text-layer request waits for its session (which may be in the middle of a step).
const TEXT_ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// Incoming frames and bodies up to this size are accepted (docs/wire.md §2.5 asks for at least
/// 16 MiB).
pub const MAX_INCOMING_BYTES: usize = 32 * 1024 * 1024;

pub struct AppState<L: Launcher> {
    pub pool: Arc<WarmPool<L>>,
    pub settings: EnvSettings,
    pub capacity: Arc<Capacity>,
    pub http_session: Mutex<HttpSession<L>>,
    /// Turns true when the server shuts down: sessions end their episodes and close their sockets.
    pub shutdown: watch::Receiver<bool>,
    /// The recorder thread's inbox, when the server records (`--record-dir`).
    pub recorder: Option<std::sync::mpsc::Sender<browserenv::trajectory::RecordEvent>>,
    pub tasks: Option<Arc<TaskCatalog>>,
    /// The token, and which pages and host names may reach the server.
    pub access: Arc<crate::access::Access>,
    pub registry: Arc<Registry>,
    /// How long sessions may go without a request, and how WebSocket peers are kept to time.
    pub timeouts: PeerTimeouts,
}

/// The connection's remote address, as text (set by `remember_peer`).
#[derive(Debug, Clone)]
pub struct Peer(pub String);

/// Keep the peer address of every request for the session registry.
pub async fn remember_peer<A: std::fmt::Debug + Clone + Send + Sync + 'static>(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<A>>()
        .map_or_else(|| "unknown".to_string(), |info| format!("{:?}", info.0));
    request.extensions_mut().insert(Peer(peer));
    next.run(request).await
}

impl<L: Launcher> AppState<L> {
    /// A fresh environment for a new session, with the server's settings and tasks.
    pub fn environment(&self) -> Environment<WarmPool<L>> {
        Environment::new(self.pool.clone(), self.settings.clone()).with_tasks(self.tasks.clone())
    }
}

impl<L: Launcher> AppState<L> {
    pub fn new(
        pool: Arc<WarmPool<L>>,
        settings: EnvSettings,
        max_sessions: usize,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        AppState {
            pool,
            settings,
            capacity: Arc::new(Capacity::new(max_sessions)),
            http_session: Mutex::new(HttpSession {
                env: None,
                _slot: None,
                recorder: None,
                registration: None,
                last_used: Instant::now(),
                expired_after: None,
            }),
            shutdown,
            recorder: None,
            tasks: None,
            access: Arc::new(crate::access::Access::default()),
            registry: Arc::new(Registry::default()),
            timeouts: PeerTimeouts::default(),
        }
    }
}

/// The shared HTTP session. It takes a capacity slot on its first `/reset` and keeps it until no
/// request has come for the session timeout (`expire_http_session`); the next `/reset` then starts
/// a new one.
pub struct HttpSession<L: Launcher> {
    env: Option<Environment<WarmPool<L>>>,
    _slot: Option<Slot>,
    recorder: Option<SessionRecorder>,
    /// Listed in `/sessions` (and watchable) like a WebSocket session.
    registration: Option<Registration>,
    /// When the last `/reset`, `/step` or `/state` on it was answered.
    last_used: Instant,
    /// Set when the session was closed for being idle this long, so `/step` can say why.
    expired_after: Option<Duration>,
}

impl<L: Launcher> HttpSession<L> {
    pub async fn close(&mut self) {
        if let Some(env) = self.env.as_mut() {
            env.close().await;
        }
    }

    /// Leave the registry (watchers see the end), close the browser, give the slot back.
    async fn release(&mut self) {
        self.registration = None;
        self.close().await;
        self.env = None;
        self.recorder = None;
        self._slot = None;
    }
}

/// Release the shared HTTP session once no request has used it for `timeout` (OpenEnv's
/// `session_timeout`): one `/reset` must not hold a browser and a slot for good. A request in
/// flight holds the session's lock, so a long step is never cut. Ends with the server.
pub async fn expire_http_session<L: Launcher>(app: Weak<AppState<L>>, timeout: Duration) {
    let Some(mut shutdown) = app.upgrade().map(|app| app.shutdown.clone()) else {
        return;
    };
    loop {
        let deadline = {
            let Some(app) = app.upgrade() else { return };
            let session = app.http_session.lock().await;
            session.env.as_ref().map(|_| session.last_used + timeout)
        };
        // With no session, look again after `timeout`: one started meanwhile expires no earlier
        // than `timeout` after its own last request, which the next look finds.
        let wake = deadline.unwrap_or_else(|| Instant::now() + timeout);
        tokio::select! {
            _ = tokio::time::sleep_until(wake.into()) => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
        let Some(app) = app.upgrade() else { return };
        let mut session = app.http_session.lock().await;
        if session.env.is_some() && session.last_used.elapsed() >= timeout {
            tracing::info!(
                "closing the HTTP session: no request for {} s (BROWSER_SESSION_TIMEOUT_SECONDS)",
                timeout.as_secs_f64()
            );
            session.release().await;
            session.expired_after = Some(timeout);
        }
    }
}

/// Counts live sessions against `max_sessions` (`max_concurrent_envs` in OpenEnv).
pub struct Capacity {
    active: AtomicUsize,
    max: usize,
}

/// A held session slot; dropping it frees the slot.
pub struct Slot(Arc<Capacity>);

impl Capacity {
    pub fn new(max: usize) -> Self {
        Capacity {
            active: AtomicUsize::new(0),
            max,
        }
    }

    pub fn try_acquire(self: &Arc<Self>) -> Option<Slot> {
        self.active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(self.clone()))
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    pub fn max(&self) -> usize {
        self.max
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

pub fn router<L: Launcher>(state: Arc<AppState<L>>) -> Router {
    let guarded = Router::new()
        .route("/metadata", get(metadata))
        .route("/schema", get(schema))
        .route("/openapi.json", get(openapi))
        .route("/mcp", post(mcp))
        .route("/reset", post(http_reset::<L>))
        .route("/step", post(http_step::<L>))
        .route("/state", get(http_state::<L>))
        .route("/ws", get(ws_upgrade::<L>))
        .route("/sessions", get(list_sessions::<L>))
        .route("/sessions/{id}", get(session_info::<L>))
        .route("/sessions/{id}/watch", get(watch_session::<L>))
        .route("/sessions/{id}/text", get(session_text::<L>))
        .route_layer(axum::middleware::from_fn_with_state(
            state.access.clone(),
            crate::access::require_token,
        ));
    Router::new()
        .route("/health", get(health))
        .merge(guarded)
        .layer(DefaultBodyLimit::max(MAX_INCOMING_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.access.clone(),
            crate::access::check_origin_and_host,
        ))
        .with_state(state)
}

async fn health() -> Json<Value> {
    Json(json!({"status": "healthy"}))
}

async fn metadata() -> Json<Value> {
    Json(json!({
        "name": "browserenv",
        "description": "A real headless Chromium behind the OpenEnv reset/step/state protocol: \
            800x600 screenshots, trusted pointer and key events, one private browser per session.",
        "readme_content": include_str!("../../README.md"),
        "version": env!("CARGO_PKG_VERSION"),
        "author": "browserenv developers",
        "documentation_url": null,
    }))
}

async fn schema() -> Json<Value> {
    Json(json!({
        "action": action_schema(),
        "observation": observation_schema(),
        "state": state_schema(),
    }))
}

async fn openapi() -> Json<Value> {
    Json(openapi_document())
}

/// A hand-written OpenAPI description of the HTTP routes (the WebSocket protocol is in
/// docs/wire.md §2).
pub fn openapi_document() -> Value {
    let step_result = json!({
        "type": "object",
        "properties": {
            "observation": {"$ref": "#/components/schemas/BrowserObservation"},
            "reward": {"type": ["number", "null"]},
            "done": {"type": "boolean"},
            "metadata": {"type": ["object", "null"]}
        },
        "required": ["observation", "reward", "done"]
    });
    let reply = |description: &str, schema: Value| json!({"description": description, "content": {"application/json": {"schema": schema}}});
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "browserenv",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "OpenEnv browser environment. Agents normally use the /ws WebSocket; \
                the HTTP /reset, /step and /state routes drive one shared HTTP session."
        },
        "paths": {
            "/health": {"get": {"summary": "Liveness", "responses": {"200": reply("healthy", json!({"type": "object"}))}}},
            "/metadata": {"get": {"summary": "Environment metadata", "responses": {"200": reply("metadata", json!({"type": "object"}))}}},
            "/schema": {"get": {"summary": "JSON Schemas of action, observation and state", "responses": {"200": reply("schemas", json!({"type": "object"}))}}},
            "/reset": {"post": {
                "summary": "Start a new episode in the shared HTTP session",
                "requestBody": {"content": {"application/json": {"schema": {
                    "type": "object",
                    "properties": {
                        "start_url": {"type": "string"},
                        "episode_id": {"type": ["string", "null"]},
                        "seed": {"type": ["integer", "null"]}
                    },
                    "required": ["start_url"],
                    "additionalProperties": true
                }}}},
                "responses": {"200": reply("first observation", step_result.clone()), "400": reply("environment error", json!({"type": "object"})), "422": reply("validation error", json!({"type": "object"}))}
            }},
            "/step": {"post": {
                "summary": "Apply one action in the shared HTTP session",
                "requestBody": {"content": {"application/json": {"schema": {
                    "type": "object",
                    "properties": {
                        "action": {"$ref": "#/components/schemas/BrowserAction"},
                        "timeout_s": {"type": ["number", "null"]}
                    },
                    "required": ["action"]
                }}}},
                "responses": {"200": reply("next observation", step_result), "400": reply("environment error", json!({"type": "object"})), "422": reply("validation error", json!({"type": "object"}))}
            }},
            "/state": {"get": {"summary": "Episode metadata of the shared HTTP session", "responses": {"200": reply("state", json!({"$ref": "#/components/schemas/BrowserState"}))}}},
            "/mcp": {"post": {"summary": "JSON-RPC endpoint (MCP is not supported)", "responses": {"200": reply("JSON-RPC reply", json!({"type": "object"}))}}}
        },
        "components": {"schemas": {
            "BrowserAction": action_schema(),
            "BrowserObservation": observation_schema(),
            "BrowserState": state_schema()
        }}
    })
}

/// JSON-RPC 2.0, always HTTP 200, as the Python server answers it.
async fn mcp(body: Bytes) -> Json<Value> {
    let error = |id: Value, code: i64, message: &str| {
        Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    };
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return error(Value::Null, -32700, "Parse error");
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let valid = request.get("jsonrpc") == Some(&json!("2.0"))
        && request.get("method").is_some_and(Value::is_string);
    if !valid {
        return error(id, -32600, "Invalid Request");
    }
    error(id, -32603, "Environment does not support MCP")
}

fn unprocessable(errors: Vec<FieldError>) -> Response {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(json!({"detail": errors})),
    )
        .into_response()
}

fn execution_error(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"detail": message, "code": "EXECUTION_ERROR"})),
    )
        .into_response()
}

fn http_reply(result: &StepResult) -> Response {
    let mut body = step_result_body(result);
    if body.get("metadata").is_none() {
        body["metadata"] = Value::Null;
    }
    Json(body).into_response()
}

/// Parse a JSON body; the error is FastAPI's for a body that is not JSON.
fn json_body(body: &Bytes, allow_empty: bool) -> Result<Value, Vec<FieldError>> {
    if allow_empty && body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_slice(body).map_err(|err| {
        vec![FieldError::new(
            "json_invalid",
            vec![json!("body"), json!(err.column())],
            "JSON decode error",
            json!({}),
        )]
    })
}

async fn http_reset<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    peer: Option<axum::Extension<Peer>>,
    body: Bytes,
) -> Response {
    let kwargs = match json_body(&body, true) {
        Ok(Value::Object(kwargs)) => kwargs,
        Ok(other) => {
            return unprocessable(vec![FieldError::new(
                "dict_type",
                vec![json!("body")],
                "Input should be a valid dictionary",
                other,
            )])
        }
        Err(errors) => return unprocessable(errors),
    };
    let mut session = app.http_session.lock().await;
    if session.env.is_none() {
        let Some(slot) = app.capacity.try_acquire() else {
            return capacity_response(&app.capacity);
        };
        session._slot = Some(slot);
        session.env = Some(app.environment());
        let recorder = SessionRecorder::new(app.recorder.clone());
        let peer = peer.map_or_else(|| "unknown".to_string(), |p| p.0 .0.clone());
        let registration = app
            .registry
            .register(format!("http-{}", recorder.session()), peer);
        serve_http_text(&app, &registration);
        session.registration = Some(registration);
        session.recorder = Some(recorder);
        session.expired_after = None;
    }
    let HttpSession {
        env: Some(env),
        recorder,
        registration,
        ..
    } = &mut *session
    else {
        return execution_error("no HTTP session".into());
    };
    let reply = match env.reset(&kwargs).await {
        Ok(result) => {
            if let Some(recorder) = recorder {
                recorder.reset(env.state().episode_id, env.task_id(), &result);
            }
            if let Some(registration) = registration {
                registration.publish(env.state().episode_id, 0, None, &result, 0.0);
            }
            http_reply(&result)
        }
        Err(err) => execution_error(err.0),
    };
    // The idle clock starts when the answer is ready, not when the request came.
    session.last_used = Instant::now();
    reply
}

/// The HTTP session answers text-layer requests whenever no `/reset` or `/step` holds it. The task
/// ends with the session's registration (it holds the server state only weakly).
fn serve_http_text<L: Launcher>(app: &Arc<AppState<L>>, registration: &Registration) {
    let mut requests = registration.serve_text();
    let (app, id) = (Arc::downgrade(app), registration.id.clone());
    tokio::spawn(async move {
        while let Some(reply) = requests.recv().await {
            let Some(app) = app.upgrade() else { break };
            let mut session = app.http_session.lock().await;
            let text = match session.env.as_mut() {
                Some(env) => env.visible_text(&id).await.map_err(|err| err.0),
                None => Err("no page yet: reset first".to_string()),
            };
            let _ = reply.send(text);
        }
    });
}

fn capacity_response(capacity: &Capacity) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({
            "detail": "Server at capacity",
            "code": "CAPACITY_REACHED",
            "active_sessions": capacity.active(),
            "max_sessions": capacity.max(),
        })),
    )
        .into_response()
}

async fn http_step<L: Launcher>(State(app): State<Arc<AppState<L>>>, body: Bytes) -> Response {
    let request = match json_body(&body, false) {
        Ok(request) => request,
        Err(errors) => return unprocessable(errors),
    };
    let Some(raw_action) = request.get("action") else {
        return unprocessable(vec![FieldError::new(
            "missing",
            vec![json!("body"), json!("action")],
            "Field required",
            request.clone(),
        )]);
    };
    let action = match BrowserAction::from_value(raw_action) {
        Ok(action) => action,
        Err(errors) => {
            // FastAPI puts the body path in front of the model's own location.
            let errors = errors
                .into_iter()
                .map(|mut error| {
                    error.loc.splice(0..0, [json!("body"), json!("action")]);
                    error
                })
                .collect();
            return unprocessable(errors);
        }
    };
    let mut session = app.http_session.lock().await;
    let HttpSession {
        env: Some(env),
        recorder,
        registration,
        ..
    } = &mut *session
    else {
        return execution_error(match session.expired_after {
            Some(after) => format!(
                "reset before stepping: the HTTP session was closed after {} s without a \
                 request (BROWSER_SESSION_TIMEOUT_SECONDS)",
                after.as_secs_f64()
            ),
            None => "reset before stepping".into(),
        });
    };
    let started = std::time::Instant::now();
    let reply = match env.step(&action).await {
        Ok(result) => {
            let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
            if let Some(recorder) = recorder {
                recorder.step(&action, &result, latency_ms);
            }
            if let Some(registration) = registration {
                let state = env.state();
                registration.publish(
                    state.episode_id,
                    state.step_count,
                    Some(&action),
                    &result,
                    latency_ms,
                );
            }
            http_reply(&result)
        }
        Err(err) => execution_error(err.0),
    };
    session.last_used = Instant::now();
    reply
}

async fn http_state<L: Launcher>(State(app): State<Arc<AppState<L>>>) -> Json<Value> {
    let mut session = app.http_session.lock().await;
    session.last_used = Instant::now();
    let state = session
        .env
        .as_ref()
        .map(Environment::state)
        .unwrap_or_default();
    Json(json!(state))
}

async fn ws_upgrade<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    peer: Option<axum::Extension<Peer>>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let peer = peer.map_or_else(|| "unknown".to_string(), |p| p.0 .0.clone());
    upgrade
        .max_message_size(MAX_INCOMING_BYTES)
        .max_frame_size(MAX_INCOMING_BYTES)
        .on_upgrade(move |socket| crate::session::run(socket, app, peer))
}

async fn list_sessions<L: Launcher>(State(app): State<Arc<AppState<L>>>) -> Json<Value> {
    Json(json!(app.registry.list()))
}

fn unknown_session(id: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"detail": format!("no session {id:?}"), "code": "SESSION_NOT_FOUND"})),
    )
        .into_response()
}

async fn session_info<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    match app.registry.get(&id) {
        Some(info) => Json(json!(info)).into_response(),
        None => unknown_session(&id),
    }
}

/// `/sessions/{id}/text`: the visible text of the session's current page with its boxes (the
/// terminal UI's text layer). Read-only and outside the wire contract; the session answers between
/// its own requests, so a step in flight delays the answer but is never disturbed.
async fn session_text<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let busy = || {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"detail": "the session is busy: ask again after its step", "code": "SESSION_BUSY"})),
        )
            .into_response()
    };
    match app.registry.request_text(&id, reply) {
        None => return unknown_session(&id),
        Some(Err(_)) => return busy(),
        Some(Ok(())) => {}
    }
    match tokio::time::timeout(TEXT_ANSWER_TIMEOUT, answer).await {
        Ok(Ok(Ok(layer))) => Json(layer).into_response(),
        Ok(Ok(Err(message))) => execution_error(message),
        // The session ended before it answered.
        Ok(Err(_)) => unknown_session(&id),
        Err(_) => busy(),
    }
}

/// `/sessions/{id}/watch`: a read-only stream of the session's events. An unknown id is a 404 for
/// plain HTTP, and an error frame then close for a WebSocket.
async fn watch_session<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    match upgrade.ok() {
        Some(upgrade) => upgrade.on_upgrade(move |socket| {
            crate::watcher::run(socket, app.registry.clone(), id, app.shutdown.clone())
        }),
        None if app.registry.get(&id).is_none() => unknown_session(&id),
        None => (
            StatusCode::UPGRADE_REQUIRED,
            Json(json!({"detail": "watch streams are WebSockets", "code": "UPGRADE_REQUIRED"})),
        )
            .into_response(),
    }
}
