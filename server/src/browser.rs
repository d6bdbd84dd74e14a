//! The browser seam: the narrow interface the episode logic drives. The Chromium adapter
//! (`chromium/`) implements it for real; `fake.rs` implements it deterministically for unit tests
//! of the episode logic.
//!
//! The seam is a `Launcher` (makes browsers) and a `Browser` (one private browser whose current page
//! is the newest tab) rather than a separate per-tab `Page` type: the environment always acts on the
//! newest tab, so following tabs is the adapter's job and the episode never juggles page handles.

use std::future::Future;
use std::time::Duration;

use crate::capped::Capped;
use browserenv::models::{Chord, Modifiers, MouseButton, Point, VIEWPORT_HEIGHT, VIEWPORT_WIDTH};
use browserenv::text_layer::TextRun;
use browserenv::ObservationError;
use browserenv_collect::tasks::{PageState, Wants};

/// What went wrong inside the page. These become the observation's `error` code; the episode goes on
/// unless the failure means the page is gone (see [`PageError::ends_episode`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.kind())]
pub enum PageError {
    PageLoadTimeout,
    NavigationFailed(String),
    ActionTimeout,
    ActionFailed(String),
    RendererTimeout,
    RendererCrashed,
    Disconnected(String),
}

impl PageError {
    /// The observation's `error` string.
    pub fn code(&self) -> &'static str {
        self.kind().code()
    }

    /// The observation error this becomes.
    pub fn kind(&self) -> ObservationError {
        match self {
            PageError::PageLoadTimeout => ObservationError::PageLoadTimeout,
            PageError::NavigationFailed(_) => ObservationError::NavigationFailed,
            PageError::ActionTimeout => ObservationError::ActionTimeout,
            PageError::ActionFailed(_) => ObservationError::ActionFailed,
            PageError::RendererTimeout => ObservationError::RendererTimeout,
            PageError::RendererCrashed => ObservationError::RendererCrashed,
            PageError::Disconnected(_) => ObservationError::BrowserDisconnected,
        }
    }

    /// A page that cannot paint or a browser that is gone cannot produce further observations.
    pub fn ends_episode(&self) -> bool {
        self.kind().ends_episode()
    }
}

/// Facts read from the settled page in one round trip.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageFacts {
    pub url: String,
    pub title: String,
    /// The visible text (cut), for the bot-verification check.
    pub text: String,
    /// `[x, y, width, height]` of every field on screen holding a secret.
    pub password_boxes: Vec<[i64; 4]>,
    /// What the focused secret field holds (for the server alone: `Secrets::hold`).
    pub held: Option<HeldSecret>,
    /// What trusted input left in secret fields since the last facts (an action's keystrokes,
    /// paste or drop, noted as each happened, before the page could clear or swap the field),
    /// one value per field while each value starts the next.
    pub inputs: Vec<HeldSecret>,
    /// Input went where the probe cannot see (a closed shadow root it did not see made): what
    /// was typed counts as a secret.
    pub opaque_input: bool,
}

/// The current page's visible text, read on request (never part of an observation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageText {
    pub url: String,
    pub runs: Vec<TextRun>,
    /// More text was on screen than one answer carries.
    pub truncated: bool,
}

/// The most of a page's title an observation carries (Chromium's own limit for a tab's title).
pub const MAX_TITLE_CHARS: usize = 4096;
/// What the element an action is about is (`shown`: what the observation's `metadata.element`
/// says), and, for a secret field in focus, what it holds: for the server alone.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementFacts {
    pub shown: serde_json::Value,
    pub held: Option<HeldSecret>,
}

/// What a secret field holds, and the probe's number for the field (`Secrets::hold`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldSecret {
    pub field: u64,
    pub value: String,
}

/// The most secret-field boxes an observation carries (`password_boxes`).
pub const MAX_SECRET_BOXES: usize = 32;

/// The most values of secret fields one step's input is read as (`PageFacts::inputs`; the
/// probe's `MAX_INPUTS`).
pub const MAX_SECRET_INPUTS: usize = 64;

/// The newest requests of an episode a browser keeps for its task's check (a page can make
/// thousands), and the most of each one's body, in bytes.
pub const REQUESTS_KEPT: usize = 256;
pub const REQUEST_BODY_BYTES: usize = 16 * 1024;
/// The most characters of an element's text, a field's value or a stored item a check reads, and
/// of cookies by number.
pub const STATE_TEXT_CHARS: usize = 16 * 1024;
pub const COOKIES_KEPT: usize = 200;

/// The first `max` characters of `text`: for what a page supplies, which the probe cuts too, but
/// a page can answer in the probe's place where it ran first.
pub fn first_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_string(),
        None => text.to_string(),
    }
}

/// Things the browser handled on its own during an action, reported in observation metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Incidents {
    /// `(kind, message)` of each alert/confirm/prompt/beforeunload dialog that was answered.
    pub dialogs: Capped<(String, String)>,
    /// URLs of downloads that were denied.
    pub downloads_denied: Capped<String>,
    /// Navigations to forbidden schemes (`javascript:`, `file:`, `data:`, `chrome:`) that were stopped.
    pub navigations_blocked: Capped<String>,
    /// Connections refused because they led to a private address: `(host:port, why)`.
    pub network_refused: Capped<(String, String)>,
    /// Tabs the page opened beyond `MAX_TABS`, closed at once.
    pub tabs_closed: u64,
    /// How many times the page's running script was stopped because it opened dialogs without end.
    pub scripts_stopped: u64,
    /// Why the renderer was killed, when it was the memory limit (`BROWSER_RENDERER_MEMORY_MB`).
    pub renderer_killed: Option<String>,
    /// Chromium's net errors of main-frame navigations that failed (`net::ERR_CERT_…`, ...).
    pub navigation_errors: Vec<String>,
    /// How many times a new tab opened and became the current page.
    pub tab_switches: u32,
    /// Whether a navigation happened during the action (including a back/forward-cache restore).
    pub navigated: bool,
}

/// How an adaptive settle ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleOutcome {
    /// The page went quiet before the bound.
    Quiet,
    /// The bound was reached first; the screenshot is taken anyway, as the seed would after its sleep.
    Bounded,
}

/// Makes fresh private browsers: a browser for an episode, as private as a new profile.
pub trait Launcher: Send + Sync + 'static {
    type Browser: Browser;
    fn launch(&self) -> impl Future<Output = anyhow::Result<Self::Browser>> + Send;
    /// End `previous`'s episode and give the session's next one, just as private, on the same
    /// browser when that is cheaper than `launch` (a new context instead of a new process).
    /// `None`: `previous` is closed and the caller launches.
    fn renew(&self, previous: Self::Browser) -> impl Future<Output = Option<Self::Browser>> + Send {
        async move {
            previous.close().await;
            None
        }
    }
    /// Let go of what is kept for later episodes (a shared browser), at the server's stop.
    fn shutdown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// One private browser. Every method acts on the current page (the newest tab). Implementations bound
/// every call so a hung renderer turns into an error, never a hang.
pub trait Browser: Send + 'static {
    /// Open `url` and wait for it to load (up to `timeout`).
    fn goto(
        &mut self,
        url: &str,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), PageError>> + Send;
    /// A trusted pointer click (move, press, release) at the viewport pixel: `count` presses and
    /// releases (2: a double click), `modifiers` held.
    fn click(
        &mut self,
        at: Point,
        button: MouseButton,
        count: u8,
        modifiers: Modifiers,
    ) -> impl Future<Output = Result<(), PageError>> + Send;
    /// Real key events for each character into the focused element.
    fn type_text(&mut self, text: &str) -> impl Future<Output = Result<(), PageError>> + Send;
    /// A key or chord pressed `repeat` times (the modifiers held once around them); the
    /// clipboard's chords copy and paste within the episode (`chromium/page/clipboard.rs`).
    fn press(
        &mut self,
        chord: Chord,
        repeat: u8,
    ) -> impl Future<Output = Result<(), PageError>> + Send;
    /// A mouse wheel of (`dx`, `dy`) pixels at the viewport pixel (scrolls whatever is under it).
    fn scroll(
        &mut self,
        at: Point,
        dx: i64,
        dy: i64,
    ) -> impl Future<Output = Result<(), PageError>> + Send;
    /// The pointer moved to the pixel (the page gets the pointer events on the way: hover).
    fn move_to(&mut self, at: Point) -> impl Future<Output = Result<(), PageError>> + Send;
    /// Press at the first point, move through the others, release at the last: a pointer drag,
    /// or HTML5 drag-and-drop when the page starts one.
    fn drag(
        &mut self,
        path: &[Point],
        button: MouseButton,
        modifiers: Modifiers,
    ) -> impl Future<Output = Result<(), PageError>> + Send;
    /// A button pressed (`down`) or released at the pixel.
    fn mouse_button(
        &mut self,
        at: Point,
        button: MouseButton,
        down: bool,
    ) -> impl Future<Output = Result<(), PageError>> + Send;
    /// Choose the option labelled `label` of the `<select>` at the pixel, as a person would (its
    /// `input` and `change` fired); `ActionFailed` saying what is there instead, or the labels.
    fn select_option(
        &mut self,
        at: Point,
        label: &str,
    ) -> impl Future<Output = Result<(), PageError>> + Send;
    /// History back; returns false when there is nothing to go back to.
    fn back(&mut self) -> impl Future<Output = Result<bool, PageError>> + Send;
    /// History forward; false when there is nothing to go forward to.
    fn forward(&mut self) -> impl Future<Output = Result<bool, PageError>> + Send;
    /// Wait until the page is settled (navigation committed and loaded, no request or short timer
    /// pending, DOM quiet, two frames painted), at most `bound`.
    fn settle(
        &mut self,
        bound: Duration,
    ) -> impl Future<Output = Result<SettleOutcome, PageError>> + Send;
    /// Follow a newly opened tab if there is one; if the current tab closed, return to the one
    /// before it.
    fn follow_tabs(&mut self) -> impl Future<Output = Result<(), PageError>> + Send;
    fn facts(&mut self) -> impl Future<Output = Result<PageFacts, PageError>> + Send;
    /// The element under `at` (page pixel), or the focused one when `at` is None: tag, role,
    /// accessible name, text, type, password, bbox; and, for a focused secret field, what it
    /// holds. With `mark`, the focused element is a person's secret field from now on. None when
    /// there is none.
    fn element(
        &mut self,
        at: Option<(i64, i64)>,
        mark: bool,
    ) -> impl Future<Output = Result<Option<ElementFacts>, PageError>> + Send;
    /// The visible text as positioned lines (the text layer of `GET /sessions/{id}/text`).
    fn visible_text(&mut self) -> impl Future<Output = Result<PageText, PageError>> + Send;
    /// What a task's check reads at the end of an episode beyond the URL and the text: the
    /// elements, fields and `localStorage` items it names on the current page, its cookies, and
    /// the requests the episode's pages made (`Wants` says which). Bounded as below.
    fn read_state(
        &mut self,
        wants: &Wants,
    ) -> impl Future<Output = Result<PageState, PageError>> + Send;
    /// A PNG of the viewport, base64-encoded.
    fn screenshot(&mut self) -> impl Future<Output = Result<String, PageError>> + Send;
    /// A PNG (base64) of `region` of the viewport as it is now, drawn at `scale` (2: twice the
    /// pixels each way, drawn anew by the page's renderer, not an enlarged screenshot).
    fn capture_region(
        &mut self,
        region: Region,
        scale: f64,
    ) -> impl Future<Output = Result<String, PageError>> + Send;
    /// What happened on its own since the last call.
    fn take_incidents(&mut self) -> Incidents;
    /// Close the browser and remove its profile.
    fn close(self) -> impl Future<Output = ()> + Send;
    /// Begin this episode's archive work (`archive/`) before its first navigation: record what its
    /// pages load, or answer every request they make from an archive. A browser that cannot is
    /// an error.
    fn start_archive(
        &mut self,
        work: crate::archive::Work,
    ) -> impl Future<Output = Result<(), PageError>> + Send {
        drop(work);
        async {
            Err(PageError::ActionFailed(
                "this browser keeps no archive".into(),
            ))
        }
    }
    /// End it: from here on nothing is recorded or answered from the archive.
    fn stop_archive(&mut self) -> impl Future<Output = ()> + Send {
        async {}
    }
    /// Run `script` in every new document of this episode's tabs, before the page's own scripts
    /// (a page clock, `archive/clock.js`). A browser that cannot is an error.
    fn add_document_script(
        &mut self,
        script: String,
    ) -> impl Future<Output = Result<(), PageError>> + Send {
        drop(script);
        async {
            Err(PageError::ActionFailed(
                "this browser runs no scripts".into(),
            ))
        }
    }
    /// Evaluate a JavaScript expression in the current page's own world (its globals), a promise
    /// awaited, and return its value as JSON. For pages the server itself serves and scores
    /// (MiniWoB++'s `core`); never for judging a page that may lie (a task's check reads in a
    /// world of its own).
    fn evaluate(
        &mut self,
        expression: String,
    ) -> impl Future<Output = Result<serde_json::Value, PageError>> + Send {
        drop(expression);
        async {
            Err(PageError::ActionFailed(
                "this browser runs no scripts".into(),
            ))
        }
    }
    /// Draw this episode's pages `factor` times larger in the same 800x600 picture: they lay out
    /// in `800/factor` x `600/factor` CSS pixels, each drawn as `factor` picture pixels (a small
    /// page made readable: MiniWoB++'s 160x210 tasks). Every coordinate the seam takes (clicks,
    /// scrolls, the element under a point) or gives (text boxes, secret fields' boxes, an
    /// element's box) stays a picture pixel. `factor` divides 800 and 600 into whole numbers.
    fn zoom(&mut self, factor: f64) -> impl Future<Output = Result<(), PageError>> + Send {
        let _ = factor;
        async { Err(PageError::ActionFailed("this browser cannot zoom".into())) }
    }
    /// The episode's secrets as they are before an action: a browser with a clipboard hides
    /// them in what it pastes or drops into a field that is not secret.
    fn know_secrets(&mut self, _secrets: &browserenv::secrets::Secrets) {}
    /// Whether the connection to the browser still stands (a spare can lose it while it waits,
    /// e.g. when a remote browser restarts).
    fn is_alive(&self) -> bool {
        true
    }
    /// Have the next episode's browser (the one `Launcher::renew` will hand over) load `start`
    /// ahead, while this episode runs: its page loaded, settled and pictured in its own fresh
    /// context. A browser that keeps no successor does nothing.
    fn prepare_next(&mut self, start: Preparation) {
        drop(start);
    }
    /// What this browser, just handed to a reset to `url` (None: a reset that loads its page its
    /// own way, an archive's), holds: a fresh page, or `url` loaded ahead (`prepare_next`) and
    /// unchanged since, whose settle, facts and screenshot taken then are what a load now would
    /// give (the reset loads nothing); or a page loaded ahead that is not that (another start, a
    /// page that changed since), which the episode must not start in: the caller takes another
    /// fresh browser.
    fn take_prepared(&mut self, url: Option<&str>) -> impl Future<Output = Handover> + Send {
        let _ = url;
        async { Handover::Fresh }
    }
}

/// What a browser handed to a reset holds (`Browser::take_prepared`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handover {
    /// A fresh context, no page yet.
    Fresh,
    /// The reset's start, loaded ahead and unchanged since.
    Prepared,
    /// A page loaded ahead that the reset cannot use.
    Spoiled,
}

/// What `Browser::prepare_next` loads ahead, with the bounds of a reset's own load and settle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preparation {
    pub url: String,
    pub load_timeout: Duration,
    pub settle_bound: Duration,
}

/// A rectangle of the viewport in screenshot pixels: `left..right` by `top..bottom` (the right
/// and bottom edges excluded, so the whole viewport is `[0, 0, 800, 600]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub left: u32,
    pub top: u32,
    pub right: u32,
    pub bottom: u32,
}

impl Region {
    /// The whole viewport.
    pub const VIEWPORT: Region = Region {
        left: 0,
        top: 0,
        right: VIEWPORT_WIDTH as u32,
        bottom: VIEWPORT_HEIGHT as u32,
    };

    /// `[x0, y0, x1, y1]` as a region of the viewport, or why not (in the words of a field's
    /// validation error, after `region: `).
    pub fn from_corners(corners: [i64; 4]) -> Result<Region, String> {
        let [x0, y0, x1, y1] = corners;
        let (width, height) = (VIEWPORT_WIDTH, VIEWPORT_HEIGHT);
        if !(0..width).contains(&x0) || !(0..height).contains(&y0) {
            return Err(format!(
                "the top-left corner ({x0}, {y0}) is outside the {width}x{height} viewport"
            ));
        }
        if !(x0 + 1..=width).contains(&x1) || !(y0 + 1..=height).contains(&y1) {
            return Err(format!(
                "the bottom-right corner ({x1}, {y1}) should be right of and below ({x0}, {y0}) \
                 and at most ({width}, {height})"
            ));
        }
        let edge = |value: i64| u32::try_from(value).expect("checked against the viewport");
        Ok(Region {
            left: edge(x0),
            top: edge(y0),
            right: edge(x1),
            bottom: edge(y1),
        })
    }

    pub fn width(&self) -> u32 {
        self.right - self.left
    }

    pub fn height(&self) -> u32 {
        self.bottom - self.top
    }

    pub fn corners(&self) -> [u32; 4] {
        [self.left, self.top, self.right, self.bottom]
    }
}
