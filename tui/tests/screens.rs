//! Snapshots of the main screens, drawn with ratatui's TestBackend (symbols only; colours are not
//! part of a snapshot).

use std::sync::Arc;
use std::time::Duration;

use browserenv_tui::app::{App, KeyInput, Msg, Observed};
use browserenv_tui::graphics::Graphics;
use browserenv_tui::live::event_loop::render;
use browserenv_tui::screen::painter::Painter;
use image::{DynamicImage, Rgb, RgbImage};
use ratatui::backend::TestBackend;
use ratatui::layout::Size;
use ratatui::Terminal;

/// A page-like picture: white, a dark header bar and a dark box, so half-blocks show shapes.
fn page() -> Arc<DynamicImage> {
    let mut image = RgbImage::from_pixel(800, 600, Rgb([255, 255, 255]));
    for (x, y, pixel) in image.enumerate_pixels_mut() {
        let header = y < 60;
        let block = (100..400).contains(&x) && (200..350).contains(&y);
        if header || block {
            *pixel = Rgb([20, 20, 60]);
        }
    }
    Arc::new(DynamicImage::ImageRgb8(image))
}

fn observed(app: &mut App, error: &str, done: bool) {
    app.update(Msg::Connected);
    app.update(Msg::Observation(Observed {
        url: "http://127.0.0.1:8000/index.html".into(),
        title: "Harbor Hardware".into(),
        error: error.into(),
        done,
        step: 3,
        latency: Duration::from_millis(87),
        reward: Some(0.0),
        verdict: None,
        max_steps: None,
    }));
}

fn screen(app: &mut App, with_picture: bool) -> String {
    let backend = TestBackend::new(100, 30);
    let mut terminal = Terminal::new(backend).unwrap();
    let mut painter = Painter::new(Graphics::halfblocks());
    if with_picture {
        painter.slot.set_image(Some(page()));
        painter.encode_now(app, Size::new(100, 30));
    }
    render(&mut terminal, app, &mut painter, None).unwrap();
    format!("{}", terminal.backend())
}

fn app() -> App {
    let mut app = App::new(
        "http://127.0.0.1:8000/index.html".into(),
        "http://127.0.0.1:9000".into(),
    );
    app.max_steps = Some(50);
    app
}

#[test]
fn connecting() {
    insta::assert_snapshot!(screen(&mut app(), false));
}

#[test]
fn observation_with_rulers_and_crosshair() {
    let mut app = app();
    observed(&mut app, "", false);
    insta::assert_snapshot!(screen(&mut app, true));
}

#[test]
fn grid_lines() {
    let mut app = app();
    observed(&mut app, "", false);
    app.update(Msg::Key(KeyInput::Char('g')));
    insta::assert_snapshot!(screen(&mut app, true));
}

#[test]
fn type_mode() {
    let mut app = app();
    observed(&mut app, "", false);
    for key in [
        KeyInput::Char('i'),
        KeyInput::Char('h'),
        KeyInput::Char('i'),
    ] {
        app.update(Msg::Key(key));
    }
    insta::assert_snapshot!(screen(&mut app, true));
}

#[test]
fn command_line() {
    let mut app = app();
    observed(&mut app, "", false);
    app.update(Msg::Key(KeyInput::Char(':')));
    for c in "click 320 180".chars() {
        app.update(Msg::Key(KeyInput::Char(c)));
    }
    insta::assert_snapshot!(screen(&mut app, true));
}

#[test]
fn help_overlay() {
    let mut app = app();
    observed(&mut app, "", false);
    app.update(Msg::Key(KeyInput::Char('?')));
    insta::assert_snapshot!(screen(&mut app, true));
    // On this terminal the help takes two pages: any key shows the next, then closes it.
    app.update(Msg::Key(KeyInput::Char(' ')));
    assert!(app.help);
    insta::assert_snapshot!("help_overlay_page_2", screen(&mut app, true));
    app.update(Msg::Key(KeyInput::Char(' ')));
    assert!(!app.help);
}

#[test]
fn page_error_and_server_error() {
    let mut app = app();
    observed(&mut app, "navigation_blocked", false);
    app.update(Msg::ServerError {
        code: "VALIDATION_ERROR".into(),
        message: "x: Input should be less than 800".into(),
    });
    insta::assert_snapshot!(screen(&mut app, true));
}

#[test]
fn episode_done() {
    let mut app = app();
    observed(&mut app, "", true);
    insta::assert_snapshot!(screen(&mut app, true));
}

#[test]
fn disconnected() {
    let mut app = app();
    app.update(Msg::Disconnected(
        "Connection refused (os error 111)".into(),
    ));
    insta::assert_snapshot!(screen(&mut app, false));
}

#[test]
fn task_and_recording() {
    let mut app = app();
    app.can_record = true;
    app.recording = true;
    app.tasks = vec![browserenv_tui::app::TaskView {
        id: "info-founded".into(),
        category: "information".into(),
        instruction: "In which year was Harbor Hardware founded? Finish with the year.".into(),
    }];
    app.task_index = Some(0);
    observed(&mut app, "", false);
    insta::assert_snapshot!(screen(&mut app, true));
}

#[test]
fn secret_entry_hides_the_value() {
    let mut app = app();
    observed(&mut app, "", false);
    app.update(Msg::Key(KeyInput::Char('s')));
    for c in "password".chars() {
        app.update(Msg::Key(KeyInput::Char(c)));
    }
    app.update(Msg::Key(KeyInput::Enter));
    for c in "hunter2".chars() {
        app.update(Msg::Key(KeyInput::Char(c)));
    }
    let shown = screen(&mut app, true);
    assert!(!shown.contains("hunter2"));
    insta::assert_snapshot!(shown);
}

#[test]
fn small_terminal_still_draws() {
    let mut app = app();
    observed(&mut app, "", false);
    let backend = TestBackend::new(20, 6);
    let mut terminal = Terminal::new(backend).unwrap();
    let mut painter = Painter::new(Graphics::halfblocks());
    render(&mut terminal, &mut app, &mut painter, None).unwrap();
    insta::assert_snapshot!(format!("{}", terminal.backend()));
}

/// A watched agent asking for a person, and one more elsewhere: the bar's badges.
fn watching_an_ask(app: &mut App) {
    use browserenv_tui::asks::Ask;
    app.watch_mode = true;
    app.update(Msg::Following("0f7c2a1e-session".into()));
    observed(app, "", false);
    let ask = |session: &str, reason: &str, since: &str| Ask {
        session: session.into(),
        reason: reason.into(),
        since: since.into(),
    };
    app.update(Msg::Asking(Some(ask(
        "0f7c2a1e-session",
        "please sign me in: the account is in the vault",
        "2025-05-01T12:00:00.000Z",
    ))));
    app.update(Msg::Asks(vec![ask(
        "77aa-other",
        "a captcha",
        "2025-05-01T11:59:00.000Z",
    )]));
}

#[test]
fn watching_an_agent_that_asks() {
    let mut app = app();
    watching_an_ask(&mut app);
    insta::assert_snapshot!(screen(&mut app, true));
}

#[test]
fn the_hand_back_note_prompt() {
    let mut app = app();
    watching_an_ask(&mut app);
    app.update(Msg::Key(KeyInput::Char('c')));
    app.update(Msg::Control {
        holder: Some("ana".into()),
        yours: Some(true),
    });
    app.update(Msg::Key(KeyInput::Char('c')));
    for c in "signed in".chars() {
        app.update(Msg::Key(KeyInput::Char(c)));
    }
    insta::assert_snapshot!(screen(&mut app, true));
}

/// The status bar reads the same on a light and a dark terminal theme: every cell sets both its
/// colours (none is left to the theme), at a contrast of at least 4.5:1 (WCAG AA), whatever the
/// bar shows.
#[test]
fn the_status_bar_is_readable_on_any_theme() {
    use browserenv_tui::screen::text_overlay::contrast;
    use ratatui::style::Color;
    let mut states: Vec<App> = Vec::new();
    let mut plain = app();
    observed(&mut plain, "", false);
    states.push(plain);
    let mut busy = app();
    observed(&mut busy, "navigation_failed", true);
    busy.recording = true;
    busy.grid = true;
    busy.zoom = 2;
    busy.watch_mode = true;
    busy.watching = Some("0f7c2a1e-session".into());
    busy.update(Msg::Key(KeyInput::Char('b')));
    busy.update(Msg::Key(KeyInput::Char('w')));
    states.push(busy);
    // Each way control can show: the agent's, another person's, this UI's.
    for (controller, mine) in [(None, false), (Some("ana"), false), (Some("me"), true)] {
        let mut watched = app();
        observed(&mut watched, "", false);
        watched.watch_mode = true;
        watched.watching = Some("0f7c2a1e-session".into());
        watched.controller = controller.map(str::to_string);
        watched.in_control = mine;
        states.push(watched);
    }
    let mut asked = app();
    watching_an_ask(&mut asked);
    states.push(asked);
    let mut lost = app();
    observed(&mut lost, "", false);
    lost.update(Msg::Disconnected("connection reset".into()));
    states.push(lost);
    states.push(app());
    for mut state in states {
        let mut terminal = Terminal::new(TestBackend::new(160, 30)).unwrap();
        let mut painter = Painter::new(Graphics::halfblocks());
        render(&mut terminal, &mut state, &mut painter, None).unwrap();
        let buffer = terminal.backend().buffer();
        let row = 28;
        for column in 0..160 {
            let cell = &buffer[(column, row)];
            let rgb = |color: Color| match color {
                Color::Rgb(r, g, b) => image::Rgb([r, g, b]),
                other => panic!("status cell {column} leaves a colour to the theme: {other:?}"),
            };
            let (fg, bg) = (rgb(cell.fg), rgb(cell.bg));
            let ratio = contrast(fg, bg);
            assert!(
                ratio >= 4.5,
                "status cell {column} ({:?}) has contrast {ratio:.1}",
                cell.symbol()
            );
        }
    }
}

#[test]
fn the_mark_and_the_held_modifiers_show_on_the_status_bar() {
    let mut app = app();
    observed(&mut app, "", false);
    app.update(Msg::Key(KeyInput::Char('m')));
    app.update(Msg::Key(KeyInput::Char('M')));
    for c in "shift+alt".chars() {
        app.update(Msg::Key(KeyInput::Char(c)));
    }
    app.update(Msg::Key(KeyInput::Enter));
    let shown = screen(&mut app, true);
    assert!(
        shown.contains("x,y 400,300 │ mark 400,300 │ hold SHIFT+ALT"),
        "{shown}"
    );
}
