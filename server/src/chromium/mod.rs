//! The Chromium adapter of the browser seam, over CDP with chromiumoxide.
//!
//! Every input is a real CDP input event (trusted in the page). Page events (loading, navigation,
//! dialogs, crashes, downloads, new tabs) are watched by small tasks that update shared state, so
//! the step path only reads it. Dialogs are answered from those tasks the moment they open: a
//! dialog can never hold a step hostage.

pub mod egress;
mod memory;
mod process;
pub mod sandbox;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use chromiumoxide::browser::Browser as CdpBrowser;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::browser::{
    EventDownloadWillBegin, SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    MouseButton,
};
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventRequestWillBeSent, ResourceType,
};
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, BringToFrontParams, CaptureScreenshotFormat,
    CaptureScreenshotParams, EventFrameAttached, EventFrameNavigated, EventFrameStartedLoading,
    EventFrameStoppedLoading, EventJavascriptDialogOpening, EventNavigatedWithinDocument,
    GetNavigationHistoryParams, HandleJavaScriptDialogParams, NavigateParams,
    NavigateToHistoryEntryParams,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CloseTargetParams, CreateBrowserContextParams, CreateTargetParams, EventTargetCrashed,
    EventTargetCreated, EventTargetDestroyed, TargetId,
};
use chromiumoxide::cdp::js_protocol::runtime::{EvaluateParams, TerminateExecutionParams};
use chromiumoxide::error::CdpError;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::{Command, Page};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use browserenv::models::{Key, VIEWPORT_HEIGHT, VIEWPORT_WIDTH};
use browserenv::text_layer::{TextRun, MAX_RUNS};

use crate::browser::{
    clip, clipped, Browser, Incidents, Launcher, PageError, PageFacts, PageText, SettleOutcome,
};

pub use process::{clean_leftovers, kill_all, live_count, shutdown_all};

const PROBE_JS: &str = include_str!("probe.js");
/// How long the DOM must be unchanged to count as quiet.
const QUIET_MS: u64 = 30;
/// A click or key that navigates starts its navigation within ~10-25 ms (measured); wait this long
/// before believing that it did not.
const NAVIGATION_WINDOW: Duration = Duration::from_millis(40);
/// Cap on the page text read for the bot-verification check.
const MAX_TEXT_CHARS: usize = 20_000;
/// How long a failed command waits for news that its tab was closed (the events come ~ms apart).
const CLOSING_GRACE: Duration = Duration::from_millis(200);
/// Reading title and text is a tiny script; a renderer that cannot run it in this time is hung.
/// `BROWSER_RENDERER_MEMORY_MB`'s default: far above what real sites use (a heavy web app's
/// renderer is a few hundred MiB), far below what hurts the other sessions on the machine.
pub const DEFAULT_RENDERER_MEMORY_MB: u64 = 2048;
/// Dialogs in one step after which the page's running script is stopped (a dialog loop).
const DIALOG_FLOOD: u64 = 20;
/// Tabs a session keeps open; a page that opens more gets them closed at once (a popup flood).
pub const MAX_TABS: usize = 8;
const FACTS_TIMEOUT: Duration = Duration::from_secs(2);
/// Walking the page for its text layer stops after this long (the answer says it was cut).
const TEXT_BUDGET: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
pub struct ChromiumConfig {
    pub executable: PathBuf,
    /// Where per-browser profiles are created (and leftovers looked for).
    pub profile_root: PathBuf,
    pub launch_timeout: Duration,
    /// A Chromium that is already running (`ws://…` or `http://host:port`): each session gets a
    /// browser context of its own on it instead of a process of its own.
    pub remote: Option<String>,
    /// Load pages whose certificate is invalid (`BROWSER_IGNORE_HTTPS_ERRORS`). Off: a certificate
    /// error is `navigation_failed` with Chromium's `net::ERR_CERT_…` as the detail.
    pub ignore_https_errors: bool,
    /// Run our Chromium in its sandbox (`BROWSER_SANDBOX`; see `sandbox.rs`).
    pub sandbox: bool,
    /// Memory one renderer may use, in MiB (`BROWSER_RENDERER_MEMORY_MB`; 0: no limit; see
    /// `memory.rs`). Our own browsers only.
    pub renderer_memory_mb: u64,
    /// Refuse connections to private addresses (`BROWSER_BLOCK_PRIVATE_NETWORKS`; egress.rs).
    /// Our own browsers only.
    pub egress: Option<Arc<egress::EgressPolicy>>,
}

impl Default for ChromiumConfig {
    fn default() -> Self {
        ChromiumConfig {
            executable: PathBuf::from("/usr/bin/chromium"),
            profile_root: std::env::temp_dir(),
            launch_timeout: Duration::from_secs(20),
            remote: None,
            ignore_https_errors: false,
            sandbox: sandbox::auto(),
            renderer_memory_mb: DEFAULT_RENDERER_MEMORY_MB,
            egress: None,
        }
    }
}

/// Where a session's browser lives, and what closing it means.
enum Endpoint {
    /// Our own process: closing kills it and removes its profile.
    Local(process::ChromiumProcess),
    /// A browser context on a remote Chromium: closing disposes the context, the browser stays.
    Remote(String),
}

impl Endpoint {
    fn websocket_url(&self) -> &str {
        match self {
            Endpoint::Local(process) => &process.websocket_url,
            Endpoint::Remote(url) => url,
        }
    }
}

pub struct ChromiumLauncher {
    config: ChromiumConfig,
}

impl ChromiumLauncher {
    pub fn new(config: ChromiumConfig) -> Self {
        ChromiumLauncher { config }
    }

    pub fn config(&self) -> &ChromiumConfig {
        &self.config
    }
}

impl Launcher for ChromiumLauncher {
    type Browser = ChromiumBrowser;

    async fn launch(&self) -> anyhow::Result<ChromiumBrowser> {
        let config = self.config.clone();
        if let Some(url) = config.remote {
            let shown = redacted_url(&url);
            let connect =
                ChromiumBrowser::connect(Endpoint::Remote(url.clone()), config.ignore_https_errors);
            return tokio::time::timeout(config.launch_timeout, connect)
                .await
                .map_err(|_| {
                    anyhow::anyhow!("the remote browser at {shown} did not answer in time")
                })?
                .map_err(|err| {
                    anyhow::anyhow!(
                        "cannot open a session on the remote browser at {shown}: {}",
                        without_secrets_of(&url, &format!("{err:#}"))
                    )
                });
        }
        let proxy = match &config.egress {
            Some(policy) => Some(
                egress::EgressProxy::start(policy.clone())
                    .await
                    .context("cannot start the egress proxy")?,
            ),
            None => None,
        };
        let proxy_url = proxy.as_ref().map(egress::EgressProxy::url);
        let ignore_https_errors = config.ignore_https_errors;
        let process = tokio::task::spawn_blocking(move || {
            process::ChromiumProcess::launch(&config, proxy_url.as_deref())
        })
        .await??;
        let mut browser =
            ChromiumBrowser::connect(Endpoint::Local(process), ignore_https_errors).await?;
        browser.egress = proxy;
        Ok(browser)
    }
}

/// Query parameters whose values are secrets (browserless takes `?token=`).
const SECRET_PARAMETERS: &[&str] = &[
    "token",
    "access_token",
    "api_key",
    "apikey",
    "key",
    "secret",
    "password",
    "auth",
];

/// The secret parts of a DevTools URL: its password and the values of secret query parameters.
fn secrets_of(url: &str) -> Vec<String> {
    let Ok(parsed) = url::Url::parse(url) else {
        // Unparsable: everything after `?` or `@` may be a secret.
        return url
            .split(['?', '@'])
            .skip(1)
            .map(str::to_string)
            .filter(|part| !part.is_empty())
            .collect();
    };
    let mut secrets: Vec<String> = parsed.password().map(str::to_string).into_iter().collect();
    for (name, value) in parsed.query_pairs() {
        if SECRET_PARAMETERS.contains(&name.to_ascii_lowercase().as_str()) && !value.is_empty() {
            secrets.push(value.to_string());
        }
    }
    // As written in the URL too (percent-encoded), which is how error messages quote it.
    let raw: Vec<String> = parsed
        .query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(name, _)| SECRET_PARAMETERS.contains(&name.to_ascii_lowercase().as_str()))
        .map(|(_, value)| value.to_string())
        .filter(|value| !value.is_empty())
        .collect();
    secrets.extend(raw);
    secrets
}

/// `text` with every secret of `url` replaced by `***`: what logs and error messages show.
pub fn without_secrets_of(url: &str, text: &str) -> String {
    let mut secrets = secrets_of(url);
    // Longest first, so a secret that contains another is replaced whole.
    secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    secrets.iter().fold(text.to_string(), |text, secret| {
        text.replace(secret.as_str(), "***")
    })
}

/// A DevTools URL as logs and errors show it (`ws://pool:3000/?token=***`).
pub fn redacted_url(url: &str) -> String {
    without_secrets_of(url, url)
}

/// Check that a remote DevTools endpoint answers, before serving: its product name and version.
/// Errors never carry the URL's secrets.
pub async fn remote_version(url: &str, timeout: Duration) -> anyhow::Result<String> {
    remote_version_of(url, timeout)
        .await
        .map_err(|err| anyhow::anyhow!(without_secrets_of(url, &format!("{err:#}"))))
}

async fn remote_version_of(url: &str, timeout: Duration) -> anyhow::Result<String> {
    let check = async {
        let (browser, mut handler) = CdpBrowser::connect(url).await.map_err(|err| {
            let err = anyhow::Error::from(err).context("cannot connect to the DevTools endpoint");
            match host_header_hint(url) {
                Some(hint) => err.context(hint),
                None => err,
            }
        })?;
        let _events = Tasks(vec![tokio::spawn(async move {
            while handler.next().await.is_some() {}
        })]);
        let version = browser.version().await;
        anyhow::Ok(
            version
                .context("the endpoint did not answer Browser.getVersion")?
                .product,
        )
    };
    tokio::time::timeout(timeout, check)
        .await
        .map_err(|_| anyhow::anyhow!("the DevTools endpoint did not answer in time"))?
}

/// Chromium answers `/json/version` only when the Host header is an IP address or `localhost`
/// (DNS-rebinding protection); behind a DNS name the failure would otherwise read like a bad URL.
fn host_header_hint(url: &str) -> Option<String> {
    let named_host = url::Url::parse(url)
        .ok()
        .filter(|u| u.scheme().starts_with("http"))
        .and_then(|u| {
            let host = u.host_str()?.to_string();
            let plain = host == "localhost"
                || host
                    .trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok();
            (!plain).then_some(host)
        });
    named_host.map(|host| {
        format!(
            "a plain Chromium answers /json/version only for an IP address or localhost, \
             not a name like {host}: give its IP address, or its ws://… address"
        )
    })
}

/// Ids of the frames of this browser's tabs (on a shared remote browser, not of others').
type Frames = Arc<Mutex<HashSet<String>>>;

/// Every prepared page's load state, by target, so browser-level events can reach it.
type LoadStates = Arc<Mutex<HashMap<TargetId, Arc<watch::Sender<LoadState>>>>>;

/// Apply a browser-level event (crash, close) to a prepared page's load state.
fn update_load_state(states: &LoadStates, target: &TargetId, update: impl FnOnce(&mut LoadState)) {
    let state = states
        .lock()
        .ok()
        .and_then(|states| states.get(target).cloned());
    if let Some(state) = state {
        state.send_modify(update);
    }
}

/// Loading state of the current page, written by its event tasks.
#[derive(Debug, Clone, Default)]
struct LoadState {
    loading: bool,
    /// Main-frame loads started, navigations committed (incl. back/forward-cache restores).
    navigation_events: u64,
    /// Main-frame loads finished.
    loads_finished: u64,
    crashed: bool,
    /// The tab is gone (closed itself, or was closed).
    closed: bool,
}

struct CurrentPage {
    page: Page,
    load: watch::Receiver<LoadState>,
    tasks: Vec<JoinHandle<()>>,
}

pub struct ChromiumBrowser {
    browser: CdpBrowser,
    /// The CDP connection's handler and the browser-level event watchers; held so that they end
    /// with this browser.
    _tasks: Tasks,
    current: CurrentPage,
    /// Older tabs stay open, as in a person's browser (unwatched); the newest is last.
    previous_pages: Vec<Page>,
    incidents: Arc<Mutex<Incidents>>,
    new_tabs: Arc<Mutex<Vec<TargetId>>>,
    last_action: Instant,
    expect_navigation: bool,
    /// Set when the CDP connection ends.
    disconnected: Arc<AtomicBool>,
    load_states: LoadStates,
    frames: Frames,
    /// This session's browser context on a remote browser (None: a local browser's default one).
    context: Option<BrowserContextId>,
    /// The proxy every connection of this browser goes through, when private networks are
    /// refused.
    egress: Option<egress::EgressProxy>,
    // Declared last: dropped after the CDP connection, a local process is killed and its profile
    // removed.
    endpoint: Endpoint,
}

fn cdp_error(err: CdpError) -> PageError {
    match err {
        CdpError::Timeout => PageError::ActionTimeout,
        CdpError::Ws(_) | CdpError::ChannelSendError(_) | CdpError::NoResponse => {
            PageError::Disconnected(err.to_string())
        }
        other => PageError::ActionFailed(other.to_string()),
    }
}

impl ChromiumBrowser {
    async fn connect(endpoint: Endpoint, ignore_https_errors: bool) -> anyhow::Result<Self> {
        let config = HandlerConfig {
            // We set the viewport ourselves: chromiumoxide's emulation also turns on touch emulation.
            viewport: None,
            request_timeout: Duration::from_secs(30),
            // chromiumoxide's default tells every page to ignore certificate errors.
            ignore_https_errors,
            ..HandlerConfig::default()
        };
        let (browser, mut handler) =
            CdpBrowser::connect_with_config(endpoint.websocket_url(), config)
                .await
                .context("cannot connect to chromium's DevTools endpoint")?;
        let disconnected = Arc::new(AtomicBool::new(false));
        let gone = disconnected.clone();
        // From here on, failing (or being cancelled by the launch timeout) drops `tasks`, which
        // closes the CDP socket: nothing is left connected, and a remote context is disposed.
        let mut tasks = Tasks::default();
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                match event {
                    // The socket is gone (the browser died): stop, so pending commands fail now
                    // instead of at their timeout.
                    Err(CdpError::Ws(err)) => {
                        tracing::debug!("cdp connection lost: {err}");
                        break;
                    }
                    // Single messages chromiumoxide could not decode (Chromium 156 renamed a
                    // Network field); the connection goes on.
                    Err(err) => tracing::trace!("cdp handler: {err}"),
                    Ok(()) => {}
                }
            }
            gone.store(true, Ordering::SeqCst);
        }));

        // On a remote browser, this session's own context: cookies, storage and cache as private
        // as a fresh profile, and disposed with the session (also if our connection just drops).
        let context = match endpoint {
            Endpoint::Local(_) => None,
            Endpoint::Remote(_) => {
                let params = CreateBrowserContextParams {
                    dispose_on_detach: Some(true),
                    ..CreateBrowserContextParams::default()
                };
                Some(
                    browser
                        .create_browser_context(params)
                        .await
                        .context("cannot create a browser context")?,
                )
            }
        };
        browser
            .execute(SetDownloadBehaviorParams {
                behavior: SetDownloadBehaviorBehavior::Deny,
                browser_context_id: context.clone(),
                download_path: None,
                events_enabled: Some(true),
            })
            .await
            .context("cannot deny downloads")?;

        let incidents = Arc::new(Mutex::new(Incidents::default()));
        let new_tabs = Arc::new(Mutex::new(Vec::new()));
        let first = match &context {
            Some(context) => {
                let mut params = CreateTargetParams::new("about:blank");
                params.browser_context_id = Some(context.clone());
                browser
                    .new_page(params)
                    .await
                    .context("cannot open a tab in the browser context")?
            }
            None => first_page(&browser).await?,
        };
        let load_states: LoadStates = Arc::new(Mutex::new(HashMap::new()));
        let frames: Frames = Arc::new(Mutex::new(HashSet::from([first
            .target_id()
            .as_ref()
            .to_string()])));
        let mut downloads = browser.event_listener::<EventDownloadWillBegin>().await?;
        let sink = incidents.clone();
        let known_frames = frames.clone();
        let shared = context.is_some();
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = downloads.next().await {
                // A remote browser is shared: report only downloads started in one of our frames.
                // They are denied in our context either way.
                let ours = !shared
                    || known_frames
                        .lock()
                        .is_ok_and(|frames| frames.contains(event.frame_id.as_ref()));
                if !ours {
                    continue;
                }
                if let Ok(mut incidents) = sink.lock() {
                    incidents.downloads_denied.push(clip(&event.url));
                }
            }
        }));

        let mut created = browser.event_listener::<EventTargetCreated>().await?;
        let tabs = new_tabs.clone();
        let mut known: HashSet<TargetId> = HashSet::from([first.target_id().clone()]);
        // Our tabs that are open now, to hold them to MAX_TABS.
        let open_tabs = Arc::new(Mutex::new(HashSet::from([first.target_id().clone()])));
        let own_context = context.clone();
        let own_frames = frames.clone();
        let (open, closer, sink) = (open_tabs.clone(), first.clone(), incidents.clone());
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = created.next().await {
                let info = &event.target_info;
                // Other sessions' tabs on a shared remote browser are not ours to follow.
                let ours = own_context.is_none() || info.browser_context_id == own_context;
                if ours {
                    // Tabs (before we follow them) and out-of-process frames: a frame's id is
                    // its target's.
                    if let Ok(mut frames) = own_frames.lock() {
                        frames.insert(info.target_id.as_ref().to_string());
                    }
                }
                if !(ours && info.r#type == "page" && known.insert(info.target_id.clone())) {
                    continue;
                }
                let room = open.lock().is_ok_and(|mut open| {
                    let room = open.len() < MAX_TABS;
                    if room {
                        open.insert(info.target_id.clone());
                    }
                    room
                });
                if room {
                    if let Ok(mut tabs) = tabs.lock() {
                        tabs.push(info.target_id.clone());
                    }
                    continue;
                }
                // A popup flood: every renderer costs memory and CPU, so the extra tab is closed
                // before it loads, and counted.
                if let Ok(mut incidents) = sink.lock() {
                    incidents.tabs_closed += 1;
                }
                let (closer, target) = (closer.clone(), info.target_id.clone());
                tokio::spawn(async move {
                    if let Err(err) = closer.execute(CloseTargetParams::new(target)).await {
                        tracing::debug!("could not close a tab over the limit: {err}");
                    }
                });
            }
        }));

        // Renderer crashes arrive on the browser's own session (Target domain); they are written
        // into the crashed page's load state, where every pending command is watching.
        let mut crashes = browser.event_listener::<EventTargetCrashed>().await?;
        let states = load_states.clone();
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = crashes.next().await {
                update_load_state(&states, &event.target_id, |s| s.crashed = true);
            }
        }));

        // So does a tab's closing: a command to a tab being closed may never be answered.
        let mut destroyed = browser.event_listener::<EventTargetDestroyed>().await?;
        let states = load_states.clone();
        tasks.0.push(tokio::spawn(async move {
            while let Some(event) = destroyed.next().await {
                update_load_state(&states, &event.target_id, |s| s.closed = true);
                if let Ok(mut open) = open_tabs.lock() {
                    open.remove(&event.target_id);
                }
            }
        }));

        let current = prepare_page(first, incidents.clone(), &load_states, &frames).await?;
        let mut chromium = ChromiumBrowser {
            browser,
            _tasks: tasks,
            current,
            previous_pages: Vec::new(),
            incidents,
            new_tabs,
            last_action: Instant::now(),
            expect_navigation: false,
            disconnected,
            load_states,
            frames,
            context,
            egress: None,
            endpoint,
        };
        chromium.verify_viewport().await?;
        Ok(chromium)
    }

    /// The seed waits until the page reports exactly 800x600 at scale 1 before navigating.
    async fn verify_viewport(&mut self) -> anyhow::Result<()> {
        let wanted = serde_json::json!([VIEWPORT_WIDTH, VIEWPORT_HEIGHT, 1]);
        let mut seen = Value::Null;
        for _ in 0..40 {
            seen = evaluate(
                &self.current.page,
                "[innerWidth, innerHeight, devicePixelRatio]".into(),
                false,
            )
            .await
            .unwrap_or(Value::Null);
            if seen == wanted {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        bail!("the viewport is {seen} instead of {wanted}")
    }

    /// The browser's process id, when we launched it.
    pub fn pid(&self) -> Option<u32> {
        match &self.endpoint {
            Endpoint::Local(process) => Some(process.pid()),
            Endpoint::Remote(_) => None,
        }
    }

    fn page(&self) -> Result<&Page, PageError> {
        if self.disconnected.load(Ordering::SeqCst) {
            return Err(PageError::Disconnected("the browser is gone".into()));
        }
        if self.current.load.borrow().crashed {
            return Err(PageError::RendererCrashed);
        }
        Ok(&self.current.page)
    }

    /// Whether a tab we have prepared (the current one or one to return to) is gone.
    fn is_closed(&self, target: &TargetId) -> bool {
        self.load_states
            .lock()
            .ok()
            .and_then(|states| states.get(target).map(|state| state.borrow().closed))
            .unwrap_or(false)
    }

    /// Make `page` the current page; the old one is kept to return to if `page` closes.
    async fn switch_to(&mut self, page: Page) -> Result<(), PageError> {
        let prepared = prepare_page(
            page,
            self.incidents.clone(),
            &self.load_states,
            &self.frames,
        )
        .await
        .map_err(|err| PageError::ActionFailed(format!("cannot switch tabs: {err}")))?;
        let previous = std::mem::replace(&mut self.current, prepared);
        // Only the current page is watched.
        for task in &previous.tasks {
            task.abort();
        }
        self.previous_pages.push(previous.page);
        if let Ok(mut incidents) = self.incidents.lock() {
            incidents.tab_switches += 1;
        }
        self.acted(true);
        Ok(())
    }

    async fn open_new_tab(&mut self, target: TargetId) -> Result<(), PageError> {
        let mut page = None;
        for _ in 0..80 {
            if let Ok(found) = self.browser.get_page(target.clone()).await {
                page = Some(found);
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let Some(page) = page else {
            tracing::warn!("a new tab opened but could not be attached");
            return Ok(());
        };
        self.switch_to(page).await?;
        // The tab may still be on its initial about:blank; give its first navigation time to start.
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if !matches!(
                self.current_url().await.as_deref(),
                Ok("about:blank") | Ok("")
            ) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.acted(true);
        Ok(())
    }

    /// Run a CDP command on the current page; a renderer crash fails it at once instead of at
    /// its timeout.
    async fn exec<C: Command>(&self, command: C) -> Result<C::Response, PageError> {
        self.exec_or_closed(command)
            .await?
            .ok_or_else(|| PageError::ActionFailed("the tab closed".into()))
    }

    /// `exec`, but a tab that closes before answering gives `None`.
    async fn exec_or_closed<C: Command>(
        &self,
        command: C,
    ) -> Result<Option<C::Response>, PageError> {
        let page = self.page()?;
        let mut load = self.current.load.clone();
        if load.borrow().closed {
            return Ok(None);
        }
        let reply = tokio::select! {
            biased;
            state = load.wait_for(|s| s.crashed || s.closed) => {
                return match state {
                    Ok(state) if !state.crashed => Ok(None),
                    _ => Err(PageError::RendererCrashed),
                };
            }
            reply = page.execute(command) => reply,
        };
        match reply {
            Ok(reply) => Ok(Some(reply.result)),
            // chromiumoxide forgets a destroyed tab before its TargetDestroyed event reaches us,
            // and commands to it fail at once: while the browser is still there, give the event
            // a moment before calling this a lost browser.
            Err(err) => {
                if !self.disconnected.load(Ordering::SeqCst) {
                    let closing =
                        tokio::time::timeout(CLOSING_GRACE, load.wait_for(|s| s.closed)).await;
                    if matches!(closing, Ok(Ok(_))) {
                        return Ok(None);
                    }
                }
                Err(cdp_error(err))
            }
        }
    }

    fn acted(&mut self, may_navigate: bool) {
        self.last_action = Instant::now();
        self.expect_navigation = may_navigate;
    }

    async fn mouse(
        &self,
        kind: DispatchMouseEventType,
        x: i64,
        y: i64,
        dy: Option<i64>,
    ) -> Result<(), PageError> {
        let mut params = DispatchMouseEventParams::new(kind.clone(), x as f64, y as f64);
        match kind {
            DispatchMouseEventType::MousePressed | DispatchMouseEventType::MouseReleased => {
                params.button = Some(MouseButton::Left);
                params.click_count = Some(1);
                params.buttons = Some(i64::from(kind == DispatchMouseEventType::MousePressed));
            }
            DispatchMouseEventType::MouseWheel => {
                params.delta_x = Some(0.0);
                params.delta_y = dy.map(|dy| dy as f64);
            }
            DispatchMouseEventType::MouseMoved => {}
        }
        self.input(params).await
    }

    async fn key_event(&self, params: DispatchKeyEventParams) -> Result<(), PageError> {
        self.input(params).await
    }

    /// Key events in order, a batch at a time in flight.
    async fn send_keys(&self, events: Vec<DispatchKeyEventParams>) -> Result<(), PageError> {
        const IN_FLIGHT: usize = 64;
        let mut events = events.into_iter().peekable();
        while events.peek().is_some() {
            let batch: Vec<_> = events.by_ref().take(IN_FLIGHT).collect();
            futures_util::future::try_join_all(batch.into_iter().map(|e| self.key_event(e)))
                .await?;
        }
        Ok(())
    }

    /// Send an input event. A tab that closes itself in response (`window.close()` in a click
    /// handler) can be destroyed before Chromium answers the event; that is the action taking
    /// effect, not a timeout.
    async fn input<C: Command>(&self, event: C) -> Result<(), PageError> {
        self.exec_or_closed(event).await.map(|_| ())
    }

    async fn press_key(&self, key: Key) -> Result<(), PageError> {
        let spec = key_spec(key);
        let mut down = DispatchKeyEventParams::new(if spec.text.is_some() {
            DispatchKeyEventType::KeyDown
        } else {
            DispatchKeyEventType::RawKeyDown
        });
        down.key = Some(spec.key.into());
        down.code = Some(spec.code.into());
        down.windows_virtual_key_code = Some(spec.key_code);
        down.native_virtual_key_code = Some(spec.key_code);
        down.modifiers = Some(spec.modifiers);
        down.text = spec.text.map(Into::into);
        down.unmodified_text = spec.text.map(Into::into);
        let mut up = DispatchKeyEventParams::new(DispatchKeyEventType::KeyUp);
        up.key = down.key.clone();
        up.code = down.code.clone();
        up.windows_virtual_key_code = down.windows_virtual_key_code;
        up.native_virtual_key_code = down.native_virtual_key_code;
        up.modifiers = down.modifiers;
        self.key_event(down).await?;
        self.key_event(up).await
    }

    async fn history(&self) -> Result<(i64, Vec<(i64, String)>), PageError> {
        let history = self.exec(GetNavigationHistoryParams::default()).await?;
        let entries = history
            .entries
            .iter()
            .map(|entry| (entry.id, entry.url.clone()))
            .collect();
        Ok((history.current_index, entries))
    }

    async fn current_url(&self) -> Result<String, PageError> {
        let (index, entries) = self.history().await?;
        Ok(usize::try_from(index)
            .ok()
            .and_then(|i| entries.get(i))
            .map(|(_, url)| url.clone())
            .unwrap_or_default())
    }

    /// One settle attempt on the current document; `None` when a navigation replaced it.
    async fn settle_once(&self, deadline: Instant, window: Duration) -> Option<SettleOutcome> {
        if self.current.load.borrow().loading && !self.wait_load(deadline, |s| !s.loading).await {
            return Some(SettleOutcome::Bounded);
        }
        let now = Instant::now();
        if now >= deadline {
            return Some(SettleOutcome::Bounded);
        }
        let before = self.current.load.borrow().navigation_events;
        let min_ms = window
            .saturating_sub(now.duration_since(self.last_action))
            .as_millis();
        let max_ms = deadline.duration_since(now).as_millis();
        let expression =
            format!("{PROBE_JS}; window.__browserenv.settle({QUIET_MS}, {min_ms}, {max_ms})");
        let result = evaluate(&self.current.page, expression, true).await;
        let navigated = self.current.load.borrow().navigation_events != before;
        match result {
            Ok(value) if !navigated => Some(if value["bounded"] == Value::Bool(true) {
                SettleOutcome::Bounded
            } else {
                SettleOutcome::Quiet
            }),
            // A navigation replaced the document under the probe: settle the new one.
            _ => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                None
            }
        }
    }

    /// Wait (at most until `deadline`) for the current page's load state to satisfy `done`.
    async fn wait_load(&self, deadline: Instant, done: impl Fn(&LoadState) -> bool) -> bool {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let mut load = self.current.load.clone();
        let reached = tokio::time::timeout(remaining, load.wait_for(|s| done(s) || s.crashed))
            .await
            .is_ok_and(|waited| waited.is_ok());
        reached
    }
}

/// The tab Chromium opened at start (about:blank), or a new one.
async fn first_page(browser: &CdpBrowser) -> anyhow::Result<Page> {
    for _ in 0..40 {
        if let Some(page) = browser.pages().await?.into_iter().next() {
            return Ok(page);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(browser.new_page("about:blank").await?)
}

/// Viewport, probe script, focus and event watchers for a page we are about to drive.
async fn prepare_page(
    page: Page,
    incidents: Arc<Mutex<Incidents>>,
    load_states: &LoadStates,
    frames: &Frames,
) -> anyhow::Result<CurrentPage> {
    let metrics = SetDeviceMetricsOverrideParams::new(VIEWPORT_WIDTH, VIEWPORT_HEIGHT, 1.0, false);
    page.execute(metrics).await?;
    page.execute(AddScriptToEvaluateOnNewDocumentParams::new(PROBE_JS))
        .await?;
    // Documents that loaded before we attached (a new tab) get the probe now.
    let _ = evaluate(&page, PROBE_JS.into(), false).await;
    page.execute(BringToFrontParams::default()).await?;
    let (tx, rx) = watch::channel(LoadState::default());
    let tx = Arc::new(tx);
    if let Ok(mut states) = load_states.lock() {
        states.insert(page.target_id().clone(), tx.clone());
    }
    let main_frame = page.target_id().as_ref().to_string();
    let mut tasks = Vec::new();

    // Child frames in this tab's renderer (same-site iframes), for telling our downloads apart.
    let mut attached = page.event_listener::<EventFrameAttached>().await?;
    let known = frames.clone();
    tasks.push(tokio::spawn(async move {
        while let Some(event) = attached.next().await {
            if let Ok(mut frames) = known.lock() {
                frames.insert(event.frame_id.as_ref().to_string());
            }
        }
    }));

    let mut started = page.event_listener::<EventFrameStartedLoading>().await?;
    let (state, frame) = (tx.clone(), main_frame.clone());
    tasks.push(tokio::spawn(async move {
        while let Some(event) = started.next().await {
            if event.frame_id.as_ref() == frame {
                state.send_modify(|s| {
                    s.loading = true;
                    s.navigation_events += 1;
                });
            }
        }
    }));
    let mut stopped = page.event_listener::<EventFrameStoppedLoading>().await?;
    let (state, frame) = (tx.clone(), main_frame.clone());
    tasks.push(tokio::spawn(async move {
        while let Some(event) = stopped.next().await {
            if event.frame_id.as_ref() == frame {
                state.send_modify(|s| {
                    s.loading = false;
                    s.loads_finished += 1;
                });
            }
        }
    }));
    let mut navigated = page.event_listener::<EventFrameNavigated>().await?;
    let (state, sink) = (tx.clone(), incidents.clone());
    tasks.push(tokio::spawn(async move {
        while let Some(event) = navigated.next().await {
            if event.frame.parent_id.is_none() {
                state.send_modify(|s| s.navigation_events += 1);
                if let Ok(mut incidents) = sink.lock() {
                    incidents.navigated = true;
                }
            }
        }
    }));
    // A navigation of the main frame that fails (a certificate error, an unreachable host) after
    // a click: its document request is the main frame's, and it fails with Chromium's net error.
    let mut requested = page.event_listener::<EventRequestWillBeSent>().await?;
    let mut failed = page.event_listener::<EventLoadingFailed>().await?;
    let (sink, frame) = (incidents.clone(), main_frame.clone());
    tasks.push(tokio::spawn(async move {
        let mut documents: HashSet<String> = HashSet::new();
        loop {
            tokio::select! {
                Some(event) = requested.next() => {
                    let main = event.frame_id.as_ref().is_some_and(|f| f.as_ref() == frame);
                    if main && event.r#type == Some(ResourceType::Document) {
                        // A document at a time: older ones have ended one way or the other.
                        documents.clear();
                        documents.insert(event.request_id.as_ref().to_string());
                    }
                }
                Some(event) = failed.next() => {
                    let ours = documents.remove(event.request_id.as_ref());
                    if ours && !event.canceled.unwrap_or(false) {
                        if let Ok(mut incidents) = sink.lock() {
                            incidents.navigation_errors.push(event.error_text.clone());
                        }
                    }
                }
                else => break,
            }
        }
    }));
    let mut within = page
        .event_listener::<EventNavigatedWithinDocument>()
        .await?;
    let sink = incidents.clone();
    tasks.push(tokio::spawn(async move {
        while within.next().await.is_some() {
            if let Ok(mut incidents) = sink.lock() {
                incidents.navigated = true;
            }
        }
    }));
    let mut dialogs = page
        .event_listener::<EventJavascriptDialogOpening>()
        .await?;
    let (dialog_page, sink) = (page.clone(), incidents);
    tasks.push(tokio::spawn(async move {
        while let Some(event) = dialogs.next().await {
            // Accept every dialog (OK / leave page), answering prompts with their default text.
            let mut answer = HandleJavaScriptDialogParams::new(true);
            answer.prompt_text = event.default_prompt.clone();
            let flood = match sink.lock() {
                Ok(mut incidents) => {
                    let kind: &str = event.r#type.as_ref();
                    incidents
                        .dialogs
                        .push((kind.to_string(), clip(&event.message)));
                    let flood = incidents.dialogs.total() % DIALOG_FLOOD == 0;
                    if flood {
                        incidents.scripts_stopped += 1;
                    }
                    flood
                }
                Err(_) => false,
            };
            if flood {
                // A script that opens dialogs without end (each answer opens the next) would
                // hold the step until its timeout: it is stopped, as a person's browser offers.
                let page = dialog_page.clone();
                tokio::spawn(async move {
                    let stopped = page.execute(TerminateExecutionParams::default()).await;
                    tracing::debug!("stopping a dialog loop: {:?}", stopped.map(|_| ()));
                });
            }
            let page = dialog_page.clone();
            tokio::spawn(async move {
                if let Err(err) = page.execute(answer).await {
                    tracing::debug!("could not answer a dialog: {err}");
                }
            });
        }
    }));
    Ok(CurrentPage {
        page,
        load: rx,
        tasks,
    })
}

/// `Runtime.evaluate` in the page's current main-world context (no cached context id, so it never
/// hits a context destroyed by a navigation that already happened).
async fn evaluate(
    page: &Page,
    expression: String,
    await_promise: bool,
) -> Result<Value, PageError> {
    let mut params = EvaluateParams::new(expression);
    params.return_by_value = Some(true);
    params.await_promise = Some(await_promise);
    let reply = page.execute(params).await.map_err(cdp_error)?;
    if let Some(exception) = &reply.result.exception_details {
        return Err(PageError::ActionFailed(format!(
            "script error: {}",
            exception.text
        )));
    }
    Ok(reply.result.result.value.clone().unwrap_or(Value::Null))
}

struct KeySpec {
    key: &'static str,
    code: &'static str,
    key_code: i64,
    text: Option<&'static str>,
    modifiers: i64,
}

/// The nine keys of the action vocabulary as real key events. ENTER carries "\r" so it submits
/// forms; CTRL+A is Control + "a", which Chromium maps to select-all by itself.
fn key_spec(key: Key) -> KeySpec {
    let spec = |key, code, key_code, text| KeySpec {
        key,
        code,
        key_code,
        text,
        modifiers: 0,
    };
    match key {
        Key::Enter => spec("Enter", "Enter", 13, Some("\r")),
        Key::Tab => spec("Tab", "Tab", 9, None),
        Key::Escape => spec("Escape", "Escape", 27, None),
        Key::Backspace => spec("Backspace", "Backspace", 8, None),
        Key::CtrlA => KeySpec {
            modifiers: 2,
            ..spec("a", "KeyA", 65, None)
        },
        Key::Up => spec("ArrowUp", "ArrowUp", 38, None),
        Key::Down => spec("ArrowDown", "ArrowDown", 40, None),
        Key::Left => spec("ArrowLeft", "ArrowLeft", 37, None),
        Key::Right => spec("ArrowRight", "ArrowRight", 39, None),
    }
}

impl Browser for ChromiumBrowser {
    async fn goto(&mut self, url: &str, timeout: Duration) -> Result<(), PageError> {
        let deadline = Instant::now() + timeout;
        let finished_before = self.current.load.borrow().loads_finished;
        let reply = self.exec(NavigateParams::new(url)).await?;
        self.acted(true);
        if let Some(error) = &reply.error_text {
            return Err(PageError::NavigationFailed(error.clone()));
        }
        if reply.loader_id.is_none() {
            return Ok(()); // same-document navigation: nothing to load
        }
        if self
            .wait_load(deadline, |s| {
                !s.loading && s.loads_finished > finished_before
            })
            .await
        {
            Ok(())
        } else if self.current.load.borrow().crashed {
            Err(PageError::RendererCrashed)
        } else {
            Err(PageError::PageLoadTimeout)
        }
    }

    async fn click(&mut self, x: i64, y: i64) -> Result<(), PageError> {
        self.mouse(DispatchMouseEventType::MouseMoved, x, y, None)
            .await?;
        self.mouse(DispatchMouseEventType::MousePressed, x, y, None)
            .await?;
        self.mouse(DispatchMouseEventType::MouseReleased, x, y, None)
            .await?;
        self.acted(true);
        Ok(())
    }

    async fn type_text(&mut self, text: &str) -> Result<(), PageError> {
        // Each character is a real key down and up, as before; they are sent without waiting for
        // each answer (Chromium handles them in order), so 2,000 characters take well under a
        // second instead of a round trip per event (10 s, past the action timeout).
        let mut events = Vec::new();
        for ch in text.chars() {
            if ch == '\n' {
                self.send_keys(std::mem::take(&mut events)).await?;
                self.press_key(Key::Enter).await?;
                continue;
            }
            let typed = ch.to_string();
            let mut down = DispatchKeyEventParams::new(DispatchKeyEventType::KeyDown);
            down.key = Some(typed.clone());
            down.text = Some(typed.clone());
            down.unmodified_text = Some(typed.clone());
            let mut up = DispatchKeyEventParams::new(DispatchKeyEventType::KeyUp);
            up.key = Some(typed);
            events.push(down);
            events.push(up);
        }
        self.send_keys(events).await?;
        self.acted(text.contains('\n'));
        Ok(())
    }

    async fn press(&mut self, key: Key) -> Result<(), PageError> {
        self.press_key(key).await?;
        self.acted(matches!(key, Key::Enter));
        Ok(())
    }

    async fn scroll(&mut self, x: i64, y: i64, dy: i64) -> Result<(), PageError> {
        self.mouse(DispatchMouseEventType::MouseMoved, x, y, None)
            .await?;
        self.mouse(DispatchMouseEventType::MouseWheel, x, y, Some(dy))
            .await?;
        self.acted(false);
        Ok(())
    }

    async fn back(&mut self) -> Result<bool, PageError> {
        let (index, entries) = self.history().await?;
        let previous = usize::try_from(index - 1).ok().and_then(|i| entries.get(i));
        let Some((entry_id, _)) = previous else {
            self.acted(false);
            return Ok(false);
        };
        self.exec(NavigateToHistoryEntryParams::new(*entry_id))
            .await?;
        self.acted(true);
        Ok(true)
    }

    async fn settle(&mut self, bound: Duration) -> Result<SettleOutcome, PageError> {
        let deadline = Instant::now() + bound;
        let window = if self.expect_navigation {
            NAVIGATION_WINDOW
        } else {
            Duration::ZERO
        };
        loop {
            if self.is_closed(self.current.page.target_id()) {
                // The tab closed itself: settle the one a person would be looking at now.
                self.follow_tabs().await?;
                if self.is_closed(self.current.page.target_id()) {
                    return Ok(SettleOutcome::Bounded);
                }
            }
            self.page()?;
            let mut load = self.current.load.clone();
            tokio::select! {
                outcome = self.settle_once(deadline, window) => {
                    if let Some(outcome) = outcome {
                        return Ok(outcome);
                    }
                }
                // A page being closed may never answer the probe. (The sender lives as long as
                // the browser, so this never ends early.)
                _ = load.wait_for(|s| s.closed) => {}
            }
        }
    }

    async fn follow_tabs(&mut self) -> Result<(), PageError> {
        let newest = self
            .new_tabs
            .lock()
            .map(|mut tabs| {
                let newest = tabs.pop();
                tabs.clear();
                newest
            })
            .unwrap_or(None);
        if let Some(target) = newest {
            self.open_new_tab(target).await?;
        }
        // The current tab closed itself (window.close()): back to the tab before it, as in a
        // person's browser.
        while self.is_closed(self.current.page.target_id()) {
            let Some(previous) = self.previous_pages.pop() else {
                break;
            };
            if self.is_closed(previous.target_id()) {
                continue;
            }
            self.switch_to(previous).await?;
        }
        Ok(())
    }

    async fn facts(&mut self) -> Result<PageFacts, PageError> {
        // The URL comes from the browser process, so it is known even when the renderer is hung.
        let url = self.current_url().await?;
        let script = format!("{PROBE_JS}; window.__browserenv.facts({MAX_TEXT_CHARS})");
        let read =
            tokio::time::timeout(FACTS_TIMEOUT, evaluate(&self.current.page, script, false)).await;
        let mut facts = PageFacts {
            url,
            ..PageFacts::default()
        };
        if let Ok(Ok(value)) = read {
            facts.title = value["title"].as_str().unwrap_or_default().to_string();
            facts.text = value["text"].as_str().unwrap_or_default().to_string();
            facts.password_boxes = value["passwords"]
                .as_array()
                .map(|boxes| {
                    boxes
                        .iter()
                        .filter_map(|b| serde_json::from_value::<[i64; 4]>(b.clone()).ok())
                        .collect()
                })
                .unwrap_or_default();
            if let (Some(blocked), Ok(mut incidents)) =
                (value["blocked"].as_array(), self.incidents.lock())
            {
                for link in blocked {
                    let start = link[0].as_str().unwrap_or_default();
                    let length = link[1].as_u64().unwrap_or_default() as usize;
                    incidents.navigations_blocked.push(clipped(start, length));
                }
                incidents.navigations_blocked.more += value["blockedMore"].as_u64().unwrap_or(0);
            }
        }
        Ok(facts)
    }

    async fn element(&mut self, at: Option<(i64, i64)>) -> Result<Option<Value>, PageError> {
        let (x, y) = match at {
            Some((x, y)) => (x.to_string(), y.to_string()),
            None => ("null".into(), "null".into()),
        };
        let script = format!("{PROBE_JS}; window.__browserenv.element({x}, {y})");
        let value = evaluate(self.page()?, script, false).await?;
        Ok((!value.is_null()).then_some(value))
    }

    async fn visible_text(&mut self) -> Result<PageText, PageError> {
        let script = format!(
            "{PROBE_JS}; window.__browserenv.textRuns({MAX_RUNS}, {})",
            TEXT_BUDGET.as_millis()
        );
        let url = self.current_url().await?;
        let value = evaluate(self.page()?, script, false).await?;
        let runs: Vec<TextRun> = serde_json::from_value(value["runs"].clone())
            .map_err(|err| PageError::ActionFailed(format!("unreadable text runs: {err}")))?;
        Ok(PageText {
            url,
            runs,
            truncated: value["truncated"].as_bool().unwrap_or(false),
        })
    }

    async fn screenshot(&mut self) -> Result<String, PageError> {
        let params = CaptureScreenshotParams {
            format: Some(CaptureScreenshotFormat::Png),
            from_surface: Some(true),
            capture_beyond_viewport: Some(false),
            ..CaptureScreenshotParams::default()
        };
        let reply = self.exec(params).await?;
        // Already base64 on the wire from Chromium: pass it through.
        Ok(reply.data.into())
    }

    fn is_alive(&self) -> bool {
        !self.disconnected.load(Ordering::SeqCst)
    }

    fn take_incidents(&mut self) -> Incidents {
        let mut incidents = self
            .incidents
            .lock()
            .map(|mut incidents| std::mem::take(&mut *incidents))
            .unwrap_or_default();
        if let Endpoint::Local(process) = &self.endpoint {
            incidents.renderer_killed = process.take_memory_kill();
        }
        if let Some(proxy) = &self.egress {
            incidents.network_refused = proxy.take_refusals();
        }
        incidents
    }

    async fn close(self) {
        // A remote context is disposed now rather than when the remote notices our connection is
        // gone. Locally, dropping kills the process group and removes the profile.
        if let Some(context) = &self.context {
            let dispose = self.browser.dispose_browser_context(context.clone());
            match tokio::time::timeout(Duration::from_secs(5), dispose).await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => tracing::warn!("cannot dispose the remote browser context: {err}"),
                Err(_) => tracing::warn!("the remote browser context was not disposed in time"),
            }
        }
        drop(self);
    }
}

impl Drop for ChromiumBrowser {
    fn drop(&mut self) {
        for task in &self.current.tasks {
            task.abort();
        }
    }
}

/// Tasks that end with their owner: a dropped `JoinHandle` would leave its task running.
#[derive(Default)]
struct Tasks(Vec<JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{host_header_hint, PROBE_JS};
    use crate::browser::{INCIDENTS_KEPT, INCIDENT_TEXT_CHARS};

    #[test]
    fn secrets_of_devtools_urls_are_never_shown() {
        use super::{redacted_url, without_secrets_of};
        assert_eq!(
            redacted_url("ws://pool:3000/?token=s3cr%2Ft&launch=x"),
            "ws://pool:3000/?token=***&launch=x"
        );
        assert_eq!(
            redacted_url("ws://u:pw@pool:3000/"),
            "ws://u:***@pool:3000/"
        );
        assert_eq!(
            redacted_url("http://127.0.0.1:9222"),
            "http://127.0.0.1:9222"
        );
        let url = "ws://pool:3000?token=s3cr%2Ft";
        assert_eq!(
            without_secrets_of(url, "failed: s3cr/t and s3cr%2Ft"),
            "failed: *** and ***"
        );
        assert_eq!(redacted_url("not a url?token=abc"), "not a url?***");
    }

    #[test]
    fn the_page_probe_caps_incidents_as_the_server_does() {
        assert!(PROBE_JS.contains(&format!("const MAX_INCIDENTS = {INCIDENTS_KEPT};")));
        assert!(PROBE_JS.contains(&format!(
            "const MAX_INCIDENT_CHARS = {INCIDENT_TEXT_CHARS};"
        )));
    }

    #[test]
    fn only_http_urls_with_a_host_name_get_the_host_header_hint() {
        let hint = host_header_hint("http://chromium:9222").expect("a hint");
        assert!(hint.contains("like chromium"), "{hint}");
        for url in [
            "http://127.0.0.1:9222",
            "http://localhost:9222/",
            "http://[::1]:9222",
            "ws://chromium:3000?token=x",
            "not a url",
        ] {
            assert_eq!(host_header_hint(url), None, "{url}");
        }
    }
}
