//! A scripted person at `browserenv-tui watch`: the terminal UI's own event loop (on a test
//! backend instead of a terminal) follows a session, takes control with `c`, runs each `--command`
//! through the UI's `:` command line, and hands back with `c`. It prints one JSON line per
//! milestone and the screen at the end, so a test in any language (`tests/python/test_handoff.py`)
//! can drive a hand-off the way a person would.
//!
//! `cargo run -p browserenv-tui --example take_over -- --server URL [--token T] [--session ID]
//!  [--command "click 100 200"]... [--hold-seconds S]`

use std::time::Duration;

use browserenv_tui::app::{App, LinkState};
use browserenv_tui::graphics::Graphics;
use browserenv_tui::live::event_loop::{run, FrameReport, GraphicsSource, LoopOptions};
use browserenv_tui::output::printable;
use clap::Parser;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;
use tokio::sync::mpsc;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    server: String,
    #[arg(long)]
    token: Option<String>,
    /// The session to follow; without it the first live one (waiting for one).
    #[arg(long)]
    session: Option<String>,
    /// A `:` command to run while in control (repeatable), e.g. "click 100 200", "scroll 300".
    #[arg(long = "command")]
    commands: Vec<String>,
    /// Seconds to keep control after the last command, before handing back.
    #[arg(long, default_value_t = 0.0)]
    hold_seconds: f64,
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent {
        code,
        modifiers: KeyModifiers::NONE,
        kind: KeyEventKind::Press,
        state: KeyEventState::NONE,
    })
}

/// Wait for a frame that satisfies `done` (30 s at most: the caller's test reads the failure).
async fn until(
    frames: &mut mpsc::UnboundedReceiver<FrameReport>,
    what: &str,
    done: impl Fn(&FrameReport) -> bool,
) -> anyhow::Result<FrameReport> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match tokio::time::timeout_at(deadline, frames.recv()).await {
            Ok(Some(frame)) if done(&frame) => return Ok(frame),
            Ok(Some(_)) => continue,
            Ok(None) => anyhow::bail!("the UI stopped while waiting for {what}"),
            Err(_) => anyhow::bail!("timed out waiting for {what}"),
        }
    }
}

/// One JSON line; what the page showed (title, URL, screen) is in it, so it is printed the way the
/// UI prints everything it quotes.
fn say(event: serde_json::Value) {
    println!("{}", printable(&event.to_string()));
}

fn step(frame: &FrameReport) -> u64 {
    frame.observed.as_ref().map_or(0, |o| o.step)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (input, mut input_rx) = mpsc::unbounded_channel::<Event>();
    let events = Box::pin(futures_util::stream::poll_fn(move |cx| {
        input_rx.poll_recv(cx)
    }));
    let (frames_tx, mut frames) = mpsc::unbounded_channel();
    let options = LoopOptions {
        server: args.server.clone(),
        token: args.token.clone(),
        graphics: GraphicsSource::Ready(Graphics::halfblocks()),
        out: None,
        frames: Some(frames_tx),
        recorder: None,
        watch: Some(args.session.clone()),
        collect: false,
        stop: None,
        typed_secrets: None,
    };
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 40))?;
        let mut app = App::new(String::new(), "take_over".into());
        run(&mut terminal, &mut app, events, options).await?;
        anyhow::Ok(format!("{}", terminal.backend()))
    });

    let shown = until(&mut frames, "the watched page", |f| {
        f.link == LinkState::Connected && f.observed.is_some()
    })
    .await?;
    say(
        json!({"event": "watching", "step": step(&shown), "url": shown.observed.as_ref().map(|o| o.url.clone())}),
    );
    input.send(key(KeyCode::Char('c')))?;
    let taken = until(&mut frames, "control", |f| f.in_control).await?;
    say(json!({"event": "in_control", "controller": taken.controller, "step": step(&taken)}));
    let mut last = step(&taken);
    for command in &args.commands {
        input.send(key(KeyCode::Char(':')))?;
        for c in command.chars() {
            input.send(key(KeyCode::Char(c)))?;
        }
        input.send(key(KeyCode::Enter))?;
        let done = until(&mut frames, command, |f| {
            step(f) > last && !f.in_flight && f.picture_current
        })
        .await?;
        last = step(&done);
        let observed = done.observed.clone().unwrap_or_default();
        say(
            json!({"event": "stepped", "command": command, "step": last, "url": observed.url, "title": observed.title, "error": observed.error}),
        );
    }
    tokio::time::sleep(Duration::from_secs_f64(args.hold_seconds)).await;
    input.send(key(KeyCode::Char('c')))?;
    let back = until(&mut frames, "the hand-back", |f| {
        !f.in_control && f.controller.is_none()
    })
    .await?;
    say(json!({"event": "handed_back", "step": step(&back)}));
    // Until the agent's step after the hand-back shows.
    let after = until(&mut frames, "the agent's next step", |f| step(f) > last).await?;
    say(json!({"event": "agent_stepped", "step": step(&after)}));
    input.send(key(KeyCode::Char('q')))?;
    drop(input);
    let screen = ui.await??;
    say(json!({"event": "screen", "text": screen}));
    Ok(())
}
