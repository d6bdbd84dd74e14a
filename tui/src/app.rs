//! The terminal UI's model and its pure `update`: every input and every server event becomes a
//! `Msg`; `update` changes the model and returns the `Effect`s to carry out (frames to send, a
//! picture to encode, quit). Nothing here touches the terminal or the network, so all of it is
//! tested directly.

use std::collections::VecDeque;
use std::time::Duration;

use crate::command::{parse_command, Command};
use crate::picture::{Region, View, PAGE_HEIGHT, PAGE_WIDTH, ZOOMS};
use browserenv::models::{BrowserAction, Key};

/// Arrow keys move the crosshair this far; with Shift, `FAST_STEP`.
pub const STEP: i64 = 10;
pub const FAST_STEP: i64 = 50;

/// What the UI asks of the server connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Reset(String),
    /// Reset to a task of the server's task set (`task_id`).
    ResetTask(String),
    Step(BrowserAction),
    /// Text typed into the page but recorded (and shown) only as `<secret:NAME>`.
    Secret {
        name: String,
        action: BrowserAction,
    },
}

impl Request {
    /// Short human description for the status bar (never a secret's value).
    pub fn describe(&self) -> String {
        match self {
            Request::Reset(url) => format!("reset {url}"),
            Request::ResetTask(id) => format!("task {id}"),
            Request::Step(action) => crate::command::describe(action),
            Request::Secret { name, .. } => format!("type <secret:{name}>"),
        }
    }

    pub fn is_reset(&self) -> bool {
        matches!(self, Request::Reset(_) | Request::ResetTask(_))
    }
}

/// A task as the UI shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskView {
    pub id: String,
    pub category: String,
    pub instruction: String,
}

/// Connection to the server, as the status bar shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    Connecting,
    Connected,
    /// The server is gone or closed the socket; `r` reconnects.
    Lost(String),
}

/// What the last observation said, kept for the status bar and the picture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub url: String,
    pub title: String,
    pub error: String,
    pub done: bool,
    pub step: u64,
    pub latency: Duration,
    pub reward: Option<f64>,
    /// A task episode's verdict at finish: passed, and why.
    pub verdict: Option<(bool, String)>,
    /// The episode's own step limit (a task's), when the server reports it.
    pub max_steps: Option<u64>,
}

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
}

impl LineKind {
    pub fn prompt(&self) -> String {
        match self {
            LineKind::Type => "type> ".into(),
            LineKind::Command => ":".into(),
            LineKind::Finish => "finish, answer (optional)> ".into(),
            LineKind::Reset => "reset to URL> ".into(),
            LineKind::Note => "note on the last step> ".into(),
            LineKind::SecretName => "secret name (e.g. PASSWORD)> ".into(),
            LineKind::SecretValue { name } => {
                format!("{name} (hidden, recorded as <secret:{name}>)> ")
            }
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

/// Feedback line: what just happened, or what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub text: String,
    pub is_error: bool,
}

/// Everything the UI reacts to.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// A key, already decoded by `input.rs`.
    Key(KeyInput),
    /// A left click at a terminal cell.
    Click {
        column: u16,
        row: u16,
    },
    /// A left click at a terminal pixel (SGR-Pixels mouse reports), 0-based.
    ClickPixel {
        x: u32,
        y: u32,
    },
    /// Pasted text (bracketed paste): goes into the open line editor.
    Paste(String),
    /// Wheel: +1 down, -1 up.
    Wheel(i64),
    Resize {
        width: u16,
        height: u16,
    },
    Connected,
    Observation {
        url: String,
        title: String,
        error: String,
        done: bool,
        step: u64,
        latency: Duration,
        reward: Option<f64>,
        verdict: Option<(bool, String)>,
        max_steps: Option<u64>,
    },
    /// An error frame: the session goes on.
    ServerError {
        code: String,
        message: String,
    },
    Disconnected(String),
    /// Writing the recording failed (the UI goes on; the message says what was lost).
    RecorderError(String),
    /// The server offers no text layer (said once; the picture goes on alone).
    TextUnavailable(String),
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
    /// Re-encode the current picture (grid toggled or the picture's size changed).
    Redraw,
    Reconnect,
    Quit,
}

pub struct App {
    pub mode: Mode,
    pub help: bool,
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
    /// Watch mode: the session followed, read-only.
    pub watching: Option<String>,
}

impl App {
    pub fn new(start_url: String, server_label: String) -> Self {
        App {
            mode: Mode::Normal,
            help: false,
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
        }
    }

    /// The task being worked on.
    pub fn task(&self) -> Option<&TaskView> {
        self.tasks.get(self.task_index?)
    }

    /// Start the task at `index` (or say that the list is done).
    fn start_task(&mut self, index: usize) -> Vec<Effect> {
        match self.tasks.get(index) {
            Some(task) => {
                let id = task.id.clone();
                self.task_index = Some(index);
                self.request(Request::ResetTask(id))
            }
            None => {
                self.notice(format!("all {} tasks done", self.tasks.len()));
                Vec::new()
            }
        }
    }

    fn next_task(&mut self) -> usize {
        self.task_index.map_or(0, |i| i + 1)
    }

    /// An episode a person would lose by quitting: reset happened, it has not ended, and the
    /// server still holds it.
    pub fn episode_in_progress(&self) -> bool {
        self.watching.is_none()
            && self.link == LinkState::Connected
            && self.observed.as_ref().is_some_and(|o| !o.done)
    }

    fn notice(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            is_error: false,
        });
    }

    fn error(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            is_error: true,
        });
    }

    /// Send now, or queue behind the request in flight (shown in the status bar).
    fn request(&mut self, request: Request) -> Vec<Effect> {
        if let Some(session) = &self.watching {
            let text = format!(
                "watching {session}: read-only, {} not sent (Tab: next session)",
                request.describe()
            );
            self.error(text);
            return Vec::new();
        }
        if self.link != LinkState::Connected {
            self.error(format!(
                "not connected: {} not sent (press r to reconnect)",
                request.describe()
            ));
            return Vec::new();
        }
        if self.in_flight.is_some() {
            self.notice(format!("queued: {}", request.describe()));
            self.queue.push_back(request);
            return Vec::new();
        }
        self.in_flight = Some(request.clone());
        vec![Effect::Send(request)]
    }

    fn step(&mut self, action: BrowserAction) -> Vec<Effect> {
        if let Err(errors) = action.validate() {
            let text = errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            self.error(format!("invalid action: {text}"));
            return Vec::new();
        }
        self.request(Request::Step(action))
    }

    fn click_at(&mut self, x: i64, y: i64) -> Vec<Effect> {
        self.crosshair = (x, y);
        self.step(BrowserAction::click(x, y))
    }

    fn move_crosshair(&mut self, dx: i64, dy: i64) {
        let (x, y) = self.crosshair;
        self.crosshair = (
            (x + dx).clamp(0, PAGE_WIDTH - 1),
            (y + dy).clamp(0, PAGE_HEIGHT - 1),
        );
        // The lens follows a crosshair that leaves it.
        if self.zoom > 1 && !self.lens.contains(self.crosshair.0, self.crosshair.1) {
            self.lens = Region::lens(self.zoom, self.crosshair);
        }
    }

    /// The part of the page the picture shows: all of it, or the lens's part.
    pub fn region(&self) -> Region {
        if self.zoom > 1 {
            self.lens
        } else {
            Region::PAGE
        }
    }

    /// Whether the picture should carry the text layer (and so whether to ask for it).
    pub fn wants_text(&self) -> bool {
        self.text_picture && self.text_layer && self.text_unavailable.is_none()
    }

    /// `z`: 1x, 2x, 4x, back to 1x; or straight to `zoom`.
    fn set_zoom(&mut self, zoom: Option<u8>) -> Vec<Effect> {
        let next = zoom.unwrap_or_else(|| {
            let at = ZOOMS.iter().position(|&z| z == self.zoom).unwrap_or(0);
            ZOOMS[(at + 1) % ZOOMS.len()]
        });
        if !ZOOMS.contains(&next) {
            self.error("zoom is 1, 2 or 4");
            return Vec::new();
        }
        self.zoom = next;
        self.lens = Region::lens(next, self.crosshair);
        self.notice(if next == 1 {
            "zoom off: the whole page".to_string()
        } else {
            format!("zoom {next}x around the crosshair (arrows move it, z again for more)")
        });
        vec![Effect::Redraw]
    }

    fn toggle_text(&mut self) -> Vec<Effect> {
        if !self.text_picture {
            self.error("the text layer draws over half-blocks only (--graphics halfblocks)");
            return Vec::new();
        }
        self.text_layer = !self.text_layer;
        let text = match (&self.text_unavailable, self.text_layer) {
            (Some(reason), true) => format!("text layer on, but {reason}"),
            (None, true) => "text layer on".into(),
            (_, false) => "text layer off: the picture alone".into(),
        };
        self.notice(text);
        vec![Effect::Redraw]
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Key(key) => self.on_key(key),
            Msg::Click { column, row } => {
                if self.help || !matches!(self.mode, Mode::Normal) {
                    return Vec::new();
                }
                match self.picture.and_then(|p| p.cell_to_page(column, row)) {
                    Some((x, y)) => self.click_at(x, y),
                    None => Vec::new(),
                }
            }
            Msg::ClickPixel { x, y } => {
                if self.help || !matches!(self.mode, Mode::Normal) {
                    return Vec::new();
                }
                match self.picture.and_then(|p| p.pixel_to_page(x, y)) {
                    Some((x, y)) => self.click_at(x, y),
                    None => Vec::new(),
                }
            }
            Msg::Paste(pasted) => {
                match &mut self.mode {
                    Mode::Line { text, .. } => text.push_str(&pasted.replace(['\r', '\n'], " ")),
                    _ => self.notice("paste into the type line: press i first"),
                }
                Vec::new()
            }
            Msg::Wheel(direction) => {
                if self.help {
                    return Vec::new();
                }
                self.step(BrowserAction::scroll(direction * self.scroll_step))
            }
            Msg::Resize { width, height } => {
                self.terminal = (width, height);
                vec![Effect::Redraw]
            }
            Msg::Connected => {
                self.link = LinkState::Connected;
                if let Some(session) = &self.watching {
                    let text = format!("watching session {session} (read-only; Tab: next session)");
                    self.notice(text);
                    return Vec::new();
                }
                self.notice(format!("connected to {}", self.server_label));
                if !self.tasks.is_empty() {
                    let index = self.task_index.unwrap_or(0);
                    return self.start_task(index);
                }
                let url = self.start_url.clone();
                self.request(Request::Reset(url))
            }
            Msg::Observation {
                url,
                title,
                error,
                done,
                step,
                latency,
                reward,
                verdict,
                max_steps,
            } => {
                let finished = self.in_flight.take();
                if let Some(request) = &finished {
                    if request.is_reset() {
                        self.notice(format!("new episode at {url}"));
                    } else if error.is_empty() {
                        self.notice(format!(
                            "{} took {} ms",
                            request.describe(),
                            latency.as_millis()
                        ));
                    }
                }
                if !error.is_empty() {
                    let ended = browserenv::ObservationError::parse(&error)
                        .is_some_and(browserenv::ObservationError::ends_episode);
                    let after = if ended {
                        " (the episode is over: r resets)"
                    } else {
                        ""
                    };
                    self.error(format!("page error: {error}{after}"));
                }
                if let Some((passed, why)) = &verdict {
                    let reward = reward.unwrap_or_default();
                    let next = if self.next_task() < self.tasks.len() {
                        " (N: next task)"
                    } else {
                        ""
                    };
                    let text = if *passed {
                        format!("task passed, reward {reward}{next}")
                    } else {
                        format!("task failed, reward {reward}: {why}{next}")
                    };
                    self.notice = Some(Notice {
                        text,
                        is_error: !passed,
                    });
                }
                if done {
                    // Nothing queued can run in an ended episode.
                    self.queue.clear();
                }
                self.observed = Some(Observed {
                    url,
                    title,
                    error,
                    done,
                    step,
                    latency,
                    reward,
                    verdict,
                    max_steps,
                });
                let mut effects = vec![Effect::Redraw];
                effects.extend(self.send_next());
                effects
            }
            Msg::ServerError { code, message } => {
                self.in_flight = None;
                self.error(format!("{code}: {message}"));
                self.send_next()
            }
            Msg::Disconnected(reason) => {
                self.in_flight = None;
                self.queue.clear();
                self.link = LinkState::Lost(reason.clone());
                self.error(format!("disconnected: {reason} (press r to reconnect)"));
                Vec::new()
            }
            Msg::RecorderError(error) => {
                self.error(format!("recording: {error}"));
                Vec::new()
            }
            Msg::TextUnavailable(reason) => {
                if self.text_unavailable.is_none() {
                    self.notice(format!(
                        "no text layer: {reason}; showing the picture alone"
                    ));
                    self.text_unavailable = Some(reason);
                }
                vec![Effect::Redraw]
            }
            Msg::Tick => {
                self.spinner = self.spinner.wrapping_add(1);
                Vec::new()
            }
        }
    }

    fn send_next(&mut self) -> Vec<Effect> {
        match self.queue.pop_front() {
            Some(next) => {
                self.in_flight = Some(next.clone());
                vec![Effect::Send(next)]
            }
            None => Vec::new(),
        }
    }

    fn on_key(&mut self, key: KeyInput) -> Vec<Effect> {
        if self.help {
            // Any key closes the help; it never acts on the page.
            self.help = false;
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

    fn on_line_key(&mut self, kind: LineKind, mut text: String, key: KeyInput) -> Vec<Effect> {
        let kind = kind.clone();
        match key {
            KeyInput::Esc => {
                self.mode = Mode::Normal;
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
            LineKind::Note => {
                if !self.recording {
                    self.error("recording is off: nothing to attach a note to (R records)");
                    return Vec::new();
                }
                if text.trim().is_empty() {
                    return Vec::new();
                }
                self.notice("note attached to the last step");
                vec![Effect::Note(text)]
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

    fn toggle_grid(&mut self) -> Vec<Effect> {
        self.grid = !self.grid;
        self.notice(if self.grid { "grid on" } else { "grid off" });
        vec![Effect::Redraw]
    }

    fn quit(&mut self) -> Vec<Effect> {
        if self.episode_in_progress() {
            self.mode = Mode::ConfirmQuit;
            Vec::new()
        } else {
            vec![Effect::Quit]
        }
    }

    fn line(&mut self, kind: LineKind, text: String) -> Vec<Effect> {
        self.mode = Mode::Line { kind, text };
        Vec::new()
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
            KeyInput::Enter => {
                let (x, y) = self.crosshair;
                self.click_at(x, y)
            }
            KeyInput::PageDown => self.step(BrowserAction::scroll(self.scroll_step)),
            KeyInput::PageUp => self.step(BrowserAction::scroll(-self.scroll_step)),
            KeyInput::Tab if self.watching.is_some() => vec![Effect::NextSession],
            KeyInput::Tab => self.step(BrowserAction::key(Key::Tab)),
            KeyInput::Backspace => self.step(BrowserAction::key(Key::Backspace)),
            KeyInput::CtrlA => self.step(BrowserAction::key(Key::CtrlA)),
            KeyInput::CtrlC => self.quit(),
            KeyInput::Esc => {
                self.notice = None;
                Vec::new()
            }
            KeyInput::Char(c) => match c {
                'i' | 't' => self.line(LineKind::Type, String::new()),
                ':' => self.line(LineKind::Command, String::new()),
                'k' => {
                    self.mode = Mode::KeyPrefix;
                    Vec::new()
                }
                'e' => self.step(BrowserAction::key(Key::Enter)),
                'b' => self.step(BrowserAction::back()),
                'w' => self.step(BrowserAction::wait()),
                'f' => self.line(LineKind::Finish, String::new()),
                'r' => {
                    if let LinkState::Lost(_) = self.link {
                        self.link = LinkState::Connecting;
                        self.notice("reconnecting...");
                        return vec![Effect::Reconnect];
                    }
                    let current = self
                        .observed
                        .as_ref()
                        .map(|o| o.url.clone())
                        .unwrap_or_else(|| self.start_url.clone());
                    self.line(LineKind::Reset, current)
                }
                'j' => self.step(BrowserAction::scroll(self.scroll_step)),
                'u' => self.step(BrowserAction::scroll(-self.scroll_step)),
                'g' => self.toggle_grid(),
                'z' => self.set_zoom(None),
                'T' => self.toggle_text(),
                'R' => {
                    if !self.can_record {
                        self.error("start with --record DIR to record demonstrations");
                        return Vec::new();
                    }
                    self.recording = !self.recording;
                    self.notice(if self.recording {
                        "recording on (from the next reset if an episode is under way)"
                    } else {
                        "recording off"
                    });
                    vec![Effect::Record(self.recording)]
                }
                'n' => self.line(LineKind::Note, String::new()),
                's' => self.line(LineKind::SecretName, String::new()),
                'N' | 'S' => {
                    if self.tasks.is_empty() {
                        self.error("no task list (start with --tasks FILE)");
                        return Vec::new();
                    }
                    if c == 'N' && self.episode_in_progress() {
                        self.error(
                            "the episode is in progress: finish it (f), or S skips the task",
                        );
                        return Vec::new();
                    }
                    let next = self.next_task();
                    self.start_task(next)
                }
                '?' => {
                    self.help = true;
                    Vec::new()
                }
                'q' => self.quit(),
                _ => Vec::new(),
            },
        }
    }
}

/// Every binding, for the help overlay (and the README).
pub const BINDINGS: &[(&str, &str)] = &[
    ("mouse click", "click that page pixel"),
    (
        "wheel, j/u, PgDn/PgUp",
        "scroll down / up (--scroll-step px)",
    ),
    ("arrows (Shift: x5)", "move the crosshair 10 px (50 px)"),
    ("Enter", "click at the crosshair"),
    ("i or t", "type mode: text, Enter sends it"),
    ("e", "key ENTER"),
    ("Tab, Backspace, Ctrl+A", "key TAB / BACKSPACE / CTRL+A"),
    (
        "k + key",
        "any of the 9 keys: Enter Tab Esc Bksp a(CTRL+A) arrows",
    ),
    ("b / w", "back / wait"),
    ("s", "secret: type a named value, recorded as <secret:NAME>"),
    ("f", "finish (asks for an optional answer)"),
    ("r", "reset (asks for a URL); reconnect when disconnected"),
    (":", "command line, then Enter:"),
    ("", "  click X Y · type TEXT · key NAME · scroll DY"),
    ("", "  back · wait · finish [ANSWER] · reset [URL]"),
    ("", "  grid · zoom [1|2|4] · text · help · quit"),
    ("g", "grid lines every 100 px (50 / 25 px when zoomed)"),
    ("z", "zoom lens: 2x, 4x around the crosshair, then off"),
    (
        "T",
        "text layer on/off (half-blocks: the page's text as characters)",
    ),
    (
        "R / n",
        "recording on/off (--record DIR) / note on the last step",
    ),
    ("N / S", "next task / skip this task (--tasks FILE)"),
    ("?", "this help"),
    ("q / Ctrl+C", "quit (asks if an episode is in progress)"),
    ("Esc", "leave a prompt, clear the message"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn connected_app() -> App {
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

    fn observation(url: &str, done: bool) -> Msg {
        Msg::Observation {
            url: url.into(),
            title: "T".into(),
            error: String::new(),
            done,
            step: 0,
            latency: Duration::from_millis(80),
            reward: Some(0.0),
            verdict: None,
            max_steps: None,
        }
    }

    fn key(app: &mut App, key: KeyInput) -> Vec<Effect> {
        app.update(Msg::Key(key))
    }

    fn sent(effects: &[Effect]) -> Vec<BrowserAction> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send(Request::Step(action)) => Some(action.clone()),
                _ => None,
            })
            .collect()
    }

    fn finish_step(app: &mut App) -> Vec<Effect> {
        app.update(observation("http://127.0.0.1:1/", false))
    }

    #[test]
    fn a_click_on_the_picture_clicks_the_mapped_pixel() {
        let mut app = connected_app();
        let effects = app.update(Msg::Click {
            column: 43,
            row: 16,
        });
        assert_eq!(sent(&effects), vec![BrowserAction::click(395, 310)]);
        assert_eq!(app.crosshair, (395, 310));
        finish_step(&mut app);
        assert!(
            app.update(Msg::Click { column: 2, row: 16 }).is_empty(),
            "on the ruler"
        );
        assert!(
            app.update(Msg::Click {
                column: 50,
                row: 31
            })
            .is_empty(),
            "below the picture"
        );
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
    fn help_shows_on_question_mark_and_any_key_closes_it() {
        let mut app = connected_app();
        key(&mut app, KeyInput::Char('?'));
        assert!(app.help);
        assert!(
            app.update(Msg::Click {
                column: 43,
                row: 16
            })
            .is_empty(),
            "no clicks under help"
        );
        assert!(
            key(&mut app, KeyInput::Char('b')).is_empty(),
            "the key only closes help"
        );
        assert!(!app.help);
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
        let effects = app.update(Msg::Click { column: 4, row: 1 });
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
}
