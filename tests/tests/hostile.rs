//! Hostile pages on real Chromium: what a page can do to the server, its session and other
//! sessions, and the bounds that hold whatever it does.

use std::time::Duration;

use browserenv::{BrowserAction, ResetOptions};
use browserenv_tests::{test_settings, title, Harness};
use serde_json::Value;

#[tokio::test]
async fn a_page_cannot_open_sessions_or_watch_them() {
    let harness = Harness::start(test_settings()).await;
    let port = harness.server.addr.port();
    let (mut client, _) = harness.open(&format!("wsprobe.html?port={port}")).await;
    // Give the page's attempts time to end, then look.
    let mut shown = String::new();
    for _ in 0..20 {
        let result = client.step(BrowserAction::wait()).await.unwrap();
        shown = title(&result);
        if !shown.contains("pending") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(shown, "ws: refused, watch: refused");
    // Only this test's own session exists; the page's POST /reset made no HTTP session either.
    let sessions: Vec<Value> = reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    client.close().await.unwrap();
    harness.stop().await;
}

/// The text the first listed session's page shows now, and its URL.
async fn shown_on_the_page(harness: &Harness) -> (String, String, String) {
    let session = reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json::<Vec<Value>>()
        .await
        .unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let text: Value = reqwest::get(format!(
        "{}/sessions/{session}/text",
        harness.server.base_url()
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let shown: String = text["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|run| run["text"].as_str())
        .collect();
    (session, text["url"].as_str().unwrap().to_string(), shown)
}

#[tokio::test]
async fn a_page_cannot_show_the_server_s_routes_in_the_agent_s_screenshot() {
    let harness = Harness::start(test_settings()).await;
    let port = harness.server.addr.port();
    // Navigations carry no Origin: the page goes to /sessions and /ready itself, by the
    // server's address and by names of it to which Chromium sends no Sec-Fetch-Site.
    for (host, path, refusal) in [
        ("127.0.0.1", "/sessions", "ORIGIN_NOT_ALLOWED"),
        ("127.0.0.1", "/ready", "ORIGIN_NOT_ALLOWED"),
        ("127.0.0.1", "/replicas", "ORIGIN_NOT_ALLOWED"),
        ("[::ffff:127.0.0.1]", "/sessions", "HOST_NOT_ALLOWED"),
        ("0.0.0.0", "/sessions", "HOST_NOT_ALLOWED"),
    ] {
        let (mut client, _) = harness
            .open(&format!("apinav.html?host={host}&port={port}&path={path}"))
            .await;
        // The settle waited for the navigation; a step more for one that came late.
        client.step(BrowserAction::wait()).await.unwrap();
        let (session, url, shown) = shown_on_the_page(&harness).await;
        assert!(url.ends_with(path), "{host}: the page did not go: {url}");
        assert!(shown.contains(refusal), "{host}{path}: {shown}");
        assert!(
            !shown.contains(&session) && !shown.contains("\"status\":\"ready\""),
            "{host}{path}: {shown}"
        );
        client.close().await.unwrap();
    }
    harness.stop().await;
}

/// Nor can the agent itself: a reset to the server's own routes, under any loopback name of it, is
/// refused (the browser would go: a reset is a navigation it makes on its own, as for a person).
#[tokio::test]
async fn an_agent_cannot_reset_onto_the_server_s_own_routes() {
    let harness = Harness::start(test_settings()).await;
    let port = harness.server.addr.port();
    let mut agent = harness.client().await;
    for host in [
        "127.0.0.1",
        "localhost",
        "[::ffff:127.0.0.1]",
        "0.0.0.0",
        "127.0.0.2",
    ] {
        let refused = agent
            .reset(ResetOptions::new(format!("http://{host}:{port}/sessions")))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("this server's own address"),
            "{host}: {refused}"
        );
    }
    // The pages' server on loopback is another port: a page like any.
    let page = agent
        .reset(ResetOptions::new(harness.page("index.html")))
        .await
        .unwrap();
    assert_eq!(page.observation.error, "");
    agent.close().await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn a_certificate_error_is_navigation_failed_with_its_detail() {
    let https = browserenv_tests::HttpsPages::start();
    let harness = Harness::start(test_settings()).await;
    let mut client = harness.client().await;
    let first = client
        .reset(ResetOptions::new(https.url("form.html")))
        .await
        .unwrap();
    assert_eq!(first.observation.error, "navigation_failed");
    let detail = first.observation.metadata["error_detail"]
        .as_str()
        .unwrap_or_default();
    assert!(detail.starts_with("net::ERR_CERT_"), "{detail}");
    assert_ne!(title(&first), "Form", "the page did not load");
    // A link to it from a page that is fine fails the same way.
    let to =
        url::form_urlencoded::byte_serialize(https.url("form.html").as_bytes()).collect::<String>();
    client
        .reset(ResetOptions::new(format!(
            "{}?to={to}",
            harness.page("golink.html")
        )))
        .await
        .unwrap();
    let clicked = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(
        clicked.observation.error, "navigation_failed",
        "{:?}",
        clicked.observation.metadata
    );
    let detail = clicked.observation.metadata["error_detail"]
        .as_str()
        .unwrap_or_default();
    assert!(detail.starts_with("net::ERR_CERT_"), "{detail}");
    harness.stop().await;
}

#[tokio::test]
async fn a_certificate_error_can_be_ignored_on_request() {
    let https = browserenv_tests::HttpsPages::start();
    let chromium = browserenv_server::chromium::ChromiumConfig {
        ignore_https_errors: true,
        ..browserenv_tests::test_chromium()
    };
    let harness = with_browser(chromium, test_settings()).await;
    let mut client = harness.client().await;
    let first = client
        .reset(ResetOptions::new(https.url("form.html")))
        .await
        .unwrap();
    assert_eq!(first.observation.error, "");
    assert_eq!(title(&first), "Form");
    harness.stop().await;
}

/// A server whose browsers are `chromium`, with `settings`.
async fn with_browser(
    chromium: browserenv_server::chromium::ChromiumConfig,
    settings: browserenv_server::settings::EnvSettings,
) -> Harness {
    let config = browserenv_server::ServerConfig {
        settings,
        ..browserenv_server::ServerConfig::default()
    };
    Harness::start_with_browser(chromium, config).await
}

/// The server's default timeouts: hostile pages load the machine (and the tests run four at a
/// time), and what is tested here is that a step stays inside its bound, not a short bound.
fn hostile_settings() -> browserenv_server::settings::EnvSettings {
    browserenv_server::settings::EnvSettings {
        explicit_wait: Duration::from_millis(200),
        page_load_timeout: Duration::from_secs(20),
        ..browserenv_server::settings::EnvSettings::default()
    }
}

/// The metadata's size, as it goes over the wire.
fn metadata_bytes(result: &browserenv::StepResult) -> usize {
    serde_json::to_string(&result.observation.metadata)
        .unwrap()
        .len()
}

fn count(result: &browserenv::StepResult, key: &str) -> u64 {
    result
        .observation
        .metadata
        .get(key)
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

fn list_len(result: &browserenv::StepResult, key: &str) -> usize {
    result
        .observation
        .metadata
        .get(key)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// A step of `action` on `client`, checked against the documented bound.
async fn bounded_step(
    client: &mut browserenv::Client,
    settings: &browserenv_server::settings::EnvSettings,
    action: BrowserAction,
) -> browserenv::StepResult {
    let bound = browserenv_server::environment::step_bound(settings, &action);
    let started = std::time::Instant::now();
    let result = client.step(action).await.unwrap();
    let took = started.elapsed();
    // The bound is what the server enforces; a little is left for the frame's way here.
    assert!(
        took <= bound + Duration::from_millis(500),
        "the step took {took:?}, over its bound of {bound:?}"
    );
    result
}

#[tokio::test]
async fn an_alert_loop_is_stopped_its_dialogs_counted_and_the_step_bounded() {
    let settings = hostile_settings();
    let harness = Harness::start(settings.clone()).await;
    let (mut client, _) = harness.open("alertloop.html").await;
    let result = bounded_step(&mut client, &settings, BrowserAction::click(200, 50)).await;
    // Before the cap: 1,566-2,235 dialogs, a 1.6-2.3 MiB observation and renderer_timeout.
    assert_eq!(
        result.observation.error, "",
        "{:?}",
        result.observation.metadata
    );
    assert!(!result.done);
    assert_eq!(
        list_len(&result, "dialogs"),
        browserenv_server::capped::INCIDENTS_KEPT
    );
    assert!(
        count(&result, "dialogs_more") >= 10,
        "{:?}",
        result.observation.metadata
    );
    assert!(count(&result, "scripts_stopped") >= 1);
    let message = result.observation.metadata["dialogs"][0]["message"]
        .as_str()
        .unwrap();
    assert!(message.starts_with("alert number 0 xxx"), "{message}");
    assert!(message.ends_with("more characters)"), "{message}");
    assert!(
        metadata_bytes(&result) < 8_000,
        "{}",
        metadata_bytes(&result)
    );
    // The page is usable again: the next step is an ordinary one.
    let next = bounded_step(&mut client, &settings, BrowserAction::scroll(100)).await;
    assert_eq!(next.observation.error, "");
    assert!(next.observation.metadata.get("dialogs").is_none());
    harness.stop().await;
}

#[tokio::test]
async fn a_popup_flood_is_held_to_the_tab_limit() {
    let settings = hostile_settings();
    let harness = Harness::start(settings.clone()).await;
    // 30 tabs opened by the page as it loads, without a click.
    let (mut client, first) = harness.open("popupflood.html?onload=30").await;
    let limit = browserenv_server::chromium::MAX_TABS as u64;
    // The page's own tab and MAX_TABS - 1 popups stay; the rest are closed before they load.
    assert_eq!(
        count(&first, "tabs_closed"),
        31 - limit,
        "{:?}",
        first.observation.metadata
    );
    assert_eq!(first.observation.error, "");
    // The session goes on in the newest tab it kept, in front: Chromium draws only the front tab,
    // and the tabs opened (and closed) after it came forward went in front of it.
    let next = bounded_step(&mut client, &settings, BrowserAction::scroll(100)).await;
    assert_eq!(next.observation.error, "");
    assert!(
        next.observation.url.contains("shown.html?onload="),
        "{}",
        next.observation.url
    );
    assert_eq!(
        next.observation.metadata["title"], "visible",
        "{:?}",
        next.observation.metadata
    );
    harness.stop().await;
}

#[tokio::test]
async fn a_download_flood_is_reported_with_counts_and_short_urls() {
    let settings = hostile_settings();
    let harness = Harness::start(settings.clone()).await;
    let (mut client, _) = harness.open("downloadflood.html").await;
    let result = bounded_step(&mut client, &settings, BrowserAction::click(200, 50)).await;
    let metadata = &result.observation.metadata;
    let kept = browserenv_server::capped::INCIDENTS_KEPT;
    // 300 data: links (stopped as navigations) and 60 downloads from the server (denied).
    assert_eq!(
        list_len(&result, "navigations_blocked"),
        kept,
        "{metadata:?}"
    );
    assert_eq!(
        count(&result, "navigations_blocked_more"),
        300 - kept as u64
    );
    // Chromium itself lets a page start only a few downloads at once (the rest wait for a
    // "download multiple files" permission nobody gives), so fewer than N arrive.
    let downloads = list_len(&result, "downloads_denied");
    assert!((1..=kept).contains(&downloads), "{metadata:?}");
    for key in ["navigations_blocked", "downloads_denied"] {
        for url in metadata[key].as_array().unwrap() {
            let url = url.as_str().unwrap();
            assert!(url.chars().count() < 240, "{url}");
            assert!(url.ends_with("more characters)"), "{url}");
        }
    }
    assert!(
        metadata_bytes(&result) < 8_000,
        "{}",
        metadata_bytes(&result)
    );
    assert_eq!(title(&result), "flooded");
    harness.stop().await;
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_at_the_renderer_limit_and_other_sessions_go_on() {
    let settings = hostile_settings();
    let chromium = browserenv_server::chromium::ChromiumConfig {
        renderer_memory_mb: 512,
        ..browserenv_tests::test_chromium()
    };
    let harness = with_browser(chromium, settings.clone()).await;
    let (mut bystander, _) = harness.open("canvas.html").await;
    // JavaScript objects (V8's heap limit) and array buffers outside it (the watchdog).
    for (page, detail) in [
        ("memorybomb.html?kind=heap", None),
        (
            "memorybomb.html?kind=buffers",
            Some("over the limit of 512 MiB (BROWSER_RENDERER_MEMORY_MB)"),
        ),
    ] {
        let (mut client, _) = harness.open(page).await;
        let mut result = bounded_step(&mut client, &settings, BrowserAction::click(200, 50)).await;
        // Each step allocates about 1 GiB; without a limit the page grows for ever (4.8 GB
        // measured before the watchdog, and still growing).
        for _ in 0..4 {
            if result.done {
                break;
            }
            result = bounded_step(&mut client, &settings, BrowserAction::wait()).await;
        }
        // Near V8's heap limit the renderer may spend its time collecting garbage and miss the
        // screenshot first (renderer_timeout); either way the episode ends and the memory is freed.
        let ended = if detail.is_some() {
            vec!["renderer_crashed"]
        } else {
            vec!["renderer_crashed", "renderer_timeout"]
        };
        assert!(
            result.done && ended.contains(&result.observation.error.as_str()),
            "{page}: {} {:?}",
            result.observation.error,
            result.observation.metadata
        );
        if let Some(detail) = detail {
            let said = result.observation.metadata["error_detail"]
                .as_str()
                .unwrap_or_default();
            assert!(said.contains(detail), "{page}: {said}");
        }
        client.close().await.unwrap();
        let clicked = bystander.step(BrowserAction::click(5, 5)).await.unwrap();
        assert_eq!(
            title(&clicked),
            "clicked 5,5",
            "the other session is untouched"
        );
    }
    harness.stop().await;
}

/// The most this process ever held (`VmHWM`), in bytes: the server runs in the test's process.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// A title of 256 MiB, and a page that replaces the probe's functions, the natives it cuts with
/// and the DOM's getters: every observation stays small, the server's memory does not follow the
/// page's, and the other session goes on.
#[tokio::test]
async fn a_page_s_huge_title_or_a_replaced_probe_costs_the_server_nothing() {
    let settings = hostile_settings();
    let chromium = browserenv_server::chromium::ChromiumConfig {
        renderer_memory_mb: 4096,
        ..browserenv_tests::test_chromium()
    };
    let harness = with_browser(chromium, settings.clone()).await;
    let (mut bystander, _) = harness.open("canvas.html").await;
    let before = peak_memory();
    for kind in ["title", "probe"] {
        let (mut client, _) = harness
            .open(&format!("hostileprobe.html?kind={kind}"))
            .await;
        let mut result = bounded_step(&mut client, &settings, BrowserAction::click(100, 20)).await;
        for _ in 0..2 {
            let metadata = &result.observation.metadata;
            assert_eq!(result.observation.error, "", "{kind}: {metadata:?}");
            assert!(
                metadata_bytes(&result) < 16 * 1024,
                "{kind}: {}",
                metadata_bytes(&result)
            );
            let title = metadata["title"].as_str().unwrap_or_default();
            assert!(title.chars().count() <= 4096, "{kind}: {}", title.len());
            if kind == "title" {
                assert!(title.starts_with("xxxx"), "{kind}: {title:.40}");
            } else {
                // The probe's own reading, not the page's answer in its place.
                assert!(!title.contains("yyyy"), "{kind}: {title:.40}");
                assert!(list_len(&result, "password_boxes") <= 32);
            }
            result = bounded_step(&mut client, &settings, BrowserAction::wait()).await;
        }
        client.close().await.unwrap();
        let clicked = bystander.step(BrowserAction::click(5, 5)).await.unwrap();
        assert_eq!(title(&clicked), "clicked 5,5", "the other session goes on");
    }
    let grown = peak_memory().saturating_sub(before);
    eprintln!("the server's peak memory grew by {} KiB", grown / 1024);
    assert!(
        grown < 100 * 1024 * 1024,
        "the server grew by {} MiB",
        grown / 1024 / 1024
    );
    harness.stop().await;
}

#[tokio::test]
async fn a_busy_page_answers_within_the_step_bound() {
    let settings = hostile_settings();
    let harness = Harness::start(settings.clone()).await;
    // Busy 95% of the time, in slices of 950 ms, never settled.
    let (mut client, _) = harness.open("cpuhog.html").await;
    for action in [
        BrowserAction::click(200, 50),
        BrowserAction::scroll(100),
        BrowserAction::click(300, 300),
        BrowserAction::key(browserenv::models::Key::Enter),
    ] {
        let result = bounded_step(&mut client, &settings, action).await;
        assert!(!result.done, "{:?}", result.observation.metadata);
    }
    // Spinning without end: renderer_timeout, inside the bound too.
    let (mut hung, _) = harness.open("hang.html").await;
    let result = bounded_step(&mut hung, &settings, BrowserAction::click(200, 50)).await;
    assert_eq!(result.observation.error, "renderer_timeout");
    harness.stop().await;
}

#[tokio::test]
async fn a_remote_browser_token_is_not_in_reset_errors() {
    let chromium = browserenv_server::chromium::ChromiumConfig {
        remote: Some("ws://127.0.0.1:1/devtools?token=pool-s3cret-42".into()),
        launch_timeout: Duration::from_secs(3),
        ..browserenv_tests::test_chromium()
    };
    let harness = with_browser(chromium, test_settings()).await;
    let mut client = harness.client().await;
    let refused = client
        .reset(ResetOptions::new(harness.page("index.html")))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("the browser failed to start"), "{refused}");
    assert!(!refused.contains("pool-s3cret-42"), "{refused}");
    assert!(refused.contains("token=***"), "{refused}");
    harness.stop().await;
}

/// What a STUN server on loopback hears from a page that asks WebRTC for its address, with private
/// networks blocked or not: the number of datagrams and the page's ICE candidates.
async fn stun_heard(egress: bool) -> (usize, String) {
    use browserenv_server::site::serve_dir;
    let site = serve_dir(browserenv_tests::assets_dir().join("pages"))
        .await
        .unwrap();
    let stun = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let stun_address = stun.local_addr().unwrap();
    let site_url = url::Url::parse(&site.url("")).unwrap();
    let authority = format!("127.0.0.1:{}", site_url.port().unwrap());
    let policy = browserenv_server::chromium::intercept::egress::EgressPolicy::new(&[authority])
        .await
        .unwrap();
    let chromium = browserenv_server::chromium::ChromiumConfig {
        egress: egress.then(|| std::sync::Arc::new(policy)),
        ..browserenv_tests::test_chromium()
    };
    let harness = with_browser(chromium, test_settings()).await;
    let mut client = harness.client().await;
    let heard = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = heard.clone();
    let listening = tokio::spawn(async move {
        let mut buffer = [0u8; 1500];
        while stun.recv_from(&mut buffer).await.is_ok() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let mut result = client
        .reset(ResetOptions::new(
            site.url(&format!("stun.html?stun={stun_address}")),
        ))
        .await
        .unwrap();
    assert_eq!(
        result.observation.error, "",
        "{:?}",
        result.observation.metadata
    );
    // A STUN request goes out as soon as gathering starts (the first within 30 ms of the reset
    // here, with the block off); five seconds of silence is a block, not a slow page.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while heard.load(std::sync::atomic::Ordering::SeqCst) == 0
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    result = client.step(BrowserAction::wait()).await.unwrap();
    let candidates = title(&result);
    listening.abort();
    client.close().await.unwrap();
    harness.stop().await;
    (heard.load(std::sync::atomic::Ordering::SeqCst), candidates)
}

#[tokio::test]
async fn webrtc_sends_no_udp_past_the_egress_proxy() {
    // Without the block the page reaches the STUN server on loopback: what the block must stop.
    let (open, _) = stun_heard(false).await;
    assert!(
        open > 0,
        "the page's STUN request did not arrive without the block"
    );
    let (blocked, candidates) = stun_heard(true).await;
    assert_eq!(
        blocked, 0,
        "a STUN request went past the proxy: {candidates}"
    );
    assert!(!candidates.contains("srflx"), "{candidates}");
}

#[tokio::test]
async fn private_networks_are_refused_when_asked_except_the_site() {
    use browserenv_server::site::serve_dir;
    let pages = browserenv_tests::assets_dir().join("pages");
    // The configured site, and an "internal service" on loopback that pages must not reach.
    let site = serve_dir(pages.clone()).await.unwrap();
    let internal = serve_dir(pages).await.unwrap();
    let site_url = url::Url::parse(&site.url("")).unwrap();
    let site_authority = format!(
        "{}:{}",
        site_url.host_str().unwrap(),
        site_url.port().unwrap()
    );
    let policy =
        browserenv_server::chromium::intercept::egress::EgressPolicy::new(&[site_authority])
            .await
            .unwrap();
    let chromium = browserenv_server::chromium::ChromiumConfig {
        egress: Some(std::sync::Arc::new(policy)),
        ..browserenv_tests::test_chromium()
    };
    let harness = with_browser(chromium, test_settings()).await;
    let mut client = harness.client().await;
    let allowed = client
        .reset(ResetOptions::new(site.url("index.html")))
        .await
        .unwrap();
    assert_eq!(allowed.observation.error, "", "the site passes the proxy");
    let internal_port = url::Url::parse(&internal.url("")).unwrap().port().unwrap();
    let https = browserenv_tests::HttpsPages::start();
    // By address, by a name that resolves to loopback, and over TLS (a CONNECT tunnel).
    for (url, authority) in [
        (
            internal.url("index.html"),
            format!("127.0.0.1:{internal_port}"),
        ),
        (
            format!("http://localhost:{internal_port}/index.html"),
            format!("localhost:{internal_port}"),
        ),
        (https.url("form.html"), String::new()),
        // The clouds' metadata service by its name, whatever it resolves to (here: nothing).
        (
            "http://metadata.google.internal/computeMetadata/v1/".to_string(),
            "metadata.google.internal:80".to_string(),
        ),
    ] {
        let refused = client.reset(ResetOptions::new(url.clone())).await.unwrap();
        assert_eq!(
            refused.observation.error, "navigation_blocked",
            "{url}: {:?}",
            refused.observation.metadata
        );
        let detail = refused.observation.metadata["error_detail"]
            .as_str()
            .unwrap_or_default();
        assert!(detail.contains(&authority), "{url}: {detail}");
        assert!(detail.contains("private"), "{url}: {detail}");
        assert!(
            !result_title_is(&refused, "Test pages"),
            "{url} did not load"
        );
    }
    // A link from the site to the internal service.
    let to = url::form_urlencoded::byte_serialize(internal.url("index.html").as_bytes())
        .collect::<String>();
    client
        .reset(ResetOptions::new(site.url(&format!("golink.html?to={to}"))))
        .await
        .unwrap();
    let clicked = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(
        clicked.observation.error, "navigation_blocked",
        "{:?}",
        clicked.observation.metadata
    );
    // A subresource: the page loads, its request to the internal service does not.
    let src = url::form_urlencoded::byte_serialize(internal.url("canvas.html").as_bytes())
        .collect::<String>();
    let page = client
        .reset(ResetOptions::new(
            site.url(&format!("subresource.html?src={src}")),
        ))
        .await
        .unwrap();
    assert_eq!(page.observation.error, "");
    let refused = page.observation.metadata["network_refused"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        refused.iter().any(|r| r
            .as_str()
            .unwrap_or_default()
            .contains(&format!(":{internal_port}"))),
        "{:?}",
        page.observation.metadata
    );
    // The site under another name of the same address is the site.
    let site_port = site_url.port().unwrap();
    let by_name = client
        .reset(ResetOptions::new(format!(
            "http://localhost:{site_port}/index.html"
        )))
        .await
        .unwrap();
    assert_eq!(
        by_name.observation.error, "",
        "{:?}",
        by_name.observation.metadata
    );
    harness.stop().await;
}

fn result_title_is(result: &browserenv::StepResult, wanted: &str) -> bool {
    title(result) == wanted
}

#[tokio::test]
async fn a_page_that_navigates_itself_without_end_gets_a_picture_every_step() {
    // Steps that land while the page swaps documents (and renderers) must still get their
    // screenshot: a capture sent to the outgoing document is lost with it.
    let settings = browserenv_server::settings::EnvSettings {
        action_wait: Duration::ZERO,
        ..hostile_settings()
    };
    let harness = Harness::start(settings.clone()).await;
    let (mut client, first) = harness.open("bounce.html").await;
    assert!(!first.observation.screenshot.is_empty());
    // Inside the default 20 steps of an episode.
    for step in 0..18 {
        let result = bounded_step(&mut client, &settings, BrowserAction::wait()).await;
        assert!(
            !result.observation.screenshot.is_empty() && !result.done,
            "step {step}: done {}, {} bytes of screenshot, error {:?}, {:?}",
            result.done,
            result.observation.screenshot.len(),
            result.observation.error,
            result.observation.metadata
        );
    }
    client.close().await.unwrap();
    harness.stop().await;
}

/// Chromium writes a string holding a lone UTF-16 surrogate as an unpaired `\ud800` escape, which
/// chromiumoxide cannot read: the server reads it as U+FFFD, in the title, the element under the
/// cursor (a password field stays one) and a dialog's message.
#[tokio::test]
async fn lone_surrogates_in_a_title_a_label_or_a_dialog_are_read_as_replacement_characters() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, first) = harness.open("surrogate.html").await;
    assert_eq!(first.observation.error, "");
    assert_eq!(title(&first), "lone \u{fffd} title");
    let clicked = client.step(BrowserAction::click(200, 215)).await.unwrap();
    assert_eq!(clicked.observation.error, "");
    // Read whole, not only judged secret for being unreadable.
    let element = &clicked.observation.metadata["element"];
    assert_eq!(element["password"], true, "{element}");
    assert_eq!(element["name"], "Password \u{fffd}\u{fffd}", "{element}");
    let alert = client.step(BrowserAction::click(200, 330)).await.unwrap();
    assert_eq!(
        alert.observation.metadata["dialogs"][0]["message"],
        "lone \u{fffd} alert"
    );
    client.close().await.unwrap();
    harness.stop().await;
}
