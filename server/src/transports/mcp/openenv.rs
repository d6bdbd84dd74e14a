//! OpenEnv's MCP (`openenv==0.10.0`, `MCPToolClient`): plain JSON-RPC POSTs to `/mcp` without the
//! MCP handshake, sessions made with `openenv/session/create` and named by `params.session_id`,
//! `/ws?session_id=…` bound to the same session, and the `"mcp"` frame on `/ws`. The frames and
//! answers are OpenEnv's own server's (docs/wire.md §6): always HTTP 200, one JSON object.
//!
//! A session made here is kept in this table until `openenv/session/close`, or until it has been
//! unused for the session timeout. A WebSocket may attach to it (one at a time); a close asked
//! while one is attached happens when it detaches. A kept session is its opener's: only a caller
//! with the same token (`caller.rs`) calls, attaches to or closes it by its id; to anyone else it
//! is unknown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::sync::watch;

use crate::browser::Launcher;
use crate::operations::caller::Caller;
use crate::session::{Sessions, SharedSession, Transport};
use crate::transports::mcp::tools::{self, Called};

/// JSON-RPC 2.0 error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
/// OpenEnv's code for a server at capacity.
const SERVER_ERROR: i64 = -32000;

pub struct OpenEnvMcp<L: Launcher> {
    sessions: Arc<Sessions<L>>,
    kept: Mutex<HashMap<String, Kept<L>>>,
}

struct Kept<L: Launcher> {
    session: SharedSession<L>,
    /// Who opened it: the one caller that may name it.
    opener: Caller,
    /// A WebSocket drives it now.
    attached: bool,
    /// Closed when the WebSocket detaches.
    closing: bool,
    last_used: Instant,
}

/// A WebSocket's hold on a kept session; dropping it detaches.
pub struct Attached<L: Launcher> {
    owner: Arc<OpenEnvMcp<L>>,
    id: String,
    pub session: SharedSession<L>,
}

fn reply(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: &Value, code: i64, message: impl Into<String>) -> Value {
    error_with(id, code, message, Value::Null)
}

fn error_with(id: &Value, code: i64, message: impl Into<String>, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into(), "data": data}})
}

/// OpenEnv's answer when no session slot is free: the wire's refusal, its counts as `data`.
fn at_capacity(id: &Value, refused: &crate::operations::capacity::AtCapacity) -> Value {
    let frame = refused.frame();
    error_with(id, SERVER_ERROR, frame.message, Value::Object(frame.extra))
}

/// A call for a session whose replica (`BROWSER_PEERS`) did not answer.
pub fn replica_unreachable(owner: &str, why: &str) -> Value {
    error(
        &Value::Null,
        INTERNAL_ERROR,
        format!("the replica at {owner} that holds this session did not answer: {why}"),
    )
}

/// A call for a session held by another replica, not carried: too many in flight (`relay.rs`).
pub fn replica_busy(id: &Value, message: &str) -> Value {
    error(id, SERVER_ERROR, message)
}

/// A body that is not JSON.
pub fn parse_error() -> Value {
    error(&Value::Null, PARSE_ERROR, "Parse error")
}

impl<L: Launcher> OpenEnvMcp<L> {
    pub fn new(sessions: Arc<Sessions<L>>) -> Self {
        OpenEnvMcp {
            sessions,
            kept: Mutex::new(HashMap::new()),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<String, Kept<L>>> {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether this replica keeps the session `id` (else it may be another replica's).
    pub fn keeps(&self, id: &str) -> bool {
        self.kept().contains_key(id)
    }

    /// Attach a WebSocket of `caller`'s to a kept session of theirs (`/ws?session_id=…`).
    pub fn attach(self: &Arc<Self>, id: &str, caller: &Caller) -> Result<Attached<L>, String> {
        let mut kept = self.kept();
        let entry = kept
            .get_mut(id)
            .filter(|entry| entry.opener == *caller)
            .ok_or_else(|| format!("Unknown session_id: {id}"))?;
        if entry.attached {
            return Err(format!("Session {id} already has an attached WebSocket"));
        }
        entry.attached = true;
        Ok(Attached {
            owner: self.clone(),
            id: id.to_string(),
            session: entry.session.clone(),
        })
    }

    /// Answer one JSON-RPC request of `caller`'s. `bound` is the session of the WebSocket it
    /// came on.
    pub async fn answer(
        &self,
        request: &Value,
        bound: Option<&SharedSession<L>>,
        caller: &Caller,
        peer: &str,
    ) -> Value {
        let Some(message) = request.as_object() else {
            return error(
                &Value::Null,
                INVALID_REQUEST,
                "Invalid request: expected a JSON-RPC 2.0 object",
            );
        };
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let method = message.get("method").and_then(Value::as_str);
        let (true, Some(method)) = (message.get("jsonrpc") == Some(&json!("2.0")), method) else {
            return error(
                &Value::Null,
                INVALID_REQUEST,
                "Invalid request: expected {\"jsonrpc\": \"2.0\", \"method\": ..., \"params\"?, \"id\"?}",
            );
        };
        let empty = Map::new();
        let params = match message.get("params") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(params)) => params,
            Some(_) => {
                return error(
                    &id,
                    INVALID_PARAMS,
                    "Invalid params: params must be an object",
                )
            }
        };
        let named = params.get("session_id").and_then(Value::as_str);
        let bound_id = match bound {
            Some(session) => Some(session.lock().await.id().to_string()),
            None => None,
        };
        match method {
            "openenv/session/create" => match bound_id {
                Some(bound_id) => reply(&id, json!({"session_id": bound_id})),
                None => {
                    match self
                        .sessions
                        .open_as(Transport::Mcp, peer.to_string(), caller.clone())
                    {
                        Ok(session) => {
                            let session_id = session.lock().await.id().to_string();
                            self.kept().insert(
                                session_id.clone(),
                                Kept {
                                    session,
                                    opener: caller.clone(),
                                    attached: false,
                                    closing: false,
                                    last_used: Instant::now(),
                                },
                            );
                            reply(&id, json!({"session_id": session_id}))
                        }
                        Err(refused) => at_capacity(&id, &refused),
                    }
                }
            },
            "openenv/session/close" => {
                let Some(named) = named else {
                    return error(
                        &id,
                        INVALID_PARAMS,
                        "Invalid params - 'session_id' is required",
                    );
                };
                if bound_id.as_deref() == Some(named) {
                    return error(
                        &id,
                        INVALID_REQUEST,
                        "Cannot close active WebSocket-managed session via MCP method",
                    );
                }
                let closed = {
                    let mut kept = self.kept();
                    match kept.get_mut(named) {
                        // Another caller's is unknown to this one.
                        Some(entry) if entry.opener != *caller => None,
                        None => None,
                        Some(entry) if entry.attached => {
                            entry.closing = true;
                            Some(None)
                        }
                        Some(_) => Some(kept.remove(named).map(|entry| entry.session)),
                    }
                };
                match closed {
                    None => error(&id, INVALID_PARAMS, format!("Unknown session_id: {named}")),
                    Some(None) => reply(
                        &id,
                        json!({"session_id": named, "closed": false, "closing": true}),
                    ),
                    Some(Some(session)) => {
                        session.lock().await.close().await;
                        reply(&id, json!({"session_id": named, "closed": true}))
                    }
                }
            }
            "tools/list" => reply(
                &id,
                json!({"tools": tools::tools(self.sessions.settings().actions)}),
            ),
            "tools/call" => {
                let Some(name) = params.get("name").and_then(Value::as_str) else {
                    return error(&id, INVALID_PARAMS, "Invalid params: 'name' is required");
                };
                let arguments = params.get("arguments").and_then(Value::as_object);
                let (session, temporary) = match (bound, named) {
                    (Some(session), _) => (session.clone(), false),
                    (None, Some(named)) => {
                        let mut kept = self.kept();
                        let Some(entry) = kept.get_mut(named).filter(|e| e.opener == *caller)
                        else {
                            return error(
                                &id,
                                INVALID_PARAMS,
                                format!("Unknown session_id: {named}"),
                            );
                        };
                        entry.last_used = Instant::now();
                        (entry.session.clone(), false)
                    }
                    // OpenEnv runs a call without a session on an environment of its own.
                    (None, None) => match self.sessions.open_as(
                        Transport::Mcp,
                        peer.to_string(),
                        caller.clone(),
                    ) {
                        Ok(session) => (session, true),
                        Err(refused) => return at_capacity(&id, &refused),
                    },
                };
                let outcome = tools::call(&session, name, arguments).await;
                if temporary {
                    session.lock().await.close().await;
                }
                if let Some(named) = named.filter(|_| !temporary && bound.is_none()) {
                    if let Some(entry) = self.kept().get_mut(named) {
                        entry.last_used = Instant::now();
                    }
                }
                match outcome {
                    Ok(outcome) => reply(&id, openenv_result(outcome)),
                    // OpenEnv says a failed tool as a JSON-RPC error, which `MCPToolClient` raises.
                    Err(failure) => error(&id, INTERNAL_ERROR, failure.message()),
                }
            }
            "initialize" => error(
                &id,
                METHOD_NOT_FOUND,
                "Method not found: initialize. MCP clients: POST with \
                 `Accept: application/json, text/event-stream` (Streamable HTTP)",
            ),
            other => error(&id, METHOD_NOT_FOUND, format!("Method not found: {other}")),
        }
    }

    /// Close kept sessions unused for `timeout` (and not attached). Ends with the server.
    pub async fn expire(owner: Weak<Self>, timeout: Duration, mut shutdown: watch::Receiver<bool>) {
        let every = (timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
            let Some(owner) = owner.upgrade() else { return };
            let idle: Vec<(String, SharedSession<L>)> = {
                let mut kept = owner.kept();
                let ids: Vec<String> = kept
                    .iter()
                    .filter(|(_, e)| !e.attached && e.last_used.elapsed() >= timeout)
                    .map(|(id, _)| id.clone())
                    .collect();
                ids.into_iter()
                    .filter_map(|id| kept.remove(&id).map(|e| (id, e.session)))
                    .collect()
            };
            for (id, session) in idle {
                tracing::info!(
                    "closing MCP session {id}: unused for {} s (BROWSER_SESSION_TIMEOUT_SECONDS)",
                    timeout.as_secs_f64()
                );
                session.lock().await.close().await;
            }
        }
    }

    /// Close every kept session (the server is stopping).
    pub async fn close_all(&self) {
        let all: Vec<SharedSession<L>> = self.kept().drain().map(|(_, e)| e.session).collect();
        for session in all {
            session.lock().await.close().await;
        }
    }
}

impl<L: Launcher> Attached<L> {
    /// End the session for good (it timed out under its socket).
    pub async fn close(self) {
        self.owner.kept().remove(&self.id);
        self.session.lock().await.close().await;
    }
}

impl<L: Launcher> Drop for Attached<L> {
    fn drop(&mut self) {
        let closing = {
            let mut kept = self.owner.kept();
            match kept.get_mut(&self.id) {
                Some(entry) if entry.closing => kept.remove(&self.id).map(|e| e.session),
                Some(entry) => {
                    entry.attached = false;
                    entry.last_used = Instant::now();
                    None
                }
                None => None,
            }
        };
        if let Some(session) = closing {
            tokio::spawn(async move { session.lock().await.close().await });
        }
    }
}

/// A tool's result in OpenEnv's shape (fastmcp's result, snake_case): `MCPToolClient.call_tool`
/// returns its `data`, which here is the facts plus the screenshot, like an observation (for
/// `read_page`: what it read).
fn openenv_result(called: Called) -> Value {
    let facts = called.facts();
    let data = called.data();
    json!({
        "content": called.into_result().content,
        "structured_content": facts,
        "data": data,
        "is_error": false,
        "meta": null,
    })
}
