//! What a key does: the `Mode` that decides it (normal, a line editor open, the second key of
//! `k <key>`, confirming a quit), the normal-mode bindings, and `BINDINGS`, their list for the
//! help overlay. Keeping the handler and the list in one file keeps them in step.

use browserenv::models::{BrowserAction, Key, MouseButton};

use super::crosshair::{FAST_STEP, STEP};
use super::{App, Effect, KeyInput, LineKind, LinkState};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Line {
        kind: LineKind,
        text: String,
    },
    /// Waiting for the second keystroke of `k <key>`.
    KeyPrefix,
    ConfirmQuit,
}

impl App {
    pub(super) fn on_key(&mut self, key: KeyInput) -> Vec<Effect> {
        if self.help {
            // Any key shows the help's next page, or closes it after the last; it never acts on
            // the page.
            self.help_page += 1;
            if usize::from(self.help_page) >= help_pages(self.terminal.1) {
                self.help = false;
                self.help_page = 0;
            }
            return Vec::new();
        }
        match self.mode.clone() {
            Mode::ConfirmQuit => match key {
                KeyInput::Char('y') | KeyInput::Char('Y') => vec![Effect::Quit],
                _ => {
                    self.mode = Mode::Normal;
                    self.notice("quit cancelled");
                    Vec::new()
                }
            },
            Mode::KeyPrefix => {
                self.mode = Mode::Normal;
                let named = match key {
                    KeyInput::Enter => Some(Key::Enter),
                    KeyInput::Tab => Some(Key::Tab),
                    KeyInput::Esc => Some(Key::Escape),
                    KeyInput::Backspace => Some(Key::Backspace),
                    KeyInput::Char('a') | KeyInput::CtrlA => Some(Key::CtrlA),
                    KeyInput::Up { .. } => Some(Key::Up),
                    KeyInput::Down { .. } => Some(Key::Down),
                    KeyInput::Left { .. } => Some(Key::Left),
                    KeyInput::Right { .. } => Some(Key::Right),
                    _ => None,
                };
                match named {
                    Some(named) => self.step(BrowserAction::key(named)),
                    None => {
                        self.error("k then: Enter Tab Esc Backspace a(=CTRL+A) or an arrow");
                        Vec::new()
                    }
                }
            }
            Mode::Line { kind, text } => self.on_line_key(kind, text, key),
            Mode::Normal => self.on_normal_key(key),
        }
    }

    /// Quit at once, or ask first when an episode would be lost.
    pub(super) fn quit(&mut self) -> Vec<Effect> {
        if self.episode_in_progress() {
            self.mode = Mode::ConfirmQuit;
            Vec::new()
        } else {
            vec![Effect::Quit]
        }
    }

    fn on_normal_key(&mut self, key: KeyInput) -> Vec<Effect> {
        let fast = |f: bool| if f { FAST_STEP } else { STEP };
        match key {
            KeyInput::Up { fast: f } => {
                self.move_crosshair(0, -fast(f));
                Vec::new()
            }
            KeyInput::Down { fast: f } => {
                self.move_crosshair(0, fast(f));
                Vec::new()
            }
            KeyInput::Left { fast: f } => {
                self.move_crosshair(-fast(f), 0);
                Vec::new()
            }
            KeyInput::Right { fast: f } => {
                self.move_crosshair(fast(f), 0);
                Vec::new()
            }
            KeyInput::Enter => self.click_crosshair(MouseButton::Left, 1),
            KeyInput::PageDown => self.step(BrowserAction::scroll(self.scroll_step)),
            KeyInput::PageUp => self.step(BrowserAction::scroll(-self.scroll_step)),
            KeyInput::Tab if self.watch_mode && !self.in_control => vec![Effect::NextSession],
            KeyInput::Tab => self.step(BrowserAction::key(Key::Tab)),
            KeyInput::Backspace => self.step(BrowserAction::key(Key::Backspace)),
            KeyInput::CtrlA => self.step(BrowserAction::key(Key::CtrlA)),
            KeyInput::CtrlC => self.quit(),
            KeyInput::Esc => {
                self.notice = None;
                Vec::new()
            }
            KeyInput::Char(c) => self.on_char(c),
        }
    }

    /// A character key in normal mode.
    fn on_char(&mut self, c: char) -> Vec<Effect> {
        match c {
            'i' | 't' => self.line(LineKind::Type, String::new()),
            ':' => self.line(LineKind::Command, String::new()),
            'k' => {
                self.mode = Mode::KeyPrefix;
                Vec::new()
            }
            'e' => self.step(BrowserAction::key(Key::Enter)),
            'd' => self.click_crosshair(MouseButton::Left, 2),
            'D' => self.click_crosshair(MouseButton::Left, 3),
            'x' => self.click_crosshair(MouseButton::Right, 1),
            'X' => self.click_crosshair(MouseButton::Middle, 1),
            'h' => self.hover_crosshair(),
            'm' => self.mark(),
            'v' => self.drag_from_mark(),
            'M' => self.line(LineKind::Hold, String::new()),
            'p' => self.line(LineKind::Press, String::new()),
            'b' => self.step(BrowserAction::back()),
            'w' => self.step(BrowserAction::wait()),
            'f' => self.line(LineKind::Finish, String::new()),
            'c' if self.watch_mode => self.toggle_control(),
            'r' => self.reset_or_reconnect(),
            'j' => self.step(BrowserAction::scroll(self.scroll_step)),
            'u' => self.step(BrowserAction::scroll(-self.scroll_step)),
            'g' => self.toggle_grid(),
            'z' => self.set_zoom(None),
            'T' => self.toggle_text(),
            'R' => self.toggle_recording(),
            'n' => self.line(LineKind::Note, String::new()),
            's' => self.line(LineKind::SecretName, String::new()),
            'N' if self.collecting() => self.ask_next_task(),
            'S' if self.collecting() => self.ask_skip_reason(),
            'N' => self.advance_task(false),
            'S' => self.advance_task(true),
            'P' => self.mark_demonstration(true),
            'F' => self.mark_demonstration(false),
            'V' => self.toggle_progress(),
            '?' => {
                self.help = true;
                Vec::new()
            }
            'q' => self.quit(),
            _ => Vec::new(),
        }
    }

    /// `r`: reconnect a lost link; else start the task over (collecting) or ask for the URL to
    /// reset to (the page on screen filled in).
    fn reset_or_reconnect(&mut self) -> Vec<Effect> {
        if let LinkState::Lost(_) = self.link {
            self.link = LinkState::Connecting;
            self.notice("reconnecting...");
            return vec![Effect::Reconnect];
        }
        if self.collecting() {
            return self.restart_task();
        }
        let current = self
            .observed
            .as_ref()
            .map(|o| o.url.clone())
            .unwrap_or_else(|| self.start_url.clone());
        self.line(LineKind::Reset, current)
    }
}

/// The help's rows on a page of a terminal `height` rows high (the overlay's borders and a
/// margin around it take four).
pub fn help_rows(height: u16) -> usize {
    usize::from(height.saturating_sub(4)).max(4)
}

/// How many pages the help takes on a terminal `height` rows high.
pub fn help_pages(height: u16) -> usize {
    BINDINGS.len().div_ceil(help_rows(height))
}

/// Every binding, for the help overlay (and docs/terminal-ui.md, "Keys").
pub const BINDINGS: &[(&str, &str)] = &[
    (
        "mouse click",
        "click that page pixel (right, middle: their button)",
    ),
    (
        "click again, twice",
        "double / triple click (one step, count 2 / 3)",
    ),
    (
        "Shift/Ctrl/Alt + click",
        "click with the modifiers the terminal reports",
    ),
    (
        "mouse drag",
        "drag: the path followed, button held (≤64 points)",
    ),
    (
        "mouse resting",
        "hover: move there (where the terminal reports motion)",
    ),
    (
        "wheel, j/u, PgDn/PgUp",
        "scroll down / up (--scroll-step px)",
    ),
    ("arrows (Shift: x5)", "move the crosshair 10 px (50 px)"),
    ("Enter", "click at the crosshair"),
    ("d / D", "double / triple click at the crosshair"),
    ("x / X", "right / middle click at the crosshair"),
    ("h", "hover: move the pointer to the crosshair"),
    (
        "m, then v",
        "mark the crosshair; drag from the mark to the crosshair",
    ),
    ("M", "hold SHIFT/CTRL/ALT/META for the next click or drag"),
    ("p", "press a chord: SHIFT+TAB, PAGE_DOWN 3 (Tab completes)"),
    ("i or t", "type mode: text, Enter sends it"),
    ("e", "key ENTER"),
    ("Tab, Backspace, Ctrl+A", "key TAB / BACKSPACE / CTRL+A"),
    (
        "k + key",
        "every action key: Enter Tab Esc Bksp a(CTRL+A) arrows",
    ),
    (
        "",
        "an open dropdown: click an option, or k+arrows, k+Enter",
    ),
    ("b / w", "back / wait"),
    ("s", "secret: type a named value, recorded as <secret:NAME>"),
    ("f", "finish (asks for an optional answer)"),
    ("r", "reset (asks for a URL); reconnect when disconnected"),
    (":", "command line, then Enter:"),
    (
        "",
        "  click X Y [right|middle] [2|3] [SHIFT+CTRL] · move X Y",
    ),
    (
        "",
        "  drag X Y X Y ... · down X Y · up X Y · press CHORD [N]",
    ),
    ("", "  type TEXT · key NAME · scroll DY [DX [X Y]]"),
    ("", "  select X Y LABEL · back · forward · goto URL · wait"),
    ("", "  finish [ANSWER] · reset [URL] · grid · zoom [1|2|4]"),
    ("", "  text · help · quit"),
    ("g", "grid lines every 100 px (50 / 25 px when zoomed)"),
    ("z", "zoom lens: 2x, 4x around the crosshair, then off"),
    (
        "T",
        "text layer on/off (half-blocks: page text as characters)",
    ),
    (
        "R / n",
        "recording on/off (--record DIR) / note on the last step",
    ),
    (
        "N / S",
        "next task / skip it (--tasks FILE; collect: asks why)",
    ),
    (
        "P / F",
        "collect: task done as asked / not (saves it, next comes)",
    ),
    (
        "V",
        "collect: the campaign's progress; r starts the task over",
    ),
    ("c", "watch: take control / hand back (a note if it asked)"),
    ("Tab", "watch: next session (one asking for a person first)"),
    ("?", "this help"),
    ("q / Ctrl+C", "quit (asks if an episode is in progress)"),
    ("Esc", "leave a prompt, clear the message"),
];
