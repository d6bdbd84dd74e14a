//! A MiniWoB++ episode in the episode logic (`miniwob/`): the reset that sets up and
//! starts its task, and after every step the page's own verdict, which ends the episode and
//! gives its reward.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::limits::{bounded, Budget, ELEMENT_TIMEOUT};
use super::{EnvError, Episode};
use crate::browser::{Browser, PageError};
use crate::miniwob::{self, MiniWob, MiniWobTask, PageVerdict};

/// What a MiniWoB++ episode knows of its task.
pub(super) struct MiniWobEpisode {
    task: MiniWobTask,
    url: String,
    seed: u64,
    /// The page's utterance for this seed, read once started.
    instruction: String,
    /// Set once the page ended the episode (or the page left the task).
    verdict: Option<PageVerdict>,
}

/// The MiniWoB++ task a reset names, with its page; `None` for any other reset.
pub(super) fn task_named(
    miniwob: Option<&Arc<MiniWob>>,
    kwargs: &Map<String, Value>,
) -> Result<Option<(MiniWobTask, String)>, EnvError> {
    let Some(Value::String(id)) = kwargs.get("task_id") else {
        return Ok(None);
    };
    if !id.starts_with("miniwob.") {
        return Ok(None);
    }
    let Some(miniwob) = miniwob else {
        return Err(EnvError::NoMiniWob(id.clone()));
    };
    let Some(task) = miniwob.get(id) else {
        let known: Vec<&str> = miniwob.tasks().iter().map(|t| t.id.as_str()).collect();
        return Err(EnvError::UnknownMiniWob {
            id: id.clone(),
            known: known.join(", "),
        });
    };
    Ok(Some((task.clone(), miniwob.url(task))))
}

/// The largest seed: the page reads it as a JavaScript number, exact up to 2^53 - 1.
pub(super) const MAX_SEED: u64 = (1 << 53) - 1;

/// The seed a reset gives (an integer), or one drawn for it: every MiniWoB++ episode has one,
/// and says which, so that it can be played again.
pub(super) fn seed(kwargs: &Map<String, Value>) -> Result<u64, EnvError> {
    match kwargs.get("seed") {
        None | Some(Value::Null) => Ok(u64::from(rand_seed())),
        Some(value) => value
            .as_u64()
            .filter(|seed| *seed <= MAX_SEED)
            .ok_or_else(|| EnvError::BadSeed(value.to_string())),
    }
}

fn rand_seed() -> u32 {
    // A fresh UUID's random bits: no RNG crate for one number per episode.
    let bytes = uuid::Uuid::new_v4().into_bytes();
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

impl MiniWobEpisode {
    /// Before the page loads: the seeded page clock in its documents, and the zoom.
    pub(super) async fn prepare<B: Browser>(
        browser: &mut B,
        task: MiniWobTask,
        url: String,
        seed: u64,
    ) -> Result<MiniWobEpisode, EnvError> {
        let set_up = async {
            browser
                .add_document_script(miniwob::clock_script(seed))
                .await?;
            browser.zoom(miniwob::ZOOM).await
        };
        bounded(ELEMENT_TIMEOUT * 5, PageError::ActionTimeout, set_up)
            .await
            .map_err(|err| EnvError::MiniWobSetUp(err.to_string()))?;
        Ok(MiniWobEpisode {
            task,
            url,
            seed,
            instruction: String::new(),
            verdict: None,
        })
    }

    /// Once the page loaded: start the episode (`start.js`) and read its instruction.
    pub(super) async fn start<B: Browser>(&mut self, browser: &mut B) -> Result<(), EnvError> {
        let limit = Duration::from_millis(2 * miniwob::START_WAIT_MS) + ELEMENT_TIMEOUT;
        let started = bounded(
            limit,
            PageError::ActionTimeout,
            browser.evaluate(miniwob::start_expression(&self.task, self.seed)),
        )
        .await
        .map_err(|err| EnvError::MiniWobStart {
            task: self.task.id.clone(),
            why: err.to_string(),
        })?;
        if let Some(error) = started["error"].as_str() {
            return Err(EnvError::MiniWobStart {
                task: self.task.id.clone(),
                why: error.to_string(),
            });
        }
        self.instruction = started["instruction"]
            .as_str()
            .map(|said| crate::browser::first_chars(said, 2000))
            .unwrap_or_default();
        Ok(())
    }

    pub(super) fn task_id(&self) -> &str {
        &self.task.id
    }

    /// `metadata.task`.
    fn shown(&self, max_steps: u64) -> Value {
        json!({"id": self.task.id, "instruction": self.instruction, "seed": self.seed,
               "split": self.task.split, "max_steps": max_steps, "scored_by": "page"})
    }
}

/// After a step's settle: whether the page ended the episode. Its verdict is read in the
/// page's own world, within the step's shared budget; a page that does not answer has not ended
/// it. A page that left the task (a link elsewhere) ends it with nothing.
pub(super) async fn page_ended<B: Browser>(
    episode: &mut Episode<B>,
    url: &str,
    budget: &Budget,
) -> bool {
    let Some(miniwob) = &mut episode.miniwob else {
        return false;
    };
    let on_task = url.is_empty() || url.split('#').next() == Some(miniwob.url.as_str());
    if !on_task {
        miniwob.verdict = Some(PageVerdict {
            raw_reward: 0.0,
            reward: 0.0,
            reason: Some("the page left the task".into()),
        });
        return true;
    }
    let read = bounded(
        budget.within(ELEMENT_TIMEOUT),
        PageError::RendererTimeout,
        episode.browser.evaluate(miniwob::VERDICT.to_string()),
    )
    .await;
    match read {
        Ok(value) => {
            miniwob.verdict = PageVerdict::read(&value);
            miniwob.verdict.is_some()
        }
        Err(err) => {
            tracing::debug!("the MiniWoB++ page's verdict: {err}");
            false
        }
    }
}

/// The step's reward in a MiniWoB++ episode: the page's raw reward once it ended the episode,
/// else 0. `None` for other episodes.
pub(super) fn reward<B: Browser>(episode: &Episode<B>) -> Option<f64> {
    let miniwob = episode.miniwob.as_ref()?;
    Some(miniwob.verdict.as_ref().map_or(0.0, |v| v.raw_reward))
}

/// `metadata.task` and, once the page ended the episode, `metadata.miniwob`.
pub(super) fn describe<B: Browser>(
    episode: &Episode<B>,
    max_steps: u64,
    metadata: &mut Map<String, Value>,
) {
    let Some(miniwob) = &episode.miniwob else {
        return;
    };
    metadata.insert("task".into(), miniwob.shown(max_steps));
    if let Some(verdict) = &miniwob.verdict {
        metadata.insert("miniwob".into(), verdict.shown());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::{json, Map, Value};

    use super::super::Environment;
    use crate::fake::{FakeLauncher, FakeScript};
    use crate::miniwob::{tasks, MiniWob};
    use crate::settings::EnvSettings;
    use browserenv::models::BrowserAction;

    /// A folder removed when dropped.
    struct Folder(std::path::PathBuf);

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A folder laid out as the `miniwob` package's `html` (empty pages): what `--miniwob` checks.
    async fn catalog() -> (Folder, Arc<MiniWob>) {
        let dir = Folder(
            std::env::temp_dir().join(format!("browserenv-miniwob-test-{}", uuid::Uuid::new_v4())),
        );
        std::fs::create_dir_all(dir.0.join("core")).unwrap();
        std::fs::create_dir_all(dir.0.join("miniwob")).unwrap();
        std::fs::write(dir.0.join("core/core.js"), "").unwrap();
        for task in tasks() {
            std::fs::write(dir.0.join(format!("miniwob/{}.html", task.page())), "").unwrap();
        }
        let miniwob = MiniWob::serve(&dir.0).await.unwrap();
        (dir, Arc::new(miniwob))
    }

    fn reset(id: &str, seed: Option<i64>) -> Map<String, Value> {
        let mut kwargs = Map::new();
        kwargs.insert("task_id".into(), json!(id));
        if let Some(seed) = seed {
            kwargs.insert("seed".into(), json!(seed));
        }
        kwargs
    }

    fn env(
        miniwob: Option<Arc<MiniWob>>,
        evaluations: Vec<Value>,
    ) -> (Environment<FakeLauncher>, Arc<FakeLauncher>) {
        let launcher = Arc::new(FakeLauncher::new(FakeScript {
            evaluations,
            ..FakeScript::default()
        }));
        let settings = EnvSettings {
            max_steps: 3,
            action_wait: Duration::from_millis(20),
            ..EnvSettings::default()
        };
        let env = Environment::new(launcher.clone(), settings).with_miniwob(miniwob);
        (env, launcher)
    }

    #[tokio::test]
    async fn the_page_s_verdict_ends_the_episode_with_its_raw_reward() {
        let (_dir, miniwob) = catalog().await;
        let task = miniwob.get("miniwob.click-test").unwrap().clone();
        let (mut env, launcher) = env(
            Some(miniwob.clone()),
            vec![
                json!({"instruction": "Click the button."}),
                // Read after the reset's load, then after each step.
                json!([false, 0, 0, null]),
                json!([false, 0, 0, null]),
                json!([true, 1, 0.93, "Cool!"]),
            ],
        );
        let first = env
            .reset(&reset("miniwob.click-test", Some(5)))
            .await
            .unwrap();
        let task_shown = &first.observation.metadata["task"];
        assert_eq!(task_shown["instruction"], "Click the button.");
        assert_eq!(
            (task_shown["seed"].clone(), task_shown["split"].clone()),
            (json!(5), json!("test"))
        );
        assert_eq!((first.reward, first.done), (Some(0.0), false));
        let calls = launcher.calls();
        let at = |start: &str| calls.iter().position(|c| c.starts_with(start)).unwrap();
        // The clock and the zoom before the page loads, the start once it has.
        assert!(at("document script") < at("goto") && at("zoom 2.5") < at("goto"));
        assert!(calls[at("goto")].ends_with(&miniwob.url(&task)));
        assert!(at("goto") < at("evaluate"));
        let on = env
            .step(&BrowserAction::click(10, 10), false)
            .await
            .unwrap();
        assert_eq!((on.reward, on.done), (Some(0.0), false));
        assert!(on.observation.metadata.get("miniwob").is_none());
        let last = env
            .step(&BrowserAction::click(10, 10), false)
            .await
            .unwrap();
        assert_eq!((last.reward, last.done), (Some(1.0), true));
        assert_eq!(
            last.observation.metadata["miniwob"],
            json!({"done": true, "raw_reward": 1.0, "reward": 0.93, "reason": "Cool!"})
        );
        assert_eq!(env.task_id().as_deref(), Some("miniwob.click-test"));
    }

    #[tokio::test]
    async fn the_step_limit_ends_an_episode_the_page_did_not() {
        let (_dir, miniwob) = catalog().await;
        let (mut env, _) = env(
            Some(miniwob),
            vec![json!({"instruction": "x"}), json!([false, 0, 0, null])],
        );
        env.reset(&reset("miniwob.enter-text", None)).await.unwrap();
        let mut last = None;
        for _ in 0..3 {
            last = Some(env.step(&BrowserAction::click(1, 1), false).await.unwrap());
        }
        let last = last.unwrap();
        assert_eq!((last.reward, last.done), (Some(0.0), true));
        assert!(
            last.observation.metadata["task"]["seed"].is_u64(),
            "a seed is drawn and said"
        );
    }

    #[tokio::test]
    async fn bad_resets_are_refused_and_say_why() {
        let (_dir, miniwob) = catalog().await;
        let (mut without, _) = env(None, Vec::new());
        let err = without
            .reset(&reset("miniwob.click-test", None))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("start it with --miniwob DIR"),
            "{}",
            err.to_string()
        );
        let (mut env, _) = env(
            Some(miniwob),
            vec![json!({"error": "not a MiniWoB++ task page"})],
        );
        let err = env.reset(&reset("miniwob.nope", None)).await.unwrap_err();
        assert!(
            err.to_string().contains("unknown task_id \"miniwob.nope\""),
            "{}",
            err.to_string()
        );
        for seed in [-1, 1 << 53] {
            let err = env
                .reset(&reset("miniwob.click-test", Some(seed)))
                .await
                .unwrap_err();
            assert!(
                err.to_string().contains("seed must be a whole number"),
                "{}",
                err.to_string()
            );
        }
        // A page that is not a task: the reset fails, saying so.
        let err = env
            .reset(&reset("miniwob.click-test", Some(1)))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("not a MiniWoB++ task page"),
            "{}",
            err.to_string()
        );
    }

    #[tokio::test]
    async fn a_task_run_again_loads_its_page_afresh_never_prepared() {
        // A page loaded ahead would have run without the episode's seeded clock and zoom, on the
        // real clock from before the reset: every episode loads its own.
        let (_dir, miniwob) = catalog().await;
        let (mut env, launcher) = env(
            Some(miniwob),
            vec![json!({"instruction": "x"}), json!([false, 0, 0, null])],
        );
        for _ in 0..3 {
            let result = env
                .reset(&reset("miniwob.click-test", Some(7)))
                .await
                .unwrap();
            assert!(result.observation.metadata.get("prepared").is_none());
        }
        let calls = launcher.calls();
        assert!(
            !calls.iter().any(|c| c.starts_with("prepare ")),
            "{calls:?}"
        );
        assert_eq!(calls.iter().filter(|c| c.starts_with("goto ")).count(), 3);
    }
}
