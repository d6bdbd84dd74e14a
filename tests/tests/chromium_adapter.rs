//! The Chromium adapter below the episode logic: failures that only the browser seam can observe.

use std::time::Duration;

use browserenv::models::{Modifiers, MouseButton, Point};
use browserenv_server::browser::{Browser, Launcher, PageError};
use browserenv_server::chromium::{ChromiumBrowser, ChromiumConfig, ChromiumLauncher};
use browserenv_server::site::{serve_dir, SiteHandle};
use browserenv_tests::{assets_dir, chromium_path};

/// A fresh browser showing one of the test pages (and the site serving it).
async fn browser_on(page: &str) -> (ChromiumBrowser, SiteHandle) {
    let pages = serve_dir(assets_dir().join("pages")).await.unwrap();
    let launcher = ChromiumLauncher::new(ChromiumConfig {
        executable: chromium_path(),
        ..ChromiumConfig::default()
    });
    let mut browser = launcher.launch().await.unwrap();
    browser
        .goto(&pages.url(page), Duration::from_secs(10))
        .await
        .unwrap();
    (browser, pages)
}

/// Renderer processes in the browser's process group.
fn renderers_of(browser_pid: u32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_string_lossy().parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            // SAFETY: getpgid on an arbitrary pid only reads.
            let group = unsafe { libc::getpgid(pid) };
            let renderer = String::from_utf8_lossy(&cmdline).contains("--type=renderer");
            (renderer && group == browser_pid as i32).then_some(pid)
        })
        .collect()
}

#[tokio::test]
async fn a_killed_renderer_is_reported_as_crashed() {
    let (mut browser, _pages) = browser_on("long.html").await;
    let renderers = renderers_of(browser.pid().expect("a local browser"));
    assert!(!renderers.is_empty(), "a renderer runs the page");
    for pid in renderers {
        // SAFETY: killing a renderer of our own browser.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    // The click may be sent before Chromium reports the crash; it must fail once it does.
    let error = tokio::time::timeout(
        Duration::from_secs(10),
        browser.click(Point::new(10, 10), MouseButton::Left, 1, Modifiers::NONE),
    )
    .await
    .expect("the crash ends the pending command")
    .expect_err("a click on a dead renderer fails");
    assert_eq!(error, PageError::RendererCrashed);
    assert!(error.ends_episode());
    browser.close().await;
}

#[tokio::test]
async fn a_killed_browser_is_reported_as_disconnected() {
    let (mut browser, _pages) = browser_on("long.html").await;
    // SAFETY: killing our own browser's process group.
    unsafe {
        libc::killpg(
            browser.pid().expect("a local browser") as i32,
            libc::SIGKILL,
        );
    }
    let error = tokio::time::timeout(Duration::from_secs(10), browser.screenshot())
        .await
        .expect("a dead browser answers at once")
        .expect_err("no screenshot from a dead browser");
    assert!(matches!(error, PageError::Disconnected(_)), "{error:?}");
    assert_eq!(error.code(), "browser_disconnected");
    browser.close().await;
}

#[tokio::test]
async fn the_viewport_is_exactly_800_by_600_before_the_first_navigation() {
    let (mut browser, _pages) = browser_on("long.html").await;
    let facts = browser.facts().await.unwrap();
    assert_eq!(facts.title, "Long page");
    let png = browser.screenshot().await.unwrap();
    let picture = browserenv_tests::Picture::from_base64(&png);
    assert_eq!((picture.width, picture.height), (800, 600));
    browser.close().await;
}
