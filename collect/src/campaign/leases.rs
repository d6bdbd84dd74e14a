//! Tasks handed to people (leases): who is handed which task, which session may work under a
//! lease, when a lease ends, and the demonstration a lease's person saves.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::log::{clean_text, LogEvent, OwnMark};
use super::people::person_name;
use super::{At, Campaign, CampaignError};
use crate::trajectory::now;

/// A lease no session has started its task under within this long goes back to the queue: asking
/// is not working on it.
pub const LEASE_START: Duration = Duration::from_secs(60);

/// A task handed to a person.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lease {
    pub id: String,
    pub task: String,
    pub person: String,
    #[serde(skip)]
    pub(super) since: Instant,
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

impl Campaign {
    /// Leases and review hands that saw nothing for `lease_idle_seconds`, and leases no session
    /// took up within `LEASE_START`, go back to the queue. Called by `Campaign::at` alone.
    pub(super) fn expire(&mut self, now: Instant) {
        let idle = Duration::from_secs(self.config.lease_idle_seconds);
        self.leases.retain(|_, lease| {
            let unused = lease.session.is_none()
                && now.saturating_duration_since(lease.since) >= LEASE_START;
            !unused && now.saturating_duration_since(lease.last_seen) < idle
        });
        self.reviewing
            .retain(|_, (_, since)| now.saturating_duration_since(*since) < idle);
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

    /// The demonstrations of `task` a reviewer rejected.
    pub(super) fn rejected_of(&self, task: &str) -> usize {
        self.demonstrations
            .iter()
            .filter(|d| d.task == task && self.rejected(&d.episode_id))
            .count()
    }

    pub(super) fn leased(&self, task: &str) -> usize {
        self.leases.values().filter(|l| l.task == task).count()
    }

    fn done_by(&self, person: &str, task: &str) -> bool {
        self.demonstrations
            .iter()
            .any(|d| d.person == person && d.task == task)
            || self.skips.contains(&(person.to_string(), task.to_string()))
    }
}

impl At<'_> {
    /// The task `person` should do next, leased to them; the lease they already hold if any;
    /// `None` when nothing is left for them.
    pub fn next_task(&mut self, person: &str) -> Result<Option<Lease>, CampaignError> {
        let person = self.person(person)?;
        if let Some(held) = self.leases.values().find(|l| l.person == person) {
            return Ok(Some(held.clone()));
        }
        let open = self.tasks.tasks.iter().find(|task| {
            let taken = self.counted(&task.id) + self.leased(&task.id);
            taken < self.config.wanted(&task.id) as usize && !self.done_by(&person, &task.id)
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
            since: self.now,
            last_seen: self.now,
            session: None,
            episode: None,
        };
        self.leases.insert(lease.id.clone(), lease.clone());
        Ok(Some(lease))
    }

    /// The lease `id`, while it lasts.
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

    /// `person`'s `session` starts the lease's task (again): the lease is that session's from
    /// now on, and an episode it ended before (the person starts over) is no longer the one to
    /// save. Only the lease's own person starts it.
    pub fn start(&mut self, id: &str, session: &str, person: &str) -> Result<Lease, CampaignError> {
        self.own_lease(id, person)?;
        let now = self.now;
        let lease = self.held(id, session)?;
        lease.session = Some(session.to_string());
        lease.last_seen = now;
        lease.episode = None;
        Ok(lease.clone())
    }

    /// A step of the lease's session: the person is still at work.
    pub fn touch(&mut self, id: &str, session: &str) -> Result<(), CampaignError> {
        let now = self.now;
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

    /// The lease `id` of `person`, or why it is not theirs.
    fn own_lease(&self, id: &str, person: &str) -> Result<Lease, CampaignError> {
        let lease = self
            .leases
            .get(id)
            .ok_or_else(|| CampaignError::NoLease(id.to_string()))?;
        if lease.person != person_name(person)? {
            return Err(CampaignError::NotYours(id.to_string()));
        }
        Ok(lease.clone())
    }

    /// `person` will not do their leased task, because of `reason`.
    pub fn skip(&mut self, id: &str, person: &str, reason: &str) -> Result<String, CampaignError> {
        let lease = self.own_lease(id, person)?;
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

    /// The episode `person` would save under lease `id` now: it ended, and it is not a
    /// demonstration yet.
    pub fn to_complete(&self, id: &str, person: &str) -> Result<String, CampaignError> {
        let lease = self.own_lease(id, person)?;
        let Some((episode_id, _)) = lease.episode else {
            return Err(CampaignError::NotEnded(lease.task));
        };
        if self.demonstration(&episode_id).is_some() {
            return Err(CampaignError::Duplicate(episode_id));
        }
        Ok(episode_id)
    }

    /// Save `episode_id`, the ended episode of `person`'s lease (`to_complete`), as a
    /// demonstration with their own `mark`, and end the lease. An episode that is no longer the
    /// lease's (the person started over meanwhile) is not saved.
    pub fn complete(
        &mut self,
        id: &str,
        person: &str,
        mark: OwnMark,
        episode_id: &str,
    ) -> Result<Demonstration, CampaignError> {
        let lease = self.own_lease(id, person)?;
        if self.to_complete(id, person)? != episode_id {
            return Err(CampaignError::NotEnded(lease.task));
        }
        let check = lease.episode.and_then(|(_, check)| check);
        let seconds = self
            .now
            .saturating_duration_since(lease.since)
            .as_secs_f64();
        self.record(LogEvent::Demonstration {
            time: now(),
            episode_id: episode_id.to_string(),
            task: lease.task.clone(),
            person: lease.person.clone(),
            seconds: (seconds * 10.0).round() / 10.0,
            check,
            mark,
        })?;
        self.leases.remove(id);
        Ok(self.demonstrations.last().cloned().expect("just recorded"))
    }
}
