//! The trajectory format's tests: writing, crashes and full disks, reading hostile folders.

use super::frames::*;
use super::reader::*;
use super::recorder::*;
use super::records::*;
use super::writer::*;
use super::*;
use serde_json::json;
use std::time::Duration;

/// A 1x1 PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

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
        person: None,
        task: Some("info-01".into()),
        start_url: "https://a.example/".into(),
        started: first.time.clone(),
        ended: second.time.clone(),
        steps: 2,
        outcome: Outcome::Finished,
        answer: Some("42".into()),
        reward: Some(1.0),
        verdict: Some(crate::tasks::Verdict {
            passed: true,
            failed: vec![],
            details: vec!["answer \"42\" matches \"42\" (Exact)".into()],
        }),
        archive: None,
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

/// A lock this process let go but a child it is starting still holds for a moment (a fork
/// shares the open file until the child's exec): the next writer waits for it, not refused.
#[test]
fn a_writer_reopened_while_a_starting_child_still_holds_the_lock_waits_for_it() {
    use std::os::fd::AsRawFd;
    let dir = scratch();
    drop(TrajectoryWriter::open(&dir).unwrap());
    // The child's copy of the lock: another open file on it, locked, let go 100 ms later.
    let held = std::fs::File::open(dir.join(LOCK_FILE)).unwrap();
    // SAFETY: flock on a descriptor the test owns.
    assert_eq!(
        unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let child = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(held);
    });
    let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
    child.join().unwrap();
    drop(writer);
    let pid = std::fs::read_to_string(dir.join(LOCK_FILE)).unwrap();
    assert_eq!(
        pid,
        std::process::id().to_string(),
        "the holder, written from the start"
    );
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
        messages[0].ends_with("steps.jsonl:3: not JSON: key must be a string at line 1 column 2"),
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
fn a_recording_is_readable_by_its_user_alone_whatever_the_umask() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        // The usual umask, which leaves new files readable by everyone; this process only.
        // SAFETY: umask changes no memory; the child runs this test alone.
        unsafe { libc::umask(0o022) };
        let (mut writer, _) = TrajectoryWriter::open(&dir).unwrap();
        writer
            .append_step(&step(&writer, "ep-1", 1, false))
            .unwrap();
        writer.save_png(b"not a picture").unwrap();
        return;
    }
    let parent = scratch();
    let dir = parent.join("recordings").join("today");
    let status = child(
        "a_recording_is_readable_by_its_user_alone_whatever_the_umask",
        &dir,
    )
    .stdout(std::process::Stdio::null())
    .status()
    .unwrap();
    assert!(status.success());
    let mode = |path: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions())
            & 0o777
    };
    let mut seen = Vec::new();
    let mut folders = vec![parent.join("recordings")];
    while let Some(folder) = folders.pop() {
        assert_eq!(mode(&folder), 0o700, "{}", folder.display());
        seen.push(folder.clone());
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                assert_eq!(mode(&path), 0o600, "{}", path.display());
                seen.push(path);
            }
        }
    }
    // The folders, the lock, steps, episodes and two pictures.
    assert_eq!(seen.len(), 3 + 5, "{seen:?}");
    std::fs::remove_dir_all(parent).unwrap();
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
    use browserenv::models::BrowserAction;
    let click = |x| RecordEvent::Step {
        session: "s".into(),
        actor: None,
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
                person: None,
                observation: observed("https://a.example/", false),
            })
            .unwrap();
        recorder.record(click(1)).unwrap();
        let size = std::fs::metadata(dir.join(STEPS_FILE)).unwrap().len();
        // The disk fills up: 40 more bytes fit, not a step line.
        limit_file_size(Some(size + 40));
        let err = recorder.record(click(2)).unwrap_err().to_string();
        assert!(
            err.starts_with("step 2 of episode e1 was not recorded (the steps before it are): ")
                && err.contains("steps.jsonl: cannot append a line: File too large")
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
                actor: None,
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

fn observed(url: &str, done: bool) -> browserenv::models::StepResult {
    browserenv::models::StepResult {
        observation: browserenv::models::BrowserObservation {
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
    use browserenv::models::BrowserAction;
    let dir = scratch();
    let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
    let handle =
        RecorderHandle::spawn(Recorder::new(writer, Actor::Human), |err| panic!("{err}")).unwrap();
    let session = || "s1".to_string();
    handle.send(RecordEvent::Reset {
        session: session(),
        episode_id: "e1".into(),
        task: Some("t1".into()),
        person: None,
        observation: observed("https://a.example/", false),
    });
    handle.send(RecordEvent::Step {
        session: session(),
        actor: None,
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
        actor: None,
        action: BrowserAction::type_text("hunter2"),
        observation: observed("https://a.example/2", false),
        latency_ms: 50.0,
        recorded_text: Some("<secret:PASSWORD>".into()),
    });
    handle.send(RecordEvent::Step {
        session: session(),
        actor: None,
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
        person: None,
        observation: observed("https://b.example/", false),
    });
    handle.send(RecordEvent::Step {
        session: session(),
        actor: None,
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

/// A white RGB PNG of `width` x `height`.
fn white_png(width: u32, height: u32) -> Vec<u8> {
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    writer
        .write_image_data(&vec![255; (width * height * 3) as usize])
        .unwrap();
    writer.finish().unwrap();
    png
}

/// Which pixels of an RGB PNG are black, row by row ('#' black, '.' not).
fn black_pixels(png_bytes: &[u8]) -> Vec<String> {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).unwrap();
    pixels[..info.buffer_size()]
        .chunks(info.line_size)
        .map(|row| {
            row.chunks(3)
                .map(|p| if p == [0, 0, 0] { '#' } else { '.' })
                .collect()
        })
        .collect()
}

#[test]
fn masked_boxes_of_any_size_stay_inside_the_picture() {
    let png = white_png(4, 3);
    let (max, min) = (i64::MAX, i64::MIN);
    // Far outside, overflowing ends, negative and extreme sizes: nothing painted, no panic.
    let outside = [
        [max, max, max, max],
        [min, min, max, max],
        [min, min, min, min],
        [0, 0, min, min],
        [1, 1, -5, 1],
        [1, 1, 1, -5],
        [min, 0, max, 3],
        [0, max, 4, 1],
    ];
    assert_eq!(
        black_pixels(&browserenv::secrets::cover_boxes(&png, &outside).unwrap()),
        ["....", "....", "...."]
    );
    // Boxes that reach past the picture are painted up to its edge.
    let reaching = [[2, 1, max, 1], [-3, -1, 4, max], [3, 2, 1, max]];
    assert_eq!(
        black_pixels(&browserenv::secrets::cover_boxes(&png, &reaching).unwrap()),
        ["#...", "#.##", "#..#"]
    );
}

/// `Confirm` answers once everything sent before it is written: true for an episode on disk whole
/// (whoever asks can read it at once), false for one still open or never seen.
#[test]
fn the_recorder_confirms_an_episode_once_it_is_on_disk() {
    use browserenv::models::BrowserAction;
    let dir = scratch();
    let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
    let handle =
        RecorderHandle::spawn(Recorder::new(writer, Actor::Human), |err| panic!("{err}")).unwrap();
    let confirm = |episode: &str| {
        let (reply, answer) = std::sync::mpsc::channel();
        handle.send(RecordEvent::Confirm {
            episode_id: episode.into(),
            reply,
        });
        answer.recv_timeout(Duration::from_secs(10)).unwrap()
    };
    for (session, episode) in [("s1", "e1"), ("s2", "e2")] {
        handle.send(RecordEvent::Reset {
            session: session.into(),
            episode_id: episode.into(),
            task: None,
            person: None,
            observation: observed("https://a.example/", false),
        });
    }
    handle.send(RecordEvent::Step {
        session: "s1".into(),
        actor: None,
        action: BrowserAction::finish("42"),
        observation: observed("https://a.example/", true),
        latency_ms: 5.0,
        recorded_text: None,
    });
    assert!(confirm("e1"));
    let recording = read(&dir).unwrap();
    assert_eq!(recording.episode_steps("e1").len(), 1);
    assert!(recording.episodes.iter().any(|e| e.episode_id == "e1"));
    assert!(!confirm("e2"), "still open");
    assert!(!confirm("e3"), "never seen");
    handle.finish();
    let _ = std::fs::remove_dir_all(&dir);
}
