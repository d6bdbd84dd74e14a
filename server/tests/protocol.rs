//! The wire contract over real sockets, with the fake browser so these run in milliseconds. Browser
//! behaviour itself is tested against Chromium in the `browserenv-tests` package.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use browserenv_server::fake::{FakeLauncher, FakeScript};
use browserenv_server::settings::EnvSettings;
use browserenv_server::{start, ServerConfig, ServerHandle};

#[path = "../../tests/src/socket.rs"]
mod socket;
use socket::*;

async fn server(settings: EnvSettings, max_sessions: usize) -> ServerHandle {
    start(
        FakeLauncher::new(FakeScript::default()),
        ServerConfig {
            settings,
            max_sessions,
            ..ServerConfig::default()
        },
    )
    .await
    .unwrap()
}

fn quick() -> EnvSettings {
    EnvSettings {
        action_wait: Duration::from_millis(10),
        explicit_wait: Duration::from_millis(10),
        ..EnvSettings::default()
    }
}

#[tokio::test]
async fn reset_step_state_frames_have_the_exact_shape() {
    let server = server(quick(), 2).await;
    let mut ws = connect_like_python(server.addr).await;
    let state = request(&mut ws, json!({"type": "state"})).await;
    assert_eq!(
        state,
        json!({"type": "state", "data": {"episode_id": null, "step_count": 0}})
    );

    let reset = request(
        &mut ws,
        json!({"type": "reset", "data": {"start_url": "https://example.com/", "episode_id": "ep-1", "seed": 3, "other": 1}}),
    )
    .await;
    assert_eq!(reset["type"], "observation");
    let data = &reset["data"];
    assert_eq!(data["reward"], 0.0);
    assert_eq!(data["done"], false);
    let mut keys: Vec<_> = data["observation"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    keys.sort();
    assert_eq!(keys, ["error", "metadata", "screenshot", "url"]);
    assert_eq!(data["observation"]["url"], "https://example.com/");
    assert_eq!(data["metadata"], data["observation"]["metadata"]);

    // What the typed Python client sends: every field, explicit nulls.
    let step = request(
        &mut ws,
        json!({"type": "step", "data": {"metadata": {}, "op": "scroll", "x": null, "y": null, "text": "", "dy": 500}}),
    )
    .await;
    assert_eq!(step["type"], "observation");
    let state = request(&mut ws, json!({"type": "state"})).await;
    assert_eq!(
        state["data"],
        json!({"episode_id": "ep-1", "step_count": 1})
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn bad_frames_get_their_codes_and_the_session_goes_on() {
    let server = server(quick(), 2).await;
    let mut ws = connect_like_python(server.addr).await;
    ws.send(Message::text("{not json")).await.unwrap();
    assert_eq!(next_json(&mut ws).await["data"]["code"], "INVALID_JSON");
    let unknown = request(&mut ws, json!({"type": "dance"})).await;
    assert_eq!(unknown["data"]["code"], "UNKNOWN_TYPE");
    assert_eq!(unknown["data"]["message"], "Unknown message type: dance");
    let early = request(&mut ws, json!({"type": "step", "data": {"op": "back"}})).await;
    assert_eq!(
        early["data"],
        json!({"code": "EXECUTION_ERROR", "message": "reset before stepping"})
    );
    let invalid = request(
        &mut ws,
        json!({"type": "step", "data": {"op": "click", "x": 900, "extra": 1}}),
    )
    .await;
    assert_eq!(invalid["data"]["code"], "VALIDATION_ERROR");
    let errors = invalid["data"]["errors"].as_array().unwrap();
    let kinds: Vec<_> = errors.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["less_than", "extra_forbidden"]);
    for error in errors {
        for key in ["type", "loc", "msg", "input"] {
            assert!(error.get(key).is_some(), "{error}");
        }
    }
    let extra_state = request(&mut ws, json!({"type": "state", "x": 1})).await;
    assert_eq!(extra_state["data"]["code"], "VALIDATION_ERROR");
    let bad_url = request(
        &mut ws,
        json!({"type": "reset", "data": {"start_url": "file:///etc/passwd"}}),
    )
    .await;
    assert_eq!(
        bad_url["data"]["message"],
        "expected an HTTP(S) URL without credentials"
    );
    // Still serving this session.
    let state = request(&mut ws, json!({"type": "state"})).await;
    assert_eq!(state["type"], "state");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn large_frames_are_accepted() {
    let server = server(quick(), 2).await;
    let mut ws = connect_like_python(server.addr).await;
    let text = "x".repeat(16 * 1024 * 1024);
    let reply = request(
        &mut ws,
        json!({"type": "step", "data": {"op": "type", "text": text}}),
    )
    .await;
    assert_eq!(reply["data"]["code"], "VALIDATION_ERROR");
    assert_eq!(reply["data"]["errors"][0]["type"], "string_too_long");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn close_frame_ends_the_session_with_1000_and_no_reply() {
    let server = server(quick(), 2).await;
    let mut ws = connect_like_python(server.addr).await;
    ws.send(Message::text(r#"{"type":"close"}"#)).await.unwrap();
    assert_eq!(close_code_of(&mut ws).await, Some(CloseCode::Normal));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn binary_frames_are_a_session_error_then_close() {
    let server = server(quick(), 2).await;
    let mut ws = connect_like_python(server.addr).await;
    ws.send(Message::binary(vec![1, 2, 3])).await.unwrap();
    assert_eq!(next_json(&mut ws).await["data"]["code"], "SESSION_ERROR");
    assert_eq!(close_code_of(&mut ws).await, Some(CloseCode::Normal));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn over_capacity_gets_capacity_reached_then_close() {
    let server = server(quick(), 1).await;
    let _first = connect_like_python(server.addr).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut second = connect_like_python(server.addr).await;
    let frame = next_json(&mut second).await;
    assert_eq!(frame["data"]["code"], "CAPACITY_REACHED");
    assert_eq!(frame["data"]["active_sessions"], 1);
    assert_eq!(frame["data"]["max_sessions"], 1);
    assert_eq!(close_code_of(&mut second).await, Some(CloseCode::Normal));
    server.stop().await.unwrap();
}

/// A server whose `wait` takes `wait`, and a socket with a `wait` step in flight.
async fn slow_step_in_flight(wait: Duration, max_sessions: usize) -> (ServerHandle, Socket) {
    let settings = EnvSettings {
        explicit_wait: wait,
        ..quick()
    };
    let server = server(settings, max_sessions).await;
    let mut ws = connect_like_python(server.addr).await;
    let reset = json!({"type": "reset", "data": {"start_url": "https://example.com/"}});
    request(&mut ws, reset).await;
    let step = json!({"type": "step", "data": {"op": "wait"}});
    ws.send(Message::text(step.to_string())).await.unwrap();
    (server, ws)
}

#[tokio::test]
async fn pings_are_answered_while_a_step_runs() {
    let (server, mut ws) = slow_step_in_flight(Duration::from_millis(1500), 2).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    ws.send(Message::Ping(b"alive?".to_vec().into()))
        .await
        .unwrap();
    // The pong must come before the (slow) observation.
    let first = ws.next().await.unwrap().unwrap();
    assert_eq!(first, Message::Pong(b"alive?".to_vec().into()));
    assert_eq!(next_json(&mut ws).await["type"], "observation");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_peer_that_vanishes_mid_step_frees_its_slot() {
    let (server, ws) = slow_step_in_flight(Duration::from_secs(5), 1).await;
    drop(ws);
    // Well before the 5 s wait ends, the slot is free again.
    let mut next = None;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut ws = connect_like_python(server.addr).await;
        let reply = request(&mut ws, json!({"type": "state"})).await;
        if reply["type"] == "state" {
            next = Some(reply);
            break;
        }
    }
    assert!(
        next.is_some(),
        "the vanished session still holds the only slot"
    );
    server.stop().await.unwrap();
}

async fn get(server: &ServerHandle, path: &str) -> (u16, Value) {
    let response = reqwest::get(format!("{}{path}", server.base_url()))
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn post(server: &ServerHandle, path: &str, body: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", server.base_url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn http_routes_follow_the_contract() {
    let server = server(quick(), 2).await;
    assert_eq!(
        get(&server, "/health").await,
        (200, json!({"status": "healthy"}))
    );
    let (_, metadata) = get(&server, "/metadata").await;
    for key in ["name", "description", "readme_content", "version", "author"] {
        assert!(metadata[key].is_string(), "{key}");
    }
    let (_, schema) = get(&server, "/schema").await;
    assert!(schema["action"]["properties"]["op"].is_object());
    assert!(schema["observation"]["properties"]["screenshot"].is_object());
    assert!(schema["state"]["properties"]["step_count"].is_object());
    let (_, openapi) = get(&server, "/openapi.json").await;
    assert!(openapi["info"]["version"].is_string());
    for path in ["/reset", "/step", "/state"] {
        assert!(openapi["paths"][path].is_object(), "{path}");
    }
    assert_eq!(post(&server, "/mcp", "{}").await.1["error"]["code"], -32600);
    assert_eq!(
        post(&server, "/mcp", "{nope").await.1["error"]["code"],
        -32700
    );
    let (status, reply) = post(
        &server,
        "/mcp",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    )
    .await;
    // OpenEnv's JSON-RPC (no MCP handshake): the tools, then an unknown method.
    assert_eq!(status, 200);
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["tools"][0]["name"], "reset", "{reply}");
    let (_, unknown) = post(
        &server,
        "/mcp",
        r#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#,
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32601);
    server.stop().await.unwrap();
}

/// Every `$ref` in `value`.
fn refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                found.push(target);
            }
            map.values().for_each(|v| refs(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
        _ => {}
    }
}

/// The document is generated from the routes (`server/src/openapi.rs`): every operation it lists
/// is served (a fake route answers 404, or 405 for a wrong method), the models keep their
/// pydantic shapes, and every reference resolves.
#[tokio::test]
async fn the_openapi_document_matches_the_routes() {
    use browserenv::models::{action_schema, observation_schema, state_schema};
    let server = server(quick(), 2).await;
    let (status, doc) = get(&server, "/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["BrowserAction"], action_schema());
    assert_eq!(schemas["BrowserObservation"], observation_schema());
    assert_eq!(schemas["BrowserState"], state_schema());
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(found.contains(&"#/components/schemas/BrowserAction"));
    for target in found {
        let name = target.strip_prefix("#/components/schemas/").unwrap();
        assert!(schemas[name].is_object(), "{target} does not resolve");
    }
    let http = reqwest::Client::new();
    let mut operations = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let concrete = path
                .replace("{id}", "nobody")
                .replace("{env_name}", "browserenv");
            let request = http.request(
                method.to_uppercase().parse().unwrap(),
                format!("{}{concrete}", server.base_url()),
            );
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body = response.text().await.unwrap();
            // A route may answer 404, but with its own code (an unknown session, no campaign),
            // not the router's empty 404.
            let own_404 = ["SESSION_NOT_FOUND", "NO_CAMPAIGN"]
                .iter()
                .any(|code| body.contains(code));
            assert!(
                status != 405 && (status != 404 || own_404),
                "{method} {path}: {status} {body}"
            );
            operations.push(format!("{method} {path}"));
        }
    }
    operations.sort();
    assert_eq!(
        operations,
        [
            "delete /mcp",
            "get /campaign",
            "get /health",
            "get /list_environments",
            "get /mcp",
            "get /metadata",
            "get /openapi.json",
            "get /ready",
            "get /replica",
            "get /replicas",
            "get /schema",
            "get /sessions",
            "get /sessions/{id}",
            "get /sessions/{id}/text",
            "get /sessions/{id}/watch",
            "get /state",
            "get /ws",
            "get /{env_name}/splits",
            "post /campaign/complete",
            "post /campaign/lease",
            "post /campaign/review",
            "post /campaign/review/next",
            "post /campaign/skip",
            "post /mcp",
            "post /reset",
            "post /step",
            "post /{env_name}/num_tasks",
            "post /{env_name}/task",
            "post /{env_name}/task_range",
            "post /{env_name}/tasks",
        ]
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn http_session_resets_steps_and_validates() {
    let server = server(quick(), 2).await;
    assert_eq!(
        get(&server, "/state").await.1,
        json!({"episode_id": null, "step_count": 0})
    );
    let (status, early) = post(&server, "/step", r#"{"action":{"op":"back"}}"#).await;
    assert_eq!(
        (status, early["detail"].as_str()),
        (400, Some("reset before stepping"))
    );
    let (status, reset) = post(
        &server,
        "/reset",
        r#"{"start_url":"https://example.com/","episode_id":"e1"}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(reset["observation"]["url"], "https://example.com/");
    assert_eq!(reset["reward"], 0.0);
    assert_eq!(reset["done"], false);
    let (status, step) = post(
        &server,
        "/step",
        r#"{"action":{"op":"scroll","dy":300},"timeout_s":5}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(step["done"], false);
    assert_eq!(
        get(&server, "/state").await.1,
        json!({"episode_id": "e1", "step_count": 1})
    );
    // The HTTP session is listed like the WebSocket ones.
    let sessions = get(&server, "/sessions").await.1;
    assert!(
        sessions[0]["id"].as_str().unwrap().starts_with("http-"),
        "{sessions}"
    );
    assert_eq!(sessions[0]["episode_id"], "e1");
    assert_eq!(sessions[0]["step_count"], 1);
    let (status, invalid) = post(&server, "/step", r#"{"action":{"op":"click","x":5}}"#).await;
    assert_eq!(status, 422);
    assert_eq!(invalid["detail"][0]["type"], "value_error");
    assert_eq!(invalid["detail"][0]["loc"], json!(["body", "action"]));
    let (status, _) = post(&server, "/reset", r#"{"start_url":"file:///etc/passwd"}"#).await;
    assert_eq!(status, 400);
    let (status, garbage) = post(&server, "/step", "{oops").await;
    assert_eq!(
        (status, garbage["detail"][0]["type"].as_str()),
        (422, Some("json_invalid"))
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_token_guards_every_route_but_health() {
    let server = start(
        FakeLauncher::new(FakeScript::default()),
        ServerConfig {
            settings: quick(),
            token: Some("s3cret".into()),
            ..ServerConfig::default()
        },
    )
    .await
    .unwrap();
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base_url());
    assert_eq!(http.get(url("/health")).send().await.unwrap().status(), 200);
    for path in ["/metadata", "/schema", "/state", "/openapi.json"] {
        let response = http.get(url(path)).send().await.unwrap();
        assert_eq!(response.status(), 401, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "UNAUTHORIZED");
        assert!(body["detail"]
            .as_str()
            .unwrap()
            .contains("missing bearer token"));
    }
    let wrong = http
        .get(url("/metadata"))
        .bearer_auth("nope")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = http
        .get(url("/metadata"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    let reset = http
        .post(url("/reset"))
        .bearer_auth("s3cret")
        .body(r#"{"start_url":"https://example.com/"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 200);

    // The WebSocket upgrade too: refused without the token, served with it.
    let refused = browserenv::Client::connect(&server.base_url()).await;
    assert!(refused.err().unwrap().to_string().contains("401"));
    let mut client = browserenv::Client::connect_with_token(&server.base_url(), Some("s3cret"))
        .await
        .unwrap();
    assert_eq!(client.state().await.unwrap().step_count, 0);
    server.stop().await.unwrap();
}

async fn get_json(server: &ServerHandle, path: &str) -> (u16, Value) {
    let response = reqwest::get(format!("{}{path}", server.base_url()))
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn watcher(server: &ServerHandle, id: &str) -> Socket {
    let url = format!("ws://{}/sessions/{id}/watch", server.addr);
    let config = WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None);
    tokio_tungstenite::connect_async_with_config(url, Some(config), false)
        .await
        .unwrap()
        .0
}

#[tokio::test]
async fn sessions_are_listed_and_watched_read_only() {
    let server = server(quick(), 3).await;
    let mut controller = connect_like_python(server.addr).await;
    request(&mut controller, json!({"type": "reset", "data": {"start_url": "https://example.com/", "episode_id": "watched"}})).await;
    let (status, sessions) = get_json(&server, "/sessions").await;
    assert_eq!(status, 200);
    let session = &sessions[0];
    assert_eq!(session["episode_id"], "watched");
    assert_eq!(session["url"], "https://example.com/");
    assert_eq!(session["controller"], true);
    assert!(
        session["peer"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{session}"
    );
    let id = session["id"].as_str().unwrap().to_string();
    assert_eq!(
        get_json(&server, &format!("/sessions/{id}")).await.1["id"],
        id
    );

    // A watcher sees the current page at once, then every step.
    let mut watching = watcher(&server, &id).await;
    let first = next_json(&mut watching).await;
    assert_eq!(
        (first["type"].as_str(), first["data"]["kind"].as_str()),
        (Some("event"), Some("reset"))
    );
    assert!(first["data"]["result"]["observation"]["screenshot"]
        .as_str()
        .unwrap()
        .starts_with("iVBOR"));
    request(
        &mut controller,
        json!({"type": "step", "data": {"op": "scroll", "dy": 200}}),
    )
    .await;
    let step = next_json(&mut watching).await;
    assert_eq!(step["data"]["kind"], "step");
    assert_eq!(step["data"]["action"]["op"], "scroll");
    assert_eq!(step["data"]["step"], 1);
    assert_eq!(get_json(&server, "/sessions").await.1[0]["watchers"], 1);

    // Watchers cannot act.
    watching
        .send(Message::text(r#"{"type":"step","data":{"op":"back"}}"#))
        .await
        .unwrap();
    let refused = next_json(&mut watching).await;
    assert!(refused["data"]["message"]
        .as_str()
        .unwrap()
        .contains("read-only"));
    // Unknown sessions: 404 over HTTP, an error frame then close over WebSocket.
    assert_eq!(get_json(&server, "/sessions/nope").await.0, 404);
    assert_eq!(get_json(&server, "/sessions/nope/watch").await.0, 404);
    let mut unknown = watcher(&server, "nope").await;
    assert!(next_json(&mut unknown).await["data"]["message"]
        .as_str()
        .unwrap()
        .contains("no session"));
    assert_eq!(close_code_of(&mut unknown).await, Some(CloseCode::Normal));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_watcher_that_never_reads_does_not_slow_the_session() {
    let settings = EnvSettings {
        max_steps: 200,
        ..quick()
    };
    let server = server(settings, 3).await;
    let mut controller = connect_like_python(server.addr).await;
    request(
        &mut controller,
        json!({"type": "reset", "data": {"start_url": "https://example.com/"}}),
    )
    .await;
    let id = get_json(&server, "/sessions").await.1[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let _stalled = watcher(&server, &id).await; // never read
    let mut reader = watcher(&server, &id).await;
    next_json(&mut reader).await; // the reset
    for _ in 0..150 {
        let reply = request(
            &mut controller,
            json!({"type": "step", "data": {"op": "scroll", "dy": 10}}),
        )
        .await;
        assert_eq!(reply["type"], "observation");
    }
    // The reading watcher gets to the last step (skipping ahead if it fell behind).
    loop {
        let event = next_json(&mut reader).await;
        if event["data"]["step"] == 150 {
            break;
        }
    }
    server.stop().await.unwrap();
}

/// The close frame's code, after any other frames.
async fn close_code_of(socket: &mut Socket) -> Option<CloseCode> {
    close_frame(socket).await.map(|(code, _)| code)
}

/// What `/sessions` says the session asks for, if anything.
async fn asking(server: &ServerHandle, id: &str) -> Value {
    let (_, sessions) = get_json(server, "/sessions").await;
    let listed = sessions.as_array().unwrap().iter().find(|s| s["id"] == id);
    listed.unwrap()["asking"].clone()
}

/// An agent's `request_human` whose HTTP client goes away while it waits is cancelled, and the
/// request with it: the session no longer shows it, and the agent may ask again.
#[tokio::test]
async fn a_request_for_a_person_whose_client_goes_away_is_closed() {
    let server = server(quick(), 2).await;
    let created = mcp_call(
        &server.base_url(),
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}),
    )
    .await;
    let id = created["result"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let call = |name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"session_id": id, "name": name, "arguments": arguments}})
    };
    let reset = mcp_call(
        &server.base_url(),
        None,
        call("reset", json!({"start_url": "https://example.com/"})),
    )
    .await;
    assert!(reset["error"].is_null(), "{reset}");
    let asked = tokio::spawn({
        let (server, body) = (
            server.base_url(),
            call(
                "request_human",
                json!({"reason": "sign me in", "wait_seconds": 60}),
            ),
        );
        async move {
            reqwest::Client::new()
                .post(format!("{server}/mcp"))
                .header("accept", "*/*")
                .json(&body)
                .send()
                .await
        }
    });
    let mut shown = Value::Null;
    for _ in 0..100 {
        shown = asking(&server, &id).await;
        if !shown.is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(shown["reason"], "sign me in");
    // The client goes away: its connection closes with the call unanswered.
    asked.abort();
    let _ = asked.await;
    for _ in 0..100 {
        shown = asking(&server, &id).await;
        if shown.is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(shown.is_null(), "still asking: {shown}");
    let again = mcp_call(
        &server.base_url(),
        None,
        call(
            "request_human",
            json!({"reason": "again", "wait_seconds": 1}),
        ),
    )
    .await;
    assert!(
        again.to_string().contains("no person took control"),
        "{again}"
    );
    server.stop().await.unwrap();
}
