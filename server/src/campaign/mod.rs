//! `--campaign DIR` (`BROWSER_CAMPAIGN`): the server hands a team's people their next task,
//! records what they demonstrate into the campaign's folder, and hands a second person each
//! demonstration to review. The rules (who gets what, when a lease ends, what counts) are
//! `browserenv_collect::campaign`'s; this module is their place in the server: the `Hub` (the campaign,
//! its people and its recorder), what a session tells it (a lease's episode began, stepped, ended,
//! or its session closed), and the codes its refusals answer with (`code_of`); the routes are
//! `server/src/routes/campaign.rs`.
//!
//! Every campaign action is a person's, and the person is the one their token names
//! (`caller.rs`): a lease is handed to them, started by their session, saved or skipped by them,
//! and what they review is not their own. A person's session is an ordinary session (`/ws`)
//! opened with their token, whose `reset` names the lease (`{"campaign_lease": "<lease id>"}`):
//! the lease's task starts, its steps are recorded with `actor: "human"` and the person's name
//! into `DIR/recording`, and each step keeps the lease.

pub mod review;
mod roster;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use browserenv_collect::campaign::{At, Campaign, CampaignError, Demonstration, OwnMark};
use browserenv_collect::trajectory::{
    read, Actor, RecordEvent, Recorder, RecorderHandle, TrajectoryWriter,
};

use crate::api_error::{ApiError, Code};
use crate::operations::caller::Caller;

pub use roster::Roster;

/// The code of a refusal of the campaign's rules.
pub fn code_of(err: &CampaignError) -> Code {
    match err {
        CampaignError::NoLease(_) => Code::LeaseEnded,
        CampaignError::NotEnded(_) => Code::EpisodeNotEnded,
        CampaignError::NoDemonstration(_) => Code::DemonstrationNotFound,
        CampaignError::OwnDemonstration(_) => Code::OwnDemonstration,
        CampaignError::BadName => Code::InvalidName,
        CampaignError::NotYours(_) => Code::NotYourLease,
        // Met by a session's reset and steps (the WebSocket says it in words), never by a
        // route: no route works under a session.
        CampaignError::OtherSession(_) => Code::NotYourLease,
        CampaignError::NotInHand(_) => Code::NotInYourHands,
        CampaignError::Reviewed(_) => Code::ReviewedAlready,
        CampaignError::Duplicate(_) => Code::DuplicateEpisode,
        CampaignError::TooManyPeople => Code::TooManyPeople,
        CampaignError::Log(_) => Code::CampaignLogFailed,
    }
}

/// A refusal of the campaign's rules as an HTTP answer.
pub fn refused(err: CampaignError) -> ApiError {
    code_of(&err).error(err.to_string())
}

/// The reset keyword that makes a session a person's work on a leased task.
pub const LEASE_KWARG: &str = "campaign_lease";

/// How long a save (`complete`) waits for the recorder to confirm that the episode is on disk.
const CONFIRM_WAIT: Duration = Duration::from_secs(10);

/// A running campaign: its state behind a lock (every operation is short: a lookup, or a line
/// appended), its people, and the inbox of the recorder writing its demonstrations.
pub struct Hub {
    campaign: Mutex<Campaign>,
    roster: Arc<Roster>,
    recorder: std::sync::mpsc::Sender<RecordEvent>,
    /// Every episode id the campaign's recording holds or a session was given, in one spelling
    /// (`episode_id`): a campaign episode's id is new, so no two episodes (and no two people)
    /// ever share one.
    episode_ids: Mutex<BTreeSet<String>>,
    /// One review written at a time: its lines go to the recording's review log outside the
    /// campaign's lock, and the verdict after them.
    pub(crate) reviews: tokio::sync::Mutex<()>,
    /// What the tasks' relative start URLs are resolved against, for the tasks handed out.
    pub(crate) base_url: Option<url::Url>,
    confirm_wait: Duration,
}

/// What a session remembers of the lease it works under.
#[derive(Debug, Clone)]
pub struct Seat {
    pub lease: String,
    pub person: String,
    pub task: String,
}

/// A seat, and the reset's keywords that start its task.
pub type Seated = (Seat, Map<String, Value>);

/// A demonstration saved, and whether the recorder confirmed its episode on disk in time.
pub struct Saved {
    pub demonstration: Demonstration,
    pub recorded: bool,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding it leaves a state whose log is still the truth: go on with it.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A campaign episode's id in its one spelling: a UUID lowercase and hyphenated, so that
/// `{…}`, `urn:uuid:…`, unhyphenated and upper-case spellings of one id are that id.
fn canonical_id(id: &str) -> Option<String> {
    uuid::Uuid::parse_str(id)
        .ok()
        .map(|uuid| uuid.hyphenated().to_string())
}

/// The id of a campaign episode a reset asks for: the client's, if it is a UUID (kept in its
/// one spelling), else a new one when it names none.
fn episode_id(asked: Option<&Value>) -> Result<String, String> {
    match asked {
        None | Some(Value::Null) => Ok(uuid::Uuid::new_v4().to_string()),
        Some(Value::String(asked)) => canonical_id(asked).ok_or_else(|| {
            format!(
                "a campaign episode's episode_id is a new UUID (or none: the server makes one), \
                 not {:?}",
                asked.chars().take(64).collect::<String>()
            )
        }),
        Some(_) => Err("a campaign episode's episode_id is a new UUID, as a string".into()),
    }
}

impl Hub {
    /// Open the campaign in `dir` (its settings, tasks, log and people) and start the recorder
    /// of its demonstrations in `DIR/recording`.
    pub fn open(dir: &Path, base_url: Option<url::Url>) -> anyhow::Result<(Hub, RecorderHandle)> {
        use anyhow::Context;
        let (campaign, problems) = Campaign::open(dir).map_err(anyhow::Error::msg)?;
        for problem in &problems {
            tracing::warn!("campaign log: {problem} (the line is skipped)");
        }
        let roster = Roster::open(dir).map_err(anyhow::Error::msg)?;
        let recording = campaign.recording_dir();
        let (writer, recovery) = TrajectoryWriter::open(&recording)
            .with_context(|| format!("cannot record into {}", recording.display()))?;
        if !recovery.incomplete.is_empty() {
            tracing::warn!(
                "{}: marked {} episode(s) left open by a stopped server as incomplete",
                recording.display(),
                recovery.incomplete.len()
            );
        }
        let recorder = Recorder::new(writer, Actor::Human);
        let handle = RecorderHandle::spawn(recorder, |err| {
            tracing::error!("recording the campaign failed: {err}")
        })?;
        tracing::info!(
            "campaign {}: {} tasks, {} people, {} demonstrations so far",
            dir.display(),
            campaign.tasks.tasks.len(),
            roster.count(),
            campaign.demonstrations().len()
        );
        let hub = Hub::new(campaign, roster, handle.sender(), base_url)?;
        if hub.roster.count() == 0 {
            tracing::warn!(
                "campaign {}: nobody may collect yet: add people with `browserenv-server \
                 campaign add-person {} NAME`",
                dir.display(),
                dir.display()
            );
        }
        Ok((hub, handle))
    }

    /// A hub on an open campaign, its recorder's inbox being `recorder`.
    fn new(
        campaign: Campaign,
        roster: Roster,
        recorder: std::sync::mpsc::Sender<RecordEvent>,
        base_url: Option<url::Url>,
    ) -> anyhow::Result<Hub> {
        use anyhow::Context;
        let recording = campaign.recording_dir();
        let recorded =
            read(&recording).with_context(|| format!("cannot read {}", recording.display()))?;
        let episode_ids = recorded
            .steps
            .iter()
            .map(|s| &s.episode_id)
            .chain(recorded.episodes.iter().map(|e| &e.episode_id))
            .chain(campaign.demonstrations().iter().map(|d| &d.episode_id))
            .map(|id| canonical_id(id).unwrap_or_else(|| id.clone()))
            .collect();
        Ok(Hub {
            campaign: Mutex::new(campaign),
            roster: Arc::new(roster),
            recorder,
            episode_ids: Mutex::new(episode_ids),
            reviews: tokio::sync::Mutex::new(()),
            base_url,
            confirm_wait: CONFIRM_WAIT,
        })
    }

    /// The campaign's people, for the token check (`access.rs`).
    pub fn roster(&self) -> Arc<Roster> {
        self.roster.clone()
    }

    /// The one way into the campaign: as of now (what ran out is gone, `Campaign::at`), with the
    /// people removed since the last request holding nothing any more.
    pub(crate) fn with<T>(&self, act: impl FnOnce(&mut At<'_>) -> T) -> T {
        let removed = self.roster.take_removed();
        let mut campaign = locked(&self.campaign);
        let mut at = campaign.at(Instant::now());
        for person in &removed {
            at.let_go_of(person);
        }
        act(&mut at)
    }

    pub fn recorder(&self) -> std::sync::mpsc::Sender<RecordEvent> {
        self.recorder.clone()
    }

    /// A reset of `session`, opened by `caller`: the seat it gives the session when it names a
    /// lease, and the reset's keywords with the lease's task (a `task_id` of its own must be the
    /// same task) and an episode id never used in this campaign (the client's, if it is a new
    /// UUID). A lease is started by its own person's session only, and a person's session
    /// starts nothing but their leases.
    pub fn seat(
        &self,
        kwargs: &Map<String, Value>,
        session: &str,
        caller: &Caller,
    ) -> Result<Option<Seated>, String> {
        let Some(value) = kwargs.get(LEASE_KWARG) else {
            return match caller.person() {
                Some(person) => Err(format!(
                    "{person}'s token starts their leased tasks only: reset with \
                     {{\"{LEASE_KWARG}\": id}} (a lease from POST /campaign/lease)"
                )),
                None => Ok(None),
            };
        };
        let Some(id) = value.as_str() else {
            return Err(format!(
                "{LEASE_KWARG} is a string (a lease from POST /campaign/lease)"
            ));
        };
        let Some(person) = caller.person() else {
            return Err(format!(
                "lease {id:?} is started with its person's own token (browserenv-server \
                 campaign add-person), not the server's"
            ));
        };
        let lease = self.with(|campaign| campaign.lease(id).cloned());
        let Some(lease) = lease else {
            return Err(CampaignError::NoLease(id.to_string()).to_string());
        };
        if lease.person != person {
            return Err(CampaignError::NotYours(id.to_string()).to_string());
        }
        if let Some(task) = kwargs.get("task_id").and_then(Value::as_str) {
            if task != lease.task {
                return Err(format!(
                    "{id} is a lease on task {:?}, not {task:?}",
                    lease.task
                ));
            }
        }
        let mut kwargs = kwargs.clone();
        kwargs.remove(LEASE_KWARG);
        kwargs.insert("task_id".into(), lease.task.clone().into());
        let episode = episode_id(kwargs.get("episode_id"))?;
        if !locked(&self.episode_ids).insert(episode.clone()) {
            return Err(format!(
                "episode_id {episode} is used already: a campaign episode's id is new"
            ));
        }
        kwargs.insert("episode_id".into(), episode.into());
        let lease = self
            .with(|campaign| campaign.start(id, session, person))
            .map_err(|e| e.to_string())?;
        Ok(Some((
            Seat {
                lease: lease.id,
                person: lease.person,
                task: lease.task,
            },
            kwargs,
        )))
    }

    /// A step under the lease: the person is still at work. False when the lease has ended.
    pub fn stepped(&self, seat: &Seat, session: &str) -> bool {
        self.with(|campaign| campaign.touch(&seat.lease, session).is_ok())
    }

    /// The seat's episode ended; it waits for the person's mark (`POST /campaign/complete`).
    pub fn episode_ended(&self, seat: &Seat, session: &str, episode_id: &str, check: Option<bool>) {
        let ended =
            self.with(|campaign| campaign.episode_ended(&seat.lease, session, episode_id, check));
        if let Err(err) = ended {
            tracing::info!("campaign: {}'s episode {episode_id}: {err}", seat.person);
        }
    }

    /// The seat's session closed, or started something else: an unsaved lease goes back.
    pub fn leave(&self, seat: &Seat, session: &str) {
        self.with(|campaign| campaign.release(&seat.lease, session));
    }

    /// Save the ended episode of `person`'s lease with their mark, once the recorder says the
    /// episode is on disk whole, or `confirm_wait` has passed (`Saved::recorded` says which):
    /// a demonstration acknowledged is one a reviewer can open.
    pub async fn complete(
        &self,
        lease: &str,
        person: &str,
        mark: OwnMark,
    ) -> Result<Saved, CampaignError> {
        let episode = self.with(|campaign| campaign.to_complete(lease, person))?;
        let recorded = self.confirmed(&episode).await;
        if !recorded {
            tracing::warn!(
                "campaign: episode {episode} of {person} is saved without the recorder's word \
                 that it is on disk"
            );
        }
        let demonstration =
            self.with(|campaign| campaign.complete(lease, person, mark, &episode))?;
        Ok(Saved {
            demonstration,
            recorded,
        })
    }

    /// Whether the recorder has `episode_id` on disk whole, asked behind everything sent to it
    /// so far, within `confirm_wait`.
    async fn confirmed(&self, episode_id: &str) -> bool {
        let (reply, answer) = std::sync::mpsc::channel();
        let asked = RecordEvent::Confirm {
            episode_id: episode_id.to_string(),
            reply,
        };
        if self.recorder.send(asked).is_err() {
            return false;
        }
        let wait = self.confirm_wait;
        tokio::task::spawn_blocking(move || answer.recv_timeout(wait).unwrap_or(false))
            .await
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests;
