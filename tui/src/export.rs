//! `browserenv-tui export DIR --format hf --out OUT`: a recording as a Hugging Face ImageFolder
//! (`metadata.jsonl` with `file_name`, plus the images), loadable with
//! `datasets.load_dataset("imagefolder", data_dir=OUT)`.
//!
//! Every step becomes one row: the frame before the action is the row's image; the action is
//! flattened into plain columns (`op`, `x`, `y`, `text`, `dy`) so every row has the same schema.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use browserenv::trajectory::{frame_name, read, read_frame, Recording, StepRecord};
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Hugging Face ImageFolder.
    Hf,
}

/// What an export wrote, and what it had to leave out.
#[derive(Debug, Default)]
pub struct ExportReport {
    pub rows: usize,
    pub images: usize,
    /// Problems found in the recording (bad lines, missing or refused screenshots, a picture
    /// that is not what its name says), each named by file and line or by step.
    pub problems: Vec<String>,
}

/// Export a recording. It is untrusted input: a frame is read only under the trajectory's rule
/// (`read_frame`: a `screenshots/<sha256>.png` name, no symlink) and copied only if its bytes
/// hash to its name, so nothing from outside the folder, and nothing altered, gets into the
/// dataset. A row whose frame is refused is left out, as one whose frame is missing; a refused
/// frame after the action becomes `""` (no picture). Each is in `problems`.
pub fn export_hf(recording_dir: &Path, out: &Path) -> anyhow::Result<ExportReport> {
    let recording = read(recording_dir)?;
    std::fs::create_dir_all(out.join("images"))
        .with_context(|| format!("cannot create {}", out.display()))?;
    let mut report = ExportReport {
        problems: recording.problems.iter().map(ToString::to_string).collect(),
        ..ExportReport::default()
    };
    // Each frame is looked at once: whether it is in the export.
    let mut exported: BTreeMap<String, bool> = BTreeMap::new();
    let mut export_frame = |name: &str, step: &StepRecord, report: &mut ExportReport| {
        if let Some(done) = exported.get(name) {
            return Ok(*done);
        }
        let done = match read_frame(recording_dir, name) {
            Ok(bytes) if frame_name(&bytes) == name => {
                let to = out.join(exported_name(name));
                std::fs::write(&to, &bytes)
                    .with_context(|| format!("cannot write {}", to.display()))?;
                report.images += 1;
                true
            }
            Ok(_) => {
                report.problems.push(format!(
                    "step {} of episode {}: screenshot {name} does not hold the picture its name \
                     says (its SHA-256 differs); not exported",
                    step.step, step.episode_id
                ));
                false
            }
            // Missing or refused: the reader reported it, with its line.
            Err(_) => false,
        };
        exported.insert(name.to_string(), done);
        anyhow::Ok(done)
    };
    let metadata_path = out.join("metadata.jsonl");
    let mut metadata = std::io::BufWriter::new(
        std::fs::File::create(&metadata_path)
            .with_context(|| format!("cannot write {}", metadata_path.display()))?,
    );
    for (step, mut row) in recording.steps.iter().zip(rows(&recording)) {
        // A row without its image cannot be in an ImageFolder.
        if step.file_name.is_empty() || !export_frame(&step.file_name, step, &mut report)? {
            continue;
        }
        row["file_name"] = json!(exported_name(&step.file_name));
        let next = &step.next_file_name;
        row["next_image_file_name"] = if !next.is_empty() && export_frame(next, step, &mut report)?
        {
            json!(exported_name(next))
        } else {
            json!("")
        };
        serde_json::to_writer(&mut metadata, &row)?;
        metadata.write_all(b"\n")?;
        report.rows += 1;
    }
    metadata.flush()?;
    Ok(report)
}

/// `screenshots/<sha>.png` becomes `images/<sha>.png` (a name `read_frame` accepted).
fn exported_name(name: &str) -> String {
    let file = name.rsplit('/').next().unwrap_or_default();
    format!("images/{file}")
}

/// One flat row per step, with its episode's outcome.
pub fn rows(recording: &Recording) -> Vec<Value> {
    recording
        .steps
        .iter()
        .map(|step| {
            let action = &step.action;
            let episode = recording
                .episodes
                .iter()
                .find(|e| e.episode_id == step.episode_id);
            json!({
                "file_name": step.file_name,
                // `datasets` loads every `<name>_file_name` column as an image column `<name>`.
                "next_image_file_name": step.next_file_name,
                "episode_id": step.episode_id,
                "step": step.step,
                "time": step.time,
                "actor": step.actor,
                "url": step.url,
                "op": action["op"],
                "x": action["x"],
                "y": action["y"],
                "text": action["text"].as_str().unwrap_or_default(),
                "dy": action["dy"].as_i64().unwrap_or_default(),
                "next_url": step.next_url,
                "error": step.error,
                "reward": step.reward,
                "done": step.done,
                "latency_ms": step.latency_ms,
                "task": step.task.clone().unwrap_or_default(),
                "note": step.note.clone().unwrap_or_default(),
                // Nested and optional: as a JSON string so every row has one schema.
                "element": step.element.as_ref().map(Value::to_string).unwrap_or_default(),
                "outcome": episode.map(|e| json!(e.outcome)).unwrap_or(json!("open")),
            })
        })
        .collect()
}
