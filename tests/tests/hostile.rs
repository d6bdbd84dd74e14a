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
