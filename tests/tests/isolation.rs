//! Isolation on real Chromium: what one episode leaves in the browser must not reach the next,
//! whichever way episodes share browsers (`Isolation`, `episodes_per_browser`), and a crash on a
//! shared browser ends only what it must.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use browserenv::{BrowserAction, Client, ResetOptions, StepResult};
use browserenv_server::chromium::{ChromiumConfig, Isolation};
use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;
use browserenv_tests::{assets_dir, test_chromium, title, Harness};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

/// The origin the isolation pages run on: a tiny HTTP server of the test's own, so it can count
/// what reaches it, send cache headers and ask for HTTP authentication.
struct Site {
    port: u16,
    counts: Arc<Mutex<HashMap<String, u64>>>,
    task: tokio::task::JoinHandle<()>,
}

/// The credentials `/auth/` accepts: `user:secret` in Basic.
const AUTHORIZATION: &str = "Basic dXNlcjpzZWNyZXQ=";

impl Site {
    async fn start() -> Site {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("the site listens");
        let port = listener.local_addr().unwrap().port();
        let counts: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
        let shared = counts.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        Site { port, counts, task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    fn count(&self, what: &str) -> u64 {
        self.counts.lock().unwrap().get(what).copied().unwrap_or(0)
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request on one connection (`connection: close`).
async fn serve(mut stream: tokio::net::TcpStream, counts: Arc<Mutex<HashMap<String, u64>>>) {
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let path = target.split('?').next().unwrap_or("/").to_string();
    let authorized = head.lines().any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.eq_ignore_ascii_case("authorization") && value.trim() == AUTHORIZATION
        })
    });
    let count = |what: &str| {
        let mut counts = counts.lock().unwrap();
        let n = counts.entry(what.to_string()).or_default();
        *n += 1;
        *n
    };
    count(&format!("GET {path}"));
    let no_store = "cache-control: no-store\r\n".to_string();
    let (status, headers, content_type, body): (&str, String, &str, String) = match path.as_str() {
        "/isolation.html" => {
            match std::fs::read_to_string(assets_dir().join("pages/isolation.html")) {
                Ok(page) => ("200 OK", no_store, "text/html", page),
                Err(_) => ("404 Not Found", no_store, "text/plain", String::new()),
            }
        }
        "/sw.js" => (
            "200 OK",
            no_store,
            "text/javascript",
            "self.addEventListener('install', () => self.skipWaiting());".into(),
        ),
        // Cacheable for an hour: a browser that kept its HTTP cache asks only once.
        "/cached.txt" => {
            let serial = count("served cached.txt");
            (
                "200 OK",
                "cache-control: max-age=3600\r\n".into(),
                "text/plain",
                format!("{serial}"),
            )
        }
        // A challenge, answered by credentials given to XMLHttpRequest.open: Chromium keeps them in
        // its HTTP auth cache for the realm and the path /auth/.
        "/auth/xhr" if authorized => ("200 OK", no_store, "text/plain", "ok".into()),
        "/auth/xhr" => (
            "401 Unauthorized",
            format!("{no_store}www-authenticate: Basic realm=\"isolation\"\r\n"),
            "text/plain",
            "no".into(),
        ),
        // Whether the request came with the cached credentials, without a challenge (which would
        // ask for a login prompt).
        "/auth/probe" => {
            if authorized {
                count("authorized probe");
            }
            let said = if authorized { "yes" } else { "no" };
            ("200 OK", no_store, "text/plain", said.into())
        }
        // The protected page itself, for a plain navigation.
        "/auth/page" if authorized => {
            count("authorized page");
            (
                "200 OK",
                no_store,
                "text/html",
                "<!doctype html><title>auth page: yes</title><p>Authorized.</p>".into(),
            )
        }
        "/auth/page" => {
            count("refused page");
            (
                "401 Unauthorized",
                format!("{no_store}www-authenticate: Basic realm=\"isolation\"\r\n"),
                "text/html",
                "<!doctype html><title>auth page: no</title><p>Unauthorized.</p>".into(),
            )
        }
        _ => ("404 Not Found", no_store, "text/plain", String::new()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{headers}\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Generous bounds: the tests run two at a time on a small machine, and what they check is what
/// survives, not how fast.
fn settings() -> EnvSettings {
    EnvSettings {
        max_steps: 200,
        explicit_wait: Duration::from_millis(200),
        page_load_timeout: Duration::from_secs(30),
        ..EnvSettings::default()
    }
}

/// A folder of its own for a test's browser profiles, so the test can tell its browsers from
/// those of the tests running beside it. Removed at the end.
struct ProfileRoot(PathBuf);

impl ProfileRoot {
    fn new(name: &str) -> ProfileRoot {
        let root = std::env::temp_dir().join(format!("iso-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        ProfileRoot(root)
    }

    /// The pids of the live browser processes (not their renderers and helpers, which carry a
    /// `--type=`) with a profile in this folder.
    fn browsers(&self) -> Vec<i32> {
        let needle = format!("--user-data-dir={}/", self.0.display());
        let mut found: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| {
                let pid: i32 = entry.file_name().to_string_lossy().parse().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let args: Vec<String> = cmdline
                    .split(|b| *b == 0)
                    .map(|arg| String::from_utf8_lossy(arg).to_string())
                    .collect();
                let ours = args.iter().any(|arg| arg.starts_with(&needle));
                let helper = args.iter().any(|arg| arg.starts_with("--type="));
                (ours && !helper && alive(pid)).then_some(pid)
            })
            .collect();
        found.sort_unstable();
        found
    }

    /// The browsers once they satisfy `done` (or a generous bound passed).
    async fn browsers_until(&self, done: impl Fn(&[i32]) -> bool) -> Vec<i32> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let browsers = self.browsers();
            if done(&browsers) || Instant::now() > deadline {
                return browsers;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for ProfileRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `pid` runs (a zombie, killed but not yet reaped by the server, does not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// SIGKILL `pid` and wait until it has stopped running.
async fn kill(pid: i32) {
    // SAFETY: a plain syscall on a browser process this test's server launched.
    let sent = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(sent, 0, "SIGKILL {pid}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(Instant::now() < deadline, "{pid} still runs after SIGKILL");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn harness(chromium: ChromiumConfig, warm_spare: bool) -> Harness {
    // Each session's next context opened ahead, as the server runs by default.
    let chromium = ChromiumConfig {
        spare_contexts: true,
        ..chromium
    };
    Harness::start_with_browser(
        chromium,
        ServerConfig {
            settings: settings(),
            max_sessions: 4,
            warm_spare,
            ..ServerConfig::default()
        },
    )
    .await
}

/// Step `wait` until the title satisfies `done`, an error shows or a generous bound passes; the
/// last result.
async fn until_title(client: &mut Client, done: impl Fn(&str) -> bool) -> StepResult {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let result = client.step(BrowserAction::wait()).await.unwrap();
        let stop = done(&title(&result)) || result.done || !result.observation.error.is_empty();
        if stop || Instant::now() > deadline {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// After the click on `isolation.html?do=set`: wait for the check page it goes on to. A service
/// worker that stays paused for a debugger (see `a_service_worker_that_controls_its_page_registers`)
/// is resumed from a DevTools connection of the test's own, so that the rest can be tested.
async fn set_everything(client: &mut Client, profiles: &ProfileRoot) -> StepResult {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut stuck_since = None;
    loop {
        let result = client.step(BrowserAction::wait()).await.unwrap();
        let shown = title(&result);
        let ended = shown.starts_with("check: ") || shown.starts_with("set failed");
        if ended || result.done || !result.observation.error.is_empty() || Instant::now() > deadline
        {
            return result;
        }
        if shown == "set: setting sw" {
            let since = *stuck_since.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_secs(3) {
                let resumed = resume_service_workers(profiles).await;
                eprintln!(
                    "the service worker was still starting after {:?}: resumed {resumed} paused \
                     for a debugger (see a_service_worker_that_controls_its_page_registers)",
                    since.elapsed()
                );
                stuck_since = None;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A DevTools connection of the test's own to a browser of `profiles`.
struct Cdp {
    socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    id: u64,
}

impl Cdp {
    /// Connect to each browser with a profile in `profiles`, from the port it wrote.
    async fn connect_all(profiles: &ProfileRoot) -> Vec<Cdp> {
        let mut connections = Vec::new();
        for entry in std::fs::read_dir(&profiles.0).unwrap().flatten() {
            let Ok(text) = std::fs::read_to_string(entry.path().join("DevToolsActivePort")) else {
                continue;
            };
            let mut lines = text.lines();
            let (Some(port), Some(path)) = (lines.next(), lines.next()) else {
                continue;
            };
            let url = format!("ws://127.0.0.1:{port}{path}");
            if let Ok((socket, _)) = tokio_tungstenite::connect_async(url).await {
                connections.push(Cdp { socket, id: 0 });
            }
        }
        connections
    }

    /// Send a command (to the browser, or to an attached `session`) and wait for its answer.
    async fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.id += 1;
        let mut request = json!({"id": self.id, "method": method, "params": params});
        if let Some(session) = session {
            request["sessionId"] = session.into();
        }
        self.socket
            .send(Message::text(request.to_string()))
            .await
            .unwrap();
        let answer = async {
            while let Some(Ok(frame)) = self.socket.next().await {
                let Message::Text(text) = frame else { continue };
                let value: Value = serde_json::from_str(&text).unwrap_or_default();
                if value["id"] == self.id {
                    return value;
                }
            }
            Value::Null
        };
        tokio::time::timeout(Duration::from_secs(10), answer)
            .await
            .unwrap_or_default()
    }
}

/// Let every service worker of the test's browsers run if it waits for a debugger; how many
/// were told.
async fn resume_service_workers(profiles: &ProfileRoot) -> usize {
    let mut resumed = 0;
    for mut cdp in Cdp::connect_all(profiles).await {
        let targets = cdp.call(None, "Target.getTargets", json!({})).await;
        let workers: Vec<String> = targets["result"]["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|target| target["type"] == "service_worker")
            .filter_map(|target| target["targetId"].as_str().map(str::to_string))
            .collect();
        for worker in workers {
            let params = json!({"targetId": worker, "flatten": true});
            let attached = cdp.call(None, "Target.attachToTarget", params).await;
            let Some(session) = attached["result"]["sessionId"].as_str() else {
                continue;
            };
            let session = session.to_string();
            cdp.call(Some(&session), "Runtime.runIfWaitingForDebugger", json!({}))
                .await;
            cdp.call(
                None,
                "Target.detachFromTarget",
                json!({"sessionId": session}),
            )
            .await;
            resumed += 1;
        }
        let _ = cdp.socket.close(None).await;
    }
    resumed
}

/// Click the check page's link to `/auth/page`; the first observation that shows where it led
/// (the page's title, or an error).
async fn to_protected_page(client: &mut Client) -> StepResult {
    let clicked = client.step(BrowserAction::click(200, 50)).await.unwrap();
    // The answer can take a round more than the click's settle: a challenge answered from the
    // auth cache, a refusal reported when the navigation ends.
    let shown = |result: &StepResult| {
        result.done
            || !result.observation.error.is_empty()
            || title(result).starts_with("auth page")
    };
    if shown(&clicked) {
        return clicked;
    }
    until_title(client, |t| t.starts_with("auth page")).await
}

/// What `isolation.html?do=check` reports, by name ("cookie" → "yes").
fn findings(result: &StepResult) -> HashMap<String, String> {
    let shown = title(result);
    let Some(found) = shown.strip_prefix("check: ") else {
        panic!(
            "the page reported no findings: {shown:?} ({} {:?})",
            result.observation.error, result.observation.metadata
        );
    };
    found
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// Load the check page in a new episode of `client` and read what it finds.
async fn check_in_new_episode(client: &mut Client, site: &Site) -> HashMap<String, String> {
    let first = client
        .reset(ResetOptions::new(site.url("isolation.html?do=check")))
        .await
        .unwrap();
    assert_eq!(
        first.observation.error, "",
        "{:?}",
        first.observation.metadata
    );
    let checked = if title(&first).starts_with("check: ") {
        first
    } else {
        until_title(client, |t| t.starts_with("check: ")).await
    };
    findings(&checked)
}

/// The state names the page sets and looks for, and what the check page reports when the state
/// is there (`http`: the serial number of the first copy the server served).
const PRESENT: &[(&str, &str)] = &[
    ("cookie", "yes"),
    ("storage", "yes"),
    ("idb", "yes"),
    ("cache", "yes"),
    ("sw", "yes"),
    ("http", "1"),
    ("auth", "yes"),
    ("notifications", "denied/denied"),
];

/// What the check page reports in a browser context that holds none of it (for `http`, checked
/// apart: a fresh copy's serial).
const ABSENT: &[(&str, &str)] = &[
    ("cookie", "no"),
    ("storage", "no"),
    ("idb", "no"),
    ("cache", "no"),
    ("sw", "no"),
    ("auth", "no"),
    ("notifications", "prompt/default"),
];

/// `found` holds `wanted` for every name; a message naming every difference otherwise.
fn differences(found: &HashMap<String, String>, wanted: &[(&str, &str)]) -> Vec<String> {
    wanted
        .iter()
        .filter(|(name, value)| found.get(*name).map(String::as_str) != Some(*value))
        .map(|(name, value)| {
            format!(
                "{name}: {} instead of {value}",
                found.get(*name).map_or("(missing)", String::as_str)
            )
        })
        .collect()
}

/// Whether the HTTP cache was bypassed: the copy the page got is one the server had to serve
/// fresh, `before` copies having been served before.
fn assert_fresh_copy(found: &HashMap<String, String>, site: &Site, before: u64, what: &str) {
    let served = site.count("served cached.txt");
    assert_eq!(
        served,
        before + 1,
        "{what}: the server served the cached resource again"
    );
    assert_eq!(
        found.get("http").map(String::as_str),
        Some(served.to_string().as_str()),
        "{what}: the page got the fresh copy"
    );
}

/// An observation for a failure message: where it is, its error and metadata (not the picture).
fn shown(result: &StepResult) -> String {
    let observation = &result.observation;
    format!(
        "{} error={:?} done={} {:?}",
        observation.url, observation.error, result.done, observation.metadata
    )
}

/// Episode 1 leaves every kind of state behind (and reads it back after a navigation), episode 2
/// of the same session finds none of it; nor does another session during episode 1. With more
/// than one episode per browser, episode 2 runs on episode 1's browser (in a new context).
async fn episodes_do_not_share_state(isolation: Isolation, episodes_per_browser: u32) {
    let name = format!("{isolation:?}-{episodes_per_browser}").to_lowercase();
    let profiles = ProfileRoot::new(&name);
    let chromium = ChromiumConfig {
        isolation,
        episodes_per_browser,
        profile_root: profiles.0.clone(),
        ..test_chromium()
    };
    // No warm spare: every browser process is there because an episode asked for it, so the
    // test knows which one serves which episode.
    let harness = harness(chromium, false).await;
    let site = Site::start().await;
    let mut client = harness.client().await;

    // Episode 1: a trusted click leaves everything behind, then the page navigates to the check.
    let first = client
        .reset(ResetOptions::new(site.url("isolation.html?do=set")))
        .await
        .unwrap();
    assert_eq!(title(&first), "set: ready", "{}", shown(&first));
    let first_browsers = profiles.browsers();
    assert_eq!(
        first_browsers.len(),
        1,
        "{name}: one browser for the first episode"
    );
    let clicked = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(
        clicked.observation.error, "",
        "{:?}",
        clicked.observation.metadata
    );
    let checked = set_everything(&mut client, &profiles).await;
    assert!(
        title(&checked).starts_with("check: "),
        "{name}: {} {:?}",
        title(&checked),
        site.counts.lock().unwrap()
    );
    let found = findings(&checked);
    let missing = differences(&found, PRESENT);
    assert!(
        missing.is_empty(),
        "{name}: episode 1 could not set or read back: {missing:?} ({found:?})"
    );
    assert_eq!(
        site.count("served cached.txt"),
        1,
        "{name}: the second fetch in episode 1 came from the HTTP cache"
    );
    assert_eq!(site.count("authorized probe"), 1, "{name}");
    // A plain navigation to the protected page gets in with the cached credentials.
    let page = to_protected_page(&mut client).await;
    assert_eq!(
        (title(&page).as_str(), page.observation.error.as_str()),
        ("auth page: yes", ""),
        "{name}: {}",
        shown(&page)
    );
    assert_eq!(site.count("authorized page"), 1, "{name}");

    // Another session meanwhile (a context on the same browser with context isolation) finds
    // nothing of it.
    let mut other = harness.client().await;
    let before = site.count("served cached.txt");
    let found = check_in_new_episode(&mut other, &site).await;
    let leaked = differences(&found, ABSENT);
    assert!(
        leaked.is_empty(),
        "{name}: another session saw episode 1's {leaked:?} ({found:?})"
    );
    assert_fresh_copy(&found, &site, before, &format!("{name}, another session"));
    if isolation == Isolation::Context {
        assert_eq!(
            profiles.browsers(),
            first_browsers,
            "{name}: the browser is shared"
        );
    }
    other.close().await.unwrap();
    // Its browser, with process isolation, goes with it.
    profiles.browsers_until(|b| b == first_browsers).await;

    // Episode 2 of the same session: nothing survived the reset.
    let before = site.count("served cached.txt");
    let found = check_in_new_episode(&mut client, &site).await;
    let second_browsers = profiles.browsers_until(|b| b.len() == 1).await;
    if episodes_per_browser > 1 {
        assert_eq!(
            second_browsers, first_browsers,
            "{name}: the second episode is a new context on the same browser"
        );
    } else {
        assert_eq!(second_browsers.len(), 1, "{name}: {second_browsers:?}");
        assert_ne!(
            second_browsers, first_browsers,
            "{name}: the second episode has a new browser"
        );
    }
    let survived = differences(&found, ABSENT);
    assert!(
        survived.is_empty(),
        "{name}: survived the reset: {survived:?} ({found:?})"
    );
    assert_fresh_copy(&found, &site, before, &format!("{name}, episode 2"));
    assert_eq!(site.count("authorized probe"), 1, "{name}");
    // A plain navigation to the protected page is refused now: 401, which headless Chromium
    // reports as a failed navigation instead of prompting.
    let refused = site.count("refused page");
    let page = to_protected_page(&mut client).await;
    assert_eq!(
        site.count("refused page"),
        refused + 1,
        "{name}: {}",
        shown(&page)
    );
    assert_eq!(
        site.count("authorized page"),
        1,
        "{name}: the credentials survived"
    );
    assert_eq!(
        page.observation.error,
        "navigation_failed",
        "{name}: {}",
        shown(&page)
    );
    let detail = page.observation.metadata["error_detail"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(detail, "net::ERR_INVALID_AUTH_CREDENTIALS", "{name}");
    assert_ne!(title(&page), "auth page: yes", "{name}");

    client.close().await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn episodes_of_a_session_with_its_own_browser_share_no_state() {
    episodes_do_not_share_state(Isolation::Process, 100).await;
}

#[tokio::test]
async fn episodes_on_a_shared_browser_share_no_state() {
    episodes_do_not_share_state(Isolation::Context, 100).await;
}

#[tokio::test]
async fn episodes_with_a_browser_each_share_no_state() {
    episodes_do_not_share_state(Isolation::Process, 1).await;
}

/// A step that went on normally: no error, a picture, the click seen by the page.
fn assert_clicked(result: &StepResult, x: i64, y: i64, who: &str) {
    assert_eq!(
        result.observation.error, "",
        "{who}: {:?}",
        result.observation.metadata
    );
    assert!(!result.done, "{who}");
    assert!(
        !result.observation.screenshot.is_empty(),
        "{who}: a screenshot"
    );
    assert_eq!(title(result), format!("clicked {x},{y}"), "{who}");
    assert!(
        result.observation.metadata.get("error_detail").is_none(),
        "{who}: {:?}",
        result.observation.metadata
    );
}

#[tokio::test]
async fn a_renderer_crash_on_a_shared_browser_ends_only_its_session() {
    let profiles = ProfileRoot::new("renderer-crash");
    let chromium = ChromiumConfig {
        isolation: Isolation::Context,
        renderer_memory_mb: 512,
        profile_root: profiles.0.clone(),
        ..test_chromium()
    };
    let harness = harness(chromium, true).await;
    let (mut bystander, _) = harness.open("canvas.html").await;
    let (mut bomber, _) = harness.open("memorybomb.html?kind=buffers").await;
    assert_eq!(profiles.browsers().len(), 1, "both sessions on one browser");

    // The page allocates about 1 GiB a step until the watchdog kills its renderer. The other
    // session steps meanwhile, so that it would see the kill if it were told of it.
    let mut result = bomber.step(BrowserAction::click(200, 50)).await.unwrap();
    for i in 0..6 {
        let clicked = bystander
            .step(BrowserAction::click(10 + i, 10))
            .await
            .unwrap();
        assert_clicked(&clicked, 10 + i, 10, "the other session, during the bomb");
    }
    for _ in 0..6 {
        if result.done {
            break;
        }
        result = bomber.step(BrowserAction::wait()).await.unwrap();
    }
    assert!(
        result.done && result.observation.error == "renderer_crashed",
        "{} {:?}",
        result.observation.error,
        result.observation.metadata
    );
    let detail = result.observation.metadata["error_detail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        detail.contains("over the limit of 512 MiB (BROWSER_RENDERER_MEMORY_MB)"),
        "the crashed session is told why: {detail:?}"
    );

    // The other session goes on, on the same browser.
    let clicked = bystander.step(BrowserAction::click(5, 5)).await.unwrap();
    assert_clicked(&clicked, 5, 5, "the other session, after the crash");
    // And the crashed one starts again.
    let again = bomber
        .reset(ResetOptions::new(harness.page("canvas.html")))
        .await
        .unwrap();
    assert_eq!(
        again.observation.error, "",
        "{:?}",
        again.observation.metadata
    );
    assert!(!again.done);
    let clicked = bomber.step(BrowserAction::click(7, 7)).await.unwrap();
    assert_clicked(&clicked, 7, 7, "the crashed session, reset");
    let clicked = bystander.step(BrowserAction::click(6, 6)).await.unwrap();
    assert_clicked(&clicked, 6, 6, "the other session, at the end");
    assert_eq!(profiles.browsers().len(), 1, "still one browser");

    bomber.close().await.unwrap();
    bystander.close().await.unwrap();
    harness.stop().await;
}

/// A renderer killed for its memory while its session is between steps: the reason belongs to that
/// session's crash, not to whichever session on the browser steps next. The kill report is the
/// browser's (`Host::take_memory_kill`), so only an episode whose renderer crashed may take it.
#[tokio::test]
async fn a_memory_kill_is_reported_to_its_own_session_on_a_shared_browser() {
    let profiles = ProfileRoot::new("kill-report");
    let chromium = ChromiumConfig {
        isolation: Isolation::Context,
        renderer_memory_mb: 512,
        profile_root: profiles.0.clone(),
        ..test_chromium()
    };
    let harness = harness(chromium, true).await;
    let (mut bystander, _) = harness.open("canvas.html").await;
    let (mut bomber, _) = harness
        .open("memorybomb.html?kind=buffers&after=2000")
        .await;
    let clicked = bomber.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(
        title(&clicked),
        "allocating in 2000 ms",
        "the step ends before the bomb"
    );
    assert!(!clicked.done);
    // The bomb goes off and its renderer is killed (within a second of its start, measured),
    // while neither session steps.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let clicked = bystander.step(BrowserAction::click(5, 5)).await.unwrap();
    assert_clicked(&clicked, 5, 5, "the other session, after the kill");
    let mut result = bomber.step(BrowserAction::wait()).await.unwrap();
    for _ in 0..4 {
        if result.done {
            break;
        }
        result = bomber.step(BrowserAction::wait()).await.unwrap();
    }
    assert_eq!(result.observation.error, "renderer_crashed");
    let detail = result.observation.metadata["error_detail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        detail.contains("over the limit of 512 MiB (BROWSER_RENDERER_MEMORY_MB)"),
        "the crashed session is told why: {detail:?}"
    );
    bomber.close().await.unwrap();
    bystander.close().await.unwrap();
    harness.stop().await;
}

/// The next step of `client` after its browser was killed: `browser_disconnected`, the end.
async fn assert_disconnected(client: &mut Client, who: &str) {
    let result = client.step(BrowserAction::click(5, 5)).await.unwrap();
    assert_eq!(
        result.observation.error, "browser_disconnected",
        "{who}: {:?}",
        result.observation.metadata
    );
    assert!(result.done, "{who}: the episode ends");
}

#[tokio::test]
async fn a_crashed_shared_browser_ends_every_session_on_it_and_is_replaced() {
    let profiles = ProfileRoot::new("browser-crash");
    let chromium = ChromiumConfig {
        isolation: Isolation::Context,
        profile_root: profiles.0.clone(),
        ..test_chromium()
    };
    // With the warm spare, a context on the same browser, which dies with it.
    let harness = harness(chromium, true).await;
    let (mut a, _) = harness.open("canvas.html").await;
    let (mut b, _) = harness.open("canvas.html").await;
    assert_clicked(
        &a.step(BrowserAction::click(3, 3)).await.unwrap(),
        3,
        3,
        "a",
    );
    assert_clicked(
        &b.step(BrowserAction::click(4, 4)).await.unwrap(),
        4,
        4,
        "b",
    );
    let browsers = profiles.browsers();
    assert_eq!(
        browsers.len(),
        1,
        "both sessions on one browser: {browsers:?}"
    );

    kill(browsers[0]).await;
    assert_disconnected(&mut a, "a").await;
    assert_disconnected(&mut b, "b").await;

    // A new episode on each session runs on a new browser.
    for (client, who) in [(&mut a, "a"), (&mut b, "b")] {
        let again = client
            .reset(ResetOptions::new(harness.page("canvas.html")))
            .await
            .unwrap();
        assert_eq!(
            again.observation.error, "",
            "{who}: {:?}",
            again.observation.metadata
        );
        assert!(!again.done, "{who}");
    }
    assert_clicked(
        &a.step(BrowserAction::click(8, 8)).await.unwrap(),
        8,
        8,
        "a, reset",
    );
    assert_clicked(
        &b.step(BrowserAction::click(9, 9)).await.unwrap(),
        9,
        9,
        "b, reset",
    );
    let replaced = profiles.browsers_until(|b| b.len() == 1).await;
    assert_eq!(replaced.len(), 1, "one shared browser again: {replaced:?}");
    assert_ne!(replaced, browsers, "a new browser");

    a.close().await.unwrap();
    b.close().await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn a_killed_browser_with_process_isolation_ends_only_its_session() {
    let profiles = ProfileRoot::new("process-kill");
    let chromium = ChromiumConfig {
        isolation: Isolation::Process,
        profile_root: profiles.0.clone(),
        ..test_chromium()
    };
    // No warm spare: each browser is launched by the reset that needs it.
    let harness = harness(chromium, false).await;
    let (mut a, _) = harness.open("canvas.html").await;
    let of_a = profiles.browsers();
    assert_eq!(of_a.len(), 1, "{of_a:?}");
    let (mut b, _) = harness.open("canvas.html").await;
    let of_b: Vec<i32> = profiles
        .browsers()
        .into_iter()
        .filter(|pid| !of_a.contains(pid))
        .collect();
    assert_eq!(of_b.len(), 1, "a browser of b's own: {of_b:?}");

    kill(of_a[0]).await;
    assert_disconnected(&mut a, "a").await;
    assert_clicked(
        &b.step(BrowserAction::click(4, 4)).await.unwrap(),
        4,
        4,
        "b",
    );

    let again = a
        .reset(ResetOptions::new(harness.page("canvas.html")))
        .await
        .unwrap();
    assert_eq!(
        again.observation.error, "",
        "{:?}",
        again.observation.metadata
    );
    assert_clicked(
        &a.step(BrowserAction::click(8, 8)).await.unwrap(),
        8,
        8,
        "a, reset",
    );
    assert_clicked(
        &b.step(BrowserAction::click(9, 9)).await.unwrap(),
        9,
        9,
        "b, after",
    );
    assert!(alive(of_b[0]), "b's browser still runs");

    a.close().await.unwrap();
    b.close().await.unwrap();
    harness.stop().await;
}

/// A service worker whose scope covers the page that registers it (the usual case: `/sw.js` for
/// the whole site). chromiumoxide auto-attaches to each page's related targets with
/// `waitForDebuggerOnStart` and detaches from service workers at once; the worker then often never
/// starts, and `register()` never settled (seen in every mode, in most runs on a loaded machine);
/// `prepare_page` now turns that wait off.
/// The isolation tests above register a worker outside the page's scope, which is not attached.
#[tokio::test]
async fn a_service_worker_that_controls_its_page_registers() {
    let site = Site::start().await;
    let harness = harness(test_chromium(), true).await;
    let mut client = harness.client().await;
    // Each episode is a new context: a fresh registration every time.
    for episode in 1..=3 {
        let first = client
            .reset(ResetOptions::new(site.url("isolation.html?do=controlled")))
            .await
            .unwrap();
        let result = if title(&first) == "controlled: registering" {
            until_title(&mut client, |t| t != "controlled: registering").await
        } else {
            first
        };
        assert_eq!(
            title(&result),
            "controlled: registered",
            "episode {episode}: {:?}",
            result.observation.metadata
        );
    }
    client.close().await.unwrap();
    harness.stop().await;
}
