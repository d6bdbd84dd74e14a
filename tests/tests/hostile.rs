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
    let harness = Harness::start_with_browser(
        chromium,
        browserenv_server::ServerConfig {
            settings: test_settings(),
            ..browserenv_server::ServerConfig::default()
        },
    )
    .await;
    let mut client = harness.client().await;
    let first = client
        .reset(ResetOptions::new(https.url("form.html")))
        .await
        .unwrap();
    assert_eq!(first.observation.error, "");
    assert_eq!(title(&first), "Form");
    harness.stop().await;
}
