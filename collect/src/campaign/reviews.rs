//! Reviews: a second person's verdict on each demonstration, handed out one at a time, never to
//! the person who demonstrated it.

use std::time::Instant;

use serde::Serialize;

use super::log::{clean_text, LogEvent};
use super::people::person_name;
use super::{At, CampaignError, Demonstration};
use crate::trajectory::now;

/// The last review of a demonstration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Review {
    pub reviewer: String,
    pub accepted: bool,
    pub note: String,
}

impl At<'_> {
    /// The oldest demonstration `person` may review, now in their hands; `None` when none is
    /// waiting for them.
    pub fn next_review(&mut self, person: &str) -> Result<Option<Demonstration>, CampaignError> {
        let reviewer = self.person(person)?;
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
        let now: Instant = self.now;
        self.reviewing
            .insert(next.episode_id.clone(), (reviewer, now));
        Ok(Some(next))
    }

    /// A demonstration `person` asked for goes back (it could not be shown to them).
    pub fn put_back(&mut self, episode_id: &str, person: &str) {
        if let Ok(reviewer) = person_name(person) {
            if self
                .reviewing
                .get(episode_id)
                .is_some_and(|(who, _)| *who == reviewer)
            {
                self.reviewing.remove(episode_id);
            }
        }
    }

    /// Whether `person` may review `episode_id` now: it is a demonstration, not theirs, in their
    /// hands, and not reviewed yet.
    pub fn may_review(&self, episode_id: &str, person: &str) -> Result<String, CampaignError> {
        let reviewer = person_name(person)?;
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

    /// `person`'s verdict on a demonstration in their hands; a rejected one stops counting for
    /// its task. A demonstration is reviewed once.
    pub fn review(
        &mut self,
        episode_id: &str,
        person: &str,
        accepted: bool,
        note: &str,
    ) -> Result<(), CampaignError> {
        let reviewer = self.may_review(episode_id, person)?;
        self.record(LogEvent::Review {
            time: now(),
            episode_id: episode_id.to_string(),
            reviewer,
            accepted,
            note: clean_text(note),
        })
    }
}
