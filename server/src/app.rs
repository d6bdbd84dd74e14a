//! The HTTP face of the server: the routes of the OpenEnv wire contract (docs/wire.md §3), the
//! `/ws` upgrade, and the session routes of the terminal UI (`/sessions`, watch, text). The
//! transports themselves are `websocket.rs` and `http_session.rs`, both over `session/mod.rs`.

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, State, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use serde_json::{json, Value};
use tokio::sync::watch;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use browserenv::models::{action_schema_in, observation_schema, state_schema};

use crate::api_error::ErrorBody;
use crate::api_error::{ApiError, Code};
use crate::browser::Launcher;
use crate::openapi::{Health, Metadata, Readiness, Schemas};
use crate::operations::caller::Caller;
use crate::operations::connection::{Peer, MAX_INCOMING_BYTES};
use crate::replicas::Replicas;
use crate::session::registry::SessionInfo;
use crate::session::Sessions;
use crate::settings::PeerTimeouts;
use crate::transports::http_session::HttpSession;

/// How long a text-layer request waits for its session (which may be in the middle of a step).
const TEXT_ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

pub struct AppState<L: Launcher> {
    pub sessions: Arc<Sessions<L>>,
    pub http: Arc<HttpSession<L>>,
    pub mcp: Arc<crate::transports::mcp::endpoint::Mcp<L>>,
    /// Turns true when the server shuts down: sessions end their episodes and close their sockets.
    pub shutdown: watch::Receiver<bool>,
    /// The token, and which pages and host names may reach the server.
    pub access: Arc<crate::operations::access::Access>,
    /// How long sessions may go without a request, and how WebSocket peers are kept to time.
    pub timeouts: PeerTimeouts,
    /// The other replicas behind the same address (`BROWSER_PEERS`), if any.
    pub replicas: Arc<Replicas>,
    /// The loaded task sets, for OpenEnv's Task API (`task_api.rs`).
    pub tasks: Arc<crate::routes::task_api::TaskApi>,
    /// The campaign (`--campaign DIR`), if the server runs one (`campaign.rs`).
    pub campaign: Option<Arc<crate::campaign::Hub>>,
}

/// `?local=true`: this replica's own answer, never passed on to a peer (what peers ask each other).
#[derive(serde::Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
struct Scope {
    /// Answer for this replica alone, without asking its peers (`BROWSER_PEERS`).
    #[serde(default)]
    local: bool,
}

impl<L: Launcher> AppState<L> {
    /// This replica as its peers see it (`GET /replica`).
    fn own_view(&self) -> Value {
        let capacity = self.sessions.capacity();
        json!({
            "id": self.replicas.id,
            "status": self.sessions.readiness(),
            "active_sessions": capacity.active(),
            "max_sessions": capacity.max(),
            "sessions": self.sessions.registry().list(),
        })
    }
}

pub fn router<L: Launcher>(state: Arc<AppState<L>>) -> Router {
    let (routes, api) = routes(&state).split_for_parts();
    let document = Arc::new(crate::openapi::document(
        api,
        state.sessions.settings().actions,
    ));
    routes
        .layer(Extension(document))
        .layer(DefaultBodyLimit::max(MAX_INCOMING_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.timeouts.header_read_timeout,
            crate::operations::connection::body_deadline,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.access.clone(),
            crate::operations::access::check_origin_and_host,
        ))
        .with_state(state)
}

/// What the replica routing needs of this server: the peers, and which sessions it holds (its
/// registry's, and the OpenEnv MCP sessions it keeps).
fn routing<L: Launcher>(state: &Arc<AppState<L>>) -> crate::replicas::routing::Routing {
    let (sessions, openenv) = (state.sessions.clone(), state.mcp.openenv.clone());
    crate::replicas::routing::Routing {
        replicas: state.replicas.clone(),
        here: Arc::new(move |id: &str| sessions.registry().get(id).is_some() || openenv.keeps(id)),
        timeouts: state.timeouts.clone(),
        shutdown: state.shutdown.clone(),
    }
}

/// Every route, each registered from its handler's `#[utoipa::path]` (method and path included),
/// so the OpenAPI document lists exactly what is served (`openapi.rs`).
fn routes<L: Launcher>(state: &Arc<AppState<L>>) -> OpenApiRouter<Arc<AppState<L>>> {
    let guarded = OpenApiRouter::new()
        .routes(routes!(metadata))
        .routes(routes!(schema))
        .routes(routes!(openapi))
        .merge(crate::transports::mcp::endpoint::routes(state.mcp.clone()))
        .merge(crate::transports::http_session::routes(state.http.clone()))
        .merge(crate::routes::task_api::routes(state.tasks.clone()))
        .merge(crate::routes::campaign::routes(state.campaign.clone()))
        .routes(routes!(ws_upgrade))
        .routes(routes!(list_sessions))
        .routes(routes!(replica))
        .routes(routes!(replicas))
        .routes(routes!(session_info))
        .routes(routes!(watch_session))
        .routes(routes!(session_text))
        // A request about a session another replica holds goes there (after the token check).
        .route_layer(axum::middleware::from_fn_with_state(
            routing(state),
            crate::replicas::routing::forward_if_elsewhere,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.access.clone(),
            crate::operations::access::require_token,
        ));
    OpenApiRouter::with_openapi(crate::openapi::ApiDoc::openapi())
        .routes(routes!(health))
        .routes(routes!(ready))
        .merge(guarded)
}

#[utoipa::path(
    get,
    path = "/health",
    tag = "openenv",
    summary = "Liveness",
    description = "Launchers (Docker, HF Sandbox) poll it. With `/ready`, the only route without \
        a token.",
    security(()),
    responses((status = 200, description = "healthy", body = Health)),
)]
async fn health() -> Json<Health> {
    Json(Health { status: "healthy" })
}

#[utoipa::path(
    get,
    path = "/ready",
    tag = "deployment",
    summary = "Readiness: whether this replica takes a new session now",
    description = "For load balancers and Kubernetes' readiness probe; `/health` stays liveness. \
        503 while every `BROWSER_MAX_SESSIONS` slot is taken (`at_capacity`) and from the moment \
        the server is asked to stop (`draining`: running episodes may finish for \
        `BROWSER_DRAIN_SECONDS`). No token.",
    security(()),
    responses(
        (status = 200, description = "`ready`", body = Readiness),
        (status = 503, description = "`at_capacity` or `draining`", body = Readiness),
    ),
)]
async fn ready<L: Launcher>(State(app): State<Arc<AppState<L>>>) -> (StatusCode, Json<Readiness>) {
    let status = app.sessions.readiness();
    let code = if status == "ready" {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(Readiness { status }))
}

#[utoipa::path(
    get,
    path = "/metadata",
    tag = "openenv",
    summary = "Environment metadata",
    responses((status = 200, description = "name, description, this README, version, author", body = Metadata)),
)]
async fn metadata() -> Json<Metadata> {
    Json(Metadata {
        // Also the environment's name on the Task API.
        name: crate::routes::task_api::ENV_NAME,
        description: "A real headless Chromium behind the OpenEnv reset/step/state protocol: \
            800x600 screenshots, trusted pointer and key events, one private browser per session.",
        readme_content: include_str!("../../README.md"),
        version: env!("CARGO_PKG_VERSION"),
        author: "browserenv developers",
        documentation_url: None,
    })
}

#[utoipa::path(
    get,
    path = "/schema",
    tag = "openenv",
    summary = "JSON Schemas of action, observation and state",
    description = "In pydantic's shapes, the same as `components.schemas` of this document.",
    responses((status = 200, description = "schemas", body = Schemas)),
)]
async fn schema<L: Launcher>(State(state): State<Arc<AppState<L>>>) -> Json<Schemas> {
    Json(Schemas {
        action: action_schema_in(state.sessions.settings().actions),
        observation: observation_schema(),
        state: state_schema(),
    })
}

#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "openenv",
    summary = "This document",
    description = "OpenAPI 3.1, generated from the routes. The WebSocket protocol of `/ws` is in \
        docs/wire.md §2.",
    responses((status = 200, description = "the OpenAPI document", body = Object)),
)]
async fn openapi(Extension(document): Extension<Arc<Value>>) -> Json<Value> {
    Json(Value::clone(&document))
}

/// `/ws`, or `/ws?session_id=…` to drive a session made with OpenEnv's `openenv/session/create`.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct WsQuery {
    /// Drive this session (made with OpenEnv's `openenv/session/create` on `/mcp`) instead of a
    /// new one.
    session_id: Option<String>,
    /// With `session_id`: only a session of this replica, never one a peer holds. (Read by
    /// the routing, `replicas/routing.rs`, before this route; here for the API's document.)
    #[serde(default)]
    #[allow(dead_code)]
    local: bool,
}

#[utoipa::path(
    get,
    path = "/ws",
    tag = "openenv",
    summary = "The OpenEnv WebSocket: one session per connection",
    description = "Upgrades to a WebSocket speaking OpenEnv's frames (`reset`, `step`, `state`, \
        `close`, `mcp`; docs/wire.md §2). The session and its browser end with the socket.",
    params(WsQuery),
    responses((status = 101, description = "switching to the WebSocket protocol")),
)]
async fn ws_upgrade<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    Peer(peer): Peer,
    caller: Option<Extension<Caller>>,
    axum::extract::Query(query): axum::extract::Query<WsQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let context = crate::transports::websocket::Context {
        sessions: app.sessions.clone(),
        openenv: app.mcp.openenv.clone(),
        attach_to: query.session_id,
        caller: caller.map(|Extension(caller)| caller).unwrap_or_default(),
        timeouts: app.timeouts.clone(),
        shutdown: app.shutdown.clone(),
    };
    upgrade
        .max_message_size(MAX_INCOMING_BYTES)
        .max_frame_size(MAX_INCOMING_BYTES)
        .on_upgrade(move |socket| crate::transports::websocket::run(socket, context, peer))
}

#[utoipa::path(
    get,
    path = "/sessions",
    tag = "sessions",
    summary = "The live sessions",
    description = "WebSocket ones, MCP ones as `mcp-…`, and the shared HTTP session as `http-…` \
        once it has reset.",
    params(Scope),
    responses((status = 200, description = "the sessions; with `BROWSER_PEERS` every replica's, \
        each with its `replica`, and the replicas that did not answer named in the \
        `Browserenv-Replicas-Unreachable` header (see `/replicas`)", body = Vec<SessionInfo>)),
)]
async fn list_sessions<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    axum::extract::Query(scope): axum::extract::Query<Scope>,
) -> Response {
    let local = app.sessions.registry().list();
    if scope.local || !app.replicas.configured() {
        return Json(local).into_response();
    }
    let reports = app.replicas.survey().await;
    let own = app.replicas.own_url();
    let mut listed: Vec<Value> = local
        .into_iter()
        .map(|info| {
            json!(SessionInfo {
                replica: own.clone(),
                ..info
            })
        })
        .collect();
    let mut unreachable = Vec::new();
    for report in reports {
        match report.answer {
            Ok(view) if view["id"].as_str() == Some(app.replicas.id.as_str()) => {}
            Ok(view) => {
                for mut session in view["sessions"].as_array().cloned().unwrap_or_default() {
                    session["replica"] = json!(report.url);
                    listed.push(session);
                }
            }
            Err(err) => {
                tracing::warn!("replica {} did not answer: {err}", report.url);
                unreachable.push(report.url);
            }
        }
    }
    let mut response = Json(listed).into_response();
    if let Ok(value) = unreachable.join(", ").parse() {
        if !unreachable.is_empty() {
            response
                .headers_mut()
                .insert("browserenv-replicas-unreachable", value);
        }
    }
    response
}

#[utoipa::path(
    get,
    path = "/replica",
    tag = "deployment",
    summary = "This replica: its id, readiness, session counts and sessions",
    description = "What replicas ask each other (`BROWSER_PEERS`): `{\"id\", \"status\", \
        \"active_sessions\", \"max_sessions\", \"sessions\": [...]}`, `status` as `/ready` says it.",
    responses((status = 200, description = "this replica", body = Object)),
)]
async fn replica<L: Launcher>(State(app): State<Arc<AppState<L>>>) -> Json<Value> {
    Json(app.own_view())
}

#[utoipa::path(
    get,
    path = "/replicas",
    tag = "deployment",
    summary = "Every replica behind this address (`BROWSER_PEERS`) and whether it answers",
    description = "`[{\"url\", \"self\", \"id\", \"status\", \"active_sessions\", \
        \"max_sessions\", \"error\"}]`: one entry per address the peers resolve to (this replica \
        alone without peers, `url` null); `status` is `ready`, `at_capacity`, `draining`, or \
        `unreachable` with the `error`.",
    responses((status = 200, description = "the replicas", body = Object)),
)]
async fn replicas<L: Launcher>(State(app): State<Arc<AppState<L>>>) -> Json<Value> {
    let summary = |url: Option<String>, own: bool, view: &Value| {
        json!({
            "url": url,
            "self": own,
            "id": view["id"],
            "status": view["status"],
            "active_sessions": view["active_sessions"],
            "max_sessions": view["max_sessions"],
            "error": null,
        })
    };
    if !app.replicas.configured() {
        return Json(json!([summary(None, true, &app.own_view())]));
    }
    let reports = app.replicas.survey().await;
    let listed: Vec<Value> = reports
        .into_iter()
        .map(|report| match report.answer {
            Ok(view) => {
                let own = view["id"].as_str() == Some(app.replicas.id.as_str());
                summary(Some(report.url), own, &view)
            }
            Err(err) => json!({
                "url": report.url,
                "self": false,
                "id": null,
                "status": "unreachable",
                "active_sessions": null,
                "max_sessions": null,
                "error": err,
            }),
        })
        .collect();
    Json(Value::Array(listed))
}

#[utoipa::path(
    get,
    path = "/sessions/{id}",
    tag = "sessions",
    summary = "One live session",
    params(("id" = String, Path, description = "A session id from `/sessions`"), Scope),
    responses(
        (status = 200, description = "the session", body = SessionInfo),
        (status = 404, description = "`SESSION_NOT_FOUND`", body = ErrorBody),
        (status = 502, description = "`REPLICA_UNREACHABLE`: the replica holding it did not answer", body = ErrorBody),
    ),
)]
async fn session_info<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    // `local=true` is the routing's (`replicas/routing.rs`): here, every session is local.
    _scope: axum::extract::Query<Scope>,
) -> Result<Response, ApiError> {
    match app.sessions.registry().get(&id) {
        Some(info) => Ok(Json(info).into_response()),
        None => Err(ApiError::unknown_session(&id)),
    }
}

/// `/sessions/{id}/text`: the visible text of the session's current page with its boxes (the
/// terminal UI's text layer). Read-only and outside the wire contract; the session answers between
/// its own requests, so a step in flight delays the answer but is never disturbed.
#[utoipa::path(
    get,
    path = "/sessions/{id}/text",
    tag = "sessions",
    summary = "The visible text of a session's current page (the terminal UI's text layer)",
    description = "`{\"session\",\"episode_id\",\"step\",\"url\",\"runs\":[{\"text\",\"x\",\"y\",\
        \"width\",\"height\",\"size\",\"color\":[r,g,b],\"bold\",\"link\",\"kind\"}],\"truncated\"}`: \
        one run per line of text in viewport pixels, top to bottom. Answered between the session's \
        own steps; observations are unchanged.",
    params(("id" = String, Path, description = "A session id from `/sessions`"), Scope),
    responses(
        (status = 200, description = "the text layer", body = Object),
        (status = 400, description = "`EXECUTION_ERROR`: no page yet (before the first reset)", body = ErrorBody),
        (status = 404, description = "`SESSION_NOT_FOUND`", body = ErrorBody),
        (status = 502, description = "`REPLICA_UNREACHABLE`: the replica holding it did not answer", body = ErrorBody),
        (status = 503, description = "`SESSION_BUSY`: no answer within 15 s", body = ErrorBody),
    ),
)]
async fn session_text<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    caller: Option<Extension<Caller>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    // `local=true` is the routing's (`replicas/routing.rs`): here, every session is local.
    _scope: axum::extract::Query<Scope>,
) -> Result<Response, ApiError> {
    // A person reads the text of a session their own token opened, and no other (to them
    // another's session is not there; nor are their requests carried to other replicas).
    if let Some(Extension(Caller::Person(person))) = &caller {
        let info = app.sessions.registry().get(&id);
        if info.and_then(|info| info.person).as_ref() != Some(person) {
            return Err(ApiError::unknown_session(&id));
        }
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    let busy = || Code::SessionBusy.error("the session is busy: ask again after its step");
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
#[utoipa::path(
    get,
    path = "/sessions/{id}/watch",
    tag = "sessions",
    summary = "A WebSocket stream of a session's resets and steps; a person may take control on it",
    description = "The newest event at once, then `{\"type\":\"event\",\"data\":{...}}` per reset, \
        step and change of control. `{\"type\":\"take\",\"data\":{\"name\":...}}`, `step` frames \
        and `{\"type\":\"release\"}` hand the session to a person and back (docs/wire.md §8). An \
        unknown id gets an error frame then close 1000 on a WebSocket.",
    params(("id" = String, Path, description = "A session id from `/sessions`"), Scope),
    responses(
        (status = 101, description = "switching to the WebSocket protocol (relayed to the replica \
            that holds the session, with `BROWSER_PEERS`)"),
        (status = 404, description = "`SESSION_NOT_FOUND` (plain HTTP)", body = ErrorBody),
        (status = 426, description = "`UPGRADE_REQUIRED`: watch streams are WebSockets", body = ErrorBody),
    ),
)]
async fn watch_session<L: Launcher>(
    State(app): State<Arc<AppState<L>>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    // `local=true` is the routing's (`replicas/routing.rs`): here, every session is local.
    _scope: axum::extract::Query<Scope>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    match upgrade.ok() {
        Some(upgrade) => {
            let (registry, shutdown) = (app.sessions.registry().clone(), app.shutdown.clone());
            let timeouts = app.timeouts.clone();
            Ok(upgrade.on_upgrade(move |socket| {
                crate::transports::watcher::run(socket, registry, id, timeouts, shutdown)
            }))
        }
        None if app.sessions.registry().get(&id).is_none() => Err(ApiError::unknown_session(&id)),
        None => Err(ApiError::new(
            Code::UpgradeRequired,
            "watch streams are WebSockets",
        )),
    }
}
