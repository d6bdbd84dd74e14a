//! `view` on a person's gestures: a drag's path drawn over the frame it started on, and a press
//! step named by its chord (synthetic frames, the real recorder and viewer; no browser).

use std::path::PathBuf;

use base64::Engine;
use browserenv::models::{
    BrowserAction, BrowserObservation, Chord, Modifier, Modifiers, MouseButton, StepResult,
};
use browserenv_collect::trajectory::{
    Actor, RecordEvent, Recorder, RecorderHandle, TrajectoryWriter,
};
use browserenv_tui::graphics::Graphics;
use browserenv_tui::offline::viewer::{draw, mark_action, Viewer};
use image::{DynamicImage, Rgb, RgbImage};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

const RED: [u8; 3] = [230, 20, 20];

fn observed(url: &str) -> StepResult {
    let image = DynamicImage::ImageRgb8(RgbImage::from_pixel(800, 600, Rgb([250, 250, 250])));
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    StepResult {
        observation: BrowserObservation {
            metadata: Default::default(),
            screenshot: base64::engine::general_purpose::STANDARD.encode(png),
            url: url.into(),
            error: String::new(),
        },
        reward: Some(0.0),
        done: false,
    }
}

/// A person's recording: a reset, a drag along an L, a chord pressed three times, a double
/// right click with SHIFT, a hover.
fn recording(actions: &[BrowserAction]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "browserenv-tui-viewing-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
    let handle =
        RecorderHandle::spawn(Recorder::new(writer, Actor::Human), |err| panic!("{err}")).unwrap();
    handle.send(RecordEvent::Reset {
        session: "s".into(),
        episode_id: "episode-gestures".into(),
        task: None,
        person: None,
        observation: observed("https://a.example/"),
    });
    for action in actions {
        handle.send(RecordEvent::Step {
            session: "s".into(),
            actor: None,
            action: action.clone(),
            observation: observed("https://a.example/"),
            latency_ms: 50.0,
            recorded_text: None,
        });
    }
    handle.finish();
    dir
}

#[test]
fn the_viewer_draws_a_drags_path_and_names_the_chord() {
    let path = [(100, 300), (300, 300), (300, 500)];
    let shift = Modifiers::of(&[Modifier::Shift]);
    let dir = recording(&[
        BrowserAction::drag(path),
        BrowserAction::press_repeat(Chord::parse("shift+tab").unwrap(), 3),
        BrowserAction::click_with(50, 60, MouseButton::Right, 2, shift),
        BrowserAction::move_to(70, 20),
    ]);
    let mut viewer = Viewer::open(&dir, Graphics::halfblocks(), None).unwrap();
    let mut terminal = Terminal::new(TestBackend::new(140, 40)).unwrap();
    draw(&mut terminal, &mut viewer, None).unwrap();
    let screen = format!("{}", terminal.backend());
    // Each step named in the command line's words (as far as the list is wide): the path, the
    // chord, the click's kind; the selected drag's whole path in the detail line.
    assert!(screen.contains("#1  drag 100 300 300 300 3"), "{screen}");
    assert!(screen.contains("#2  press SHIFT+TAB 3 "), "{screen}");
    assert!(screen.contains("#3  click 50 60 right 2 SH"), "{screen}");
    assert!(screen.contains("#4  move 70 20 "), "{screen}");
    assert!(
        screen.contains(r#""op":"drag","path":[[100,300],[300,300],[300,500]]"#),
        "{screen}"
    );

    // The drag's frame carries its path: along both legs, a ring at the start, a cross at
    // the end; away from the path the frame is as it was.
    let step = &viewer.recording.steps[0];
    let before = image::open(dir.join(&step.file_name)).unwrap();
    let marked = mark_action(&before, step).to_rgb8();
    let red = |x: u32, y: u32| marked.get_pixel(x, y).0 == RED;
    for x in (110..300).step_by(10) {
        assert!(red(x, 300), "first leg at {x},300");
    }
    for y in (310..500).step_by(10) {
        assert!(red(300, y), "second leg at 300,{y}");
    }
    assert!(
        red(88, 300) && red(112, 300) && red(100, 288),
        "the start's ring"
    );
    assert!(red(280, 500) && red(300, 520), "the end's cross");
    for (x, y) in [(200, 200), (200, 400), (400, 300), (100, 500), (700, 100)] {
        assert!(!red(x, y), "{x},{y} is off the path");
    }
    // A press leaves its frame as it was.
    let press = &viewer.recording.steps[1];
    let frame = image::open(dir.join(&press.file_name)).unwrap();
    assert_eq!(mark_action(&frame, press).to_rgb8(), frame.to_rgb8());

    // The press step selected: its chord in the detail line.
    viewer.select(1);
    draw(&mut terminal, &mut viewer, None).unwrap();
    let screen = format!("{}", terminal.backend());
    assert!(
        screen.contains(r#""op":"press","repeat":3,"text":"SHIFT+TAB""#),
        "{screen}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
