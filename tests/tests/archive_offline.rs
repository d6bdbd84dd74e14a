//! A replayed page reaches nothing (docs/archives.md, "Replaying from an archive"): WebSockets,
//! EventSource, beacons, fetches, pictures, preconnects, DNS prefetches and WebRTC aimed at
//! listeners on loopback; not one connection or datagram arrives, and the WebSocket is listed in
//! `metadata.archive_misses`. The same page served live does reach them: what the replay stops.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use browserenv::{BrowserAction, ResetOptions};
use browserenv_archive::{ArchiveInfo, ArchiveWriter, Exchange, Request, Response};
use browserenv_server::archive::ArchiveConfig;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_settings, Harness};
use serde_json::{json, Map, Value};

/// Everything a page can open without a request the interception sees, and with one.
fn page(tcp: u16, udp: u16) -> String {
    format!(
        r#"<!doctype html><title>offline: waiting</title>
<link rel=preconnect href="http://127.0.0.1:{tcp}">
<link rel=dns-prefetch href="//127.0.0.1:{tcp}">
<link rel=prefetch href="http://127.0.0.1:{tcp}/prefetch">
<p>offline</p>
<script>
const base = 'http://127.0.0.1:{tcp}';
const seen = [];
const show = (what) => {{ seen.push(what); document.title = 'offline: ' + seen.join(', '); }};
const socket = new WebSocket('ws://127.0.0.1:{tcp}/socket');
socket.onopen = () => show('socket open');
socket.onerror = () => show('socket failed');
const events = new EventSource(base + '/events');
events.onerror = () => {{ events.close(); show('events failed'); }};
navigator.sendBeacon(base + '/beacon', 'x');
fetch(base + '/fetch', {{ mode: 'no-cors' }}).catch(() => {{}});
new Image().src = base + '/picture.png';
const peer = new RTCPeerConnection({{ iceServers: [{{ urls: 'stun:127.0.0.1:{udp}' }}] }});
peer.createDataChannel('probe');
peer.createOffer().then((offer) => peer.setLocalDescription(offer));
</script>"#
    )
}

/// Listeners on loopback that count what reaches them: TCP connections, UDP datagrams.
struct Listeners {
    tcp: u16,
    udp: u16,
    connections: Arc<AtomicUsize>,
    datagrams: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Listeners {
    async fn start() -> Listeners {
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let (tcp_port, udp_port) = (
            tcp.local_addr().unwrap().port(),
            udp.local_addr().unwrap().port(),
        );
        let (connections, datagrams) =
            (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let counted = connections.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((stream, _)) = tcp.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        let counted = datagrams.clone();
        let receiving = tokio::spawn(async move {
            let mut buffer = [0u8; 1500];
            while udp.recv_from(&mut buffer).await.is_ok() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        Listeners {
            tcp: tcp_port,
            udp: udp_port,
            connections,
            datagrams,
            tasks: vec![accepting, receiving],
        }
    }

    fn heard(&self) -> (usize, usize) {
        (
            self.connections.load(Ordering::SeqCst),
            self.datagrams.load(Ordering::SeqCst),
        )
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Steps until the page's WebSocket and EventSource have both given up (or a few seconds
/// passed), then a second more for preconnects and STUN; the misses every observation listed.
async fn settle(
    client: &mut browserenv::Client,
    first: &browserenv::StepResult,
) -> (String, Vec<String>) {
    let mut misses: Vec<String> = Vec::new();
    let mut collect = |result: &browserenv::StepResult| {
        if let Some(Value::Array(listed)) = result.observation.metadata.get("archive_misses") {
            misses.extend(listed.iter().filter_map(|m| m.as_str().map(str::to_string)));
        }
    };
    collect(first);
    let mut title = String::new();
    for _ in 0..25 {
        let result = client.step(BrowserAction::wait()).await.unwrap();
        collect(&result);
        title = result.observation.metadata["title"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if title.contains("socket") && title.contains("events") {
            break;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let last = client.step(BrowserAction::wait()).await.unwrap();
    collect(&last);
    (title, misses)
}

#[tokio::test]
async fn a_replayed_page_reaches_nothing_and_its_websocket_is_listed() {
    let listeners = Listeners::start().await;
    let html = page(listeners.tcp, listeners.udp);

    // Live, from a site of its own: the page does reach the listeners.
    let live_dir =
        std::env::temp_dir().join(format!("browserenv-offline-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&live_dir);
    std::fs::create_dir_all(&live_dir).unwrap();
    std::fs::write(live_dir.join("index.html"), &html).unwrap();
    let site = browserenv_server::site::serve_dir(live_dir.clone())
        .await
        .unwrap();
    let live = Harness::start(test_settings()).await;
    let mut client = live.client().await;
    let first = client
        .reset(ResetOptions::new(site.url("index.html")))
        .await
        .unwrap();
    let (title, _) = settle(&mut client, &first).await;
    let (connections, datagrams) = listeners.heard();
    assert!(
        connections > 0 && datagrams > 0,
        "live, the page reached {connections} connections, {datagrams} datagrams ({title})"
    );
    client.close().await.unwrap();
    live.stop().await;
    std::fs::remove_dir_all(&live_dir).unwrap();

    // Replayed from an archive of the same page.
    let listeners = Listeners::start().await;
    let html = page(listeners.tcp, listeners.udp);
    let dir = std::env::temp_dir().join(format!("browserenv-offline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut writer =
        ArchiveWriter::create(&dir.join("offline.warc.gz"), &ArchiveInfo::default()).unwrap();
    writer
        .append(&Exchange {
            request: Request {
                method: "GET".into(),
                url: "http://offline.test/".into(),
                headers: Vec::new(),
                body: Vec::new(),
            },
            response: Response {
                status: 200,
                reason: String::new(),
                headers: vec![("Content-Type".into(), "text/html".into())],
                body: html.into_bytes(),
                body_left_out: false,
            },
            date: SystemTime::now(),
        })
        .unwrap();
    writer.finish().unwrap();
    let replay = Harness::start_with(ServerConfig {
        settings: test_settings(),
        archive: ArchiveConfig {
            dir: Some(dir.clone()),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut client = replay.client().await;
    let mut kwargs = Map::new();
    kwargs.insert("start_url".into(), json!("http://offline.test/"));
    kwargs.insert("archive".into(), json!("offline.warc.gz"));
    let first = client.reset_with(kwargs).await.unwrap();
    assert_eq!(
        first.observation.error, "",
        "{:?}",
        first.observation.metadata
    );
    let (title, misses) = settle(&mut client, &first).await;
    assert_eq!(
        listeners.heard(),
        (0, 0),
        "a replayed page reached a listener ({title}; misses {misses:?})"
    );
    assert!(
        title.contains("socket failed") && title.contains("events failed"),
        "{title}"
    );
    let socket = format!("ws://127.0.0.1:{}/socket", listeners.tcp);
    assert!(
        misses
            .iter()
            .any(|m| m.starts_with(&socket) && m.contains("WebSocket")),
        "{misses:?}"
    );
    for path in ["/events", "/beacon", "/fetch", "/picture.png"] {
        let url = format!("http://127.0.0.1:{}{path}", listeners.tcp);
        assert!(
            misses.iter().any(|m| m == &url),
            "{url} not among {misses:?}"
        );
    }
    client.close().await.unwrap();
    replay.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
