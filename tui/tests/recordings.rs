//! Export and the viewer on a recording made with the recorder (synthetic frames, no browser).

use std::path::PathBuf;

use base64::Engine;
use browserenv::models::{BrowserAction, BrowserObservation, StepResult};
use browserenv::trajectory::{Actor, RecordEvent, Recorder, RecorderHandle, TrajectoryWriter};
use browserenv_tui::export::export_hf;
use browserenv_tui::graphics::Graphics;
use browserenv_tui::viewer::{draw, mark_action, Viewer};
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
    let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
    let handle =
        RecorderHandle::spawn(Recorder::new(writer, Actor::Human), |err| panic!("{err}")).unwrap();
    let session = || "s".to_string();
    handle.send(RecordEvent::Reset {
        session: session(),
        episode_id: "episode-one".into(),
        task: None,
        observation: observed("https://a.example/", 10, false),
    });
    handle.send(RecordEvent::Step {
        session: session(),
        action: BrowserAction::click(10, 20),
        observation: observed("https://a.example/2", 90, false),
        latency_ms: 80.0,
        recorded_text: None,
    });
    handle.send(RecordEvent::Step {
        session: session(),
        action: BrowserAction::scroll(300),
        observation: observed("https://a.example/2", 170, false),
        latency_ms: 70.0,
        recorded_text: None,
    });
    handle.send(RecordEvent::Step {
        session: session(),
        action: BrowserAction::finish("ok"),
        observation: observed("https://a.example/2", 170, true),
        latency_ms: 5.0,
        recorded_text: None,
    });
    handle.finish();
    dir
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
    let mut viewer = Viewer::open(&dir, Graphics::halfblocks()).unwrap();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    draw(&mut terminal, &mut viewer, None).unwrap();
    let screen = format!("{}", terminal.backend());
    assert!(screen.contains("3 steps, 1 episodes"), "{screen}");
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
