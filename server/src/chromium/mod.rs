//! The Chromium adapter of the browser seam, over CDP with chromiumoxide.
//!
//! Every input is a real CDP input event (trusted in the page). Page events (loading, navigation,
//! dialogs, crashes, downloads, new tabs) are watched by small tasks that update shared state, so
//! the step path only reads it. Dialogs are answered from those tasks the moment they open: a
//! dialog can never hold a step hostage.
//!
//! Rooms: `connect` (the CDP connection and browser-level watchers), `page_events` (a tab's
//! watchers and load state), `input` (commands and input events), `navigation` (history, URL,
//! loads, settling), `tabs` (following tabs), `capture` (screenshots), `seam` (the `Browser`
//! operations built from them), `gestures`, `dropdown`, `clipboard` (the gestures beyond a click,
//! the drawn `<select>`, the episode's clipboard), `archive` (an episode's archive work: request
//! interception), `page_setup` (a zoom and scripts an episode asks of its pages, and the picture's
//! pixels mapped to the page's), `prepared` (the next episode's page loaded ahead), `remote`
//! (`--browser-url`),
//! `process` (our own Chromium processes and profiles), `sandbox`,
//! `memory` (the renderer memory limit), `egress` (the private-network proxy). This file holds the
//! settings, the launcher and the state the rooms share.

pub mod intercept;
pub mod launch;
pub mod page;

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
    MouseButton as CdpButton,
};
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventRequestWillBeSent, ResourceType,
};
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, BringToFrontParams, CaptureScreenshotFormat,
    CaptureScreenshotParams, EventFrameAttached, EventFrameNavigated, EventFrameStartedLoading,
    EventFrameStoppedLoading, EventJavascriptDialogOpening, EventNavigatedWithinDocument,
    FontFamilies, GetNavigationHistoryParams, HandleJavaScriptDialogParams, NavigateParams,
    NavigateToHistoryEntryParams, SetFontFamiliesParams,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CloseTargetParams, CreateBrowserContextParams, CreateTargetParams, EventTargetCrashed,
    EventTargetCreated, EventTargetDestroyed, GetBrowserContextsParams, SetAutoAttachParams,
    TargetId,
};
use chromiumoxide::cdp::js_protocol::runtime::{EvaluateParams, TerminateExecutionParams};
use chromiumoxide::error::CdpError;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::{Command, Page};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use browserenv::models::{Chord, Modifiers, MouseButton, Point, VIEWPORT_HEIGHT, VIEWPORT_WIDTH};
use browserenv::text_layer::{TextRun, MAX_RUNS, MAX_RUN_CHARS};

use crate::browser::{
    Browser, Handover, Incidents, Launcher, PageError, PageFacts, PageText, Preparation,
    SettleOutcome,
};
use crate::capped::{clip, clipped};

pub use launch::host::Isolation;
pub use launch::process::{clean_leftovers, kill_all, live_count, shutdown_all, FLAGS};
pub use launch::remote::{redacted_url, remote_version, without_secrets_of};
pub use page::capture::Screenshots;

// The rooms' shared helpers, for every room (`use super::*`).
use launch::host::{Endpoint, Host, OwnedContext};
use page::page_events::{evaluate, prepare_page, probe};

const PROBE_JS: &str = include_str!("page/probe.js");
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
/// `BROWSER_EPISODES_PER_BROWSER`'s default: a context per episode makes episodes cheap, and a
/// fresh browser now and then sheds what a long-lived one accumulates (caches of the browser
/// process, leaked renderer-side memory).
pub const DEFAULT_EPISODES_PER_BROWSER: u32 = 100;
const FACTS_TIMEOUT: Duration = Duration::from_secs(2);
/// How long disposing a browser context may take before it is given up on (the context then goes
/// with its browser, or with our connection to a remote one).
pub const DISPOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a CDP command may go unanswered before it fails (chromiumoxide's request timeout).
pub const CDP_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// Walking the page for its text layer stops after this long (the answer says it was cut).
const TEXT_BUDGET: Duration = Duration::from_millis(500);

/// Debian's `chromium-headless-shell`: Chromium's headless build without the desktop browser
/// around it. Measured on raw CDP against `chromium` of the same version (docs/benchmark.md):
/// a context and its tab open in 15 ms instead of 200, a browser starts in a fraction of the
/// time, and pages render the same. The binary itself, not the package's `/usr/bin` script (see
/// `process::launchable`).
pub const HEADLESS_SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";
/// Whether `executable` is the headless shell (the binary or Debian's script): it has no
/// back/forward cache and answers permission prompts and HTTP auth its own way.
pub fn is_headless_shell(executable: &std::path::Path) -> bool {
    executable.to_string_lossy().contains("headless-shell")
}
/// Debian's `chromium`: used when the headless shell is not installed.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// The browser launched unless `BROWSER_CHROMIUM` names one: the headless shell where it is
/// installed, else Chromium.
pub fn default_executable() -> PathBuf {
    [HEADLESS_SHELL, CHROMIUM]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
        .unwrap_or_else(|| PathBuf::from(CHROMIUM))
}

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
    pub egress: Option<Arc<intercept::egress::EgressPolicy>>,
    /// This server replays archives (`--archive-dir`, a task file's archives): its browsers send
    /// no UDP that skips a proxy, so WebRTC in a replay (whose context's proxy refuses
    /// everything, `intercept/archive.rs`) reaches nothing. Live pages keep WebRTC over TCP.
    pub replays: bool,
    /// Whether sessions get a Chromium each or share one (`BROWSER_ISOLATION`; see `host.rs`).
    pub isolation: Isolation,
    /// Episodes one browser serves before it is replaced by a fresh one
    /// (`BROWSER_EPISODES_PER_BROWSER`; 1: a new browser for every episode).
    pub episodes_per_browser: u32,
    /// Open each session's next context on its own browser while the current episode runs, so
    /// that a `reset` finds it ready (off with `BROWSER_NO_WARM_SPARE`; on a shared browser the
    /// warm spare does this job).
    pub spare_contexts: bool,
    /// How screenshots are taken (`BROWSER_SCREENSHOTS`; see `capture.rs`).
    pub screenshots: Screenshots,
}

impl Default for ChromiumConfig {
    fn default() -> Self {
        ChromiumConfig {
            executable: default_executable(),
            profile_root: std::env::temp_dir(),
            launch_timeout: Duration::from_secs(20),
            remote: None,
            ignore_https_errors: false,
            sandbox: launch::sandbox::auto(),
            renderer_memory_mb: DEFAULT_RENDERER_MEMORY_MB,
            egress: None,
            replays: false,
            isolation: Isolation::Process,
            episodes_per_browser: DEFAULT_EPISODES_PER_BROWSER,
            spare_contexts: true,
            screenshots: Screenshots::Frame,
        }
    }
}

pub struct ChromiumLauncher {
    config: ChromiumConfig,
    /// With context isolation: the host every session's episodes open on.
    shared: tokio::sync::Mutex<Option<Arc<Host>>>,
}

impl ChromiumLauncher {
    pub fn new(config: ChromiumConfig) -> Self {
        ChromiumLauncher {
            config,
            shared: Default::default(),
        }
    }

    pub fn config(&self) -> &ChromiumConfig {
        &self.config
    }

    /// A new host: our own Chromium, or a connection to the remote one.
    async fn new_host(&self) -> anyhow::Result<Arc<Host>> {
        let config = self.config.clone();
        if let Some(url) = config.remote {
            let shown = redacted_url(&url);
            let connect = Host::connect(Endpoint::Remote(url.clone()), config.ignore_https_errors);
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
        let ignore_https_errors = config.ignore_https_errors;
        let mut process =
            tokio::task::spawn_blocking(move || launch::process::ChromiumProcess::launch(&config))
                .await??;
        process.serve_devtools().await?;
        Host::connect(Endpoint::Local(process), ignore_https_errors).await
    }

    /// An episode on `host`, counted against its episodes. Bounded: a tab whose renderer dies
    /// while it opens is never reported ready by chromiumoxide.
    fn open_on(
        &self,
        host: Arc<Host>,
    ) -> impl std::future::Future<Output = anyhow::Result<ChromiumBrowser>> + Send + 'static {
        host.count_episode();
        let open = ChromiumBrowser::open(host, self.config.egress.clone(), self.config.screenshots);
        let limit = self.config.launch_timeout;
        async move {
            tokio::time::timeout(limit, open)
                .await
                .map_err(|_| anyhow::anyhow!("the browser did not open a context in {limit:?}"))?
        }
    }

    /// The shared host, replaced when it is gone or has served its episodes. The old one closes
    /// when the last episode on it does.
    async fn shared_host(&self) -> anyhow::Result<Arc<Host>> {
        let mut shared = self.shared.lock().await;
        match &*shared {
            Some(host) if host.has_room(self.config.episodes_per_browser) => Ok(host.clone()),
            _ => {
                let host = self.new_host().await?;
                host.shared.store(true, Ordering::SeqCst);
                *shared = Some(host.clone());
                Ok(host)
            }
        }
    }
}

impl Launcher for ChromiumLauncher {
    type Browser = ChromiumBrowser;

    async fn launch(&self) -> anyhow::Result<ChromiumBrowser> {
        let host = match self.config.isolation {
            Isolation::Process => self.new_host().await?,
            Isolation::Context => self.shared_host().await?,
        };
        let browser = self.open_on(host).await?;
        Ok(self.with_successor(browser))
    }

    /// The next episode is the previous one's successor, opened while it ran; else a new context
    /// on the session's own browser while it has room (process isolation). `None` sends the
    /// caller to `launch`: the shared browser (context isolation), or a fresh one.
    async fn renew(&self, mut previous: ChromiumBrowser) -> Option<ChromiumBrowser> {
        let successor = previous.successor.take();
        let host = previous.host.clone();
        // Disposing the old context is not the new episode's business: off its clock.
        tokio::spawn(previous.close());
        if let Some(successor) = successor {
            match successor.await {
                Ok(Ok(next)) if next.is_alive() => return Some(self.with_successor(next)),
                Ok(Ok(dead)) => dead.close().await,
                Ok(Err(err)) => tracing::warn!("the spare context failed: {err:#}"),
                Err(_) => {}
            }
        }
        if self.config.isolation == Isolation::Context
            || !host.has_room(self.config.episodes_per_browser)
        {
            return None;
        }
        match self.open_on(host).await {
            Ok(browser) => Some(self.with_successor(browser)),
            Err(err) => {
                tracing::warn!("cannot open a new context on the session's browser: {err:#}");
                None
            }
        }
    }

    async fn shutdown(&self) {
        self.shared.lock().await.take();
    }
}

/// The browser contexts on the shared browser, counted two ways (`ChromiumLauncher::shared_contexts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedContexts {
    /// Created by this server and not yet disposed, by its own count (including contexts whose
    /// disposal is on its way).
    pub held: usize,
    /// What Chromium reports (`Target.getBrowserContexts`).
    pub in_browser: Vec<String>,
}

impl ChromiumLauncher {
    /// The browser contexts on the shared browser (context isolation): one per live episode, one
    /// for the warm spare, and those being opened or disposed. `None` while there is no shared
    /// browser.
    pub async fn shared_contexts(&self) -> anyhow::Result<Option<SharedContexts>> {
        let Some(host) = self.shared.lock().await.clone() else {
            return Ok(None);
        };
        let in_browser = host.browser_contexts().await?;
        Ok(Some(SharedContexts {
            held: host.held(),
            in_browser,
        }))
    }
}

impl ChromiumLauncher {
    /// Start opening `browser`'s successor on its browser, when spare contexts are on and the
    /// browser is the session's own, with room for another episode. On a shared browser the
    /// warm spare (`pool.rs`) is already a context on it, ready for whichever session resets
    /// next: a successor per session would hold a renderer each for the same job (about 45 MiB
    /// a session, docs/benchmark.md).
    fn with_successor(&self, mut browser: ChromiumBrowser) -> ChromiumBrowser {
        let host = browser.host.clone();
        if self.config.spare_contexts
            && self.config.isolation == Isolation::Process
            && host.has_room(self.config.episodes_per_browser)
        {
            browser.successor = Some(tokio::spawn(self.open_on(host)));
        }
        browser
    }
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
    /// Main-frame loads started, navigations requested or committed (incl. back/forward-cache
    /// restores).
    navigation_events: u64,
    /// Navigations of the main frame requested in this tab (`Page.frameRequestedNavigation`: a
    /// link, a form, a script) or started by the browser (`Page.frameStartedNavigating`:
    /// history, reload).
    requests: u64,
    /// When the latest request came, while it has not started loading, committed or ended: the
    /// page is on its way to another document (`navigation.rs`).
    requested: Option<Instant>,
    /// Main-frame loads finished.
    loads_finished: u64,
    /// Main-frame documents committed (each may bring a new renderer).
    commits: u64,
    crashed: bool,
    /// The tab is gone (closed itself, or was closed).
    closed: bool,
}

struct CurrentPage {
    page: Page,
    load: watch::Receiver<LoadState>,
    /// The navigation events that write `load`, for a settle to take those not yet written.
    events: page::navigation::SharedLoadEvents,
    tasks: Vec<JoinHandle<()>>,
    /// Its drags, its isolated world, its copies (`gestures.rs`).
    gestures: page::gestures::PageGestures,
}

pub struct ChromiumBrowser {
    /// The browser this episode's context lives on, shared with other episodes (see `host.rs`).
    host: Arc<Host>,
    /// This episode's browser context: cookies, storage and cache as private as a fresh profile.
    /// Disposed by `dispose`, or when the episode is dropped any other way (`OwnedContext`).
    context: OwnedContext,
    /// The browser-level event watchers of this episode; held so that they end with it.
    _tasks: Tasks,
    current: CurrentPage,
    /// Older tabs stay open, as in a person's browser (unwatched); the newest is last.
    previous_pages: Vec<Page>,
    /// The episode's archive work, while it runs (`archive.rs`).
    archive: Option<intercept::archive::Interception>,
    incidents: Arc<Mutex<Incidents>>,
    /// The requests this episode's pages made, for a task's `request` check.
    requests: intercept::requests::RequestLog,
    new_tabs: Arc<Mutex<Vec<TargetId>>>,
    /// The current tab's navigation requests (`LoadState::requests`) when its last settle
    /// ended: a request after it belongs to the step being settled.
    requests_seen: u64,
    /// What the last settle read of the page as it ended, for the step's facts
    /// (`settle::SettledFacts`).
    settled_facts: Mutex<Option<page::settle::SettledFacts>>,
    /// This context's page, loaded ahead for the episode it will serve (`prepared.rs`).
    prepared: Option<page::prepared::Prepared>,
    /// What a reset that took the prepared page reads instead of the page.
    handed: Option<page::prepared::Handed>,
    /// A page was loaded in this context ahead that no episode may start on.
    spoiled: bool,
    /// The host's: set when the CDP connection ends.
    disconnected: Arc<AtomicBool>,
    load_states: LoadStates,
    frames: Frames,
    /// The proxy every connection of this context goes through, when private networks are
    /// refused.
    egress: Option<intercept::egress::EgressProxy>,
    /// The session's next episode, being opened on the same browser while this one runs.
    successor: Option<JoinHandle<anyhow::Result<ChromiumBrowser>>>,
    /// `ChromiumConfig::screenshots`.
    screenshots: Screenshots,
    /// The current tab's renderer answered this step's facts: its compositor's frame can be
    /// trusted to show the page (`capture.rs`).
    renderer_answered: bool,
    /// A screencast frame did not come or was not the viewport's size: this episode's captures
    /// are redrawn (`capture.rs`).
    frames_misfit: AtomicBool,
    /// Where the pointer is (`input.rs`), when known.
    pointer: Option<page::input::Pointer>,
    /// The mouse buttons held down (`mouse_down` until `mouse_up`), DevTools' mask.
    held_buttons: u8,
    /// A drag-and-drop the page started and the pointer has not dropped yet (`gestures.rs`).
    dragging: Option<page::gestures::Dragging>,
    /// Whether the drag of the press now held is decided: its report taken (dropped on, or
    /// cancelled), or waited for in vain (`gestures.rs`, `late_drag`).
    drag_decided: bool,
    /// The episode's clipboard (`clipboard.rs`).
    clipboard: page::clipboard::Clipboard,
    /// The open `<select>`'s popup as drawn on the page (`dropdown.rs`).
    dropdown: Option<page::dropdown::Dropdown>,
    /// Counts our tabs opened and closed; marked seen when the current tab was last brought to
    /// the front. A tab behind another is not drawn: its capture takes seconds, its animation
    /// frames stop (see `ChromiumBrowser::keep_in_front`).
    tab_changes: watch::Receiver<u64>,
    /// What the episode asked of its pages beyond the seed's setup: a zoom and scripts for every
    /// new document, given to each tab that becomes the page (`page_setup.rs`).
    setup: page::page_setup::PageSetup,
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

impl Drop for ChromiumBrowser {
    fn drop(&mut self) {
        for task in &self.current.tasks {
            task.abort();
        }
        if let Some(successor) = &self.successor {
            successor.abort();
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
    use super::PROBE_JS;
    use crate::browser::{MAX_SECRET_BOXES, MAX_SECRET_INPUTS, MAX_TITLE_CHARS};
    use crate::capped::{INCIDENTS_KEPT, INCIDENT_TEXT_CHARS};
    use browserenv::text_layer::MAX_RUN_CHARS;

    #[test]
    fn the_page_probe_caps_incidents_as_the_server_does() {
        assert!(PROBE_JS.contains(&format!("const MAX_INCIDENTS = {INCIDENTS_KEPT};")));
        assert!(PROBE_JS.contains(&format!(
            "const MAX_INCIDENT_CHARS = {INCIDENT_TEXT_CHARS};"
        )));
        assert!(PROBE_JS.contains(&format!("const MAX_TITLE_CHARS = {MAX_TITLE_CHARS};")));
        assert!(PROBE_JS.contains(&format!("const MAX_SECRET_BOXES = {MAX_SECRET_BOXES};")));
        assert!(PROBE_JS.contains(&format!("const MAX_INPUTS = {MAX_SECRET_INPUTS};")));
        assert!(PROBE_JS.contains(&format!("const MAX_RUN_CHARS = {MAX_RUN_CHARS};")));
    }
}
