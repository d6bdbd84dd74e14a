//! Replicas behind one address (`BROWSER_PEERS`), on real sockets with the fake browser: every
//! replica lists every session, and a session's text, info and watch socket (hand-off included)
//! are reached through any replica. The same with real Chromium, a real balancer and a replica
//! killed mid-run: `tests/python/test_replicas.py`.

use std::time::Duration;

use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

use browserenv_server::fake::{FakeLauncher, FakeScript};
use browserenv_server::replicas::PeerEntry;
use browserenv_server::settings::{EnvSettings, PeerTimeouts};
use browserenv_server::{start_on, ServerConfig, ServerHandle};

const TOKEN: &str = "shared-secret";

/// `count` replicas that know each other (and `extra` peers besides, e.g. one that is down).
async fn replicas(count: usize, extra: &[String]) -> Vec<ServerHandle> {
    replicas_with(count, extra, PeerTimeouts::default()).await
}

async fn replicas_with(
    count: usize,
    extra: &[String],
    timeouts: PeerTimeouts,
) -> Vec<ServerHandle> {
    let mut listeners = Vec::new();
    for _ in 0..count {
        listeners.push(TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let mut peers: Vec<PeerEntry> = listeners
        .iter()
        .map(|l| PeerEntry::parse(&format!("http://{}", l.local_addr().unwrap())).unwrap())
        .collect();
    peers.extend(extra.iter().map(|url| PeerEntry::parse(url).unwrap()));
    listeners
        .into_iter()
        .map(|listener| {
            let config = ServerConfig {
                settings: EnvSettings {
                    action_wait: Duration::from_millis(10),
                    ..EnvSettings::default()
                },
                max_sessions: 2,
                token: Some(TOKEN.into()),
                peers: peers.clone(),
                timeouts: timeouts.clone(),
                ..ServerConfig::default()
            };
            start_on(listener, FakeLauncher::new(FakeScript::default()), config).unwrap()
        })
        .collect()
}

/// A watch socket's answer to `frame`: the events watchers get meanwhile are passed over.
async fn reply_to(socket: &mut Socket, frame: Value) -> Value {
    socket.send(Message::text(frame.to_string())).await.unwrap();
    loop {
        let next = next_json(socket).await;
        if next["type"] != "event" {
            return next;
        }
    }
}

async fn request(socket: &mut Socket, frame: Value) -> Value {
    socket.send(Message::text(frame.to_string())).await.unwrap();
    next_json(socket).await
}

/// A /ws session on `server` with an episode, and its id as the server lists it.
async fn agent(server: &ServerHandle, episode: &str) -> (Socket, String) {
    let mut ws = connect_with_token(&format!("ws://{}/ws", server.addr), TOKEN).await;
    let reset = request(
        &mut ws,
        json!({"type": "reset", "data": {"start_url": "https://example.com/", "episode_id": episode}}),
    )
    .await;
    assert_eq!(reset["type"], "observation", "{reset}");
    let (_, sessions, _) = get(server, "/sessions?local=true").await;
    let id = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["episode_id"] == episode)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    (ws, id)
}

async fn get(server: &ServerHandle, path: &str) -> (u16, Value, Option<String>) {
    let response = reqwest::Client::new()
        .get(format!("{}{path}", server.base_url()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let unreachable = response
        .headers()
        .get("browserenv-replicas-unreachable")
        .map(|v| v.to_str().unwrap().to_string());
    (status, response.json().await.unwrap(), unreachable)
}

#[tokio::test]
async fn every_replica_lists_every_session_and_reaches_each_one() {
    let servers = replicas(3, &[]).await;
    let mut agents = Vec::new();
    for (n, server) in servers.iter().enumerate() {
        agents.push(agent(server, &format!("episode-{n}")).await);
    }
    for (n, server) in servers.iter().enumerate() {
        let (status, listed, unreachable) = get(server, "/sessions").await;
        assert_eq!((status, unreachable), (200, None));
        let listed = listed.as_array().unwrap();
        assert_eq!(
            listed.len(),
            3,
            "replica {n} lists every session: {listed:?}"
        );
        for (owner, other) in servers.iter().enumerate() {
            let id = &agents[owner].1;
            let entry = listed.iter().find(|s| s["id"] == id.as_str()).unwrap();
            assert_eq!(
                entry["replica"],
                format!("http://{}", other.addr),
                "{entry}"
            );
        }
        // Each replica alone still lists only its own.
        let (_, local, _) = get(server, "/sessions?local=true").await;
        assert_eq!(local.as_array().unwrap().len(), 1);
    }
    let (_, all, _) = get(&servers[0], "/replicas").await;
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all.iter().filter(|r| r["self"] == true).count(), 1);
    assert!(all
        .iter()
        .all(|r| r["status"] == "ready" && r["active_sessions"] == 1));

    // The session of replica 2, asked of replica 0: its info and its text come from its owner.
    let far = &agents[2].1;
    let (status, info, _) = get(&servers[0], &format!("/sessions/{far}")).await;
    assert_eq!(
        (status, info["episode_id"].as_str()),
        (200, Some("episode-2"))
    );
    let (status, text, _) = get(&servers[0], &format!("/sessions/{far}/text")).await;
    assert_eq!(
        (status, text["session"].as_str()),
        (200, Some(far.as_str())),
        "{text}"
    );
    let (status, missing, _) = get(&servers[0], "/sessions/nobody").await;
    assert_eq!(
        (status, missing["code"].as_str()),
        (404, Some("SESSION_NOT_FOUND"))
    );

    // Watched through replica 0: the newest event, then a hand-off to a person and back.
    let mut watcher = connect_with_token(
        &format!("ws://{}/sessions/{far}/watch", servers[0].addr),
        TOKEN,
    )
    .await;
    let first = next_json(&mut watcher).await;
    assert_eq!(
        (
            first["data"]["kind"].as_str(),
            first["data"]["episode_id"].as_str()
        ),
        (Some("reset"), Some("episode-2"))
    );
    let taken = reply_to(
        &mut watcher,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    assert_eq!(taken["data"]["control"], "human", "{taken}");
    let (_, info, _) = get(&servers[1], &format!("/sessions/{far}")).await;
    assert_eq!(info["human"], "ana");
    watcher
        .send(Message::text(
            json!({"type": "step", "data": {"op": "scroll", "dy": 100}}).to_string(),
        ))
        .await
        .unwrap();
    // The event of the person's step reaches the watcher too; the answer is the observation.
    let mut answered = None;
    for _ in 0..4 {
        let frame = next_json(&mut watcher).await;
        if frame["type"] == "observation" {
            answered = Some(frame);
            break;
        }
    }
    assert_eq!(
        answered.expect("the step's answer")["data"]["observation"]["metadata"]["step"],
        1
    );
    let released = reply_to(&mut watcher, json!({"type": "release"})).await;
    assert_eq!(released["data"]["control"], "agent", "{released}");
    // The agent's next observation lists the person's step.
    let (socket_2, _) = &mut agents[2];
    let stepped = request(socket_2, json!({"type": "step", "data": {"op": "wait"}})).await;
    let human = &stepped["data"]["observation"]["metadata"]["human_steps"];
    assert_eq!(human[0]["action"]["op"], "scroll", "{stepped}");

    drop(watcher);
    for server in servers {
        server.stop().await.unwrap();
    }
}

#[tokio::test]
async fn a_replica_that_does_not_answer_is_reported_and_the_rest_served() {
    // An address nobody listens on any more.
    let gone = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let servers = replicas(2, std::slice::from_ref(&gone)).await;
    let (_ws, id) = agent(&servers[1], "here").await;
    let (status, listed, unreachable) = get(&servers[0], "/sessions").await;
    assert_eq!(status, 200);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(unreachable.as_deref(), Some(gone.as_str()));
    let (_, all, _) = get(&servers[0], "/replicas").await;
    let down = all
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["url"] == gone.as_str())
        .unwrap()
        .clone();
    assert_eq!(down["status"], "unreachable");
    assert!(down["error"].as_str().unwrap().len() > 3, "{down}");
    // The session on the other replica is reached all the same.
    let (status, _, _) = get(&servers[0], &format!("/sessions/{id}")).await;
    assert_eq!(status, 200);

    // Its owner stops: a watcher relayed to it is told, and the session is no longer found.
    let mut watcher = connect_with_token(
        &format!("ws://{}/sessions/{id}/watch", servers[0].addr),
        TOKEN,
    )
    .await;
    next_json(&mut watcher).await;
    let mut servers = servers;
    servers.pop().unwrap().stop().await.unwrap();
    let mut ended = None;
    for _ in 0..3 {
        let frame = next_json(&mut watcher).await;
        if frame.get("closed").is_some() {
            ended = Some(frame);
            break;
        }
    }
    assert!(ended.is_some(), "the relayed watcher was closed");
    let (status, _, _) = get(&servers[0], &format!("/sessions/{id}")).await;
    assert_eq!(status, 404);
    servers.pop().unwrap().stop().await.unwrap();
}

#[tokio::test]
async fn peer_calls_need_the_token() {
    let servers = replicas(1, &[]).await;
    let response = reqwest::get(format!("{}/replica", servers[0].base_url()))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let response = reqwest::get(format!("{}/ready", servers[0].base_url()))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "readiness needs no token");
    for server in servers {
        server.stop().await.unwrap();
    }
}

#[tokio::test]
async fn an_openenv_mcp_session_is_reached_through_any_replica() {
    let servers = replicas(3, &[]).await;
    // OpenEnv's MCPToolClient: the session is made on one replica, named in the body afterwards.
    let created = mcp_call(
        &servers[0].base_url(),
        Some(TOKEN),
        json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}),
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
        &servers[1].base_url(),
        Some(TOKEN),
        call("reset", json!({"start_url": "https://example.com/"})),
    )
    .await;
    assert_eq!(
        reset["result"]["data"]["url"], "https://example.com/",
        "{reset}"
    );
    let scrolled = mcp_call(
        &servers[2].base_url(),
        Some(TOKEN),
        call("scroll", json!({"dy": 200})),
    )
    .await;
    assert_eq!(scrolled["result"]["data"]["step"], 1, "{scrolled}");
    // A WebSocket attached to it through another replica drives the same episode.
    let mut attached = connect_with_token(
        &format!("ws://{}/ws?session_id={id}", servers[2].addr),
        TOKEN,
    )
    .await;
    let state = request(&mut attached, json!({"type": "state"})).await;
    assert_eq!(state["data"]["step_count"], 1, "{state}");
    drop(attached);
    let unknown = mcp_call(
        &servers[1].base_url(),
        Some(TOKEN),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"session_id": "mcp-nobody", "name": "wait"}}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    for server in servers {
        server.stop().await.unwrap();
    }
}

/// A peer that is not what it should be: it claims every session, then never answers on the
/// watch socket (a frozen replica), and answers `/replica` with far more than any replica would.
/// (A stand-in, not the server's routes: the lint that keeps those documented does not apply.)
#[allow(clippy::disallowed_methods)]
async fn bad_peer() -> String {
    use axum::extract::{Path, WebSocketUpgrade};
    use axum::routing::get;
    let app = axum::Router::new()
        .route(
            "/sessions/{id}",
            get(|Path(id): Path<String>| async move { axum::Json(json!({"id": id})) }),
        )
        .route(
            "/sessions/{id}/watch",
            get(|upgrade: WebSocketUpgrade| async move {
                upgrade.on_upgrade(|socket| async move {
                    // Frozen: never reads, so never answers a ping.
                    tokio::time::sleep(Duration::from_secs(120)).await;
                    drop(socket);
                })
            }),
        )
        .route("/replica", get(|| async { "x".repeat(16 * 1024 * 1024) }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn a_peer_that_floods_or_freezes_is_cut_off() {
    let bad = bad_peer().await;
    let quick = PeerTimeouts {
        ping_interval: Duration::from_millis(500),
        ping_timeout: Duration::from_millis(500),
        ..PeerTimeouts::default()
    };
    let servers = replicas_with(1, std::slice::from_ref(&bad), quick).await;
    // Its flood of an answer is not read past the limit: it counts as not answering.
    let (status, _, unreachable) = get(&servers[0], "/sessions").await;
    assert_eq!((status, unreachable.as_deref()), (200, Some(bad.as_str())));
    let (_, all, _) = get(&servers[0], "/replicas").await;
    let flooded = all
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["url"] == bad.as_str())
        .unwrap()
        .clone();
    assert!(
        flooded["error"].as_str().unwrap().contains("larger than"),
        "{flooded}"
    );

    // A watcher relayed to it hears that it stopped answering, within the ping bounds.
    let id = "67e55044-10b1-426f-9247-bb680e5fe0c8";
    let mut watcher = connect_with_token(
        &format!("ws://{}/sessions/{id}/watch", servers[0].addr),
        TOKEN,
    )
    .await;
    let started = std::time::Instant::now();
    let told = next_json(&mut watcher).await;
    assert_eq!(told["data"]["reason"], "REPLICA_GONE", "{told}");
    assert!(started.elapsed() < Duration::from_secs(5));
    for server in servers {
        server.stop().await.unwrap();
    }
}

/// A request written as is (no client normalizes its path): the status line's code.
async fn raw_status(server: &ServerHandle, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer.split(' ').nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn only_session_ids_are_looked_for_on_peers() {
    let servers = replicas(2, &[]).await;
    let (_ws, _id) = agent(&servers[1], "there").await;
    // `..` would climb out of the session's path on the peer, and list its sessions.
    for path in [
        "/sessions/%2E%2E",
        "/sessions/%2E",
        "/sessions/%2e%2e/text",
        "/sessions/nobody",
    ] {
        assert_eq!(raw_status(&servers[0], path).await, 404, "{path}");
    }
    for server in servers {
        server.stop().await.unwrap();
    }
}

/// OpenEnv's `session/create` on `server`, reset: the session's id.
async fn openenv_session(server: &ServerHandle) -> String {
    let created = mcp_call(
        &server.base_url(),
        Some(TOKEN),
        json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}),
    )
    .await;
    let id = created["result"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let reset = mcp_call(
        &server.base_url(),
        Some(TOKEN),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"session_id": id,
            "name": "reset", "arguments": {"start_url": "https://example.com/"}}}),
    )
    .await;
    assert!(reset["error"].is_null(), "{reset}");
    id
}

fn wait_call(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"session_id": id, "name": "wait", "arguments": {}}})
}

/// Sixty relayed `wait` calls (3 s each on the owner) for one session on B, sent to A at once:
/// one is carried, the others hear "busy" within the relay's wait, and meanwhile A lists every
/// session within a second and carries another session's call.
#[tokio::test]
async fn a_flood_of_relayed_calls_is_turned_away_and_starves_nothing() {
    let servers = replicas(2, &[]).await;
    let flooded = openenv_session(&servers[1]).await;
    let other = openenv_session(&servers[1]).await;
    let a = std::sync::Arc::new(servers.into_iter().collect::<Vec<_>>());
    let mut flood = Vec::new();
    for _ in 0..60 {
        let (a, id) = (a.clone(), flooded.clone());
        flood.push(tokio::spawn(async move {
            let started = std::time::Instant::now();
            (
                mcp_call(&a[0].base_url(), Some(TOKEN), wait_call(&id)).await,
                started.elapsed(),
            )
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let (status, listed, unreachable) = get(&a[0], "/sessions").await;
    let listing = started.elapsed();
    assert_eq!(status, 200);
    assert!(unreachable.is_none(), "{unreachable:?}");
    assert!(
        listing < Duration::from_secs(1),
        "/sessions took {listing:?} during the flood"
    );
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    // Another session's call is carried meanwhile.
    let carried = mcp_call(&a[0].base_url(), Some(TOKEN), wait_call(&other)).await;
    assert!(carried["error"].is_null(), "{carried}");
    let mut busy = 0;
    let mut done = 0;
    for call in flood {
        let (answer, took) = call.await.unwrap();
        if answer["error"].is_null() {
            done += 1;
        } else {
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("in flight"), "{answer}");
            assert!(took < Duration::from_secs(5), "busy after {took:?}");
            busy += 1;
        }
    }
    assert!(done >= 1 && busy >= 50, "{done} carried, {busy} busy");
    for server in std::sync::Arc::try_unwrap(a).ok().unwrap() {
        server.stop().await.unwrap();
    }
}

/// What a stand-in peer was asked: each request's method, path, `Host`, `Authorization` and
/// signature headers.
type Asked =
    std::sync::Arc<std::sync::Mutex<Vec<(String, String, String, Option<String>, Option<String>)>>>;

/// A stand-in peer that claims every session and answers a carried call with a redirect to
/// `trap`; every request it gets is noted in `asked`.
#[allow(clippy::disallowed_methods)]
async fn redirecting_peer(trap: String, asked: Asked) -> String {
    use axum::extract::Request;
    let app = axum::Router::new().fallback(move |request: Request| {
        let (trap, asked) = (trap.clone(), asked.clone());
        async move {
            let header = |name: &str| {
                request
                    .headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_string())
            };
            asked.lock().unwrap().push((
                request.method().to_string(),
                request.uri().to_string(),
                header("host").unwrap_or_default(),
                header("authorization"),
                header("browserenv-peer-signature"),
            ));
            let path = request.uri().path().to_string();
            if let Some(id) = path.strip_prefix("/sessions/") {
                return axum::Json(json!({"id": id})).into_response();
            }
            if path == "/mcp" {
                return (
                    axum::http::StatusCode::TEMPORARY_REDIRECT,
                    [("location", format!("{trap}/steal"))],
                )
                    .into_response();
            }
            axum::Json(json!({"id": "stand-in", "sessions": []})).into_response()
        }
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

use axum::response::IntoResponse;

#[path = "../../tests/src/socket.rs"]
mod socket;
use socket::*;

/// A replica signs what it asks its peers (the token never leaves it), follows no redirect, and
/// a signature is good once, for the replica and request it was made for.
#[tokio::test]
async fn peer_requests_are_signed_never_carry_the_token_and_follow_no_redirect() {
    let trap_asked: Asked = Default::default();
    let trap = redirecting_peer("http://127.0.0.1:9".into(), trap_asked.clone()).await;
    let asked: Asked = Default::default();
    let peer = redirecting_peer(trap.clone(), asked.clone()).await;
    let servers = replicas(2, std::slice::from_ref(&peer)).await;
    // A call for a session the stand-in claims: carried there, its redirect not followed.
    let id = format!("mcp-{}", uuid::Uuid::new_v4());
    let answer = mcp_call(&servers[0].base_url(), Some(TOKEN), wait_call(&id)).await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("redirect"),
        "{answer}"
    );
    assert!(
        trap_asked.lock().unwrap().is_empty(),
        "the redirect was followed"
    );
    let seen = asked.lock().unwrap().clone();
    assert!(seen
        .iter()
        .any(|(method, path, ..)| method == "POST" && path == "/mcp?local=true"));
    for (method, path, _, authorization, signature) in &seen {
        assert_eq!(authorization, &None, "{method} {path} carried the token");
        assert!(signature.is_some(), "{method} {path} was not signed");
    }
    // The stand-in replays a signed lookup to a real replica: refused, for another address.
    let (_, path, host, _, signature) = seen
        .iter()
        .find(|(method, ..)| method == "GET")
        .cloned()
        .unwrap();
    let replayed = reqwest::Client::new()
        .get(format!("{}{path}", servers[1].base_url()))
        .header("browserenv-peer-signature", signature.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(replayed.status(), 401, "a signature for {host} was taken");
    // Sent as it was made (the same Host, the same headers): still not this replica's address.
    let as_made = reqwest::Client::new()
        .get(format!("{}{path}", servers[1].base_url()))
        .header("host", host.clone())
        .header("accept", "application/json")
        .header("browserenv-peer-signature", signature.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(as_made.status(), 401, "a signature for {host} was taken");
    let refused: Value = as_made.json().await.unwrap();
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("not for this replica"),
        "{refused}"
    );
    for server in servers {
        server.stop().await.unwrap();
    }
}

use browserenv_server::operations::signing;

/// A signature for `host`, as a replica makes it for a `GET` lookup (`Accept: application/json`).
fn signed_lookup(host: &str, path: &str) -> String {
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("accept", "application/json".parse().unwrap());
    signing::sign(
        TOKEN,
        signing::Signed {
            method: "GET",
            host,
            path_and_query: path,
            headers: &headers,
            body: b"",
        },
    )
}

/// A signed request is taken only at the address it was signed for: one captured by whatever
/// took over a departed replica's address (here 127.0.0.2, the same port) and replayed, Host
/// kept, to a live replica (127.0.0.1) within the window is refused; an address the replica is
/// told is its own (`BROWSER_PEER_ADDRESSES`, a published port) is taken.
#[tokio::test]
async fn a_request_signed_for_another_address_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = ServerConfig {
        token: Some(TOKEN.into()),
        ..ServerConfig::default()
    };
    let server = start_on(listener, FakeLauncher::new(FakeScript::default()), config).unwrap();
    let send = |host: String, signature: String| {
        reqwest::Client::new()
            .get(format!("{}/replica?local=true", server.base_url()))
            .header("host", host)
            .header("accept", "application/json")
            .header("browserenv-peer-signature", signature)
            .send()
    };
    let elsewhere = format!("127.0.0.2:{port}");
    let captured = signed_lookup(&elsewhere, "/replica?local=true");
    let refused = send(elsewhere.clone(), captured).await.unwrap();
    assert_eq!(refused.status(), 401);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("not for this replica"),
        "{body}"
    );
    // Signed for the address asked, it is taken.
    let here = format!("127.0.0.1:{port}");
    let taken = send(here.clone(), signed_lookup(&here, "/replica?local=true"))
        .await
        .unwrap();
    assert_eq!(taken.status(), 200);
    server.stop().await.unwrap();

    // Told that the peers reach it at 127.0.0.2 (a published port), it takes that address too.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let published: std::net::SocketAddr = format!("127.0.0.2:{port}").parse().unwrap();
    let config = ServerConfig {
        token: Some(TOKEN.into()),
        peer_addresses: vec![published],
        ..ServerConfig::default()
    };
    let server = start_on(listener, FakeLauncher::new(FakeScript::default()), config).unwrap();
    let taken = reqwest::Client::new()
        .get(format!("{}/replica?local=true", server.base_url()))
        .header("host", published.to_string())
        .header("accept", "application/json")
        .header(
            "browserenv-peer-signature",
            signed_lookup(&published.to_string(), "/replica?local=true"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), 200);
    server.stop().await.unwrap();
}

/// The headers routing reads are signed: `Mcp-Session-Id` added to a signed request on the way
/// (which would make an OpenEnv call a Streamable HTTP one) breaks the signature.
#[tokio::test]
async fn a_header_added_to_a_signed_request_breaks_it() {
    let servers = replicas(1, &[]).await;
    let host = servers[0].addr.to_string();
    let signature = signed_lookup(&host, "/replica?local=true");
    let changed = reqwest::Client::new()
        .get(format!("{}/replica?local=true", servers[0].base_url()))
        .header("accept", "application/json")
        .header("mcp-session-id", "another")
        .header("browserenv-peer-signature", signature)
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 401);
    for server in servers {
        server.stop().await.unwrap();
    }
}

/// Headers (and as much of a body) written to a server; the connection is kept open, the rest of
/// the body never sent.
async fn half_sent(server: &ServerHandle, head: &str, body: &[u8]) -> TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    stream
}

/// The status of the answer on `stream`, which must come within `within`.
async fn status_within(stream: &mut TcpStream, within: Duration) -> u16 {
    use tokio::io::AsyncReadExt;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(within, async {
        let mut buffer = [0u8; 4096];
        while !answer.windows(2).any(|w| w == b"\r\n") {
            let n = stream.read(&mut buffer).await.unwrap();
            assert!(n > 0, "closed without an answer");
            answer.extend_from_slice(&buffer[..n]);
        }
    })
    .await;
    assert!(read.is_ok(), "no answer within {within:?}");
    String::from_utf8_lossy(&answer)
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

/// Anyone can send the signature header, without a credential: its form, its time and the
/// address it names are judged before a byte of the body is waited for, a signed body is kept
/// to `signing::BODY_LIMIT`, and only `signing::BODIES_AT_ONCE` are read at a time.
#[tokio::test]
async fn a_signature_is_judged_before_its_body_and_signed_bodies_are_bounded() {
    let servers = replicas_with(
        1,
        &[],
        PeerTimeouts {
            // The body deadline must not be what answers.
            header_read_timeout: Duration::from_secs(60),
            ..PeerTimeouts::default()
        },
    )
    .await;
    let server = &servers[0];
    let host = server.addr.to_string();
    let head_to = |host: &str, signature: &str, length: usize| {
        format!(
            "POST /mcp?local=true HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             browserenv-peer-signature: {signature}\r\nContent-Length: {length}\r\n\r\n"
        )
    };
    let head = |signature: &str, length: usize| head_to(&host, signature, length);
    let mut json = axum::http::HeaderMap::new();
    json.insert("content-type", "application/json".parse().unwrap());
    let fresh = |host: &str| {
        signing::sign(
            TOKEN,
            signing::Signed {
                method: "POST",
                host,
                path_and_query: "/mcp?local=true",
                headers: &json,
                body: b"{}",
            },
        )
    };
    // Malformed, out of the window, for another address: 401 at once, the body still coming.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let elsewhere = format!("127.0.0.2:{}", server.addr.port());
    for (host, signature) in [
        (&host, "garbage".to_string()),
        (&host, format!("t={},n=abc,s=00", now - 3600)),
        (&elsewhere, fresh(&elsewhere)),
    ] {
        let head = head_to(host, &signature, 30_000_000);
        let mut stream = half_sent(server, &head, b"{\"jsonrpc\"").await;
        assert_eq!(
            status_within(&mut stream, Duration::from_secs(3)).await,
            401,
            "{signature}"
        );
    }
    // Well formed, in time, for this address, but longer than a relayed call: refused unread,
    // whether its length is declared or it is sent in chunks.
    let mut stream = half_sent(server, &head(&fresh(&host), signing::BODY_LIMIT + 1), b"{").await;
    assert_eq!(
        status_within(&mut stream, Duration::from_secs(3)).await,
        413
    );
    let chunked = format!(
        "POST /mcp?local=true HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         browserenv-peer-signature: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
        fresh(&host)
    );
    let chunk = vec![b' '; 256 * 1024];
    let mut body = Vec::new();
    for _ in 0..5 {
        body.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        body.extend_from_slice(&chunk);
        body.extend_from_slice(b"\r\n");
    }
    let mut stream = half_sent(server, &chunked, &body).await;
    assert_eq!(
        status_within(&mut stream, Duration::from_secs(3)).await,
        413
    );
    // Bodies that never end (their signatures real: a peer gone wrong) hold every turn their
    // address may take: the next signed request from it is told so.
    let mut held = Vec::new();
    for _ in 0..signing::BODIES_AT_ONCE {
        held.push(half_sent(server, &head(&fresh(&host), 100), b"{").await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut stream = half_sent(server, &head(&fresh(&host), 2), b"{}").await;
    assert_eq!(
        status_within(&mut stream, Duration::from_secs(3)).await,
        503
    );
    drop(held);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Their turns given back, a signed request is read again (and its signature judged).
    let mut stream = half_sent(server, &head(&fresh(&host), 2), b"{}").await;
    assert_eq!(
        status_within(&mut stream, Duration::from_secs(3)).await,
        200
    );
    for server in servers {
        server.stop().await.unwrap();
    }
}

/// A signature header anyone can make up, in both of the forms a replica has sent: well formed,
/// in time, for this address, its MAC made of zeros.
fn made_up_signatures() -> [String; 2] {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let zeros = "00".repeat(32);
    [
        format!("t={now},n={nonce},s={zeros}"),
        format!("t={now},n={nonce},d={zeros},s={zeros}"),
    ]
}

/// No stranger can starve the replicas: 40 sockets to each replica with a made-up signature
/// header of each form and a body that never comes, held open. Their MACs are judged on the head,
/// so they take none of the turns a peer's body is read in; replica A still lists replica B's
/// session and carries lookups and calls to it.
#[tokio::test]
async fn made_up_peer_signatures_held_open_starve_no_replica() {
    let servers = replicas_with(
        2,
        &[],
        PeerTimeouts {
            // Held open as long as the test runs: the body deadline is not what saves the peers.
            header_read_timeout: Duration::from_secs(60),
            ..PeerTimeouts::default()
        },
    )
    .await;
    let (a, b) = (&servers[0], &servers[1]);
    let (mut agent_b, far) = agent(b, "episode-b").await;
    let mut held = Vec::new();
    let mut refused = 0;
    for server in [a, b] {
        let host = server.addr.to_string();
        for n in 0..80 {
            let signature = &made_up_signatures()[n / 40];
            let head = format!(
                "POST /mcp?local=true HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
                 browserenv-peer-signature: {signature}\r\nContent-Length: 100\r\n\r\n"
            );
            held.push(half_sent(server, &head, b"{").await);
        }
    }
    // Past the wait for a turn (200 ms) a request without one would be turned away.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (status, listed, unreachable) = get(a, "/sessions").await;
    assert_eq!(
        (status, unreachable.as_deref()),
        (200, None),
        "replica A reached B"
    );
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == far.as_str()),
        "A lists B's session: {listed}"
    );
    let (status, info, _) = get(a, &format!("/sessions/{far}")).await;
    assert_eq!(
        (status, info["episode_id"].as_str()),
        (200, Some("episode-b")),
        "a lookup relayed to B: {info}"
    );
    let (status, text, _) = get(a, &format!("/sessions/{far}/text")).await;
    assert_eq!(status, 200, "a call relayed to B: {text}");
    // Each made-up one was answered 401 on its head alone.
    for stream in held.iter_mut().step_by(10) {
        if status_within(stream, Duration::from_secs(3)).await == 401 {
            refused += 1;
        }
    }
    assert_eq!(refused, 16, "every made-up signature sampled was refused");
    let stepped = request(
        &mut agent_b,
        json!({"type": "step", "data": {"op": "wait"}}),
    )
    .await;
    assert_eq!(stepped["type"], "observation");
    drop(held);
    for server in servers {
        server.stop().await.unwrap();
    }
}
