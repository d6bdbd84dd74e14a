//! Terminal events (crossterm) to UI messages. Pure: the tests feed it events directly.

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use crate::app::{KeyInput, Msg};

pub fn to_msg(event: &Event) -> Option<Msg> {
    match event {
        Event::Key(key) => key_input(key).map(Msg::Key),
        Event::Mouse(mouse) => mouse_msg(mouse),
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

fn mouse_msg(mouse: &MouseEvent) -> Option<Msg> {
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

    #[test]
    fn keys_become_inputs() {
        let none = KeyModifiers::NONE;
        assert_eq!(
            to_msg(&key(KeyCode::Char('q'), none)),
            Some(Msg::Key(KeyInput::Char('q')))
        );
        assert_eq!(
            to_msg(&key(KeyCode::Char('a'), KeyModifiers::CONTROL)),
            Some(Msg::Key(KeyInput::CtrlA))
        );
        assert_eq!(
            to_msg(&key(KeyCode::Up, KeyModifiers::SHIFT)),
            Some(Msg::Key(KeyInput::Up { fast: true }))
        );
        assert_eq!(
            to_msg(&key(KeyCode::Left, none)),
            Some(Msg::Key(KeyInput::Left { fast: false }))
        );
        assert_eq!(to_msg(&key(KeyCode::F(5), none)), None);
        assert_eq!(
            to_msg(&key(KeyCode::Char('x'), KeyModifiers::CONTROL)),
            None
        );
        let release = Event::Key(KeyEvent {
            code: KeyCode::Enter,
            modifiers: none,
            kind: KeyEventKind::Release,
            state: KeyEventState::NONE,
        });
        assert_eq!(to_msg(&release), None);
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
            to_msg(&mouse(MouseEventKind::Down(MouseButton::Left))),
            Some(Msg::Click { column: 12, row: 7 })
        );
        assert_eq!(
            to_msg(&mouse(MouseEventKind::ScrollDown)),
            Some(Msg::Wheel(1))
        );
        assert_eq!(
            to_msg(&mouse(MouseEventKind::ScrollUp)),
            Some(Msg::Wheel(-1))
        );
        assert_eq!(to_msg(&mouse(MouseEventKind::Moved)), None);
        assert_eq!(
            to_msg(&Event::Resize(200, 60)),
            Some(Msg::Resize {
                width: 200,
                height: 60
            })
        );
    }
}
