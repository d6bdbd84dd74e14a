//! The one event loop: terminal input, server events, finished picture encodings and (only while
//! a request is in flight) a spinner tick. Generic over ratatui's `Backend` so tests drive it with
//! `TestBackend` and scripted input.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use image::DynamicImage;
use ratatui::backend::Backend;
use ratatui::layout::Size;
use ratatui::Terminal;
use ratatui_image::protocol::Protocol;
use tokio::sync::mpsc;

use browserenv::models::StepResult;
use browserenv::trajectory::{RecordEvent, RecorderHandle};

use crate::app::{App, Effect, Msg, Request};
use crate::connection::{self, LinkEvent};
use crate::input;
use crate::picture::{encode, prepare, Graphics};
use crate::view::{draw, layout};

/// What a picture was encoded for: a new screenshot, a new size or the grid toggle re-encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PictureKey {
    generation: u64,
    cells: Size,
    grid: bool,
}

/// Holds the decoded screenshot and its encoding for the terminal. Encoding runs on the blocking
/// pool; the previous picture stays on screen until the new one is ready, so nothing flashes.
pub struct Painter {
    graphics: Graphics,
    image: Option<Arc<DynamicImage>>,
    generation: u64,
    shown: Option<(PictureKey, Protocol)>,
    encoding: Option<PictureKey>,
    kitty_id: u32,
}

impl Painter {
    pub fn new(graphics: Graphics) -> Self {
        Painter {
            graphics,
            image: None,
            generation: 0,
            shown: None,
            encoding: None,
            kitty_id: 1,
        }
    }

    pub fn protocol(&self) -> Option<&Protocol> {
        self.shown.as_ref().map(|(_, protocol)| protocol)
    }

    pub fn set_image(&mut self, image: Option<Arc<DynamicImage>>) {
        self.generation += 1;
        if image.is_none() {
            self.shown = None;
        }
        self.image = image;
    }

    fn wanted(&self, app: &App, screen: Size) -> Option<PictureKey> {
        self.image.as_ref()?;
        let area = ratatui::layout::Rect::new(0, 0, screen.width, screen.height);
        let picture = layout(area, self.graphics.font, !app.tasks.is_empty()).picture?;
        Some(PictureKey {
            generation: self.generation,
            cells: Size::new(picture.width, picture.height),
            grid: app.grid,
        })
    }

    /// Start an encoding if the picture on screen is not the one wanted and none is running.
    fn refresh(
        &mut self,
        app: &App,
        screen: Size,
        done: &mpsc::Sender<(PictureKey, Result<Protocol, String>)>,
    ) {
        let Some(wanted) = self.wanted(app, screen) else {
            return;
        };
        let current = self.shown.as_ref().map(|(key, _)| *key);
        if current == Some(wanted) || self.encoding.is_some() {
            return;
        }
        let Some(image) = self.image.clone() else {
            return;
        };
        self.encoding = Some(wanted);
        // Alternate between two kitty image ids: the new picture replaces the old in place.
        self.kitty_id = if self.kitty_id == 1 { 2 } else { 1 };
        let (graphics, kitty_id, done) = (self.graphics, self.kitty_id, done.clone());
        tokio::task::spawn_blocking(move || {
            let prepared = prepare(&image, wanted.cells, &graphics, wanted.grid);
            let protocol = encode(prepared, wanted.cells, &graphics, kitty_id);
            let _ = done.blocking_send((wanted, protocol));
        });
    }

    fn encoded(&mut self, key: PictureKey, protocol: Result<Protocol, String>) {
        self.encoding = None;
        match protocol {
            // A result for an older screenshot is dropped; `refresh` starts the current one.
            Ok(protocol) if key.generation == self.generation => self.shown = Some((key, protocol)),
            Ok(_) => {}
            Err(err) => tracing::warn!("could not encode the picture: {err}"),
        }
    }

    /// Encode synchronously (tests and the frame benchmark).
    pub fn encode_now(&mut self, app: &App, screen: Size) {
        if let (Some(wanted), Some(image)) = (self.wanted(app, screen), self.image.clone()) {
            let prepared = prepare(&image, wanted.cells, &self.graphics, wanted.grid);
            if let Ok(protocol) = encode(prepared, wanted.cells, &self.graphics, self.kitty_id) {
                self.shown = Some((wanted, protocol));
            }
        }
    }
}

/// Draw one frame; `synchronized` wraps it in a terminal synchronized update (no tearing).
pub fn render<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    painter: &Painter,
    synchronized: bool,
) -> anyhow::Result<()> {
    let size = terminal
        .size()
        .map_err(|err| anyhow::anyhow!("terminal size: {err:?}"))?;
    app.picture = layout(
        ratatui::layout::Rect::new(0, 0, size.width, size.height),
        painter.graphics.font,
        !app.tasks.is_empty(),
    )
    .picture;
    if synchronized {
        crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::BeginSynchronizedUpdate
        )?;
    }
    let drawn = terminal.draw(|frame| draw(frame, app, painter.protocol(), painter.graphics.font));
    if synchronized {
        crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::EndSynchronizedUpdate
        )?;
    }
    drawn.map_err(|err| anyhow::anyhow!("draw: {err:?}"))?;
    Ok(())
}

/// The live session after `current` (cycling), for watch mode's Tab.
async fn next_session(
    server: &str,
    token: Option<&str>,
    current: Option<&str>,
) -> anyhow::Result<String> {
    let sessions = crate::watching::list_sessions(server, token).await?;
    let ids: Vec<String> = sessions
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_string))
        .collect();
    anyhow::ensure!(!ids.is_empty(), "no live sessions on {server}");
    let at = current.and_then(|c| ids.iter().position(|id| id == c));
    Ok(ids[at.map_or(0, |i| (i + 1) % ids.len())].clone())
}

/// An episode still open when the UI stops is recorded as abandoned; everything reaches the disk.
fn finish_recording(recording: Option<Recording>) {
    if let Some(mut recording) = recording {
        recording.end();
        recording.handle.finish();
    }
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// The person quit.
    Quit,
    /// The input stream ended (terminal closed, or the end of a test script).
    InputClosed,
}

/// What the loop is connected to and how it draws.
pub struct LoopOptions {
    pub server: String,
    /// Bearer token for a server started with BROWSER_API_TOKEN.
    pub token: Option<String>,
    pub graphics: Graphics,
    /// Wrap frames in synchronized updates (a real terminal; not a test backend).
    pub synchronized: bool,
    /// Receives a report after every frame: how tests and the benchmark see the UI's state.
    pub frames: Option<mpsc::UnboundedSender<FrameReport>>,
    /// Watch mode: follow this session read-only instead of driving one.
    pub watch: Option<String>,
    /// Where demonstrations go (`--record DIR`), with the recorder's error reports.
    pub recorder: Option<(RecorderHandle, mpsc::UnboundedReceiver<String>)>,
}

/// The UI's side of recording: what the person did becomes `RecordEvent`s for the recorder
/// thread, while recording is on.
struct Recording {
    handle: RecorderHandle,
    errors: mpsc::UnboundedReceiver<String>,
    /// One recorder session per connection: a reconnect starts a new one.
    session: String,
}

impl Recording {
    fn reply(
        &self,
        request: Request,
        result: StepResult,
        latency_ms: f64,
        episode_id: Option<String>,
    ) {
        let session = self.session.clone();
        let event = match request {
            Request::Reset(_) => RecordEvent::Reset {
                session,
                episode_id: episode_id.unwrap_or_default(),
                task: None,
                observation: result,
            },
            Request::ResetTask(task) => RecordEvent::Reset {
                session,
                episode_id: episode_id.unwrap_or_default(),
                task: Some(task),
                observation: result,
            },
            Request::Step(action) => RecordEvent::Step {
                session,
                action,
                observation: result,
                latency_ms,
                recorded_text: None,
            },
            Request::Secret { name, action } => RecordEvent::Step {
                session,
                action,
                observation: result,
                latency_ms,
                recorded_text: Some(format!("<secret:{name}>")),
            },
        };
        self.handle.send(event);
    }

    fn end(&mut self) {
        self.handle.send(RecordEvent::End {
            session: self.session.clone(),
        });
    }

    fn new_session(&mut self) {
        self.end();
        self.session = uuid::Uuid::new_v4().to_string();
    }
}

/// The UI's state as of a drawn frame.
#[derive(Debug, Clone)]
pub struct FrameReport {
    pub observed: Option<crate::app::Observed>,
    pub link: crate::app::Link,
    pub in_flight: bool,
    /// The picture on screen belongs to the latest screenshot.
    pub picture_current: bool,
    pub notice: Option<crate::app::Notice>,
}

pub async fn run<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    mut input_events: impl Stream<Item = crossterm::event::Event> + Unpin,
    options: LoopOptions,
) -> anyhow::Result<Exit> {
    let LoopOptions {
        server,
        token,
        graphics,
        synchronized,
        frames,
        recorder,
        watch,
    } = options;
    app.watching = watch;
    let open_link = |session: &Option<String>| match session {
        Some(session) => crate::watching::watch(server.clone(), token.clone(), session.clone()),
        None => connection::connect(server.clone(), token.clone()),
    };
    let mut recording = recorder.map(|(handle, errors)| Recording {
        handle,
        errors,
        session: uuid::Uuid::new_v4().to_string(),
    });
    app.text_picture = graphics.is_text();
    let report = |app: &App, painter: &Painter| {
        if let Some(frames) = &frames {
            let _ = frames.send(FrameReport {
                observed: app.observed.clone(),
                link: app.link.clone(),
                in_flight: app.in_flight.is_some(),
                picture_current: painter
                    .shown
                    .as_ref()
                    .is_some_and(|(key, _)| key.generation == painter.generation),
                notice: app.notice.clone(),
            });
        }
    };
    let mut link = open_link(&app.watching);
    let mut link_alive = true;
    let (encoded_tx, mut encoded) = mpsc::channel(4);
    let mut painter = Painter::new(graphics);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    render(terminal, app, &painter, synchronized)?;
    loop {
        let msg = tokio::select! {
            event = input_events.next() => match event {
                Some(event) => input::to_msg(&event),
                None => {
                    finish_recording(recording);
                    return Ok(Exit::InputClosed);
                }
            },
            event = link.events.recv(), if link_alive => match event {
                Some(LinkEvent::Msg(msg)) => Some(msg),
                Some(LinkEvent::Picture(image)) => {
                    painter.set_image(image);
                    None
                }
                Some(LinkEvent::Reply { request, result, latency_ms, episode_id }) => {
                    if let (Some(recording), true) = (&recording, app.recording) {
                        recording.reply(request, result, latency_ms, episode_id);
                    }
                    None
                }
                None => {
                    link_alive = false;
                    None
                }
            },
            Some((key, protocol)) = encoded.recv() => {
                painter.encoded(key, protocol);
                None
            }
            _ = tick.tick(), if app.in_flight.is_some() => Some(Msg::Tick),
            Some(error) = async {
                match recording.as_mut() {
                    Some(recording) => recording.errors.recv().await,
                    None => std::future::pending().await,
                }
            } => Some(Msg::RecorderError(error)),
        };
        let mut pending: Vec<Msg> = msg.into_iter().collect();
        while let Some(msg) = pending.pop() {
            for effect in app.update(msg) {
                match effect {
                    Effect::Send(request) => {
                        if link.requests.send(request).await.is_err() {
                            pending.push(Msg::Disconnected("the connection ended".into()));
                        }
                    }
                    Effect::Redraw => {}
                    Effect::Reconnect => {
                        if let Some(recording) = recording.as_mut() {
                            recording.new_session();
                        }
                        link = open_link(&app.watching);
                        link_alive = true;
                    }
                    Effect::Note(note) => {
                        if let Some(recording) = &recording {
                            let session = recording.session.clone();
                            recording.handle.send(RecordEvent::Note { session, note });
                        }
                    }
                    Effect::Record(false) => {
                        if let Some(recording) = recording.as_mut() {
                            recording.end();
                        }
                    }
                    Effect::Record(true) => {}
                    Effect::NextSession => {
                        match next_session(&server, token.as_deref(), app.watching.as_deref()).await
                        {
                            Ok(next) => {
                                if let Some(recording) = recording.as_mut() {
                                    recording.new_session();
                                }
                                app.watching = Some(next);
                                link = open_link(&app.watching);
                                link_alive = true;
                            }
                            Err(err) => pending.push(Msg::RecorderError(err.to_string())),
                        }
                    }
                    Effect::Quit => {
                        finish_recording(recording);
                        return Ok(Exit::Quit);
                    }
                }
            }
        }
        let size = terminal
            .size()
            .map_err(|err| anyhow::anyhow!("terminal size: {err:?}"))?;
        painter.refresh(app, size, &encoded_tx);
        render(terminal, app, &painter, synchronized)?;
        report(app, &painter);
    }
}
