//! What the subcommands print about a recording, through the real binary: a recording is untrusted
//! input, and its text must not reach the person's terminal as escape sequences.

use std::path::PathBuf;
use std::process::{Command, Output};

use base64::Engine;
use browserenv::models::{BrowserAction, BrowserObservation, StepResult};
use browserenv_collect::trajectory::{
    read, Actor, RecordEvent, Recorder, RecorderHandle, TrajectoryWriter,
};
use image::{DynamicImage, Rgb, RgbImage};

const TUI: &str = env!("CARGO_BIN_EXE_browserenv-tui");

/// OSC 52 (writes the clipboard), CSI 2J (clears the screen) and the one-character C1 CSI.
const HOSTILE: &str = "\x1b]52;c;aGk=\x07\x1b[2J\u{9b}";
/// `HOSTILE` as printed: every character still there, none of them a control.
const SHOWN: &str = "\\u001b]52;c;aGk=\\u0007\\u001b[2J\\u009b";

fn png(shade: u8) -> Vec<u8> {
    let image = DynamicImage::ImageRgb8(RgbImage::from_pixel(800, 600, Rgb([shade, shade, 255])));
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    png
}

fn observed(url: &str, shade: u8, done: bool) -> StepResult {
    StepResult {
        observation: BrowserObservation {
            metadata: Default::default(),
            screenshot: base64::engine::general_purpose::STANDARD.encode(png(shade)),
            url: url.into(),
            error: String::new(),
        },
        reward: Some(0.0),
        done,
    }
}

/// A recording whose episode id, task, URLs, typed text, answer and note carry `HOSTILE`, with
/// a frame that is not what its name says and a line whose actor is `HOSTILE` (both reported,
/// quoting what they found).
fn hostile_recording() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "browserenv-tui-reports-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
    let handle =
        RecorderHandle::spawn(Recorder::new(writer, Actor::Human), |err| panic!("{err}")).unwrap();
    let session = || "s".to_string();
    // Loopback: replay maps the origin onto its own demo site.
    let page = format!("http://127.0.0.1:9/index.html#{HOSTILE}");
    handle.send(RecordEvent::Reset {
        session: session(),
        episode_id: format!("episode-{HOSTILE}"),
        task: Some(format!("task-{HOSTILE}")),
        person: Some(format!("person-{HOSTILE}")),
        observation: observed(&page, 10, false),
    });
    let steps = [
        (BrowserAction::click(10, 20), 90, false),
        (BrowserAction::type_text(format!("hi{HOSTILE}")), 170, false),
        (BrowserAction::finish(format!("answer{HOSTILE}")), 170, true),
    ];
    for (action, shade, done) in steps {
        handle.send(RecordEvent::Step {
            session: session(),
            actor: None,
            action,
            observation: observed(&format!("{page}-{shade}"), shade, done),
            latency_ms: 50.0,
            recorded_text: None,
        });
        if shade == 90 {
            handle.send(RecordEvent::Note {
                session: session(),
                note: format!("note-{HOSTILE}"),
            });
        }
    }
    handle.finish();

    let recording = read(&dir).unwrap();
    assert!(recording.problems.is_empty(), "{:?}", recording.problems);
    assert_eq!(recording.steps[0].episode_id, format!("episode-{HOSTILE}"));
    std::fs::write(dir.join(&recording.steps[0].next_file_name), png(200)).unwrap();
    let mut line: serde_json::Value =
        serde_json::to_value(&recording.steps[2]).expect("a step record");
    line["actor"] = HOSTILE.into();
    let steps_path = dir.join("steps.jsonl");
    let mut steps = std::fs::read_to_string(&steps_path).unwrap();
    steps.push_str(&format!("{line}\n"));
    std::fs::write(&steps_path, steps).unwrap();
    dir
}

fn run(args: &[&str]) -> Output {
    Command::new(TUI)
        .args(args)
        .env_remove("BROWSERENV_SERVER")
        .output()
        .unwrap()
}

/// Nothing a terminal acts on (C0 but newline and tab, DEL, C1) in stdout and stderr, and every
/// one of `expected` in them.
fn assert_printable(what: &str, output: &Output, expected: &[String]) {
    let mut text = String::new();
    for stream in [&output.stdout, &output.stderr] {
        let stream = String::from_utf8(stream.clone()).expect("printed text is UTF-8");
        let controls: Vec<char> = stream
            .chars()
            .filter(|c| c.is_control() && !matches!(c, '\n' | '\t'))
            .collect();
        assert!(
            controls.is_empty(),
            "{what} printed control characters {controls:?}:\n{stream}"
        );
        text.push_str(&stream);
    }
    for fragment in expected {
        assert!(
            text.contains(fragment.as_str()),
            "{what}: no {fragment:?} in\n{text}"
        );
    }
}

#[test]
fn replay_prints_no_escape_sequence_from_a_recording() {
    let dir = hostile_recording();
    let output = run(&["replay", dir.to_str().unwrap()]);
    assert_printable(
        "replay",
        &output,
        &[
            format!("episode episode-{SHOWN} (3 steps) from http://127.0.0.1:9/index.html#{SHOWN}"),
            format!("type hi{SHOWN}"),
            format!("finish answer{SHOWN}"),
            format!("unknown variant `{SHOWN}`"),
            "replayed 1 episode(s), 3 step(s)".into(),
        ],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn export_prints_no_escape_sequence_from_a_recording() {
    let dir = hostile_recording();
    for format in ["hf", "jsonl", "atif"] {
        let out = dir.join(format!("export-{format}"));
        let output = run(&[
            "export",
            dir.to_str().unwrap(),
            "--format",
            format,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{format}: {output:?}");
        assert_printable(
            format,
            &output,
            &[
                format!("of episode episode-{SHOWN}: screenshot"),
                format!("unknown variant `{SHOWN}`"),
                "exported".into(),
            ],
        );
    }
    // The dataset keeps the recording's text as it was: it is data, not a terminal's output.
    let rows = std::fs::read_to_string(dir.join("export-jsonl/data.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(rows.lines().next().unwrap()).unwrap();
    assert_eq!(first["episode_id"], format!("episode-{HOSTILE}"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refused_task_file_prints_no_escape_sequence() {
    let dir = std::env::temp_dir().join(format!(
        "browserenv-tui-reports-tasks-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tasks.jsonl");
    let task = |id: &str| {
        serde_json::json!({"id": id, "category": "information", "instruction": HOSTILE,
            "start_url": "index.html", "max_steps": 0, "check": {"answer": {"match": "exact", "value": "x"}}})
    };
    std::fs::write(
        &file,
        format!(
            "{}\n{}\n",
            task(&format!("one{HOSTILE}")),
            task(&format!("two{HOSTILE}"))
        ),
    )
    .unwrap();
    // Refused at start, and by `tasks check`: one problem a line, as the task file's reader
    // lists them.
    for args in [
        vec!["--tasks", file.to_str().unwrap()],
        vec!["tasks", "check", file.to_str().unwrap()],
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        assert_printable(
            &args.join(" "),
            &output,
            &[
                format!(":1: task one{SHOWN}: max_steps must be 1..=200, got 0\n"),
                format!(":2: task two{SHOWN}: max_steps must be 1..=200, got 0\n"),
            ],
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `tasks check` on a good file says what it holds; on a file with a typo in a check, each
/// problem with its line.
#[test]
fn tasks_check_summarises_a_good_file_and_lists_a_bad_one_s_problems() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/tasks/demo.jsonl");
    let output = run(&["tasks", "check", demo]);
    assert!(output.status.success(), "{output:?}");
    let summary = String::from_utf8(output.stdout).unwrap();
    assert!(summary.contains(": 20 tasks, split \"demo\" (7 information, 5 navigation, 8 interaction); checks: answer 7, url 7,"), "{summary}");
    let dir =
        std::env::temp_dir().join(format!("browserenv-tui-tasks-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("team.jsonl");
    let good = r#"{"id":"ok","category":"interaction","instruction":"x","start_url":"a.html","check":{"cookie":{"name":"c"}}}"#;
    let typo = r#"{"id":"typo","category":"interaction","instruction":"x","start_url":"a.html","check":{"cookie":{"nmae":"c"}}}"#;
    let empty = r#"{"id":"empty","category":"interaction","instruction":"x","start_url":"a.html","check":{"any_of":[{}]}}"#;
    std::fs::write(&file, format!("{good}\n\n{typo}\n{empty}\n")).unwrap();
    let output = run(&["tasks", "check", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let problems = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<&str> = problems.lines().collect();
    assert_eq!(lines.len(), 2, "{problems}");
    assert!(
        lines[0].contains("team.jsonl:3: unknown field `nmae`, expected `name` or `value` (column"),
        "{problems}"
    );
    assert!(
        lines[1].contains(
            "team.jsonl:4: task empty: check.any_of[0] needs at least one of answer, url,"
        ),
        "{problems}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
