//! A demonstration campaign: a task set, how many demonstrations each task wants, who is working on
//! what, and what was done, skipped and reviewed.
//!
//! Everything that must outlive the server is a line of `DIR/campaign.jsonl`, appended and fsynced
//! before it is acknowledged (`log.rs`); the state is that file replayed, so a restart loses
//! nothing that was acknowledged. Leases (a task handed to a person, an episode handed to a
//! reviewer) live in memory only: a lease is a person at work now, and a restart ends every
//! connection anyway; whoever comes back asks again.
//!
//! The rules, each in one place:
//! - `leases.rs`: a task counts the demonstrations nobody has rejected; it wants `demos_wanted` of
//!   them (the campaign's default or the task's own number); a person is handed the first task, in
//!   the file's order, that still has an open slot (wanted minus counted minus leased) and that
//!   they have neither demonstrated (rejected or not) nor skipped: no one does a task twice; a
//!   lease is a random id, handed to its person only, started by that person's session only (the
//!   first one to start it holds it); it ends when its demonstration is saved, when it is skipped,
//!   when that session ends, when no session took it up within `LEASE_START`, or when it has seen
//!   no step for `lease_idle_seconds`;
//! - `reviews.rs`: a reviewer is handed the oldest demonstration without a review that is not
//!   their own and not in someone else's hands, and reviews only what is in their hands, once: a
//!   demonstration reviewed as wrong stops counting, which opens its task's slot again;
//! - `people.rs`: who a person is: a name (compared without case, `Ana` is `ana`) that a token of
//!   their own stands for; a campaign has at most `MAX_PEOPLE`;
//! - `Campaign::at`: what has run out by a moment (idle leases, leases never started, review hands)
//!   is gone before anything else is asked of the campaign.

mod config;
mod leases;
mod log;
pub mod people;
mod progress;
mod reviews;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::tasks::TaskSet;
use crate::trajectory::{open_inside, read_jsonl, AppendLog, Problem};

pub use config::*;
pub use leases::{Demonstration, Lease, LEASE_START};
pub use log::{clean_text, LogEvent, LogLine, OwnMark, LOG_FILE, LOG_SCHEMA};
pub use people::{person_name, People, MAX_PEOPLE};
pub use progress::{PersonSummary, Progress, TaskProgress};
pub use reviews::Review;

/// Why a request of the campaign is refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CampaignError {
    #[error("no lease {0:?}: it ended (saved, skipped, its session closed, or idle too long)")]
    NoLease(String),
    #[error("the episode of task {0:?} has not ended: finish it first")]
    NotEnded(String),
    #[error("no demonstration {0:?} in this campaign")]
    NoDemonstration(String),
    #[error("{0} cannot review their own demonstration")]
    OwnDemonstration(String),
    #[error("a name is 1 to 64 letters, digits, '.', '_' or '-'")]
    BadName,
    #[error("lease {0:?} is someone else's")]
    NotYours(String),
    #[error("lease {0:?} is in another session's hands")]
    OtherSession(String),
    #[error("demonstration {0:?} is not in your hands: ask for it first (review/next)")]
    NotInHand(String),
    #[error("demonstration {0:?} has been reviewed already")]
    Reviewed(String),
    #[error("episode {0:?} is a demonstration already")]
    Duplicate(String),
    #[error("the campaign has {MAX_PEOPLE} people already")]
    TooManyPeople,
    #[error("the campaign's log could not be written: {0}")]
    Log(String),
}

/// The campaign's state: its tasks, its log replayed, and the leases of the moment.
pub struct Campaign {
    dir: PathBuf,
    pub config: CampaignConfig,
    pub tasks: TaskSet,
    log: AppendLog,
    demonstrations: Vec<Demonstration>,
    skips: BTreeSet<(String, String)>,
    reviews: BTreeMap<String, Review>,
    leases: BTreeMap<String, Lease>,
    /// Episode -> (reviewer, since): a demonstration in a reviewer's hands.
    reviewing: BTreeMap<String, (String, Instant)>,
}

/// The campaign as of a moment, with what had run out by then gone (`Campaign::at`). Every
/// question whose answer depends on a lease or a review hand being alive is asked here, so no
/// entry point can see a lease that has ended.
pub struct At<'a> {
    campaign: &'a mut Campaign,
    now: Instant,
}

impl Deref for At<'_> {
    type Target = Campaign;
    fn deref(&self) -> &Campaign {
        self.campaign
    }
}

impl DerefMut for At<'_> {
    fn deref_mut(&mut self) -> &mut Campaign {
        self.campaign
    }
}

impl Campaign {
    /// Open the campaign in `dir`: its settings, its task file, and its log replayed. A log line
    /// that cannot be read is reported, not fatal: the lines around it are a team's work.
    pub fn open(dir: &Path) -> Result<(Campaign, Vec<Problem>), String> {
        let config = CampaignConfig::load(dir)?;
        let tasks = TaskSet::load(&config.task_file(dir))?;
        config.check(dir, &tasks)?;
        let log_path = dir.join(LOG_FILE);
        let mut problems = Vec::new();
        let lines: Vec<(usize, LogLine)> = match open_inside(&log_path) {
            Ok(file) => read_jsonl(file, &log_path, LOG_SCHEMA, &mut problems)
                .map_err(|err| format!("cannot read {}: {err}", log_path.display()))?,
            Err(err) if err.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(err) => return Err(format!("cannot read {}: {err}", log_path.display())),
        };
        let log = AppendLog::open(&log_path)
            .map_err(|err| format!("cannot open {}: {err}", log_path.display()))?;
        let mut campaign = Campaign {
            dir: dir.to_path_buf(),
            config,
            tasks,
            log,
            demonstrations: Vec::new(),
            skips: BTreeSet::new(),
            reviews: BTreeMap::new(),
            leases: BTreeMap::new(),
            reviewing: BTreeMap::new(),
        };
        for (_, line) in lines {
            campaign.apply(line.event);
        }
        Ok((campaign, problems))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn recording_dir(&self) -> PathBuf {
        self.dir.join(RECORDING_DIR)
    }

    /// The campaign as of `now`: leases and review hands that had run out by then are let go
    /// first (`leases::expire`), whatever is asked next.
    pub fn at(&mut self, now: Instant) -> At<'_> {
        self.expire(now);
        At {
            campaign: self,
            now,
        }
    }

    pub fn demonstration(&self, episode_id: &str) -> Option<&Demonstration> {
        self.demonstrations
            .iter()
            .find(|d| d.episode_id == episode_id)
    }

    pub fn demonstrations(&self) -> &[Demonstration] {
        &self.demonstrations
    }

    /// The episodes a campaign's export keeps: the demonstrations a reviewer accepted, and with
    /// `unreviewed` also those nobody has reviewed yet (never a rejected one).
    pub fn accepted(&self, unreviewed: bool) -> BTreeSet<String> {
        self.demonstrations
            .iter()
            .filter(|d| match self.reviews.get(&d.episode_id) {
                Some(review) => review.accepted,
                None => unreviewed,
            })
            .map(|d| d.episode_id.clone())
            .collect()
    }

    pub fn review_of(&self, episode_id: &str) -> Option<&Review> {
        self.reviews.get(episode_id)
    }
}

impl At<'_> {
    /// `person` was removed from the campaign: what they held goes back at once.
    pub fn let_go_of(&mut self, person: &str) {
        self.leases.retain(|_, lease| lease.person != person);
        self.reviewing.retain(|_, (reviewer, _)| reviewer != person);
    }
}
