//! `/mcp`: one endpoint, two kinds of client. MCP clients speak Streamable HTTP (they accept an
//! event stream and carry `Mcp-Session-Id` after `initialize`); rmcp serves them. OpenEnv's
//! `MCPToolClient` posts bare JSON-RPC (`Accept: */*`, OpenEnv's session methods,
//! `params.session_id`); `openenv.rs` answers it. Which is which is decided here, from the request.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::browser::Launcher;
use crate::openapi::JsonRpcRequest;
use crate::operations::connection::{Peer, MAX_INCOMING_BYTES};
use crate::session::Sessions;
use crate::settings::PeerTimeouts;
use crate::transports::mcp::handler::BrowserTools;
use crate::transports::mcp::openenv::{self, OpenEnvMcp};

pub struct Mcp<L: Launcher> {
    service: StreamableHttpService<BrowserTools<L>, LocalSessionManager>,
    pub openenv: Arc<OpenEnvMcp<L>>,
    stop: CancellationToken,
}

impl<L: Launcher> Mcp<L> {
    pub fn new(sessions: Arc<Sessions<L>>, timeouts: &PeerTimeouts) -> Self {
        let mut manager = LocalSessionManager::default();
        // An MCP session nobody uses ends like any other session.
        manager.session_config.keep_alive = timeouts.session_timeout;
        let stop = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            // `Host` and `Origin` are checked for every route in `access.rs`, once.
            .disable_allowed_hosts()
            .with_max_request_body_bytes(MAX_INCOMING_BYTES)
            .with_cancellation_token(stop.clone());
        let factory = {
            let sessions = sessions.clone();
            move || Ok(BrowserTools::new(sessions.clone(), None))
        };
        Mcp {
            service: StreamableHttpService::new(factory, Arc::new(manager), config),
            openenv: Arc::new(OpenEnvMcp::new(sessions)),
            stop,
        }
    }

    /// End the MCP sessions and their event streams when shutdown begins: an open stream would
    /// otherwise hold the graceful shutdown until its deadline.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// End every MCP session (the server is stopping).
    pub async fn shutdown(&self) {
        self.stop();
        self.openenv.close_all().await;
    }
}

/// `/mcp` for the methods the MCP spec gives it (rmcp answers 405 to any other); all three go to
/// [`entry`], each documented on its own.
pub fn routes<L: Launcher, S: Clone + Send + Sync + 'static>(mcp: Arc<Mcp<L>>) -> OpenApiRouter<S> {
    OpenApiRouter::new()
        .routes(routes!(post_mcp, get_mcp, delete_mcp))
        .with_state(mcp)
}

#[utoipa::path(
    post,
    path = "/mcp",
    tag = "mcp",
    summary = "JSON-RPC: MCP's Streamable HTTP, or OpenEnv's session methods and tools",
    description = "MCP clients (`Accept: application/json, text/event-stream`) speak Streamable \
        HTTP: `initialize`, then `tools/list` and `tools/call` with the `Mcp-Session-Id` it \
        answered. OpenEnv's `MCPToolClient` posts bare JSON-RPC: `openenv/session/create`, \
        `tools/list`, `tools/call` (with `params.session_id`), `openenv/session/close`. \
        OpenEnv's calls are always HTTP 200: `-32700` parse error, `-32600` invalid request \
        (docs/wire.md §6).",
    request_body(content = JsonRpcRequest, description = "a JSON-RPC 2.0 request", example = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
    params(("Mcp-Session-Id" = Option<String>, Header, description = "The MCP session, after `initialize`")),
    responses(
        (status = 200, description = "the JSON-RPC reply, or an event stream for MCP clients", content(
            (Object = "application/json"),
            (String = "text/event-stream"),
        )),
        (status = 202, description = "a notification or response from an MCP client, accepted"),
    ),
)]
async fn post_mcp<L: Launcher>(
    state: State<Arc<Mcp<L>>>,
    peer: Peer,
    request: Request,
) -> Response {
    entry(state, peer, request).await
}

#[utoipa::path(
    get,
    path = "/mcp",
    tag = "mcp",
    summary = "MCP: the event stream of an MCP session (server-to-client messages)",
    params(("Mcp-Session-Id" = String, Header, description = "The MCP session")),
    responses((status = 200, description = "an event stream", content_type = "text/event-stream", body = String)),
)]
async fn get_mcp<L: Launcher>(state: State<Arc<Mcp<L>>>, peer: Peer, request: Request) -> Response {
    entry(state, peer, request).await
}

#[utoipa::path(
    delete,
    path = "/mcp",
    tag = "mcp",
    summary = "MCP: end an MCP session",
    params(("Mcp-Session-Id" = String, Header, description = "The MCP session")),
    responses((status = 204, description = "the session ended")),
)]
async fn delete_mcp<L: Launcher>(
    state: State<Arc<Mcp<L>>>,
    peer: Peer,
    request: Request,
) -> Response {
    entry(state, peer, request).await
}

/// A POST from a client that is not speaking Streamable HTTP: it does not take an event stream,
/// calls one of OpenEnv's methods, or names an OpenEnv session without an MCP one.
pub(crate) fn is_openenv(headers: &HeaderMap, request: Option<&Value>) -> bool {
    let streams = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|accept| accept.contains("text/event-stream"));
    let method = request
        .and_then(|r| r.get("method"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let names_session = request
        .and_then(|r| r.get("params"))
        .and_then(|p| p.get("session_id"))
        .is_some();
    !streams
        || method.starts_with("openenv/")
        || (names_session && !headers.contains_key("mcp-session-id"))
}

async fn entry<L: Launcher>(
    State(mcp): State<Arc<Mcp<L>>>,
    Peer(peer): Peer,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    if parts.method != Method::POST {
        let mut response = mcp
            .service
            .handle(Request::from_parts(parts.clone(), body))
            .await
            .map(Body::new);
        // rmcp ends a session with 202; the MCP spec's clients expect 200 or 204.
        if parts.method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = Body::empty();
        }
        return response;
    }
    let bytes: Bytes = match axum::body::to_bytes(body, MAX_INCOMING_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => return Json(openenv::parse_error()).into_response(),
    };
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    // A call naming a session another replica holds went there already (`server/src/replicas/routing.rs`).
    if is_openenv(&parts.headers, parsed.as_ref()) {
        let answer = match parsed {
            Some(request) => {
                let caller = parts
                    .extensions
                    .get::<crate::operations::caller::Caller>()
                    .cloned()
                    .unwrap_or_default();
                mcp.openenv.answer(&request, None, &caller, &peer).await
            }
            None => openenv::parse_error(),
        };
        return Json(answer).into_response();
    }
    mcp.service
        .handle(Request::from_parts(parts, Body::from(bytes)))
        .await
        .map(Body::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(accept: &str, session: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, accept.parse().unwrap());
        if let Some(session) = session {
            headers.insert("mcp-session-id", session.parse().unwrap());
        }
        headers
    }

    #[test]
    fn openenv_posts_and_mcp_posts_are_told_apart() {
        let streamable = "application/json, text/event-stream";
        let call =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait"}});
        let named = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"session_id": "s"}});
        let create = json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"});
        // MCPToolClient: `Accept: */*`.
        assert!(is_openenv(&headers("*/*", None), Some(&call)));
        assert!(is_openenv(&headers(streamable, None), Some(&create)));
        assert!(is_openenv(&headers(streamable, None), Some(&named)));
        // An MCP client, before and after initialize.
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}});
        assert!(!is_openenv(&headers(streamable, None), Some(&initialize)));
        assert!(!is_openenv(&headers(streamable, Some("m")), Some(&call)));
        assert!(!is_openenv(&headers(streamable, Some("m")), Some(&named)));
    }
}
