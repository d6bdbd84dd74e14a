//! Export, review and the viewer on a recording made with the recorder (synthetic frames, no
//! browser).

use std::path::{Path, PathBuf};

use base64::Engine;
use browserenv::models::{BrowserAction, BrowserObservation, StepResult};
use browserenv_collect::trajectory::{
    Actor, RecordEvent, Recorder, RecorderHandle, TrajectoryWriter,
};
use browserenv_tui::graphics::Graphics;
use browserenv_tui::offline::export::{export, ExportFormat, ExportReport, Selection};
use browserenv_tui::offline::viewer::{draw, mark_action, Viewer};
use browserenv_tui::review::{self, Change, Mark, Quality, ReviewLog, REVIEW_FILE};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use image::{DynamicImage, Rgb, RgbImage};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn frame(shade: u8) -> String {
    let image = DynamicImage::ImageRgb8(RgbImage::from_pixel(800, 600, Rgb([shade, shade, 255])));
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(png)
}

fn observed(url: &str, shade: u8, done: bool) -> StepResult {
    StepResult {
        observation: BrowserObservation {
            metadata: Default::default(),
            screenshot: frame(shade),
            url: url.into(),
            error: String::new(),
        },
        reward: Some(0.0),
        done,
    }
}

fn recording() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "browserenv-tui-recordings-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    record_into(&dir);
    dir
}

fn record_into(dir: &Path) {
    let (writer, _) = TrajectoryWriter::open(dir).unwrap();
    let handle =
        RecorderHandle::spawn(Recorder::new(writer, Actor::Human), |err| panic!("{err}")).unwrap();
    let session = || "s".to_string();
    handle.send(RecordEvent::Reset {
        session: session(),
        episode_id: "episode-one".into(),
        task: None,
        person: None,
        observation: observed("https://a.example/", 10, false),
    });
    handle.send(RecordEvent::Step {
        session: session(),
        actor: None,
        action: BrowserAction::click(10, 20),
        observation: observed("https://a.example/2", 90, false),
        latency_ms: 80.0,
        recorded_text: None,
    });
    handle.send(RecordEvent::Step {
        session: session(),
        actor: None,
        action: BrowserAction::scroll(300),
        observation: observed("https://a.example/2", 170, false),
        latency_ms: 70.0,
        recorded_text: None,
    });
    handle.send(RecordEvent::Step {
        session: session(),
        actor: None,
        action: BrowserAction::finish("ok"),
        observation: observed("https://a.example/2", 170, true),
        latency_ms: 5.0,
        recorded_text: None,
    });
    handle.finish();
}

/// A second episode in `dir`, after the first: a wait and a scroll, then the session ends
/// (recorded as abandoned).
fn record_second_episode(dir: &Path) {
    let (writer, _) = TrajectoryWriter::open(dir).unwrap();
    let handle =
        RecorderHandle::spawn(Recorder::new(writer, Actor::Human), |err| panic!("{err}")).unwrap();
    let session = || "t".to_string();
    handle.send(RecordEvent::Reset {
        session: session(),
        episode_id: "episode-two".into(),
        task: None,
        person: None,
        observation: observed("https://b.example/", 40, false),
    });
    handle.send(RecordEvent::Step {
        session: session(),
        actor: None,
        action: BrowserAction::wait(),
        observation: observed("https://b.example/", 40, false),
        latency_ms: 1000.0,
        recorded_text: None,
    });
    handle.send(RecordEvent::Step {
        session: session(),
        actor: None,
        action: BrowserAction::scroll(200),
        observation: observed("https://b.example/", 60, false),
        latency_ms: 60.0,
        recorded_text: None,
    });
    handle.send(RecordEvent::End { session: session() });
    handle.finish();
}

fn export_hf(dir: &Path, out: &Path) -> anyhow::Result<ExportReport> {
    export(dir, out, ExportFormat::Hf, &Selection::default())
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn keys(viewer: &mut Viewer, text: &str) {
    for c in text.chars() {
        assert!(viewer.on_key(key(KeyCode::Char(c))), "{c} ended the viewer");
    }
}

fn screen(viewer: &mut Viewer) -> String {
    let mut terminal = Terminal::new(TestBackend::new(140, 40)).unwrap();
    draw(&mut terminal, viewer, None).unwrap();
    format!("{}", terminal.backend())
}

fn lines_of(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[test]
fn export_writes_an_imagefolder() {
    let dir = recording();
    let out = dir.join("export");
    let report = export_hf(&dir, &out).unwrap();
    assert_eq!(report.rows, 3);
    assert_eq!(report.images, 3, "three distinct frames, each copied once");
    assert!(report.problems.is_empty());
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(out.join("metadata.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    for row in &rows {
        let image = row["file_name"].as_str().unwrap();
        assert!(
            image.starts_with("images/") && out.join(image).is_file(),
            "{row}"
        );
    }
    assert_eq!(
        (rows[0]["op"].as_str(), rows[0]["x"].as_i64()),
        (Some("click"), Some(10))
    );
    assert_eq!(rows[1]["dy"], 300);
    assert_eq!(rows[2]["outcome"], "finished");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_viewer_lists_steps_and_draws_the_action() {
    let dir = recording();
    let mut viewer = Viewer::open(&dir, Graphics::halfblocks(), None).unwrap();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    draw(&mut terminal, &mut viewer, None).unwrap();
    let screen = format!("{}", terminal.backend());
    assert!(screen.contains("3 steps, 1 episodes, 0 marked"), "{screen}");
    assert!(screen.contains("episode- #1  click 10 20"), "{screen}");
    assert!(
        screen.contains("https://a.example/ → https://a.example/2"),
        "{screen}"
    );
    viewer.select(1);
    draw(&mut terminal, &mut viewer, None).unwrap();
    let screen = format!("{}", terminal.backend());
    assert!(screen.contains("\"op\":\"scroll\""), "{screen}");
    viewer.select(10);
    assert_eq!(viewer.selected, 2, "clamped to the last step");

    // The click is drawn where it happened.
    let step = &viewer.recording.steps[0];
    let before = image::open(dir.join(&step.file_name)).unwrap();
    let marked = mark_action(&before, step).to_rgb8();
    assert_eq!(marked.get_pixel(10, 20).0, [230, 20, 20]);
    assert_ne!(marked.get_pixel(100, 100).0, [230, 20, 20]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A recording (in `BASE/rec`) whose steps.jsonl, after the 3 recorded steps, names frames
/// outside it: by path, and by symlinks under screenshots/ with valid names. `BASE/outside.png`
/// is a real picture, so a reader that followed a name would show or copy it. Returns the base.
fn hostile_recording() -> PathBuf {
    use std::os::unix::fs::symlink;
    let base = std::env::temp_dir().join(format!(
        "browserenv-tui-hostile-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    let dir = base.join("rec");
    record_into(&dir);
    let outside = base64::engine::general_purpose::STANDARD
        .decode(frame(250))
        .unwrap();
    std::fs::write(base.join("outside.png"), outside).unwrap();
    let to_outside = format!("screenshots/{}.png", "ab".repeat(32));
    symlink(base.join("outside.png"), dir.join(&to_outside)).unwrap();
    let to_passwd = format!("screenshots/{}.png", "cd".repeat(32));
    symlink("/etc/passwd", dir.join(&to_passwd)).unwrap();
    let steps_path = dir.join("steps.jsonl");
    let text = std::fs::read_to_string(&steps_path).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let good = first["file_name"].as_str().unwrap().to_string();
    let passwd = format!("{}etc/passwd", "../".repeat(12));
    let hostile = [
        ("../outside.png", good.as_str()),
        ("/etc/passwd", good.as_str()),
        (passwd.as_str(), good.as_str()),
        (to_outside.as_str(), good.as_str()),
        (good.as_str(), "/etc/passwd"),
        (to_passwd.as_str(), good.as_str()),
    ];
    let mut lines = text;
    for (n, (before, after)) in hostile.iter().enumerate() {
        let mut line = first.clone();
        line["episode_id"] = serde_json::json!("hostile");
        line["step"] = serde_json::json!(n + 1);
        line["file_name"] = serde_json::json!(before);
        line["next_file_name"] = serde_json::json!(after);
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(&steps_path, lines).unwrap();
    base
}

#[test]
fn export_copies_nothing_from_outside_the_recording() {
    let base = hostile_recording();
    let dir = base.join("rec");
    let out = base.join("export");
    let report = export_hf(&dir, &out).unwrap();
    assert_eq!(report.images, 3, "the recorded frames only");
    // The 3 recorded rows and the one whose frame before is its own (its frame after is not).
    assert_eq!(report.rows, 4, "{:#?}", report.problems);
    assert_eq!(report.problems.len(), 6, "{:#?}", report.problems);
    for (problem, line) in report.problems.iter().zip(4..) {
        assert!(
            problem.contains(&format!("steps.jsonl:{line}: step {} ", line - 3))
                && problem.contains("is refused"),
            "{problem}"
        );
    }
    let outside = std::fs::read(base.join("outside.png")).unwrap();
    let passwd = std::fs::read("/etc/passwd").unwrap();
    let images: Vec<PathBuf> = std::fs::read_dir(out.join("images"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(images.len(), 3);
    for image in &images {
        let bytes = std::fs::read(image).unwrap();
        assert!(bytes != outside && bytes != passwd, "{}", image.display());
        assert!(!std::fs::symlink_metadata(image).unwrap().is_symlink());
    }
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(out.join("metadata.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let hostile: Vec<_> = rows
        .iter()
        .filter(|r| r["episode_id"] == "hostile")
        .collect();
    assert_eq!(hostile.len(), 1);
    assert_eq!(hostile[0]["step"], 5);
    assert_eq!(
        hostile[0]["next_image_file_name"], "",
        "the refused frame after"
    );
    for row in &rows {
        for column in ["file_name", "next_image_file_name"] {
            let name = row[column].as_str().unwrap();
            assert!(name.is_empty() || out.join(name).is_file(), "{row}");
        }
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn export_leaves_out_a_frame_whose_bytes_are_not_what_its_name_says() {
    let dir = recording();
    let steps = browserenv_collect::trajectory::read(&dir).unwrap().steps;
    // The frame after the first step (the second step's frame before) is swapped.
    let swapped = steps[0].next_file_name.clone();
    let other = base64::engine::general_purpose::STANDARD
        .decode(frame(33))
        .unwrap();
    std::fs::write(dir.join(&swapped), other).unwrap();
    let out = dir.join("export");
    let report = export_hf(&dir, &out).unwrap();
    assert_eq!(report.problems.len(), 1, "{:#?}", report.problems);
    assert!(
        report.problems[0].contains(&format!(
            "step 1 of episode episode-one: screenshot {swapped} does not hold the picture its \
             name says"
        )),
        "{}",
        report.problems[0]
    );
    // Step 2, whose frame before it is, is left out; step 1 keeps its row without the frame after.
    assert_eq!((report.rows, report.images), (2, 2));
    let exported = swapped.replace("screenshots/", "images/");
    assert!(!out.join(exported).exists());
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(out.join("metadata.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        (rows[0]["step"].as_u64(), rows[1]["step"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(rows[0]["next_image_file_name"], "");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_viewer_shows_no_frame_from_outside_the_recording() {
    let base = hostile_recording();
    let dir = base.join("rec");
    let mut viewer = Viewer::open(&dir, Graphics::halfblocks(), None).unwrap();
    assert_eq!(viewer.recording.steps.len(), 9);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    draw(&mut terminal, &mut viewer, None).unwrap();
    let screen = format!("{}", terminal.backend());
    assert!(!screen.contains("(no screenshot)"), "{screen}");
    assert!(screen.contains("6 problem(s): "), "{screen}");
    // "../outside.png", then a valid name that is a symlink to the same picture: the frame
    // before is refused both times; the frame after is the recording's own.
    for selected in [3, 6] {
        viewer.select(selected - viewer.selected as i64);
        draw(&mut terminal, &mut viewer, None).unwrap();
        let screen = format!("{}", terminal.backend());
        assert_eq!(
            screen.matches("(no screenshot)").count(),
            1,
            "step {selected}: {screen}"
        );
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn review_events_round_trip_and_the_last_one_wins() {
    let dir = recording();
    assert!(
        review::read(&dir).unwrap().steps.is_empty(),
        "no file, no review"
    );
    let mut log = ReviewLog::new(&dir, Some("alice".into()));
    let changes = [
        ("episode-one", Some(1), Change::Mark(Some(Mark::Wrong))),
        ("episode-one", Some(1), Change::Mark(Some(Mark::Good))),
        ("episode-one", Some(2), Change::Mark(Some(Mark::Redundant))),
        (
            "episode-one",
            Some(2),
            Change::Note("scrolled too far".into()),
        ),
        ("episode-one", Some(3), Change::Mark(Some(Mark::Good))),
        ("episode-one", Some(3), Change::Mark(None)),
        ("episode-one", None, Change::Quality(Some(Quality::Bad))),
        ("episode-one", None, Change::Quality(Some(Quality::Good))),
        (
            "episode-one",
            None,
            Change::Outcome(Some(browserenv_collect::trajectory::Outcome::Failed)),
        ),
    ];
    for (episode, step, change) in changes.clone() {
        log.record(episode, step, change).unwrap();
    }
    let path = dir.join(REVIEW_FILE);
    let lines = lines_of(&path);
    assert_eq!(
        lines.len(),
        changes.len(),
        "one self-contained line per change"
    );
    assert_eq!(lines[0]["schema"], "browserenv.review.v1");
    assert_eq!(lines[0]["episode_id"], "episode-one");
    assert_eq!(lines[0]["step"], 1);
    assert_eq!(lines[0]["field"], "mark");
    assert_eq!(lines[0]["value"], "wrong");
    assert_eq!(lines[0]["reviewer"], "alice");
    assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(lines[5]["value"], serde_json::Value::Null, "a cleared mark");
    assert!(
        lines[6].get("step").is_none(),
        "an episode's field: {}",
        lines[6]
    );

    let read = review::read(&dir).unwrap();
    assert!(read.problems.is_empty(), "{:?}", read.problems);
    let steps = browserenv_collect::trajectory::read(&dir).unwrap().steps;
    assert_eq!(
        read.mark(&steps[0]),
        Some(Mark::Good),
        "the later mark wins"
    );
    assert_eq!(read.mark(&steps[1]), Some(Mark::Redundant));
    assert_eq!(read.note(&steps[1]).as_deref(), Some("scrolled too far"));
    assert_eq!(read.mark(&steps[2]), None, "cleared");
    assert_eq!(read.quality("episode-one"), Some(Quality::Good));
    assert_eq!(
        read.outcome(
            "episode-one",
            Some(browserenv_collect::trajectory::Outcome::Finished)
        ),
        Some(browserenv_collect::trajectory::Outcome::Failed)
    );
    assert_eq!(
        read.episode("episode-one").reviewer.as_deref(),
        Some("alice")
    );

    // Bad lines are reported with their line and skipped; the good ones around them count.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("not json\n");
    text.push_str(r#"{"schema":"other","episode_id":"episode-one","field":"quality","value":"bad","time":"t"}"#);
    text.push('\n');
    text.push_str(r#"{"schema":"browserenv.review.v1","time":"t","episode_id":"episode-one","field":"mark","value":"bad"}"#);
    text.push('\n');
    text.push_str(r#"{"schema":"browserenv.review.v1","time":"t","episode_id":"episode-one","field":"quality","value":"unsure","step":2}"#);
    text.push('\n');
    text.push_str(r#"{"schema":"browserenv.review.v1","time":"t","episode_id":"episode-one","field":"mark","value":"wrong"}"#);
    text.push('\n');
    text.push_str(r#"{"schema":"browserenv.review.v1","time":"t","episode_id":"episode-one","step":1,"field":"colour","value":"red"}"#);
    text.push('\n');
    // A writer stopped mid-line.
    text.push_str(r#"{"schema":"browserenv.review.v1","time":"t","episode_id":"epi"#);
    std::fs::write(&path, &text).unwrap();
    let read = review::read(&dir).unwrap();
    let problems: Vec<String> = read.problems.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 7, "{problems:#?}");
    for (problem, line) in problems.iter().zip(10..) {
        assert!(
            problem.starts_with(&format!("{}:{line}: ", path.display())),
            "{problem}"
        );
    }
    assert!(
        problems[1].contains("schema is \"other\""),
        "{}",
        problems[1]
    );
    assert!(
        problems[3].contains("an episode's field with a step"),
        "{}",
        problems[3]
    );
    assert!(
        problems[4].contains("a step's field without a step"),
        "{}",
        problems[4]
    );
    assert!(
        problems[6].contains("unfinished last line"),
        "{}",
        problems[6]
    );
    assert_eq!(
        read.quality("episode-one"),
        Some(Quality::Good),
        "bad lines change nothing"
    );
    assert_eq!(read.mark(&steps[0]), Some(Mark::Good));

    // The next change starts on a line of its own; the half line stays (it is reported).
    let before = std::fs::read(&path).unwrap();
    let mut log = ReviewLog::new(&dir, None);
    for (step, change) in [
        (None, Change::Mark(Some(Mark::Good))),
        (Some(1), Change::Quality(Some(Quality::Good))),
    ] {
        let err = log.record("episode-one", step, change).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "a misplaced field is never written"
    );
    log.record("episode-one", Some(3), Change::Mark(Some(Mark::Wrong)))
        .unwrap();
    let after = std::fs::read(&path).unwrap();
    assert!(
        after.starts_with(&before),
        "nothing already there is rewritten"
    );
    let read = review::read(&dir).unwrap();
    assert_eq!(read.mark(&steps[2]), Some(Mark::Wrong));
    assert_eq!(read.problems.len(), 7);
    assert!(read.problems[6].to_string().contains("not JSON"));
    assert!(
        !String::from_utf8_lossy(&after)
            .lines()
            .last()
            .unwrap()
            .contains("reviewer"),
        "no reviewer known, none written"
    );

    // The recording's own files are never touched by a review.
    let steps_after = browserenv_collect::trajectory::read(&dir).unwrap().steps;
    assert_eq!(steps, steps_after);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_review_file_that_is_a_symlink_is_neither_read_nor_written() {
    use std::os::unix::fs::symlink;
    let dir = recording();
    let elsewhere = dir.join("elsewhere.jsonl");
    std::fs::write(
        &elsewhere,
        r#"{"schema":"browserenv.review.v1","time":"t","episode_id":"episode-one","field":"quality","value":"good"}
"#,
    )
    .unwrap();
    symlink(&elsewhere, dir.join(REVIEW_FILE)).unwrap();
    let read = review::read(&dir).unwrap();
    assert_eq!(read.quality("episode-one"), None);
    assert_eq!(read.problems.len(), 1);
    assert!(
        read.problems[0].to_string().contains("is a symlink"),
        "{:?}",
        read.problems
    );
    let mut log = ReviewLog::new(&dir, None);
    let err = log
        .record("episode-one", None, Change::Quality(Some(Quality::Bad)))
        .unwrap_err();
    assert!(err.to_string().contains("symlink"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&elsewhere).unwrap().lines().count(),
        1
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn review_keys_in_the_viewer_append_events_that_show_when_viewing_again() {
    let dir = recording();
    record_second_episode(&dir);
    let mut viewer = Viewer::open(&dir, Graphics::halfblocks(), Some("bob".into())).unwrap();
    assert_eq!(viewer.recording.steps.len(), 5);
    let shown = screen(&mut viewer);
    assert!(shown.contains("5 steps, 2 episodes, 0 marked"), "{shown}");
    assert!(
        shown.contains("g/w/r good/wrong/redundant"),
        "the keys are on the help line: {shown}"
    );
    assert!(!dir.join(REVIEW_FILE).exists(), "looking writes nothing");

    // g marks step 1 good and moves on; r marks step 2 redundant and moves on.
    keys(&mut viewer, "gr");
    assert_eq!(viewer.selected, 2);
    // A note on step 3: n, text, Enter. Then one that is cancelled.
    keys(&mut viewer, "n");
    keys(&mut viewer, "ok, done");
    assert!(screen(&mut viewer).contains("note> ok, done█"));
    viewer.on_key(key(KeyCode::Backspace));
    keys(&mut viewer, "E");
    assert!(viewer.on_key(key(KeyCode::Enter)));
    keys(&mut viewer, "nq");
    assert!(
        viewer.on_key(key(KeyCode::Esc)),
        "Esc cancels the editor, not the viewer"
    );
    assert_eq!(viewer.editing, None);
    // The episode: quality good, outcome cycled once from finished.
    keys(&mut viewer, "GO");
    // The next episode ([ ] move between episodes): wrong on its first step, quality unsure.
    keys(&mut viewer, "]");
    assert_eq!(
        viewer.recording.steps[viewer.selected].episode_id,
        "episode-two"
    );
    keys(&mut viewer, "wU[");
    assert_eq!(viewer.selected, 0, "[ goes back to the previous episode");

    let events = lines_of(&dir.join(REVIEW_FILE));
    let fields: Vec<(String, Option<u64>, String, serde_json::Value)> = events
        .iter()
        .map(|e| {
            (
                e["episode_id"].as_str().unwrap().to_string(),
                e["step"].as_u64(),
                e["field"].as_str().unwrap().to_string(),
                e["value"].clone(),
            )
        })
        .collect();
    let expected = [
        ("episode-one", Some(1), "mark", "good"),
        ("episode-one", Some(2), "mark", "redundant"),
        ("episode-one", Some(3), "note", "ok, donE"),
        ("episode-one", None, "quality", "good"),
        ("episode-one", None, "outcome", "step_limit"),
        ("episode-two", Some(1), "mark", "wrong"),
        ("episode-two", None, "quality", "unsure"),
    ];
    assert_eq!(fields.len(), expected.len(), "{fields:#?}");
    for (got, want) in fields.iter().zip(expected) {
        assert_eq!(
            (got.0.as_str(), got.1, got.2.as_str(), got.3.as_str()),
            (want.0, want.1, want.2, Some(want.3))
        );
    }
    assert!(events.iter().all(|e| e["reviewer"] == "bob"));

    // Viewing again shows all of it.
    let mut again = Viewer::open(&dir, Graphics::halfblocks(), None).unwrap();
    let shown = screen(&mut again);
    assert!(shown.contains("5 steps, 2 episodes, 3 marked"), "{shown}");
    assert!(shown.contains("✓  episode- #1  click 10 20"), "{shown}");
    assert!(shown.contains("≡  episode- #2  scroll 300"), "{shown}");
    assert!(shown.contains(" ✎ episode- #3  finish ok"), "{shown}");
    assert!(shown.contains("✗  episode- #1  wait"), "{shown}");
    assert!(shown.contains("step: mark good"), "{shown}");
    assert!(
        shown.contains(
            "episode episode-one: quality good  outcome step_limit (recorded finished)  by bob"
        ),
        "{shown}"
    );
    again.select(2);
    let shown = screen(&mut again);
    assert!(
        shown.contains("step: unmarked  note (edited): ok, donE"),
        "{shown}"
    );
    again.select(1);
    let shown = screen(&mut again);
    assert!(
        shown.contains("episode episode-two: quality unsure  outcome abandoned  by bob"),
        "{shown}"
    );
    // c clears a mark (and stays); C clears the episode's review.
    again.select(-10);
    keys(&mut again, "cC");
    assert_eq!(again.selected, 0);
    let shown = screen(&mut again);
    assert!(shown.contains("step: unmarked"), "{shown}");
    assert!(
        shown.contains("quality not reviewed  outcome finished"),
        "{shown}"
    );
    assert!(!again.on_key(key(KeyCode::Char('q'))), "q ends the viewer");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The reviewed recording of `review_keys_…`, written through the log.
fn reviewed_recording() -> PathBuf {
    let dir = recording();
    record_second_episode(&dir);
    let mut log = ReviewLog::new(&dir, Some("carol".into()));
    for (episode, step, change) in [
        ("episode-one", Some(1), Change::Mark(Some(Mark::Good))),
        ("episode-one", Some(2), Change::Mark(Some(Mark::Redundant))),
        ("episode-one", Some(3), Change::Note("answered".into())),
        ("episode-one", None, Change::Quality(Some(Quality::Good))),
        (
            "episode-one",
            None,
            Change::Outcome(Some(browserenv_collect::trajectory::Outcome::Failed)),
        ),
        ("episode-two", None, Change::Quality(Some(Quality::Bad))),
    ] {
        log.record(episode, step, change).unwrap();
    }
    dir
}

#[test]
fn export_carries_the_review_and_keeps_only_what_passed() {
    let dir = reviewed_recording();
    // Everything, labelled.
    let out = dir.join("all");
    let report = export(&dir, &out, ExportFormat::Hf, &Selection::default()).unwrap();
    assert_eq!((report.rows, report.episodes_left_out), (5, 0));
    let rows = lines_of(&out.join("metadata.jsonl"));
    let column = |name: &str| -> Vec<String> {
        rows.iter()
            .map(|r| r[name].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(column("review_mark"), ["good", "redundant", "", "", ""]);
    assert_eq!(column("quality"), ["good", "good", "good", "bad", "bad"]);
    assert_eq!(
        column("outcome"),
        ["failed", "failed", "failed", "abandoned", "abandoned"]
    );
    assert_eq!(
        column("recorded_outcome"),
        ["finished", "finished", "finished", "abandoned", "abandoned"]
    );
    assert_eq!(column("note"), ["", "", "answered", "", ""]);
    assert_eq!(
        column("reviewer"),
        ["carol", "carol", "carol", "carol", "carol"]
    );

    // Only the episode reviewed good, without its redundant step.
    let selection = Selection {
        reviewed_only: true,
        drop_marked: vec![Mark::Redundant],
        episodes: None,
    };
    for format in [ExportFormat::Hf, ExportFormat::Jsonl] {
        let out = dir.join(format!("{format:?}"));
        let report = export(&dir, &out, format, &selection).unwrap();
        assert_eq!(
            (report.rows, report.episodes_left_out, report.steps_left_out),
            (2, 1, 1)
        );
        let (file, image, next) = match format {
            ExportFormat::Hf => ("metadata.jsonl", "file_name", "next_image_file_name"),
            _ => ("data.jsonl", "image", "next_image"),
        };
        let rows = lines_of(&out.join(file));
        let steps: Vec<_> = rows
            .iter()
            .map(|r| (r["episode_id"].clone(), r["step"].clone()))
            .collect();
        assert_eq!(
            steps,
            [
                ("episode-one".into(), 1.into()),
                ("episode-one".into(), 3.into())
            ]
        );
        for row in &rows {
            assert!(
                row.get("next_file_name").is_none(),
                "the recording's names are not exported"
            );
            for column in [image, next] {
                let name = row[column].as_str().unwrap();
                assert!(
                    name.starts_with("images/") && out.join(name).is_file(),
                    "{row}"
                );
            }
        }
        assert_eq!(rows[1]["note"], "answered");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn atif_export_writes_a_trajectory_per_episode_with_image_parts() {
    let dir = reviewed_recording();
    let out = dir.join("atif");
    let report = export(&dir, &out, ExportFormat::Atif, &Selection::default()).unwrap();
    assert_eq!((report.trajectories, report.rows), (2, 5));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let names: Vec<_> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["0001-episode-one.json", "0002-episode-two.json"]);
    let document: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(document["schema_version"], "ATIF-v1.8");
    assert_eq!(document["extra"]["quality"], "good");
    assert_eq!(document["extra"]["outcome"], "failed");
    let steps = document["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[0]["tool_calls"][0]["function_name"], "click");
    assert_eq!(
        steps[0]["tool_calls"][0]["arguments"],
        serde_json::json!({"x": 10, "y": 20})
    );
    assert_eq!(steps[1]["extra"]["review_mark"], "redundant");
    // The tools the document's agent had are the server's MCP tools, one per op.
    let tools = document["agent"]["tool_definitions"].as_array().unwrap();
    assert_eq!(tools.len(), browserenv::models::Op::ALL.len());
    for (tool, op) in tools.iter().zip(browserenv::models::Op::ALL) {
        assert_eq!(tool["function"]["name"], op.name());
        assert_eq!(
            tool["function"]["parameters"],
            browserenv::models::action_tool_schema(op)
        );
    }
    let image = &steps[0]["message"][1];
    assert_eq!(image["type"], "image");
    let path = image["source"]["path"].as_str().unwrap();
    assert!(files[0].parent().unwrap().join(path).is_file(), "{path}");
    let after = &steps[0]["observation"]["results"][0]["content"][1];
    assert_eq!(after["source"]["media_type"], "image/png");

    // Dropped steps: the ids stay sequential, the note says why fewer.
    let out = dir.join("atif-reviewed");
    let selection = Selection {
        reviewed_only: true,
        drop_marked: vec![Mark::Redundant],
        episodes: None,
    };
    let report = export(&dir, &out, ExportFormat::Atif, &selection).unwrap();
    assert_eq!((report.trajectories, report.rows), (1, 2));
    let document: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("0001-episode-one.json")).unwrap()).unwrap();
    let ids: Vec<_> = document["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_id"].clone())
        .collect();
    assert_eq!(ids, [1, 2]);
    assert_eq!(document["steps"][1]["extra"]["step"], 3);
    assert_eq!(document["final_metrics"]["total_steps"], 3);
    assert!(document["notes"]
        .as_str()
        .unwrap()
        .contains("1 of the 3 recorded steps were left out"));
    std::fs::remove_dir_all(&dir).unwrap();
}
