//! MiniWoB++ offline, scored by the page (docs/tasks.md, "MiniWoB++"): the 125 tasks BrowserGym
//! registers, from the `html` folder of the `miniwob` package (`--miniwob DIR`), served on a
//! loopback listener of their own like the demo site, never by the API's.
//!
//! A task is reset by BrowserGym's id (`miniwob.click-test`) and a seed. Its page gets the
//! archive replay's page clock with that seed before its scripts run (`clock.js`: the page's own
//! `Date`, `performance.now` and `Math.random`, no caret), is drawn `ZOOM` times larger, and once
//! loaded is started by `start.js`: `Math.seedrandom(seed)` as BrowserGym does, no START cover,
//! no episode timer; its instruction is the page's utterance. After every step the page's own
//! verdict is read (`VERDICT`): once it says done, the episode ends with the raw reward. So the
//! same seed and the same actions give the same pixels on a fresh session.
//!
//! The task list and its train/test split are BrowserGym's (`tasks.tsv`); the pages are the
//! package's, installed like any dependency, not copied here.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::site::SiteHandle;

/// BrowserGym's task ids and splits, one `id<TAB>split` a line.
const TASKS_TSV: &str = include_str!("tasks.tsv");
/// Starts an episode on a loaded task page (see the file).
const START_JS: &str = include_str!("start.js");

/// The page's verdict after a step: `[done, raw reward, time-discounted reward, reason]`, read in
/// the page's own world (MiniWoB++'s globals, set by `core.endEpisode`).
pub const VERDICT: &str = "[WOB_DONE_GLOBAL === true, Number(WOB_RAW_REWARD_GLOBAL), \
    Number(WOB_REWARD_GLOBAL), WOB_REWARD_REASON === null || WOB_REWARD_REASON === undefined \
    ? null : String(WOB_REWARD_REASON).slice(0, 200)]";

/// How much larger a task is drawn: its 160x210 CSS pixels (the instruction and the task) become
/// 400x525 of the 800x600 picture, its 10-pixel text 25 pixels high. The page lays out in
/// 320x240 CSS pixels, room for a date picker or a menu that reaches below the task.
pub const ZOOM: f64 = 2.5;

/// When the page's clock starts (2026-01-01T00:00:00Z): after 2016, so the tasks' date pickers,
/// which end there, open where MiniWoB++ expects; fixed, so the same seed draws the same page.
pub const CLOCK_START_MS: i64 = 1_767_225_600_000;

/// How long the page may take to show its cover after loading, and to say it is ready once
/// started (a flight search builds itself in a frame).
pub const START_WAIT_MS: u64 = 5_000;

/// Tasks whose instruction shows part of what it asks as a picture (`start.js`).
const PICTURED: [&str; 2] = ["miniwob.click-menu-2", "miniwob.use-colorwheel-2"];

/// The two splits of BrowserGym's MiniWoB++ benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    Train,
    Test,
}

impl Split {
    pub const ALL: [Split; 2] = [Split::Train, Split::Test];

    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Test => "test",
        }
    }
}

/// One task: BrowserGym's id (`miniwob.click-test`), its page and its split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MiniWobTask {
    pub id: String,
    pub split: Split,
}

impl MiniWobTask {
    /// The page's name in the package's `miniwob/` folder (`click-test`).
    pub fn page(&self) -> &str {
        self.id.trim_start_matches("miniwob.")
    }
}

/// Every task BrowserGym registers, in its order.
pub fn tasks() -> Vec<MiniWobTask> {
    TASKS_TSV
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (id, split) = line.split_once('\t').expect("id<TAB>split");
            let split = match split.trim() {
                "train" => Split::Train,
                "test" => Split::Test,
                other => panic!("tasks.tsv: unknown split {other}"),
            };
            MiniWobTask {
                id: id.to_string(),
                split,
            }
        })
        .collect()
}

/// The tasks of a server started with `--miniwob DIR`, and the listener serving their pages.
pub struct MiniWob {
    dir: PathBuf,
    tasks: Vec<MiniWobTask>,
    site: SiteHandle,
}

impl std::fmt::Debug for MiniWob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniWob")
            .field("dir", &self.dir)
            .field("tasks", &self.tasks.len())
            .field("site", &self.site.addr)
            .finish()
    }
}

impl MiniWob {
    /// Check that `dir` (the package's `html` folder) has every task's page and MiniWoB++'s
    /// core, then serve it on a loopback port of its own.
    pub async fn serve(dir: &Path) -> Result<MiniWob, String> {
        let tasks = tasks();
        let hint = "give the `html` folder of the `miniwob` package (pip install miniwob; \
            `make miniwob` finds it)";
        if !dir.join("core").join("core.js").is_file() {
            return Err(format!(
                "--miniwob {}: no core/core.js there: {hint}",
                dir.display()
            ));
        }
        let missing: Vec<&str> = tasks
            .iter()
            .filter(|task| !page_path(dir, task).is_file())
            .map(|task| task.page())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "--miniwob {}: {} of the {} task pages are missing from miniwob/ ({}): {hint}",
                dir.display(),
                missing.len(),
                tasks.len(),
                missing.join(", ")
            ));
        }
        let site = crate::site::serve_dir(dir)
            .await
            .map_err(|err| format!("--miniwob {}: cannot serve it: {err}", dir.display()))?;
        Ok(MiniWob {
            dir: dir.to_path_buf(),
            tasks,
            site,
        })
    }

    pub fn tasks(&self) -> &[MiniWobTask] {
        &self.tasks
    }

    pub fn get(&self, id: &str) -> Option<&MiniWobTask> {
        self.tasks.iter().find(|task| task.id == id)
    }

    /// The task's page on the pages' own listener.
    pub fn url(&self, task: &MiniWobTask) -> String {
        self.site.url(&format!("miniwob/{}.html", task.page()))
    }

    /// The pages' listener (`host:port`), for `--block-private-networks` to let through.
    pub fn address(&self) -> std::net::SocketAddr {
        self.site.addr
    }
}

fn page_path(dir: &Path, task: &MiniWobTask) -> PathBuf {
    dir.join("miniwob").join(format!("{}.html", task.page()))
}

/// The expression that starts an episode of `task` with `seed` on its loaded page.
pub fn start_expression(task: &MiniWobTask, seed: u64) -> String {
    let pictured = PICTURED.contains(&task.id.as_str());
    format!("({START_JS})({seed}, {START_WAIT_MS}, {pictured})")
}

/// The page clock for a task's documents (the archive replay's, seeded).
pub fn clock_script(seed: u64) -> String {
    crate::archive::replay::clock_script(CLOCK_START_MS, 0, Some(seed))
}

/// What the page said once it ended the episode.
#[derive(Debug, Clone, PartialEq)]
pub struct PageVerdict {
    /// -1..1, as the task scored what was done.
    pub raw_reward: f64,
    /// The raw reward discounted by the time taken (MiniWoB++'s, on the page's clock).
    pub reward: f64,
    /// Why, when the page says (`null` mostly).
    pub reason: Option<String>,
}

impl PageVerdict {
    /// The page's answer to `VERDICT`: `None` while it is not done. Numbers are held to -1..1
    /// and the reason to 200 characters, whatever the page set.
    pub fn read(value: &Value) -> Option<PageVerdict> {
        if value[0].as_bool() != Some(true) {
            return None;
        }
        let reward = |at: usize| {
            value[at]
                .as_f64()
                .filter(|r| r.is_finite())
                .unwrap_or(0.0)
                .clamp(-1.0, 1.0)
        };
        Some(PageVerdict {
            raw_reward: reward(1),
            reward: reward(2),
            reason: value[3]
                .as_str()
                .map(|reason| crate::browser::first_chars(reason, 200)),
        })
    }

    /// `metadata.miniwob` once the page ended the episode.
    pub fn shown(&self) -> Value {
        json!({"done": true, "raw_reward": self.raw_reward, "reward": self.reward,
               "reason": self.reason})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_list_is_browsergym_s_125_with_its_split() {
        let tasks = tasks();
        assert_eq!(tasks.len(), 125);
        let train = tasks.iter().filter(|t| t.split == Split::Train).count();
        assert_eq!((train, tasks.len() - train), (62, 63));
        assert!(tasks.iter().all(|t| t.id.starts_with("miniwob.")));
        let mut ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        ids.dedup();
        assert_eq!(ids.len(), 125, "no id twice");
        for pictured in PICTURED {
            assert!(tasks.iter().any(|t| t.id == pictured), "{pictured}");
        }
    }

    #[test]
    fn the_verdict_is_read_within_its_bounds() {
        assert_eq!(PageVerdict::read(&json!([false, 1, 1, null])), None);
        assert_eq!(PageVerdict::read(&json!(null)), None);
        assert_eq!(
            PageVerdict::read(&json!([true, 1, 0.93, null])),
            Some(PageVerdict {
                raw_reward: 1.0,
                reward: 0.93,
                reason: None
            })
        );
        let hostile = PageVerdict::read(&json!([true, 7, null, "x".repeat(5000)])).unwrap();
        assert_eq!((hostile.raw_reward, hostile.reward), (1.0, 0.0));
        assert_eq!(hostile.reason.unwrap().len(), 200);
    }
}
