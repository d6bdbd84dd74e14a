//! `browserenv-tui export DIR --format hf|jsonl|atif|wacz --out OUT`: a recording, with its
//! review (`crate::review`), as a dataset, or its pages as a web archive package.
//!
//! - `hf`: a Hugging Face ImageFolder (`metadata.jsonl` with `file_name`, plus the images),
//!   loadable with `datasets.load_dataset("imagefolder", data_dir=OUT)`.
//! - `jsonl`: `data.jsonl`, the same rows as plain JSON with `image` / `next_image` paths.
//! - `atif`: one Agent Trajectory Interchange Format (v1.8) document per episode, its steps'
//!   screenshots as image parts.
//! - `wacz`: `OUT/recording.wacz`, the kept episodes' web archives in one WACZ (its pages: every
//!   page the episodes showed), which ReplayWeb.page opens and `wacz validate` accepts.
//!
//! Every step becomes one row (one ATIF step): the frame before the action is the row's image;
//! the action is flattened into plain columns (`op`, `x`, `y`, `text`, `dy`, and the gestures'
//! `dx`, `button`, `count`, `modifiers`, `path`, `repeat`, `url`, each with a typed default when
//! the op has none) so every row has the same schema, and `tool_call` says it as the tool call
//! (`{"name", "arguments"}`, the MCP tool's names, as in ATIF). The review adds `review_mark`, `quality`, `reviewer`, the reviewed `outcome` (the
//! recorder's stays in `recorded_outcome`) and the edited `note`; `person` is who demonstrated
//! it (a campaign's episodes). A campaign's folder exports its accepted demonstrations only. Images land in `OUT/images/`
//! under the recording's own names, each copied once, whatever the format. An episode's web
//! archive (`--archive`, docs/archives.md) is copied to `OUT/archives/`, and named in its rows
//! (`archive`, its path in the dataset) and in its ATIF document (`extra.archive`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use browserenv::models::{
    action_tool_argument_names, Action, BrowserAction, Modifiers, MouseButton, Op,
};
use browserenv_collect::trajectory::{
    frame_name, read, read_frame, EpisodeRecord, Recording, StepRecord,
};
use serde_json::{json, Value};

use crate::output::printable;
use crate::review::{outcome_label, Mark, Quality, Review};

mod atif;
mod wacz;

pub use atif::ATIF_VERSION;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Hugging Face ImageFolder.
    Hf,
    /// One JSON row per step, with image paths.
    Jsonl,
    /// Agent Trajectory Interchange Format v1.8, one document per episode.
    Atif,
    /// The episodes' web archives as one WACZ package (`recording.wacz`).
    Wacz,
}

/// What of a recording an export keeps, by its review.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only episodes whose review says quality `good`.
    pub reviewed_only: bool,
    /// Steps with one of these marks are left out.
    pub drop_marked: Vec<Mark>,
    /// Only these episodes (a campaign's accepted demonstrations).
    pub episodes: Option<std::collections::BTreeSet<String>>,
}

impl Selection {
    pub fn keeps_episode(&self, review: &Review, episode_id: &str) -> bool {
        (!self.reviewed_only || review.quality(episode_id) == Some(Quality::Good))
            && self
                .episodes
                .as_ref()
                .is_none_or(|kept| kept.contains(episode_id))
    }

    pub fn keeps_step(&self, review: &Review, step: &StepRecord) -> bool {
        self.keeps_episode(review, &step.episode_id)
            && review
                .mark(step)
                .is_none_or(|mark| !self.drop_marked.contains(&mark))
    }
}

/// What an export wrote, and what it had to leave out.
#[derive(Debug, Default)]
pub struct ExportReport {
    /// Rows (hf, jsonl) or ATIF steps written.
    pub rows: usize,
    pub images: usize,
    /// ATIF documents written (one per episode).
    pub trajectories: usize,
    /// Web archives copied (one per episode recorded with one).
    pub archives: usize,
    /// Episodes left out because their review does not say good (`--reviewed-only`).
    pub episodes_left_out: usize,
    /// Steps left out because of their mark (`--drop-marked`), in the episodes kept.
    pub steps_left_out: usize,
    /// Problems found in the recording and its review (bad lines, missing or refused
    /// screenshots, a picture that is not what its name says), each named by file and line or
    /// by step.
    pub problems: Vec<String>,
}

/// Export a recording and its review. The recording is untrusted input: a frame is read only
/// under the trajectory's rule (`read_frame`: a `screenshots/<sha256>.png` name, no symlink) and
/// copied only if its bytes hash to its name, so nothing from outside the folder, and nothing
/// altered, gets into the dataset. Each problem is in the report.
pub fn export(
    recording_dir: &Path,
    out: &Path,
    format: ExportFormat,
    selection: &Selection,
) -> anyhow::Result<ExportReport> {
    let recording = read(recording_dir)?;
    let review = crate::review::read(recording_dir)?;
    let folder = if format == ExportFormat::Wacz {
        out.to_path_buf()
    } else {
        out.join("images")
    };
    std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", out.display()))?;
    let mut report = ExportReport {
        problems: recording
            .problems
            .iter()
            .chain(&review.problems)
            .map(ToString::to_string)
            .collect(),
        ..ExportReport::default()
    };
    let ids = recording.episode_ids();
    report.episodes_left_out = ids
        .iter()
        .filter(|id| !selection.keeps_episode(&review, id))
        .count();
    report.steps_left_out = recording
        .steps
        .iter()
        .filter(|s| selection.keeps_episode(&review, &s.episode_id))
        .filter(|s| !selection.keeps_step(&review, s))
        .count();
    let mut frames = Frames {
        dir: recording_dir,
        out,
        exported: BTreeMap::new(),
        archives: BTreeMap::new(),
    };
    copy_archives(&recording, &review, selection, &mut frames, &mut report)?;
    match format {
        ExportFormat::Hf | ExportFormat::Jsonl => write_rows(
            &recording,
            &review,
            selection,
            format,
            &mut frames,
            &mut report,
        )?,
        ExportFormat::Atif => {
            atif::write(&recording, &review, selection, &mut frames, &mut report)?
        }
        ExportFormat::Wacz => wacz::write(&recording, &review, selection, &frames, &mut report)?,
    }
    Ok(report)
}

/// Copy the web archive of every episode kept to `OUT/archives/`, under the recording's name for
/// it. The name is the recording's, so untrusted: it is taken only as `resolve_inside` does (a
/// `.warc.gz` inside the recording's folder, no symlink out of it), else reported.
fn copy_archives(
    recording: &Recording,
    review: &Review,
    selection: &Selection,
    frames: &mut Frames,
    report: &mut ExportReport,
) -> anyhow::Result<()> {
    for episode in &recording.episodes {
        let Some(archive) = &episode.archive else {
            continue;
        };
        if !selection.keeps_episode(review, &episode.episode_id) {
            continue;
        }
        let from = match browserenv_archive::resolve_inside(frames.dir, &archive.file) {
            Ok(from) => from,
            Err(why) => {
                report.problems.push(format!(
                    "episode {}: its archive is not exported: {why}",
                    episode.episode_id
                ));
                continue;
            }
        };
        let to = frames.out.join(&archive.file);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::copy(&from, &to).with_context(|| format!("cannot write {}", to.display()))?;
        report.archives += 1;
        frames
            .archives
            .insert(episode.episode_id.clone(), archive.file.clone());
    }
    Ok(())
}

/// Frames copied into `OUT/images/`, each looked at once.
struct Frames<'a> {
    dir: &'a Path,
    out: &'a Path,
    /// Whether each frame looked at is in the export.
    exported: BTreeMap<String, bool>,
    /// The archive exported for each episode, by its path in the export.
    archives: BTreeMap<String, String>,
}

impl Frames<'_> {
    /// The exported name (`images/<sha>.png`) of the frame `name`, or None when it is empty,
    /// missing, refused or not what its name says (the reader reported the first ones with their
    /// line; the last one is reported here).
    fn copy(
        &mut self,
        name: &str,
        step: &StepRecord,
        report: &mut ExportReport,
    ) -> anyhow::Result<Option<String>> {
        if name.is_empty() {
            return Ok(None);
        }
        let done = match self.exported.get(name) {
            Some(done) => *done,
            None => {
                let done = match read_frame(self.dir, name) {
                    Ok(bytes) if frame_name(&bytes) == name => {
                        let to = self.out.join(exported_name(name));
                        std::fs::write(&to, &bytes)
                            .with_context(|| format!("cannot write {}", to.display()))?;
                        report.images += 1;
                        true
                    }
                    Ok(_) => {
                        report.problems.push(format!(
                            "step {} of episode {}: screenshot {name} does not hold the picture \
                             its name says (its SHA-256 differs); not exported",
                            step.step, step.episode_id
                        ));
                        false
                    }
                    Err(_) => false,
                };
                self.exported.insert(name.to_string(), done);
                done
            }
        };
        Ok(done.then(|| exported_name(name)))
    }
}

/// `screenshots/<sha>.png` becomes `images/<sha>.png` (a name `read_frame` accepted).
fn exported_name(name: &str) -> String {
    let file = name.rsplit('/').next().unwrap_or_default();
    format!("images/{file}")
}

/// hf: `metadata.jsonl`, a row only with its frame before (an ImageFolder row is its image).
/// jsonl: `data.jsonl`, every row, `""` for a frame that is not there.
fn write_rows(
    recording: &Recording,
    review: &Review,
    selection: &Selection,
    format: ExportFormat,
    frames: &mut Frames,
    report: &mut ExportReport,
) -> anyhow::Result<()> {
    let (file, image, next_image) = match format {
        // `datasets` loads every `<name>_file_name` column as an image column `<name>`.
        ExportFormat::Hf => ("metadata.jsonl", "file_name", "next_image_file_name"),
        _ => ("data.jsonl", "image", "next_image"),
    };
    let path = frames.out.join(file);
    let mut writer = std::io::BufWriter::new(
        std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?,
    );
    for (step, mut row) in recording.steps.iter().zip(rows(recording, review)) {
        if !selection.keeps_step(review, step) {
            continue;
        }
        let before = frames.copy(&step.file_name, step, report)?;
        if before.is_none() && format == ExportFormat::Hf {
            continue;
        }
        let after = frames.copy(&step.next_file_name, step, report)?;
        let row_map = row.as_object_mut().expect("a row is an object");
        row_map.remove("file_name");
        row_map.remove("next_file_name");
        row_map.insert(image.into(), json!(before.unwrap_or_default()));
        row_map.insert(next_image.into(), json!(after.unwrap_or_default()));
        let archive = frames.archives.get(&step.episode_id).cloned();
        row_map.insert("archive".into(), json!(archive.unwrap_or_default()));
        serde_json::to_writer(&mut writer, &row)?;
        writer.write_all(b"\n")?;
        report.rows += 1;
    }
    writer.flush()?;
    Ok(())
}

/// One flat row per step, with its episode's outcome and the review's labels. `file_name` and
/// `next_file_name` are the recording's names; the writers replace them with the exported ones.
pub fn rows(recording: &Recording, review: &Review) -> Vec<Value> {
    let episodes = episodes_by_id(recording);
    recording
        .steps
        .iter()
        .map(|step| {
            let action = &step.action;
            let episode = Episode::of(&step.episode_id, &episodes, review);
            let tool_call = json!({
                "name": action["op"].as_str().unwrap_or("unknown"),
                "arguments": arguments(action),
            });
            let mut row = json!({
                "file_name": step.file_name,
                "next_file_name": step.next_file_name,
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
                "note": review.note(step).unwrap_or_default(),
                // Nested and optional: as a JSON string so every row has one schema.
                "element": step.element.as_ref().map(Value::to_string).unwrap_or_default(),
                "review_mark": review.mark(step).map(Mark::label).unwrap_or_default(),
                "outcome": episode.outcome,
                "recorded_outcome": episode.recorded_outcome,
                "quality": episode.quality,
                "reviewer": episode.reviewer,
                "person": episode.person,
                "tool_call": tool_call.to_string(),
            });
            if let Some(map) = row.as_object_mut() {
                map.extend(gesture_columns(action));
            }
            row
        })
        .collect()
}

/// The gestures' fields of an action as columns, typed defaults where its op has none: `dx` 0,
/// `button` "", `count` 0, `modifiers` [], `path` [], `repeat` 0, `url` "".
fn gesture_columns(action: &Value) -> serde_json::Map<String, Value> {
    let (mut dx, mut button, mut count, mut modifiers) = (0, "", 0, Vec::new());
    let (mut path, mut repeat, mut url) = (Vec::new(), 0, String::new());
    let held = |m: &Modifiers| m.iter().map(|m| m.name()).collect::<Vec<_>>();
    let name = |b: &MouseButton| b.name();
    if let Ok(action) = BrowserAction::from_value(action) {
        match &action.action {
            Action::Click {
                button: b,
                count: c,
                modifiers: m,
                ..
            } => {
                (button, count, modifiers) = (name(b), *c, held(m));
            }
            Action::Drag {
                path: p,
                button: b,
                modifiers: m,
            } => {
                (button, modifiers) = (name(b), held(m));
                path = p.iter().map(|p| [p.x, p.y]).collect();
            }
            Action::MouseDown { button: b, .. } | Action::MouseUp { button: b, .. } => {
                button = name(b);
            }
            Action::Scroll { dx: d, .. } => dx = *d,
            Action::Press { repeat: r, .. } => repeat = *r,
            Action::Goto { url: u } => url = u.clone(),
            Action::Type { .. }
            | Action::Key { .. }
            | Action::Back
            | Action::Forward
            | Action::Wait
            | Action::Finish { .. }
            | Action::Move { .. }
            | Action::Select { .. } => {}
        }
    }
    let columns = json!({
        "dx": dx, "button": button, "count": count, "modifiers": modifiers, "path": path,
        "repeat": repeat, "url": url,
    });
    match columns {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

fn episodes_by_id(recording: &Recording) -> BTreeMap<&str, &EpisodeRecord> {
    recording
        .episodes
        .iter()
        .map(|e| (e.episode_id.as_str(), e))
        .collect()
}

/// An episode's columns: strings always, so every row has one schema.
struct Episode {
    /// The reviewed outcome, else the recorded one, else `open` (not ended).
    outcome: String,
    recorded_outcome: String,
    /// `good`, `bad`, `unsure`, or `""` when not reviewed.
    quality: String,
    reviewer: String,
    /// Who demonstrated it (a campaign's episodes), `""` when not recorded.
    person: String,
}

impl Episode {
    fn of(id: &str, episodes: &BTreeMap<&str, &EpisodeRecord>, review: &Review) -> Episode {
        let recorded = episodes.get(id).map(|e| e.outcome);
        let reviewed = review.episode(id);
        let label = |outcome: Option<_>| outcome.map_or("open".to_string(), outcome_label);
        Episode {
            outcome: label(review.outcome(id, recorded)),
            recorded_outcome: label(recorded),
            quality: reviewed
                .quality
                .map(Quality::label)
                .unwrap_or_default()
                .to_string(),
            reviewer: reviewed.reviewer.unwrap_or_default(),
            person: episodes
                .get(id)
                .and_then(|e| e.person.clone())
                .unwrap_or_default(),
        }
    }
}

/// The arguments of the tool call an action is, as the action's tool (MCP, `tool_definitions`)
/// names them: the wire action carries every field, most unused, and `key`, `finish`, `press`
/// and `select` take their `text` as `key`, `answer`, `keys` and `label`.
fn arguments(action: &Value) -> Value {
    let Some(op) = action["op"].as_str().and_then(Op::from_name) else {
        return json!({});
    };
    action_tool_argument_names(op)
        .iter()
        .filter_map(|(argument, field)| {
            let value = action.get(*field).filter(|value| !value.is_null())?;
            Some((argument.to_string(), value.clone()))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `export DIR --format F --out OUT`: a recording, or a campaign's folder (its accepted
/// demonstrations; with `unreviewed` also those nobody has reviewed yet), written as a dataset,
/// and a report of what went in and what the review left out.
pub fn command(
    dir: &Path,
    out: &Path,
    format: ExportFormat,
    reviewed_only: bool,
    drop_marked: Vec<Mark>,
    unreviewed: bool,
) -> anyhow::Result<()> {
    let mut selection = Selection {
        reviewed_only,
        drop_marked,
        episodes: None,
    };
    let mut recording = dir.to_path_buf();
    if dir
        .join(browserenv_collect::campaign::CONFIG_FILE)
        .is_file()
    {
        let (campaign, problems) =
            browserenv_collect::campaign::Campaign::open(dir).map_err(anyhow::Error::msg)?;
        for problem in &problems {
            eprintln!("warning: {}", printable(&problem.to_string()));
        }
        let kept = campaign.accepted(unreviewed);
        println!(
            "campaign {}: {} of {} demonstrations {}",
            printable(&dir.display().to_string()),
            kept.len(),
            campaign.demonstrations().len(),
            if unreviewed {
                "accepted or not reviewed yet"
            } else {
                "accepted"
            }
        );
        selection.episodes = Some(kept);
        recording = campaign.recording_dir();
    } else if unreviewed {
        anyhow::bail!("--unreviewed is for a campaign's folder (it has campaign.json)");
    }
    let report = export(&recording, out, format, &selection)?;
    for problem in &report.problems {
        eprintln!("warning: {}", printable(problem));
    }
    let what = match format {
        ExportFormat::Atif => format!(
            "{} {} ({} steps)",
            report.trajectories,
            if report.trajectories == 1 {
                "trajectory"
            } else {
                "trajectories"
            },
            report.rows
        ),
        ExportFormat::Wacz => format!("{} pages in recording.wacz", report.rows),
        _ => format!("{} rows", report.rows),
    };
    println!(
        "exported {what}, {} images and {} archives to {}",
        report.images,
        report.archives,
        printable(&out.display().to_string())
    );
    if report.episodes_left_out > 0 || report.steps_left_out > 0 {
        let episodes = match selection.episodes {
            Some(_) => "not accepted demonstrations",
            None => "not reviewed good",
        };
        println!(
            "left out by the review: {} episode(s) {episodes}, {} marked step(s)",
            report.episodes_left_out, report.steps_left_out
        );
    }
    Ok(())
}
