//! The bounds on what a peer can hold, over real sockets with the fake browser: the connection
//! cap, the header read timeout, the reader's small queue, pings, and the session timeout's clock.
//! The same bounds with real Chromium (browsers closed, slots reused, other sessions untouched)
//! are in `tests/tests/peers.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::MaybeTlsStream;

use browserenv_server::fake::{FakeLauncher, FakeScript};
use browserenv_server::settings::{EnvSettings, PeerTimeouts};
use browserenv_server::{start, ServerConfig, ServerHandle};

#[path = "../../tests/src/socket.rs"]
mod socket;
use socket::*;

async fn server(config: ServerConfig) -> ServerHandle {
    start(FakeLauncher::new(FakeScript::default()), config)
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

/// One HTTP/1.1 request on a kept-alive connection: the status and the JSON body.
async fn get(stream: &mut TcpStream, path: &str) -> (u16, Value) {
    let head = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    read_response(stream).await.expect("a response")
}

/// A response with a `content-length` body, or None if the connection closed first.
async fn read_response(stream: &mut TcpStream) -> Option<(u16, Value)> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |n| n.trim().parse().unwrap());
            if bytes.len() >= end + 4 + length {
                let status = head[9..12].parse().unwrap();
                let body = serde_json::from_slice(&bytes[end + 4..end + 4 + length])
                    .unwrap_or(Value::Null);
                return Some((status, body));
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Whether the server closes `stream` within `bound` (reads until EOF or a reset).
async fn closed_within(stream: &mut TcpStream, bound: Duration) -> bool {
    let mut chunk = [0u8; 1024];
    tokio::time::timeout(bound, async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await
    .is_ok()
}

/// A flood of silent connections past the cap, more than the old 32 refusals at once: `/health`
/// still answers, so an orchestrator does not restart the server for the flood.
#[tokio::test]
async fn health_answers_through_a_flood_of_silent_connections_over_the_cap() {
    let server = server(ServerConfig {
        settings: quick(),
        max_connections: 2,
        timeouts: PeerTimeouts {
            header_read_timeout: Duration::from_secs(60),
            ..PeerTimeouts::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let _held: Vec<TcpStream> =
        futures_util::future::join_all((0..2).map(|_| TcpStream::connect(server.addr)))
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
    let mut flood = Vec::new();
    for _ in 0..browserenv_server::operations::connection::REFUSALS_AT_ONCE / 2 {
        flood.push(TcpStream::connect(server.addr).await.unwrap());
    }
    let mut probe = TcpStream::connect(server.addr).await.unwrap();
    let alive = tokio::time::timeout(Duration::from_secs(5), get(&mut probe, "/health"))
        .await
        .expect("the answer comes");
    assert_eq!(alive, (200, json!({"status": "healthy"})));
    drop(flood);
}

#[tokio::test]
async fn a_connection_over_the_cap_gets_503_and_the_open_ones_keep_working() {
    let server = server(ServerConfig {
        settings: quick(),
        max_connections: 3,
        // The kept-alive connections below must stay open for the whole test.
        timeouts: PeerTimeouts {
            header_read_timeout: Duration::from_secs(60),
            ..PeerTimeouts::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut first = TcpStream::connect(server.addr).await.unwrap();
    let mut second = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(get(&mut first, "/health").await.0, 200);
    assert_eq!(get(&mut second, "/health").await.0, 200);
    // A WebSocket session holds its connection's place for as long as it is open.
    let mut session = connect(server.addr).await;
    assert_eq!(
        request(&mut session, json!({"type": "state"})).await["type"],
        "state"
    );

    let started = Instant::now();
    // Liveness still answers over the cap: the server is alive.
    let mut probe = TcpStream::connect(server.addr).await.unwrap();
    let alive = tokio::time::timeout(Duration::from_secs(5), get(&mut probe, "/health"))
        .await
        .expect("the answer comes promptly");
    assert_eq!(alive, (200, json!({"status": "healthy"})));
    let mut over = TcpStream::connect(server.addr).await.unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(5), get(&mut over, "/metadata"))
        .await
        .expect("the refusal comes promptly");
    assert_eq!(refused.0, 503, "{refused:?}");
    assert_eq!(refused.1["code"], "TOO_MANY_CONNECTIONS");
    assert!(refused.1["detail"]
        .as_str()
        .unwrap()
        .contains("BROWSER_MAX_CONNECTIONS"));
    assert!(closed_within(&mut over, Duration::from_secs(5)).await);
    assert!(started.elapsed() < Duration::from_secs(5));
    // A WebSocket client over the cap gets the same answer instead of an upgrade.
    let url = format!("ws://{}/ws", server.addr);
    let err = tokio_tungstenite::connect_async(url.as_str())
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("503"), "{err}");

    // The open ones were not touched.
    assert_eq!(get(&mut first, "/health").await.0, 200);
    assert_eq!(get(&mut second, "/health").await.0, 200);
    assert_eq!(
        request(&mut session, json!({"type": "state"})).await["type"],
        "state"
    );

    // Closing the WebSocket gives its place back.
    session.close(None).await.unwrap();
    drop(session);
    let mut served = None;
    for _ in 0..50 {
        let mut next = TcpStream::connect(server.addr).await.unwrap();
        let (status, _) = get(&mut next, "/health").await;
        if status == 200 {
            served = Some(next);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served.is_some(), "the closed session's place was not freed");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_connection_that_never_finishes_its_headers_is_closed() {
    let server = server(ServerConfig {
        settings: quick(),
        timeouts: PeerTimeouts {
            header_read_timeout: Duration::from_secs(1),
            ..PeerTimeouts::default()
        },
        ..ServerConfig::default()
    })
    .await;
    // Slowloris: a header line every 200 ms, never the blank line that ends them.
    let slow = TcpStream::connect(server.addr).await.unwrap();
    let (mut from_server, mut to_server) = slow.into_split();
    to_server
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let trickle = tokio::spawn(async move {
        for i in 0.. {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let line = format!("X-Slow-{i}: 1\r\n");
            if to_server.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let mut chunk = [0u8; 1024];
    let closed = tokio::time::timeout(Duration::from_secs(8), async {
        while let Ok(n) = from_server.read(&mut chunk).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
    trickle.abort();
    assert!(closed.is_ok(), "the trickling connection was not closed");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(800),
        "closed too early: {took:?}"
    );

    // A connection that sends nothing at all, and a kept-alive one after its request, likewise.
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let mut kept = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(get(&mut kept, "/health").await.0, 200);
    assert!(closed_within(&mut silent, Duration::from_secs(8)).await);
    assert!(closed_within(&mut kept, Duration::from_secs(8)).await);

    // Meanwhile the server answers as usual.
    let mut fresh = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(get(&mut fresh, "/health").await.0, 200);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_body_that_trickles_is_cut_at_the_same_bound() {
    let bound = Duration::from_secs(1);
    let server = server(ServerConfig {
        settings: quick(),
        timeouts: PeerTimeouts {
            header_read_timeout: bound,
            ..PeerTimeouts::default()
        },
        ..ServerConfig::default()
    })
    .await;
    for path in ["/reset", "/mcp"] {
        // The headers in time, then the body a byte every 200 ms, never all of it.
        let slow = TcpStream::connect(server.addr).await.unwrap();
        let (mut from_server, mut to_server) = slow.into_split();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             content-length: 100000\r\n\r\n{{"
        );
        to_server.write_all(head.as_bytes()).await.unwrap();
        let started = Instant::now();
        let trickle = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if to_server.write_all(b" ").await.is_err() {
                    break;
                }
            }
        });
        let mut answer = Vec::new();
        let mut chunk = [0u8; 1024];
        let closed = tokio::time::timeout(bound * 8, async {
            while let Ok(n) = from_server.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                answer.extend_from_slice(&chunk[..n]);
            }
        })
        .await;
        trickle.abort();
        assert!(
            closed.is_ok(),
            "{path}: the trickled body held the connection"
        );
        assert!(started.elapsed() >= bound * 4 / 5, "{path}: cut too early");
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with("HTTP/1.1 "),
            "{path}: no answer: {answer}"
        );
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_flood_of_frames_is_pushed_back_not_buffered() {
    // The session is busy with a 6 s `wait` while the peer floods 4 MiB frames. The server may
    // take the queue's two, the one in the reader's hands and what the kernel buffers (its receive
    // buffer may grow to 32 MiB here): at most about 12 frames. A 64-frame queue takes all 20.
    const FRAME: usize = 4 * 1024 * 1024;
    const FRAMES: usize = 20;
    let server = server(ServerConfig {
        settings: EnvSettings {
            explicit_wait: Duration::from_secs(6),
            ..quick()
        },
        ..ServerConfig::default()
    })
    .await;
    let socket = TcpSocket::new_v4().unwrap();
    // A small send buffer of our own, so what was accepted is what the server took.
    socket.set_send_buffer_size(64 * 1024).unwrap();
    let stream = socket.connect(server.addr).await.unwrap();
    let url = format!("ws://{}/ws", server.addr);
    let (mut ws, _) = tokio_tungstenite::client_async(url, MaybeTlsStream::Plain(stream))
        .await
        .unwrap();
    let reset = json!({"type": "reset", "data": {"start_url": "https://example.com/"}});
    assert_eq!(request(&mut ws, reset).await["type"], "observation");
    let step = json!({"type": "step", "data": {"op": "wait"}});
    ws.send(Message::text(step.to_string())).await.unwrap();

    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    let flood = tokio::spawn(async move {
        // Valid frames: a `state` request padded with whitespace.
        let frame = format!("{{\"type\":\"state\"}}{}", " ".repeat(FRAME));
        for _ in 0..FRAMES {
            if ws.send(Message::text(frame.clone())).await.is_err() {
                break;
            }
            counter.fetch_add(1, Ordering::SeqCst);
        }
        ws
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let taken = accepted.load(Ordering::SeqCst);
    assert!(
        (1..=14).contains(&taken),
        "the server took {taken} frames of 4 MiB while busy"
    );
    flood.abort();
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_peer_that_answers_no_pings_is_dropped_and_one_that_answers_stays() {
    let server = server(ServerConfig {
        settings: quick(),
        max_sessions: 2,
        timeouts: PeerTimeouts {
            session_timeout: None,
            ping_interval: Duration::from_millis(300),
            ping_timeout: Duration::from_millis(700),
            ..PeerTimeouts::default()
        },
        ..ServerConfig::default()
    })
    .await;
    // A socket nobody reads: tungstenite answers pings only while it is read.
    let mut deaf = connect(server.addr).await;
    assert_eq!(
        request(&mut deaf, json!({"type": "state"})).await["type"],
        "state"
    );
    let started = Instant::now();
    // A socket read all along, in a task, so its pings are answered while it sends nothing.
    let alive = connect(server.addr).await;
    let (mut alive_tx, mut alive_rx) = alive.split();
    let (replies_tx, mut replies) = tokio::sync::mpsc::channel::<Value>(4);
    let reading = tokio::spawn(async move {
        while let Some(Ok(message)) = alive_rx.next().await {
            if let Message::Text(text) = message {
                let _ = replies_tx.send(serde_json::from_str(&text).unwrap()).await;
            }
        }
    });

    // A third session gets a slot once the deaf one is dropped (about 1 s: interval + timeout).
    let mut third = None;
    while started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut ws = connect(server.addr).await;
        let reply = request(&mut ws, json!({"type": "state"})).await;
        if reply["type"] == "state" {
            third = Some(ws);
            break;
        }
        assert_eq!(reply["data"]["code"], "CAPACITY_REACHED", "{reply}");
    }
    assert!(
        third.is_some(),
        "the peer that answers no pings kept its slot"
    );
    assert!(started.elapsed() >= Duration::from_millis(900));
    // Reading it now: why, then a close with the reason Python's websockets gives.
    let told = next_json(&mut deaf).await;
    assert_eq!(told["data"]["code"], "SESSION_ERROR", "{told}");
    assert_eq!(told["data"]["reason"], "PING_TIMEOUT");
    assert!(told["data"]["message"]
        .as_str()
        .unwrap()
        .contains("BROWSER_WS_PING_TIMEOUT_SECONDS"));
    assert_eq!(
        close_frame(&mut deaf).await,
        Some((CloseCode::Error, "keepalive ping timeout".into()))
    );

    // The peer that answered was idle for as long, and is still served.
    tokio::time::sleep(Duration::from_secs(1)).await;
    alive_tx
        .send(Message::text(json!({"type": "state"}).to_string()))
        .await
        .unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(5), replies.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply["type"], "state");
    reading.abort();
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_session_timeout_counts_from_the_last_answer_and_never_cuts_a_request() {
    let server = server(ServerConfig {
        settings: EnvSettings {
            explicit_wait: Duration::from_millis(1500),
            ..quick()
        },
        timeouts: PeerTimeouts {
            session_timeout: Some(Duration::from_millis(600)),
            ..PeerTimeouts::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut ws = connect(server.addr).await;
    let reset = json!({"type": "reset", "data": {"start_url": "https://example.com/"}});
    assert_eq!(request(&mut ws, reset).await["type"], "observation");
    // A step longer than the timeout is answered.
    let step = json!({"type": "step", "data": {"op": "wait"}});
    assert_eq!(request(&mut ws, step).await["type"], "observation");
    // Requests closer together than the timeout keep the session.
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            request(&mut ws, json!({"type": "state"})).await["type"],
            "state"
        );
    }
    // Then silence: the session ends, and says why.
    let quiet = Instant::now();
    let told = tokio::time::timeout(Duration::from_secs(10), next_json(&mut ws))
        .await
        .expect("the idle session is ended");
    let took = quiet.elapsed();
    assert!(
        took >= Duration::from_millis(550),
        "ended too early: {took:?}"
    );
    assert_eq!(told["data"]["code"], "SESSION_ERROR", "{told}");
    assert_eq!(told["data"]["reason"], "SESSION_TIMEOUT");
    assert_eq!(told["data"]["session_timeout"], 0.6);
    assert_eq!(
        close_frame(&mut ws).await,
        Some((CloseCode::Normal, "session timeout".into()))
    );
    server.stop().await.unwrap();
}
