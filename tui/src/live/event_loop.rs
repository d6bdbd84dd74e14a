//! The one event loop: terminal input, server events, finished picture encodings, text layers
//! and (only while a request is in flight) a spinner tick. Generic over ratatui's `Backend` so
//! tests drive it with `TestBackend` and scripted input.

use std::io::Write;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use ratatui::backend::Backend;
use ratatui::Terminal;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Interval;

use crate::app::{App, CampaignReply, Effect, Msg};
use crate::graphics::Graphics;
use crate::live::frame::{log_graphics, log_picture, report};
use crate::live::recording::ActiveRecording;
use crate::net::connection::{self, ControlWish, Link, LinkEvent};
use crate::net::sessions::{spawn_text_fetcher, Sessions, TextEvent, TextWanted};
use crate::output::Output;
use crate::screen::input;
use crate::screen::painter::{Encoded, Painter, Wanted};

// Frames under the names the loop's users (the tests, the benchmark) know them by.
pub use crate::live::frame::{render, screen, FrameReport};

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

/// Set the loop up (the model's mode, the link, the painter), draw the first frame, then run it.
async fn drive<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    input_events: impl Stream<Item = crossterm::event::Event> + Unpin,
    options: LoopOptions,
    recording: &mut Option<ActiveRecording>,
) -> anyhow::Result<Exit> {
    let LoopOptions {
        server,
        token,
        graphics,
        out,
        frames,
        recorder: _,
        watch,
        collect,
        stop,
        typed_secrets,
    } = options;
    enter_mode(app, watch, collect);
    // The campaign's answers (one call at a time, made off the loop).
    let (campaign_tx, campaign) = mpsc::unbounded_channel::<CampaignReply>();
    let sessions = Sessions::new(&server, token.clone())?;
    let dial = Dial {
        server,
        token,
        typed_secrets,
        watch: app.watch_mode,
    };
    let (painter, probing) = match graphics {
        GraphicsSource::Ready(graphics) => (Painter::new(graphics), None),
        GraphicsSource::Probing(receiver) => (Painter::pending(), Some(receiver)),
    };
    app.text_picture = painter.graphics.is_text();
    let link = dial.open(&app.watching);
    let (encoded_tx, encoded) = mpsc::channel::<(Wanted, Result<Encoded, String>)>(4);
    let tick = tokio::time::interval(Duration::from_millis(100));
    // Messages the model asked to get back later (`Effect::After`).
    let (later_tx, later) = mpsc::unbounded_channel::<Msg>();
    let mut live = Live {
        terminal,
        app,
        recording,
        out,
        frames,
        dial,
        sessions,
        person: crate::review::default_reviewer(None).unwrap_or_else(|| "a person".into()),
        painter,
        bells: 0,
        link,
        link_alive: true,
        episode: None,
        shown_for: None,
        text_feed: None,
        encoded: encoded_tx,
        later: later_tx,
        campaign: campaign_tx,
        deferred: false,
    };
    if let Err(err) = live.render() {
        return terminal_gone(err);
    }
    let sources = Sources {
        input: input_events,
        stop,
        probing,
        encoded,
        campaign,
        later,
        tick,
        retry: tokio::time::interval(Duration::from_millis(50)),
    };
    live.run(sources).await
}

/// Drive and watch mode, or collect (for the server's campaign): what the model shows and does.
fn enter_mode(app: &mut App, watch: Option<Option<String>>, collect: bool) {
    app.watch_mode = watch.is_some();
    if collect {
        app.collect = Some(crate::app::Collecting::default());
    }
    app.watching = watch.flatten();
}

/// How a link is opened: to drive a session of the UI's own, or to watch one.
struct Dial {
    server: String,
    token: Option<String>,
    typed_secrets: Option<browserenv_server::archive::TypedSecrets>,
    watch: bool,
}

impl Dial {
    fn open(&self, session: &Option<String>) -> Link {
        let (server, token) = (self.server.clone(), self.token.clone());
        match self.watch {
            true => crate::live::watching::watch(server, token, session.clone()),
            false => connection::connect(server, token, self.typed_secrets.clone()),
        }
    }
}

/// What woke the loop.
enum Wake {
    /// The loop ends: `stop` fired or the input ended.
    End(Exit),
    /// The terminal's probe answered (an error: it gave up).
    Graphics(Result<Graphics, oneshot::error::RecvError>),
    Input(crossterm::event::Event),
    /// From the link (None: it ended).
    Link(Option<LinkEvent>),
    /// A picture encoding finished.
    Encoded(Wanted, Result<Encoded, String>),
    Text(TextEvent),
    /// A message for the model as it is (a campaign's answer, a later message, a tick, a
    /// recorder's error).
    Msg(Msg),
    /// Time to draw the frame deferred behind a slow terminal.
    Retry,
}

/// What the loop waits on besides the link, the text feed and the recorder's errors (those
/// belong to `Live`, which replaces them).
struct Sources<I> {
    input: I,
    stop: Option<std::pin::Pin<Box<dyn std::future::Future<Output = Exit> + Send>>>,
    probing: Option<oneshot::Receiver<Graphics>>,
    encoded: mpsc::Receiver<(Wanted, Result<Encoded, String>)>,
    campaign: mpsc::UnboundedReceiver<CampaignReply>,
    later: mpsc::UnboundedReceiver<Msg>,
    /// The spinner's tick, only while a request is in flight.
    tick: Interval,
    /// Only while a frame is deferred.
    retry: Interval,
}

impl<I: Stream<Item = crossterm::event::Event> + Unpin> Sources<I> {
    /// Wait for whichever source speaks first.
    async fn wake<B: Backend>(&mut self, live: &mut Live<'_, B>) -> Wake {
        let Sources {
            input,
            stop,
            probing,
            encoded,
            campaign,
            later,
            tick,
            retry,
        } = self;
        let Live {
            app,
            recording,
            link,
            link_alive,
            text_feed,
            deferred,
            ..
        } = live;
        tokio::select! {
            exit = async { stop.as_mut().expect("guarded").await }, if stop.is_some() => {
                Wake::End(exit)
            }
            graphics = async { probing.as_mut().expect("guarded").await }, if probing.is_some() => {
                *probing = None;
                Wake::Graphics(graphics)
            }
            event = input.next() => match event {
                Some(event) => Wake::Input(event),
                None => Wake::End(Exit::InputClosed),
            },
            event = link.events.recv(), if *link_alive => Wake::Link(event),
            Some((wanted, result)) = encoded.recv() => Wake::Encoded(wanted, result),
            Some(event) = async {
                match text_feed.as_mut() {
                    Some(feed) => feed.events.recv().await,
                    None => std::future::pending().await,
                }
            } => Wake::Text(event),
            Some(reply) = campaign.recv() => Wake::Msg(Msg::Campaign(reply)),
            Some(msg) = later.recv() => Wake::Msg(msg),
            _ = tick.tick(), if app.in_flight.is_some() => Wake::Msg(Msg::Tick),
            _ = retry.tick(), if *deferred => Wake::Retry,
            Some(error) = async {
                match recording.as_mut() {
                    Some(recording) => recording.errors.recv().await,
                    None => std::future::pending().await,
                }
            } => Wake::Msg(Msg::RecorderError(error)),
        }
    }
}

/// The loop's state between wakes: where it draws, what it is linked to, what is on screen.
struct Live<'a, B: Backend> {
    terminal: &'a mut Terminal<B>,
    app: &'a mut App,
    recording: &'a mut Option<ActiveRecording>,
    out: Option<Output>,
    frames: Option<mpsc::UnboundedSender<FrameReport>>,
    dial: Dial,
    sessions: Sessions,
    /// The name a person who takes control is shown by, to the agent and to other watchers.
    person: String,
    painter: Painter,
    /// How many times the terminal's bell rang.
    bells: u64,
    link: Link,
    link_alive: bool,
    /// The episode on screen: named by the UI at reset, or by the watched session's frames.
    episode: Option<String>,
    /// The episode and step of the screenshot on screen.
    shown_for: Option<(String, u64)>,
    text_feed: Option<TextFeed>,
    encoded: mpsc::Sender<(Wanted, Result<Encoded, String>)>,
    later: mpsc::UnboundedSender<Msg>,
    campaign: mpsc::UnboundedSender<CampaignReply>,
    /// A frame not drawn because the one before was still on its way (a slow link) is drawn on
    /// a later tick, once the terminal has taken the one before.
    deferred: bool,
}

impl<B: Backend> Live<'_, B> {
    /// Take one wake at a time: let the model take what it brought and draw what follows,
    /// until the loop ends.
    async fn run<I>(mut self, mut sources: Sources<I>) -> anyhow::Result<Exit>
    where
        I: Stream<Item = crossterm::event::Event> + Unpin,
    {
        loop {
            let msg = match sources.wake(&mut self).await {
                Wake::End(exit) => return Ok(exit),
                Wake::Graphics(graphics) => {
                    self.graphics_known(graphics);
                    None
                }
                Wake::Input(event) => self.on_input(&event),
                Wake::Link(event) => self.on_link(event),
                Wake::Encoded(wanted, result) => {
                    self.on_encoded(wanted, result);
                    None
                }
                Wake::Text(event) => self.on_text(event),
                Wake::Msg(msg) => Some(msg),
                Wake::Retry => None,
            };
            if let ControlFlow::Break(exit) = self.update(msg).await {
                return Ok(exit);
            }
            if let ControlFlow::Break(exit) = self.frame()? {
                return Ok(exit);
            }
        }
    }

    fn render(&mut self) -> anyhow::Result<()> {
        let out = self.out.as_mut().map(|o| o as &mut dyn Write);
        render(self.terminal, self.app, &mut self.painter, out)
    }

    fn graphics_known(&mut self, graphics: Result<Graphics, oneshot::error::RecvError>) {
        let Ok(graphics) = graphics else {
            self.painter.set_graphics(Graphics::halfblocks());
            return;
        };
        log_graphics(&graphics);
        if let (Some(out), true) = (self.out.as_mut(), graphics.pixel_mouse) {
            // SGR-Pixels: clicks land on the exact page pixel under the pointer.
            let _ = out.write_all(b"\x1b[?1016h");
        }
        self.app.text_picture = graphics.is_text();
        self.painter.set_graphics(graphics);
    }

    fn on_input(&mut self, event: &crossterm::event::Event) -> Option<Msg> {
        let graphics = &mut self.painter.graphics;
        if matches!(event, crossterm::event::Event::Resize(..)) {
            // A new size may come with a new font size (kitty's zoom keys).
            graphics.resized(crate::screen::terminal::window_size());
        }
        input::to_msg(event, graphics.pixel_mouse.then_some(graphics.pixel_origin))
    }

    fn on_link(&mut self, event: Option<LinkEvent>) -> Option<Msg> {
        match event {
            Some(LinkEvent::Msg(Msg::Following(session))) => {
                // Another session: another recording session, another text layer.
                if self.app.watching.as_ref() != Some(&session) {
                    if let Some(recording) = self.recording.as_mut() {
                        recording.new_session();
                    }
                    self.text_feed = None;
                    self.episode = None;
                }
                Some(Msg::Following(session))
            }
            Some(LinkEvent::Msg(msg)) => Some(msg),
            Some(LinkEvent::Picture { image, png, step }) => {
                self.shown_for = self.episode.clone().map(|episode| (episode, step));
                self.painter.slot.set_picture(image, png);
                None
            }
            Some(LinkEvent::Reply {
                request,
                actor,
                result,
                latency_ms,
                episode_id,
            }) => {
                if request.is_reset() || self.app.watch_mode {
                    self.episode = episode_id.clone();
                }
                if let (Some(recording), true) = (&self.recording, self.app.recording) {
                    recording.reply(request, actor, result, latency_ms, episode_id);
                }
                None
            }
            None => {
                self.link_alive = false;
                None
            }
        }
    }

    fn on_encoded(&mut self, wanted: Wanted, result: Result<Encoded, String>) {
        let before = self.painter.slot.shown_view();
        self.painter.slot.encoded(wanted, result);
        if let Some(view) = self
            .painter
            .slot
            .shown_view()
            .filter(|v| Some(*v) != before)
        {
            log_picture(&self.painter.graphics, &view);
        }
    }

    fn on_text(&mut self, event: TextEvent) -> Option<Msg> {
        match event {
            TextEvent::Layer(layer) => {
                // Only the layer of the screenshot on screen: one read for the step before
                // (still in flight when the new screenshot came) is dropped.
                let read_for = layer
                    .episode_id
                    .clone()
                    .map(|episode| (episode, layer.step));
                if read_for.is_some() && read_for == self.shown_for {
                    self.painter.slot.set_text(Some(Arc::new(layer)));
                }
                None
            }
            TextEvent::Unavailable(reason) => Some(Msg::TextUnavailable(reason)),
        }
    }

    /// Let the model take `msg`, carry out the effects it asks for, and let it take what those
    /// bring back in turn (the latest first).
    async fn update(&mut self, msg: Option<Msg>) -> ControlFlow<Exit> {
        let mut pending: Vec<Msg> = msg.into_iter().collect();
        while let Some(msg) = pending.pop() {
            for effect in self.app.update(msg) {
                pending.extend(self.apply(effect).await?);
            }
        }
        ControlFlow::Continue(())
    }

    /// Carry out one effect; what it brings back for the model, if anything.
    async fn apply(&mut self, effect: Effect) -> ControlFlow<Exit, Option<Msg>> {
        let reply = match effect {
            Effect::Send(request) => self
                .link
                .requests
                .send(request)
                .await
                .err()
                .map(|_| ended()),
            Effect::Redraw | Effect::Record(true) => None,
            Effect::After { delay, msg } => {
                let later = self.later.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let _ = later.send(*msg);
                });
                None
            }
            Effect::Reconnect => {
                self.relink();
                None
            }
            Effect::Note(note) => {
                if let Some(recording) = &self.recording {
                    recording.note(note);
                }
                None
            }
            Effect::Record(false) => {
                if let Some(recording) = self.recording.as_mut() {
                    recording.end();
                }
                None
            }
            Effect::Take => self.wish(ControlWish::Take(self.person.clone())).await,
            Effect::HandBack { note } => self.wish(ControlWish::Release(note)).await,
            Effect::Bell => {
                self.ring();
                None
            }
            Effect::NextSession => self.follow_next_session().await,
            Effect::Campaign(call) => {
                let (sessions, done) = (self.sessions.clone(), self.campaign.clone());
                tokio::spawn(async move {
                    let _ = done.send(crate::net::campaign::call(&sessions, call).await);
                });
                None
            }
            Effect::Quit => return ControlFlow::Break(Exit::Quit),
        };
        ControlFlow::Continue(reply)
    }

    /// A new link (for `app.watching` when watching): a new recording session, no text layer yet.
    fn relink(&mut self) {
        if let Some(recording) = self.recording.as_mut() {
            recording.new_session();
        }
        self.link = self.dial.open(&self.app.watching);
        self.link_alive = true;
        self.text_feed = None;
    }

    /// Ask the watched session's control for `wish`; a link that cannot carry it has ended.
    async fn wish(&mut self, wish: ControlWish) -> Option<Msg> {
        let sent = match &self.link.control {
            Some(control) => control.send(wish).await.is_ok(),
            None => false,
        };
        (!sent).then(ended)
    }

    fn ring(&mut self) {
        self.bells += 1;
        // BEL: the terminal beeps or flashes, as its owner set it up. A test backend has no
        // terminal to ring; the count in the report stands for it.
        if let Some(out) = self.out.as_mut() {
            let _ = out.write_all(b"\x07");
        }
    }

    /// Tab in watch mode: watch the next live session.
    async fn follow_next_session(&mut self) -> Option<Msg> {
        match next_session(&self.sessions, self.app.watching.as_deref()).await {
            Ok(next) => {
                self.app.watching = Some(next);
                self.relink();
                None
            }
            Err(err) => Some(Msg::RecorderError(err.to_string())),
        }
    }

    /// After a wake: ask for what the screen needs next, then draw the frame (unless the
    /// terminal has not taken the one before) and report it.
    fn frame(&mut self) -> anyhow::Result<ControlFlow<Exit>> {
        self.want_text();
        let size = screen(self.terminal)?;
        if let Some(job) = self.painter.job(self.app, size) {
            let done = self.encoded.clone();
            tokio::task::spawn_blocking(move || {
                let _ = done.blocking_send(job.run());
            });
        }
        if self.out.as_ref().is_some_and(|o| o.backlog() > 0) {
            self.deferred = true;
            return Ok(ControlFlow::Continue(()));
        }
        self.deferred = false;
        if let Err(err) = self.render() {
            return terminal_gone(err).map(ControlFlow::Break);
        }
        self.report();
        Ok(ControlFlow::Continue(()))
    }

    /// The text layer of the page on screen, when the picture can carry it.
    fn want_text(&mut self) {
        let carried = self.app.wants_text() && self.painter.ready && self.painter.slot.has_image();
        let Some((episode, step)) = self.shown_for.as_ref().filter(|_| carried) else {
            return;
        };
        let feed = self.text_feed.get_or_insert_with(|| {
            let (wants, events) =
                spawn_text_fetcher(self.sessions.clone(), self.app.watching.clone());
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

    fn report(&self) {
        if let Some(frames) = &self.frames {
            report(frames, self.app, &self.painter, self.bells);
        }
    }
}

/// What the model is told when the link cannot take what it sends.
fn ended() -> Msg {
    Msg::Disconnected("the connection ended".into())
}

/// Drawing failed: the terminal is gone (closed, hung up). The UI ends as if its input had.
fn terminal_gone(err: anyhow::Error) -> anyhow::Result<Exit> {
    tracing::warn!("cannot draw any more, ending: {err:#}");
    Ok(Exit::InputClosed)
}
