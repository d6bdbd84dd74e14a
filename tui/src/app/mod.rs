//! The terminal UI's model and its pure `update`: every input and every server event becomes a
//! `Msg`; `update` changes the model and returns the `Effect`s to carry out (frames to send, a
//! picture to encode, quit). Nothing here touches the terminal or the network, so all of it is
//! tested directly.
//!
//! This file holds `App` (the model's state) and `update`, which only dispatches; the handlers
//! live by what they handle:
//! - `msg`: `Msg`, `KeyInput`, `Effect`, what goes in and what comes out;
//! - `link`: `Request` and its queue, `LinkState`, `Observed`: connect, observations, errors;
//! - `keys`: `Mode` and what each key does in it, `BINDINGS` for the help;
//! - `line`: `LineKind`, the one-line editors and what Enter does with their text;
//! - `crosshair`: the crosshair, the wheel, zoom, grid, text layer;
//! - `pointer`: the mouse's gestures (clicks counted, drags, hover) and their keyboard ways;
//! - `chords`: the chord prompt and its completion over the keyboard's list;
//! - `tasks`: `TaskView`, the task list (N, S, the verdict), recording and notes;
//! - `asks`: agents asking for a person: the badge's facts, the bell, the note at the hand-back;
//! - `campaign`: collecting for a campaign (the lease, P / F, S with a reason, V);
//! - `tests`: `update` driven message by message.

mod asks;
mod campaign;
mod chords;
mod crosshair;
#[cfg(test)]
mod gesture_tests;
mod keys;
mod line;
mod link;
mod msg;
mod pointer;
mod tasks;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use crate::graphics::picture::{Region, View, PAGE_HEIGHT, PAGE_WIDTH};

pub use campaign::{CampaignCall, CampaignReply, Collecting};
pub use crosshair::{FAST_STEP, STEP};
pub use keys::{help_pages, help_rows, Mode, BINDINGS};
pub use line::LineKind;
pub use link::{LinkState, Observed, Request};
pub use msg::{Effect, KeyInput, MouseKind, Msg, Spot};
pub use pointer::{sample_path, straight_path, Gestures, HOVER_REST, MULTI_CLICK};
pub use tasks::TaskView;

/// Feedback line: what just happened, or what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub text: String,
    pub is_error: bool,
}

pub struct App {
    pub mode: Mode,
    pub help: bool,
    /// The help's page on screen (a long help on a short terminal takes more than one).
    pub help_page: u16,
    pub grid: bool,
    pub crosshair: (i64, i64),
    pub link: LinkState,
    pub observed: Option<Observed>,
    /// The request on the wire, if any.
    pub in_flight: Option<Request>,
    /// Requests given while one was in flight, sent in order.
    pub queue: VecDeque<Request>,
    pub notice: Option<Notice>,
    pub start_url: String,
    pub scroll_step: i64,
    /// From the embedded server's settings; unknown for a remote server.
    pub max_steps: Option<u64>,
    /// Where the picture is drawn and what it shows, set by the layout for mouse mapping.
    pub picture: Option<View>,
    /// The pointer between terminal events: a held button, a click waiting for the next, the
    /// mark and the modifiers held from the keyboard.
    pub gestures: Gestures,
    /// The zoom lens: 1 (the whole page), 2 or 4.
    pub zoom: u8,
    /// The part of the page the lens shows when zoomed; it follows the crosshair.
    pub lens: Region,
    /// Draw the page's text over a half-block picture (`T`).
    pub text_layer: bool,
    /// Why the server has no text layer, once it said so.
    pub text_unavailable: Option<String>,
    pub terminal: (u16, u16),
    pub spinner: usize,
    /// Whether the terminal shows the picture as text cells (half-blocks).
    pub text_picture: bool,
    pub server_label: String,
    /// `--record DIR` was given: recording can be switched on and off.
    pub can_record: bool,
    pub recording: bool,
    pub tasks: Vec<TaskView>,
    /// The task of the current (or last) episode.
    pub task_index: Option<usize>,
    /// Watch mode: the session followed (None while waiting for one).
    pub watching: Option<String>,
    /// Watch mode (`browserenv-tui watch`), with or without a session followed yet.
    pub watch_mode: bool,
    /// Watch mode: the person in control of the watched session (None: its agent).
    pub controller: Option<String>,
    /// Watch mode: this UI holds control of the watched session; the driving keys act on it.
    pub in_control: bool,
    /// Watch mode: the watched session's agent asks for a person (`request_human`).
    pub asking: Option<crate::asks::Ask>,
    /// Watch mode: every session asking for a person, the longest waiting first.
    pub asks: Vec<crate::asks::Ask>,
    /// The asks the bell rang for.
    heard: crate::asks::Heard,
    /// Collecting for a campaign (`browserenv-tui collect`): the server hands out the tasks.
    pub collect: Option<Collecting>,
    /// The notice is an observation's page error (see `page_error`).
    notice_from_page: bool,
}

impl App {
    pub fn new(start_url: String, server_label: String) -> Self {
        App {
            mode: Mode::Normal,
            help: false,
            help_page: 0,
            grid: false,
            crosshair: (PAGE_WIDTH / 2, PAGE_HEIGHT / 2),
            link: LinkState::Connecting,
            observed: None,
            in_flight: None,
            queue: VecDeque::new(),
            notice: None,
            start_url,
            scroll_step: 200,
            max_steps: None,
            picture: None,
            gestures: Gestures::default(),
            zoom: 1,
            lens: Region::PAGE,
            text_layer: true,
            text_unavailable: None,
            terminal: (80, 24),
            spinner: 0,
            text_picture: true,
            server_label,
            can_record: false,
            recording: false,
            tasks: Vec::new(),
            task_index: None,
            watching: None,
            watch_mode: false,
            controller: None,
            in_control: false,
            asking: None,
            asks: Vec::new(),
            heard: crate::asks::Heard::default(),
            collect: None,
            notice_from_page: false,
        }
    }

    /// An episode a person would lose by quitting: reset happened, it has not ended, and the
    /// server still holds it.
    pub fn episode_in_progress(&self) -> bool {
        !self.watch_mode
            && self.link == LinkState::Connected
            && self.observed.as_ref().is_some_and(|o| !o.done)
    }

    fn notice(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            is_error: false,
        });
        self.notice_from_page = false;
    }

    fn error(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            is_error: true,
        });
        self.notice_from_page = false;
    }

    /// An observation's error: it describes that page, so a later page without one clears it.
    fn page_error(&mut self, text: String) {
        self.error(text);
        self.notice_from_page = true;
    }

    /// The page the notice was about is gone (a good frame, another session).
    fn clear_page_error(&mut self) {
        if self.notice_from_page {
            self.notice = None;
            self.notice_from_page = false;
        }
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            // A click waiting for its double goes first: what the person did next comes after.
            Msg::Key(key) => {
                let mut effects = self.send_pending_click();
                effects.extend(self.on_key(key));
                effects
            }
            Msg::Mouse {
                kind,
                at,
                modifiers,
            } => self.on_mouse(kind, at, modifiers),
            Msg::ClickDue(serial) => self.on_click_due(serial),
            Msg::HoverDue(serial) => self.on_hover_due(serial),
            Msg::Paste(pasted) => self.on_paste(pasted),
            Msg::Wheel(direction) => {
                let mut effects = self.send_pending_click();
                effects.extend(self.on_wheel(direction));
                effects
            }
            Msg::Resize { width, height } => {
                self.terminal = (width, height);
                vec![Effect::Redraw]
            }
            Msg::Connected => self.on_connected(),
            Msg::Observation(observed) => self.on_observation(observed),
            Msg::ServerError { code, message } => self.on_server_error(code, message),
            Msg::Disconnected(reason) => self.on_disconnected(reason),
            Msg::WaitingForSession(server) => {
                self.watching = None;
                self.notice(format!("waiting for a session on {server}"));
                Vec::new()
            }
            Msg::Following(session) => {
                self.clear_page_error();
                if self.watching.as_ref().is_some_and(|s| *s != session) {
                    self.notice(format!("following session {session}"));
                }
                self.watching = Some(session);
                self.controller = None;
                self.in_control = false;
                // The new session's frames say whether its agent asks.
                self.asking = None;
                Vec::new()
            }
            Msg::WatchedEnded(session) => {
                self.in_control = false;
                self.controller = None;
                self.asking = None;
                self.in_flight = None;
                self.queue.clear();
                self.notice(format!(
                    "session {session} ended (its last frame stays); following the next one"
                ));
                Vec::new()
            }
            Msg::Stepped => self.on_stepped(),
            Msg::Control { holder, yours } => self.on_control(holder, yours),
            Msg::Asking(ask) => self.on_asking(ask),
            Msg::Asks(asks) => self.on_asks(asks),
            Msg::RecorderError(error) => {
                self.error(format!("recording: {error}"));
                Vec::new()
            }
            Msg::TextUnavailable(reason) => self.on_text_unavailable(reason),
            Msg::Campaign(reply) => self.on_campaign(reply),
            Msg::Tick => {
                self.spinner = self.spinner.wrapping_add(1);
                Vec::new()
            }
        }
    }
}
