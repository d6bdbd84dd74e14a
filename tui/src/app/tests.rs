//! Tests of `App::update`, driven the way the event loop drives it: messages in, effects out.
//! `connected_app` is a model just past its first reset, with a picture at a known place so
//! clicks map to known page pixels.

use std::time::Duration;

use browserenv::models::{BrowserAction, Key, Modifiers, MouseButton};

use super::*;
use crate::graphics::picture::{Region, View};

pub(super) fn connected_app() -> App {
    let mut app = App::new("http://127.0.0.1:1/".into(), "test".into());
    app.picture = Some(View {
        cells: ratatui::layout::Rect::new(4, 1, 80, 30),
        pixels: (800, 600),
        cell: (10, 20),
        region: Region::PAGE,
    });
    let effects = app.update(Msg::Connected);
    assert_eq!(
        effects,
        vec![Effect::Send(Request::Reset("http://127.0.0.1:1/".into()))]
    );
    app.update(observation("http://127.0.0.1:1/", false));
    app
}

pub(super) fn observation(url: &str, done: bool) -> Msg {
    Msg::Observation(Observed {
        url: url.into(),
        title: "T".into(),
        error: String::new(),
        done,
        step: 0,
        latency: Duration::from_millis(80),
        reward: Some(0.0),
        verdict: None,
        max_steps: None,
    })
}

pub(super) fn key(app: &mut App, key: KeyInput) -> Vec<Effect> {
    app.update(Msg::Key(key))
}

pub(super) fn sent(effects: &[Effect]) -> Vec<BrowserAction> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send(Request::Step(action)) => Some(action.clone()),
            _ => None,
        })
        .collect()
}

/// The mouse at a terminal cell.
pub(super) fn mouse(app: &mut App, kind: MouseKind, column: u16, row: u16) -> Vec<Effect> {
    mouse_with(app, kind, column, row, Modifiers::NONE)
}

pub(super) fn mouse_with(
    app: &mut App,
    kind: MouseKind,
    column: u16,
    row: u16,
    modifiers: Modifiers,
) -> Vec<Effect> {
    app.update(Msg::Mouse {
        kind,
        at: Spot::Cell { column, row },
        modifiers,
    })
}

/// What the model asked to get back later, delivered now (the event loop's timer run out).
pub(super) fn run_out(app: &mut App, effects: Vec<Effect>) -> Vec<Effect> {
    let mut out = Vec::new();
    for effect in effects {
        match effect {
            Effect::After { msg, .. } => {
                let later = app.update(*msg);
                out.extend(run_out(app, later));
            }
            other => out.push(other),
        }
    }
    out
}

/// A left click at a cell (pressed and released), its multi-click window run out.
pub(super) fn click(app: &mut App, column: u16, row: u16) -> Vec<Effect> {
    let mut effects = mouse(app, MouseKind::Down(MouseButton::Left), column, row);
    effects.extend(mouse(app, MouseKind::Up, column, row));
    run_out(app, effects)
}

pub(super) fn finish_step(app: &mut App) -> Vec<Effect> {
    app.update(observation("http://127.0.0.1:1/", false))
}

#[test]
fn a_click_on_the_picture_clicks_the_mapped_pixel() {
    let mut app = connected_app();
    let effects = click(&mut app, 43, 16);
    assert_eq!(sent(&effects), vec![BrowserAction::click(395, 310)]);
    assert_eq!(app.crosshair, (395, 310));
    finish_step(&mut app);
    assert!(click(&mut app, 2, 16).is_empty(), "on the ruler");
    assert!(click(&mut app, 50, 31).is_empty(), "below the picture");
}

#[test]
fn arrows_move_the_crosshair_and_enter_clicks_there() {
    let mut app = connected_app();
    key(&mut app, KeyInput::Right { fast: false });
    key(&mut app, KeyInput::Down { fast: true });
    assert_eq!(app.crosshair, (410, 350));
    for _ in 0..30 {
        key(&mut app, KeyInput::Left { fast: true });
    }
    assert_eq!(app.crosshair, (0, 350), "clamped to the page");
    assert_eq!(
        sent(&key(&mut app, KeyInput::Enter)),
        vec![BrowserAction::click(0, 350)]
    );
}

#[test]
fn type_mode_sends_text_on_enter_and_esc_cancels() {
    let mut app = connected_app();
    key(&mut app, KeyInput::Char('i'));
    for c in "hi q".chars() {
        assert!(
            key(&mut app, KeyInput::Char(c)).is_empty(),
            "q types, it does not quit"
        );
    }
    key(&mut app, KeyInput::Backspace);
    app.update(Msg::Paste("!".into()));
    assert_eq!(
        sent(&key(&mut app, KeyInput::Enter)),
        vec![BrowserAction::type_text("hi !")]
    );
    finish_step(&mut app);
    key(&mut app, KeyInput::Char('t'));
    key(&mut app, KeyInput::Char('x'));
    assert!(key(&mut app, KeyInput::Esc).is_empty());
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn every_key_is_one_or_two_keystrokes() {
    let cases: Vec<(Vec<KeyInput>, Key)> = vec![
        (vec![KeyInput::Char('e')], Key::Enter),
        (vec![KeyInput::Tab], Key::Tab),
        (vec![KeyInput::Backspace], Key::Backspace),
        (vec![KeyInput::CtrlA], Key::CtrlA),
        (vec![KeyInput::Char('k'), KeyInput::Enter], Key::Enter),
        (vec![KeyInput::Char('k'), KeyInput::Esc], Key::Escape),
        (vec![KeyInput::Char('k'), KeyInput::Char('a')], Key::CtrlA),
        (
            vec![KeyInput::Char('k'), KeyInput::Up { fast: false }],
            Key::Up,
        ),
        (
            vec![KeyInput::Char('k'), KeyInput::Down { fast: false }],
            Key::Down,
        ),
        (
            vec![KeyInput::Char('k'), KeyInput::Left { fast: false }],
            Key::Left,
        ),
        (
            vec![KeyInput::Char('k'), KeyInput::Right { fast: false }],
            Key::Right,
        ),
        (vec![KeyInput::Char('k'), KeyInput::Tab], Key::Tab),
        (
            vec![KeyInput::Char('k'), KeyInput::Backspace],
            Key::Backspace,
        ),
    ];
    for (keys, expected) in cases {
        let mut app = connected_app();
        let mut effects = Vec::new();
        for k in &keys {
            effects = key(&mut app, *k);
        }
        assert_eq!(
            sent(&effects),
            vec![BrowserAction::key(expected)],
            "{keys:?}"
        );
    }
}

#[test]
fn back_wait_scroll_finish_and_reset() {
    let mut app = connected_app();
    assert_eq!(
        sent(&key(&mut app, KeyInput::Char('b'))),
        vec![BrowserAction::back()]
    );
    finish_step(&mut app);
    assert_eq!(
        sent(&key(&mut app, KeyInput::Char('w'))),
        vec![BrowserAction::wait()]
    );
    finish_step(&mut app);
    app.scroll_step = 150;
    assert_eq!(
        sent(&app.update(Msg::Wheel(1))),
        vec![BrowserAction::scroll(150)]
    );
    finish_step(&mut app);
    assert_eq!(
        sent(&key(&mut app, KeyInput::PageUp)),
        vec![BrowserAction::scroll(-150)]
    );
    finish_step(&mut app);
    key(&mut app, KeyInput::Char('f'));
    for c in "42".chars() {
        key(&mut app, KeyInput::Char(c));
    }
    assert_eq!(
        sent(&key(&mut app, KeyInput::Enter)),
        vec![BrowserAction::finish("42")]
    );
    finish_step(&mut app);
    key(&mut app, KeyInput::Char('r'));
    assert_eq!(
        app.mode,
        Mode::Line {
            kind: LineKind::Reset,
            text: "http://127.0.0.1:1/".into()
        },
        "prefilled with the current URL"
    );
    assert_eq!(
        key(&mut app, KeyInput::Enter),
        vec![Effect::Send(Request::Reset("http://127.0.0.1:1/".into()))]
    );
}

#[test]
fn command_line_runs_exact_actions_and_reports_mistakes() {
    let mut app = connected_app();
    key(&mut app, KeyInput::Char(':'));
    for c in "click 320 180".chars() {
        key(&mut app, KeyInput::Char(c));
    }
    assert_eq!(
        sent(&key(&mut app, KeyInput::Enter)),
        vec![BrowserAction::click(320, 180)]
    );
    finish_step(&mut app);
    key(&mut app, KeyInput::Char(':'));
    for c in "click 900 1".chars() {
        key(&mut app, KeyInput::Char(c));
    }
    assert!(key(&mut app, KeyInput::Enter).is_empty());
    assert!(app.notice.as_ref().unwrap().is_error);
    assert!(app.notice.as_ref().unwrap().text.contains("less than 800"));
}

#[test]
fn the_task_command_starts_an_episode_of_a_task_the_server_knows() {
    let mut app = connected_app();
    key(&mut app, KeyInput::Char(':'));
    for c in "task miniwob.click-test".chars() {
        key(&mut app, KeyInput::Char(c));
    }
    assert_eq!(
        key(&mut app, KeyInput::Enter),
        vec![Effect::Send(Request::ResetTask(
            "miniwob.click-test".into()
        ))]
    );
}

#[test]
fn input_during_a_step_is_queued_and_sent_in_order() {
    let mut app = connected_app();
    key(&mut app, KeyInput::Char('b'));
    assert!(key(&mut app, KeyInput::Char('w')).is_empty());
    assert!(app.update(Msg::Wheel(1)).is_empty());
    assert_eq!(app.queue.len(), 2);
    assert!(app.notice.as_ref().unwrap().text.starts_with("queued"));
    let effects = finish_step(&mut app);
    assert_eq!(sent(&effects), vec![BrowserAction::wait()]);
    let effects = finish_step(&mut app);
    assert_eq!(sent(&effects), vec![BrowserAction::scroll(200)]);
    assert!(app.queue.is_empty());
}

#[test]
fn quitting_asks_while_an_episode_is_in_progress() {
    let mut app = connected_app();
    assert!(key(&mut app, KeyInput::Char('q')).is_empty());
    assert_eq!(app.mode, Mode::ConfirmQuit);
    assert!(key(&mut app, KeyInput::Char('n')).is_empty());
    assert_eq!(app.mode, Mode::Normal);
    key(&mut app, KeyInput::CtrlC);
    assert_eq!(key(&mut app, KeyInput::Char('y')), vec![Effect::Quit]);
    // After the episode ended, quit is immediate.
    let mut done = connected_app();
    done.update(observation("http://127.0.0.1:1/", true));
    assert_eq!(key(&mut done, KeyInput::Char('q')), vec![Effect::Quit]);
}

#[test]
fn errors_show_and_the_session_goes_on() {
    let mut app = connected_app();
    key(&mut app, KeyInput::Char('b'));
    app.update(Msg::ServerError {
        code: "EXECUTION_ERROR".into(),
        message: "reset before stepping".into(),
    });
    assert!(app.in_flight.is_none());
    assert_eq!(
        app.notice.as_ref().unwrap().text,
        "EXECUTION_ERROR: reset before stepping"
    );
    assert_eq!(
        sent(&key(&mut app, KeyInput::Char('b'))),
        vec![BrowserAction::back()]
    );
}

#[test]
fn a_lost_server_refuses_input_visibly_and_r_reconnects() {
    let mut app = connected_app();
    app.update(Msg::Disconnected("connection reset".into()));
    assert!(key(&mut app, KeyInput::Char('b')).is_empty());
    assert!(app
        .notice
        .as_ref()
        .unwrap()
        .text
        .starts_with("not connected"));
    assert_eq!(
        key(&mut app, KeyInput::Char('q')),
        vec![Effect::Quit],
        "nothing left to lose"
    );
    assert_eq!(key(&mut app, KeyInput::Char('r')), vec![Effect::Reconnect]);
    assert_eq!(app.link, LinkState::Connecting);
    // Reconnected: a new episode starts.
    let effects = app.update(Msg::Connected);
    assert!(matches!(
        effects.as_slice(),
        [Effect::Send(Request::Reset(_))]
    ));
}

#[test]
fn help_shows_on_question_mark_and_any_key_pages_then_closes_it() {
    let mut app = connected_app();
    // A terminal tall enough for the whole help: one page, any key closes it.
    app.terminal = (100, BINDINGS.len() as u16 + 4);
    key(&mut app, KeyInput::Char('?'));
    assert!(app.help);
    assert!(click(&mut app, 43, 16).is_empty(), "no clicks under help");
    assert!(
        key(&mut app, KeyInput::Char('b')).is_empty(),
        "the key only closes help"
    );
    assert!(!app.help);
    // A short one: a key per page, the last closes it, none acts on the page.
    app.terminal = (100, 24);
    let pages = help_pages(24);
    assert!(pages >= 2);
    key(&mut app, KeyInput::Char('?'));
    for page in 1..pages {
        assert!(key(&mut app, KeyInput::Char('b')).is_empty());
        assert_eq!((app.help, usize::from(app.help_page)), (true, page));
    }
    assert!(key(&mut app, KeyInput::Char('b')).is_empty());
    assert!(!app.help && app.help_page == 0);
}

#[test]
fn zoom_cycles_and_the_lens_follows_the_crosshair() {
    let mut app = connected_app();
    assert_eq!(app.region(), Region::PAGE);
    key(&mut app, KeyInput::Char('z'));
    assert_eq!((app.zoom, app.region()), (2, Region::lens(2, (400, 300))));
    // Clicks map through the lens: its first cell is its corner, not the page's.
    app.picture = app.picture.map(|p| View {
        region: app.region(),
        ..p
    });
    let effects = click(&mut app, 4, 1);
    assert_eq!(sent(&effects), vec![BrowserAction::click(202, 155)]);
    finish_step(&mut app);
    for _ in 0..10 {
        key(&mut app, KeyInput::Right { fast: true });
    }
    assert_eq!(app.crosshair, (702, 155));
    assert_eq!(app.region().x, 400, "the lens moved along");
    key(&mut app, KeyInput::Char('z'));
    assert_eq!(app.zoom, 4);
    key(&mut app, KeyInput::Char('z'));
    assert_eq!((app.zoom, app.region()), (1, Region::PAGE));
}

#[test]
fn the_text_layer_toggles_and_a_missing_one_is_said_once() {
    let mut app = connected_app();
    assert!(app.wants_text(), "on by default under half-blocks");
    assert_eq!(key(&mut app, KeyInput::Char('T')), vec![Effect::Redraw]);
    assert!(!app.wants_text());
    key(&mut app, KeyInput::Char('T'));
    app.update(Msg::TextUnavailable("no /sessions route".into()));
    assert!(!app.wants_text());
    assert!(app.notice.as_ref().unwrap().text.contains("no text layer"));
    app.notice = None;
    app.update(Msg::TextUnavailable("no /sessions route".into()));
    assert_eq!(app.notice, None, "said once");
    // Pixel pictures carry no text layer.
    app.text_picture = false;
    assert!(key(&mut app, KeyInput::Char('T')).is_empty());
    assert!(app.notice.as_ref().unwrap().is_error);
}

#[test]
fn grid_toggles_and_asks_for_a_redraw() {
    let mut app = connected_app();
    assert_eq!(key(&mut app, KeyInput::Char('g')), vec![Effect::Redraw]);
    assert!(app.grid);
    key(&mut app, KeyInput::Char('g'));
    assert!(!app.grid);
}

fn watching_app() -> App {
    let mut app = App::new(String::new(), "test".into());
    app.watch_mode = true;
    assert!(app.update(Msg::Following("s-1".into())).is_empty());
    assert!(
        app.update(Msg::Connected).is_empty(),
        "a watcher resets nothing"
    );
    app.update(observation("http://127.0.0.1:1/", false));
    app
}

#[test]
fn c_takes_control_of_the_watched_session_and_hands_it_back() {
    let mut app = watching_app();
    assert!(key(&mut app, KeyInput::Char('b')).is_empty());
    assert!(app.notice.as_ref().unwrap().text.contains("read-only"));
    assert_eq!(key(&mut app, KeyInput::Char('c')), vec![Effect::Take]);
    app.update(Msg::Control {
        holder: Some("ana".into()),
        yours: Some(true),
    });
    assert!(app.in_control);
    assert!(app
        .notice
        .as_ref()
        .unwrap()
        .text
        .contains("YOU ARE IN CONTROL"));

    // In control the driving keys act; a watched frame does not end the request, the answer does.
    assert_eq!(
        sent(&key(&mut app, KeyInput::Char('w'))),
        vec![BrowserAction::wait()]
    );
    assert!(
        sent(&key(&mut app, KeyInput::Char('b'))).is_empty(),
        "queued"
    );
    app.update(observation("http://127.0.0.1:1/", false));
    assert!(app.in_flight.is_some());
    assert_eq!(sent(&app.update(Msg::Stepped)), vec![BrowserAction::back()]);
    // Tab is the page's key while in control; reset stays the agent's.
    app.update(Msg::Stepped);
    assert_eq!(
        sent(&key(&mut app, KeyInput::Tab)),
        vec![BrowserAction::key(Key::Tab)]
    );
    app.update(Msg::Stepped);
    assert!(app.request(Request::Reset("http://x/".into())).is_empty());

    assert_eq!(
        key(&mut app, KeyInput::Char('c')),
        vec![Effect::HandBack { note: None }]
    );
    app.update(Msg::Control {
        holder: None,
        yours: Some(false),
    });
    assert!(!app.in_control);
    assert_eq!(key(&mut app, KeyInput::Tab), vec![Effect::NextSession]);
}

#[test]
fn someone_elses_control_is_shown_and_not_taken_over() {
    let mut app = watching_app();
    app.update(Msg::Control {
        holder: Some("bo".into()),
        yours: None,
    });
    assert!(!app.in_control);
    assert_eq!(app.controller.as_deref(), Some("bo"));
    assert!(key(&mut app, KeyInput::Char('c')).is_empty());
    assert!(app
        .notice
        .as_ref()
        .unwrap()
        .text
        .contains("bo holds control"));
    // The watched session ends: control with it; the link follows the next one.
    app.update(Msg::WatchedEnded("s-1".into()));
    assert_eq!(app.controller, None);
    app.update(Msg::WaitingForSession("http://h".into()));
    assert_eq!(app.watching, None);
    assert!(app
        .notice
        .as_ref()
        .unwrap()
        .text
        .contains("waiting for a session on http://h"));
}

#[test]
fn a_watched_page_error_clears_with_the_next_good_frame_or_another_session() {
    let failed = || {
        Msg::Observation(Observed {
            url: "http://127.0.0.1:1/gone".into(),
            title: String::new(),
            error: "navigation_failed".into(),
            done: false,
            step: 1,
            latency: Duration::from_millis(80),
            reward: Some(0.0),
            verdict: None,
            max_steps: None,
        })
    };
    let mut app = watching_app();
    app.update(failed());
    assert!(app
        .notice
        .as_ref()
        .unwrap()
        .text
        .contains("navigation_failed"));
    app.update(observation("http://127.0.0.1:1/next", false));
    assert!(app.notice.is_none(), "{:?}", app.notice.map(|n| n.text));

    app.update(failed());
    app.update(Msg::Following("s-2".into()));
    let notice = app.notice.as_ref().unwrap();
    assert_eq!(notice.text, "following session s-2");
    assert!(!notice.is_error);

    // Other errors stay until something else is said: a frame is not an answer to them.
    app.error("control refused");
    app.update(observation("http://127.0.0.1:1/next", false));
    assert_eq!(app.notice.as_ref().unwrap().text, "control refused");
}

#[test]
fn collecting_for_a_campaign_takes_a_mark_before_the_next_task() {
    let mut app = App::new(String::new(), "test".into());
    app.collect = Some(Collecting::default());
    assert_eq!(
        app.update(Msg::Connected),
        vec![Effect::Campaign(CampaignCall::Lease)]
    );
    let task = TaskView {
        id: "info-founded".into(),
        category: "information".into(),
        instruction: "When?".into(),
    };
    let leased = app.update(Msg::Campaign(CampaignReply::Leased {
        person: "ana".into(),
        lease: Some(("lease-1".into(), task)),
    }));
    assert_eq!(
        app.collect.as_ref().unwrap().name,
        "ana",
        "the name the token stands for"
    );
    let start = Request::ResetLease {
        lease: "lease-1".into(),
        task: "info-founded".into(),
    };
    assert_eq!(leased, vec![Effect::Send(start.clone())]);
    app.update(observation("http://127.0.0.1:1/", false));
    // Not ended: no mark yet; N would leave the task.
    assert!(key(&mut app, KeyInput::Char('P')).is_empty());
    assert!(app.notice.as_ref().unwrap().is_error);
    assert!(key(&mut app, KeyInput::Char('N')).is_empty());
    // r starts the task over, on its lease.
    assert_eq!(
        key(&mut app, KeyInput::Char('r')),
        vec![Effect::Send(start)]
    );
    app.update(observation("http://127.0.0.1:1/", false));
    key(&mut app, KeyInput::Char('f'));
    key(&mut app, KeyInput::Enter);
    app.update(observation("http://127.0.0.1:1/", true));
    assert!(app.collect.as_ref().unwrap().ended);
    assert!(app
        .notice
        .as_ref()
        .unwrap()
        .text
        .contains("P: you did the task"));
    // A second mark while the first is on its way sends nothing.
    assert_eq!(
        key(&mut app, KeyInput::Char('F')),
        vec![Effect::Campaign(CampaignCall::Complete {
            lease: "lease-1".into(),
            passed: false
        })]
    );
    assert!(key(&mut app, KeyInput::Char('P')).is_empty());
    // Saved: the next task is asked for by itself.
    assert_eq!(
        app.update(Msg::Campaign(CampaignReply::Saved {
            task: "info-founded".into(),
            check: Some(false)
        })),
        vec![Effect::Campaign(CampaignCall::Lease)]
    );
    assert_eq!(app.collect.as_ref().unwrap().saved, 1);
    assert!(app
        .update(Msg::Campaign(CampaignReply::Leased {
            person: "ana".into(),
            lease: None
        }))
        .is_empty());
    assert!(app.collect.as_ref().unwrap().finished);
    assert!(app
        .notice
        .as_ref()
        .unwrap()
        .text
        .contains("nothing left for ana"));
}

#[test]
fn a_campaign_task_is_skipped_with_a_reason() {
    let mut app = App::new(String::new(), "test".into());
    app.collect = Some(Collecting {
        name: "bo".into(),
        lease: Some("lease-2".into()),
        ..Default::default()
    });
    key(&mut app, KeyInput::Char('S'));
    assert!(matches!(
        app.mode,
        Mode::Line {
            kind: LineKind::SkipReason,
            ..
        }
    ));
    // No reason, no skip.
    assert!(key(&mut app, KeyInput::Enter).is_empty());
    assert!(app.notice.as_ref().unwrap().is_error);
    key(&mut app, KeyInput::Char('S'));
    for c in "page down".chars() {
        key(&mut app, KeyInput::Char(c));
    }
    assert_eq!(
        key(&mut app, KeyInput::Enter),
        vec![Effect::Campaign(CampaignCall::Skip {
            lease: "lease-2".into(),
            reason: "page down".into()
        })]
    );
    // V shows the progress the campaign sends, and hides it.
    assert_eq!(
        key(&mut app, KeyInput::Char('V')),
        vec![Effect::Campaign(CampaignCall::Progress)]
    );
    app.update(Msg::Campaign(CampaignReply::Progress(vec!["1/2".into()])));
    assert!(app.overlay_open());
    key(&mut app, KeyInput::Char('V'));
    assert!(!app.overlay_open());
}
