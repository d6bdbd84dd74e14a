//! Demonstration trajectories, format v1: a folder with `steps.jsonl` (one line per step, appended,
//! flushed and fsynced as it happens), `episodes.jsonl` (one line per ended episode) and
//! `screenshots/<sha256>.png` (each distinct screenshot stored once).
//!
//! A step line pairs what the actor saw (`file_name`, `url`) with what it did (`action`, the wire
//! action) and what followed (`next_file_name`, `next_url`, `error`, `reward`, `done`). The files
//! load with Hugging Face `datasets` as plain JSON.
//!
//! A recording is untrusted input (downloaded, shared, hand-edited): readers take a frame only by
//! a name the writer could have made (`is_frame_name`) and follow no symlink (`read_frame`), so a
//! step cannot make them read outside the folder. One writer per folder (`LOCK_FILE`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
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
/// Locked (`flock`, exclusive) by the folder's writer for as long as it lives.
pub const LOCK_FILE: &str = ".recorder.lock";

/// The name a frame is stored under: `screenshots/` + the SHA-256 of its bytes + `.png`.
pub fn frame_name(png: &[u8]) -> String {
    format!("{SCREENSHOTS_DIR}/{:x}.png", Sha256::digest(png))
}

/// Whether `name` is one the writer makes (`frame_name`): `screenshots/`, 64 lowercase hex
/// digits, `.png`, nothing else. Readers use no other name, so no step can point them outside the
/// recording (`../../etc/passwd`, `/etc/passwd`).
pub fn is_frame_name(name: &str) -> bool {
    name.strip_prefix(SCREENSHOTS_DIR)
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|rest| rest.strip_suffix(".png"))
        .is_some_and(|hash| {
            hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
}

/// The path of the frame `name` in the recording `dir`, if a reader may use it: a frame name
/// (`is_frame_name`), and a plain file in a plain `screenshots` folder. A symlink is refused, not
/// followed: it could lead anywhere on the reader's machine.
pub fn frame_path(dir: &Path, name: &str) -> io::Result<PathBuf> {
    if !is_frame_name(name) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "screenshot name {name:?} is refused: a recording names its frames \
                 {SCREENSHOTS_DIR}/<sha256>.png (64 lowercase hex digits)"
            ),
        ));
    }
    let refuse = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("screenshot {name} is refused: {what}; nothing in a recording is followed"),
        )
    };
    match std::fs::symlink_metadata(dir.join(SCREENSHOTS_DIR)) {
        Ok(folder) if folder.file_type().is_symlink() => {
            return Err(refuse("the screenshots folder is a symlink"))
        }
        Ok(folder) if !folder.is_dir() => {
            return Err(refuse("the screenshots folder is not a folder"))
        }
        _ => {}
    }
    let path = dir.join(name);
    match std::fs::symlink_metadata(&path) {
        Ok(file) if file.file_type().is_symlink() => Err(refuse("it is a symlink")),
        Ok(file) if !file.is_file() => Err(refuse("it is not a plain file")),
        Ok(_) => Ok(path),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("screenshot {name} is missing"),
        )),
        Err(err) => Err(io::Error::new(
            err.kind(),
            format!("screenshot {name}: {err}"),
        )),
    }
}

/// The bytes of the frame `name`, under the rules of `frame_path`. The file is opened with
/// O_NOFOLLOW, so a symlink swapped in after the check is refused as well, and O_NONBLOCK, so a
/// FIFO swapped in cannot hang the reader.
pub fn read_frame(dir: &Path, name: &str) -> io::Result<Vec<u8>> {
    let path = frame_path(dir, name)?;
    let context = |err: io::Error| io::Error::new(err.kind(), format!("screenshot {name}: {err}"));
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .map_err(context)?;
    if !file.metadata().map_err(context)?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("screenshot {name} is refused: it is not a plain file"),
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(context)?;
    Ok(bytes)
}

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
        match (op, crate::ObservationError::parse(error)) {
            ("finish", _) => Outcome::Finished,
            (_, Some(crate::ObservationError::BlockedByBotVerification)) => Outcome::Blocked,
            (_, Some(error)) if error.page_lost() => Outcome::Failed,
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
/// crash or kill loses at most the step in flight. A write that fails (a full disk) is cut back
/// and reported: the files never keep part of a line. The writer holds the folder's lock
/// (`LOCK_FILE`) for as long as it lives, so two writers cannot interleave their lines.
pub struct TrajectoryWriter {
    dir: PathBuf,
    steps: LineFile,
    episodes: LineFile,
    /// The last step line written: where it starts, whose step it is and its bytes, so a note
    /// can be attached to it (and the line put back if that fails).
    last_step: Option<LastStep>,
    /// Held, never read: closing it (dropping the writer) releases the lock.
    _lock: File,
}

struct LastStep {
    at: u64,
    episode_id: String,
    step: u64,
    line: Vec<u8>,
}

impl TrajectoryWriter {
    /// Open (or create) a recording folder, repairing what a stopped recorder left. Fails with
    /// `ResourceBusy` while another writer (another process, or another one in this process)
    /// has the folder open.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<(Self, Recovery)> {
        let dir = dir.into();
        let created = !dir.exists();
        std::fs::create_dir_all(&dir)?;
        // Before anything is repaired or written: a second writer must change nothing.
        let lock = lock_folder(&dir)?;
        std::fs::create_dir_all(dir.join(SCREENSHOTS_DIR))?;
        let mut recovery = Recovery::default();
        let steps_path = dir.join(STEPS_FILE);
        let episodes_path = dir.join(EPISODES_FILE);
        recovery.truncated_bytes = cut_unfinished_line(&steps_path)?;
        cut_unfinished_line(&episodes_path)?;
        let mut writer = TrajectoryWriter {
            steps: LineFile::open(steps_path)?,
            episodes: LineFile::open(episodes_path)?,
            dir,
            last_step: None,
            _lock: lock,
        };
        // The new files (and folders) are durable only once the folders holding them are.
        sync_dir(&writer.dir)?;
        if created {
            if let Some(parent) = writer.dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync_dir(parent)?;
            }
        }
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
        let name = frame_name(bytes);
        let path = self.dir.join(&name);
        // A plain file of that name holds these bytes already. Anything else there (a symlink
        // in a folder from elsewhere) is replaced by the rename below, never written through.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            return Ok(name);
        }
        // Write whole, then rename: a reader never sees half a picture.
        let partial = path.with_extension("png.partial");
        let stored = (|| {
            // A partial left by a crash goes; create_new then opens no symlink either.
            let _ = std::fs::remove_file(&partial);
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&partial)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            std::fs::rename(&partial, &path)?;
            // The rename survives a crash only once the folder is synced.
            sync_dir(&self.dir.join(SCREENSHOTS_DIR))
        })();
        if let Err(err) = stored {
            // A full disk leaves no half picture behind.
            let _ = std::fs::remove_file(&partial);
            return Err(io::Error::new(
                err.kind(),
                format!("cannot store {}: {err}", path.display()),
            ));
        }
        Ok(name)
    }

    pub fn append_step(&mut self, record: &StepRecord) -> io::Result<()> {
        let line = line_of(record)?;
        let at = self.steps.append(&line)?;
        self.last_step = Some(LastStep {
            at,
            episode_id: record.episode_id.clone(),
            step: record.step,
            line,
        });
        Ok(())
    }

    /// Replace the last step line written by this writer (to attach a note); durable like an
    /// append. If the new line cannot be written, the old one is put back.
    pub fn rewrite_last_step(&mut self, record: &StepRecord) -> io::Result<()> {
        let Some(last) = &mut self.last_step else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no step was recorded yet",
            ));
        };
        if last.episode_id != record.episode_id || last.step != record.step {
            return Err(io::Error::other(
                "another step was recorded since; the note was not attached",
            ));
        }
        let line = line_of(record)?;
        self.steps.cut(last.at)?;
        if let Err(err) = self.steps.append(&line) {
            return Err(match self.steps.append(&last.line) {
                Ok(_) => io::Error::new(err.kind(), format!("{err}; the step is kept as it was")),
                Err(again) => io::Error::new(
                    err.kind(),
                    format!("{err}; putting the step back failed too, it is lost: {again}"),
                ),
            });
        }
        last.line = line;
        Ok(())
    }

    pub fn append_episode(&mut self, record: &EpisodeRecord) -> io::Result<()> {
        self.episodes.append(&line_of(record)?).map(drop)
    }
}

/// Take the folder's writer lock, or say who has it. `flock` locks belong to an open file, so a
/// second writer in the same process is refused like one in another process; the kernel drops
/// the lock when its holder exits, however it exits, so a crash leaves no stale lock.
fn lock_folder(dir: &Path) -> io::Result<File> {
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|err| io::Error::new(err.kind(), format!("{}: {err}", path.display())))?;
    // SAFETY: flock on a descriptor this function owns; it touches no memory.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::WouldBlock {
            return Err(io::Error::new(
                err.kind(),
                format!("cannot lock {}: {err}", path.display()),
            ));
        }
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        let holder = match holder.trim() {
            "" => String::new(),
            pid => format!(", process {pid}"),
        };
        return Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "{} is being recorded by another process or recorder (lock {}{holder}); stop \
                 it, or record into another folder",
                dir.display(),
                path.display()
            ),
        ));
    }
    // Who holds it, only for the second writer's message (the lock is the flock): a failure
    // to write it is no reason not to record.
    let _ = file
        .set_len(0)
        .and_then(|()| write!(file, "{}", std::process::id()));
    Ok(file)
}

/// fsync a folder, so the names created or renamed in it survive a crash.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)
        .and_then(|folder| folder.sync_all())
        .map_err(|err| {
            io::Error::new(err.kind(), format!("cannot sync {}: {err}", dir.display()))
        })?;
    #[cfg(test)]
    tests::SYNCED_DIRS.with(|synced| synced.borrow_mut().push(dir.to_path_buf()));
    Ok(())
}

fn line_of(record: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// What a `LineFile` is written to: a file, or a disk that fills up in a test.
trait Disk: Write {
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    fn sync_data(&mut self) -> io::Result<()>;
}

impl Disk for File {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }
}

/// An append-only JSONL file that never keeps part of a line. A full disk can take half a line
/// before the write fails; it is cut back to where the line began, or the next line would
/// continue it and both be lost. If even the cut fails, the next append makes it first.
struct LineFile<D = File> {
    disk: D,
    path: PathBuf,
    /// The length of the whole lines written: where the next one begins.
    len: u64,
    /// Part of a line may still be past `len` (a cut that failed).
    torn: bool,
}

impl LineFile {
    fn open(path: PathBuf) -> io::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|err| {
                let why = if err.raw_os_error() == Some(libc::ELOOP) {
                    "is a symlink; a recording is written only inside its folder".to_string()
                } else {
                    err.to_string()
                };
                io::Error::new(err.kind(), format!("{}: {why}", path.display()))
            })?;
        let len = file.metadata()?.len();
        Ok(LineFile {
            disk: file,
            path,
            len,
            torn: false,
        })
    }
}

impl<D: Disk> LineFile<D> {
    /// Append one line (with its newline) and make it durable; returns where it begins. On an
    /// error nothing of the line is kept.
    fn append(&mut self, line: &[u8]) -> io::Result<u64> {
        let at = self.len;
        if self.torn {
            self.cut(at).map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!(
                        "{}: not written: a half line is still there and cannot be cut: {err}",
                        self.path.display()
                    ),
                )
            })?;
        }
        // One write of line and newline, so no other line can come between them.
        let written = self
            .disk
            .write_all(line)
            .and_then(|()| self.disk.flush())
            .and_then(|()| self.disk.sync_data());
        if let Err(err) = written {
            let cut = self.cut(at);
            self.torn = cut.is_err();
            let kept = match cut {
                Ok(()) => "nothing of it was kept".to_string(),
                Err(cut) => format!("cutting the half line failed ({cut}); the next line cuts it"),
            };
            return Err(io::Error::new(
                err.kind(),
                format!(
                    "{}: cannot append a line: {err}; {kept}",
                    self.path.display()
                ),
            ));
        }
        self.len += line.len() as u64;
        Ok(at)
    }

    /// Cut the file back to `len` (the start of a line).
    fn cut(&mut self, len: u64) -> io::Result<()> {
        self.disk.set_len(len)?;
        self.disk.sync_data()?;
        self.len = len;
        self.torn = false;
        Ok(())
    }
}

/// A recorder killed mid-write leaves a last line without its newline: cut it so the next line
/// starts clean. Returns the number of bytes cut. A last line that is whole JSON and lacks only
/// its newline (a hand edit) is kept, as the reader keeps it, and given its newline.
fn cut_unfinished_line(path: &Path) -> io::Result<u64> {
    let Ok(mut file) = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    else {
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
    if serde_json::from_slice::<Value>(&contents[keep..]).is_ok() {
        file.seek(SeekFrom::End(0))?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        return Ok(0);
    }
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

    fn save_frame(
        writer: &TrajectoryWriter,
        redact: bool,
        observation: &crate::models::StepResult,
    ) -> io::Result<String> {
        let screenshot = &observation.observation.screenshot;
        let boxes = password_boxes(&observation.observation.metadata);
        if !redact || boxes.is_empty() || screenshot.is_empty() {
            return writer.save_screenshot(screenshot);
        }
        let png = base64::engine::general_purpose::STANDARD
            .decode(screenshot)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
        writer.save_png(&mask_boxes(&png, &boxes)?)
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
                let frame = Self::save_frame(&self.writer, self.redact, &observation)?;
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
                let mut record = last.clone();
                record.note = Some(note);
                // Remembered only once on disk, so a note that failed is not carried on.
                self.writer.rewrite_last_step(&record).map_err(|err| {
                    io::Error::new(err.kind(), format!("the note was not attached: {err}"))
                })?;
                *last = record.clone();
                if let Some(episode) = self.open.get_mut(&session) {
                    episode.last = Some(record);
                }
                Ok(())
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
        let Some(episode) = self.open.get_mut(session) else {
            // A step without a recorded reset (recording switched on mid-episode): start here.
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "step without a recorded reset; it starts recording at the next reset",
            ));
        };
        // A frame that cannot be stored (a full disk) costs the step its picture, not the step.
        let (next_frame, frame_error) =
            match Self::save_frame(&self.writer, self.redact, &observation) {
                Ok(frame) => (frame, None),
                Err(err) => (String::new(), Some(err)),
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
        // The episode has moved past the step even if its line is lost: the next step starts
        // from this observation, as the actor did.
        let appended = self.writer.append_step(&record).map_err(|err| {
            io::Error::new(
                err.kind(),
                format!(
                    "step {} of episode {} was not recorded (the steps before it are): {err}",
                    record.step, record.episode_id
                ),
            )
        });
        if appended.is_ok() {
            episode.last = Some(record.clone());
            self.last_steps.insert(session.to_string(), record.clone());
        }
        // A done episode's end is recorded even when its last step could not be.
        let closed = if observation.done {
            let outcome = Outcome::of_done_step(action.op.name(), &record.error);
            let answer = (action.op == crate::models::Op::Finish).then(|| {
                record.action["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            });
            self.close(session, outcome, answer)
        } else {
            Ok(())
        };
        appended?;
        closed?;
        match frame_error {
            Some(err) => Err(io::Error::new(
                err.kind(),
                format!(
                    "step {} of episode {} was recorded without its screenshot: {err}",
                    record.step, record.episode_id
                ),
            )),
            None => Ok(()),
        }
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
/// all (or `steps.jsonl` is a symlink); bad lines, an unfinished last line (a recorder stopped
/// mid-write) and screenshots a reader may not use (`frame_path`) become `problems`, each with
/// its file and line.
pub fn read(dir: &Path) -> io::Result<Recording> {
    let steps_path = dir.join(STEPS_FILE);
    let steps_file = match open_inside(&steps_path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{} is not a recording: {} is missing",
                    dir.display(),
                    steps_path.display()
                ),
            ))
        }
        Err(err) => return Err(err),
    };
    let mut recording = Recording::default();
    let steps: Vec<(usize, StepRecord)> =
        read_lines(steps_file, &steps_path, &mut recording.problems)?;
    let episodes_path = dir.join(EPISODES_FILE);
    match open_inside(&episodes_path) {
        Ok(file) => {
            recording.episodes = read_lines(file, &episodes_path, &mut recording.problems)?
                .into_iter()
                .map(|(_, episode)| episode)
                .collect();
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => recording.problems.push(Problem {
            file: episodes_path,
            line: 0,
            message: err.to_string(),
        }),
    }
    for (line, step) in &steps {
        for (field, name) in [
            ("file_name", &step.file_name),
            ("next_file_name", &step.next_file_name),
        ] {
            if name.is_empty() {
                continue;
            }
            if let Err(err) = frame_path(dir, name) {
                recording.problems.push(Problem {
                    file: steps_path.clone(),
                    line: *line,
                    message: format!("step {} {field}: {err}", step.step),
                });
            }
        }
    }
    recording.steps = steps.into_iter().map(|(_, step)| step).collect();
    Ok(recording)
}

/// Open a file of a recording for reading: a plain file, not a symlink (which could lead
/// anywhere), opened without following one swapped in after the check.
fn open_inside(path: &Path) -> io::Result<File> {
    let refuse = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is {what}; a recording is read only from plain files inside its folder",
                path.display()
            ),
        )
    };
    let kind = std::fs::symlink_metadata(path)?.file_type();
    if kind.is_symlink() {
        return Err(refuse("a symlink"));
    }
    if !kind.is_file() {
        return Err(refuse("not a plain file"));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(refuse("not a plain file"));
    }
    Ok(file)
}

/// The records of a JSONL file with their line numbers. Lines are bytes, not text: half a line
/// can end inside a character, and that must not make the whole file unreadable.
fn read_lines<T: serde::de::DeserializeOwned>(
    file: File,
    path: &Path,
    problems: &mut Vec<Problem>,
) -> io::Result<Vec<(usize, T)>> {
    let mut records = Vec::new();
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let finished = line.last() == Some(&b'\n');
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let problem = |message: String| Problem {
            file: path.to_path_buf(),
            line: number,
            message,
        };
        let value: Value = match serde_json::from_slice(text) {
            Ok(value) => value,
            // No newline and no whole JSON: the line in flight when a recorder stopped (the
            // writer cuts it when it opens the folder again).
            Err(_) if !finished => {
                problems.push(problem(format!(
                    "an unfinished last line ({} bytes, a recorder stopped while writing it) \
                     is skipped",
                    line.len()
                )));
                continue;
            }
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
            Ok(record) => records.push((number, record)),
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

    thread_local! {
        /// The folders `sync_dir` synced on this thread.
        pub(super) static SYNCED_DIRS: std::cell::RefCell<Vec<PathBuf>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }

    /// Set in a child process started by `child`: the recording folder it works on.
    const CHILD_DIR: &str = "BROWSERENV_TRAJECTORY_TEST_CHILD_DIR";

    /// This test binary running the test `name` alone in another process, on `dir`: for what
    /// only another process shows (a lock held elsewhere, a process's file-size limit).
    fn child(name: &str, dir: &Path) -> std::process::Command {
        let module = module_path!().split_once("::").unwrap().1;
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([&format!("{module}::{name}"), "--exact", "--nocapture"])
            .env(CHILD_DIR, dir);
        command
    }

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
        drop(writer);
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
        let gone = format!("screenshots/{}.png", "0".repeat(64));
        broken.next_file_name = gone.clone();
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
        assert!(
            messages[3].contains(&format!(
                "steps.jsonl:2: step 2 next_file_name: screenshot {gone} is missing"
            )),
            "{}",
            messages[3]
        );
        assert!(read(&dir.join("nope"))
            .unwrap_err()
            .to_string()
            .contains("is not a recording"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn frame_names_are_exactly_screenshots_sha256_png() {
        let hash = "2786af78f84137640326c782eee847cf38287c3f9711a3b141795ae5091ccadb";
        assert!(is_frame_name(&format!("screenshots/{hash}.png")));
        let png = base64::engine::general_purpose::STANDARD
            .decode(PNG)
            .unwrap();
        assert!(is_frame_name(&frame_name(&png)));
        for refused in [
            "../../etc/passwd".to_string(),
            "/etc/passwd".to_string(),
            format!("/screenshots/{hash}.png"),
            format!("screenshots/../{hash}.png"),
            format!("screenshots//{hash}.png"),
            format!("./screenshots/{hash}.png"),
            format!("screenshots/{}.png", hash.to_uppercase()),
            format!("screenshots/{}.png", &hash[1..]),
            format!("screenshots/{hash}0.png"),
            format!("screenshots/{hash}.PNG"),
            format!("screenshots/{hash}.png/"),
            format!("screenshots/{hash}.png.partial"),
            format!("images/{hash}.png"),
            format!("screenshots/{}g.png", &hash[1..]),
            String::new(),
        ] {
            assert!(!is_frame_name(&refused), "{refused:?}");
        }
    }

    #[test]
    fn readers_refuse_frames_outside_the_folder_and_symlinks() {
        use std::os::unix::fs::symlink;
        let dir = scratch();
        let (mut writer, _) = TrajectoryWriter::open(&dir).unwrap();
        let good = step(&writer, "ep-1", 1, false);
        writer.append_step(&good).unwrap();
        // A frame name by the rule, but a symlink to a file outside the recording.
        let linked = format!("screenshots/{}.png", "ab".repeat(32));
        symlink("/etc/passwd", dir.join(&linked)).unwrap();
        let hostile = [
            "../../etc/passwd".to_string(),
            "/etc/passwd".to_string(),
            format!("screenshots/../../../../../../../etc/passwd{}", ""),
            linked.clone(),
        ];
        for (n, name) in hostile.iter().enumerate() {
            let mut record = step(&writer, "ep-1", n as u64 + 2, false);
            record.file_name = name.clone();
            writer.append_step(&record).unwrap();
        }
        drop(writer);

        let recording = read(&dir).unwrap();
        assert_eq!(
            recording.steps.len(),
            5,
            "the steps are kept, their frames refused"
        );
        let messages: Vec<String> = recording.problems.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        for (n, (message, name)) in messages.iter().zip(&hostile).enumerate() {
            let line = n + 2;
            assert!(
                message.contains(&format!("steps.jsonl:{line}: step {line} file_name: ")),
                "{message}"
            );
            let why = if name == &linked {
                format!("screenshot {linked} is refused: it is a symlink")
            } else {
                format!("screenshot name {name:?} is refused")
            };
            assert!(message.contains(&why), "{message}");
            let err = read_frame(&dir, name).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        }
        assert!(read_frame(&dir, &good.file_name).is_ok());

        // A screenshots folder that is a symlink (to frames that exist elsewhere) is refused.
        let other = scratch();
        std::fs::copy(dir.join(STEPS_FILE), other.join(STEPS_FILE)).unwrap();
        symlink(dir.join(SCREENSHOTS_DIR), other.join(SCREENSHOTS_DIR)).unwrap();
        let err = read_frame(&other, &good.file_name).unwrap_err();
        assert!(
            err.to_string()
                .contains("the screenshots folder is a symlink"),
            "{err}"
        );
        assert!(read(&other)
            .unwrap()
            .problems
            .iter()
            .any(|p| p.line == 1 && p.message.contains("the screenshots folder is a symlink")));

        // steps.jsonl itself as a symlink: not read, and not written through either.
        let third = scratch();
        symlink(dir.join(STEPS_FILE), third.join(STEPS_FILE)).unwrap();
        let err = read(&third).unwrap_err();
        assert!(err.to_string().contains("is a symlink"), "{err}");
        let before = std::fs::read(dir.join(STEPS_FILE)).unwrap();
        let Err(err) = TrajectoryWriter::open(&third) else {
            panic!("a writer opened a symlinked steps.jsonl");
        };
        assert!(err.to_string().contains("is a symlink"), "{err}");
        assert_eq!(std::fs::read(dir.join(STEPS_FILE)).unwrap(), before);
        for folder in [dir, other, third] {
            std::fs::remove_dir_all(folder).unwrap();
        }
    }

    #[test]
    fn a_second_writer_on_a_folder_is_refused_and_changes_nothing() {
        let dir = scratch();
        let (mut first, _) = TrajectoryWriter::open(&dir).unwrap();
        // An open episode: a second writer that got in would mark it incomplete under us.
        first.append_step(&step(&first, "ep-1", 1, false)).unwrap();
        let Err(err) = TrajectoryWriter::open(&dir) else {
            panic!("two writers on one folder");
        };
        assert_eq!(err.kind(), io::ErrorKind::ResourceBusy);
        let message = err.to_string();
        assert!(
            message.contains(&format!(
                "{} is being recorded by another process or recorder (lock {}, process {})",
                dir.display(),
                dir.join(LOCK_FILE).display(),
                std::process::id()
            )),
            "{message}"
        );
        assert_eq!(std::fs::read(dir.join(EPISODES_FILE)).unwrap(), b"");
        drop(first);
        let (_, recovery) = TrajectoryWriter::open(&dir).unwrap();
        assert_eq!(recovery.incomplete, vec!["ep-1".to_string()]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_second_writer_in_another_process_is_refused() {
        if let Ok(dir) = std::env::var(CHILD_DIR) {
            let _writer = TrajectoryWriter::open(&dir).unwrap();
            println!("locked");
            // Hold the lock until the parent closes stdin.
            io::stdin().read_to_end(&mut Vec::new()).unwrap();
            return;
        }
        let dir = scratch();
        let mut holder = child("a_second_writer_in_another_process_is_refused", &dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(holder.stdout.take().unwrap());
        let mut line = String::new();
        while line.trim() != "locked" {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "the child ended");
        }
        let Err(err) = TrajectoryWriter::open(&dir) else {
            panic!("a second process got the folder");
        };
        assert_eq!(err.kind(), io::ErrorKind::ResourceBusy);
        assert!(
            err.to_string().contains(&format!(
                "is being recorded by another process or recorder (lock {}, process {})",
                dir.join(LOCK_FILE).display(),
                holder.id()
            )),
            "{err}"
        );
        drop(holder.stdin.take());
        assert!(holder.wait().unwrap().success());
        // The lock went with the process.
        TrajectoryWriter::open(&dir).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn new_names_are_made_durable_with_a_folder_fsync() {
        let synced = || SYNCED_DIRS.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let parent = scratch();
        let dir = parent.join("new");
        synced();
        let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
        // steps.jsonl, episodes.jsonl, screenshots/ in it; it in its parent.
        assert_eq!(synced(), vec![dir.clone(), parent.clone()]);
        writer.save_screenshot(PNG).unwrap();
        assert_eq!(
            synced(),
            vec![dir.join(SCREENSHOTS_DIR)],
            "after the rename"
        );
        writer.save_screenshot(PNG).unwrap();
        assert_eq!(synced(), Vec::<PathBuf>::new(), "stored once");
        drop(writer);
        TrajectoryWriter::open(&dir).unwrap();
        assert_eq!(synced(), vec![dir.clone()], "an existing folder");
        std::fs::remove_dir_all(parent).unwrap();
    }

    /// A disk that holds `room` bytes, and whose `set_len` can fail.
    struct FullDisk {
        bytes: Vec<u8>,
        room: usize,
        cut_fails: bool,
    }

    impl Write for FullDisk {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let free = self.room.saturating_sub(self.bytes.len());
            if free == 0 {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            let n = free.min(buf.len());
            self.bytes.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Disk for FullDisk {
        fn set_len(&mut self, len: u64) -> io::Result<()> {
            if self.cut_fails {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            self.bytes.truncate(len as usize);
            Ok(())
        }

        fn sync_data(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_append_leaves_no_half_line_for_the_next_to_merge_with() {
        let mut file = LineFile {
            disk: FullDisk {
                bytes: b"{\"a\":1}\n".to_vec(),
                room: 12,
                cut_fails: false,
            },
            path: "steps.jsonl".into(),
            len: 8,
            torn: false,
        };
        // Half the line fits, then the disk is full.
        let err = file.append(b"{\"b\":2}\n").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
        assert!(
            err.to_string()
                .starts_with("steps.jsonl: cannot append a line: ")
                && err.to_string().ends_with("; nothing of it was kept"),
            "{err}"
        );
        assert_eq!(file.disk.bytes, b"{\"a\":1}\n");
        file.disk.room = 100;
        assert_eq!(file.append(b"{\"c\":3}\n").unwrap(), 8);
        assert_eq!(file.disk.bytes, b"{\"a\":1}\n{\"c\":3}\n");

        // The cut fails too: nothing more is written until the half line is cut.
        file.disk.room = 20;
        file.disk.cut_fails = true;
        let err = file.append(b"{\"d\":4}\n").unwrap_err();
        assert!(err.to_string().contains("the next line cuts it"), "{err}");
        assert_eq!(file.disk.bytes, b"{\"a\":1}\n{\"c\":3}\n{\"d\"");
        file.disk.room = 100;
        let err = file.append(b"{\"e\":5}\n").unwrap_err();
        assert!(
            err.to_string().contains("a half line is still there"),
            "{err}"
        );
        assert_eq!(file.disk.bytes, b"{\"a\":1}\n{\"c\":3}\n{\"d\"");
        file.disk.cut_fails = false;
        assert_eq!(file.append(b"{\"f\":6}\n").unwrap(), 16);
        assert_eq!(file.disk.bytes, b"{\"a\":1}\n{\"c\":3}\n{\"f\":6}\n");
    }

    /// Limit the size of every file this process writes (RLIMIT_FSIZE): a write past it is cut
    /// short, the next one fails with EFBIG, as a full disk does with ENOSPC.
    fn limit_file_size(bytes: Option<u64>) {
        // SAFETY: plain system calls on this process's own limits and signal disposition.
        unsafe {
            // Otherwise the kernel's SIGXFSZ ends the process instead of failing the write.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let mut limit = std::mem::zeroed::<libc::rlimit>();
            assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit), 0);
            limit.rlim_cur = bytes.map_or(limit.rlim_max, |b| b as libc::rlim_t);
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
        }
    }

    #[test]
    fn a_full_disk_loses_only_the_step_in_flight_and_the_recording_stays_readable() {
        use crate::models::BrowserAction;
        let click = |x| RecordEvent::Step {
            session: "s".into(),
            action: BrowserAction::click(x, 1),
            observation: observed("https://a.example/", false),
            latency_ms: 10.0,
            recorded_text: None,
        };
        if let Ok(dir) = std::env::var(CHILD_DIR) {
            // In a process of its own: the limit holds for every file the process writes.
            let dir = PathBuf::from(dir);
            let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
            let mut recorder = Recorder::new(writer, Actor::Human);
            recorder
                .record(RecordEvent::Reset {
                    session: "s".into(),
                    episode_id: "e1".into(),
                    task: None,
                    observation: observed("https://a.example/", false),
                })
                .unwrap();
            recorder.record(click(1)).unwrap();
            let size = std::fs::metadata(dir.join(STEPS_FILE)).unwrap().len();
            // The disk fills up: 40 more bytes fit, not a step line.
            limit_file_size(Some(size + 40));
            let err = recorder.record(click(2)).unwrap_err().to_string();
            assert!(
                err.starts_with(
                    "step 2 of episode e1 was not recorded (the steps before it are): "
                ) && err.contains("steps.jsonl: cannot append a line: File too large")
                    && err.ends_with("nothing of it was kept"),
                "{err}"
            );
            assert_eq!(std::fs::metadata(dir.join(STEPS_FILE)).unwrap().len(), size);
            // A note makes step 1's line longer than fits: the line is put back as it was.
            let err = recorder
                .record(RecordEvent::Note {
                    session: "s".into(),
                    note: "a note longer than the room that is left on the disk".into(),
                })
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("the note was not attached: ")
                    && err.ends_with("the step is kept as it was"),
                "{err}"
            );
            // Room again: recording goes on, on a line of its own.
            limit_file_size(None);
            recorder.record(click(3)).unwrap();
            recorder
                .record(RecordEvent::Step {
                    session: "s".into(),
                    action: BrowserAction::finish("ok"),
                    observation: observed("https://a.example/", true),
                    latency_ms: 10.0,
                    recorded_text: None,
                })
                .unwrap();
            return;
        }
        let dir = scratch();
        let output = child(
            "a_full_disk_loses_only_the_step_in_flight_and_the_recording_stays_readable",
            &dir,
        )
        .output()
        .unwrap();
        assert!(
            output.status.success(),
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let recording = read(&dir).unwrap();
        assert_eq!(recording.problems, vec![]);
        let steps: Vec<(u64, Option<i64>)> = recording
            .steps
            .iter()
            .map(|s| (s.step, s.action["x"].as_i64()))
            .collect();
        assert_eq!(
            steps,
            vec![(1, Some(1)), (3, Some(3)), (4, None)],
            "only step 2 is lost"
        );
        assert_eq!(recording.steps[0].note, None);
        assert_eq!(
            (recording.episodes[0].outcome, recording.episodes[0].steps),
            (Outcome::Finished, 4)
        );
        let (_, recovery) = TrajectoryWriter::open(&dir).unwrap();
        assert_eq!(recovery, Recovery::default(), "nothing to repair");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_unfinished_last_line_is_skipped_with_a_warning_even_inside_a_character() {
        let dir = scratch();
        let (mut writer, _) = TrajectoryWriter::open(&dir).unwrap();
        let kept = step(&writer, "ep-1", 1, false);
        writer.append_step(&kept).unwrap();
        drop(writer);
        let mut cut = step(&TrajectoryWriter::open(&dir).unwrap().0, "ep-1", 2, false);
        cut.note = Some("the café ☕ button".into());
        let line = serde_json::to_vec(&cut).unwrap();
        let inside = line.windows(3).position(|w| w == "☕".as_bytes()).unwrap() + 1;
        let mut steps = OpenOptions::new()
            .append(true)
            .open(dir.join(STEPS_FILE))
            .unwrap();
        steps.write_all(&line[..inside]).unwrap();
        drop(steps);

        let recording = read(&dir).unwrap();
        assert_eq!(recording.steps, vec![kept.clone()]);
        let messages: Vec<String> = recording.problems.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].ends_with(&format!(
                "steps.jsonl:2: an unfinished last line ({inside} bytes, a recorder stopped \
                 while writing it) is skipped"
            )),
            "{}",
            messages[0]
        );

        // A whole last line that only lacks its newline (a hand edit) is a step: the reader
        // keeps it and the writer completes it instead of cutting it.
        let (writer, recovery) = TrajectoryWriter::open(&dir).unwrap();
        assert_eq!(recovery.truncated_bytes, inside as u64);
        drop(writer);
        let mut steps = OpenOptions::new()
            .append(true)
            .open(dir.join(STEPS_FILE))
            .unwrap();
        steps.write_all(&line).unwrap();
        drop(steps);
        let recording = read(&dir).unwrap();
        assert_eq!((recording.steps.len(), recording.problems.len()), (2, 0));
        let (mut writer, recovery) = TrajectoryWriter::open(&dir).unwrap();
        assert_eq!(recovery.truncated_bytes, 0);
        writer
            .append_step(&step(&writer, "ep-1", 3, false))
            .unwrap();
        let recording = read(&dir).unwrap();
        assert_eq!((recording.steps.len(), recording.problems.len()), (3, 0));
        assert_eq!(recording.steps[1], cut);
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
