//! The campaign's log, `DIR/campaign.jsonl`: one line per saved demonstration, skip and review,
//! appended and fsynced before it is acknowledged. The state is this file replayed (`apply`), and
//! a change reaches the state only through it (`record`).

use serde::{Deserialize, Serialize};

use super::{Campaign, CampaignError, Demonstration, Review};

/// The campaign's log, in its directory.
pub const LOG_FILE: &str = "campaign.jsonl";
/// The `schema` tag of every log line.
pub const LOG_SCHEMA: &str = "browserenv.campaign.v1";

/// The most characters of a skip's reason or a review's note.
const TEXT_CHARS: usize = 500;

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

/// A person's free text (a skip's reason, a review's note), kept and shown: at most
/// `TEXT_CHARS`, cleaned as every such text is (`browserenv::text_layer::printable`).
pub fn clean_text(text: &str) -> String {
    browserenv::text_layer::printable(text, TEXT_CHARS)
}

impl Campaign {
    /// A line of the log, read back or just written, in the state.
    pub(super) fn apply(&mut self, event: LogEvent) {
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
    pub(super) fn record(&mut self, event: LogEvent) -> Result<(), CampaignError> {
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
}
