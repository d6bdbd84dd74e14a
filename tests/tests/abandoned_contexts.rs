//! Contexts left behind on a shared browser (`BROWSER_ISOLATION=context`): a reset, or a temporary
//! MCP call, whose client goes away mid-way has its future dropped wherever it was (opening the
//! context, opening its tab, loading the start page, settling). Whatever it had opened must be
//! disposed: the contexts on the browser, as Chromium itself reports them, are always those of the
//! live episodes plus the warm spare's.

use std::time::{Duration, Instant};

use browserenv::{BrowserAction, ResetOptions};
use browserenv_server::browser::Launcher;
use browserenv_server::chromium::{
    ChromiumConfig, ChromiumLauncher, Isolation, SharedContexts, CDP_COMMAND_TIMEOUT,
    DISPOSE_TIMEOUT,
};
use browserenv_server::environment::Environment;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_chromium, test_settings, Harness, RemoteChromium};
use serde_json::{json, Map, Value};

/// How many drop points each test tries, spread from "at once" to past a whole reset.
const DROP_POINTS: u32 = 14;

/// The longest anything a dropped reset left running may take to end on the server: opening the
/// next spare is bounded by the launch timeout, a context's creation by the CDP command timeout
/// (it runs on after its reset is dropped), and disposing the context then by `DISPOSE_TIMEOUT`.
fn settle_bound(chromium: &ChromiumConfig) -> Duration {
    chromium.launch_timeout.max(CDP_COMMAND_TIMEOUT) + DISPOSE_TIMEOUT
}

/// The browser's own DevTools WebSocket URL.
async fn devtools_url(remote: &RemoteChromium) -> String {
    let version: Value = reqwest::get(format!("{}/json/version", remote.url()))
        .await
        .expect("the remote browser answers")
        .json()
        .await
        .expect("its version");
    version["webSocketDebuggerUrl"]
        .as_str()
        .expect("a DevTools URL")
        .to_string()
}

/// The browser contexts on the remote browser (`Target.getBrowserContexts`: those created by
/// `Target.createBrowserContext`, by any connection), asked over a DevTools connection of our own.
async fn browser_contexts(devtools: &str) -> Vec<String> {
    let reply = browserenv_tests::devtools_call(devtools, "Target.getBrowserContexts").await;
    reply["browserContextIds"]
        .as_array()
        .unwrap_or_else(|| panic!("a context list: {reply}"))
        .iter()
        .map(|id| id.as_str().unwrap_or_default().to_string())
        .collect()
}

/// Ask `count` until it says `expected` twice in a row, or `bound` passed; the last answer.
async fn count_until<T, F, Fut>(expected: T, bound: Duration, count: F) -> T
where
    T: PartialEq,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = Instant::now() + bound;
    let mut agreed = 0;
    loop {
        let now = count().await;
        agreed = if now == expected { agreed + 1 } else { 0 };
        if agreed == 2 || Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `i`th of `DROP_POINTS` delays, from zero to a little past `whole`.
fn drop_point(i: u32, whole: Duration) -> Duration {
    whole * 6 / 5 * i / (DROP_POINTS - 1)
}

/// A server whose sessions are contexts of the remote browser, with the warm spare.
async fn shared_remote() -> (RemoteChromium, ChromiumConfig, Harness) {
    let remote = RemoteChromium::start();
    let chromium = ChromiumConfig {
        remote: Some(remote.url()),
        isolation: Isolation::Context,
        ..test_chromium()
    };
    let harness = Harness::start_with_browser(
        chromium.clone(),
        ServerConfig {
            settings: test_settings(),
            max_sessions: 8,
            warm_spare: true,
            ..ServerConfig::default()
        },
    )
    .await;
    (remote, chromium, harness)
}

/// The sessions the server lists.
async fn live_sessions(harness: &Harness) -> usize {
    let listed: Value = reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    listed.as_array().expect("a session list").len()
}

/// How long a whole reset of a new session takes here (the spare taken, the page loaded and
/// shown): the range the drop points are spread over.
async fn whole_reset(harness: &Harness) -> Duration {
    let mut client = harness.client().await;
    let started = Instant::now();
    let first = client
        .reset(ResetOptions::new(harness.page("canvas.html")))
        .await
        .unwrap();
    let whole = started.elapsed();
    assert_eq!(
        first.observation.error, "",
        "{:?}",
        first.observation.metadata
    );
    client.close().await.unwrap();
    whole
}

#[tokio::test]
async fn resets_dropped_with_their_socket_leave_no_context_on_a_shared_browser() {
    let (remote, chromium, harness) = shared_remote().await;
    let devtools = devtools_url(&remote).await;
    // One session that lives throughout, on the same browser.
    let (mut kept, _) = harness.open("canvas.html").await;
    let whole = whole_reset(&harness).await;

    for i in 0..DROP_POINTS {
        let mut client = harness.client().await;
        if i % 2 == 1 {
            // A session in its second episode: the reset disposes the first one's context too.
            client
                .reset(ResetOptions::new(harness.page("canvas.html")))
                .await
                .unwrap();
        }
        let reset = client.reset(ResetOptions::new(harness.page("canvas.html")));
        let _ = tokio::time::timeout(drop_point(i, whole), reset).await;
        // The socket closes: the server drops the reset wherever it is.
        drop(client);
    }

    let bound = settle_bound(&chromium);
    let sessions = count_until(1, bound, || live_sessions(&harness)).await;
    assert_eq!(sessions, 1, "only the kept session is left");
    // The kept session's context and the warm spare's.
    let contexts = count_until(2, bound, || async {
        browser_contexts(&devtools).await.len()
    })
    .await;
    assert_eq!(
        contexts, 2,
        "the browser holds the kept episode's and the spare's contexts, no more"
    );
    let step = kept.step(BrowserAction::click(5, 5)).await.unwrap();
    assert_eq!(
        step.observation.error, "",
        "{:?}",
        step.observation.metadata
    );
    kept.close().await.unwrap();
    harness.stop().await;
}

/// OpenEnv's `MCPToolClient` without a session: each call runs on a temporary session, closed
/// after the call. A client that hangs up mid-call must not leave that session's context behind.
#[tokio::test]
async fn a_temporary_mcp_call_dropped_mid_way_leaves_no_context_on_a_shared_browser() {
    let (remote, chromium, harness) = shared_remote().await;
    let devtools = devtools_url(&remote).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "reset", "arguments": {"start_url": harness.page("canvas.html")}}});
    let post = || {
        // A connection of its own each time, closed when the call is dropped.
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let request = http
            .post(format!("{}/mcp", harness.server.base_url()))
            .header("accept", "*/*")
            .json(&call)
            .send();
        async move {
            let reply: Value = request.await?.json().await?;
            Ok::<_, reqwest::Error>(reply)
        }
    };
    let started = Instant::now();
    let whole_call = post().await.unwrap();
    let whole = started.elapsed();
    assert_eq!(
        whole_call["result"]["data"]["error"], "",
        "a whole call works: {whole_call}"
    );

    for i in 0..DROP_POINTS {
        let _ = tokio::time::timeout(drop_point(i, whole), post()).await;
    }

    let bound = settle_bound(&chromium);
    let sessions = count_until(0, bound, || live_sessions(&harness)).await;
    assert_eq!(sessions, 0, "every temporary session ended");
    let contexts = count_until(1, bound, || async {
        browser_contexts(&devtools).await.len()
    })
    .await;
    assert_eq!(
        contexts, 1,
        "the browser holds the spare's context, no more"
    );
    harness.stop().await;
}

/// The same on the server's own Chromium, one environment's reset future cancelled at increasing
/// points: without the warm spare, the reset itself opens the context, so the cancellation can
/// land on `Target.createBrowserContext` in flight. The contexts are counted both ways: the
/// launcher's own count and Chromium's answer on the shared browser.
#[tokio::test]
async fn cancelled_resets_leave_no_context_on_the_servers_shared_browser() {
    let chromium = ChromiumConfig {
        isolation: Isolation::Context,
        ..test_chromium()
    };
    let launcher = std::sync::Arc::new(ChromiumLauncher::new(chromium.clone()));
    let mut env = Environment::new(launcher.clone(), test_settings());
    let pages = browserenv_server::site::serve_dir(browserenv_tests::assets_dir().join("pages"))
        .await
        .expect("pages are served");
    let mut kwargs = Map::new();
    kwargs.insert("start_url".into(), json!(pages.url("canvas.html")));

    // The first reset starts the shared browser; the second is what a reset costs on it.
    env.reset(&kwargs).await.unwrap();
    let started = Instant::now();
    env.reset(&kwargs).await.unwrap();
    let whole = started.elapsed();
    env.close().await;

    let counts = || async {
        let counts: SharedContexts = launcher
            .shared_contexts()
            .await
            .expect("the shared browser answers")
            .expect("the shared browser runs");
        (counts.held, counts.in_browser.len())
    };
    let bound = settle_bound(&chromium);
    for i in 0..DROP_POINTS {
        let point = drop_point(i, whole);
        let finished = tokio::time::timeout(point, env.reset(&kwargs)).await;
        if finished.is_ok() {
            // It finished: its episode ends the normal way.
            env.close().await;
        }
        // Nothing is live: every context opened so far is disposed, by both counts.
        let left = count_until((0, 0), bound, counts).await;
        assert_eq!(
            left,
            (0, 0),
            "drop point {i} ({point:?}) left contexts (held by the server, in the browser)"
        );
    }
    // One live episode: one context, by both counts.
    env.reset(&kwargs).await.unwrap();
    assert_eq!(counts().await, (1, 1), "one episode, one context");
    env.close().await;
    launcher.shutdown().await;
}
