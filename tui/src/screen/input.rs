//! Terminal events (crossterm) to UI messages. Pure: the tests feed it events directly.
//!
//! With SGR-Pixels mouse reporting on (mode 1016), crossterm's mouse "column" and "row" are the
//! pointer's pixel position as reported, less one (crossterm takes them for 1-based cells): a
//! click becomes `ClickPixel` at the pixel counted from 0, mapped to the exact page pixel.

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use crate::app::{KeyInput, Msg};

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
    match (mouse.kind, pixel_mouse) {
        (MouseEventKind::Down(MouseButton::Left), Some(origin)) => Some(Msg::ClickPixel {
            x: pixel(mouse.column, origin),
            y: pixel(mouse.row, origin),
        }),
        _ => mouse_cells(mouse),
    }
}

fn mouse_cells(mouse: &MouseEvent) -> Option<Msg> {
    match mouse.kind {
        MouseEventKind::Down(MouseButton::Left) => Some(Msg::Click {
            column: mouse.column,
            row: mouse.row,
        }),
        MouseEventKind::ScrollDown => Some(Msg::Wheel(1)),
        MouseEventKind::ScrollUp => Some(Msg::Wheel(-1)),
        _ => None,
    }
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
    fn mouse_becomes_clicks_and_wheel() {
        let mouse = |kind| {
            Event::Mouse(MouseEvent {
                kind,
                column: 12,
                row: 7,
                modifiers: KeyModifiers::NONE,
            })
        };
        assert_eq!(
            to_msg_cells(&mouse(MouseEventKind::Down(MouseButton::Left))),
            Some(Msg::Click { column: 12, row: 7 })
        );
        assert_eq!(
            to_msg_cells(&mouse(MouseEventKind::ScrollDown)),
            Some(Msg::Wheel(1))
        );
        assert_eq!(
            to_msg_cells(&mouse(MouseEventKind::ScrollUp)),
            Some(Msg::Wheel(-1))
        );
        assert_eq!(to_msg_cells(&mouse(MouseEventKind::Moved)), None);
        // Pixel reports: xterm counts from 1 (crossterm's 12 is xterm's 13th pixel: 12 from 0),
        // kitty from 0 (crossterm's 12 is kitty's pixel 13).
        assert_eq!(
            to_msg(&mouse(MouseEventKind::Down(MouseButton::Left)), Some(1)),
            Some(Msg::ClickPixel { x: 12, y: 7 })
        );
        assert_eq!(
            to_msg(&mouse(MouseEventKind::Down(MouseButton::Left)), Some(0)),
            Some(Msg::ClickPixel { x: 13, y: 8 })
        );
        assert_eq!(
            to_msg(&mouse(MouseEventKind::ScrollDown), Some(0)),
            Some(Msg::Wheel(1))
        );
        // kitty's pixel 0: crossterm's 0 - 1 wrapped.
        let edge = Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: u16::MAX,
            row: 4,
            modifiers: KeyModifiers::NONE,
        });
        assert_eq!(to_msg(&edge, Some(0)), Some(Msg::ClickPixel { x: 0, y: 5 }));
        assert_eq!(
            to_msg_cells(&Event::Resize(200, 60)),
            Some(Msg::Resize {
                width: 200,
                height: 60
            })
        );
    }
}
