//! Writing a folder: one writer per folder (a lock), lines appended whole or not at all, files
//! and the folder fsynced, an unfinished last line cut on the next start.

use std::os::unix::fs::DirBuilderExt;

use super::*;

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

pub(super) struct LastStep {
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
        create_private_dir(&dir)?;
        // Before anything is repaired or written: a second writer must change nothing.
        let lock = lock_folder(&dir)?;
        create_private_dir(&dir.join(SCREENSHOTS_DIR))?;
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
                person: None,
                task: first.task.clone(),
                start_url: first.url.clone(),
                started: first.time.clone(),
                ended: last.time.clone(),
                steps: last.step,
                outcome: Outcome::Incomplete,
                answer: None,
                reward: last.reward,
                verdict: None,
                archive: None,
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
                .mode(PRIVATE_FILE)
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

/// The mode of the files a recording is made of: what the agent saw and typed (pages, forms, the
/// secrets of a person's steps shown as their length only, but everything else as it was) is the
/// recording user's alone, whatever the umask.
pub(crate) const PRIVATE_FILE: u32 = 0o600;

/// Create a recording's folder (and any missing parent) with mode 0700, as `PRIVATE_FILE`; one
/// that exists already keeps its mode.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Take the folder's writer lock, or say who has it. `flock` locks belong to an open file, so a
/// second writer in the same process is refused like one in another process; the kernel drops
/// the lock when its holder exits, however it exits, so a crash leaves no stale lock.
pub(super) fn lock_folder(dir: &Path) -> io::Result<File> {
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(PRIVATE_FILE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|err| io::Error::new(err.kind(), format!("{}: {err}", path.display())))?;
    // SAFETY: flock on a descriptor this function owns; it touches no memory.
    let lock =
        |file: &File| unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    let mut tries = 0;
    while lock(&file) != 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::WouldBlock {
            return Err(io::Error::new(
                err.kind(),
                format!("cannot lock {}: {err}", path.display()),
            ));
        }
        let mut holder = String::new();
        let _ = (&file).seek(std::io::SeekFrom::Start(0));
        let _ = (&file).read_to_string(&mut holder);
        // A lock this process let go may still be held for a moment by a child it is starting
        // (a fork shares the open file until the child's exec closes it): CI once refused a
        // writer reopened right after the last one was dropped, "process" its own.
        if holder.trim() == std::process::id().to_string() && tries < 20 {
            tries += 1;
            std::thread::sleep(std::time::Duration::from_millis(25));
            continue;
        }
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
        .and_then(|()| file.seek(std::io::SeekFrom::Start(0)))
        .and_then(|_| write!(file, "{}", std::process::id()));
    Ok(file)
}

#[cfg(test)]
thread_local! {
    /// The folders `sync_dir` synced on this thread (read by the tests).
    pub(super) static SYNCED_DIRS: std::cell::RefCell<Vec<std::path::PathBuf>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// fsync a folder, so the names created or renamed in it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)
        .and_then(|folder| folder.sync_all())
        .map_err(|err| {
            io::Error::new(err.kind(), format!("cannot sync {}: {err}", dir.display()))
        })?;
    #[cfg(test)]
    SYNCED_DIRS.with(|synced| synced.borrow_mut().push(dir.to_path_buf()));
    Ok(())
}

pub(super) fn line_of(record: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// What a `LineFile` is written to: a file, or a disk that fills up in a test.
pub(super) trait Disk: Write {
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
pub(super) struct LineFile<D = File> {
    pub(super) disk: D,
    pub(super) path: PathBuf,
    /// The length of the whole lines written: where the next one begins.
    pub(super) len: u64,
    /// Part of a line may still be past `len` (a cut that failed).
    pub(super) torn: bool,
}

impl LineFile {
    fn open(path: PathBuf) -> io::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(PRIVATE_FILE)
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
    pub(super) fn append(&mut self, line: &[u8]) -> io::Result<u64> {
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

/// An append-only JSONL file kept next to a recording by someone other than its recorder (the
/// terminal UI's review log): the same guarantees as the recorder's files (whole lines only, each
/// fsynced, never through a symlink), but nothing already in it is ever cut. A last line left
/// without its newline (a writer stopped mid-line) stays and gets its newline, so the reader
/// reports it with its line number and the next line starts clean; the bytes are a person's work.
pub struct AppendLog {
    file: LineFile,
}

impl AppendLog {
    pub fn open(path: impl Into<PathBuf>) -> io::Result<Self> {
        let path = path.into();
        let existed = path.exists();
        let mut file = LineFile::open(path)?;
        if file.len > 0 {
            let mut last = [0u8];
            let mut reader = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&file.path)?;
            reader.seek(SeekFrom::Start(file.len - 1))?;
            reader.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.append(b"\n")?;
            }
        }
        if !existed {
            if let Some(dir) = file.path.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync_dir(dir)?;
            }
        }
        Ok(AppendLog { file })
    }

    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Append one record as a line; durable when this returns, and nothing of it kept on error.
    pub fn append(&mut self, record: &impl Serialize) -> io::Result<()> {
        self.file.append(&line_of(record)?).map(|_| ())
    }

    /// Append several records, a line each, with one write and one fsync: all of them durable
    /// when this returns, none of them kept on error.
    pub fn append_all<T: Serialize>(&mut self, records: &[T]) -> io::Result<()> {
        let mut lines = Vec::new();
        for record in records {
            lines.extend(line_of(record)?);
        }
        self.file.append(&lines).map(|_| ())
    }
}

/// A recorder killed mid-write leaves a last line without its newline: cut it so the next line
/// starts clean. Returns the number of bytes cut. A last line that is whole JSON and lacks only
/// its newline (a hand edit) is kept, as the reader keeps it, and given its newline.
pub(super) fn cut_unfinished_line(path: &Path) -> io::Result<u64> {
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
