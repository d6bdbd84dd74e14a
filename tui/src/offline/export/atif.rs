//! The `atif` export: one Agent Trajectory Interchange Format (v1.8) document per episode kept,
//! its steps' screenshots as image parts, its tools the server's MCP tools.

use std::collections::BTreeMap;

use anyhow::Context;
use browserenv::models::{action_tool_description, action_tool_schema, Op};
use browserenv_collect::trajectory::{EpisodeRecord, Recording, StepRecord};
use serde_json::{json, Value};

use super::{arguments, episodes_by_id, rows, Episode, ExportReport, Frames, Selection};
use crate::review::Review;

/// The ATIF version written, as its `schema_version` tag.
pub const ATIF_VERSION: &str = "ATIF-v1.8";

/// One ATIF document per episode kept, `OUT/<n>-<episode>.json`, next to `OUT/images/` so its
/// image paths (`images/<sha>.png`) resolve from the document's folder. Each recorded step is an
/// agent step: its message is the frame the actor saw (an image part) and the action in words,
/// its tool call the wire action, its observation what followed (the frame after as an image
/// part, the URL and the error). The recording's fields and the review's labels go in `extra`.
pub(super) fn write(
    recording: &Recording,
    review: &Review,
    selection: &Selection,
    frames: &mut Frames,
    report: &mut ExportReport,
) -> anyhow::Result<()> {
    let episodes = episodes_by_id(recording);
    let rows: BTreeMap<(&str, u64), Value> = recording
        .steps
        .iter()
        .zip(rows(recording, review))
        .map(|(s, row)| ((s.episode_id.as_str(), s.step), row))
        .collect();
    for id in recording.episode_ids() {
        if !selection.keeps_episode(review, &id) {
            continue;
        }
        let recorded = recording.episode_steps(&id);
        let kept: Vec<&StepRecord> = recorded
            .iter()
            .copied()
            .filter(|s| selection.keeps_step(review, s))
            .collect();
        if kept.is_empty() {
            continue;
        }
        let mut steps = Vec::new();
        for (index, step) in kept.iter().enumerate() {
            let row = &rows[&(step.episode_id.as_str(), step.step)];
            steps.push(atif_step(index + 1, step, row, frames, report)?);
        }
        report.rows += steps.len();
        let record = episodes.get(id.as_str()).copied();
        let episode = Episode::of(&id, &episodes, review);
        let left_out = recorded.len() - kept.len();
        let mut document = json!({
            "schema_version": ATIF_VERSION,
            "session_id": id,
            "trajectory_id": id,
            "agent": {
                "name": "browserenv",
                "version": env!("CARGO_PKG_VERSION"),
                "tool_definitions": tool_definitions(),
                "extra": {"actor": kept[0].actor},
            },
            "steps": steps,
            "final_metrics": {"total_steps": recorded.len()},
            "extra": atif_extra(&id, kept[0], record, episode, frames),
        });
        if left_out > 0 {
            document["notes"] = json!(left_out_note(left_out, recorded.len(), selection));
        }
        report.trajectories += 1;
        let path = frames.out.join(format!(
            "{:04}-{}.json",
            report.trajectories,
            file_safe(&id)
        ));
        let text = serde_json::to_vec_pretty(&document)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// An ATIF document's `extra`: the recording's fields of the episode (`first`: its first step
/// kept) and the review's labels.
fn atif_extra(
    id: &str,
    first: &StepRecord,
    record: Option<&EpisodeRecord>,
    episode: Episode,
    frames: &Frames,
) -> Value {
    json!({
        "source_schema": browserenv_collect::trajectory::SCHEMA,
        "episode_id": id,
        "task": first.task.clone().unwrap_or_default(),
        "start_url": record.map(|e| e.start_url.clone()).unwrap_or_default(),
        "started": record.map(|e| e.started.clone()).unwrap_or_default(),
        "ended": record.map(|e| e.ended.clone()).unwrap_or_default(),
        "answer": record.and_then(|e| e.answer.clone()).unwrap_or_default(),
        "reward": record.and_then(|e| e.reward),
        "outcome": episode.outcome,
        "recorded_outcome": episode.recorded_outcome,
        "quality": episode.quality,
        "reviewer": episode.reviewer,
        "person": episode.person,
        "archive": frames.archives.get(id).cloned().unwrap_or_default(),
    })
}

/// Why an ATIF document has fewer steps than its episode recorded.
fn left_out_note(left_out: usize, recorded: usize, selection: &Selection) -> String {
    let marks: Vec<&str> = selection.drop_marked.iter().map(|m| m.label()).collect();
    format!(
        "{left_out} of the {recorded} recorded steps were left out (marked {}); \
         final_metrics.total_steps counts them, extra.step numbers the recorded steps",
        marks.join(" or ")
    )
}

fn atif_step(
    step_id: usize,
    step: &StepRecord,
    row: &Value,
    frames: &mut Frames,
    report: &mut ExportReport,
) -> anyhow::Result<Value> {
    let image = |path: Option<String>| match path {
        Some(path) => json!({"type": "image", "source": {"media_type": "image/png", "path": path}}),
        None => json!({"type": "text", "text": "(no screenshot)"}),
    };
    let action = crate::command::describe_recorded(&step.action);
    let before = frames.copy(&step.file_name, step, report)?;
    let after = frames.copy(&step.next_file_name, step, report)?;
    let call_id = format!("call-{}", step.step);
    let mut result = format!("url: {}", step.next_url);
    if !step.error.is_empty() {
        result.push_str(&format!("\nerror: {}", step.error));
    }
    if step.done {
        result.push_str("\ndone");
    }
    let mut extra = row.clone();
    if let Some(map) = extra.as_object_mut() {
        // The pictures are the message's and the observation's image parts.
        map.remove("file_name");
        map.remove("next_file_name");
    }
    Ok(json!({
        "step_id": step_id,
        "timestamp": step.time,
        "source": "agent",
        "message": [
            {"type": "text", "text": format!("{} ({action})", step.url)},
            image(before),
        ],
        "tool_calls": [{
            "tool_call_id": call_id,
            "function_name": step.action["op"].as_str().unwrap_or("unknown"),
            "arguments": arguments(&step.action),
        }],
        "observation": {"results": [{
            "source_call_id": call_id,
            "content": [{"type": "text", "text": result}, image(after)],
        }]},
        "extra": extra,
    }))
}

/// The browser's actions as OpenAI-style function definitions, for the document's agent: the
/// server's MCP tools, one per op.
fn tool_definitions() -> Value {
    Op::ALL
        .iter()
        .map(|op| {
            json!({"type": "function", "function": {
                "name": op.name(),
                "description": action_tool_description(*op),
                "parameters": action_tool_schema(*op),
            }})
        })
        .collect()
}

/// An episode id as part of a file name: the id is the recording's (untrusted), so only letters,
/// digits, `-`, `_` and `.` are kept (no `/`, no `..` on its own), and at most 64 of them.
fn file_safe(id: &str) -> String {
    id.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}
