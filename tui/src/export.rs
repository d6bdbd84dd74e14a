//! `browserenv-tui export DIR --format hf --out OUT`: a recording as a Hugging Face ImageFolder
//! (`metadata.jsonl` with `file_name`, plus the images), loadable with
//! `datasets.load_dataset("imagefolder", data_dir=OUT)`.
//!
//! Every step becomes one row: the frame before the action is the row's image; the action is
//! flattened into plain columns (`op`, `x`, `y`, `text`, `dy`) so every row has the same schema.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use browserenv::trajectory::{read, Recording};
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
    /// Problems found in the recording (bad lines, missing screenshots), each named by file and line.
    pub problems: Vec<String>,
}

pub fn export_hf(recording_dir: &Path, out: &Path) -> anyhow::Result<ExportReport> {
    let recording = read(recording_dir)?;
    std::fs::create_dir_all(out.join("images"))
        .with_context(|| format!("cannot create {}", out.display()))?;
    let mut report = ExportReport {
        problems: recording.problems.iter().map(ToString::to_string).collect(),
        ..ExportReport::default()
    };
    let mut copied = BTreeSet::new();
    let metadata_path = out.join("metadata.jsonl");
    let mut metadata = std::io::BufWriter::new(
        std::fs::File::create(&metadata_path)
            .with_context(|| format!("cannot write {}", metadata_path.display()))?,
    );
    for row in rows(&recording) {
        let Some(image) = row["file_name"].as_str().map(str::to_string) else {
            continue;
        };
        let source = recording_dir.join(&image);
        if !source.is_file() {
            // Already reported by the reader; a row without its image cannot be in an ImageFolder.
            continue;
        }
        for name in [
            image.as_str(),
            row["next_image_file_name"].as_str().unwrap_or_default(),
        ] {
            if name.is_empty() || !copied.insert(name.to_string()) {
                continue;
            }
            let from = recording_dir.join(name);
            if from.is_file() {
                let to = out.join(exported_name(name));
                std::fs::copy(&from, &to).with_context(|| {
                    format!("cannot copy {} to {}", from.display(), to.display())
                })?;
                report.images += 1;
            }
        }
        let mut row = row;
        row["file_name"] = json!(exported_name(&image));
        if let Some(next) = row["next_image_file_name"]
            .as_str()
            .filter(|n| !n.is_empty())
        {
            row["next_image_file_name"] = json!(exported_name(next));
        }
        serde_json::to_writer(&mut metadata, &row)?;
        metadata.write_all(b"\n")?;
        report.rows += 1;
    }
    metadata.flush()?;
    Ok(report)
}

/// `screenshots/<sha>.png` becomes `images/<sha>.png`.
fn exported_name(name: &str) -> String {
    let file = Path::new(name)
        .file_name()
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_default();
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
