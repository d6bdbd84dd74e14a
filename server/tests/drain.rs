//! Readiness and draining (`drain.rs`) over real sockets, with the fake browser: `/ready` says
//! 503 at capacity and from the moment a drain begins; new sessions are refused with a frame that
//! says why; a running episode goes on until it ends (its last reply and the close come
//! together), or until the drain time is over (then a frame says so); the server then stops by
//! itself. The binary under SIGTERM with real Chromium and a recording: `server/tests/process.rs`.

use std::time::{Duration, Instant};

use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use browserenv_server::fake::{FakeLauncher, FakeScript};
use browserenv_server::settings::EnvSettings;
use browserenv_server::{start, ServerConfig, ServerHandle};

#[path = "../../tests/src/socket.rs"]
mod socket;
use socket::*;

async fn server(max_sessions: usize, drain: Duration) -> ServerHandle {
    let config = ServerConfig {
        settings: EnvSettings {
            action_wait: Duration::from_millis(10),
            ..EnvSettings::default()
        },
        max_sessions,
        drain,
        ..ServerConfig::default()
    };
    start(FakeLauncher::new(FakeScript::default()), config)
        .await
        .unwrap()
}

async fn reset(socket: &mut Socket) {
    let reply = request(
        socket,
        json!({"type": "reset", "data": {"start_url": "https://example.com/"}}),
    )
    .await;
    assert_eq!(reply["type"], "observation", "{reply}");
}

async fn ready(server: &ServerHandle) -> (u16, String) {
    let response = reqwest::get(format!("{}/ready", server.base_url()))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body["status"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn readiness_is_off_while_every_slot_is_taken() {
    let server = server(1, Duration::from_secs(5)).await;
    assert_eq!(ready(&server).await, (200, "ready".into()));
    let mut only = connect(server.addr).await;
    reset(&mut only).await;
    assert_eq!(ready(&server).await, (503, "at_capacity".into()));
    only.send(Message::text(r#"{"type":"close"}"#))
        .await
        .unwrap();
    assert_eq!(next_json(&mut only).await["closed"], 1000);
    // The slot is given back as the session closes.
    let deadline = Instant::now() + Duration::from_secs(5);
    while ready(&server).await.0 != 200 {
        assert!(Instant::now() < deadline, "readiness did not come back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_drain_lets_the_running_episode_end_and_refuses_new_work() {
    let drain = Duration::from_secs(20);
    let server = server(4, drain).await;
    let mut running = connect(server.addr).await;
    reset(&mut running).await;
    let mut idle = connect(server.addr).await;
    // The idle session has its socket but no episode yet.
    assert_eq!(
        request(&mut idle, json!({"type": "state"})).await["type"],
        "state"
    );
    let started = Instant::now();
    server.drain();

    // At once: not ready, the idle session closed (no error: its client reconnects elsewhere),
    // a new session refused with the reason.
    let deadline = Instant::now() + Duration::from_secs(5);
    while ready(&server).await != (503, "draining".into()) {
        assert!(Instant::now() < deadline, "readiness stayed on");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let closed = next_json(&mut idle).await;
    assert_eq!(closed["closed"], 1001, "{closed}");
    assert!(closed["reason"].as_str().unwrap().contains("draining"));
    let mut late = connect(server.addr).await;
    let refused = next_json(&mut late).await;
    assert_eq!(refused["data"]["code"], "CAPACITY_REACHED", "{refused}");
    assert_eq!(refused["data"]["reason"], "DRAINING");
    let http = reqwest::Client::new()
        .post(format!("{}/reset", server.base_url()))
        .json(&json!({"start_url": "https://example.com/"}))
        .send()
        .await
        .unwrap();
    assert_eq!(http.status().as_u16(), 503);
    assert_eq!(http.json::<Value>().await.unwrap()["reason"], "DRAINING");

    // The running episode goes on, and its last reply comes with the close.
    let step = request(
        &mut running,
        json!({"type": "step", "data": {"op": "scroll", "dy": 100}}),
    )
    .await;
    assert_eq!(step["data"]["done"], false, "{step}");
    let last = request(
        &mut running,
        json!({"type": "step", "data": {"op": "finish"}}),
    )
    .await;
    assert_eq!(last["data"]["done"], true, "{last}");
    assert_eq!(next_json(&mut running).await["closed"], 1001);

    // No session left: the server stops well before the drain time is over.
    tokio::time::timeout(drain, server.finished())
        .await
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < drain);
}

#[tokio::test]
async fn an_episode_still_running_when_the_drain_time_is_over_is_ended_with_a_frame() {
    let server = server(2, Duration::from_millis(500)).await;
    let mut running = connect(server.addr).await;
    reset(&mut running).await;
    // A reset during the drain is refused: no new episode starts.
    server.drain();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let refused = request(
        &mut running,
        json!({"type": "reset", "data": {"start_url": "https://example.com/"}}),
    )
    .await;
    assert_eq!(refused["data"]["code"], "EXECUTION_ERROR", "{refused}");
    assert!(refused["data"]["message"]
        .as_str()
        .unwrap()
        .contains("draining"));
    // The episode is still the old one, and still running: the drain time ends it.
    let ended = next_json(&mut running).await;
    assert_eq!(ended["data"]["code"], "SESSION_ERROR", "{ended}");
    assert_eq!(ended["data"]["reason"], "SERVER_SHUTDOWN");
    assert_eq!(next_json(&mut running).await["closed"], 1001);
    tokio::time::timeout(Duration::from_secs(15), server.finished())
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_drain_of_an_idle_server_stops_at_once() {
    let server = server(2, Duration::from_secs(60)).await;
    let started = Instant::now();
    server.drain();
    tokio::time::timeout(Duration::from_secs(10), server.finished())
        .await
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A connection that sends `head` and then one byte a second, until dropped.
fn trickle(server: &ServerHandle, head: String) -> tokio::task::JoinHandle<()> {
    let addr = server.addr;
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let Ok(mut stream) = TcpStream::connect(addr).await else {
            return;
        };
        if stream.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for _ in 0..600 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if stream.write_all(b" ").await.is_err() {
                return;
            }
        }
    })
}

#[tokio::test]
async fn trickling_clients_cannot_hold_a_draining_server() {
    let drain = Duration::from_millis(500);
    let server = server(2, drain).await;
    // An episode on the HTTP session, still running when the drain time is over.
    let reset = reqwest::Client::new()
        .post(format!("{}/reset", server.base_url()))
        .json(&json!({"start_url": "https://example.com/"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status().as_u16(), 200);
    // A request whose body never ends, and one whose headers never end.
    let body = trickle(
        &server,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: 100000\r\n\r\n{"
            .into(),
    );
    let headers = trickle(
        &server,
        "GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n".into(),
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    server.drain();
    // The drain time, the grace for requests in flight, and a margin to close the rest.
    let bound =
        drain + browserenv_server::operations::connection::SHUTDOWN_GRACE + Duration::from_secs(3);
    tokio::time::timeout(bound, server.finished())
        .await
        .expect("the trickling clients held the server")
        .unwrap();
    assert!(started.elapsed() < bound);
    body.abort();
    headers.abort();
}

#[tokio::test]
async fn asked_again_a_draining_server_stops_at_once() {
    let server = server(2, Duration::from_secs(60)).await;
    let mut running = connect(server.addr).await;
    reset(&mut running).await;
    let body = trickle(
        &server,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 100000\r\n\r\n{".into(),
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.drain();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    // No grace on a second request: the episode and the trickling request are cut now.
    tokio::time::timeout(Duration::from_secs(5), server.stop())
        .await
        .expect("a second stop waited")
        .unwrap();
    assert!(started.elapsed() < browserenv_server::operations::connection::SHUTDOWN_GRACE);
    let ended = next_json(&mut running).await;
    assert_eq!(ended["data"]["reason"], "SERVER_SHUTDOWN", "{ended}");
    body.abort();
}
