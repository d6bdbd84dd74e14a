//! A demonstration campaign: a task set, how many demonstrations each task wants, who is working on
//! what, and what was done, skipped and reviewed.
//!
//! Everything that must outlive the server is a line of `DIR/campaign.jsonl`, appended and fsynced
//! before it is acknowledged (`AppendLog`); the state is that file replayed, so a restart loses
//! nothing that was acknowledged. Leases (a task handed to a person, an episode handed to a
//! reviewer) live in memory only: a lease is a person at work now, and a restart ends every
//! connection anyway; whoever comes back asks again.
//!
//! The rules, in one place:
//! - a task counts the demonstrations nobody has rejected; it wants `demos_wanted` of them (the
//!   campaign's default or the task's own number);
//! - a person is handed the first task, in the file's order, that still has an open slot (wanted
//!   minus counted minus leased) and that they have neither demonstrated (rejected or not) nor
//!   skipped: no one does a task twice;
//! - a lease is a random id, handed to its person only, and held by the first session that starts
//!   its task (no other session may use it); it ends when its demonstration is saved, when it is
//!   skipped, when that session ends, when no session took it up within `LEASE_START`, or when it
//!   has seen no step for `lease_idle_seconds`;
//! - a reviewer is handed the oldest demonstration without a review that is not their own and not
//!   in someone else's hands, and reviews only what is in their hands, once: a demonstration
//!   reviewed as wrong stops counting, which opens its task's slot again;
//! - names are compared without case (`Ana` is `ana`), and a campaign has at most `MAX_PEOPLE`.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::tasks::TaskSet;
use crate::trajectory::{now, open_inside, read_jsonl, AppendLog, Problem};

/// The campaign's settings file, in its directory.
pub const CONFIG_FILE: &str = "campaign.json";
/// The campaign's log, in its directory.
pub const LOG_FILE: &str = "campaign.jsonl";
/// Where the demonstrations are recorded (a trajectory recording), in its directory.
pub const RECORDING_DIR: &str = "recording";
/// The `schema` tag of every log line.
pub const LOG_SCHEMA: &str = "browserenv.campaign.v1";

fn default_demos_wanted() -> u32 {
    1
}

fn default_lease_idle_seconds() -> u64 {
    600
}

/// A lease no session has started its task under within this long goes back to the queue: asking
/// is not working on it.
pub const LEASE_START: Duration = Duration::from_secs(60);

/// The most people (names) a campaign knows: each costs a line of its progress.
pub const MAX_PEOPLE: usize = 500;

/// The most characters of a skip's reason or a review's note.
const TEXT_CHARS: usize = 500;

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
}

/// What a person says of their own demonstration after `finish`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OwnMark {
    /// The task was done as asked.
    Pass,
    /// It was not (the page did not allow it, a mistake that could not be undone).
    Fail,
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LogEvent {
    /// A demonstration saved: its episode in the recording, whose it is and how it went.
    Demonstration {
        time: String,
        episode_id: String,
        task: String,
        person: String,
        /// From the lease to the save.
        seconds: f64,
        /// The task's check (`None` for a task without one, or when the episode was not judged).
        check: Option<bool>,
        mark: OwnMark,
    },
    /// A task a person would not do, and why.
    Skip {
        time: String,
        task: String,
        person: String,
        reason: String,
    },
    /// A second person's review of a demonstration; the last one for an episode wins.
    Review {
        time: String,
        episode_id: String,
        reviewer: String,
        accepted: bool,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        note: String,
    },
}

/// A log line as written: the schema tag beside the event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    pub schema: String,
    #[serde(flatten)]
    pub event: LogEvent,
}

/// A task handed to a person.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lease {
    pub id: String,
    pub task: String,
    pub person: String,
    #[serde(skip)]
    since: Instant,
    #[serde(skip)]
    last_seen: Instant,
    /// The session that started its task: the only one that may use it.
    #[serde(skip)]
    session: Option<String>,
    /// The episode that ended under this lease and the task's check, waiting for the mark.
    #[serde(skip)]
    episode: Option<(String, Option<bool>)>,
}

/// A saved demonstration, as the state keeps it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Demonstration {
    pub episode_id: String,
    pub task: String,
    pub person: String,
    pub seconds: f64,
    pub check: Option<bool>,
    pub mark: OwnMark,
}

/// The last review of a demonstration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Review {
    pub reviewer: String,
    pub accepted: bool,
    pub note: String,
}

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

/// A person's name as the campaign keeps it: 1 to 64 letters, digits, `.`, `_` or `-` (it is
/// written into logs and shown in terminals), in lower case, so `Ana` and `ana` are one person.
pub fn person_name(name: &str) -> Result<String, CampaignError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    match valid {
        true => Ok(name.to_ascii_lowercase()),
        false => Err(CampaignError::BadName),
    }
}

/// A person's free text (a skip's reason, a review's note), kept and shown: at most
/// `TEXT_CHARS`, without control characters or the ones that reorder what follows them.
pub fn clean_text(text: &str) -> String {
    text.chars()
        .filter(|c| {
            !c.is_control() && !matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .take(TEXT_CHARS)
        .collect()
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

impl Campaign {
    /// Open the campaign in `dir`: its settings, its task file, and its log replayed. A log line
    /// that cannot be read is reported, not fatal: the lines around it are a team's work.
    pub fn open(dir: &Path) -> Result<(Campaign, Vec<Problem>), String> {
        let config_path = dir.join(CONFIG_FILE);
        let config = CampaignConfig::load(dir)?;
        if !LEASE_IDLE_RANGE.contains(&config.lease_idle_seconds) {
            return Err(format!(
                "{}: lease_idle_seconds is {}..={} (it is {})",
                config_path.display(),
                LEASE_IDLE_RANGE.start(),
                LEASE_IDLE_RANGE.end(),
                config.lease_idle_seconds
            ));
        }
        if config.demos_wanted == 0 {
            return Err(format!(
                "{}: demos_wanted is at least 1 (0 in demos_wanted_per_task leaves a task out)",
                config_path.display()
            ));
        }
        let tasks = TaskSet::load(&config.task_file(dir))?;
        for id in config.demos_wanted_per_task.keys() {
            if tasks.get(id).is_none() {
                return Err(format!(
                    "{}: demos_wanted_per_task names {id:?}, which is not a task of {}",
                    config_path.display(),
                    config.tasks.display()
                ));
            }
        }
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

    pub fn recording_dir(&self) -> PathBuf {
        self.dir.join(RECORDING_DIR)
    }

    fn apply(&mut self, event: LogEvent) {
        match event {
            LogEvent::Demonstration {
                episode_id,
                task,
                person,
                seconds,
                check,
                mark,
                ..
            } => {
                // One demonstration per episode: a second line for one (written by a server
                // before this rule) is not counted twice.
                if self.demonstration(&episode_id).is_none() {
                    self.demonstrations.push(Demonstration {
                        episode_id,
                        task,
                        person,
                        seconds,
                        check,
                        mark,
                    });
                }
            }
            LogEvent::Skip { task, person, .. } => {
                self.skips.insert((person, task));
            }
            LogEvent::Review {
                episode_id,
                reviewer,
                accepted,
                note,
                ..
            } => {
                self.reviewing.remove(&episode_id);
                self.reviews.insert(
                    episode_id,
                    Review {
                        reviewer,
                        accepted,
                        note,
                    },
                );
            }
        }
    }

    /// Write `event` to the log, then to the state: acknowledged means on disk.
    fn record(&mut self, event: LogEvent) -> Result<(), CampaignError> {
        let line = LogLine {
            schema: LOG_SCHEMA.to_string(),
            event,
        };
        self.log
            .append(&line)
            .map_err(|err| CampaignError::Log(err.to_string()))?;
        self.apply(line.event);
        Ok(())
    }

    /// How many demonstrations `task` wants.
    pub fn wanted(&self, task: &str) -> u32 {
        self.config
            .demos_wanted_per_task
            .get(task)
            .copied()
            .unwrap_or(self.config.demos_wanted)
    }

    fn rejected(&self, episode_id: &str) -> bool {
        self.reviews.get(episode_id).is_some_and(|r| !r.accepted)
    }

    /// The demonstrations of `task` that count: every one nobody rejected.
    pub fn counted(&self, task: &str) -> usize {
        self.demonstrations
            .iter()
            .filter(|d| d.task == task && !self.rejected(&d.episode_id))
            .count()
    }

    fn leased(&self, task: &str) -> usize {
        self.leases.values().filter(|l| l.task == task).count()
    }

    /// Leases and review hands that saw nothing for `lease_idle_seconds`, and leases no session
    /// took up within `LEASE_START`, go back to the queue.
    fn expire(&mut self, now: Instant) {
        let idle = Duration::from_secs(self.config.lease_idle_seconds);
        self.leases.retain(|_, lease| {
            let unused = lease.session.is_none()
                && now.saturating_duration_since(lease.since) >= LEASE_START;
            !unused && now.saturating_duration_since(lease.last_seen) < idle
        });
        self.reviewing
            .retain(|_, (_, since)| now.saturating_duration_since(*since) < idle);
    }

    fn done_by(&self, person: &str, task: &str) -> bool {
        self.demonstrations
            .iter()
            .any(|d| d.person == person && d.task == task)
            || self.skips.contains(&(person.to_string(), task.to_string()))
    }

    /// Everyone the campaign knows: who demonstrated, skipped, reviewed or holds a lease.
    fn people(&self) -> BTreeSet<&str> {
        let demonstrated = self.demonstrations.iter().map(|d| d.person.as_str());
        let skipped = self.skips.iter().map(|(person, _)| person.as_str());
        let reviewed = self.reviews.values().map(|r| r.reviewer.as_str());
        let leasing = self.leases.values().map(|l| l.person.as_str());
        let reviewing = self.reviewing.values().map(|(r, _)| r.as_str());
        demonstrated
            .chain(skipped)
            .chain(reviewed)
            .chain(leasing)
            .chain(reviewing)
            .collect()
    }

    /// `name` as a person of this campaign: valid, and known or room for one more.
    fn person(&self, name: &str) -> Result<String, CampaignError> {
        let person = person_name(name)?;
        let people = self.people();
        if !people.contains(person.as_str()) && people.len() >= MAX_PEOPLE {
            return Err(CampaignError::TooManyPeople);
        }
        Ok(person)
    }

    /// The task `person` should do next, leased to them; the lease they already hold if any;
    /// `None` when nothing is left for them.
    pub fn next_task(&mut self, name: &str, now: Instant) -> Result<Option<Lease>, CampaignError> {
        self.expire(now);
        let person = self.person(name)?;
        if let Some(held) = self.leases.values().find(|l| l.person == person) {
            return Ok(Some(held.clone()));
        }
        let open = self.tasks.tasks.iter().find(|task| {
            let taken = self.counted(&task.id) + self.leased(&task.id);
            taken < self.wanted(&task.id) as usize && !self.done_by(&person, &task.id)
        });
        let Some(task) = open.map(|t| t.id.clone()) else {
            return Ok(None);
        };
        let lease = Lease {
            // Random: a lease is its person's to use, and ids of a server before a restart
            // must not name the leases of the one after it.
            id: uuid::Uuid::new_v4().to_string(),
            task,
            person,
            since: now,
            last_seen: now,
            session: None,
            episode: None,
        };
        self.leases.insert(lease.id.clone(), lease.clone());
        Ok(Some(lease))
    }

    pub fn lease(&self, id: &str) -> Option<&Lease> {
        self.leases.get(id)
    }

    /// The lease `id` held by `session`, as far as `session` may use it.
    fn held(&mut self, id: &str, session: &str) -> Result<&mut Lease, CampaignError> {
        let lease = self
            .leases
            .get_mut(id)
            .ok_or_else(|| CampaignError::NoLease(id.to_string()))?;
        match &lease.session {
            Some(holder) if holder != session => Err(CampaignError::OtherSession(id.to_string())),
            _ => Ok(lease),
        }
    }

    /// `session` starts the lease's task (again): the lease is that session's from now on, and
    /// an episode it ended before (the person starts over) is no longer the one to save.
    pub fn start(&mut self, id: &str, session: &str, now: Instant) -> Result<Lease, CampaignError> {
        self.expire(now);
        let lease = self.held(id, session)?;
        lease.session = Some(session.to_string());
        lease.last_seen = now;
        lease.episode = None;
        Ok(lease.clone())
    }

    /// A step of the lease's session: the person is still at work.
    pub fn touch(&mut self, id: &str, session: &str, now: Instant) -> Result<(), CampaignError> {
        self.expire(now);
        self.held(id, session)?.last_seen = now;
        Ok(())
    }

    /// The lease's session ended without a saved demonstration: the slot is open again. Only
    /// the session holding the lease lets it go.
    pub fn release(&mut self, id: &str, session: &str) {
        if self
            .leases
            .get(id)
            .is_some_and(|l| l.session.as_deref() == Some(session))
        {
            self.leases.remove(id);
        }
    }

    /// The lease `id` of `name`, or why it is not theirs to end.
    fn own_lease(&self, id: &str, name: &str) -> Result<Lease, CampaignError> {
        let lease = self
            .leases
            .get(id)
            .ok_or_else(|| CampaignError::NoLease(id.to_string()))?;
        if lease.person != person_name(name)? {
            return Err(CampaignError::NotYours(id.to_string()));
        }
        Ok(lease.clone())
    }

    /// `name` will not do their leased task, because of `reason`.
    pub fn skip(&mut self, id: &str, name: &str, reason: &str) -> Result<String, CampaignError> {
        let lease = self.own_lease(id, name)?;
        self.record(LogEvent::Skip {
            time: now(),
            task: lease.task.clone(),
            person: lease.person,
            reason: clean_text(reason),
        })?;
        self.leases.remove(id);
        Ok(lease.task)
    }

    /// The lease's episode ended (`finish`, the step limit, a page lost) as `episode_id` in
    /// `session`, its task's check passed or not (`None`: no check); the person's mark saves it
    /// (`complete`).
    pub fn episode_ended(
        &mut self,
        id: &str,
        session: &str,
        episode_id: &str,
        check: Option<bool>,
    ) -> Result<(), CampaignError> {
        self.held(id, session)?.episode = Some((episode_id.to_string(), check));
        Ok(())
    }

    /// Save the ended episode of `name`'s lease as a demonstration with their own `mark`, and
    /// end the lease.
    pub fn complete(
        &mut self,
        id: &str,
        name: &str,
        mark: OwnMark,
        now_at: Instant,
    ) -> Result<Demonstration, CampaignError> {
        self.expire(now_at);
        let lease = self.own_lease(id, name)?;
        let Some((episode_id, check)) = lease.episode.clone() else {
            return Err(CampaignError::NotEnded(lease.task));
        };
        if self.demonstration(&episode_id).is_some() {
            return Err(CampaignError::Duplicate(episode_id));
        }
        let seconds = now_at.saturating_duration_since(lease.since).as_secs_f64();
        self.record(LogEvent::Demonstration {
            time: now(),
            episode_id,
            task: lease.task.clone(),
            person: lease.person.clone(),
            seconds: (seconds * 10.0).round() / 10.0,
            check,
            mark,
        })?;
        self.leases.remove(id);
        Ok(self.demonstrations.last().cloned().expect("just recorded"))
    }

    /// The oldest demonstration `name` may review, now in their hands; `None` when none is
    /// waiting for them.
    pub fn next_review(
        &mut self,
        name: &str,
        now: Instant,
    ) -> Result<Option<Demonstration>, CampaignError> {
        self.expire(now);
        let reviewer = self.person(name)?;
        let held = self
            .reviewing
            .iter()
            .find(|(_, (who, _))| *who == reviewer)
            .map(|(episode, _)| episode.clone());
        let next = self.demonstrations.iter().find(|d| match &held {
            Some(episode) => &d.episode_id == episode,
            None => {
                d.person != reviewer
                    && !self.reviews.contains_key(&d.episode_id)
                    && !self.reviewing.contains_key(&d.episode_id)
            }
        });
        let Some(next) = next.cloned() else {
            return Ok(None);
        };
        self.reviewing
            .insert(next.episode_id.clone(), (reviewer, now));
        Ok(Some(next))
    }

    /// A demonstration `name` asked for goes back (it could not be shown to them).
    pub fn put_back(&mut self, episode_id: &str, name: &str) {
        if let Ok(reviewer) = person_name(name) {
            if self
                .reviewing
                .get(episode_id)
                .is_some_and(|(who, _)| *who == reviewer)
            {
                self.reviewing.remove(episode_id);
            }
        }
    }

    /// Whether `name` may review `episode_id` now: it is a demonstration, not theirs, in their
    /// hands, and not reviewed yet.
    pub fn may_review(&self, episode_id: &str, name: &str) -> Result<String, CampaignError> {
        let reviewer = person_name(name)?;
        let demonstration = self
            .demonstration(episode_id)
            .ok_or_else(|| CampaignError::NoDemonstration(episode_id.to_string()))?;
        if demonstration.person == reviewer {
            return Err(CampaignError::OwnDemonstration(reviewer));
        }
        if self.reviews.contains_key(episode_id) {
            return Err(CampaignError::Reviewed(episode_id.to_string()));
        }
        if self
            .reviewing
            .get(episode_id)
            .is_none_or(|(who, _)| *who != reviewer)
        {
            return Err(CampaignError::NotInHand(episode_id.to_string()));
        }
        Ok(reviewer)
    }

    /// `name`'s verdict on a demonstration in their hands; a rejected one stops counting for
    /// its task. A demonstration is reviewed once.
    pub fn review(
        &mut self,
        episode_id: &str,
        name: &str,
        accepted: bool,
        note: &str,
    ) -> Result<(), CampaignError> {
        let reviewer = self.may_review(episode_id, name)?;
        self.record(LogEvent::Review {
            time: now(),
            episode_id: episode_id.to_string(),
            reviewer,
            accepted,
            note: clean_text(note),
        })
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

    /// Where the campaign stands, for `GET /campaign` and the UI's view.
    pub fn progress(&mut self, now: Instant) -> Progress {
        self.expire(now);
        let tasks: Vec<TaskProgress> = self
            .tasks
            .tasks
            .iter()
            .map(|task| TaskProgress {
                id: task.id.clone(),
                wanted: self.wanted(&task.id),
                done: self.counted(&task.id),
                leased: self.leased(&task.id),
                rejected: self
                    .demonstrations
                    .iter()
                    .filter(|d| d.task == task.id && self.rejected(&d.episode_id))
                    .count(),
                // A person skips a task once: they are not handed it again.
                skipped: self.skips.iter().filter(|(_, t)| *t == task.id).count(),
            })
            .collect();
        let mut people: BTreeMap<String, PersonProgress> = BTreeMap::new();
        for d in &self.demonstrations {
            let person = people.entry(d.person.clone()).or_default();
            person.demonstrations += 1;
            person.seconds.push(d.seconds);
            person.checked += usize::from(d.check.is_some());
            person.passed += usize::from(d.check == Some(true));
            person.rejected += usize::from(self.rejected(&d.episode_id));
        }
        for (person, _) in &self.skips {
            people.entry(person.clone()).or_default().skips += 1;
        }
        for review in self.reviews.values() {
            people.entry(review.reviewer.clone()).or_default().reviews += 1;
        }
        for lease in self.leases.values() {
            people.entry(lease.person.clone()).or_default().working_on = Some(lease.task.clone());
        }
        let people = people
            .into_iter()
            .map(|(name, p)| p.summary(name))
            .collect();
        let all: Vec<f64> = self.demonstrations.iter().map(|d| d.seconds).collect();
        let checked: Vec<bool> = self.demonstrations.iter().filter_map(|d| d.check).collect();
        Progress {
            // A task that wants none is left out of the campaign, not complete.
            tasks_total: tasks.iter().filter(|t| t.wanted > 0).count(),
            tasks_complete: tasks
                .iter()
                .filter(|t| t.wanted > 0 && t.done >= t.wanted as usize)
                .count(),
            wanted: tasks.iter().map(|t| t.wanted as usize).sum(),
            done: tasks.iter().map(|t| t.done).sum(),
            reviewed: self.reviews.len(),
            accepted: self.reviews.values().filter(|r| r.accepted).count(),
            median_seconds: median(&all),
            pass_rate: rate(checked.iter().filter(|p| **p).count(), checked.len()),
            tasks,
            people,
        }
    }
}

/// The median of `values`, `None` for none.
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

fn rate(passed: usize, of: usize) -> Option<f64> {
    (of > 0).then(|| passed as f64 / of as f64)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskProgress {
    pub id: String,
    pub wanted: u32,
    /// Demonstrations that count (not rejected).
    pub done: usize,
    /// In someone's hands now.
    pub leased: usize,
    pub rejected: usize,
    pub skipped: usize,
}

#[derive(Debug, Default)]
struct PersonProgress {
    demonstrations: usize,
    seconds: Vec<f64>,
    checked: usize,
    passed: usize,
    rejected: usize,
    skips: usize,
    reviews: usize,
    working_on: Option<String>,
}

impl PersonProgress {
    fn summary(self, name: String) -> PersonSummary {
        PersonSummary {
            name,
            demonstrations: self.demonstrations,
            median_seconds: median(&self.seconds),
            pass_rate: rate(self.passed, self.checked),
            rejected: self.rejected,
            skips: self.skips,
            reviews: self.reviews,
            working_on: self.working_on,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonSummary {
    pub name: String,
    pub demonstrations: usize,
    pub median_seconds: Option<f64>,
    /// Of their demonstrations whose task has a check, the share that passed it.
    pub pass_rate: Option<f64>,
    pub rejected: usize,
    pub skips: usize,
    pub reviews: usize,
    /// The task leased to them now.
    pub working_on: Option<String>,
}

/// `GET /campaign`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub tasks_total: usize,
    /// Tasks with every wanted demonstration.
    pub tasks_complete: usize,
    pub wanted: usize,
    pub done: usize,
    pub reviewed: usize,
    pub accepted: usize,
    pub median_seconds: Option<f64>,
    pub pass_rate: Option<f64>,
    pub tasks: Vec<TaskProgress>,
    pub people: Vec<PersonSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASKS: &str = concat!(
        r#"{"id":"a","category":"information","instruction":"A","start_url":"/","check":{"answer":{"match":"normalized","value":"x"}}}"#,
        "\n",
        r#"{"id":"b","category":"information","instruction":"B","start_url":"/","check":{"answer":{"match":"normalized","value":"y"}}}"#,
        "\n"
    );

    fn campaign(dir: &Path, config: &str) -> Campaign {
        std::fs::write(dir.join("tasks.jsonl"), TASKS).unwrap();
        std::fs::write(dir.join(CONFIG_FILE), config).unwrap();
        let (campaign, problems) = Campaign::open(dir).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        campaign
    }

    /// A fresh folder of this test's own (removed when dropped).
    struct Scratch(PathBuf);

    impl Scratch {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn temp() -> Scratch {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "browserenv-campaign-test-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// `lease`'s task done in session `s` as episode `episode` and saved by its person.
    fn demonstrate(
        c: &mut Campaign,
        lease: &Lease,
        episode: &str,
        check: Option<bool>,
        t: Instant,
    ) {
        let session = format!("s-{}", lease.person);
        c.start(&lease.id, &session, t).unwrap();
        c.episode_ended(&lease.id, &session, episode, check)
            .unwrap();
        c.complete(&lease.id, &lease.person, OwnMark::Pass, t)
            .unwrap();
    }

    #[test]
    fn every_task_gets_its_wanted_demonstrations_and_no_one_does_one_twice() {
        let dir = temp();
        let mut c = campaign(dir.path(), r#"{"tasks":"tasks.jsonl","demos_wanted":2}"#);
        let t = Instant::now();
        let ana = c.next_task("ana", t).unwrap().unwrap();
        let bo = c.next_task("Bo", t).unwrap().unwrap();
        let cy = c.next_task("cy", t).unwrap().unwrap();
        assert_eq!(
            (ana.task.as_str(), bo.task.as_str(), cy.task.as_str()),
            ("a", "a", "b")
        );
        assert_eq!(bo.person, "bo", "names are kept in lower case");
        assert_ne!(ana.id, bo.id);
        // Asking again hands back the lease one holds.
        assert_eq!(c.next_task("ana", t).unwrap().unwrap().id, ana.id);
        demonstrate(&mut c, &ana, "e1", Some(true), t);
        demonstrate(&mut c, &bo, "e2", Some(false), t);
        // Task a is full and ana did it: b (one slot left beside cy's lease).
        let ana2 = c.next_task("ANA", t).unwrap().unwrap();
        assert_eq!(ana2.task, "b");
        // Nothing is left for bo: a is full, b's two slots are leased.
        assert_eq!(c.next_task("bo", t).unwrap(), None);
        demonstrate(&mut c, &ana2, "e3", None, t);
        demonstrate(&mut c, &cy, "e4", None, t);
        let progress = c.progress(t);
        assert_eq!(
            (progress.done, progress.wanted, progress.tasks_complete),
            (4, 4, 2)
        );
        assert_eq!(progress.pass_rate, Some(0.5));
        assert_eq!(c.next_task("cy", t).unwrap(), None);
    }

    #[test]
    fn a_lease_is_its_person_s_and_its_session_s() {
        let dir = temp();
        let mut c = campaign(dir.path(), r#"{"tasks":"tasks.jsonl","demos_wanted":2}"#);
        let t = Instant::now();
        let ana = c.next_task("ana", t).unwrap().unwrap();
        c.start(&ana.id, "s1", t).unwrap();
        // Another session may not take it up, step it, end its episode or let it go.
        assert_eq!(
            c.start(&ana.id, "s2", t),
            Err(CampaignError::OtherSession(ana.id.clone()))
        );
        assert!(c.touch(&ana.id, "s2", t).is_err());
        assert!(c.episode_ended(&ana.id, "s2", "x", None).is_err());
        c.release(&ana.id, "s2");
        assert!(c.lease(&ana.id).is_some());
        // Only its person saves or skips it.
        c.episode_ended(&ana.id, "s1", "e1", None).unwrap();
        assert_eq!(
            c.complete(&ana.id, "bo", OwnMark::Pass, t),
            Err(CampaignError::NotYours(ana.id.clone()))
        );
        assert_eq!(
            c.skip(&ana.id, "bo", "no"),
            Err(CampaignError::NotYours(ana.id.clone()))
        );
        // Starting over forgets the ended episode: the new one is the one to save.
        c.start(&ana.id, "s1", t).unwrap();
        assert_eq!(
            c.complete(&ana.id, "ana", OwnMark::Pass, t),
            Err(CampaignError::NotEnded("a".into()))
        );
        c.episode_ended(&ana.id, "s1", "e2", Some(true)).unwrap();
        assert_eq!(
            c.complete(&ana.id, "Ana", OwnMark::Pass, t)
                .unwrap()
                .episode_id,
            "e2"
        );
        // An episode is one demonstration, whoever tries to save it again.
        let bo = c.next_task("bo", t).unwrap().unwrap();
        c.start(&bo.id, "s3", t).unwrap();
        c.episode_ended(&bo.id, "s3", "e2", None).unwrap();
        assert_eq!(
            c.complete(&bo.id, "bo", OwnMark::Pass, t),
            Err(CampaignError::Duplicate("e2".into()))
        );
    }

    #[test]
    fn a_lease_ends_when_its_person_leaves_idles_or_skips() {
        let dir = temp();
        let mut c = campaign(
            dir.path(),
            r#"{"tasks":"tasks.jsonl","demos_wanted_per_task":{"b":0},"lease_idle_seconds":100}"#,
        );
        let t = Instant::now();
        let ana = c.next_task("ana", t).unwrap().unwrap();
        assert_eq!(
            c.next_task("bo", t).unwrap(),
            None,
            "a's only slot is leased, b wants none"
        );
        c.start(&ana.id, "s-ana", t).unwrap();
        c.release(&ana.id, "s-ana");
        let bo = c.next_task("bo", t).unwrap().unwrap();
        assert_eq!(bo.task, "a");
        c.start(&bo.id, "s-bo", t).unwrap();
        c.touch(&bo.id, "s-bo", t + Duration::from_secs(80))
            .unwrap();
        assert_eq!(
            c.next_task("cy", t + Duration::from_secs(150)).unwrap(),
            None
        );
        let cy = c
            .next_task("cy", t + Duration::from_secs(181))
            .unwrap()
            .unwrap();
        assert_eq!(cy.task, "a", "bo's lease idled out");
        assert_eq!(
            c.episode_ended(&bo.id, "s-bo", "late", None),
            Err(CampaignError::NoLease(bo.id.clone()))
        );
        // A lease nobody starts goes back after LEASE_START.
        let later = t + Duration::from_secs(181) + LEASE_START;
        let dee = c.next_task("dee", later).unwrap().unwrap();
        assert_eq!(dee.task, "a", "cy asked but never started");
        c.skip(&dee.id, "dee", "the page is down\u{1b}[2J\u{202e}")
            .unwrap();
        assert_eq!(c.next_task("dee", later).unwrap(), None, "dee skipped a");
        let progress = c.progress(later);
        assert_eq!(progress.tasks[0].skipped, 1);
        assert_eq!(
            (progress.tasks_total, progress.tasks_complete),
            (1, 0),
            "b is left out"
        );
        let log = std::fs::read_to_string(dir.path().join(LOG_FILE)).unwrap();
        assert!(log.contains("the page is down[2J\""), "{log}");
    }

    #[test]
    fn a_rejected_demonstration_puts_its_task_back_and_a_restart_loses_nothing() {
        let dir = temp();
        let config = r#"{"tasks":"tasks.jsonl","demos_wanted":1}"#;
        let t = Instant::now();
        let first_lease = {
            let mut c = campaign(dir.path(), config);
            let ana = c.next_task("ana", t).unwrap().unwrap();
            demonstrate(&mut c, &ana, "e1", Some(true), t);
            let skipped = c.next_task("ana", t).unwrap().unwrap();
            c.skip(&skipped.id, "ana", "no time").unwrap();
            ana.id
        };
        let (mut c, problems) = Campaign::open(dir.path()).unwrap();
        assert!(problems.is_empty());
        assert_eq!(c.counted("a"), 1);
        assert_eq!(c.next_task("ana", t).unwrap(), None, "a done, b skipped");
        let cy = c.next_task("cy", t).unwrap().unwrap();
        assert_ne!(cy.id, first_lease, "a restart hands out no old lease id");
        // Nobody reviews their own, nor what is not in their hands; bo gets e1, and a second ask
        // returns the same.
        assert_eq!(c.next_review("ana", t).unwrap(), None);
        assert_eq!(
            c.review("e1", "bo", true, ""),
            Err(CampaignError::NotInHand("e1".into()))
        );
        let e1 = c.next_review("bo", t).unwrap().unwrap();
        assert_eq!(c.next_review("bo", t).unwrap().unwrap(), e1);
        assert_eq!(
            c.next_review("dee", t).unwrap(),
            None,
            "e1 is in bo's hands"
        );
        assert_eq!(
            c.review("e1", "Ana", true, ""),
            Err(CampaignError::OwnDemonstration("ana".into()))
        );
        c.review(&e1.episode_id, "bo", false, "clicked the wrong item")
            .unwrap();
        assert_eq!(
            c.review("e1", "bo", true, ""),
            Err(CampaignError::Reviewed("e1".into())),
            "a verdict is not flipped"
        );
        drop(c);
        let (mut c, _) = Campaign::open(dir.path()).unwrap();
        assert_eq!(c.counted("a"), 0);
        assert_eq!(
            c.next_task("ana", t).unwrap(),
            None,
            "ana did a once already"
        );
        assert_eq!(c.next_task("dee", t).unwrap().unwrap().task, "a");
        let progress = c.progress(t);
        assert_eq!(
            (
                progress.tasks[0].rejected,
                progress.reviewed,
                progress.accepted
            ),
            (1, 1, 0)
        );
    }

    #[test]
    fn names_and_settings_are_checked() {
        let dir = temp();
        let mut c = campaign(dir.path(), r#"{"tasks":"tasks.jsonl","demos_wanted":1000}"#);
        for bad in ["", "a b", "\u{1b}[2J", &"x".repeat(65)] {
            assert_eq!(
                c.next_task(bad, Instant::now()),
                Err(CampaignError::BadName)
            );
        }
        let t = Instant::now();
        for n in 0..MAX_PEOPLE {
            c.next_task(&format!("p{n}"), t).unwrap().unwrap();
        }
        assert_eq!(
            c.next_task("one-more", t),
            Err(CampaignError::TooManyPeople)
        );
        for (config, says) in [
            (
                r#"{"tasks":"tasks.jsonl","demos_wanted_per_task":{"zz":1}}"#,
                "\"zz\", which is not a task",
            ),
            (r#"{"tasks":"tasks.jsonl","wanted":1}"#, "unknown field"),
            (
                r#"{"tasks":"tasks.jsonl","lease_idle_seconds":0}"#,
                "lease_idle_seconds is 10..=86400",
            ),
            (
                r#"{"tasks":"tasks.jsonl","demos_wanted":0}"#,
                "demos_wanted is at least 1",
            ),
        ] {
            std::fs::write(dir.path().join(CONFIG_FILE), config).unwrap();
            let err = Campaign::open(dir.path()).err().unwrap();
            assert!(err.contains(says), "{err}");
        }
    }
}
