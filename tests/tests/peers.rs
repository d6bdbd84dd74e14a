//! Peers that hold on without doing anything, on real Chromium: a silent WebSocket session, an
//! HTTP session nobody uses any more, a peer that stops reading. Each is let go after its bound:
//! its browser closed (the page's held request to the test drops), its slot free for the next
//! session, its registry entry gone, and the sessions that do work are not disturbed.

use std::time::{Duration, Instant};

use browserenv::{BrowserAction, Client};
use browserenv_server::settings::{EnvSettings, PeerTimeouts};
use browserenv_server::ServerConfig;
use browserenv_tests::socket::*;
use browserenv_tests::{test_settings, Harness, Hold, Tether};
use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio::net::TcpSocket;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::MaybeTlsStream;

/// Long enough for every step these tests take.
fn settings() -> EnvSettings {
    EnvSettings {
        max_steps: 200,
        ..test_settings()
    }
}

async fn harness(max_sessions: usize, timeouts: PeerTimeouts) -> Harness {
    Harness::start_with(ServerConfig {
        settings: settings(),
        max_sessions,
        timeouts,
        ..ServerConfig::default()
    })
    .await
}

fn reset_to(url: &str) -> Value {
    json!({"type": "reset", "data": {"start_url": url}})
}

async fn sessions(harness: &Harness) -> Vec<Value> {
    reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A session reset to `page` as soon as a slot is free (a freed slot is given back a moment after
/// the browser closes).
async fn open_when_free(harness: &Harness, page: &str) -> Client {
    for _ in 0..50 {
        let mut client = harness.client().await;
        match client
            .reset(browserenv::ResetOptions::new(harness.page(page)))
            .await
        {
            Ok(_) => return client,
            Err(err) => assert!(err.to_string().contains("CAPACITY_REACHED"), "{err}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no slot came free");
}

/// Step `wait` again and again; a failed step fails the test.
async fn keep_stepping(client: &mut Client) {
    loop {
        client
            .step(BrowserAction::wait())
            .await
            .expect("the active session is served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_silent_session_is_ended_and_its_slot_reused_while_an_active_one_goes_on() {
    let timeout = Duration::from_secs(3);
    let harness = harness(
        2,
        PeerTimeouts {
            session_timeout: Some(timeout),
            ..PeerTimeouts::default()
        },
    )
    .await;
    let (mut active, _) = harness.open("form.html").await;
    let tether = Tether::start().await;
    // The active session steps all along, from before the silent one starts until the end.
    let checks = async {
        let mut silent = connect(harness.server.addr).await;
        let first = request(&mut silent, reset_to(&tether.url())).await;
        assert_eq!(first["type"], "observation", "{first}");
        let quiet = Instant::now();
        assert!(
            tether.held(Duration::from_secs(10)).await,
            "the page did not call"
        );
        // Both slots are taken.
        let mut third = connect(harness.server.addr).await;
        let refused = next_json(&mut third).await;
        assert_eq!(refused["data"]["code"], "CAPACITY_REACHED", "{refused}");

        // The silent one is told why it ends.
        let told = next_json(&mut silent).await;
        let took = quiet.elapsed();
        // The server's clock starts when it has written the answer, a moment before this side
        // has read it (longer on a loaded machine).
        assert!(
            took >= timeout - Duration::from_millis(500),
            "ended after {took:?}"
        );
        assert_eq!(told["data"]["code"], "SESSION_ERROR", "{told}");
        assert_eq!(told["data"]["reason"], "SESSION_TIMEOUT");
        assert!(told["data"]["message"]
            .as_str()
            .unwrap()
            .contains("BROWSER_SESSION_TIMEOUT_SECONDS"));
        // Its next request gets no other answer, then the close.
        silent
            .send(Message::text(json!({"type": "state"}).to_string()))
            .await
            .unwrap();
        assert_eq!(
            close_frame(&mut silent).await,
            Some((CloseCode::Normal, "session timeout".into()))
        );
        assert!(
            tether.released(Duration::from_secs(10)).await,
            "the silent session's browser still runs"
        );
        let listed = sessions(&harness).await;
        assert!(
            listed.iter().all(|s| s["url"] != tether.url().as_str()),
            "{listed:?}"
        );
        assert_eq!(listed.len(), 1, "{listed:?}");

        // Its slot serves a new session.
        let mut next = open_when_free(&harness, "form.html").await;
        next.step(BrowserAction::wait()).await.unwrap();
        assert_eq!(sessions(&harness).await.len(), 2);
    };
    tokio::time::timeout(Duration::from_secs(60), async {
        tokio::select! {
            () = checks => {}
            () = keep_stepping(&mut active) => unreachable!(),
        }
    })
    .await
    .expect("the silent session is ended within the bound");
    // The active one never noticed.
    active.step(BrowserAction::wait()).await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn the_http_session_is_released_after_the_same_idle_time() {
    let timeout = Duration::from_secs(2);
    let harness = harness(
        1,
        PeerTimeouts {
            session_timeout: Some(timeout),
            ..PeerTimeouts::default()
        },
    )
    .await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", harness.server.base_url());
    let tether = Tether::start().await;
    let reset = http
        .post(url("/reset"))
        .json(&json!({"start_url": tether.url()}))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 200);
    assert!(
        tether.held(Duration::from_secs(10)).await,
        "the page did not call"
    );

    // Used more often than the timeout, it stays (3 s in all, longer than the timeout).
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(http.get(url("/state")).send().await.unwrap().status(), 200);
    }
    assert_eq!(tether.state(), Hold::Held);
    // It holds the only slot.
    let mut refused = connect(harness.server.addr).await;
    assert_eq!(
        next_json(&mut refused).await["data"]["code"],
        "CAPACITY_REACHED"
    );

    // Then nobody uses it: its browser is closed and it leaves the registry.
    let quiet = Instant::now();
    assert!(
        tether.released(Duration::from_secs(15)).await,
        "the idle HTTP session's browser still runs"
    );
    let took = quiet.elapsed();
    assert!(
        took >= timeout - Duration::from_millis(100),
        "released after {took:?}"
    );
    let listed = sessions(&harness).await;
    assert!(listed.is_empty(), "{listed:?}");

    // Its slot is free: a WebSocket session takes it and leaves.
    let client = open_when_free(&harness, "form.html").await;
    client.close().await.unwrap();

    // A step says why there is no episode; the next reset starts a new HTTP session.
    let step = json!({"action": {"op": "wait"}});
    let stale = http.post(url("/step")).json(&step).send().await.unwrap();
    assert_eq!(stale.status(), 400);
    let body: Value = stale.json().await.unwrap();
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.starts_with("reset before stepping"), "{detail}");
    assert!(
        detail.contains("BROWSER_SESSION_TIMEOUT_SECONDS"),
        "{detail}"
    );
    let mut status = 0;
    for _ in 0..50 {
        let again = http
            .post(url("/reset"))
            .json(&json!({"start_url": harness.page("form.html")}))
            .send()
            .await
            .unwrap();
        status = again.status().as_u16();
        if status != 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200);
    let stepped = http.post(url("/step")).json(&step).send().await.unwrap();
    assert_eq!(stepped.status(), 200);
    assert_eq!(sessions(&harness).await.len(), 1);
    harness.stop().await;
}

#[tokio::test]
async fn a_peer_that_stops_reading_is_dropped_and_holds_up_nobody() {
    // No session timeout and no pings in time: only the write deadline can let this peer go.
    let harness = harness(
        2,
        PeerTimeouts {
            session_timeout: None,
            ping_interval: Duration::from_secs(3600),
            ping_timeout: Duration::from_secs(1),
            ..PeerTimeouts::default()
        },
    )
    .await;
    let (mut active, _) = harness.open("form.html").await;
    let tether = Tether::start().await;
    let socket = TcpSocket::new_v4().unwrap();
    // A small receive buffer fills after a few answers.
    socket.set_recv_buffer_size(8 * 1024).unwrap();
    let stream = socket.connect(harness.server.addr).await.unwrap();
    let ws_url = format!("ws://{}/ws", harness.server.addr);
    let (mut stalled, _) = tokio_tungstenite::client_async(ws_url, MaybeTlsStream::Plain(stream))
        .await
        .unwrap();
    let first = request(&mut stalled, reset_to(&tether.url())).await;
    assert_eq!(first["type"], "observation", "{first}");
    assert!(
        tether.held(Duration::from_secs(10)).await,
        "the page did not call"
    );

    // Requests whose answers are big (a validation error echoes its 1 MiB input), never read.
    let flood = tokio::spawn(async move {
        let padded = json!({"type": "state", "pad": "x".repeat(1024 * 1024)}).to_string();
        for _ in 0..64 {
            if stalled.send(Message::text(padded.clone())).await.is_err() {
                break;
            }
        }
        stalled
    });
    let started = Instant::now();
    let released = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::select! {
            released = tether.released(Duration::from_secs(3600)) => released,
            () = keep_stepping(&mut active) => unreachable!(),
        }
    })
    .await;
    assert_eq!(
        released,
        Ok(true),
        "the browser of a peer that stopped reading still runs after {:?}",
        started.elapsed()
    );
    flood.abort();
    let listed = sessions(&harness).await;
    assert!(
        listed.iter().all(|s| s["url"] != tether.url().as_str()),
        "{listed:?}"
    );
    let mut next = open_when_free(&harness, "form.html").await;
    next.step(BrowserAction::wait()).await.unwrap();
    active.step(BrowserAction::wait()).await.unwrap();
    harness.stop().await;
}
