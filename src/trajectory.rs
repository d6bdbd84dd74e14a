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
