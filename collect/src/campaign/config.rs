//! A campaign's folder and its settings file, `campaign.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::tasks::TaskSet;

/// The campaign's settings file, in its directory.
pub const CONFIG_FILE: &str = "campaign.json";
/// Where the demonstrations are recorded (a trajectory recording), in its directory.
pub const RECORDING_DIR: &str = "recording";

fn default_demos_wanted() -> u32 {
    1
}

fn default_lease_idle_seconds() -> u64 {
    600
}

/// `lease_idle_seconds` allowed: long enough to read a page, at most a day.
const LEASE_IDLE_RANGE: std::ops::RangeInclusive<u64> = 10..=86_400;

/// `DIR/campaign.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignConfig {
    /// The task file, relative to the campaign's directory (or absolute).
    pub tasks: PathBuf,
    /// Demonstrations wanted of every task not named in `demos_wanted_per_task`.
    #[serde(default = "default_demos_wanted")]
    pub demos_wanted: u32,
    /// Demonstrations wanted of the tasks named here (0 leaves a task out).
    #[serde(default)]
    pub demos_wanted_per_task: BTreeMap<String, u32>,
    /// A lease that sees no step for this long goes back to the queue.
    #[serde(default = "default_lease_idle_seconds")]
    pub lease_idle_seconds: u64,
}

impl CampaignConfig {
    /// `DIR/campaign.json`.
    pub fn load(dir: &Path) -> Result<CampaignConfig, String> {
        let path = dir.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
        serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))
    }

    /// The task file, for a campaign in `dir`.
    pub fn task_file(&self, dir: &Path) -> PathBuf {
        dir.join(&self.tasks)
    }

    /// The settings are in range and name only tasks of `tasks`; the error names the file.
    pub(super) fn check(&self, dir: &Path, tasks: &TaskSet) -> Result<(), String> {
        let path = dir.join(CONFIG_FILE);
        if !LEASE_IDLE_RANGE.contains(&self.lease_idle_seconds) {
            return Err(format!(
                "{}: lease_idle_seconds is {}..={} (it is {})",
                path.display(),
                LEASE_IDLE_RANGE.start(),
                LEASE_IDLE_RANGE.end(),
                self.lease_idle_seconds
            ));
        }
        if self.demos_wanted == 0 {
            return Err(format!(
                "{}: demos_wanted is at least 1 (0 in demos_wanted_per_task leaves a task out)",
                path.display()
            ));
        }
        for id in self.demos_wanted_per_task.keys() {
            if tasks.get(id).is_none() {
                return Err(format!(
                    "{}: demos_wanted_per_task names {id:?}, which is not a task of {}",
                    path.display(),
                    self.tasks.display()
                ));
            }
        }
        Ok(())
    }

    /// How many demonstrations `task` wants.
    pub fn wanted(&self, task: &str) -> u32 {
        self.demos_wanted_per_task
            .get(task)
            .copied()
            .unwrap_or(self.demos_wanted)
    }
}
