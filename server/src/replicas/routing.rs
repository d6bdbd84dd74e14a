//! "This session lives elsewhere", decided once for every route: the session a request names
//! (`/sessions/{id}`, its `/text` and `/watch`; `/ws?session_id=…`; an OpenEnv MCP call's
//! `params.session_id` on `/mcp`), and whether this replica holds it. A request about a session
//! another replica holds is carried there by the relay (`relay.rs`); everything else is answered
//! here, as it always was. Runs after the token check, before the routes.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{request::Parts, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::watch;

use super::relay::{self, Busy};
use super::Replicas;
use crate::api_error::{ApiError, Code};
use crate::operations::connection::MAX_INCOMING_BYTES;
use crate::settings::PeerTimeouts;

/// Whether this replica holds a session (its registry, or an OpenEnv MCP session it keeps).
pub type Here = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What the routing needs: the peers, what this replica holds, and what a relayed socket needs.
#[derive(Clone)]
pub struct Routing {
    pub replicas: Arc<Replicas>,
    pub here: Here,
    pub timeouts: PeerTimeouts,
    pub shutdown: watch::Receiver<bool>,
}

/// How a request names its session, and so how a failure to carry it is said.
#[derive(Debug, Clone, PartialEq)]
enum Named {
    /// In the path or the query: the API's error body.
    Route(String),
    /// In an OpenEnv JSON-RPC call (its id): a JSON-RPC error, HTTP 200, as OpenEnv's client
    /// expects every answer.
    OpenEnv(String, Value),
}

impl Named {
    fn session(&self) -> &str {
        match self {
            Named::Route(id) | Named::OpenEnv(id, _) => id,
        }
    }

    fn unreachable(&self, owner: &str, why: &str) -> Response {
        match self {
            Named::Route(id) => ApiError::new(
                Code::ReplicaUnreachable,
                format!(
                    "session {id:?} is held by the replica at {owner}, which did not answer: {why}"
                ),
            )
            .into_response(),
            Named::OpenEnv(..) => axum::Json(crate::transports::mcp::openenv::replica_unreachable(
                owner, why,
            ))
            .into_response(),
        }
    }

    fn busy(&self, busy: &Busy) -> Response {
        let message = busy.message(self.session());
        match self {
            Named::Route(_) => ApiError::new(Code::ReplicaBusy, message).into_response(),
            Named::OpenEnv(_, id) => {
                axum::Json(crate::transports::mcp::openenv::replica_busy(id, &message))
                    .into_response()
            }
        }
    }
}

/// The session a request names in its path or query (not its body).
fn named_in_route(parts: &Parts) -> Option<String> {
    let path = parts.uri.path();
    if let Some(rest) = path.strip_prefix("/sessions/") {
        let id = rest
            .strip_suffix("/text")
            .or_else(|| rest.strip_suffix("/watch"))
            .unwrap_or(rest);
        let id = percent_encoding::percent_decode_str(id)
            .decode_utf8()
            .ok()?;
        return (!id.contains('/')).then(|| id.into_owned());
    }
    if path == "/ws" {
        return query_pairs(parts)
            .find(|(k, _)| k == "session_id")
            .map(|(_, v)| v);
    }
    None
}

fn query_pairs(parts: &Parts) -> impl Iterator<Item = (String, String)> + '_ {
    url::form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes()).into_owned()
}

/// `?local=true`: this replica's own answer, never passed on (what peers ask each other).
fn asks_locally(parts: &Parts) -> bool {
    query_pairs(parts).any(|(k, v)| k == "local" && v == "true")
}

/// The owner's URL for this request: its path and query, with `local=true`.
fn upstream(owner: &str, parts: &Parts, websocket: bool) -> Option<String> {
    let mut url = url::Url::parse(owner).ok()?;
    url.set_path(parts.uri.path());
    url.set_query(parts.uri.query());
    url.query_pairs_mut().append_pair("local", "true");
    if websocket {
        url.set_scheme("ws").ok()?;
    }
    Some(url.to_string())
}

/// The middleware: carry a request about a session held elsewhere to its owner.
pub async fn forward_if_elsewhere(
    State(routing): State<Routing>,
    request: Request,
    next: Next,
) -> Response {
    // A campaign person's token reaches their own sessions alone, which are here (`caller.rs`):
    // carried to a peer, their request would be the server's there.
    let person = request
        .extensions()
        .get::<crate::operations::caller::Caller>()
        .is_some_and(|caller| caller.person().is_some());
    if !routing.replicas.configured() || person {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    if asks_locally(&parts) {
        return next.run(Request::from_parts(parts, body)).await;
    }
    // An OpenEnv MCP call names its session in its body: read (within the body limit) to see.
    let (named, body) = match named_in_route(&parts) {
        Some(id) => (Some(Named::Route(id)), body),
        None if parts.method == Method::POST && parts.uri.path() == "/mcp" => {
            let Ok(bytes) = axum::body::to_bytes(body, MAX_INCOMING_BYTES).await else {
                return axum::Json(crate::transports::mcp::openenv::parse_error()).into_response();
            };
            let call: Option<Value> = serde_json::from_slice(&bytes).ok();
            let named = call
                .as_ref()
                .filter(|call| {
                    crate::transports::mcp::endpoint::is_openenv(&parts.headers, Some(call))
                })
                .and_then(|call| {
                    let id = call.get("params")?.get("session_id")?.as_str()?;
                    Some(Named::OpenEnv(id.to_string(), call["id"].clone()))
                });
            (named, Body::from(bytes))
        }
        None => (None, body),
    };
    let Some(named) = named.filter(|named| !(routing.here)(named.session())) else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    let Some(owner) = routing.replicas.owner_of(named.session()).await else {
        // Nobody has it: answered here (an unknown session, as without peers).
        return next.run(Request::from_parts(parts, body)).await;
    };
    let websocket = parts
        .headers
        .get(axum::http::header::UPGRADE)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"websocket"));
    let Some(url) = upstream(&owner, &parts, websocket) else {
        return named.unreachable(&owner, "its address cannot be put in a URL");
    };
    if websocket {
        let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
            Ok(upgrade) => upgrade,
            Err(refused) => return refused.into_response(),
        };
        // The upgrade request carries none of the signed headers (`relay::connect`).
        let signature = routing
            .replicas
            .signature("GET", &url, &axum::http::HeaderMap::new(), b"");
        let (timeouts, shutdown) = (routing.timeouts.clone(), routing.shutdown.clone());
        let session = named.session().to_string();
        return upgrade
            .max_message_size(MAX_INCOMING_BYTES)
            .max_frame_size(MAX_INCOMING_BYTES)
            .on_upgrade(move |socket| {
                relay::socket(socket, url, signature, session, timeouts, shutdown)
            });
    }
    let _turn = match routing.replicas.relay.turn(named.session()).await {
        Ok(turn) => turn,
        Err(busy) => return named.busy(&busy),
    };
    let Ok(bytes): Result<Bytes, _> = axum::body::to_bytes(body, MAX_INCOMING_BYTES).await else {
        return named.unreachable(&owner, "the request's body could not be read");
    };
    match relay::http(
        &routing.replicas,
        &parts.method,
        &url,
        &parts.headers,
        bytes,
    )
    .await
    {
        Ok(answer) => {
            let mut response = Response::new(Body::from(answer.body));
            *response.status_mut() =
                StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
            if let Some(value) = answer.content_type.and_then(|c| c.parse().ok()) {
                response
                    .headers_mut()
                    .insert(axum::http::header::CONTENT_TYPE, value);
            }
            response
        }
        Err(err) => named.unreachable(&owner, &err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str) -> Parts {
        axum::http::Request::builder()
            .uri(uri)
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    #[test]
    fn the_session_a_route_names() {
        for (uri, named) in [
            ("/sessions/abc", Some("abc")),
            ("/sessions/abc/text", Some("abc")),
            ("/sessions/abc/watch?x=1", Some("abc")),
            ("/sessions/a%2Fb", None),
            ("/ws?session_id=mcp-1", Some("mcp-1")),
            ("/ws", None),
            ("/sessions", None),
            ("/mcp", None),
        ] {
            assert_eq!(named_in_route(&parts(uri)).as_deref(), named, "{uri}");
        }
        assert!(asks_locally(&parts("/sessions/abc?local=true")));
        assert!(!asks_locally(&parts("/sessions/abc?local=false")));
        assert_eq!(
            upstream("http://10.0.0.5:8000", &parts("/ws?session_id=m"), true).unwrap(),
            "ws://10.0.0.5:8000/ws?session_id=m&local=true"
        );
        assert_eq!(
            upstream("http://[::1]:8000", &parts("/sessions/a%3Fb/text"), false).unwrap(),
            "http://[::1]:8000/sessions/a%3Fb/text?local=true"
        );
    }
}
