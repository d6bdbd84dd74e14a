//! A person's gestures through `update`: each mouse or keyboard gesture becomes exactly one step,
//! the exact action an agent would send for it.

use browserenv::models::{
    Action, BrowserAction, Chord, Modifier, Modifiers, MouseButton, MAX_PATH_POINTS,
};

use super::tests::{click, connected_app, finish_step, key, mouse, mouse_with, run_out, sent};
use super::*;

/// The test picture: cell (c, r) is page pixel ((c - 4) * 10 + 5, (r - 1) * 20 + 10).
fn page(column: u16, row: u16) -> (i64, i64) {
    (
        (i64::from(column) - 4) * 10 + 5,
        (i64::from(row) - 1) * 20 + 10,
    )
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyInput::Char(c));
    }
}

/// The one step `effects` sent (and the step answered, so the next goes out at once).
fn one_step(app: &mut App, effects: Vec<Effect>) -> BrowserAction {
    let steps = sent(&effects);
    assert_eq!(steps.len(), 1, "exactly one step: {effects:?}");
    finish_step(app);
    steps[0].clone()
}

#[test]
fn a_mouse_drag_is_one_drag_step_along_the_path() {
    let mut app = connected_app();
    assert!(mouse(&mut app, MouseKind::Down(MouseButton::Left), 43, 16).is_empty());
    assert!(mouse(&mut app, MouseKind::Drag, 45, 16).is_empty());
    assert!(
        mouse(&mut app, MouseKind::Drag, 45, 16).is_empty(),
        "same cell"
    );
    assert!(mouse(&mut app, MouseKind::Drag, 50, 18).is_empty());
    let effects = mouse(&mut app, MouseKind::Up, 50, 18);
    assert_eq!(
        one_step(&mut app, effects),
        BrowserAction::drag([page(43, 16), page(45, 16), page(50, 18)])
    );
    assert_eq!(app.crosshair, page(50, 18));

    // With the right button and CTRL held, as the terminal reported them at the press.
    let ctrl = Modifiers::of(&[Modifier::Ctrl]);
    mouse_with(&mut app, MouseKind::Down(MouseButton::Right), 10, 5, ctrl);
    mouse(&mut app, MouseKind::Drag, 12, 5);
    let effects = mouse(&mut app, MouseKind::Up, 12, 5);
    assert_eq!(
        one_step(&mut app, effects),
        BrowserAction::drag_with([page(10, 5), page(12, 5)], MouseButton::Right, ctrl)
    );
}

#[test]
fn a_long_drag_is_sampled_to_the_paths_limit() {
    let mut app = connected_app();
    mouse(&mut app, MouseKind::Down(MouseButton::Left), 4, 1);
    for column in 5..84 {
        mouse(&mut app, MouseKind::Drag, column, 1 + (column - 4) / 3);
    }
    let effects = mouse(&mut app, MouseKind::Up, 83, 27);
    let BrowserAction {
        action: Action::Drag { path, .. },
        ..
    } = one_step(&mut app, effects)
    else {
        panic!("a drag");
    };
    assert_eq!(path.len(), MAX_PATH_POINTS);
    assert_eq!((path[0].x, path[0].y), page(4, 1));
    let last = path[MAX_PATH_POINTS - 1];
    assert_eq!((last.x, last.y), page(83, 27));
}

#[test]
fn clicks_at_one_place_are_one_double_or_triple_click() {
    let mut app = connected_app();
    let down = MouseKind::Down(MouseButton::Left);
    // The first click waits out the multi-click window; the second within it makes it a double.
    mouse(&mut app, down, 43, 16);
    let first = mouse(&mut app, MouseKind::Up, 43, 16);
    assert!(sent(&first).is_empty(), "{first:?}");
    mouse(&mut app, down, 43, 16);
    let second = mouse(&mut app, MouseKind::Up, 43, 16);
    assert!(
        sent(&run_out(&mut app, first)).is_empty(),
        "the first window ran out after the second click: nothing"
    );
    let (x, y) = page(43, 16);
    let effects = run_out(&mut app, second);
    assert_eq!(
        one_step(&mut app, effects),
        BrowserAction::click_with(x, y, MouseButton::Left, 2, Modifiers::NONE)
    );
    // The third click is sent at once: no count goes higher.
    for _ in 0..2 {
        mouse(&mut app, down, 43, 16);
        mouse(&mut app, MouseKind::Up, 43, 16);
    }
    mouse(&mut app, down, 43, 16);
    let third = mouse(&mut app, MouseKind::Up, 43, 16);
    assert_eq!(
        one_step(&mut app, third),
        BrowserAction::click_with(x, y, MouseButton::Left, 3, Modifiers::NONE)
    );
    // A click elsewhere sends the one waiting first, then waits itself.
    mouse(&mut app, down, 43, 16);
    mouse(&mut app, MouseKind::Up, 43, 16);
    let elsewhere = mouse(&mut app, down, 20, 5);
    assert_eq!(one_step(&mut app, elsewhere), BrowserAction::click(x, y));
}

#[test]
fn a_click_waiting_for_its_double_goes_before_the_next_key_or_wheel() {
    let mut app = connected_app();
    let (x, y) = page(43, 16);
    for next in [Msg::Key(KeyInput::Char('w')), Msg::Wheel(1)] {
        mouse(&mut app, MouseKind::Down(MouseButton::Left), 43, 16);
        let waiting = mouse(&mut app, MouseKind::Up, 43, 16);
        let effects = app.update(next);
        assert_eq!(sent(&effects), vec![BrowserAction::click(x, y)]);
        assert_eq!(app.queue.len(), 1, "the key's step queued behind the click");
        assert!(sent(&run_out(&mut app, waiting)).is_empty(), "sent once");
        finish_step(&mut app);
        finish_step(&mut app);
    }
}

#[test]
fn right_middle_and_modified_clicks_carry_their_button_and_keys() {
    let mut app = connected_app();
    let shift = Modifiers::of(&[Modifier::Shift]);
    let ctrl_alt = Modifiers::of(&[Modifier::Ctrl, Modifier::Alt]);
    for (button, modifiers) in [
        (MouseButton::Right, Modifiers::NONE),
        (MouseButton::Middle, Modifiers::NONE),
        (MouseButton::Left, shift),
        (MouseButton::Left, ctrl_alt),
    ] {
        let mut effects = mouse_with(&mut app, MouseKind::Down(button), 30, 9, modifiers);
        effects.extend(mouse(&mut app, MouseKind::Up, 30, 9));
        let effects = run_out(&mut app, effects);
        let (x, y) = page(30, 9);
        assert_eq!(
            one_step(&mut app, effects),
            BrowserAction::click_with(x, y, button, 1, modifiers)
        );
    }
    // Modifiers held from the keyboard go with the next mouse click (a terminal that keeps
    // shift-click for its selection), once.
    key(&mut app, KeyInput::Char('M'));
    typed(&mut app, "shift");
    key(&mut app, KeyInput::Enter);
    let effects = click(&mut app, 30, 9);
    let (x, y) = page(30, 9);
    assert_eq!(
        one_step(&mut app, effects),
        BrowserAction::click_with(x, y, MouseButton::Left, 1, shift)
    );
    let effects = click(&mut app, 31, 9);
    let (x, y) = page(31, 9);
    assert_eq!(one_step(&mut app, effects), BrowserAction::click(x, y));
    // Off the picture, nothing.
    assert!(click(&mut app, 2, 16).is_empty());
}

#[test]
fn the_pointer_resting_is_one_move_and_motion_does_not_flood() {
    let mut app = connected_app();
    let mut timers = Vec::new();
    for column in 10..20 {
        let effects = mouse(&mut app, MouseKind::Moved, column, 3);
        assert!(sent(&effects).is_empty(), "motion alone sends nothing");
        assert!(
            matches!(effects.as_slice(), [Effect::After { delay, .. }] if *delay == HOVER_REST),
            "{effects:?}"
        );
        timers.extend(effects);
    }
    // Every rest but the last was cut short by more motion: one move, where the pointer stopped.
    let (x, y) = page(19, 3);
    let effects = run_out(&mut app, timers);
    assert_eq!(one_step(&mut app, effects), BrowserAction::move_to(x, y));
    // Resting there again sends nothing more.
    let effects = mouse(&mut app, MouseKind::Moved, 19, 3);
    assert!(sent(&run_out(&mut app, effects)).is_empty());
    // No hover while a step is on the wire.
    key(&mut app, KeyInput::Char('w'));
    let effects = mouse(&mut app, MouseKind::Moved, 25, 3);
    assert!(sent(&run_out(&mut app, effects)).is_empty());
    finish_step(&mut app);
    // Nor, and no complaint, over a session watched without control.
    app.watch_mode = true;
    app.notice = None;
    let effects = mouse(&mut app, MouseKind::Moved, 30, 3);
    assert!(sent(&run_out(&mut app, effects)).is_empty());
    assert_eq!(app.notice, None);
    app.in_control = true;
    let effects = mouse(&mut app, MouseKind::Moved, 30, 3);
    let (x, y) = page(30, 3);
    let effects = run_out(&mut app, effects);
    assert_eq!(one_step(&mut app, effects), BrowserAction::move_to(x, y));
}

#[test]
fn the_keyboard_has_a_way_for_each_gesture() {
    let mut app = connected_app();
    app.crosshair = (400, 300);
    let cases: [(char, BrowserAction); 5] = [
        ('h', BrowserAction::move_to(400, 300)),
        (
            'd',
            BrowserAction::click_with(400, 300, MouseButton::Left, 2, Modifiers::NONE),
        ),
        (
            'D',
            BrowserAction::click_with(400, 300, MouseButton::Left, 3, Modifiers::NONE),
        ),
        (
            'x',
            BrowserAction::click_with(400, 300, MouseButton::Right, 1, Modifiers::NONE),
        ),
        (
            'X',
            BrowserAction::click_with(400, 300, MouseButton::Middle, 1, Modifiers::NONE),
        ),
    ];
    for (pressed, expected) in cases {
        let effects = key(&mut app, KeyInput::Char(pressed));
        assert_eq!(one_step(&mut app, effects), expected, "{pressed}");
    }

    // Mark, move the crosshair, drag from the mark: a straight path, a point every 20 px.
    assert!(key(&mut app, KeyInput::Char('v')).is_empty(), "no mark yet");
    key(&mut app, KeyInput::Char('m'));
    for _ in 0..2 {
        key(&mut app, KeyInput::Right { fast: true });
    }
    let effects = key(&mut app, KeyInput::Char('v'));
    let path: Vec<(i64, i64)> = (0..=5).map(|i| (400 + 20 * i, 300)).collect();
    assert_eq!(one_step(&mut app, effects), BrowserAction::drag(path));

    // Modifiers held for the next click (once), typed in any case.
    key(&mut app, KeyInput::Char('M'));
    typed(&mut app, "shift+ctrl");
    key(&mut app, KeyInput::Enter);
    let effects = key(&mut app, KeyInput::Enter);
    let held = Modifiers::of(&[Modifier::Shift, Modifier::Ctrl]);
    assert_eq!(
        one_step(&mut app, effects),
        BrowserAction::click_with(500, 300, MouseButton::Left, 1, held)
    );
    let effects = key(&mut app, KeyInput::Enter);
    assert_eq!(one_step(&mut app, effects), BrowserAction::click(500, 300));
    key(&mut app, KeyInput::Char('M'));
    typed(&mut app, "hyper");
    key(&mut app, KeyInput::Enter);
    assert!(app.notice.as_ref().is_some_and(|n| n.is_error));
}

#[test]
fn the_chord_prompt_completes_and_presses() {
    let mut app = connected_app();
    key(&mut app, KeyInput::Char('p'));
    typed(&mut app, "shift+ta");
    key(&mut app, KeyInput::Tab);
    assert_eq!(
        app.mode,
        Mode::Line {
            kind: LineKind::Press,
            text: "shift+TAB".into()
        }
    );
    let effects = key(&mut app, KeyInput::Enter);
    assert_eq!(
        one_step(&mut app, effects),
        BrowserAction::press_named("SHIFT+TAB").unwrap()
    );
    // Several names fit: the common start, and the names in the notice.
    key(&mut app, KeyInput::Char('p'));
    typed(&mut app, "page");
    key(&mut app, KeyInput::Tab);
    let notice = app.notice.clone().unwrap().text;
    assert!(
        notice.contains("PAGE_UP") && notice.contains("PAGE_DOWN"),
        "{notice}"
    );
    typed(&mut app, "down 3");
    let effects = key(&mut app, KeyInput::Enter);
    assert_eq!(
        one_step(&mut app, effects),
        BrowserAction::press_repeat(Chord::parse("PAGE_DOWN").unwrap(), 3)
    );
    // An unknown key: an error naming it, no step.
    key(&mut app, KeyInput::Char('p'));
    typed(&mut app, "CTRL+NOPE");
    let effects = key(&mut app, KeyInput::Enter);
    assert!(sent(&effects).is_empty());
    let notice = app.notice.clone().unwrap();
    assert!(
        notice.is_error && notice.text.contains("NOPE"),
        "{notice:?}"
    );
}

#[test]
fn the_help_lists_every_gesture() {
    let keys: Vec<&str> = BINDINGS.iter().map(|(keys, _)| *keys).collect();
    for wanted in [
        "mouse drag",
        "mouse resting",
        "d / D",
        "x / X",
        "h",
        "m, then v",
        "M",
        "p",
    ] {
        assert!(keys.contains(&wanted), "{wanted} in {keys:?}");
    }
}
