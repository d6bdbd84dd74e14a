//! The HTTP face of the server: the routes of the OpenEnv wire contract (docs/wire.md §3), the
//! `/ws` upgrade, and the session routes of the terminal UI (`/sessions`, watch, text). The
//! transports themselves are `websocket.rs` and `http_session.rs`, both over `session.rs`.

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, State, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::watch;

use browserenv::models::{action_schema, observation_schema, state_schema};

use crate::api_error::ApiError;
use crate::browser::Launcher;
use crate::connection::{Peer, MAX_INCOMING_BYTES};
use crate::http_session::HttpSession;
use crate::session::Sessions;
use crate::settings::PeerTimeouts;

/// How long a text-layer request waits for its session (which may be in the middle of a step).
const TEXT_ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

pub struct AppState<L: Launcher> {
    pub sessions: Arc<Sessions<L>>,
    pub http: Arc<HttpSession<L>>,
    pub mcp: Arc<crate::mcp::endpoint::Mcp<L>>,
    /// Turns true when the server shuts down: sessions end their episodes and close their sockets.
    pub shutdown: watch::Receiver<bool>,
    /// The token, and which pages and host names may reach the server.
    pub access: Arc<crate::access::Access>,
    /// How long sessions may go without a request, and how WebSocket peers are kept to time.
    pub timeouts: PeerTimeouts,
}

pub fn router<L: Launcher>(state: Arc<AppState<L>>) -> Router {
    let guarded = Router::new()
        .route("/metadata", get(metadata))
        .route("/schema", get(schema))
        .route("/openapi.json", get(openapi))
        .merge(crate::mcp::endpoint::routes(state.mcp.clone()))
        .merge(crate::http_session::routes(state.http.clone()))
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
            "/mcp": {"post": {"summary": "MCP: Streamable HTTP for MCP clients (initialize, tools/list, tools/call; GET and DELETE too), and OpenEnv's JSON-RPC (openenv/session/create, tools/*, openenv/session/close)", "responses": {"200": reply("JSON-RPC reply, or an event stream for MCP clients", json!({"type": "object"}))}}}
        },
        "components": {"schemas": {
            "BrowserAction": action_schema(),
            "BrowserObservation": observation_schema(),
            "BrowserState": state_schema()
        }}
    })
}

/// `/ws`, or `/ws?session_id=…` to drive a session made with OpenEnv's `openenv/session/create`.
#[derive(serde::Deserialize)]
struct WsQuery {
    session_id: Option<String>,
}

async fn ws_upgrade<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    Peer(peer): Peer,
    axum::extract::Query(query): axum::extract::Query<WsQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let context = crate::websocket::Context {
        sessions: app.sessions.clone(),
        openenv: app.mcp.openenv.clone(),
        attach_to: query.session_id,
        timeouts: app.timeouts.clone(),
        shutdown: app.shutdown.clone(),
    };
    upgrade
        .max_message_size(MAX_INCOMING_BYTES)
        .max_frame_size(MAX_INCOMING_BYTES)
        .on_upgrade(move |socket| crate::websocket::run(socket, context, peer))
}

async fn list_sessions<L: Launcher>(State(app): State<Arc<AppState<L>>>) -> Json<Value> {
    Json(json!(app.sessions.registry().list()))
}

async fn session_info<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Json<Value>, ApiError> {
    match app.sessions.registry().get(&id) {
        Some(info) => Ok(Json(json!(info))),
        None => Err(ApiError::unknown_session(&id)),
    }
}

/// `/sessions/{id}/text`: the visible text of the session's current page with its boxes (the
/// terminal UI's text layer). Read-only and outside the wire contract; the session answers between
/// its own requests, so a step in flight delays the answer but is never disturbed.
async fn session_text<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Response, ApiError> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let busy = || {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "SESSION_BUSY",
            "the session is busy: ask again after its step",
        )
    };
    match app.sessions.registry().request_text(&id, reply) {
        None => return Err(ApiError::unknown_session(&id)),
        Some(Err(_)) => return Err(busy()),
        Some(Ok(())) => {}
    }
    match tokio::time::timeout(TEXT_ANSWER_TIMEOUT, answer).await {
        Ok(Ok(Ok(layer))) => Ok(Json(layer).into_response()),
        Ok(Ok(Err(message))) => Err(ApiError::execution(message)),
        // The session ended before it answered.
        Ok(Err(_)) => Err(ApiError::unknown_session(&id)),
        Err(_) => Err(busy()),
    }
}

/// `/sessions/{id}/watch`: a read-only stream of the session's events. An unknown id is a 404 for
/// plain HTTP, and an error frame then close for a WebSocket.
async fn watch_session<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    match upgrade.ok() {
        Some(upgrade) => {
            let (registry, shutdown) = (app.sessions.registry().clone(), app.shutdown.clone());
            Ok(upgrade
                .on_upgrade(move |socket| crate::watcher::run(socket, registry, id, shutdown)))
        }
        None if app.sessions.registry().get(&id).is_none() => Err(ApiError::unknown_session(&id)),
        None => Err(ApiError::new(
            StatusCode::UPGRADE_REQUIRED,
            "UPGRADE_REQUIRED",
            "watch streams are WebSockets",
        )),
    }
}
