//! Isolation on real Chromium: what one episode leaves in the browser must not reach the next,
//! whichever way episodes share browsers (`Isolation`, `episodes_per_browser`), and a crash on a
//! shared browser ends only what it must.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use browserenv::{BrowserAction, Client, ResetOptions, StepResult};
use browserenv_server::chromium::{ChromiumConfig, Isolation};
use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;
use browserenv_tests::{assets_dir, chromium_path, test_chromium, title, Harness};

/// The origin the isolation pages run on: a tiny HTTP server of the test's own, so it can count
/// what reaches it, send cache headers and ask for HTTP authentication.
struct Site {
    port: u16,
    counts: Counts,
    task: tokio::task::JoinHandle<()>,
}

/// How many times each thing happened on the site: each request by its method and path
/// (`GET /sw.js`; every method gets the same answer), and what the handlers count.
type Counts = Arc<Mutex<HashMap<String, u64>>>;

/// One more `what`; how many now.
fn add(counts: &Counts, what: &str) -> u64 {
    let mut counts = counts.lock().unwrap();
    let n = counts.entry(what.to_string()).or_default();
    *n += 1;
    *n
}

/// The credentials `/auth/` accepts: `user:secret` in Basic.
const CREDENTIALS: &str = "Basic dXNlcjpzZWNyZXQ=";

/// The challenge for `/auth/`.
const CHALLENGE: (HeaderName, &str) = (header::WWW_AUTHENTICATE, "Basic realm=\"isolation\"");

impl Site {
    async fn start() -> Site {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("the site listens");
        let port = listener.local_addr().unwrap().port();
        let counts = Counts::default();
        let app = Router::new()
            .route("/isolation.html", any(page))
            .route("/sw.js", any(worker))
            .route("/cached.txt", any(cached))
            .route("/auth/xhr", any(auth_xhr))
            .route("/auth/probe", any(auth_probe))
            .route("/auth/page", any(auth_page))
            .fallback(not_found)
            .layer(middleware::from_fn_with_state(
                counts.clone(),
                count_and_no_store,
            ))
            .with_state(counts.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
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

/// Every request counted by its method and path (without the query); every answer that says
/// nothing of caching is `no-store`.
async fn count_and_no_store(
    State(counts): State<Counts>,
    request: Request,
    next: Next,
) -> Response {
    add(
        &counts,
        &format!("{} {}", request.method(), request.uri().path()),
    );
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// Whether the request came with the credentials `/auth/` accepts.
fn authorized(headers: &HeaderMap) -> bool {
    headers.get_all(header::AUTHORIZATION).iter().any(|value| {
        value
            .to_str()
            .is_ok_and(|value| value.trim() == CREDENTIALS)
    })
}

fn text(body: impl Into<String>) -> ([(HeaderName, &'static str); 1], String) {
    ([(header::CONTENT_TYPE, "text/plain")], body.into())
}

fn html(body: impl Into<String>) -> ([(HeaderName, &'static str); 1], String) {
    ([(header::CONTENT_TYPE, "text/html")], body.into())
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, text("")).into_response()
}

/// assets/pages/isolation.html, read afresh for each request.
async fn page() -> Response {
    match std::fs::read_to_string(assets_dir().join("pages/isolation.html")) {
        Ok(page) => html(page).into_response(),
        Err(_) => not_found().await,
    }
}

async fn worker() -> Response {
    let script = "self.addEventListener('install', () => self.skipWaiting());";
    ([(header::CONTENT_TYPE, "text/javascript")], script).into_response()
}

/// Cacheable for an hour: a browser that kept its HTTP cache asks only once. The body is the
/// serial number of the copy.
async fn cached(State(counts): State<Counts>) -> Response {
    let serial = add(&counts, "served cached.txt");
    let cache = [(header::CACHE_CONTROL, "max-age=3600")];
    (cache, text(serial.to_string())).into_response()
}

/// A challenge, answered by credentials given to XMLHttpRequest.open: Chromium keeps them in its
/// HTTP auth cache for the realm and the path /auth/.
async fn auth_xhr(headers: HeaderMap) -> Response {
    if authorized(&headers) {
        text("ok").into_response()
    } else {
        (StatusCode::UNAUTHORIZED, [CHALLENGE], text("no")).into_response()
    }
}

/// Whether the request came with the cached credentials, without a challenge (which would ask
/// for a login prompt).
async fn auth_probe(State(counts): State<Counts>, headers: HeaderMap) -> Response {
    if authorized(&headers) {
        add(&counts, "authorized probe");
        text("yes").into_response()
    } else {
        text("no").into_response()
    }
}

/// The protected page itself, for a plain navigation.
async fn auth_page(State(counts): State<Counts>, headers: HeaderMap) -> Response {
    if authorized(&headers) {
        add(&counts, "authorized page");
        html("<!doctype html><title>auth page: yes</title><p>Authorized.</p>").into_response()
    } else {
        add(&counts, "refused page");
        let page = "<!doctype html><title>auth page: no</title><p>Unauthorized.</p>";
        (StatusCode::UNAUTHORIZED, [CHALLENGE], html(page)).into_response()
    }
}

/// Generous bounds: the tests run two at a time on a small machine, and what they check is what
/// survives, not how fast.
fn settings() -> EnvSettings {
    EnvSettings {
        max_steps: 200,
        explicit_wait: Duration::from_millis(200),
        page_load_timeout: Duration::from_secs(30),
        // The full Chromium beside three other tests and make test's image build: a step's
        // bounds generous, so a slow moment is not an ended episode (CI once ended one here).
        action_timeout: Duration::from_secs(30),
        screenshot_timeout: Duration::from_secs(30),
        // A page loaded ahead for a session's next episode (tests/tests/prepared_resets.rs
        // checks it finds nothing of the one before) fetches the site's resources when its
        // spare context is ready: these tests count the site's fetches to tell the HTTP cache's
        // copies from fresh ones (CI once counted the other session's preparation: 3, not 2).
        prepared_resets: false,
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
        // Every caller goes on in the episode: one that ended says why here.
        assert!(
            !result.done,
            "the episode ended: {:?} {:?}",
            result.observation.error, result.observation.metadata
        );
        let stop = done(&title(&result)) || !result.observation.error.is_empty();
        if stop || Instant::now() > deadline {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Click the check page's link to `/auth/page`; the first observation that shows where it led
/// (the page's title, or an error).
async fn to_protected_page(client: &mut Client) -> StepResult {
    let clicked = client
        .step(BrowserAction::click(200, 50))
        .await
        .unwrap_or_else(|err| panic!("the click on the check page's link: {err}"));
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
    assert!(!first.done, "{:?}", first.observation.metadata);
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
async fn episodes_do_not_share_state(
    isolation: Isolation,
    episodes_per_browser: u32,
    executable: PathBuf,
) {
    let shell = browserenv_server::chromium::is_headless_shell(&executable);
    let name = format!(
        "{isolation:?}-{episodes_per_browser}{}",
        if shell { "" } else { "-full" }
    )
    .to_lowercase();
    let profiles = ProfileRoot::new(&name);
    let chromium = ChromiumConfig {
        isolation,
        episodes_per_browser,
        profile_root: profiles.0.clone(),
        executable,
        ..test_chromium()
    };
    // The headless shell closes a permission prompt unanswered and reports notifications as
    // "prompt/denied" in every context, before and after: nothing for a page to change, so
    // nothing to leak there. The full Chromium remembers a decision ("denied/denied"); its own
    // test below checks that it does not leak.
    let on_this_browser = |states: &[(&'static str, &'static str)]| -> Vec<(&str, &str)> {
        states
            .iter()
            .map(|&(what, value)| match what {
                "notifications" if shell => (what, "prompt/denied"),
                _ => (what, value),
            })
            .collect()
    };
    let (present, absent) = (on_this_browser(PRESENT), on_this_browser(ABSENT));
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
    let checked = until_title(&mut client, |t| {
        t.starts_with("check: ") || t.starts_with("set failed")
    })
    .await;
    assert!(
        title(&checked).starts_with("check: "),
        "{name}: {} {} {:?}",
        title(&checked),
        shown(&checked),
        site.counts.lock().unwrap()
    );
    let found = findings(&checked);
    let missing = differences(&found, &present);
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
    let leaked = differences(&found, &absent);
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
    let survived = differences(&found, &absent);
    assert!(
        survived.is_empty(),
        "{name}: survived the reset: {survived:?} ({found:?})"
    );
    assert_fresh_copy(&found, &site, before, &format!("{name}, episode 2"));
    assert_eq!(site.count("authorized probe"), 1, "{name}");
    // A plain navigation to the protected page is refused now: 401, which the full headless
    // Chromium reports as a failed navigation instead of prompting.
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
    if shell {
        // The headless shell shows the 401 page, as a desktop browser does once its prompt is
        // cancelled: the server's refusal, not the protected page.
        assert_eq!(
            (title(&page).as_str(), page.observation.error.as_str()),
            ("auth page: no", ""),
            "{name}: {}",
            shown(&page)
        );
    } else {
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
    }
    assert_ne!(title(&page), "auth page: yes", "{name}");

    client.close().await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn episodes_of_a_session_with_its_own_browser_share_no_state() {
    episodes_do_not_share_state(Isolation::Process, 100, chromium_path()).await;
}

#[tokio::test]
async fn episodes_on_a_shared_browser_share_no_state() {
    episodes_do_not_share_state(Isolation::Context, 100, chromium_path()).await;
}

#[tokio::test]
async fn episodes_with_a_browser_each_share_no_state() {
    episodes_do_not_share_state(Isolation::Process, 1, chromium_path()).await;
}

/// The full Chromium remembers a page's permission decision: it must not leak either.
#[tokio::test]
async fn episodes_on_the_full_chromium_share_no_state() {
    let full = PathBuf::from(browserenv_server::chromium::CHROMIUM);
    assert!(full.exists(), "make test installs Debian's chromium");
    episodes_do_not_share_state(Isolation::Process, 100, full).await;
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
/// session's crash, not to whichever session on the browser steps next. The watchdog's report is
/// the browser's (`Host::take_memory_kill`), and only the episode whose tab crashed takes it: the
/// other session, stepping first, sees a plain step, and the crashed one is told why.
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
/// the whole site) installs and activates, in each new context. The server auto-attaches to each
/// page's workers without `waitForDebuggerOnStart` (`prepare_page`): with chromiumoxide's default,
/// which pauses each new worker and then detaches from service workers at once, the worker often
/// never started and `register()` never settled.
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
