//! The one-line editors at the bottom (`LineKind`: type, `:` command, finish, reset, note,
//! secret): editing the text, pasting into it, and what Enter does with it.

use browserenv::models::BrowserAction;

use super::{App, Effect, KeyInput, Mode, Request};
use crate::command::{parse_command, Command};

/// The one-line editors at the bottom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    /// Text typed into the page on Enter.
    Type,
    /// A `:` command.
    Command,
    /// The answer sent with `finish` (may be empty).
    Finish,
    /// The URL to reset to.
    Reset,
    /// A note attached to the last recorded step.
    Note,
    /// The name of a secret (e.g. PASSWORD), then its value.
    SecretName,
    SecretValue {
        name: String,
    },
    /// Why the campaign's task in hand is skipped.
    SkipReason,
    /// Watch mode, handing back a session whose agent asked for a person: what to tell it.
    HandBackNote,
    /// A key or chord to press (`p`), Tab completing its name.
    Press,
    /// The modifiers to hold for the next click or drag (`M`).
    Hold,
}

impl LineKind {
    pub fn prompt(&self) -> String {
        match self {
            // A field the page masks with its own script (bullets it draws, a plain text
            // field) is not known as a secret to the server: the person says so with `s`.
            LineKind::Type => "type (a secret? Esc, then s)> ".into(),
            LineKind::Command => ":".into(),
            LineKind::Finish => "finish, answer (optional)> ".into(),
            LineKind::Reset => "reset to URL> ".into(),
            LineKind::Note => "note on the last step> ".into(),
            LineKind::SecretName => "secret name (e.g. PASSWORD)> ".into(),
            LineKind::SecretValue { name } => {
                format!("{name} (hidden, recorded as <secret:{name}>)> ")
            }
            LineKind::SkipReason => "skip this task, because> ".into(),
            LineKind::HandBackNote => "note for the agent> ".into(),
            LineKind::Press => "press CHORD [N]> ".into(),
            LineKind::Hold => "hold for the next click or drag (SHIFT+CTRL; empty: none)> ".into(),
        }
    }

    /// What Enter and Esc do, shown after the text.
    pub fn hint(&self) -> &'static str {
        match self {
            LineKind::Type => "  (Enter sends, Esc cancels)",
            LineKind::Press => "  (Tab completes, Enter presses, Esc cancels)",
            LineKind::HandBackNote => {
                "  (Enter sends it and hands back, Esc hands back without one)"
            }
            _ => "  (Enter runs, Esc cancels)",
        }
    }

    /// What the line shows of the text typed so far.
    pub fn shown(&self, text: &str) -> String {
        match self {
            LineKind::SecretValue { .. } => "•".repeat(text.chars().count()),
            _ => text.to_string(),
        }
    }
}

impl App {
    /// Open a line editor, prefilled with `text`.
    pub(super) fn line(&mut self, kind: LineKind, text: String) -> Vec<Effect> {
        self.mode = Mode::Line { kind, text };
        Vec::new()
    }

    /// Pasted text goes into the open line, on one line.
    pub(super) fn on_paste(&mut self, pasted: String) -> Vec<Effect> {
        match &mut self.mode {
            Mode::Line { text, .. } => text.push_str(&pasted.replace(['\r', '\n'], " ")),
            _ => self.notice("paste into the type line: press i first"),
        }
        Vec::new()
    }

    pub(super) fn on_line_key(
        &mut self,
        kind: LineKind,
        mut text: String,
        key: KeyInput,
    ) -> Vec<Effect> {
        let kind = kind.clone();
        match key {
            KeyInput::Esc => {
                self.mode = Mode::Normal;
                // Leaving the note's prompt still hands back: the person chose to say nothing.
                if kind == LineKind::HandBackNote {
                    return self.hand_back(None);
                }
                Vec::new()
            }
            KeyInput::Enter => {
                self.mode = Mode::Normal;
                self.submit_line(kind, text)
            }
            KeyInput::Backspace => {
                text.pop();
                self.mode = Mode::Line { kind, text };
                Vec::new()
            }
            KeyInput::Char(c) => {
                text.push(c);
                self.mode = Mode::Line { kind, text };
                Vec::new()
            }
            KeyInput::Tab if kind == LineKind::Press => {
                let text = self.complete_chord(text);
                self.mode = Mode::Line { kind, text };
                Vec::new()
            }
            _ => {
                self.mode = Mode::Line { kind, text };
                Vec::new()
            }
        }
    }

    fn submit_line(&mut self, kind: LineKind, text: String) -> Vec<Effect> {
        match kind {
            LineKind::Type => {
                if text.is_empty() {
                    self.notice("nothing typed");
                    return Vec::new();
                }
                self.step(BrowserAction::type_text(text))
            }
            LineKind::Finish => self.step(BrowserAction::finish(text)),
            LineKind::Note => self.attach_note(text),
            LineKind::Press => self.press_line(&text),
            LineKind::Hold => self.hold(&text),
            LineKind::SkipReason => self.skip_with(text),
            LineKind::HandBackNote => {
                let note = text.trim();
                self.hand_back((!note.is_empty()).then(|| note.to_string()))
            }
            LineKind::SecretName => {
                let name: String = text
                    .trim()
                    .to_uppercase()
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                if name.is_empty() {
                    return Vec::new();
                }
                self.line(LineKind::SecretValue { name }, String::new())
            }
            LineKind::SecretValue { name } => {
                if text.is_empty() {
                    return Vec::new();
                }
                let action = BrowserAction::type_text(text);
                if let Err(errors) = action.validate() {
                    self.error(format!("invalid secret: {}", errors[0]));
                    return Vec::new();
                }
                self.request(Request::Secret { name, action })
            }
            LineKind::Reset => {
                let url = if text.trim().is_empty() {
                    self.start_url.clone()
                } else {
                    text.trim().to_string()
                };
                self.request(Request::Reset(url))
            }
            LineKind::Command => match parse_command(&text) {
                Ok(Command::Action(action)) => self.step(action),
                Ok(Command::Reset(url)) => {
                    let url = url.unwrap_or_else(|| self.start_url.clone());
                    self.request(Request::Reset(url))
                }
                Ok(Command::Task(id)) => self.request(Request::ResetTask(id)),
                Ok(Command::Grid) => self.toggle_grid(),
                Ok(Command::Zoom(zoom)) => self.set_zoom(zoom),
                Ok(Command::Text) => self.toggle_text(),
                Ok(Command::Help) => {
                    self.help = true;
                    Vec::new()
                }
                Ok(Command::Quit) => self.quit(),
                Err(message) => {
                    self.error(message);
                    Vec::new()
                }
            },
        }
    }
}
