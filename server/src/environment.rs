//! The episode logic: what `reset`, `step` and `state` mean, independent of transport and of the
//! browser implementation. This is where an action becomes browser calls, where settling and the
//! seed's end conditions (finish, step limit, bot verification, renderer timeout) are applied, and
//! where every browser call is bounded so a hung page becomes an error code instead of a hang.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use browserenv::models::{
    BrowserAction, BrowserObservation, BrowserState, Op, StepResult, VIEWPORT_HEIGHT,
    VIEWPORT_WIDTH,
};

use browserenv::tasks::{Ending, PageState, Task, TaskSet, Verdict, Wants};
use browserenv::text_layer::TextLayer;

use crate::browser::{Browser, Incidents, Launcher, PageError, PageFacts, SettleOutcome};
use crate::outcome::{judge, StepFacts};
use crate::settings::{EnvSettings, SettleMode};
use crate::verification::is_bot_verification;

/// A failure of the environment itself (not of the page): the wire's `EXECUTION_ERROR`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EnvError(pub String);

/// Reading the target element is one small script; a page too busy to answer is not waited for.
const ELEMENT_TIMEOUT: Duration = Duration::from_millis(1000);
/// Time the phases between the action and the screenshot (following tabs, settling, reading the
/// page) may take beyond `BROWSER_ACTION_WAIT_SECONDS`, all together.
pub const OBSERVE_SLACK: Duration = Duration::from_secs(3);
/// How long the adaptive settle's probe may overrun its own bound (a slow page answering late).
const SETTLE_PROBE_SLACK: Duration = Duration::from_secs(2);
/// `type` may take this much longer per character than the action timeout.
pub const TYPE_TIME_PER_CHARACTER: Duration = Duration::from_millis(10);
/// Reading the text layer: the page walk stops itself well before this.
const TEXT_TIMEOUT: Duration = Duration::from_secs(2);
/// Reading what a task's check needs of the final page (`Browser::read_state`): a few small
/// scripts and one DevTools call.
const STATE_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the wheel turns when nothing was clicked yet: the viewport centre.
const VIEWPORT_CENTRE: (i64, i64) = (VIEWPORT_WIDTH / 2, VIEWPORT_HEIGHT / 2);

/// Check a reset URL the way the seed does: http(s), a host, no user or password. The host must
/// be in the text itself: the URL parser would read `http:///basic.html` (or `http:/basic.html`)
/// as host `basic.html`, where Python's `urlsplit` (the reference) finds none.
pub fn check_start_url(raw: &str) -> Result<url::Url, EnvError> {
    let rejected = || EnvError("expected an HTTP(S) URL without credentials".into());
    let url = url::Url::parse(raw).map_err(|_| rejected())?;
    let written_host = raw
        .trim()
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""))
        .is_some_and(|authority| !authority.rsplit('@').next().unwrap_or("").is_empty());
    let has_host = written_host && url.host_str().is_some_and(|h| !h.is_empty());
    if matches!(url.scheme(), "http" | "https")
        && has_host
        && url.username().is_empty()
        && url.password().is_none()
    {
        Ok(url)
    } else {
        Err(rejected())
    }
}

/// A start URL must not be this server itself on loopback (`port`: where it listens): the agent's
/// browser would show the server's routes (`/sessions`, other sessions' text) in its screenshot.
/// Pages cannot go there (`access.rs`), but a reset is a navigation the browser makes on its own,
/// as when a person types an address. Elsewhere than loopback the server asks for its token.
pub fn check_not_the_server(url: &url::Url, port: Option<u16>) -> Result<(), EnvError> {
    let local = match url.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_unspecified())
        }
        None => false,
    };
    if local && port.is_some() && url.port_or_known_default() == port {
        return Err(EnvError(
            "start_url is this server's own address: its routes are not a page for the agent"
                .into(),
        ));
    }
    Ok(())
}

struct Episode<B> {
    browser: B,
    done: bool,
    /// The last clicked pixel: where the wheel scrolls, like a person's pointer resting there.
    pointer: Option<(i64, i64)>,
    /// The task this episode works on, if the reset named one.
    task: Option<Task>,
    /// The `finish` text, once sent.
    answer: Option<String>,
    /// The task's whole verdict once judged, until the session takes it for the recording and
    /// the log (`take_verdict`); the observation shows only `Verdict::shown`.
    verdict: Option<Verdict>,
}

/// Tasks a server was started with (`--tasks`), and the base for their relative start URLs.
#[derive(Debug, Clone, Default)]
pub struct TaskCatalog {
    pub tasks: TaskSet,
    pub base_url: Option<url::Url>,
    /// The task file's folder, where its tasks' archives are (`Task::archive`).
    pub folder: Option<std::path::PathBuf>,
}

impl TaskCatalog {
    /// The task file at `path`, every task's archive found inside its folder.
    pub fn load(path: &std::path::Path, base_url: Option<url::Url>) -> Result<Self, String> {
        let tasks = TaskSet::load(path)?;
        let folder = path.parent().map(|dir| match dir.as_os_str().is_empty() {
            true => std::path::PathBuf::from("."),
            false => dir.to_path_buf(),
        });
        crate::archive::check_task_archives(&tasks, folder.as_deref())?;
        Ok(TaskCatalog {
            tasks,
            base_url,
            folder,
        })
    }
}

/// One session's environment: at most one live episode, each with its own private browser.
pub struct Environment<L: Launcher> {
    launcher: Arc<L>,
    settings: EnvSettings,
    tasks: Option<Arc<TaskCatalog>>,
    episode: Option<Episode<L::Browser>>,
    state: BrowserState,
    /// The last text layer read, and for which episode and step.
    text: Option<((Option<String>, u64), TextLayer)>,
    /// The server's archives (`archive/`), and this environment's work with them.
    archives: Option<Arc<crate::archive::Archives>>,
    archive: crate::archive::EpisodeArchive,
}

/// Timings of one observation, reported in metadata.
#[derive(Default)]
struct Timings {
    /// A reset's wait for its episode's browser: a context taken or opened, or a launch.
    browser: Option<Duration>,
    action: Duration,
    settle: Duration,
    screenshot: Duration,
}

impl<L: Launcher> Environment<L> {
    pub fn new(launcher: Arc<L>, settings: EnvSettings) -> Self {
        Environment {
            launcher,
            settings,
            tasks: None,
            episode: None,
            state: BrowserState::default(),
            text: None,
            archives: None,
            archive: Default::default(),
        }
    }

    /// Record episodes into archives, and replay them from archives, as `archives` says.
    pub fn with_archives(mut self, archives: Option<Arc<crate::archive::Archives>>) -> Self {
        self.archives = archives;
        self
    }

    /// Hand what the episodes' archives recorded to the disk, with the session's `secrets`
    /// hidden: after each step, and for an episode that ended all of it.
    pub fn store_archive(&mut self, secrets: &crate::secrets::Secrets) {
        self.archive.store(secrets);
    }

    /// Let `reset` take a `task_id`.
    pub fn with_tasks(mut self, tasks: Option<Arc<TaskCatalog>>) -> Self {
        self.tasks = tasks;
        self
    }

    /// The current episode's task id.
    pub fn task_id(&self) -> Option<String> {
        self.episode.as_ref()?.task.as_ref().map(|t| t.id.clone())
    }

    /// The whole verdict of the task episode the last step finished (with the details its
    /// observation leaves out), once: for the recording and the server's log.
    pub fn take_verdict(&mut self) -> Option<Verdict> {
        self.episode.as_mut()?.verdict.take()
    }

    /// Resolve a `task_id` reset argument to its task and start URL.
    fn task_for(&self, kwargs: &Map<String, Value>) -> Result<Option<(Task, String)>, EnvError> {
        let id = match kwargs.get("task_id") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(id)) => id,
            Some(other) => return Err(EnvError(format!("task_id must be a string, got {other}"))),
        };
        let Some(catalog) = &self.tasks else {
            return Err(EnvError(format!(
                "unknown task_id {id:?}: this server has no tasks (start it with --tasks FILE)"
            )));
        };
        let Some(task) = catalog.tasks.get(id) else {
            return Err(EnvError(format!(
                "unknown task_id {id:?}; known: {}",
                catalog.tasks.ids().join(", ")
            )));
        };
        let start = task
            .resolve_start_url(catalog.base_url.as_ref())
            .map_err(EnvError)?;
        Ok(Some((task.clone(), start)))
    }

    pub fn settings(&self) -> &EnvSettings {
        &self.settings
    }

    pub fn state(&self) -> BrowserState {
        self.state.clone()
    }

    /// Start a new episode. Keyword arguments as on the wire: `start_url` (required), `episode_id`,
    /// `seed` (fixes the clock and `Math.random` of an episode replayed from an archive; a live
    /// page has none), `task_id`, `archive` (docs/archives.md); unknown ones are ignored.
    pub async fn reset(&mut self, kwargs: &Map<String, Value>) -> Result<StepResult, EnvError> {
        let started = Instant::now();
        let task = self.task_for(kwargs)?;
        let archive = match &self.archives {
            Some(archives) => archives
                .plan(
                    kwargs,
                    task.as_ref().map(|(task, _)| task),
                    self.tasks.as_ref().and_then(|c| c.folder.as_deref()),
                )
                .map_err(EnvError)?,
            None => None,
        };
        // A task starts where it says: starting it anywhere else (where it ends, a page of the
        // agent's own that shows the expected text) would earn its reward without doing it.
        let start_url = match (kwargs.get("start_url"), &task) {
            (Some(Value::String(url)), Some((task, task_start))) => {
                let asked = check_start_url(url)?;
                if asked != check_start_url(task_start)? {
                    return Err(EnvError(format!(
                        "task {:?} starts at its own start URL: leave start_url out (or give {task_start})",
                        task.id
                    )));
                }
                asked
            }
            (Some(Value::String(url)), _) => check_start_url(url)?,
            (None | Some(Value::Null), Some((_, task_start))) => check_start_url(task_start)?,
            // An archive starts where its recording did.
            (None | Some(Value::Null), None)
                if archive.as_ref().is_some_and(|a| a.start_url().is_some()) =>
            {
                check_start_url(
                    archive
                        .as_ref()
                        .and_then(|a| a.start_url())
                        .unwrap_or_default(),
                )?
            }
            _ => {
                return Err(EnvError(
                    "reset needs start_url: an HTTP(S) URL without credentials".into(),
                ))
            }
        };
        check_not_the_server(&start_url, self.settings.server_port)?;
        let episode_id = match kwargs.get("episode_id") {
            None | Some(Value::Null) => uuid::Uuid::new_v4().to_string(),
            Some(Value::String(id)) => id.clone(),
            Some(other) => other.to_string(),
        };
        // The seed closes the previous episode first; bad input above has not touched it. Its
        // browser may serve the next episode in a fresh context (`Launcher::renew`).
        self.text = None;
        let browser_started = Instant::now();
        let renewed = match self.episode.take() {
            Some(mut previous) => {
                self.archive.end(Some(&mut previous.browser)).await;
                self.launcher.renew(previous.browser).await
            }
            None => None,
        };
        let browser = match renewed {
            Some(browser) => browser,
            None => self.launcher.launch().await.map_err(|err| {
                tracing::error!("browser launch failed: {err:#}");
                EnvError(format!("the browser failed to start: {err:#}"))
            })?,
        };
        self.state = BrowserState {
            episode_id: Some(episode_id),
            step_count: 0,
        };
        let mut episode = Episode {
            browser,
            done: false,
            pointer: None,
            task: task.map(|(task, _)| task),
            answer: None,
            verdict: None,
        };
        let mut timings = Timings {
            browser: Some(browser_started.elapsed()),
            ..Timings::default()
        };
        if let (Some(plan), Some(archives)) = (archive, &self.archives) {
            let episode_id = self.state.episode_id.clone().unwrap_or_default();
            let seed = kwargs.get("seed").and_then(seed_of);
            let work = archives.work(plan, &episode_id, start_url.as_str(), seed);
            if let Err(err) = self.archive.begin(work, &mut episode.browser).await {
                episode.browser.close().await;
                return Err(EnvError(format!(
                    "the episode cannot use its archive: {err}"
                )));
            }
        }
        let action_started = Instant::now();
        let load = bounded(
            self.settings.page_load_timeout + Duration::from_secs(5),
            PageError::PageLoadTimeout,
            episode
                .browser
                .goto(start_url.as_str(), self.settings.page_load_timeout),
        )
        .await;
        timings.action = action_started.elapsed();
        let result = self
            .observe(&mut episode, load.err(), true, timings, started)
            .await;
        self.episode = Some(episode);
        Ok(result)
    }

    pub async fn step(&mut self, action: &BrowserAction) -> Result<StepResult, EnvError> {
        let started = Instant::now();
        let settings = self.settings.clone();
        let episode = match self.episode.as_mut() {
            Some(episode) if !episode.done => episode,
            _ => return Err(EnvError("reset before stepping".into())),
        };
        self.state.step_count += 1;
        let mut timings = Timings::default();
        let mut settle_needed = true;
        let browser = &mut episode.browser;
        let limit = settings.action_timeout;
        let timeout = PageError::ActionTimeout;
        // What the action is about, read before it changes the page (a click may navigate).
        let target = match action.op {
            Op::Click => Some(Some((action.x.unwrap_or(0), action.y.unwrap_or(0)))),
            Op::Type | Op::Key => Some(None),
            _ => None,
        };
        let element = match target {
            Some(at) => {
                match bounded(ELEMENT_TIMEOUT, timeout.clone(), browser.element(at)).await {
                    Ok(element) => element,
                    // Unread (a page that made the probe's answer unreadable, a hung renderer): it may
                    // be a password field, and nothing says it is not, so it counts as one.
                    Err(_) => Some(serde_json::json!({"unreadable": true, "password": true})),
                }
            }
            None => None,
        };
        let outcome = match action.op {
            Op::Click => {
                let (x, y) = (action.x.unwrap_or(0), action.y.unwrap_or(0));
                episode.pointer = Some((x, y));
                bounded(limit, timeout, browser.click(x, y)).await
            }
            Op::Type => {
                let limit = action_limit(&settings, action);
                bounded(limit, timeout, browser.type_text(&action.text)).await
            }
            Op::Key => match action.key_name() {
                Some(key) => bounded(limit, timeout, browser.press(key)).await,
                // Validated earlier; kept total so a bad action can never panic the session.
                None => return Err(EnvError(format!("unknown key {:?}", action.text))),
            },
            Op::Scroll => {
                let (x, y) = episode.pointer.unwrap_or(VIEWPORT_CENTRE);
                bounded(limit, timeout, browser.scroll(x, y, action.dy)).await
            }
            Op::Back => bounded(limit, timeout, browser.back()).await.map(|_| ()),
            Op::Wait => {
                tokio::time::sleep(settings.explicit_wait).await;
                settle_needed = false;
                Ok(())
            }
            Op::Finish => {
                episode.done = true;
                episode.answer = Some(action.text.clone());
                settle_needed = false;
                Ok(())
            }
        };
        timings.action = started.elapsed();
        let error = outcome.err();
        // A page that did not take the input in time is busy (a script spinning, a dialog
        // loop): it cannot settle either, so the step goes straight to the screenshot.
        let settle = settle_needed
            && !error
                .as_ref()
                .is_some_and(|e| e.ends_episode() || *e == PageError::ActionTimeout);
        let mut result = self.observe_current(error, settle, timings, started).await;
        if let Some(element) = element {
            result
                .observation
                .metadata
                .insert("element".into(), element);
        }
        Ok(result)
    }

    async fn observe_current(
        &mut self,
        error: Option<PageError>,
        settle: bool,
        timings: Timings,
        started: Instant,
    ) -> StepResult {
        let mut episode = self.episode.take().expect("observe needs an episode");
        let result = self
            .observe(&mut episode, error, settle, timings, started)
            .await;
        self.episode = Some(episode);
        result
    }

    /// What an action did, as the agent sees it: follow new tabs and settle, read the page, take
    /// the screenshot, judge the step (and a finished task), and say the rest in metadata.
    async fn observe(
        &mut self,
        episode: &mut Episode<L::Browser>,
        error: Option<PageError>,
        settle: bool,
        mut timings: Timings,
        started: Instant,
    ) -> StepResult {
        let settings = &self.settings;
        let browser = &mut episode.browser;
        // Everything before the screenshot shares one budget, so no page can add the bounds of
        // its phases up (see docs/server.md, "Step time").
        let budget = Budget::from_now(settings.action_wait + OBSERVE_SLACK);
        let mut settled = None;
        if settle {
            let settle_started = Instant::now();
            follow_tabs(browser, settings, &budget).await;
            settled = settle_page(browser, settings, &budget).await;
            // A tab opened by a delayed handler becomes the page too.
            follow_tabs(browser, settings, &budget).await;
            timings.settle = settle_started.elapsed();
        }
        let facts = read_facts(browser, settings, &budget).await;
        let shot_started = Instant::now();
        let (screenshot, screenshot_error) = take_screenshot(browser, settings).await;
        timings.screenshot = shot_started.elapsed();
        let incidents = browser.take_incidents();

        let max_steps = episode
            .task
            .as_ref()
            .map_or(settings.max_steps, |t| t.max_steps);
        // The error code and the end conditions (`outcome.rs`).
        let outcome = judge(&StepFacts {
            action: error,
            screenshot: screenshot_error,
            incidents: Some(&incidents),
            url: &facts.url,
            bot_verification: is_bot_verification(&facts.text),
            finished: episode.done,
            step_count: self.state.step_count,
            max_steps,
        });
        episode.done = outcome.done;
        let verdict = judge_task(episode, &facts).await;
        let reward = match &verdict {
            Some(verdict) if verdict.passed => 1.0,
            _ => 0.0,
        };

        let metadata = metadata(&MetadataInputs {
            title: &facts.title,
            step: self.state.step_count,
            settle_mode: settings.settle,
            settled,
            timings: &timings,
            total: started.elapsed(),
            incidents: &incidents,
            error_detail: outcome.detail,
            task: episode.task.as_ref(),
            verdict: verdict.as_ref(),
            password_boxes: &facts.password_boxes,
        });
        if verdict.is_some() {
            episode.verdict = verdict;
        }
        let mut metadata = metadata;
        self.archive.describe(&mut metadata);
        StepResult {
            observation: BrowserObservation {
                metadata,
                screenshot,
                url: facts.url,
                error: outcome
                    .error
                    .map(|c| c.code().to_string())
                    .unwrap_or_default(),
            },
            reward: Some(reward),
            done: episode.done,
        }
    }

    /// The current page's visible text with its boxes (the TUI's text layer), bounded like every
    /// browser call. Read-only: the episode, its step count and its observations are untouched.
    /// Read once per step: more requests for the same step (several watchers) get the same layer.
    pub async fn visible_text(&mut self, session: &str) -> Result<TextLayer, EnvError> {
        let key = (self.state.episode_id.clone(), self.state.step_count);
        if let Some((read_for, layer)) = &self.text {
            if *read_for == key {
                return Ok(layer.clone());
            }
        }
        let episode = self
            .episode
            .as_mut()
            .ok_or_else(|| EnvError("no page yet: reset first".into()))?;
        let text = bounded(
            TEXT_TIMEOUT,
            PageError::RendererTimeout,
            episode.browser.visible_text(),
        )
        .await
        .map_err(|err| EnvError(format!("cannot read the page's text: {err}")))?;
        let layer = TextLayer {
            session: session.to_string(),
            episode_id: self.state.episode_id.clone(),
            step: self.state.step_count,
            url: text.url,
            runs: text.runs,
            truncated: text.truncated,
        };
        // A read cut short before it found anything (a busy renderer) is not kept: the next
        // request for this step tries again.
        if !(layer.truncated && layer.runs.is_empty()) {
            self.text = Some((key, layer.clone()));
        }
        Ok(layer)
    }

    /// End the current episode and release its browser.
    pub async fn close(&mut self) {
        if let Some(mut episode) = self.episode.take() {
            self.archive.end(Some(&mut episode.browser)).await;
            episode.browser.close().await;
        }
    }
}

/// The longest `action` can take to answer (docs/server.md, "Step time"): reading the element under the
/// pointer, the action's own limit (`finish`'s: reading what a task's check needs), the shared
/// budget of settling and reading the page, and the screenshot's timeout; with
/// `BROWSER_OBSERVE_TEXT`, reading the page's text after it. Whatever a page does, a step stays
/// inside it.
pub fn step_bound(settings: &EnvSettings, action: &BrowserAction) -> Duration {
    let text = if settings.observe_text {
        TEXT_TIMEOUT
    } else {
        Duration::ZERO
    };
    ELEMENT_TIMEOUT
        + action_limit(settings, action)
        + settings.action_wait
        + OBSERVE_SLACK
        + settings.screenshot_timeout
        + text
}

/// How long the action itself may take, its part of `step_bound`. Every character `type`s is a key
/// down and up that the page handles in turn (about 1 ms a character, 3 on a loaded machine,
/// measured: docs/ARCHITECTURE.md, decision 16): long text gets 10 ms a character on top of the
/// timeout. `finish` reads what a task's check needs.
fn action_limit(settings: &EnvSettings, action: &BrowserAction) -> Duration {
    match action.op {
        Op::Wait => settings.explicit_wait,
        Op::Finish => STATE_TIMEOUT,
        Op::Type => {
            settings.action_timeout + TYPE_TIME_PER_CHARACTER * action.text.chars().count() as u32
        }
        _ => settings.action_timeout,
    }
}

/// The time left of the budget that the phases between an action and its screenshot share.
struct Budget {
    deadline: Instant,
}

impl Budget {
    fn from_now(budget: Duration) -> Self {
        Budget {
            deadline: Instant::now() + budget,
        }
    }

    /// `limit`, or what is left of the budget if that is less.
    fn within(&self, limit: Duration) -> Duration {
        limit.min(self.deadline.saturating_duration_since(Instant::now()))
    }
}

/// Make a tab the page opened its current page (a failure is only logged: the step goes on with
/// the tab it has).
async fn follow_tabs<B: Browser>(browser: &mut B, settings: &EnvSettings, budget: &Budget) {
    if let Err(err) = bounded(
        budget.within(settings.action_timeout),
        PageError::ActionTimeout,
        browser.follow_tabs(),
    )
    .await
    {
        tracing::debug!("following the new tabs: {err}");
    }
}

/// Wait until the page shows the action's effect: the seed's fixed wait, or the adaptive settle
/// and how it ended (None when the page could not even answer its probe).
async fn settle_page<B: Browser>(
    browser: &mut B,
    settings: &EnvSettings,
    budget: &Budget,
) -> Option<SettleOutcome> {
    match settings.settle {
        SettleMode::Fixed => {
            tokio::time::sleep(budget.within(settings.action_wait)).await;
            None
        }
        SettleMode::Adaptive => {
            let bound = budget.within(settings.action_wait + SETTLE_PROBE_SLACK);
            match bounded(
                bound,
                PageError::RendererTimeout,
                browser.settle(settings.action_wait),
            )
            .await
            {
                Ok(outcome) => Some(outcome),
                // A page that cannot even answer the settle probe gets judged by the screenshot.
                Err(err) => {
                    tracing::debug!("settle failed: {err}");
                    None
                }
            }
        }
    }
}

/// The page's URL, title, text and password boxes; a renderer that does not answer gives none.
async fn read_facts<B: Browser>(
    browser: &mut B,
    settings: &EnvSettings,
    budget: &Budget,
) -> PageFacts {
    bounded(
        budget.within(settings.action_timeout),
        PageError::RendererTimeout,
        browser.facts(),
    )
    .await
    .unwrap_or_default()
}

/// The screenshot's PNG in base64, or an empty one and why there is none.
async fn take_screenshot<B: Browser>(
    browser: &mut B,
    settings: &EnvSettings,
) -> (String, Option<PageError>) {
    match bounded(
        settings.screenshot_timeout,
        PageError::RendererTimeout,
        browser.screenshot(),
    )
    .await
    {
        Ok(png) => (png, None),
        Err(err) => (String::new(), Some(err)),
    }
}

/// A task episode is judged when it finishes: its check on the final page and the `finish` text
/// (1.0 if it passes, else 0.0). None for other steps and episodes without a task.
async fn judge_task<B: Browser>(episode: &mut Episode<B>, facts: &PageFacts) -> Option<Verdict> {
    let (Some(task), Some(answer)) = (&episode.task, &episode.answer) else {
        return None;
    };
    let state = read_state(&mut episode.browser, &task.check.wants()).await;
    Some(task.judge(&Ending {
        answer,
        url: &facts.url,
        page_text: &facts.text,
        state: &state,
    }))
}

/// What the finishing task's check reads beyond the URL and the text, bounded by `STATE_TIMEOUT`
/// (`finish`'s own limit in `step_bound`); a page that cannot answer fails the parts that needed
/// it, and the verdict says why.
async fn read_state<B: Browser>(browser: &mut B, wants: &Wants) -> PageState {
    if wants.is_empty() {
        return PageState::default();
    }
    match bounded(
        STATE_TIMEOUT,
        PageError::RendererTimeout,
        browser.read_state(wants),
    )
    .await
    {
        Ok(state) => state,
        Err(err) => PageState {
            unread: Some(err.code().to_string()),
            ..PageState::default()
        },
    }
}

/// A reset's `seed`: an integer (OpenEnv's clients send one or none); anything else is no seed.
fn seed_of(seed: &Value) -> Option<u64> {
    seed.as_u64().or_else(|| seed.as_i64().map(|n| n as u64))
}

/// Run a browser call with a deadline; past it, the call is abandoned and `on_timeout` reported.
async fn bounded<T>(
    limit: Duration,
    on_timeout: PageError,
    future: impl Future<Output = Result<T, PageError>>,
) -> Result<T, PageError> {
    match tokio::time::timeout(limit, future).await {
        Ok(result) => result,
        Err(_) => Err(on_timeout),
    }
}

/// What an observation's metadata says beyond the wire's fields.
struct MetadataInputs<'a> {
    title: &'a str,
    step: u64,
    settle_mode: SettleMode,
    /// How the adaptive settle ended, if it ran and the page answered.
    settled: Option<SettleOutcome>,
    timings: &'a Timings,
    /// The whole step so far, action to screenshot.
    total: Duration,
    incidents: &'a Incidents,
    error_detail: Option<String>,
    task: Option<&'a Task>,
    verdict: Option<&'a Verdict>,
    password_boxes: &'a [[i64; 4]],
}

fn metadata(inputs: &MetadataInputs) -> Map<String, Value> {
    let MetadataInputs {
        title,
        step,
        settle_mode,
        settled,
        timings,
        total,
        incidents,
        ref error_detail,
        task,
        verdict,
        password_boxes,
    } = *inputs;
    let ms = |d: Duration| (d.as_secs_f64() * 1000.0 * 10.0).round() / 10.0;
    let settle_name = match (settle_mode, settled) {
        (SettleMode::Fixed, _) => "fixed",
        (SettleMode::Adaptive, Some(SettleOutcome::Quiet)) => "quiet",
        (SettleMode::Adaptive, Some(SettleOutcome::Bounded)) => "bounded",
        (SettleMode::Adaptive, None) => "none",
    };
    let mut map = Map::new();
    map.insert("title".into(), json!(title));
    map.insert("step".into(), json!(step));
    map.insert("settle".into(), json!(settle_name));
    let mut phases = json!({
        "action": ms(timings.action),
        "settle": ms(timings.settle),
        "screenshot": ms(timings.screenshot),
        "total": ms(total),
    });
    if let Some(browser) = timings.browser {
        phases["browser"] = json!(ms(browser));
    }
    map.insert("timings_ms".into(), phases);
    if !incidents.dialogs.is_empty() {
        let dialogs: Vec<Value> = incidents
            .dialogs
            .kept
            .iter()
            .map(|(kind, message)| json!({"type": kind, "message": message}))
            .collect();
        map.insert("dialogs".into(), Value::Array(dialogs));
    }
    let capped = [
        ("downloads_denied", &incidents.downloads_denied),
        ("navigations_blocked", &incidents.navigations_blocked),
    ];
    for (name, list) in capped {
        if !list.is_empty() {
            map.insert(name.into(), json!(list.kept));
        }
    }
    if !incidents.network_refused.is_empty() {
        let refused: Vec<&String> = incidents
            .network_refused
            .kept
            .iter()
            .map(|(_, why)| why)
            .collect();
        map.insert("network_refused".into(), json!(refused));
    }
    let more = [
        ("dialogs_more", incidents.dialogs.more),
        ("downloads_denied_more", incidents.downloads_denied.more),
        (
            "navigations_blocked_more",
            incidents.navigations_blocked.more,
        ),
        ("tabs_closed", incidents.tabs_closed),
        ("scripts_stopped", incidents.scripts_stopped),
    ];
    for (name, count) in more {
        if count > 0 {
            map.insert(name.into(), json!(count));
        }
    }
    if incidents.tab_switches > 0 {
        map.insert("tab_switches".into(), json!(incidents.tab_switches));
    }
    if incidents.navigated {
        map.insert("navigated".into(), json!(true));
    }
    if let Some(detail) = error_detail {
        map.insert("error_detail".into(), json!(detail));
    }
    if let Some(task) = task {
        map.insert(
            "task".into(),
            json!({"id": task.id, "category": task.category, "instruction": task.instruction, "max_steps": task.max_steps}),
        );
    }
    if let Some(verdict) = verdict {
        map.insert("verdict".into(), json!(verdict.shown()));
    }
    if !password_boxes.is_empty() {
        map.insert("password_boxes".into(), json!(password_boxes));
    }
    map
}

#[cfg(test)]
mod tests;
