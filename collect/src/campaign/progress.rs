//! Where a campaign stands (`GET /campaign`, the UI's `V`): per task, per person, and in all.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::At;

impl At<'_> {
    /// Where the campaign stands, for `GET /campaign` and the UI's view.
    pub fn progress(&self) -> Progress {
        let tasks: Vec<TaskProgress> = self
            .tasks
            .tasks
            .iter()
            .map(|task| TaskProgress {
                id: task.id.clone(),
                wanted: self.config.wanted(&task.id),
                done: self.counted(&task.id),
                leased: self.leased(&task.id),
                rejected: self.rejected_of(&task.id),
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
            person.rejected +=
                usize::from(self.review_of(&d.episode_id).is_some_and(|r| !r.accepted));
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
