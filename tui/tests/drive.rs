//! The whole UI against a real server and real Chromium: scripted terminal input goes through the
//! event loop, and the effect is checked on the page (its title and URL, as the server reports them).

use std::time::Duration;

use browserenv_collect::trajectory::RecorderHandle;
use browserenv_server::chromium::{ChromiumConfig, ChromiumLauncher};
use browserenv_server::site::serve_dir;
use browserenv_server::{start, ServerConfig};
use browserenv_tui::app::App;
use browserenv_tui::graphics::picture::Region;
use browserenv_tui::graphics::Graphics;
use browserenv_tui::live::event_loop::{run, Exit, FrameReport, GraphicsSource, LoopOptions};
use browserenv_tui::screen::layout::layout;
use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};
use futures_util::stream;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use tokio::sync::mpsc;

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent {
        code,
        modifiers: KeyModifiers::NONE,
        kind: KeyEventKind::Press,
        state: KeyEventState::NONE,
    })
}

fn typed(text: &str) -> Vec<Event> {
    text.chars().map(|c| key(KeyCode::Char(c))).collect()
}

/// A left click: pressed and released at one cell (the UI sends it once the multi-click window
/// closes).
fn click(column: u16, row: u16) -> Vec<Event> {
    [
        MouseEventKind::Down(MouseButton::Left),
        MouseEventKind::Up(MouseButton::Left),
    ]
    .map(|kind| {
        Event::Mouse(MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    })
    .to_vec()
}

/// Wait (generously: this is a functional check, not a timing one) for a frame that satisfies `done`.
async fn until(
    frames: &mut mpsc::UnboundedReceiver<FrameReport>,
    what: &str,
    done: impl Fn(&FrameReport) -> bool,
) -> FrameReport {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match tokio::time::timeout_at(deadline, frames.recv()).await {
            Ok(Some(frame)) if done(&frame) => return frame,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the UI stopped while waiting for: {what}"),
            Err(_) => panic!("timed out waiting for: {what}"),
        }
    }
}

fn title(frame: &FrameReport) -> String {
    frame
        .observed
        .as_ref()
        .map(|o| o.title.clone())
        .unwrap_or_default()
}

fn url(frame: &FrameReport) -> String {
    frame
        .observed
        .as_ref()
        .map(|o| o.url.clone())
        .unwrap_or_default()
}

/// The UI's event loop on a TestBackend, fed by a script; it ends with the exit, the model and
/// the last screen.
struct Ui {
    input: mpsc::UnboundedSender<Event>,
    frames: mpsc::UnboundedReceiver<FrameReport>,
    task: tokio::task::JoinHandle<(Exit, App, String)>,
}

fn spawn_ui(
    mut app: App,
    server: String,
    size: (u16, u16),
    recorder: Option<(RecorderHandle, mpsc::UnboundedReceiver<String>)>,
    watch: Option<Option<String>>,
) -> Ui {
    let (input, mut input_rx) = mpsc::unbounded_channel::<Event>();
    let events = Box::pin(stream::poll_fn(move |cx| input_rx.poll_recv(cx)));
    let (frames_tx, frames) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
        let options = LoopOptions {
            server,
            token: None,
            graphics: GraphicsSource::Ready(Graphics::halfblocks()),
            out: None,
            frames: Some(frames_tx),
            recorder,
            watch,
            collect: false,
            stop: None,
            typed_secrets: None,
        };
        let exit = run(&mut terminal, &mut app, events, options).await.unwrap();
        (exit, app, format!("{}", terminal.backend()))
    });
    Ui {
        input,
        frames,
        task,
    }
}

#[tokio::test]
async fn scripted_input_drives_the_page() {
    let pages = serve_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/pages"))
        .await
        .unwrap();
    let launcher = ChromiumLauncher::new(ChromiumConfig {
        executable: std::env::var_os("BROWSER_CHROMIUM")
            .map(Into::into)
            .unwrap_or_else(browserenv_server::chromium::default_executable),
        ..ChromiumConfig::default()
    });
    let server = start(launcher, ServerConfig::default()).await.unwrap();

    let (width, height) = (120, 40);
    let app = App::new(pages.url("canvas.html"), server.base_url());
    let Ui {
        input: input_tx,
        mut frames,
        task: ui,
    } = spawn_ui(app, server.base_url(), (width, height), None, None);

    until(&mut frames, "the canvas page on screen", |f| {
        url(f).ends_with("canvas.html") && f.picture_current
    })
    .await;

    // A mouse click on the picture clicks the page pixel under that cell's centre.
    let picture = layout(
        Rect::new(0, 0, width, height),
        &Graphics::halfblocks(),
        false,
        Region::PAGE,
    )
    .picture
    .unwrap();
    let (column, row) = picture.page_to_cell(200, 150).unwrap();
    let (x, y) = picture.cell_to_page(column, row).unwrap();
    for event in click(column, row) {
        input_tx.send(event).unwrap();
    }
    let expected = format!("clicked {x},{y}");
    until(&mut frames, &expected, |f| title(f) == expected).await;

    // The command line resets to another page.
    input_tx.send(key(KeyCode::Char(':'))).unwrap();
    for event in typed(&format!("reset {}", pages.url("form.html"))) {
        input_tx.send(event).unwrap();
    }
    input_tx.send(key(KeyCode::Enter)).unwrap();
    until(&mut frames, "the form", |f| {
        url(f).ends_with("form.html") && !f.in_flight
    })
    .await;

    // Click the input (page 250,115), type mode, then ENTER with `e`.
    let (column, row) = picture.page_to_cell(250, 115).unwrap();
    for event in click(column, row) {
        input_tx.send(event).unwrap();
    }
    input_tx.send(key(KeyCode::Char('i'))).unwrap();
    for event in typed("tui works") {
        input_tx.send(event).unwrap();
    }
    input_tx.send(key(KeyCode::Enter)).unwrap();
    until(&mut frames, "the typed text", |f| {
        title(f).contains("q=[tui works]")
    })
    .await;
    input_tx.send(key(KeyCode::Char('e'))).unwrap();
    until(&mut frames, "the submitted form", |f| {
        url(f).contains("result.html?q=tui+works")
    })
    .await;

    // Quit asks first while the episode is in progress.
    input_tx.send(key(KeyCode::Char('q'))).unwrap();
    input_tx.send(key(KeyCode::Char('y'))).unwrap();
    let (exit, _, screen) = ui.await.unwrap();
    server.stop().await.unwrap();
    assert_eq!(exit, Exit::Quit);
    assert!(screen.contains("result.html?q=tui+works"), "{screen}");
    assert!(screen.contains("result: tui works"), "{screen}");
}

#[tokio::test]
async fn tasks_and_recording_through_the_ui() {
    use browserenv_collect::tasks::TaskSet;
    use browserenv_collect::trajectory::{read, Actor, Outcome, Recorder, TrajectoryWriter};
    use browserenv_server::environment::TaskCatalog;
    use browserenv_tui::app::TaskView;

    let assets = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets");
    let site = serve_dir(format!("{assets}/site")).await.unwrap();
    let tasks = TaskSet::load(std::path::Path::new(&format!("{assets}/tasks/demo.jsonl"))).unwrap();
    let chosen: Vec<_> = ["info-founded", "nav-store-map"]
        .iter()
        .map(|id| tasks.get(id).unwrap().clone())
        .collect();
    let launcher = ChromiumLauncher::new(ChromiumConfig::default());
    let server = start(
        launcher,
        ServerConfig {
            tasks: Some(std::sync::Arc::new(TaskCatalog {
                tasks: TaskSet {
                    name: "demo".into(),
                    tasks: chosen.clone(),
                },
                base_url: Some(url::Url::parse(&site.url("")).unwrap()),
                folder: None,
            })),
            ..ServerConfig::default()
        },
    )
    .await
    .unwrap();
    let dir = std::env::temp_dir().join(format!("browserenv-tui-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
    let (errors_tx, errors) = mpsc::unbounded_channel();
    let handle = RecorderHandle::spawn(Recorder::new(writer, Actor::Human), move |err| {
        let _ = errors_tx.send(err.to_string());
    })
    .unwrap();

    let mut app = App::new(site.url("index.html"), server.base_url());
    app.can_record = true;
    app.recording = true;
    app.tasks = chosen
        .iter()
        .map(|t| TaskView {
            id: t.id.clone(),
            category: "x".into(),
            instruction: t.instruction.clone(),
        })
        .collect();
    let recorder = Some((handle, errors));
    let Ui {
        input: input_tx,
        mut frames,
        task: ui,
    } = spawn_ui(app, server.base_url(), (120, 40), recorder, None);

    until(&mut frames, "the first task", |f| {
        url(f).ends_with("index.html") && !f.in_flight
    })
    .await;
    input_tx.send(key(KeyCode::Char('f'))).unwrap();
    for event in typed("1968") {
        input_tx.send(event).unwrap();
    }
    input_tx.send(key(KeyCode::Enter)).unwrap();
    let finished = until(&mut frames, "the verdict", |f| {
        f.observed.as_ref().is_some_and(|o| o.done)
    })
    .await;
    assert_eq!(finished.observed.as_ref().unwrap().reward, Some(1.0));
    assert!(finished
        .notice
        .as_ref()
        .unwrap()
        .text
        .starts_with("task passed"));
    input_tx.send(key(KeyCode::Char('n'))).unwrap();
    for event in typed("found it on the about page") {
        input_tx.send(event).unwrap();
    }
    input_tx.send(key(KeyCode::Enter)).unwrap();
    input_tx.send(key(KeyCode::Char('N'))).unwrap();
    until(&mut frames, "the second task", |f| {
        f.observed.as_ref().is_some_and(|o| !o.done && o.step == 0) && !f.in_flight
    })
    .await;
    input_tx.send(key(KeyCode::Char(':'))).unwrap();
    for event in typed("click 373 279") {
        input_tx.send(event).unwrap();
    }
    input_tx.send(key(KeyCode::Enter)).unwrap();
    until(&mut frames, "the map tab", |f| url(f).ends_with("map.html")).await;
    input_tx.send(key(KeyCode::Char('q'))).unwrap();
    input_tx.send(key(KeyCode::Char('y'))).unwrap();
    let (exit, app, _) = ui.await.unwrap();
    let notice = app.notice;
    assert_eq!(exit, Exit::Quit);
    server.stop().await.unwrap();
    assert!(!notice.as_ref().is_some_and(|n| n.is_error), "{notice:?}");

    let recording = read(&dir).unwrap();
    assert_eq!(recording.problems, vec![]);
    let summary: Vec<_> = recording
        .episodes
        .iter()
        .map(|e| (e.task.clone().unwrap(), e.outcome, e.steps, e.reward))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("info-founded".to_string(), Outcome::Finished, 1, Some(1.0)),
            (
                "nav-store-map".to_string(),
                Outcome::Abandoned,
                1,
                Some(0.0)
            ),
        ]
    );
    assert_eq!(recording.episodes[0].answer.as_deref(), Some("1968"));
    let first = &recording.steps[0];
    assert_eq!(first.actor, Actor::Human);
    assert_eq!(first.note.as_deref(), Some("found it on the about page"));
    assert!(recording.steps[1].next_url.ends_with("map.html"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn watch_mode_follows_an_agent_read_only() {
    use browserenv::{BrowserAction, Client, ResetOptions};
    let pages = serve_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/pages"))
        .await
        .unwrap();
    let server = start(
        ChromiumLauncher::new(ChromiumConfig::default()),
        ServerConfig::default(),
    )
    .await
    .unwrap();
    let mut agent = Client::connect(&server.base_url()).await.unwrap();
    agent
        .reset(ResetOptions::new(pages.url("canvas.html")))
        .await
        .unwrap();
    let sessions = browserenv_tui::net::sessions::Sessions::new(&server.base_url(), None)
        .unwrap()
        .list()
        .await
        .unwrap();
    let session = sessions[0]["id"].as_str().unwrap().to_string();

    let app = App::new(String::new(), server.base_url());
    let Ui {
        input: input_tx,
        mut frames,
        task: ui,
    } = spawn_ui(app, server.base_url(), (120, 40), None, Some(Some(session)));
    // The current page at once, then the agent's click.
    until(&mut frames, "the watched page", |f| {
        url(f).ends_with("canvas.html") && f.picture_current
    })
    .await;
    agent.step(BrowserAction::click(321, 123)).await.unwrap();
    until(&mut frames, "the agent's click", |f| {
        title(f) == "clicked 321,123" && f.picture_current
    })
    .await;
    // Read-only: an action key is refused, visibly.
    input_tx.send(key(KeyCode::Char('b'))).unwrap();
    let refused = until(&mut frames, "the refusal", |f| {
        f.notice.as_ref().is_some_and(|n| n.is_error)
    })
    .await;
    assert!(refused.notice.unwrap().text.contains("read-only"));
    // Quitting a watch asks nothing: the episode is the agent's.
    input_tx.send(key(KeyCode::Char('q'))).unwrap();
    let (exit, _, screen) = ui.await.unwrap();
    assert_eq!(exit, Exit::Quit);
    assert!(screen.contains("watching"), "{screen}");
    agent.close().await.unwrap();
    server.stop().await.unwrap();
}

/// The secret the person types in `hand_over_a_secret`.
const SECRET: &str = "hunter2-s3cret";

/// What came of a secret typed during a hand-off: the agent's next observation's metadata, the
/// steps of the person's own recording (actor, op, text), and its files' text.
struct HandedOver {
    agent_saw: serde_json::Map<String, serde_json::Value>,
    recorded: Vec<(browserenv_collect::trajectory::Actor, String, String)>,
    files: String,
}

/// An agent on assets/pages/login.html; the person watches it with a recording of their own
/// (as `browserenv-tui watch --record DIR`), takes control (`c`), clicks the user name field (a
/// plain text field: only the person's word makes the typing a secret), types `SECRET` through
/// the secret entry (`s`, its name, Enter, its value, Enter) and hands back (`c`); then the agent
/// takes `next`.
async fn hand_over_a_secret(next: browserenv::BrowserAction) -> HandedOver {
    use browserenv::{Client, ResetOptions};
    use browserenv_collect::trajectory::{read, Actor, Recorder, TrajectoryWriter};

    let pages = serve_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/pages"))
        .await
        .unwrap();
    let server = start(
        ChromiumLauncher::new(ChromiumConfig::default()),
        ServerConfig::default(),
    )
    .await
    .unwrap();
    let mut agent = Client::connect(&server.base_url()).await.unwrap();
    agent
        .reset(ResetOptions::new(pages.url("login.html")))
        .await
        .unwrap();
    let sessions = browserenv_tui::net::sessions::Sessions::new(&server.base_url(), None)
        .unwrap()
        .list()
        .await
        .unwrap();
    let session = sessions[0]["id"].as_str().unwrap().to_string();
    let dir = std::env::temp_dir().join(format!(
        "browserenv-tui-secret-{}-{}",
        std::process::id(),
        next.op().name()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    // Watching, the recorder's own actor is the agent; the person's steps say "human".
    let (writer, _) = TrajectoryWriter::open(&dir).unwrap();
    let (errors_tx, errors) = mpsc::unbounded_channel();
    let handle = RecorderHandle::spawn(Recorder::new(writer, Actor::Agent), move |err| {
        let _ = errors_tx.send(err.to_string());
    })
    .unwrap();
    let mut app = App::new(String::new(), server.base_url());
    app.can_record = true;
    app.recording = true;
    let Ui {
        input: input_tx,
        mut frames,
        task: ui,
    } = spawn_ui(
        app,
        server.base_url(),
        (120, 40),
        Some((handle, errors)),
        Some(Some(session)),
    );
    let step = |f: &FrameReport| f.observed.as_ref().map_or(0, |o| o.step);
    let send = |events: Vec<Event>| {
        for event in events {
            input_tx.send(event).unwrap();
        }
    };
    until(&mut frames, "the watched page", |f| {
        url(f).ends_with("login.html") && f.picture_current
    })
    .await;
    send(vec![key(KeyCode::Char('c'))]);
    until(&mut frames, "control", |f| f.in_control).await;
    send(vec![key(KeyCode::Char(':'))]);
    send(typed("click 250 115"));
    send(vec![key(KeyCode::Enter)]);
    until(&mut frames, "the click", |f| step(f) == 1 && !f.in_flight).await;
    send(vec![key(KeyCode::Char('s'))]);
    send(typed("user pin"));
    send(vec![key(KeyCode::Enter)]);
    send(typed(SECRET));
    send(vec![key(KeyCode::Enter)]);
    let typed_in = until(&mut frames, "the secret typed", |f| {
        step(f) == 2 && !f.in_flight
    })
    .await;
    assert!(
        !typed_in.notice.as_ref().is_some_and(|n| n.is_error),
        "{:?}",
        typed_in.notice
    );
    send(vec![key(KeyCode::Char('c'))]);
    until(&mut frames, "the hand-back", |f| {
        !f.in_control && f.controller.is_none()
    })
    .await;
    let agent_saw = agent.step(next).await.unwrap().observation.metadata;
    until(&mut frames, "the agent's step", |f| step(f) == 3).await;
    send(vec![key(KeyCode::Char('q'))]);
    let (exit, app, _) = ui.await.unwrap();
    assert_eq!(exit, Exit::Quit);
    assert!(
        !app.notice.as_ref().is_some_and(|n| n.is_error),
        "{:?}",
        app.notice
    );
    agent.close().await.unwrap();
    server.stop().await.unwrap();

    let recording = read(&dir).unwrap();
    assert_eq!(recording.problems, vec![]);
    let recorded = recording
        .steps
        .iter()
        .map(|s| {
            let text = |field: &str| s.action[field].as_str().unwrap_or_default().to_string();
            (s.actor, text("op"), text("text"))
        })
        .collect();
    let files = ["steps.jsonl", "episodes.jsonl"]
        .iter()
        .map(|file| std::fs::read_to_string(dir.join(file)).unwrap_or_default())
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    HandedOver {
        agent_saw,
        recorded,
        files,
    }
}

#[tokio::test]
async fn a_secret_typed_while_in_control_stays_the_persons() {
    use browserenv_collect::trajectory::Actor;
    let handed = hand_over_a_secret(browserenv::BrowserAction::wait()).await;
    // The agent hears that the person typed, and how much, never what.
    let human_steps: Vec<(&str, &str)> = handed.agent_saw["human_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["action"]["op"].as_str().unwrap(),
                s["action"]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        human_steps,
        vec![("click", ""), ("type", "<redacted:14 characters>")]
    );
    let seen = serde_json::to_string(&handed.agent_saw).unwrap();
    assert!(!seen.contains(SECRET), "{seen}");
    // The person's own recording names the secret; its value is in none of the files.
    let human: Vec<_> = handed
        .recorded
        .iter()
        .filter(|(actor, _, _)| *actor == Actor::Human)
        .map(|(_, op, text)| (op.as_str(), text.as_str()))
        .collect();
    assert_eq!(human, vec![("click", ""), ("type", "<secret:USER_PIN>")]);
    assert!(!handed.files.contains(SECRET), "{}", handed.files);
}

/// The field keeps the secret after the hand-back: the agent's next key, typing or click on it
/// reads it back as `metadata.element.text` (the probe's `element`), to the agent, its watchers
/// and every recording, the person's included.
#[tokio::test]
async fn the_agent_never_reads_back_a_secret_the_person_typed() {
    use browserenv::models::Key;
    let handed = hand_over_a_secret(browserenv::BrowserAction::key(Key::Tab)).await;
    let seen = serde_json::to_string(&handed.agent_saw).unwrap();
    assert!(!seen.contains(SECRET), "{seen}");
    assert!(!handed.files.contains(SECRET), "{}", handed.files);
}
