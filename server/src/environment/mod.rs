//! The episode logic: what `reset`, `step` and `state` mean, independent of transport and of the
//! browser implementation. This is where an action becomes browser calls, where settling and the
//! seed's end conditions (finish, step limit, bot verification, renderer timeout) are applied, and
//! where every browser call is bounded so a hung page becomes an error code instead of a hang.

mod capture;
mod limits;
mod miniwob;
mod observation;
pub mod outcome;
mod reset;
mod start_url;
pub mod verification;

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};

use browserenv::models::{Action, BrowserAction, BrowserState, Point, StepResult};
use browserenv::secrets::Secrets;
use browserenv::text_layer::TextLayer;
use browserenv_collect::tasks::{Task, TaskSet, Verdict};

use crate::browser::{Browser, Launcher, PageError};
use crate::settings::EnvSettings;
use limits::{action_limit, bounded, ELEMENT_TIMEOUT, VIEWPORT_CENTRE};
use observation::{Done, Place, Timings};

pub use crate::browser::Region;
pub use capture::{checked_scale, Capture, MAX_SCALE, MIN_SCALE};
pub use limits::{step_bound, OBSERVE_SLACK, TYPE_TIME_PER_CHARACTER};
pub use observation::OBSERVE_TEXT_CHARS;
pub use start_url::{check_not_the_server, check_start_url, check_url};

/// A failure of the environment itself, or of the session around it (not of the page): the
/// wire's `EXECUTION_ERROR`, whose message is this error's text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnvError {
    /// A start URL the seed's rule refuses.
    #[error("expected an HTTP(S) URL without credentials")]
    BadStartUrl,
    #[error("start_url is this server's own address: its routes are not a page for the agent")]
    StartUrlIsTheServer,
    #[error("reset needs start_url: an HTTP(S) URL without credentials")]
    NoStartUrl,
    #[error("task_id must be a string, got {0}")]
    TaskIdNotAString(String),
    #[error("unknown task_id {0:?}: this server has no tasks (start it with --tasks FILE)")]
    NoTasks(String),
    #[error("unknown task_id {id:?}; known: {known}")]
    UnknownTask { id: String, known: String },
    #[error(
        "unknown task_id {0:?}: this server has no MiniWoB++ tasks (start it with --miniwob \
         DIR, the miniwob package's html folder)"
    )]
    NoMiniWob(String),
    #[error("unknown task_id {id:?}; the MiniWoB++ tasks are {known}")]
    UnknownMiniWob { id: String, known: String },
    #[error("seed must be a whole number from 0 to {max}, got {0}", max = miniwob::MAX_SEED)]
    BadSeed(String),
    #[error("{0} runs from its own pages, not from an archive")]
    MiniWobFromArchive(String),
    #[error("cannot set up the MiniWoB++ page: {0}")]
    MiniWobSetUp(String),
    #[error("cannot start {task}: {why}")]
    MiniWobStart { task: String, why: String },
    #[error("task {task:?} starts at its own start URL: leave start_url out (or give {start})")]
    TaskStartsElsewhere { task: String, start: String },
    /// A task's start URL that does not resolve, or what a reset asked of archives.
    #[error("{0}")]
    Refused(String),
    #[error("the browser failed to start: {0}")]
    BrowserFailed(String),
    #[error("the episode cannot use its archive: {0}")]
    ArchiveFailed(String),
    #[error("reset before stepping")]
    NotReset,
    /// An action this server does not take (`BROWSER_ACTIONS=seed`): its op.
    #[error(
        "{0} is not an action of this server: it takes the seed's seven (BROWSER_ACTIONS=seed)"
    )]
    NotAnAction(String),
    /// A URL an action opens (`goto`'s) that the reset's rules refuse: the refusal, naming the
    /// action's field (`check_url`).
    #[error("{0}")]
    ActionUrl(String),
    #[error("no page yet: reset first")]
    NoPage,
    #[error("cannot read the page's text: {0}")]
    PageText(String),
    /// A capture's scale out of bounds, or a picture larger than a capture may be (`capture.rs`).
    #[error("scale: {0}")]
    CaptureScale(String),
    /// A capture the page did not give (a busy renderer, an unreadable picture).
    #[error("cannot capture the page: {0}")]
    Capture(String),
    /// The session's: closed (by the client, its idle time, or a drain).
    #[error("the session is closed")]
    Closed,
    #[error(
        "the session is closed: {}",
        crate::operations::drain::DRAINING_MESSAGE
    )]
    ClosedByDrain,
    #[error("{}", crate::operations::drain::DRAINING_MESSAGE)]
    Draining,
    #[error("this server runs no campaign (start it with --campaign DIR)")]
    NoCampaign,
    /// A lease the campaign's rules refuse to a session.
    #[error("{0}")]
    Campaign(String),
    #[error(
        "{name} holds control of this session: the reset waited {waited:.1} s \
         (BROWSER_HANDOFF_WAIT_SECONDS); try again after the hand-back"
    )]
    HeldByAPerson { name: String, waited: f64 },
    #[error("you do not hold control of this session: take it first")]
    NotInControl,
    #[error("reset before asking for a person")]
    AskBeforeReset,
    /// An ask for a person the session cannot take (one is open already, ...).
    #[error("{0}")]
    Ask(String),
    #[error("{still} within {seconds} s; ask again, or go on")]
    NotHandedBack { still: String, seconds: u64 },
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
    /// What was typed as a secret this episode, and what secret fields hold: hidden in all the
    /// episode's observations (`browserenv::secrets`). Memory only.
    secrets: Secrets,
    /// A MiniWoB++ task, scored by its page (`miniwob.rs`).
    miniwob: Option<miniwob::MiniWobEpisode>,
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
    /// The session served, for its text layers.
    session: String,
    /// The server's archives (`archive/`), and this environment's work with them.
    archives: Option<Arc<crate::archive::Archives>>,
    archive: crate::archive::EpisodeArchive,
    /// The MiniWoB++ tasks `reset` may name (`--miniwob`).
    miniwob: Option<Arc<crate::miniwob::MiniWob>>,
    /// Where the last reset started: the next one is prepared when it starts there too.
    last_start: Option<String>,
    /// When the last reset ended, and how long the last one that loaded its page took
    /// (`reset.rs`, `likely_again`).
    last_reset: Option<(Instant, std::time::Duration)>,
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
            session: String::new(),
            archives: None,
            archive: Default::default(),
            miniwob: None,
            last_start: None,
            last_reset: None,
        }
    }

    /// Let `reset` take a MiniWoB++ `task_id` (`miniwob.click-test`).
    pub fn with_miniwob(mut self, miniwob: Option<Arc<crate::miniwob::MiniWob>>) -> Self {
        self.miniwob = miniwob;
        self
    }

    /// Record episodes into archives, and replay them from archives, as `archives` says.
    pub fn with_archives(mut self, archives: Option<Arc<crate::archive::Archives>>) -> Self {
        self.archives = archives;
        self
    }

    /// The session this environment serves (its text layers say so).
    pub fn for_session(mut self, session: &str) -> Self {
        self.session = session.to_string();
        self
    }

    /// Let `reset` take a `task_id`.
    pub fn with_tasks(mut self, tasks: Option<Arc<TaskCatalog>>) -> Self {
        self.tasks = tasks;
        self
    }

    /// The current episode's task id.
    pub fn task_id(&self) -> Option<String> {
        let episode = self.episode.as_ref()?;
        match &episode.miniwob {
            Some(miniwob) => Some(miniwob.task_id().to_string()),
            None => episode.task.as_ref().map(|t| t.id.clone()),
        }
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
            Some(other) => return Err(EnvError::TaskIdNotAString(other.to_string())),
        };
        let Some(catalog) = &self.tasks else {
            return Err(EnvError::NoTasks(id.to_string()));
        };
        let Some(task) = catalog.tasks.get(id) else {
            return Err(EnvError::UnknownTask {
                id: id.to_string(),
                known: catalog.tasks.ids().join(", "),
            });
        };
        let start = task
            .resolve_start_url(catalog.base_url.as_ref())
            .map_err(EnvError::Refused)?;
        Ok(Some((task.clone(), start)))
    }

    pub fn settings(&self) -> &EnvSettings {
        &self.settings
    }

    pub fn state(&self) -> BrowserState {
        self.state.clone()
    }

    /// One action. `mark_secret`: a person marked it as a secret (the focused field holds a
    /// secret from now on, whatever the page says of it).
    pub async fn step(
        &mut self,
        action: &BrowserAction,
        mark_secret: bool,
    ) -> Result<StepResult, EnvError> {
        let started = Instant::now();
        let settings = self.settings.clone();
        let episode = match self.episode.as_mut() {
            Some(episode) if !episode.done => episode,
            _ => return Err(EnvError::NotReset),
        };
        // Refused before the step counts, as a reset's bad input leaves the episode untouched.
        check_taken(action, &settings)?;
        self.state.step_count += 1;
        let mut timings = Timings::default();
        // What the action is about, read before it changes the page (a click may navigate): the
        // element under the pointer, or for typing, keys and chords the focused one: any of them
        // may put input into it (a chord, a paste), so what a secret field held before the step
        // is kept, whatever it holds after (ENTER may send it away).
        let focused = matches!(
            action.action,
            Action::Type { .. } | Action::Key { .. } | Action::Press { .. }
        );
        let target = match action.action.point() {
            Some(at) => Some(Some((at.x, at.y))),
            None => focused.then_some(None),
        };
        // The field the action's input goes into: the focused one, or the select it chooses in.
        let into_field = focused || matches!(action.action, Action::Select { .. });
        // A person's mark is for that field, whatever the action: the focused one is marked as
        // it is read, a select once it has the focus (after the choice).
        let mark = mark_secret && into_field;
        let element = match target {
            Some(at) => element_before(episode, at, mark && at.is_none()).await,
            None => None,
        };
        let in_secret_field = mark
            || (into_field
                && element
                    .as_ref()
                    .and_then(|e| e.get("password"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false));
        // A paste or a drop into a plain field puts them in hidden (`Browser::know_secrets`).
        episode.browser.know_secrets(&episode.secrets);
        let outcome = act(episode, &settings, &action.action).await;
        let settle_needed = !matches!(action.action, Action::Wait | Action::Finish { .. });
        if mark && matches!(action.action, Action::Select { .. }) {
            // The chosen select has the focus now: the person's secret field from here. Its
            // label (what the page shows of it) is the step's `typed`, kept as a secret.
            let marking = episode.browser.element(None, true);
            let _ = bounded(ELEMENT_TIMEOUT, PageError::ActionTimeout, marking).await;
        }
        timings.action = started.elapsed();
        let error = outcome.err();
        // A page that did not take the input in time is busy (a script spinning, a dialog
        // loop): it cannot settle either, so the step goes straight to the screenshot.
        let settle = settle_needed
            && !error
                .as_ref()
                .is_some_and(|e| e.ends_episode() || *e == PageError::ActionTimeout);
        let done = Done {
            error,
            settle,
            timings,
            started,
            element,
            secret_field: in_secret_field,
            typed: browserenv::secrets::typed_text(&action.action),
        };
        let mut episode = self.episode.take().expect("a live episode");
        let result = self.observe(&mut episode, done).await;
        self.episode = Some(episode);
        Ok(result)
    }

    /// The observation of `done` (`observation.rs`), its text layer kept for watchers.
    async fn observe(&mut self, episode: &mut Episode<L::Browser>, done: Done) -> StepResult {
        let place = Place {
            settings: &self.settings,
            session: &self.session,
            episode_id: self.state.episode_id.as_deref(),
            step: self.state.step_count,
        };
        // The archive's part of the metadata is said there, before the secrets are hidden.
        let (result, layer) = observation::observe(episode, place, &self.archive, done).await;
        // What the archive recorded so far goes to the disk with the episode's secrets hidden.
        self.archive.store(&episode.secrets);
        if let Some(layer) = layer {
            self.text = Some((
                (self.state.episode_id.clone(), self.state.step_count),
                layer,
            ));
        }
        result
    }

    /// The current page's visible text with its boxes (the TUI's text layer), the episode's
    /// secrets hidden, bounded like every browser call. Read-only: the episode, its step count and
    /// its observations are untouched. Read once per step: more requests for the same step
    /// (several watchers, `BROWSER_OBSERVE_TEXT`) get the same layer.
    pub async fn visible_text(&mut self) -> Result<TextLayer, EnvError> {
        let key = (self.state.episode_id.clone(), self.state.step_count);
        if let Some((read_for, layer)) = &self.text {
            if *read_for == key {
                return Ok(layer.clone());
            }
        }
        let episode = self.episode.as_mut().ok_or(EnvError::NoPage)?;
        let place = Place {
            settings: &self.settings,
            session: &self.session,
            episode_id: self.state.episode_id.as_deref(),
            step: self.state.step_count,
        };
        let (layer, _) = observation::read_text(episode, &place).await?;
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
            if self.archive.end() {
                episode.browser.stop_archive().await;
            }
            self.archive.store(&episode.secrets);
            episode.browser.close().await;
        }
    }
}

/// Whether this server takes the action (`BROWSER_ACTIONS`), and a `goto`'s URL under the reset's
/// rule: refused before the step counts.
fn check_taken(action: &BrowserAction, settings: &EnvSettings) -> Result<(), EnvError> {
    let op = action.op();
    if !settings.actions.ops().contains(&op) {
        return Err(EnvError::NotAnAction(op.to_string()));
    }
    if let Action::Goto { url } = &action.action {
        check_url("url", url, settings.server_port)?;
    }
    Ok(())
}

/// The element an action is about (`at`, or the focused one), read before the action: what a
/// secret field there holds is the episode's secret from now on; `mark`, a person marks it.
async fn element_before<B: crate::browser::Browser>(
    episode: &mut Episode<B>,
    at: Option<(i64, i64)>,
    mark: bool,
) -> Option<Value> {
    let read = episode.browser.element(at, mark);
    match bounded(ELEMENT_TIMEOUT, PageError::ActionTimeout, read).await {
        Ok(Some(facts)) => {
            if let Some(held) = facts.held {
                episode.secrets.hold(held.field, &held.value);
            }
            Some(facts.shown)
        }
        Ok(None) => None,
        // Unread (a page that made the probe's answer unreadable, a hung renderer): it may be a
        // password field, and nothing says it is not, so it counts as one.
        Err(_) => Some(json!({"unreadable": true, "password": true})),
    }
}

/// The action on the episode's browser, each under its deadline; the episode's pointer follows
/// the pointer's gestures (where the wheel turns when a scroll names no point).
async fn act<B: crate::browser::Browser>(
    episode: &mut Episode<B>,
    settings: &EnvSettings,
    action: &Action,
) -> Result<(), PageError> {
    let limit = action_limit(settings, action);
    let timeout = PageError::ActionTimeout;
    let browser = &mut episode.browser;
    let pointer = &mut episode.pointer;
    let mut rest_at = |at: Point| *pointer = Some((at.x, at.y));
    match action {
        Action::Click {
            at,
            button,
            count,
            modifiers,
        } => {
            rest_at(*at);
            bounded(
                limit,
                timeout,
                browser.click(*at, *button, *count, *modifiers),
            )
            .await
        }
        Action::Type { text } => bounded(limit, timeout, browser.type_text(text)).await,
        Action::Key { key } => bounded(limit, timeout, browser.press(key.chord(), 1)).await,
        Action::Press { chord, repeat } => {
            bounded(limit, timeout, browser.press(*chord, *repeat)).await
        }
        Action::Scroll { dx, dy, at } => {
            // The pointer goes where the wheel turns, and rests there.
            let (x, y) = match at {
                Some(at) => {
                    rest_at(*at);
                    (at.x, at.y)
                }
                None => pointer.unwrap_or(VIEWPORT_CENTRE),
            };
            bounded(limit, timeout, browser.scroll(Point::new(x, y), *dx, *dy)).await
        }
        Action::Back => bounded(limit, timeout, browser.back()).await.map(|_| ()),
        Action::Forward => bounded(limit, timeout, browser.forward()).await.map(|_| ()),
        Action::Wait => {
            tokio::time::sleep(settings.explicit_wait).await;
            Ok(())
        }
        Action::Finish { answer } => {
            episode.done = true;
            episode.answer = Some(answer.clone());
            Ok(())
        }
        Action::Move { at } => {
            rest_at(*at);
            bounded(limit, timeout, browser.move_to(*at)).await
        }
        Action::Drag {
            path,
            button,
            modifiers,
        } => {
            if let Some(last) = path.last() {
                rest_at(*last);
            }
            bounded(limit, timeout, browser.drag(path, *button, *modifiers)).await
        }
        Action::MouseDown { at, button } | Action::MouseUp { at, button } => {
            rest_at(*at);
            let down = matches!(action, Action::MouseDown { .. });
            bounded(limit, timeout, browser.mouse_button(*at, *button, down)).await
        }
        Action::Select { at, label } => {
            rest_at(*at);
            bounded(limit, timeout, browser.select_option(*at, label)).await
        }
        // As a reset's page: a slow load is said (`page_load_timeout`), not fatal.
        Action::Goto { url } => {
            let load = browser.goto(url, settings.page_load_timeout);
            bounded(limit, PageError::PageLoadTimeout, load).await
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod gesture_tests;
