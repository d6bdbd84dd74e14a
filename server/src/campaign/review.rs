//! What a reviewer is handed (a demonstration's episode as the recording holds it, less what the
//! task's check expects) and what they send back (the review's lines, checked and signed).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use serde::Serialize;
use serde_json::{Map, Value};

use browserenv_collect::campaign::Demonstration;
use browserenv_collect::tasks::{ShownTask, Verdict};
use browserenv_collect::trajectory::{read, read_frame, EpisodeRecord, StepRecord, REVIEW_SCHEMA};

use crate::api_error::{ApiError, Code};

/// The most review lines one review may bring (a mark and a note per step of the longest episode
/// a task allows, and the episode's fields), and the most bytes of each and of all.
const MAX_REVIEW_EVENTS: usize = 1000;
const MAX_REVIEW_EVENT_BYTES: usize = 4096;
const MAX_REVIEW_BYTES: usize = 256 * 1024;

/// A demonstration to review, with everything the terminal UI's review mode shows.
#[derive(Serialize)]
pub struct ReviewItem {
    /// Who it is handed to: the person the token names.
    pub reviewer: String,
    pub demonstration: Demonstration,
    /// The task as it may leave the server (`Task::shown`): never what its check expects.
    pub task: Option<ShownTask>,
    /// Its episode line, its verdict as an observation shows it (passed, the parts that failed),
    /// without the details that quote what the check expects.
    pub episode: Option<EpisodeRecord>,
    pub steps: Vec<StepRecord>,
    /// Each screenshot the steps name, base64 PNG, by its name in the recording.
    pub frames: BTreeMap<String, String>,
    /// What could not be read (a screenshot missing or refused): the rest is shown.
    pub problems: Vec<String>,
}

/// The episode of `demonstration` as the recording in `dir` holds it, for `reviewer`.
pub fn review_item(
    dir: &Path,
    reviewer: String,
    demonstration: Demonstration,
    task: Option<ShownTask>,
) -> std::io::Result<ReviewItem> {
    let recording = read(dir)?;
    let id = &demonstration.episode_id;
    let steps: Vec<StepRecord> = recording.episode_steps(id).into_iter().cloned().collect();
    let mut frames = BTreeMap::new();
    let mut problems = Vec::new();
    for step in &steps {
        for name in [&step.file_name, &step.next_file_name] {
            if name.is_empty() || frames.contains_key(name) {
                continue;
            }
            match read_frame(dir, name) {
                Ok(png) => {
                    let png = base64::engine::general_purpose::STANDARD.encode(png);
                    frames.insert(name.clone(), png);
                }
                Err(err) => problems.push(format!("step {}: {err}", step.step)),
            }
        }
    }
    let episode = recording
        .episodes
        .into_iter()
        .rev()
        .find(|e| &e.episode_id == id)
        .map(|mut episode| {
            episode.verdict = episode.verdict.map(|v| Verdict::from(v.shown()));
            episode
        });
    Ok(ReviewItem {
        reviewer,
        episode,
        demonstration,
        task,
        steps,
        frames,
        problems,
    })
}

fn invalid(detail: String) -> ApiError {
    Code::InvalidRequest.error(detail)
}

/// The review's lines as they are kept: each of this episode and of the review schema, at most
/// `MAX_REVIEW_EVENT_BYTES` each and `MAX_REVIEW_BYTES` in all, signed with the reviewer's name.
pub fn review_lines(
    episode_id: &str,
    reviewer: &str,
    events: Vec<Map<String, Value>>,
) -> Result<Vec<Map<String, Value>>, ApiError> {
    if events.len() > MAX_REVIEW_EVENTS {
        return Err(invalid(format!("at most {MAX_REVIEW_EVENTS} review lines")));
    }
    let mut total = 0;
    let mut lines = Vec::with_capacity(events.len());
    for (index, mut event) in events.into_iter().enumerate() {
        let schema = event.get("schema").and_then(Value::as_str);
        let episode = event.get("episode_id").and_then(Value::as_str);
        if schema != Some(REVIEW_SCHEMA) || episode != Some(episode_id) {
            return Err(invalid(format!(
                "events[{index}]: a review line of schema {REVIEW_SCHEMA:?} about episode \
                 {episode_id:?}"
            )));
        }
        event.insert("reviewer".into(), reviewer.into());
        let size = Value::Object(event.clone()).to_string().len();
        total += size;
        if size > MAX_REVIEW_EVENT_BYTES || total > MAX_REVIEW_BYTES {
            return Err(invalid(format!(
                "events[{index}]: a review line is at most {MAX_REVIEW_EVENT_BYTES} bytes, a \
                 review {MAX_REVIEW_BYTES}"
            )));
        }
        lines.push(event);
    }
    Ok(lines)
}
