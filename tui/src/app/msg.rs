//! What goes into `App::update` and what comes out: `Msg` (every input and server event),
//! `KeyInput` (keys as the UI understands them) and `Effect` (what the event loop is to do).

use std::time::Duration;

use browserenv::models::{Modifiers, MouseButton};

use super::{Observed, Request};

/// What the mouse did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseKind {
    Down(MouseButton),
    /// Moved with a button held.
    Drag,
    Up,
    /// Moved with no button held (terminals that report motion).
    Moved,
}

/// Where the mouse is: a terminal cell, or a terminal pixel (SGR-Pixels reports, 0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spot {
    Cell { column: u16, row: u16 },
    Pixel { x: u32, y: u32 },
}

/// Everything the UI reacts to.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// A key, already decoded by `input.rs`.
    Key(KeyInput),
    /// The mouse: a button pressed, moved while held, released, or the pointer moving with none
    /// held, at a terminal cell or pixel, with the modifiers the terminal reported.
    Mouse {
        kind: MouseKind,
        at: Spot,
        modifiers: Modifiers,
    },
    /// The multi-click window of the click numbered so closed: it is sent with its count.
    ClickDue(u64),
    /// The pointer rested where hover number so left it: a `move` goes there.
    HoverDue(u64),
    /// Pasted text (bracketed paste): goes into the open line editor.
    Paste(String),
    /// Wheel: +1 down, -1 up.
    Wheel(i64),
    Resize {
        width: u16,
        height: u16,
    },
    Connected,
    /// What the server answered a reset or step with (or a watched session's frame).
    Observation(Observed),
    /// An error frame: the session goes on.
    ServerError {
        code: String,
        message: String,
    },
    Disconnected(String),
    /// Watch mode: no session to follow yet on this server; the link waits for one.
    WaitingForSession(String),
    /// Watch mode: the link follows this session from now on.
    Following(String),
    /// Watch mode: the followed session ended (its last frame stays on screen).
    WatchedEnded(String),
    /// Watch mode: the server answered the person's own step (its frame came as an event).
    Stepped,
    /// Watch mode: who is in control (`holder` a person's name, None the agent); `yours` when the
    /// server says whether it is this UI (the answer to take and release).
    Control {
        holder: Option<String>,
        yours: Option<bool>,
    },
    /// Watch mode: the watched session's agent asks for a person (`request_human`), or (None) no
    /// longer does; from its frames, at once.
    Asking(Option<crate::asks::Ask>),
    /// Watch mode: every session asking for a person, the longest waiting first, as the server's
    /// list of sessions said when it was last asked.
    Asks(Vec<crate::asks::Ask>),
    /// Writing the recording failed (the UI goes on; the message says what was lost).
    RecorderError(String),
    /// The server offers no text layer (said once; the picture goes on alone).
    TextUnavailable(String),
    /// The campaign answered (`browserenv-tui collect`).
    Campaign(super::CampaignReply),
    Tick,
}

/// Keys as the UI understands them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyInput {
    Char(char),
    Enter,
    Esc,
    Tab,
    Backspace,
    CtrlA,
    CtrlC,
    Up { fast: bool },
    Down { fast: bool },
    Left { fast: bool },
    Right { fast: bool },
    PageUp,
    PageDown,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Send(Request),
    /// Attach a note to the last recorded step.
    Note(String),
    /// Recording switched on or off.
    Record(bool),
    /// Watch mode: follow the next live session.
    NextSession,
    /// Watch mode: take control of the watched session.
    Take,
    /// Watch mode: hand the watched session back, with a note for an agent that asked for a
    /// person (its `request_human` returns it).
    HandBack {
        note: Option<String>,
    },
    /// Ring the terminal's bell: an agent started asking for a person.
    Bell,
    /// Re-encode the current picture (grid toggled or the picture's size changed).
    Redraw,
    Reconnect,
    /// Feed `msg` back to `update` after `delay` (the multi-click window, the hover's rest).
    After {
        delay: Duration,
        msg: Box<Msg>,
    },
    /// Ask the campaign (`browserenv-tui collect`); the answer comes back as `Msg::Campaign`.
    Campaign(super::CampaignCall),
    Quit,
}
