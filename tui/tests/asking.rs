//! An agent asks for a person (`request_human`, over MCP) while the terminal UI's own event loop
//! (on a test backend, fed by a script) watches another session, against a real server on real
//! Chromium: the UI hears of the ask and rings the bell once, Tab takes it to the session that
//! asks, whose badge it shows; it takes control, hands back with a note typed at the prompt, and
//! the agent's call returns with that note.

use std::time::Duration;

use browserenv::models::BrowserAction;
use browserenv::{Client, ResetOptions};
use browserenv_server::chromium::{ChromiumConfig, ChromiumLauncher};
use browserenv_server::environment::step_bound;
use browserenv_server::site::serve_dir;
use browserenv_server::{start, ServerConfig};
use browserenv_tui::app::App;
use browserenv_tui::graphics::Graphics;
use browserenv_tui::live::event_loop::{run, Exit, FrameReport, GraphicsSource, LoopOptions};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers};
use futures_util::stream;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::{json, Value};
use tokio::sync::mpsc;

#[path = "../../tests/src/socket.rs"]
mod socket;
use socket::mcp_call;

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent {
        code,
        modifiers: KeyModifiers::NONE,
        kind: KeyEventKind::Press,
        state: KeyEventState::NONE,
    })
}

/// The first frame that satisfies `done`, within `patience` (a bound of the server's).
async fn until(
    frames: &mut mpsc::UnboundedReceiver<FrameReport>,
    patience: Duration,
    what: &str,
    done: impl Fn(&FrameReport) -> bool,
) -> FrameReport {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match tokio::time::timeout_at(deadline, frames.recv()).await {
            Ok(Some(frame)) if done(&frame) => return frame,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the UI stopped while waiting for: {what}"),
            Err(_) => panic!("timed out waiting for: {what}"),
        }
    }
}

#[tokio::test]
async fn the_ui_hears_an_agent_ask_takes_over_and_hands_back_a_note() {
    let pages = serve_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/pages"))
        .await
        .unwrap();
    let config = ServerConfig::default();
    // Every wait below is one of the server's own bounds: a reset or a step is answered within
    // the step bound, and all the person does happens while the agent's `request_human` waits,
    // at most `BROWSER_ASK_WAIT_SECONDS` (a UI that missed the ask would time out the call).
    let step = step_bound(&config.settings, &BrowserAction::click(0, 0));
    let ask_wait = config.timeouts.ask_wait;
    let server = start(ChromiumLauncher::new(ChromiumConfig::default()), config)
        .await
        .unwrap();
    let base = server.base_url();

    // A quiet agent, whose session the person watches first.
    let mut quiet = Client::connect(&base).await.unwrap();
    quiet
        .reset(ResetOptions::new(pages.url("canvas.html")))
        .await
        .unwrap();
    let quiet_id = browserenv_tui::net::sessions::Sessions::new(&base, None)
        .unwrap()
        .list()
        .await
        .unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The agent that will ask, over MCP.
    let created = mcp_call(
        &base,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}),
    )
    .await;
    let id = created["result"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let call = |name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"session_id": id, "name": name, "arguments": arguments}})
    };
    let reset = tokio::time::timeout(
        step,
        mcp_call(
            &base,
            None,
            call("reset", json!({"start_url": pages.url("form.html")})),
        ),
    )
    .await
    .expect("the reset within the step bound");
    assert!(reset["error"].is_null(), "{reset}");

    let (input, mut input_rx) = mpsc::unbounded_channel::<Event>();
    let events = Box::pin(stream::poll_fn(move |cx| input_rx.poll_recv(cx)));
    let (frames_tx, mut frames) = mpsc::unbounded_channel();
    let options = LoopOptions {
        server: base.clone(),
        token: None,
        graphics: GraphicsSource::Ready(Graphics::halfblocks()),
        out: None,
        frames: Some(frames_tx),
        recorder: None,
        watch: Some(Some(quiet_id.clone())),
        collect: false,
        stop: None,
        typed_secrets: None,
    };
    let label = base.clone();
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(160, 40)).unwrap();
        let mut app = App::new(String::new(), label);
        let exit = run(&mut terminal, &mut app, events, options).await.unwrap();
        (exit, app, format!("{}", terminal.backend()))
    });
    let send = |events: Vec<Event>| {
        for event in events {
            input.send(event).unwrap();
        }
    };
    until(&mut frames, step, "the quiet session's page", |f| {
        f.picture_current && f.observed.is_some()
    })
    .await;

    let reason = "please sign me in";
    let asked = tokio::spawn({
        let (base, body) = (
            base.clone(),
            call(
                "request_human",
                json!({"reason": reason, "wait_seconds": ask_wait.as_secs()}),
            ),
        );
        async move { mcp_call(&base, None, body).await }
    });
    // Heard from the list of sessions while another is watched: the bell, and where to go.
    let heard = until(&mut frames, ask_wait, "the bell", |f| f.bells > 0).await;
    assert_eq!(heard.asking, None, "the watched session asks nothing");
    let notice = heard.notice.unwrap().text;
    assert!(
        notice.contains(reason) && notice.contains("Tab"),
        "{notice}"
    );
    send(vec![key(KeyCode::Tab)]);
    let there = until(&mut frames, ask_wait, "the asking session", |f| {
        f.asking.is_some() && f.picture_current
    })
    .await;
    let ask = there.asking.unwrap();
    assert_eq!(
        (ask.session.as_str(), ask.reason.as_str()),
        (id.as_str(), reason)
    );

    send(vec![key(KeyCode::Char('c'))]);
    until(&mut frames, ask_wait, "control", |f| f.in_control).await;
    // Handing back an agent that asked: the prompt for the note, then Enter sends both.
    send(vec![key(KeyCode::Char('c'))]);
    let note = "signed in as ana";
    send(note.chars().map(|c| key(KeyCode::Char(c))).collect());
    send(vec![key(KeyCode::Enter)]);
    let back = until(&mut frames, ask_wait, "the hand-back", |f| {
        !f.in_control && f.asking.is_none()
    })
    .await;
    assert_eq!(back.bells, 1, "one ask, one bell");

    let answer = tokio::time::timeout(ask_wait + step, asked)
        .await
        .expect("request_human returned within the ask wait")
        .unwrap();
    let metadata = &answer["result"]["data"]["metadata"];
    assert_eq!(metadata["human_note"], note, "{answer}");
    assert!(
        metadata["human"].as_str().is_some_and(|h| !h.is_empty()),
        "{answer}"
    );

    send(vec![key(KeyCode::Char('q'))]);
    let (exit, app, screen) = ui.await.unwrap();
    assert_eq!(exit, Exit::Quit);
    assert!(
        !app.notice.as_ref().is_some_and(|n| n.is_error),
        "{:?}",
        app.notice
    );
    assert!(
        screen.contains("agent in control") && !screen.contains("ASKING"),
        "{screen}"
    );
    quiet.close().await.unwrap();
    let _ = mcp_call(
        &base,
        None,
        json!({"jsonrpc": "2.0", "id": 3, "method": "openenv/session/close",
               "params": {"session_id": id}}),
    )
    .await;
    server.stop().await.unwrap();
}
