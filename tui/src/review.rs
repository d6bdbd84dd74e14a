//! Reviewing a recording: per step a mark (good, wrong, redundant) and an edited note, per
//! episode a reviewed outcome and a quality flag (good, bad, unsure).
//!
//! A review lives next to the recording in `DIR/review.jsonl`, one self-contained event per line,
//! appended and fsynced as the person makes it. The recording's own lines are never rewritten, so
//! a review can be thrown away (delete the file), shared on its own, or made by several people in
//! turn. Reading replays the file in order and the last event for a key (episode, step, field)
//! wins: file order, not `time`, because two reviewers' clocks need not agree.
//!
//! The file is untrusted input like the recording: read only as a plain file (no symlink), every
//! bad line reported with its file and line number and skipped.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use browserenv_collect::trajectory::{
    now, open_inside, read_jsonl, AppendLog, Outcome, Problem, StepRecord,
};
use serde::{Deserialize, Serialize};

pub use browserenv_collect::trajectory::{REVIEW_FILE, REVIEW_SCHEMA};

/// What a reviewer says of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    /// The step is what a good demonstrator would do.
    Good,
    /// The step is a mistake (a mis-click, the wrong field).
    Wrong,
    /// The step changes nothing useful (a second wait, a scroll back and forth).
    Redundant,
}

impl Mark {
    pub fn label(self) -> &'static str {
        match self {
            Mark::Good => "good",
            Mark::Wrong => "wrong",
            Mark::Redundant => "redundant",
        }
    }
}

/// Whether an episode is fit to train on, whatever its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quality {
    Good,
    Bad,
    Unsure,
}

impl Quality {
    pub fn label(self) -> &'static str {
        match self {
            Quality::Good => "good",
            Quality::Bad => "bad",
            Quality::Unsure => "unsure",
        }
    }
}

/// The recording's own outcome names (`Outcome`), so a reviewed outcome and a recorded one are
/// one vocabulary in the views and the exports.
pub fn outcome_label(outcome: Outcome) -> String {
    serde_json::to_value(outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Every outcome, in the order `O` cycles through them.
pub const OUTCOMES: [Outcome; 6] = [
    Outcome::Finished,
    Outcome::StepLimit,
    Outcome::Blocked,
    Outcome::Failed,
    Outcome::Abandoned,
    Outcome::Incomplete,
];

/// One field set by one event. `null` clears a mark, an outcome or a quality (back to none, or
/// to what was recorded); an empty note removes the step's note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "field", content = "value", rename_all = "snake_case")]
pub enum Change {
    /// A step's mark.
    Mark(Option<Mark>),
    /// A step's note, replacing the recorded one.
    Note(String),
    /// An episode's outcome, replacing the recorded one.
    Outcome(Option<Outcome>),
    /// An episode's quality.
    Quality(Option<Quality>),
}

impl Change {
    /// Whether the field belongs to a step (else to an episode).
    pub fn is_step_field(&self) -> bool {
        matches!(self, Change::Mark(_) | Change::Note(_))
    }
}

/// One line of `review.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewEvent {
    pub schema: String,
    /// When it was made, RFC 3339 UTC.
    pub time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    pub episode_id: String,
    /// The step (as in `steps.jsonl`) for a mark or a note; absent for an episode's field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(flatten)]
    pub change: Change,
}

/// A step's review: its mark, and its note when the reviewer edited it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepReview {
    pub mark: Option<Mark>,
    /// `Some("")` when the reviewer removed the note.
    pub note: Option<String>,
}

/// An episode's review.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpisodeReview {
    pub outcome: Option<Outcome>,
    pub quality: Option<Quality>,
    /// Who set the quality last, when known.
    pub reviewer: Option<String>,
}

/// A review as read: the latest value of every key, and the lines that could not be used.
#[derive(Debug, Clone, Default)]
pub struct Review {
    pub steps: BTreeMap<(String, u64), StepReview>,
    pub episodes: BTreeMap<String, EpisodeReview>,
    pub problems: Vec<Problem>,
}

impl Review {
    /// Apply one event: it replaces what an earlier event said of the same field.
    pub fn apply(&mut self, event: &ReviewEvent) {
        let id = event.episode_id.clone();
        match (&event.change, event.step) {
            (Change::Mark(mark), Some(step)) => {
                self.steps.entry((id, step)).or_default().mark = *mark
            }
            (Change::Note(note), Some(step)) => {
                self.steps.entry((id, step)).or_default().note = Some(note.clone())
            }
            (Change::Outcome(outcome), None) => {
                self.episodes.entry(id).or_default().outcome = *outcome
            }
            (Change::Quality(quality), None) => {
                let episode = self.episodes.entry(id).or_default();
                episode.quality = *quality;
                episode.reviewer = event.reviewer.clone();
            }
            // `read` refuses these; an event made here is always well formed.
            _ => {}
        }
    }

    pub fn step(&self, episode_id: &str, step: u64) -> StepReview {
        self.steps
            .get(&(episode_id.to_string(), step))
            .cloned()
            .unwrap_or_default()
    }

    pub fn episode(&self, episode_id: &str) -> EpisodeReview {
        self.episodes.get(episode_id).cloned().unwrap_or_default()
    }

    pub fn mark(&self, step: &StepRecord) -> Option<Mark> {
        self.step(&step.episode_id, step.step).mark
    }

    /// The step's note: the reviewer's when edited, else the recorded one; none when empty.
    pub fn note(&self, step: &StepRecord) -> Option<String> {
        self.step(&step.episode_id, step.step)
            .note
            .or_else(|| step.note.clone())
            .filter(|note| !note.is_empty())
    }

    /// Whether the reviewer changed the step's note.
    pub fn note_edited(&self, step: &StepRecord) -> bool {
        self.step(&step.episode_id, step.step).note.is_some()
    }

    /// The episode's outcome: the reviewer's when set, else the recorded one.
    pub fn outcome(&self, episode_id: &str, recorded: Option<Outcome>) -> Option<Outcome> {
        self.episode(episode_id).outcome.or(recorded)
    }

    pub fn quality(&self, episode_id: &str) -> Option<Quality> {
        self.episode(episode_id).quality
    }
}

/// Read `DIR/review.jsonl`. No file is an empty review; a file that may not be read (a symlink,
/// not a plain file) is a problem, as is every bad line.
pub fn read(dir: &Path) -> io::Result<Review> {
    let path = dir.join(REVIEW_FILE);
    let mut review = Review::default();
    let file = match open_inside(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(review),
        Err(err) => {
            review.problems.push(Problem {
                file: path,
                line: 0,
                message: err.to_string(),
            });
            return Ok(review);
        }
    };
    let events: Vec<(usize, ReviewEvent)> =
        read_jsonl(file, &path, REVIEW_SCHEMA, &mut review.problems)?;
    for (line, event) in events {
        let misplaced = match (event.change.is_step_field(), event.step) {
            (true, None) => Some("a step's field without a step"),
            (false, Some(_)) => Some("an episode's field with a step"),
            _ => None,
        };
        if let Some(what) = misplaced {
            review.problems.push(Problem {
                file: path.clone(),
                line,
                message: format!("not a valid review event: {what}"),
            });
            continue;
        }
        review.apply(&event);
    }
    // In file order, as a person fixing the file reads it.
    review.problems.sort_by_key(|p| p.line);
    Ok(review)
}

/// Appends a reviewer's events to `DIR/review.jsonl`. The file is opened at the first event, so
/// only looking at a recording leaves nothing behind.
pub struct ReviewLog {
    path: PathBuf,
    log: Option<AppendLog>,
    reviewer: Option<String>,
}

impl ReviewLog {
    pub fn new(dir: &Path, reviewer: Option<String>) -> Self {
        ReviewLog {
            path: dir.join(REVIEW_FILE),
            log: None,
            reviewer: reviewer.filter(|r| !r.is_empty()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write one change: a step's field with its `step`, an episode's without. The event is
    /// returned once it is on the disk, to be applied.
    pub fn record(
        &mut self,
        episode_id: &str,
        step: Option<u64>,
        change: Change,
    ) -> io::Result<ReviewEvent> {
        if change.is_step_field() != step.is_some() {
            // `read` would refuse the line: it is never written.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{change:?} is not a field of a {}",
                    if step.is_some() { "step" } else { "episode" }
                ),
            ));
        }
        let event = ReviewEvent {
            schema: REVIEW_SCHEMA.to_string(),
            time: now(),
            reviewer: self.reviewer.clone(),
            episode_id: episode_id.to_string(),
            step,
            change,
        };
        let log = match &mut self.log {
            Some(log) => log,
            None => self.log.insert(AppendLog::open(&self.path)?),
        };
        log.append(&event)?;
        Ok(event)
    }
}

/// Who is reviewing: `--reviewer`, else the login name, else nobody known.
pub fn default_reviewer(explicit: Option<String>) -> Option<String> {
    explicit
        .or_else(|| std::env::var("USER").ok())
        .filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names docs/recordings.md lists, and the episode line's, for every outcome `O` offers.
    #[test]
    fn outcomes_are_named_as_in_the_recording() {
        let names: Vec<String> = OUTCOMES.into_iter().map(outcome_label).collect();
        assert_eq!(
            names,
            [
                "finished",
                "step_limit",
                "blocked",
                "failed",
                "abandoned",
                "incomplete"
            ]
        );
    }

    /// A change is `field` and `value` at the top level of its line, `null` for a cleared one.
    #[test]
    fn an_event_is_one_flat_line() {
        let event = ReviewEvent {
            schema: REVIEW_SCHEMA.into(),
            time: "2026-12-01T00:00:00.000Z".into(),
            reviewer: None,
            episode_id: "ep".into(),
            step: Some(2),
            change: Change::Mark(None),
        };
        let line = serde_json::to_value(&event).unwrap();
        assert_eq!(
            line,
            serde_json::json!({"schema": "browserenv.review.v1", "time": "2026-12-01T00:00:00.000Z",
                "episode_id": "ep", "step": 2, "field": "mark", "value": null})
        );
        assert_eq!(serde_json::from_value::<ReviewEvent>(line).unwrap(), event);
    }
}
