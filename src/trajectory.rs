//! Demonstration trajectories, format v1: a folder with `steps.jsonl` (one line per step, appended,
//! flushed and fsynced as it happens), `episodes.jsonl` (one line per ended episode) and
//! `screenshots/<sha256>.png` (each distinct screenshot stored once).
//!
//! A step line pairs what the actor saw (`file_name`, `url`) with what it did (`action`, the wire
//! action) and what followed (`next_file_name`, `next_url`, `error`, `reward`, `done`). The files
//! load with Hugging Face `datasets` as plain JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The `schema` tag of every line of this version.
pub const SCHEMA: &str = "browserenv.trajectory.v1";
pub const STEPS_FILE: &str = "steps.jsonl";
pub const EPISODES_FILE: &str = "episodes.jsonl";
pub const SCREENSHOTS_DIR: &str = "screenshots";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    Human,
    Agent,
}

/// One step: the frame before, the action, and what followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub schema: String,
    pub episode_id: String,
    /// 1 for the first action after reset.
    pub step: u64,
    /// When the observation came back, RFC 3339 UTC.
    pub time: String,
    pub actor: Actor,
    /// The screenshot the actor saw before acting, relative to the recording folder.
    pub file_name: String,
    pub url: String,
    /// The action as sent on the wire (every field, explicit nulls).
    pub action: Value,
    /// The screenshot after the action ("" when the page could not paint).
    pub next_file_name: String,
    pub next_url: String,
    pub error: String,
    pub reward: Option<f64>,
    pub done: bool,
    pub latency_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The element under the pointer or in focus (tag, role, name, text, bbox), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<Value>,
}

/// How an episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `finish` was sent (with or without an answer).
    Finished,
    /// The step limit ended it.
    StepLimit,
    /// A bot-verification page ended it.
    Blocked,
    /// The page could not be observed any more (renderer timeout or crash, browser gone).
    Failed,
    /// The actor left it (quit, reset, disconnect) before it ended.
    Abandoned,
    /// The recorder stopped without writing the end (a crash or a kill); found on the next start.
    Incomplete,
}

impl Outcome {
    /// The outcome of an episode whose last observation said `done`, from its action and error.
    pub fn of_done_step(op: &str, error: &str) -> Outcome {
        match (op, error) {
            ("finish", _) => Outcome::Finished,
            (_, "blocked_by_bot_verification") => Outcome::Blocked,
            (_, "renderer_timeout" | "renderer_crashed" | "browser_disconnected") => {
                Outcome::Failed
            }
            _ => Outcome::StepLimit,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    pub schema: String,
    pub episode_id: String,
    pub actor: Actor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    pub start_url: String,
    pub started: String,
    pub ended: String,
    pub steps: u64,
    pub outcome: Outcome,
    /// The `finish` text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The last reward (1.0 / 0.0 for a task episode).
    pub reward: Option<f64>,
}

/// RFC 3339 UTC with milliseconds: `2026-11-30T02:15:46.123Z`.
pub fn timestamp(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

pub fn now() -> String {
    timestamp(SystemTime::now())
}

/// What `TrajectoryWriter::open` repaired in a folder left by a recorder that was stopped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recovery {
    /// Episodes that had steps but no end; now recorded as `incomplete`.
    pub incomplete: Vec<String>,
    /// Bytes of an unfinished last line (the step in flight) that were cut from `steps.jsonl`.
    pub truncated_bytes: u64,
}

/// Appends steps and episodes; every line is flushed and fsynced before the call returns, so a
/// crash or kill loses at most the step in flight.
pub struct TrajectoryWriter {
    dir: PathBuf,
    steps: File,
    episodes: File,
    /// Where the last step line starts and whose step it is, so a note can be attached to it.
    last_step_at: Option<(u64, String, u64)>,
}

impl TrajectoryWriter {
    /// Open (or create) a recording folder, repairing what a stopped recorder left.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<(Self, Recovery)> {
        let dir = dir.into();
        std::fs::create_dir_all(dir.join(SCREENSHOTS_DIR))?;
        let mut recovery = Recovery::default();
        let steps_path = dir.join(STEPS_FILE);
        let episodes_path = dir.join(EPISODES_FILE);
        recovery.truncated_bytes = cut_unfinished_line(&steps_path)?;
        cut_unfinished_line(&episodes_path)?;
        let open = |path: &Path| OpenOptions::new().create(true).append(true).open(path);
        let mut writer = TrajectoryWriter {
            steps: open(&steps_path)?,
            episodes: open(&episodes_path)?,
            dir,
            last_step_at: None,
        };
        let recording = read(&writer.dir)?;
        let ended: BTreeSet<&str> = recording
            .episodes
            .iter()
            .map(|e| e.episode_id.as_str())
            .collect();
        let mut open_episodes: BTreeMap<&str, Vec<&StepRecord>> = BTreeMap::new();
        for step in &recording.steps {
            if !ended.contains(step.episode_id.as_str()) {
                open_episodes
                    .entry(&step.episode_id)
                    .or_default()
                    .push(step);
            }
        }
        let mut repairs = Vec::new();
        for (id, steps) in open_episodes {
            let (first, last) = (steps[0], steps[steps.len() - 1]);
            repairs.push(EpisodeRecord {
                schema: SCHEMA.into(),
                episode_id: id.to_string(),
                actor: first.actor,
                task: first.task.clone(),
                start_url: first.url.clone(),
                started: first.time.clone(),
                ended: last.time.clone(),
                steps: last.step,
                outcome: Outcome::Incomplete,
                answer: None,
                reward: last.reward,
            });
        }
        for repair in repairs {
            recovery.incomplete.push(repair.episode_id.clone());
            writer.append_episode(&repair)?;
        }
        Ok((writer, recovery))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Store a base64 PNG once, named by the SHA-256 of its bytes; returns its relative path.
    pub fn save_screenshot(&self, png_base64: &str) -> io::Result<String> {
        if png_base64.is_empty() {
            return Ok(String::new());
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png_base64)
            .map_err(|err| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("screenshot is not base64: {err}"),
                )
            })?;
        self.save_png(&bytes)
    }

    /// Store PNG bytes once, named by their SHA-256; returns the relative path.
    pub fn save_png(&self, bytes: &[u8]) -> io::Result<String> {
        let name = format!("{SCREENSHOTS_DIR}/{:x}.png", Sha256::digest(bytes));
        let path = self.dir.join(&name);
        if !path.exists() {
            // Write whole, then rename: a reader never sees half a picture.
            let partial = path.with_extension("png.partial");
            let mut file = File::create(&partial)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            std::fs::rename(&partial, &path)?;
        }
        Ok(name)
    }

    pub fn append_step(&mut self, record: &StepRecord) -> io::Result<()> {
        let at = self.steps.seek(SeekFrom::End(0))?;
        append_line(&mut self.steps, record)?;
        self.last_step_at = Some((at, record.episode_id.clone(), record.step));
        Ok(())
    }

    /// Replace the last step line written by this writer (to attach a note); durable like an append.
    pub fn rewrite_last_step(&mut self, record: &StepRecord) -> io::Result<()> {
        let Some((at, episode, step)) = &self.last_step_at else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no step was recorded yet",
            ));
        };
        if *episode != record.episode_id || *step != record.step {
            return Err(io::Error::other(
                "another step was recorded since; the note was not attached",
            ));
        }
        self.steps.set_len(*at)?;
        append_line(&mut self.steps, record)
    }

    pub fn append_episode(&mut self, record: &EpisodeRecord) -> io::Result<()> {
        append_line(&mut self.episodes, record)
    }
}

fn append_line(file: &mut File, record: &impl Serialize) -> io::Result<()> {
    let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
    line.push(b'\n');
    file.write_all(&line)?;
    file.flush()?;
    file.sync_data()
}

/// A recorder killed mid-write leaves a last line without its newline: cut it so the next line
/// starts clean. Returns the number of bytes cut.
fn cut_unfinished_line(path: &Path) -> io::Result<u64> {
    let Ok(mut file) = OpenOptions::new().read(true).write(true).open(path) else {
        return Ok(0);
    };
    let length = file.metadata()?.len();
    if length == 0 {
        return Ok(0);
    }
    let mut contents = Vec::with_capacity(length as usize);
    io::Read::read_to_end(&mut file, &mut contents)?;
    if contents.last() == Some(&b'\n') {
        return Ok(0);
    }
    let keep = contents
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    file.set_len(keep as u64)?;
    file.seek(SeekFrom::End(0))?;
    file.sync_all()?;
    Ok(length - keep as u64)
}

/// Turns a stream of observations into step and episode records: remembers each open episode's
/// last frame (the "before" of the next step) and writes the episode line when it ends.
/// Keyed by a session id, so one recorder serves many sessions (the server) or one (the UI).
pub struct Recorder {
    writer: TrajectoryWriter,
    actor: Actor,
    open: BTreeMap<String, OpenEpisode>,
    /// Each session's last recorded step, kept after its episode ends so a note can still go on it.
    last_steps: BTreeMap<String, StepRecord>,
    /// Mask password inputs in saved screenshots (`--redact`).
    redact: bool,
}

/// What is recorded instead of text typed into a password field.
pub const REDACTED_PASSWORD: &str = "<redacted:password>";

struct OpenEpisode {
    episode_id: String,
    task: Option<String>,
    start_url: String,
    started: String,
    frame: String,
    url: String,
    steps: u64,
    last: Option<StepRecord>,
}

/// What a recorder is told. `session` keys the episode; everything else is what the wire carried.
#[derive(Debug, Clone)]
pub enum RecordEvent {
    Reset {
        session: String,
        episode_id: String,
        task: Option<String>,
        observation: crate::models::StepResult,
    },
    Step {
        session: String,
        action: crate::models::BrowserAction,
        observation: crate::models::StepResult,
        latency_ms: f64,
        /// Replaces the action's text in the record (a secret typed into the page).
        recorded_text: Option<String>,
    },
    /// Attach a note to the session's last step.
    Note { session: String, note: String },
    /// The session stopped (quit, disconnect, reset elsewhere): an open episode is abandoned.
    End { session: String },
}

impl Recorder {
    pub fn new(writer: TrajectoryWriter, actor: Actor) -> Self {
        Recorder {
            writer,
            actor,
            open: BTreeMap::new(),
            last_steps: BTreeMap::new(),
            redact: false,
        }
    }

    /// Black out password inputs (from the observation's `password_boxes`) in saved screenshots.
    pub fn redacting(mut self, redact: bool) -> Self {
        self.redact = redact;
        self
    }

    fn save_frame(&self, observation: &crate::models::StepResult) -> io::Result<String> {
        let screenshot = &observation.observation.screenshot;
        let boxes = password_boxes(&observation.observation.metadata);
        if !self.redact || boxes.is_empty() || screenshot.is_empty() {
            return self.writer.save_screenshot(screenshot);
        }
        let png = base64::engine::general_purpose::STANDARD
            .decode(screenshot)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
        self.writer.save_png(&mask_boxes(&png, &boxes)?)
    }

    pub fn record(&mut self, event: RecordEvent) -> io::Result<()> {
        match event {
            RecordEvent::Reset {
                session,
                episode_id,
                task,
                observation,
            } => {
                self.abandon(&session)?;
                let frame = self.save_frame(&observation)?;
                let time = now();
                self.open.insert(
                    session,
                    OpenEpisode {
                        episode_id,
                        task,
                        start_url: observation.observation.url.clone(),
                        started: time,
                        frame,
                        url: observation.observation.url,
                        steps: 0,
                        last: None,
                    },
                );
                Ok(())
            }
            RecordEvent::Step {
                session,
                action,
                observation,
                latency_ms,
                recorded_text,
            } => self.step(&session, action, observation, latency_ms, recorded_text),
            RecordEvent::Note { session, note } => {
                let Some(last) = self.last_steps.get_mut(&session) else {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        "no recorded step to attach the note to",
                    ));
                };
                last.note = Some(note);
                let record = last.clone();
                if let Some(episode) = self.open.get_mut(&session) {
                    episode.last = Some(record.clone());
                }
                self.writer.rewrite_last_step(&record)
            }
            RecordEvent::End { session } => self.abandon(&session),
        }
    }

    fn step(
        &mut self,
        session: &str,
        action: crate::models::BrowserAction,
        observation: crate::models::StepResult,
        latency_ms: f64,
        recorded_text: Option<String>,
    ) -> io::Result<()> {
        let next_frame = self.save_frame(&observation)?;
        let Some(episode) = self.open.get_mut(session) else {
            // A step without a recorded reset (recording switched on mid-episode): start here.
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "step without a recorded reset; it starts recording at the next reset",
            ));
        };
        episode.steps += 1;
        let mut wire = action.clone();
        let metadata = &observation.observation.metadata;
        let into_password = metadata
            .get("element")
            .and_then(|e| e.get("password"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if let Some(text) = recorded_text {
            wire.text = text;
        } else if into_password && action.op == crate::models::Op::Type {
            // Whatever goes into a password field never reaches the disk.
            wire.text = REDACTED_PASSWORD.into();
        }
        let record = StepRecord {
            schema: SCHEMA.into(),
            episode_id: episode.episode_id.clone(),
            step: episode.steps,
            time: now(),
            actor: self.actor,
            file_name: std::mem::replace(&mut episode.frame, next_frame.clone()),
            url: std::mem::replace(&mut episode.url, observation.observation.url.clone()),
            action: wire.to_value(),
            next_file_name: next_frame,
            next_url: observation.observation.url.clone(),
            error: observation.observation.error.clone(),
            reward: observation.reward,
            done: observation.done,
            latency_ms,
            task: episode.task.clone(),
            note: None,
            element: metadata.get("element").cloned(),
        };
        self.writer.append_step(&record)?;
        episode.last = Some(record.clone());
        self.last_steps.insert(session.to_string(), record.clone());
        if observation.done {
            let outcome = Outcome::of_done_step(action.op.name(), &record.error);
            let answer = (action.op == crate::models::Op::Finish).then(|| {
                record.action["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            });
            self.close(session, outcome, answer)?;
        }
        Ok(())
    }

    fn abandon(&mut self, session: &str) -> io::Result<()> {
        if self.open.contains_key(session) {
            self.close(session, Outcome::Abandoned, None)?;
        }
        Ok(())
    }

    fn close(&mut self, session: &str, outcome: Outcome, answer: Option<String>) -> io::Result<()> {
        let Some(episode) = self.open.remove(session) else {
            return Ok(());
        };
        let record = EpisodeRecord {
            schema: SCHEMA.into(),
            episode_id: episode.episode_id,
            actor: self.actor,
            task: episode.task,
            start_url: episode.start_url,
            started: episode.started,
            ended: now(),
            steps: episode.steps,
            outcome,
            answer,
            reward: episode.last.as_ref().and_then(|l| l.reward),
        };
        self.writer.append_episode(&record)
    }
}

fn password_boxes(metadata: &serde_json::Map<String, Value>) -> Vec<[i64; 4]> {
    metadata
        .get("password_boxes")
        .and_then(|b| serde_json::from_value(b.clone()).ok())
        .unwrap_or_default()
}

/// Paint `[x, y, width, height]` boxes black in a PNG.
pub fn mask_boxes(png_bytes: &[u8], boxes: &[[i64; 4]]) -> io::Result<Vec<u8>> {
    let invalid =
        |err: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidData, err.to_string());
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| invalid(&e))?;
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).map_err(|e| invalid(&e))?;
    pixels.truncate(info.buffer_size());
    let channels = info.color_type.samples();
    let (width, height) = (i64::from(info.width), i64::from(info.height));
    for [x, y, w, h] in boxes {
        for row in (*y).max(0)..(y + h).min(height) {
            for column in (*x).max(0)..(x + w).min(width) {
                let at = ((row * width + column) as usize) * channels;
                for value in &mut pixels[at..at + channels.min(3)] {
                    *value = 0;
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, info.width, info.height);
    encoder.set_color(info.color_type);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| invalid(&e))?;
    writer.write_image_data(&pixels).map_err(|e| invalid(&e))?;
    writer.finish().map_err(|e| invalid(&e))?;
    Ok(out)
}

/// A recorder on a thread of its own: callers hand it events and never wait for the disk.
pub struct RecorderHandle {
    events: std::sync::mpsc::Sender<RecordEvent>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RecorderHandle {
    /// Start the recorder thread. Write failures are reported through `on_error` (a log line,
    /// a status message) and recording goes on with the next event.
    pub fn spawn(
        mut recorder: Recorder,
        on_error: impl Fn(io::Error) + Send + 'static,
    ) -> io::Result<Self> {
        let (events, inbox) = std::sync::mpsc::channel::<RecordEvent>();
        let thread = std::thread::Builder::new()
            .name("trajectory-recorder".into())
            .spawn(move || {
                for event in inbox {
                    if let Err(err) = recorder.record(event) {
                        on_error(err);
                    }
                }
            })?;
        Ok(RecorderHandle {
            events,
            thread: Some(thread),
        })
    }

    pub fn send(&self, event: RecordEvent) {
        let _ = self.events.send(event);
    }

    pub fn sender(&self) -> std::sync::mpsc::Sender<RecordEvent> {
        self.events.clone()
    }

    /// Wait until every event sent so far is on disk.
    pub fn finish(mut self) {
        let (events, _) = std::sync::mpsc::channel();
        drop(std::mem::replace(&mut self.events, events));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A line or file a reader could not use, named precisely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    /// 1-based; 0 when the problem is not about one line.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        } else {
            write!(f, "{}: {}", self.file.display(), self.message)
        }
    }
}

/// Everything a recording folder holds, and every problem found in it. Readers keep every good
/// line and report every bad one; nothing is skipped silently.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    pub steps: Vec<StepRecord>,
    pub episodes: Vec<EpisodeRecord>,
    pub problems: Vec<Problem>,
}

impl Recording {
    /// The steps of one episode, in order.
    pub fn episode_steps(&self, episode_id: &str) -> Vec<&StepRecord> {
        let mut steps: Vec<_> = self
            .steps
            .iter()
            .filter(|s| s.episode_id == episode_id)
            .collect();
        steps.sort_by_key(|s| s.step);
        steps
    }

    /// Episode ids in the order their first step was recorded.
    pub fn episode_ids(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.steps
            .iter()
            .filter(|s| seen.insert(s.episode_id.clone()))
            .map(|s| s.episode_id.clone())
            .collect()
    }
}

/// Read a recording folder. An I/O error only when the folder or `steps.jsonl` cannot be read at
/// all; bad lines and missing screenshots become `problems`.
pub fn read(dir: &Path) -> io::Result<Recording> {
    let steps_path = dir.join(STEPS_FILE);
    if !steps_path.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{} is not a recording: {} is missing",
                dir.display(),
                steps_path.display()
            ),
        ));
    }
    let mut recording = Recording::default();
    recording.steps = read_lines(&steps_path, &mut recording.problems)?;
    let episodes_path = dir.join(EPISODES_FILE);
    if episodes_path.is_file() {
        recording.episodes = read_lines(&episodes_path, &mut recording.problems)?;
    }
    for (index, step) in recording.steps.iter().enumerate() {
        for name in [&step.file_name, &step.next_file_name] {
            if !name.is_empty() && !dir.join(name).is_file() {
                recording.problems.push(Problem {
                    file: steps_path.clone(),
                    line: index + 1,
                    message: format!("screenshot {name} is missing"),
                });
            }
        }
    }
    Ok(recording)
}

fn read_lines<T: serde::de::DeserializeOwned>(
    path: &Path,
    problems: &mut Vec<Problem>,
) -> io::Result<Vec<T>> {
    let mut records = Vec::new();
    for (index, line) in BufReader::new(File::open(path)?).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let problem = |message: String| Problem {
            file: path.to_path_buf(),
            line: index + 1,
            message,
        };
        let value: Value = match serde_json::from_str(&line) {
            Ok(value) => value,
            Err(err) => {
                problems.push(problem(format!("not JSON: {err}")));
                continue;
            }
        };
        if value.get("schema").and_then(Value::as_str) != Some(SCHEMA) {
            problems.push(problem(format!(
                "schema is {}, expected {SCHEMA:?}",
                value
                    .get("schema")
                    .map_or("missing".to_string(), Value::to_string)
            )));
            continue;
        }
        match serde_json::from_value(value) {
            Ok(record) => records.push(record),
            Err(err) => problems.push(problem(format!("not a valid record: {err}"))),
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    /// A 1x1 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "browserenv-trajectory-test-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn step(writer: &TrajectoryWriter, episode: &str, n: u64, done: bool) -> StepRecord {
        let shot = writer.save_screenshot(PNG).unwrap();
        StepRecord {
            schema: SCHEMA.into(),
            episode_id: episode.into(),
            step: n,
            time: now(),
            actor: Actor::Human,
            file_name: shot.clone(),
            url: "https://a.example/".into(),
            action: json!({"metadata": {}, "op": "click", "x": 10, "y": 20, "text": "", "dy": 0}),
            next_file_name: shot,
            next_url: "https://a.example/next".into(),
            error: String::new(),
            reward: Some(0.0),
            done,
            latency_ms: 87.5,
            task: Some("info-01".into()),
            note: (n == 1).then(|| "the button is below the fold".into()),
            element: Some(json!({"tag": "button", "name": "Go"})),
        }
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let at = UNIX_EPOCH + Duration::from_millis(1_795_999_999_123);
        assert_eq!(timestamp(at), "2026-11-30T00:53:19.123Z");
        assert_eq!(
            timestamp(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000Z"
        );
    }

    #[test]
    fn steps_and_episodes_round_trip() {
        let dir = scratch();
        let (mut writer, recovery) = TrajectoryWriter::open(&dir).unwrap();
        assert_eq!(recovery, Recovery::default());
        let first = step(&writer, "ep-1", 1, false);
        let second = step(&writer, "ep-1", 2, true);
        writer.append_step(&first).unwrap();
        writer.append_step(&second).unwrap();
        let episode = EpisodeRecord {
            schema: SCHEMA.into(),
            episode_id: "ep-1".into(),
            actor: Actor::Human,
            task: Some("info-01".into()),
            start_url: "https://a.example/".into(),
            started: first.time.clone(),
            ended: second.time.clone(),
            steps: 2,
            outcome: Outcome::Finished,
            answer: Some("42".into()),
            reward: Some(1.0),
        };
        writer.append_episode(&episode).unwrap();
        let recording = read(&dir).unwrap();
        assert_eq!(recording.problems, vec![]);
        assert_eq!(recording.steps, vec![first.clone(), second]);
        assert_eq!(recording.episodes, vec![episode]);
        // One screenshot stored once, named by its hash.
        assert_eq!(
            std::fs::read_dir(dir.join(SCREENSHOTS_DIR))
                .unwrap()
                .count(),
            1
        );
        assert!(first.file_name.starts_with("screenshots/") && first.file_name.ends_with(".png"));
        assert_eq!(first.file_name.len(), "screenshots/".len() + 64 + 4);
        let line: Value = serde_json::from_str(
            std::fs::read_to_string(dir.join(STEPS_FILE))
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(line["actor"], "human");
        assert_eq!(line["schema"], SCHEMA);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_killed_recorder_loses_only_the_step_in_flight_and_the_episode_is_marked_incomplete() {
        let dir = scratch();
        let (mut writer, _) = TrajectoryWriter::open(&dir).unwrap();
        let kept = step(&writer, "ep-crash", 1, false);
        writer.append_step(&kept).unwrap();
        drop(writer);
        // The kill came in the middle of the next line.
        let mut steps = OpenOptions::new()
            .append(true)
            .open(dir.join(STEPS_FILE))
            .unwrap();
        steps
            .write_all(br#"{"schema":"browserenv.trajectory.v1","episode_id":"ep-cr"#)
            .unwrap();
        drop(steps);

        let (mut writer, recovery) = TrajectoryWriter::open(&dir).unwrap();
        assert_eq!(recovery.incomplete, vec!["ep-crash".to_string()]);
        assert!(recovery.truncated_bytes > 0);
        writer
            .append_step(&step(&writer, "ep-next", 1, false))
            .unwrap();
        let recording = read(&dir).unwrap();
        assert_eq!(recording.problems, vec![]);
        assert_eq!(recording.steps.len(), 2);
        assert_eq!(recording.steps[0], kept);
        assert_eq!(recording.episodes[0].outcome, Outcome::Incomplete);
        assert_eq!(recording.episodes[0].steps, 1);
        // Opening again changes nothing more.
        let (_, again) = TrajectoryWriter::open(&dir).unwrap();
        assert_eq!(again.incomplete, vec!["ep-next".to_string()]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn readers_report_bad_lines_and_missing_pictures_and_keep_the_rest() {
        let dir = scratch();
        let (mut writer, _) = TrajectoryWriter::open(&dir).unwrap();
        let good = step(&writer, "ep-1", 1, false);
        writer.append_step(&good).unwrap();
        let mut broken = step(&writer, "ep-1", 2, false);
        broken.next_file_name = "screenshots/gone.png".into();
        writer.append_step(&broken).unwrap();
        drop(writer);
        let mut steps = OpenOptions::new()
            .append(true)
            .open(dir.join(STEPS_FILE))
            .unwrap();
        steps.write_all(b"{hand edited\n").unwrap();
        steps.write_all(b"{\"schema\":\"v0\"}\n").unwrap();
        steps
            .write_all(b"{\"schema\":\"browserenv.trajectory.v1\",\"step\":\"x\"}\n")
            .unwrap();
        drop(steps);
        let recording = read(&dir).unwrap();
        assert_eq!(recording.steps.len(), 2);
        let messages: Vec<String> = recording.problems.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(
            messages[0]
                .ends_with("steps.jsonl:3: not JSON: key must be a string at line 1 column 2"),
            "{}",
            messages[0]
        );
        assert!(messages[1].contains("steps.jsonl:4: schema is \"v0\""));
        assert!(messages[2].contains("steps.jsonl:5: not a valid record"));
        assert!(messages[3].contains("steps.jsonl:2: screenshot screenshots/gone.png is missing"));
        assert!(read(&dir.join("nope"))
            .unwrap_err()
            .to_string()
            .contains("is not a recording"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn observed(url: &str, done: bool) -> crate::models::StepResult {
        crate::models::StepResult {
            observation: crate::models::BrowserObservation {
                metadata: serde_json::Map::new(),
                screenshot: PNG.into(),
                url: url.into(),
                error: String::new(),
            },
            reward: Some(if done { 1.0 } else { 0.0 }),
            done,
        }
    }

    #[test]
    fn the_recorder_pairs_frames_with_actions_and_closes_episodes() {
        use crate::models::BrowserAction;
        let dir = scratch();
        let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
        let handle =
            RecorderHandle::spawn(Recorder::new(writer, Actor::Human), |err| panic!("{err}"))
                .unwrap();
        let session = || "s1".to_string();
        handle.send(RecordEvent::Reset {
            session: session(),
            episode_id: "e1".into(),
            task: Some("t1".into()),
            observation: observed("https://a.example/", false),
        });
        handle.send(RecordEvent::Step {
            session: session(),
            action: BrowserAction::click(1, 2),
            observation: observed("https://a.example/2", false),
            latency_ms: 90.0,
            recorded_text: None,
        });
        handle.send(RecordEvent::Note {
            session: session(),
            note: "clicked the logo".into(),
        });
        handle.send(RecordEvent::Step {
            session: session(),
            action: BrowserAction::type_text("hunter2"),
            observation: observed("https://a.example/2", false),
            latency_ms: 50.0,
            recorded_text: Some("<secret:PASSWORD>".into()),
        });
        handle.send(RecordEvent::Step {
            session: session(),
            action: BrowserAction::finish("42"),
            observation: observed("https://a.example/2", true),
            latency_ms: 5.0,
            recorded_text: None,
        });
        // A second episode left open, then the session ends.
        handle.send(RecordEvent::Reset {
            session: session(),
            episode_id: "e2".into(),
            task: None,
            observation: observed("https://b.example/", false),
        });
        handle.send(RecordEvent::Step {
            session: session(),
            action: BrowserAction::scroll(100),
            observation: observed("https://b.example/", false),
            latency_ms: 80.0,
            recorded_text: None,
        });
        handle.send(RecordEvent::End { session: session() });
        handle.finish();

        let recording = read(&dir).unwrap();
        assert_eq!(recording.problems, vec![]);
        let e1 = recording.episode_steps("e1");
        assert_eq!(e1.len(), 3);
        assert_eq!(
            (e1[0].url.as_str(), e1[0].next_url.as_str()),
            ("https://a.example/", "https://a.example/2")
        );
        assert_eq!(
            e1[1].url, "https://a.example/2",
            "the next step starts where the last ended"
        );
        assert_eq!(e1[0].note.as_deref(), Some("clicked the logo"));
        assert_eq!(e1[1].action["text"], "<secret:PASSWORD>");
        assert!(!std::fs::read_to_string(dir.join(STEPS_FILE))
            .unwrap()
            .contains("hunter2"));
        assert_eq!(e1[0].task.as_deref(), Some("t1"));
        let episodes = &recording.episodes;
        assert_eq!(episodes.len(), 2);
        assert_eq!(
            (
                episodes[0].outcome,
                episodes[0].answer.as_deref(),
                episodes[0].reward
            ),
            (Outcome::Finished, Some("42"), Some(1.0))
        );
        assert_eq!(
            (episodes[1].outcome, episodes[1].steps),
            (Outcome::Abandoned, 1)
        );
        assert_eq!(
            recording.episode_ids(),
            vec!["e1".to_string(), "e2".to_string()]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn outcomes_follow_the_last_step() {
        assert_eq!(Outcome::of_done_step("finish", ""), Outcome::Finished);
        assert_eq!(
            Outcome::of_done_step("click", "blocked_by_bot_verification"),
            Outcome::Blocked
        );
        assert_eq!(
            Outcome::of_done_step("click", "renderer_timeout"),
            Outcome::Failed
        );
        assert_eq!(Outcome::of_done_step("scroll", ""), Outcome::StepLimit);
    }
}
