//! Terminal events (crossterm) to UI messages. Pure: the tests feed it events directly.
//!
//! With SGR-Pixels mouse reporting on (mode 1016), crossterm's mouse "column" and "row" are the
//! pointer's pixel position as reported, less one (crossterm takes them for 1-based cells): a
//! press, a drag's motion and a release come at the pixel counted from 0 (`Spot::Pixel`), mapped
//! to the exact page pixel. Buttons and the modifiers the terminal reports go with them.

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use browserenv::models::{Modifier, Modifiers, MouseButton as PageButton};

use crate::app::{KeyInput, MouseKind, Msg, Spot};

/// `pixel_mouse`: mouse reports are pixels counted from this origin (see `Graphics`).
pub fn to_msg(event: &Event, pixel_mouse: Option<u16>) -> Option<Msg> {
    match event {
        Event::Key(key) => key_input(key).map(Msg::Key),
        Event::Mouse(mouse) => mouse_msg(mouse, pixel_mouse),
        Event::Resize(width, height) => Some(Msg::Resize {
            width: *width,
            height: *height,
        }),
        Event::Paste(text) => Some(Msg::Paste(text.clone())),
        Event::FocusGained | Event::FocusLost => None,
    }
}

pub fn key_input(key: &KeyEvent) -> Option<KeyInput> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let fast = key.modifiers.contains(KeyModifiers::SHIFT);
    Some(match key.code {
        KeyCode::Char('a') if ctrl => KeyInput::CtrlA,
        KeyCode::Char('c') if ctrl => KeyInput::CtrlC,
        KeyCode::Char(_) if ctrl => return None,
        KeyCode::Char(c) => KeyInput::Char(c),
        KeyCode::Enter => KeyInput::Enter,
        KeyCode::Esc => KeyInput::Esc,
        KeyCode::Tab => KeyInput::Tab,
        KeyCode::Backspace => KeyInput::Backspace,
        KeyCode::Up => KeyInput::Up { fast },
        KeyCode::Down => KeyInput::Down { fast },
        KeyCode::Left => KeyInput::Left { fast },
        KeyCode::Right => KeyInput::Right { fast },
        KeyCode::PageUp => KeyInput::PageUp,
        KeyCode::PageDown => KeyInput::PageDown,
        _ => return None,
    })
}

fn mouse_msg(mouse: &MouseEvent, pixel_mouse: Option<u16>) -> Option<Msg> {
    // What the terminal reported: crossterm's value plus the one it took off, which wrapped for a
    // reported 0 (kitty's first pixel).
    let pixel = |value: u16, origin: u16| {
        let reported = (u32::from(value) + 1) & 0xffff;
        reported.saturating_sub(origin.into())
    };
    let kind = match mouse.kind {
        MouseEventKind::Down(button) => MouseKind::Down(page_button(button)),
        MouseEventKind::Drag(_) => MouseKind::Drag,
        MouseEventKind::Up(_) => MouseKind::Up,
        MouseEventKind::Moved => MouseKind::Moved,
        MouseEventKind::ScrollDown => return Some(Msg::Wheel(1)),
        MouseEventKind::ScrollUp => return Some(Msg::Wheel(-1)),
        MouseEventKind::ScrollLeft | MouseEventKind::ScrollRight => return None,
    };
    let at = match pixel_mouse {
        Some(origin) => Spot::Pixel {
            x: pixel(mouse.column, origin),
            y: pixel(mouse.row, origin),
        },
        None => Spot::Cell {
            column: mouse.column,
            row: mouse.row,
        },
    };
    Some(Msg::Mouse {
        kind,
        at,
        modifiers: modifiers(mouse.modifiers),
    })
}

fn page_button(button: MouseButton) -> PageButton {
    match button {
        MouseButton::Left => PageButton::Left,
        MouseButton::Right => PageButton::Right,
        MouseButton::Middle => PageButton::Middle,
    }
}

/// The modifiers a terminal reports with a mouse event, as the page's.
fn modifiers(held: KeyModifiers) -> Modifiers {
    [
        (KeyModifiers::SHIFT, Modifier::Shift),
        (KeyModifiers::CONTROL, Modifier::Ctrl),
        (KeyModifiers::ALT, Modifier::Alt),
        (KeyModifiers::SUPER, Modifier::Meta),
        (KeyModifiers::META, Modifier::Meta),
    ]
    .into_iter()
    .filter(|(bit, _)| held.contains(*bit))
    .fold(Modifiers::NONE, |set, (_, modifier)| set.with(modifier))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventState;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> Event {
        Event::Key(KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
            state: KeyEventState::NONE,
        })
    }

    fn to_msg_cells(event: &Event) -> Option<Msg> {
        to_msg(event, None)
    }

    #[test]
    fn keys_become_inputs() {
        let none = KeyModifiers::NONE;
        assert_eq!(
            to_msg_cells(&key(KeyCode::Char('q'), none)),
            Some(Msg::Key(KeyInput::Char('q')))
        );
        assert_eq!(
            to_msg_cells(&key(KeyCode::Char('a'), KeyModifiers::CONTROL)),
            Some(Msg::Key(KeyInput::CtrlA))
        );
        assert_eq!(
            to_msg_cells(&key(KeyCode::Up, KeyModifiers::SHIFT)),
            Some(Msg::Key(KeyInput::Up { fast: true }))
        );
        assert_eq!(
            to_msg_cells(&key(KeyCode::Left, none)),
            Some(Msg::Key(KeyInput::Left { fast: false }))
        );
        assert_eq!(to_msg_cells(&key(KeyCode::F(5), none)), None);
        assert_eq!(
            to_msg_cells(&key(KeyCode::Char('x'), KeyModifiers::CONTROL)),
            None
        );
        let release = Event::Key(KeyEvent {
            code: KeyCode::Enter,
            modifiers: none,
            kind: KeyEventKind::Release,
            state: KeyEventState::NONE,
        });
        assert_eq!(to_msg_cells(&release), None);
    }

    #[test]
    fn mouse_becomes_presses_moves_releases_and_wheel() {
        let mouse = |kind, modifiers| {
            Event::Mouse(MouseEvent {
                kind,
                column: 12,
                row: 7,
                modifiers,
            })
        };
        let none = KeyModifiers::NONE;
        let cell = Spot::Cell { column: 12, row: 7 };
        let at = |kind, modifiers| {
            Some(Msg::Mouse {
                kind,
                at: cell,
                modifiers,
            })
        };
        assert_eq!(
            to_msg_cells(&mouse(MouseEventKind::Down(MouseButton::Left), none)),
            at(MouseKind::Down(PageButton::Left), Modifiers::NONE)
        );
        assert_eq!(
            to_msg_cells(&mouse(
                MouseEventKind::Down(MouseButton::Right),
                KeyModifiers::SHIFT | KeyModifiers::CONTROL
            )),
            at(
                MouseKind::Down(PageButton::Right),
                Modifiers::of(&[Modifier::Shift, Modifier::Ctrl])
            )
        );
        assert_eq!(
            to_msg_cells(&mouse(
                MouseEventKind::Down(MouseButton::Middle),
                KeyModifiers::ALT
            )),
            at(
                MouseKind::Down(PageButton::Middle),
                Modifiers::of(&[Modifier::Alt])
            )
        );
        assert_eq!(
            to_msg_cells(&mouse(MouseEventKind::Drag(MouseButton::Left), none)),
            at(MouseKind::Drag, Modifiers::NONE)
        );
        assert_eq!(
            to_msg_cells(&mouse(MouseEventKind::Up(MouseButton::Left), none)),
            at(MouseKind::Up, Modifiers::NONE)
        );
        assert_eq!(
            to_msg_cells(&mouse(MouseEventKind::Moved, none)),
            at(MouseKind::Moved, Modifiers::NONE)
        );
        assert_eq!(
            to_msg_cells(&mouse(MouseEventKind::ScrollDown, none)),
            Some(Msg::Wheel(1))
        );
        assert_eq!(
            to_msg_cells(&mouse(MouseEventKind::ScrollUp, none)),
            Some(Msg::Wheel(-1))
        );
        // Pixel reports: xterm counts from 1 (crossterm's 12 is xterm's 13th pixel: 12 from 0),
        // kitty from 0 (crossterm's 12 is kitty's pixel 13).
        let pixel = |x, y| {
            Some(Msg::Mouse {
                kind: MouseKind::Down(PageButton::Left),
                at: Spot::Pixel { x, y },
                modifiers: Modifiers::NONE,
            })
        };
        let down = mouse(MouseEventKind::Down(MouseButton::Left), none);
        assert_eq!(to_msg(&down, Some(1)), pixel(12, 7));
        assert_eq!(to_msg(&down, Some(0)), pixel(13, 8));
        assert_eq!(
            to_msg(&mouse(MouseEventKind::ScrollDown, none), Some(0)),
            Some(Msg::Wheel(1))
        );
        // kitty's pixel 0: crossterm's 0 - 1 wrapped.
        let edge = Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: u16::MAX,
            row: 4,
            modifiers: KeyModifiers::NONE,
        });
        assert_eq!(to_msg(&edge, Some(0)), pixel(0, 5));
        assert_eq!(
            to_msg_cells(&Event::Resize(200, 60)),
            Some(Msg::Resize {
                width: 200,
                height: 60
            })
        );
    }
}
