//! `--browser-url`: sessions on a Chromium someone else started (here: a separate process with
//! a different window size, device scale factor 2, smooth scrolling and the popup blocker on, as a
//! browserless pool's might be), reached only through its DevTools endpoint.

use std::time::Duration;

use browserenv::{BrowserAction, ResetOptions};
use browserenv_server::chromium::remote_version;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_settings, title, Harness, Picture, RemoteChromium};

#[tokio::test]
async fn sessions_on_a_remote_browser_get_an_exact_viewport_and_contexts_of_their_own() {
    let mut remote = RemoteChromium::start();
    let before = remote.page_urls().await;
    let harness = Harness::start_on(
        Some(remote.url()),
        ServerConfig {
            settings: test_settings(),
            max_sessions: 4,
            warm_spare: true,
            ..ServerConfig::default()
        },
    )
    .await;

    // 800x600 at scale 1, although the remote's window is 1280x900 at scale 2.
    let (mut first, opened) = harness.open("storage.html").await;
    let picture = Picture::from_base64(&opened.observation.screenshot);
    assert_eq!((picture.width, picture.height), (800, 600));
    assert_eq!(title(&opened), "visits 1 cookie seen=1");
    let again = first.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(title(&again), "visits 2 cookie seen=2");

    // A second session shares neither storage nor cookies with the first.
    let (mut second, opened) = harness.open("storage.html").await;
    assert_eq!(title(&opened), "visits 1 cookie seen=1");

    // A tab the second session opens is followed there and nowhere else.
    second
        .reset(ResetOptions::new(harness.page("blank.html")))
        .await
        .unwrap();
    let tab = second.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(tab.observation.url, harness.page("newtab.html"));
    assert_eq!(tab.observation.metadata["tab_switches"], 1);
    let waited = first.step(BrowserAction::wait()).await.unwrap();
    assert_eq!(waited.observation.url, harness.page("storage.html"));
    assert!(waited.observation.metadata.get("tab_switches").is_none());

    // Downloads are denied in the session's context and reported to that session only.
    first
        .reset(ResetOptions::new(harness.page("download.html")))
        .await
        .unwrap();
    let download = first.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(download.observation.error, "download_blocked");
    let quiet = second.step(BrowserAction::wait()).await.unwrap();
    assert!(quiet.observation.metadata.get("downloads_denied").is_none());
    // Also when the link is inside a frame (the download's frame is not the tab's).
    first
        .reset(ResetOptions::new(harness.page("downloadframe.html")))
        .await
        .unwrap();
    let framed = first.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(framed.observation.error, "download_blocked");

    // Smooth scrolling is on in this remote (our launches turn it off): the step's screenshot is
    // still the scroll's final state. (Measured: headless Chromium does not animate CDP wheel
    // events, so this holds without extra waiting.)
    first
        .reset(ResetOptions::new(harness.page("long.html")))
        .await
        .unwrap();
    let scrolled = first.step(BrowserAction::scroll(400)).await.unwrap();
    let later = first.step(BrowserAction::wait()).await.unwrap();
    assert_eq!(
        Picture::from_base64(&scrolled.observation.screenshot).pixels,
        Picture::from_base64(&later.observation.screenshot).pixels,
        "the screenshot after the scroll step is its final state"
    );

    // Closing a session disposes its context (and its tabs) at once; the remote keeps running.
    second.close().await.unwrap();
    let newtab = harness.page("newtab.html");
    let pages = remote.pages_until(|pages| !pages.contains(&newtab)).await;
    assert!(!pages.contains(&newtab), "{pages:?}");
    first.close().await.unwrap();
    harness.stop().await;
    let pages = remote.pages_until(|pages| pages == before).await;
    assert_eq!(pages, before, "only the remote's own tab is left");
    assert!(remote.running());
}

#[tokio::test]
async fn a_dead_endpoint_is_reported() {
    let error = remote_version("http://127.0.0.1:1", Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(format!("{error:#}").contains("cannot connect"), "{error:#}");
}

#[tokio::test]
async fn a_launch_cut_short_leaves_nothing_on_the_remote() {
    use browserenv_server::browser::{Browser, Launcher};
    use browserenv_server::chromium::{ChromiumConfig, ChromiumLauncher};
    let remote = RemoteChromium::start();
    let before = remote.page_urls().await;
    // Timeouts that cut the launch at different points: connecting, creating the context, opening
    // and preparing the tab, checking the viewport.
    for ms in [5, 20, 40, 80, 120, 200, 400] {
        let launcher = ChromiumLauncher::new(ChromiumConfig {
            remote: Some(remote.url()),
            launch_timeout: Duration::from_millis(ms),
            ..ChromiumConfig::default()
        });
        if let Ok(browser) = launcher.launch().await {
            browser.close().await;
        }
    }
    let pages = remote.pages_until(|pages| pages == before).await;
    assert_eq!(pages, before, "no context or tab of ours is left");
}
