//! `reset`: what a reset's arguments ask for (checked before the episode before is touched), the
//! next episode's browser (a fresh context, its start page perhaps loaded ahead), its archive or
//! MiniWoB++ task set up before the page loads, and the first observation.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use browserenv::models::{BrowserState, StepResult};
use browserenv::secrets::Secrets;
use browserenv_collect::tasks::Task;

use super::limits::bounded;
use super::observation::{Done, Timings};
use super::{check_not_the_server, check_start_url, miniwob, EnvError, Environment, Episode};
use crate::browser::{Browser, Handover, Launcher, PageError, Preparation};
use crate::miniwob::MiniWobTask;
use crate::settings::SettleMode;

/// What a reset asks for, every argument checked.
struct Start {
    url: url::Url,
    episode_id: String,
    /// A task of the server's `--tasks`.
    task: Option<Task>,
    /// A MiniWoB++ task, its page and its seed.
    miniwob: Option<(MiniWobTask, String, u64)>,
    archive: Option<crate::archive::Plan>,
}

impl<L: Launcher> Environment<L> {
    /// Start a new episode. Keyword arguments as on the wire: `start_url` (required), `episode_id`,
    /// `seed` (fixes the clock and `Math.random` of an episode replayed from an archive; a live
    /// page has none), `task_id`, `archive` (docs/archives.md); unknown ones are ignored.
    pub async fn reset(&mut self, kwargs: &Map<String, Value>) -> Result<StepResult, EnvError> {
        let started = Instant::now();
        let mut start = self.start_asked(kwargs).await?;
        // How long the episode before lasted, against the last load's time.
        let lasted = self
            .last_reset
            .map(|(ended, load)| (started.duration_since(ended), load));
        // The seed closes the previous episode first; bad input above has not touched it. Its
        // browser may serve the next episode in a fresh context (`Launcher::renew`).
        self.text = None;
        let browser_started = Instant::now();
        let previous = match self.episode.take() {
            Some(mut previous) => {
                // The episode that ended leaves its archive with its secrets hidden.
                if self.archive.end() {
                    previous.browser.stop_archive().await;
                }
                self.archive.store(&previous.secrets);
                Some(previous.browser)
            }
            None => None,
        };
        let mut browser = next_browser(&*self.launcher, previous).await?;
        // The page loaded ahead in it (`Browser::prepare_next`), when this reset starts there
        // and loads nothing its own way before the page (an archive's work does), and the page
        // loaded ahead is what a load now would give: not a MiniWoB++ task's, whose documents
        // run on a clock seeded per episode from their first script and at its zoom.
        let preparable = start.archive.is_none()
            && start.miniwob.is_none()
            && self.settings.prepared_resets
            && self.settings.settle == SettleMode::Adaptive;
        let handover = browser
            .take_prepared(preparable.then_some(start.url.as_str()))
            .await;
        if handover == Handover::Spoiled {
            // Another page was loaded ahead in it, or the page changed since: not this episode's
            // to start in.
            browser = next_browser(&*self.launcher, Some(browser)).await?;
        }
        let prepared = handover == Handover::Prepared;
        // What a page loaded ahead would take is this reset's own work from here: the load, the
        // settle and the picture, not the browser's launch or the context it waited for (a
        // session's first reset launches its browser, a second or more on a loaded machine,
        // which made the next episodes look too short to prepare for).
        let loading = Instant::now();
        self.state = BrowserState {
            episode_id: Some(start.episode_id.clone()),
            step_count: 0,
        };
        let mut episode = Episode {
            browser,
            done: false,
            pointer: None,
            task: start.task.take(),
            answer: None,
            verdict: None,
            secrets: Secrets::default(),
            miniwob: None,
        };
        let timings = Timings {
            browser: Some(browser_started.elapsed()),
            ..Timings::default()
        };
        let start_url = start.url.clone();
        let done = match self
            .begin(&mut episode, start, kwargs, prepared, timings, started)
            .await
        {
            Ok(done) => done,
            Err(err) => {
                episode.browser.close().await;
                return Err(err);
            }
        };
        let mut result = self.observe(&mut episode, done).await;
        if prepared {
            result
                .observation
                .metadata
                .insert("prepared".into(), json!(true));
        }
        if preparable
            && result.observation.error.is_empty()
            && self.likely_again(&start_url, lasted)
        {
            episode.browser.prepare_next(Preparation {
                url: start_url.to_string(),
                load_timeout: self.settings.page_load_timeout,
                settle_bound: self.settings.action_wait,
            });
        }
        self.last_start = Some(start_url.to_string());
        let took = loading.elapsed();
        self.last_reset = Some(match (prepared, self.last_reset) {
            // A page handed over took no load: the last load's time stays the estimate.
            (true, Some((_, load))) => (Instant::now(), load),
            _ => (Instant::now(), took),
        });
        self.episode = Some(episode);
        Ok(result)
    }

    /// Whether the next episode's page is worth loading ahead while this one runs: a session that
    /// starts again where it started last (a trainer's loop) will likely do so once more, after
    /// an episode about as long as the one before. Not when that one ended sooner than the last
    /// reset that loaded its page took: the next reset would come before its page is loaded
    /// ahead (a load as long) and wait for it, longer than a load of its own in the fresh context beside it
    /// (back to back, 117 against 82 ms; docs/benchmark.md, "reset").
    fn likely_again(&self, start_url: &url::Url, lasted: Option<(Duration, Duration)>) -> bool {
        let same_start = self
            .last_start
            .as_deref()
            .is_none_or(|last| last == start_url.as_str());
        same_start && lasted.is_none_or(|(episode, load)| episode >= load)
    }

    /// What the reset's arguments ask for: the task (the server's or MiniWoB++'s), the archive,
    /// the start URL and the episode's id, or why not. (`&mut`: a shared borrow held across the
    /// archive's await would need the browser to be `Sync`.)
    async fn start_asked(&mut self, kwargs: &Map<String, Value>) -> Result<Start, EnvError> {
        let miniwob_task = miniwob::task_named(self.miniwob.as_ref(), kwargs)?;
        let task = match miniwob_task {
            Some(_) => None,
            None => self.task_for(kwargs)?,
        };
        let miniwob = match miniwob_task {
            Some((task, url)) => Some((task, url, miniwob::seed(kwargs)?)),
            None => None,
        };
        let archive = match &self.archives {
            Some(archives) => archives
                .plan(
                    kwargs,
                    task.as_ref().map(|(task, _)| task),
                    self.tasks.as_ref().and_then(|c| c.folder.as_deref()),
                )
                .await
                .map_err(EnvError::Refused)?,
            None => None,
        };
        if let (Some((task, ..)), Some(crate::archive::Plan::Replay { .. })) = (&miniwob, &archive)
        {
            return Err(EnvError::MiniWobFromArchive(task.id.clone()));
        }
        // The page a task starts on: its own.
        let own_start = match (&miniwob, &task) {
            (Some((task, url, _)), _) => Some((task.id.clone(), url.clone())),
            (None, Some((task, url))) => Some((task.id.clone(), url.clone())),
            (None, None) => None,
        };
        let url = start_url(kwargs, own_start, archive.as_ref())?;
        check_not_the_server(&url, self.settings.server_port)?;
        let episode_id = match kwargs.get("episode_id") {
            None | Some(Value::Null) => uuid::Uuid::new_v4().to_string(),
            Some(Value::String(id)) => id.clone(),
            Some(other) => other.to_string(),
        };
        Ok(Start {
            url,
            episode_id,
            task: task.map(|(task, _)| task),
            miniwob,
            archive,
        })
    }

    /// Set up what the page needs before it loads (its archive, a MiniWoB++ task's clock), load
    /// it (unless it was loaded ahead) and start its task: what the first observation is of.
    async fn begin(
        &mut self,
        episode: &mut Episode<L::Browser>,
        start: Start,
        kwargs: &Map<String, Value>,
        prepared: bool,
        mut timings: Timings,
        started: Instant,
    ) -> Result<Done, EnvError> {
        if let (Some(plan), Some(archives)) = (start.archive, &self.archives) {
            let seed = kwargs.get("seed").and_then(seed_of);
            let work = archives.work(plan, &start.episode_id, start.url.as_str(), seed);
            if let Err(err) = episode.browser.start_archive(work.clone()).await {
                return Err(EnvError::ArchiveFailed(err.to_string()));
            }
            self.archive.begin(work);
        }
        if let Some((task, url, seed)) = start.miniwob {
            episode.miniwob = Some(
                miniwob::MiniWobEpisode::prepare(&mut episode.browser, task, url, seed).await?,
            );
        }
        let action_started = Instant::now();
        let load = if prepared {
            Ok(())
        } else {
            bounded(
                self.settings.page_load_timeout + Duration::from_secs(5),
                PageError::PageLoadTimeout,
                episode
                    .browser
                    .goto(start.url.as_str(), self.settings.page_load_timeout),
            )
            .await
        };
        if let (Ok(()), Some(miniwob)) = (&load, &mut episode.miniwob) {
            miniwob.start(&mut episode.browser).await?;
        }
        timings.action = action_started.elapsed();
        self.text = None;
        Ok(Done {
            error: load.err(),
            settle: true,
            timings,
            started,
            element: None,
            secret_field: false,
            typed: None,
        })
    }
}

/// The start URL a reset asked for, checked: a task starts where it says (starting it anywhere
/// else, where it ends or on a page of the agent's own that shows the expected text, would earn
/// its reward without doing it); an archive starts where its recording did.
fn start_url(
    kwargs: &Map<String, Value>,
    own_start: Option<(String, String)>,
    archive: Option<&crate::archive::Plan>,
) -> Result<url::Url, EnvError> {
    match (kwargs.get("start_url"), &own_start) {
        (Some(Value::String(url)), Some((task, task_start))) => {
            let asked = check_start_url(url)?;
            if asked != check_start_url(task_start)? {
                return Err(EnvError::TaskStartsElsewhere {
                    task: task.clone(),
                    start: task_start.to_string(),
                });
            }
            Ok(asked)
        }
        (Some(Value::String(url)), _) => check_start_url(url),
        (None | Some(Value::Null), Some((_, task_start))) => check_start_url(task_start),
        (None | Some(Value::Null), None) => match archive.and_then(|a| a.start_url()) {
            Some(recorded) => check_start_url(recorded),
            None => Err(EnvError::NoStartUrl),
        },
        _ => Err(EnvError::NoStartUrl),
    }
}

/// The browser for the next episode: `previous`'s renewed (a fresh context on the same browser,
/// opened ahead), else a launched one.
async fn next_browser<L: Launcher>(
    launcher: &L,
    previous: Option<L::Browser>,
) -> Result<L::Browser, EnvError> {
    let renewed = match previous {
        Some(previous) => launcher.renew(previous).await,
        None => None,
    };
    match renewed {
        Some(browser) => Ok(browser),
        None => launcher.launch().await.map_err(|err| {
            tracing::error!("browser launch failed: {err:#}");
            EnvError::BrowserFailed(format!("{err:#}"))
        }),
    }
}

/// A reset's `seed`: an integer (OpenEnv's clients send one or none); anything else is no seed.
fn seed_of(seed: &Value) -> Option<u64> {
    seed.as_u64().or_else(|| seed.as_i64().map(|n| n as u64))
}
