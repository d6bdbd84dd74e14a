//! Reading a folder back: every problem reported with its line, nothing read outside it.

use super::*;

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
        read_jsonl(steps_file, &steps_path, SCHEMA, &mut recording.problems)?;
    let episodes_path = dir.join(EPISODES_FILE);
    match open_inside(&episodes_path) {
        Ok(file) => {
            recording.episodes = read_jsonl(file, &episodes_path, SCHEMA, &mut recording.problems)?
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
/// anywhere), opened without following one swapped in after the check. Files kept next to a
/// recording (a review log) are read under the same rule.
pub fn open_inside(path: &Path) -> io::Result<File> {
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

/// The records of a JSONL file whose lines carry `schema`, with their line numbers. Lines are
/// bytes, not text: half a line can end inside a character, and that must not make the whole
/// file unreadable.
pub fn read_jsonl<T: serde::de::DeserializeOwned>(
    file: File,
    path: &Path,
    schema: &str,
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
        if value.get("schema").and_then(Value::as_str) != Some(schema) {
            problems.push(problem(format!(
                "schema is {}, expected {schema:?}",
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
