//! The one event loop: terminal input, server events, finished picture encodings, text layers
//! and (only while a request is in flight) a spinner tick. Generic over ratatui's `Backend` so
//! tests drive it with `TestBackend` and scripted input.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use tokio::sync::{mpsc, oneshot};

use crate::app::{App, Effect, Msg};
use crate::graphics::Graphics;
use crate::live::recording::ActiveRecording;
use crate::net::connection::{self, LinkEvent};
use crate::net::sessions::{spawn_text_fetcher, Sessions, TextEvent, TextWanted};
use crate::output::Output;
use crate::screen::input;
use crate::screen::layout::layout;
use crate::screen::painter::{Encoded, Painter, Wanted};
use crate::screen::view::draw;

/// Draw one frame. With `out` (a real terminal) the frame is one synchronized update and pixel
/// pictures are written after the cells; without it (a test backend) only cells are drawn.
pub fn render<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    painter: &mut Painter,
    mut out: Option<&mut dyn Write>,
) -> anyhow::Result<()> {
    let size = screen(terminal)?;
    let areas = layout(
        Rect::new(0, 0, size.width, size.height),
        &painter.graphics,
        !app.tasks.is_empty(),
        app.region(),
    );
    app.picture = areas.picture;
    // The help's pages follow the size drawn on.
    app.terminal = (size.width, size.height);
    painter.resized(size);
    let pixels = painter.ready && !painter.graphics.is_text();
    if let Some(out) = out.as_deref_mut() {
        // Synchronized update (mode 2026): the terminal shows the frame whole.
        out.write_all(b"\x1b[?2026h")?;
    }
    let visible = !app.overlay_open();
    if pixels && painter.slot.needs_clear(visible, app.picture) {
        // A pixel picture that went away or moved leaves its pixels where no cell changes.
        terminal
            .clear()
            .map_err(|err| anyhow::anyhow!("clear: {err:?}"))?;
        painter.slot.forget_screen();
    }
    terminal
        .draw(|frame| draw(frame, app, &painter.slot, &painter.graphics))
        .map_err(|err| anyhow::anyhow!("draw: {err:?}"))?;
    if let Some(out) = out {
        if pixels {
            let passthrough = painter.graphics.passthrough;
            painter
                .slot
                .draw_pixels(out, visible, app.picture, passthrough)?;
        }
        out.write_all(b"\x1b[?2026l")?;
        out.flush()?;
    }
    Ok(())
}

/// The size the UI draws on: the terminal's (after following a resize), or a fixed viewport's.
pub fn screen<B: Backend>(terminal: &mut Terminal<B>) -> anyhow::Result<ratatui::layout::Size> {
    terminal
        .autoresize()
        .map_err(|err| anyhow::anyhow!("terminal size: {err:?}"))?;
    Ok(terminal.get_frame().area().as_size())
}

/// The live session Tab goes to from `current` (`asks::next_after`: one asking for a person first).
async fn next_session(sessions: &Sessions, current: Option<&str>) -> anyhow::Result<String> {
    let listed = sessions.list().await?;
    crate::asks::next_after(&listed, current)
        .ok_or_else(|| anyhow::anyhow!("no live sessions to watch"))
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// The person quit.
    Quit,
    /// The input stream ended (terminal closed, or the end of a test script).
    InputClosed,
}

/// How the terminal's graphics reach the loop: known already, or from the probe still running
/// (the loop connects meanwhile; nothing is encoded until they are in).
pub enum GraphicsSource {
    Ready(Graphics),
    Probing(oneshot::Receiver<Graphics>),
}

/// What the loop is connected to and how it draws.
pub struct LoopOptions {
    pub server: String,
    /// Bearer token for a server started with BROWSER_API_TOKEN.
    pub token: Option<String>,
    pub graphics: GraphicsSource,
    /// The real terminal: frames are synchronized updates and pixel pictures are written here
    /// (the same output the terminal's backend writes to, so they keep their order).
    pub out: Option<Output>,
    /// Receives a report after every frame: how tests and the benchmark see the UI's state.
    pub frames: Option<mpsc::UnboundedSender<FrameReport>>,
    /// Watch mode: follow this session (None: the first live one, waiting for one) instead of
    /// driving one of the UI's own.
    pub watch: Option<Option<String>>,
    /// Collect for the server's campaign (`browserenv-tui collect`), as the person the token
    /// names.
    pub collect: bool,
    /// Where demonstrations go (`--record DIR`), with the recorder's error reports.
    pub recorder: Option<(
        browserenv_collect::trajectory::RecorderHandle,
        mpsc::UnboundedReceiver<String>,
    )>,
    /// Ends the loop from outside (a signal, a terminal that went away) the way quitting does:
    /// the recording is finished first.
    pub stop: Option<std::pin::Pin<Box<dyn std::future::Future<Output = Exit> + Send>>>,
    /// The embedded server's share of what the person types as secrets (`s`), so that its web
    /// archives (`--archive`) hide them too.
    pub typed_secrets: Option<browserenv_server::archive::TypedSecrets>,
}

/// The UI's state as of a drawn frame.
#[derive(Debug, Clone)]
pub struct FrameReport {
    pub observed: Option<crate::app::Observed>,
    pub link: crate::app::LinkState,
    pub in_flight: bool,
    /// Watch mode: the person in control of the watched session (None: its agent).
    pub controller: Option<String>,
    /// Watch mode: this UI holds control.
    pub in_control: bool,
    /// The picture on screen belongs to the latest screenshot.
    pub picture_current: bool,
    /// The picture on screen carries the text layer.
    pub text_shown: bool,
    pub notice: Option<crate::app::Notice>,
    /// Where the picture is and what it shows.
    pub picture: Option<crate::graphics::picture::View>,
    pub graphics: Option<Graphics>,
    /// Collect mode: the lease in hand, whether its episode waits for the mark, what was saved.
    pub collect: Option<crate::app::Collecting>,
    /// The task of the current episode.
    pub task: Option<String>,
    /// Watch mode: the watched session's agent asks for a person.
    pub asking: Option<crate::asks::Ask>,
    /// How many times the terminal's bell rang so far.
    pub bells: u64,
}

/// The text layer's fetcher for the current link, started when text is first wanted.
struct TextFeed {
    wants: tokio::sync::watch::Sender<Option<TextWanted>>,
    events: mpsc::UnboundedReceiver<TextEvent>,
}

/// Run the UI until the person quits, the input ends or `stop` fires. However it ends, the
/// recording is finished (an open episode recorded as abandoned) before this returns.
pub async fn run<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    input_events: impl Stream<Item = crossterm::event::Event> + Unpin,
    mut options: LoopOptions,
) -> anyhow::Result<Exit> {
    let mut recording = options
        .recorder
        .take()
        .map(|(handle, errors)| ActiveRecording::new(handle, errors));
    let outcome = drive(terminal, app, input_events, options, &mut recording).await;
    if let Some(recording) = recording {
        recording.finish();
    }
    outcome
}

async fn drive<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    mut input_events: impl Stream<Item = crossterm::event::Event> + Unpin,
    options: LoopOptions,
    recording: &mut Option<ActiveRecording>,
) -> anyhow::Result<Exit> {
    let LoopOptions {
        server,
        token,
        graphics,
        mut out,
        frames,
        recorder: _,
        watch,
        collect,
        mut stop,
        typed_secrets,
    } = options;
    app.watch_mode = watch.is_some();
    if collect {
        app.collect = Some(crate::app::Collecting::default());
    }
    // The campaign's answers (one call at a time, made off the loop).
    let (campaign_tx, mut campaign_rx) = mpsc::unbounded_channel::<crate::app::CampaignReply>();
    app.watching = watch.clone().flatten();
    let sessions = Sessions::new(&server, token.clone())?;
    let watch_mode = app.watch_mode;
    let open_link = |session: &Option<String>| match watch_mode {
        true => crate::live::watching::watch(server.clone(), token.clone(), session.clone()),
        false => connection::connect(server.clone(), token.clone(), typed_secrets.clone()),
    };
    // The name a person who takes control is shown by, to the agent and to other watchers.
    let person = crate::review::default_reviewer(None).unwrap_or_else(|| "a person".into());
    let (mut painter, mut probing) = match graphics {
        GraphicsSource::Ready(graphics) => (Painter::new(graphics), None),
        GraphicsSource::Probing(receiver) => (Painter::pending(), Some(receiver)),
    };
    app.text_picture = painter.graphics.is_text();
    let mut bells = 0u64;
    let report = |app: &App, painter: &Painter, bells: u64| {
        if let Some(frames) = &frames {
            let _ = frames.send(FrameReport {
                observed: app.observed.clone(),
                link: app.link.clone(),
                in_flight: app.in_flight.is_some(),
                controller: app.controller.clone(),
                in_control: app.in_control,
                picture_current: painter.slot.current(),
                text_shown: painter.slot.current() && painter.slot.text_shown(),
                notice: app.notice.clone(),
                picture: painter.slot.shown_view(),
                graphics: painter.ready.then(|| painter.graphics.clone()),
                collect: app.collect.clone(),
                task: app.task().map(|t| t.id.clone()),
                asking: app.asking.clone(),
                bells,
            });
        }
    };
    let mut link = open_link(&app.watching);
    let mut link_alive = true;
    // The episode on screen: named by the UI at reset, or by the watched session's frames.
    let mut episode: Option<String> = None;
    // The episode and step of the screenshot on screen.
    let mut shown_for: Option<(String, u64)> = None;
    let mut text_feed: Option<TextFeed> = None;
    let (encoded_tx, mut encoded) = mpsc::channel::<(Wanted, Result<Encoded, String>)>(4);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    // Messages the model asked to get back later (`Effect::After`).
    let (later_tx, mut later) = mpsc::unbounded_channel::<Msg>();
    if let Err(err) = render(
        terminal,
        app,
        &mut painter,
        out.as_mut().map(|o| o as &mut dyn Write),
    ) {
        return terminal_gone(err);
    }
    // A frame not drawn because the one before was still on its way (a slow link) is drawn on
    // a later tick, once the terminal has taken the one before.
    let mut deferred = false;
    let mut retry = tokio::time::interval(Duration::from_millis(50));
    loop {
        let msg = tokio::select! {
            exit = async { stop.as_mut().expect("guarded").await }, if stop.is_some() => {
                return Ok(exit);
            }
            graphics = async { probing.as_mut().expect("guarded").await }, if probing.is_some() => {
                probing = None;
                if let Ok(graphics) = graphics {
                    log_graphics(&graphics);
                    if let (Some(out), true) = (out.as_mut(), graphics.pixel_mouse) {
                        // SGR-Pixels: clicks land on the exact page pixel under the pointer.
                        let _ = out.write_all(b"\x1b[?1016h");
                    }
                    app.text_picture = graphics.is_text();
                    painter.set_graphics(graphics);
                } else {
                    painter.set_graphics(Graphics::halfblocks());
                }
                None
            }
            event = input_events.next() => match event {
                Some(event) => {
                    if matches!(event, crossterm::event::Event::Resize(..)) {
                        // A new size may come with a new font size (kitty's zoom keys).
                        painter.graphics.resized(crate::screen::terminal::window_size());
                    }
                    input::to_msg(&event, painter.graphics.pixel_mouse.then_some(painter.graphics.pixel_origin))
                }
                None => return Ok(Exit::InputClosed),
            },
            event = link.events.recv(), if link_alive => match event {
                Some(LinkEvent::Msg(Msg::Following(session))) => {
                    // Another session: another recording session, another text layer.
                    if app.watching.as_ref() != Some(&session) {
                        if let Some(recording) = recording.as_mut() {
                            recording.new_session();
                        }
                        text_feed = None;
                        episode = None;
                    }
                    Some(Msg::Following(session))
                }
                Some(LinkEvent::Msg(msg)) => Some(msg),
                Some(LinkEvent::Picture { image, png, step }) => {
                    shown_for = episode.clone().map(|episode| (episode, step));
                    painter.slot.set_picture(image, png);
                    None
                }
                Some(LinkEvent::Reply { request, actor, result, latency_ms, episode_id }) => {
                    if request.is_reset() || app.watch_mode {
                        episode = episode_id.clone();
                    }
                    if let (Some(recording), true) = (&recording, app.recording) {
                        recording.reply(request, actor, result, latency_ms, episode_id);
                    }
                    None
                }
                None => {
                    link_alive = false;
                    None
                }
            },
            Some((wanted, result)) = encoded.recv() => {
                let before = painter.slot.shown_view();
                painter.slot.encoded(wanted, result);
                if let Some(view) = painter.slot.shown_view().filter(|v| Some(*v) != before) {
                    log_picture(&painter.graphics, &view);
                }
                None
            }
            Some(event) = async {
                match text_feed.as_mut() {
                    Some(feed) => feed.events.recv().await,
                    None => std::future::pending().await,
                }
            } => match event {
                TextEvent::Layer(layer) => {
                    // Only the layer of the screenshot on screen: one read for the step before
                    // (still in flight when the new screenshot came) is dropped.
                    let read_for = layer.episode_id.clone().map(|episode| (episode, layer.step));
                    if read_for.is_some() && read_for == shown_for {
                        painter.slot.set_text(Some(Arc::new(layer)));
                    }
                    None
                }
                TextEvent::Unavailable(reason) => Some(Msg::TextUnavailable(reason)),
            },
            Some(reply) = campaign_rx.recv() => Some(Msg::Campaign(reply)),
            Some(msg) = later.recv() => Some(msg),
            _ = tick.tick(), if app.in_flight.is_some() => Some(Msg::Tick),
            _ = retry.tick(), if deferred => None,
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
                    Effect::After { delay, msg } => {
                        let later_tx = later_tx.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(delay).await;
                            let _ = later_tx.send(*msg);
                        });
                    }
                    Effect::Reconnect => {
                        if let Some(recording) = recording.as_mut() {
                            recording.new_session();
                        }
                        link = open_link(&app.watching);
                        link_alive = true;
                        text_feed = None;
                    }
                    Effect::Note(note) => {
                        if let Some(recording) = &recording {
                            recording.note(note);
                        }
                    }
                    Effect::Record(false) => {
                        if let Some(recording) = recording.as_mut() {
                            recording.end();
                        }
                    }
                    Effect::Record(true) => {}
                    Effect::Take | Effect::HandBack { .. } => {
                        let wish = match effect {
                            Effect::HandBack { note } => {
                                crate::net::connection::ControlWish::Release(note)
                            }
                            _ => crate::net::connection::ControlWish::Take(person.clone()),
                        };
                        let sent = match &link.control {
                            Some(control) => control.send(wish).await.is_ok(),
                            None => false,
                        };
                        if !sent {
                            pending.push(Msg::Disconnected("the connection ended".into()));
                        }
                    }
                    Effect::Bell => {
                        bells += 1;
                        // BEL: the terminal beeps or flashes, as its owner set it up. A test
                        // backend has no terminal to ring; the count in the report stands for it.
                        if let Some(out) = out.as_mut() {
                            let _ = out.write_all(b"\x07");
                        }
                    }
                    Effect::NextSession => {
                        match next_session(&sessions, app.watching.as_deref()).await {
                            Ok(next) => {
                                if let Some(recording) = recording.as_mut() {
                                    recording.new_session();
                                }
                                app.watching = Some(next);
                                link = open_link(&app.watching);
                                link_alive = true;
                                text_feed = None;
                            }
                            Err(err) => pending.push(Msg::RecorderError(err.to_string())),
                        }
                    }
                    Effect::Campaign(call) => {
                        let (sessions, done) = (sessions.clone(), campaign_tx.clone());
                        tokio::spawn(async move {
                            let _ = done.send(crate::net::campaign::call(&sessions, call).await);
                        });
                    }
                    Effect::Quit => return Ok(Exit::Quit),
                }
            }
        }
        // The text layer of the page on screen, when the picture can carry it.
        if let (true, Some((episode, step))) = (
            app.wants_text() && painter.ready && painter.slot.has_image(),
            shown_for.as_ref(),
        ) {
            let feed = text_feed.get_or_insert_with(|| {
                let (wants, events) = spawn_text_fetcher(sessions.clone(), app.watching.clone());
                TextFeed { wants, events }
            });
            let want = TextWanted {
                episode_id: episode.clone(),
                step: *step,
            };
            feed.wants.send_if_modified(|current| {
                let changed = current.as_ref() != Some(&want);
                *current = Some(want);
                changed
            });
        }
        let size = screen(terminal)?;
        if let Some(job) = painter.job(app, size) {
            let done = encoded_tx.clone();
            tokio::task::spawn_blocking(move || {
                let _ = done.blocking_send(job.run());
            });
        }
        if out.as_ref().is_some_and(|o| o.backlog() > 0) {
            deferred = true;
            continue;
        }
        deferred = false;
        if let Err(err) = render(
            terminal,
            app,
            &mut painter,
            out.as_mut().map(|o| o as &mut dyn Write),
        ) {
            return terminal_gone(err);
        }
        report(app, &painter, bells);
    }
}

/// Drawing failed: the terminal is gone (closed, hung up). The UI ends as if its input had.
fn terminal_gone(err: anyhow::Error) -> anyhow::Result<Exit> {
    tracing::warn!("cannot draw any more, ending: {err:#}");
    Ok(Exit::InputClosed)
}

/// What the terminal said and what was chosen, for `--log` (the terminal tests read it).
fn log_graphics(graphics: &Graphics) {
    tracing::info!(
        "graphics: {} ({}); terminal {}, cell {}x{} px{}, sixel limit {:?}, pixel mouse {}",
        graphics.name(),
        graphics.reason,
        graphics.terminal,
        graphics.cell.0,
        graphics.cell.1,
        if graphics.cell_known {
            ""
        } else {
            " (estimated)"
        },
        graphics.sixel_max,
        graphics.pixel_mouse,
    );
}

/// Where the picture is, for `--log` (the terminal tests find it on screen with this).
fn log_picture(graphics: &Graphics, view: &crate::graphics::picture::View) {
    tracing::info!(
        "picture: {} at cell {},{} size {}x{} cells, {}x{} px, region {},{} {}x{}",
        graphics.name(),
        view.cells.x,
        view.cells.y,
        view.cells.width,
        view.cells.height,
        view.pixels.0,
        view.pixels.1,
        view.region.x,
        view.region.y,
        view.region.width,
        view.region.height,
    );
}
