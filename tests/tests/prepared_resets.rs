//! Resets from a prepared page (`Browser::prepare_next`): a session that resets to the page it
//! started on last gets it as its next context loaded it while the episode ran, in a context of
//! its own that the episode before never touched; a page that changed since it was prepared, or
//! another start, is loaded afresh.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::Html;
use axum::routing::get;
use axum::Router;
use browserenv::{BrowserAction, Client, ResetOptions, StepResult};
use browserenv_server::chromium::ChromiumConfig;
use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_chromium, test_settings, title, Harness, Picture};

/// A site of the test's own: `/start` shows what of an earlier episode it finds (a cookie, a
/// `localStorage` item) and has a button that leaves both; `/changing` changes by itself 1.5 s
/// after it loads. Each load of a page is numbered in its title.
async fn site() -> (String, tokio::task::JoinHandle<()>) {
    let loads = Arc::new(AtomicU64::new(0));
    let start = |State(loads): State<Arc<AtomicU64>>| async move {
        let load = loads.fetch_add(1, Ordering::SeqCst) + 1;
        Html(format!(
            "<!doctype html><html><head><meta charset=utf-8><title>load {load}</title>\
             <style>body {{ margin: 0; font: 24px sans-serif; }} \
             #leave {{ position: absolute; left: 0; top: 0; width: 400px; height: 100px; }} \
             #found {{ position: absolute; left: 0; top: 150px; }}</style></head><body>\
             <button id=leave>leave state</button><div id=found></div><script>\
             const found = 'cookie=' + (document.cookie.includes('left=1') ? 'yes' : 'no') + \
             ' storage=' + (localStorage.getItem('left') ? 'yes' : 'no');\
             document.getElementById('found').textContent = found;\
             document.title += ' ' + found;\
             leave.onclick = () => {{ document.cookie = 'left=1; max-age=3600; path=/';\
             localStorage.setItem('left', '1'); document.title = 'left'; }};\
             </script></body></html>"
        ))
    };
    let changing = |State(loads): State<Arc<AtomicU64>>| async move {
        let load = loads.fetch_add(1, Ordering::SeqCst) + 1;
        Html(format!(
            "<!doctype html><html><head><meta charset=utf-8><title>load {load} as loaded</title>\
             </head><body style='margin:0;font:24px sans-serif'><p id=p>as loaded</p><script>\
             setTimeout(() => {{ p.textContent = 'changed'; document.title = 'changed'; }}, 1500);\
             </script></body></html>"
        ))
    };
    let app = Router::new()
        .route("/start", get(start))
        .route("/other", get(start))
        .route("/changing", get(changing))
        .with_state(loads);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (base, task)
}

/// A server as it runs by default: each session's next context opened ahead, and with it the
/// page the session last started on.
async fn server(prepared: bool) -> Harness {
    let chromium = ChromiumConfig {
        spare_contexts: true,
        ..test_chromium()
    };
    let settings = EnvSettings {
        prepared_resets: prepared,
        ..test_settings()
    };
    Harness::start_with_browser(
        chromium,
        ServerConfig {
            settings,
            ..ServerConfig::default()
        },
    )
    .await
}

fn prepared(result: &StepResult) -> bool {
    result.observation.metadata.get("prepared") == Some(&serde_json::json!(true))
}

/// What the page says it found, and the load it was.
fn found(result: &StepResult) -> String {
    let shown = title(result);
    shown
        .split_once(' ')
        .and_then(|(_, rest)| rest.split_once(' '))
        .map_or(shown.clone(), |(_, found)| found.to_string())
}

/// Reset to `url`, giving the page loaded ahead time to be ready first (an agent's episode).
async fn reset_after_an_episode(client: &mut Client, url: &str) -> StepResult {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    client.reset(ResetOptions::new(url)).await.unwrap()
}

#[tokio::test]
async fn a_reset_to_the_same_start_takes_the_page_loaded_ahead_and_finds_nothing_of_the_episode_before(
) {
    let (site, task) = site().await;
    let start = format!("{site}/start");
    let harness = server(true).await;
    let fresh = server(false).await;
    let mut client = harness.client().await;
    let first = client.reset(ResetOptions::new(&start)).await.unwrap();
    assert!(!prepared(&first), "the session's first page is loaded");
    assert_eq!(found(&first), "cookie=no storage=no");
    for episode in 2..=3 {
        // The episode leaves a cookie and an item in localStorage.
        let left = client.step(BrowserAction::click(200, 50)).await.unwrap();
        assert_eq!(title(&left), "left", "{:?}", left.observation.metadata);
        let next = reset_after_an_episode(&mut client, &start).await;
        assert!(
            prepared(&next),
            "episode {episode} starts on the page loaded ahead: {:?}",
            next.observation.metadata
        );
        assert_eq!(
            found(&next),
            "cookie=no storage=no",
            "episode {episode} finds nothing of the episode before"
        );
        assert_eq!(next.observation.url, start);
        // The first observation a load gives: the picture of a fresh load on a server that
        // prepares nothing.
        let mut other = fresh.client().await;
        let loaded = other.reset(ResetOptions::new(&start)).await.unwrap();
        assert!(!prepared(&loaded));
        let (a, b) = (
            Picture::from_base64(&next.observation.screenshot),
            Picture::from_base64(&loaded.observation.screenshot),
        );
        assert!(
            a.pixels == b.pixels,
            "episode {episode}: the picture of a load"
        );
        other.close().await.unwrap();
    }
    client.close().await.unwrap();
    harness.stop().await;
    fresh.stop().await;
    task.abort();
}

#[tokio::test]
async fn a_page_that_changed_since_it_was_prepared_or_another_start_is_loaded_afresh() {
    let (site, task) = site().await;
    let harness = server(true).await;
    let mut client = harness.client().await;
    // The page changes by itself 1.5 s after it loads: the one loaded ahead has changed by the
    // next reset, and the reset loads it again.
    let changing = format!("{site}/changing");
    let first = client.reset(ResetOptions::new(&changing)).await.unwrap();
    assert!(title(&first).ends_with("as loaded"), "{}", title(&first));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let again = reset_after_an_episode(&mut client, &changing).await;
    assert!(!prepared(&again), "{:?}", again.observation.metadata);
    assert!(title(&again).ends_with("as loaded"), "{}", title(&again));
    // Another start than the one prepared: loaded, in a fresh context.
    let start = format!("{site}/start");
    let other = reset_after_an_episode(&mut client, &start).await;
    assert!(!prepared(&other));
    assert_eq!(found(&other), "cookie=no storage=no");
    assert_eq!(
        title(&client.step(BrowserAction::click(200, 50)).await.unwrap()),
        "left"
    );
    // After a start that was not the one before, nothing is prepared; the next one that repeats
    // it is, and finds nothing left.
    let other_page = format!("{site}/other");
    let moved = reset_after_an_episode(&mut client, &other_page).await;
    assert!(!prepared(&moved));
    assert_eq!(found(&moved), "cookie=no storage=no");
    let repeated = reset_after_an_episode(&mut client, &other_page).await;
    assert!(!prepared(&repeated), "a start seen once is not prepared");
    let prepared_now = reset_after_an_episode(&mut client, &other_page).await;
    assert!(
        prepared(&prepared_now),
        "{:?}",
        prepared_now.observation.metadata
    );
    assert_eq!(found(&prepared_now), "cookie=no storage=no");
    client.close().await.unwrap();
    harness.stop().await;
    task.abort();
}

/// Resets back to back (a benchmark's, a client retrying) would each wait for the page loaded
/// ahead just before them, longer than a load of their own: after an episode shorter than the
/// last load nothing is loaded ahead, and an agent's episode brings it back.
#[tokio::test]
async fn resets_back_to_back_load_their_own_page() {
    let (site, task) = site().await;
    let harness = server(true).await;
    let mut client = harness.client().await;
    let start = format!("{site}/start");
    client.reset(ResetOptions::new(&start)).await.unwrap();
    // The first start was prepared for the next, whenever it comes.
    client.reset(ResetOptions::new(&start)).await.unwrap();
    for _ in 0..3 {
        let next = client.reset(ResetOptions::new(&start)).await.unwrap();
        assert!(!prepared(&next), "{:?}", next.observation.metadata);
        assert_eq!(found(&next), "cookie=no storage=no");
    }
    // An episode: the one after it loaded ahead again.
    reset_after_an_episode(&mut client, &start).await;
    let after = reset_after_an_episode(&mut client, &start).await;
    assert!(prepared(&after), "{:?}", after.observation.metadata);
    assert_eq!(found(&after), "cookie=no storage=no");
    client.close().await.unwrap();
    harness.stop().await;
    task.abort();
}
