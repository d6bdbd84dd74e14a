//! A campaign collected by a team through the terminal UI's own event loop (on test backends, fed
//! by scripts, as `tui/examples/take_over.rs` drives a hand-off), against a real server on real
//! Chromium with the demo site's tasks, each wanting two demonstrations: three people at once,
//! one who drops mid-task, a server restart half-way, a reviewer's "wrong" putting a task back,
//! and the export of what was accepted. Each person collects and reviews with a token of their
//! own (`browserenv-server campaign add-person`), which is who they are.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use browserenv::models::BrowserAction;
use browserenv_collect::campaign::{Campaign, People, CONFIG_FILE};
use browserenv_collect::tasks::TaskSet;
use browserenv_server::chromium::{ChromiumConfig, ChromiumLauncher};
use browserenv_server::environment::{step_bound, TaskCatalog};
use browserenv_server::site::{serve_dir, SiteHandle};
use browserenv_server::{start, ServerConfig, ServerHandle};
use browserenv_tui::app::App;
use browserenv_tui::graphics::Graphics;
use browserenv_tui::live::event_loop::{run, FrameReport, GraphicsSource, LoopOptions};
use browserenv_tui::net::sessions::Sessions;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers};
use futures_util::stream;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use tokio::sync::mpsc;

const ASSETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets");

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent {
        code,
        modifiers: KeyModifiers::NONE,
        kind: KeyEventKind::Press,
        state: KeyEventState::NONE,
    })
}

fn char(c: char) -> Event {
    key(KeyCode::Char(c))
}

/// The longest a person's next frame may take: a reset (a navigation, held to the action
/// timeout like a step) and a finish, each within the server's own step bound, once for each of
/// the four people whose browsers share the machine.
fn patience() -> Duration {
    let settings = browserenv_server::settings::EnvSettings::default();
    let finish = step_bound(&settings, &BrowserAction::finish(""));
    let reset = step_bound(&settings, &BrowserAction::back());
    4 * (finish + reset)
}

async fn until(
    frames: &mut mpsc::UnboundedReceiver<FrameReport>,
    who: &str,
    what: &str,
    done: impl Fn(&FrameReport) -> bool,
) -> FrameReport {
    let deadline = tokio::time::Instant::now() + patience();
    loop {
        match tokio::time::timeout_at(deadline, frames.recv()).await {
            Ok(Some(frame)) if done(&frame) => return frame,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("{who}'s UI stopped while waiting for: {what}"),
            Err(_) => panic!("{who}: timed out waiting for: {what}"),
        }
    }
}

/// One person at `browserenv-tui collect --token TOKEN`.
struct Person {
    name: String,
    input: mpsc::UnboundedSender<Event>,
    frames: mpsc::UnboundedReceiver<FrameReport>,
    task: tokio::task::JoinHandle<()>,
}

/// Each person's own token, by name.
type Tokens = BTreeMap<String, String>;

fn collect(server: &ServerHandle, tokens: &Tokens, name: &str) -> Person {
    let (input, mut input_rx) = mpsc::unbounded_channel::<Event>();
    let events = Box::pin(stream::poll_fn(move |cx| input_rx.poll_recv(cx)));
    let (frames_tx, frames) = mpsc::unbounded_channel();
    let options = LoopOptions {
        server: server.base_url(),
        token: Some(tokens[name].clone()),
        graphics: GraphicsSource::Ready(Graphics::halfblocks()),
        out: None,
        frames: Some(frames_tx),
        recorder: None,
        watch: None,
        collect: true,
        stop: None,
        typed_secrets: None,
    };
    let label = server.base_url();
    let task = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let mut app = App::new(String::new(), label);
        run(&mut terminal, &mut app, events, options).await.unwrap();
    });
    Person {
        name: name.to_string(),
        input,
        frames,
        task,
    }
}

impl Person {
    /// Wait for the next task in hand, started: its lease and task, or None when nothing is
    /// left for this person.
    async fn next_task(&mut self, done_leases: &BTreeSet<String>) -> Option<(String, String)> {
        let frame = until(
            &mut self.frames,
            &self.name,
            "a task started, or none left",
            |f| {
                let Some(c) = &f.collect else { return false };
                let started = c.lease.as_ref().is_some_and(|l| !done_leases.contains(l))
                    && !f.in_flight
                    && f.observed.as_ref().is_some_and(|o| o.step == 0 && !o.done);
                started || (c.finished && !c.waiting)
            },
        )
        .await;
        let collect = frame.collect.unwrap();
        collect
            .lease
            .map(|lease| (lease, frame.task.unwrap_or_default()))
    }

    /// Finish the task in hand (`f`, Enter) and save it as done (`P`).
    async fn finish_and_save(&mut self, lease: &str) {
        for event in [char('f'), key(KeyCode::Enter)] {
            self.input.send(event).unwrap();
        }
        until(&mut self.frames, &self.name, "the episode ended", |f| {
            f.collect.as_ref().is_some_and(|c| c.ended)
        })
        .await;
        self.input.send(char('P')).unwrap();
        until(
            &mut self.frames,
            &self.name,
            "the demonstration saved",
            |f| {
                f.collect
                    .as_ref()
                    .is_some_and(|c| c.lease.as_deref() != Some(lease))
            },
        )
        .await;
    }

    /// Work until `saves` demonstrations are saved or nothing is left; the tasks done, in order.
    async fn work(&mut self, saves: usize) -> Vec<String> {
        let mut done = Vec::new();
        let mut leases = BTreeSet::new();
        while done.len() < saves {
            let Some((lease, task)) = self.next_task(&leases).await else {
                break;
            };
            self.finish_and_save(&lease).await;
            leases.insert(lease);
            done.push(task);
        }
        done
    }

    async fn quit(self) {
        drop(self.input);
        self.task.await.unwrap();
    }
}

/// The demo task set in a campaign folder, each task wanting two demonstrations, and its people's
/// tokens.
fn campaign_dir() -> (PathBuf, Tokens) {
    let dir = std::env::temp_dir().join(format!("browserenv-tui-campaign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(format!("{ASSETS}/tasks/demo.jsonl"), dir.join("demo.jsonl")).unwrap();
    std::fs::write(
        dir.join(CONFIG_FILE),
        r#"{"tasks": "demo.jsonl", "demos_wanted": 2, "lease_idle_seconds": 600}"#,
    )
    .unwrap();
    let tokens = ["ana", "bo", "cy", "dee"]
        .iter()
        .map(|name| People::add(&dir, name).unwrap())
        .collect();
    (dir, tokens)
}

async fn server(dir: &Path, site: &SiteHandle) -> ServerHandle {
    let launcher = ChromiumLauncher::new(ChromiumConfig {
        executable: std::env::var_os("BROWSER_CHROMIUM")
            .map(Into::into)
            .unwrap_or_else(browserenv_server::chromium::default_executable),
        ..ChromiumConfig::default()
    });
    start(
        launcher,
        ServerConfig {
            tasks: Some(std::sync::Arc::new(TaskCatalog {
                tasks: TaskSet::load(&dir.join("demo.jsonl")).unwrap(),
                base_url: Some(url::Url::parse(&site.url("")).unwrap()),
                folder: None,
            })),
            campaign: Some(dir.to_path_buf()),
            ..ServerConfig::default()
        },
    )
    .await
    .unwrap()
}

/// Who demonstrated which task, from the campaign's own log.
fn demonstrations(dir: &Path) -> Vec<(String, String)> {
    let (campaign, problems) = Campaign::open(dir).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    campaign
        .demonstrations()
        .iter()
        .map(|d| (d.task.clone(), d.person.clone()))
        .collect()
}

#[tokio::test]
async fn a_team_collects_every_task_twice_through_the_ui() {
    let site = serve_dir(format!("{ASSETS}/site")).await.unwrap();
    let (dir, tokens) = campaign_dir();
    let ids: Vec<String> = TaskSet::load(&dir.join("demo.jsonl"))
        .unwrap()
        .tasks
        .into_iter()
        .map(|t| t.id)
        .collect();
    let first = server(&dir, &site).await;

    // dee takes the first task and drops mid-task: her lease ends with her connection.
    let mut dee = collect(&first, &tokens, "dee");
    let (_, dee_task) = dee
        .next_task(&BTreeSet::new())
        .await
        .expect("a task for dee");
    assert_eq!(dee_task, ids[0]);
    dee.quit().await;

    // Three people at once, three demonstrations each; then the server stops.
    let people: Vec<Person> = ["ana", "bo", "cy"]
        .iter()
        .map(|name| collect(&first, &tokens, name))
        .collect();
    let runs = people.into_iter().map(|mut person| {
        tokio::spawn(async move {
            let done = person.work(3).await;
            person.quit().await;
            done
        })
    });
    let mut before = 0;
    for run in runs {
        before += run.await.unwrap().len();
    }
    assert_eq!(before, 9);
    first.stop().await.unwrap();
    assert_eq!(
        demonstrations(&dir).len(),
        9,
        "every saved demonstration is on disk"
    );

    // A new server on the same folder: the team goes on until nothing is left.
    let second = server(&dir, &site).await;
    let people: Vec<Person> = ["ana", "bo", "cy"]
        .iter()
        .map(|name| collect(&second, &tokens, name))
        .collect();
    let runs = people.into_iter().map(|mut person| {
        tokio::spawn(async move {
            let done = person.work(usize::MAX).await;
            person.quit().await;
            done
        })
    });
    for run in runs {
        run.await.unwrap();
    }
    let all = demonstrations(&dir);
    assert_eq!(all.len(), 2 * ids.len(), "{all:?}");
    let mut per_task: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (task, person) in &all {
        assert!(
            per_task.entry(task).or_default().insert(person),
            "{person} did {task} twice"
        );
    }
    for id in &ids {
        assert_eq!(per_task[id.as_str()].len(), 2, "{id}: {per_task:?}");
    }
    assert!(
        all.iter().all(|(_, person)| person != "dee"),
        "dee dropped before saving anything; her task went to others"
    );

    // bo reviews ana's first demonstration as wrong: its task wants one more, which cy (who has
    // not done it, if anyone has not) or the one free person gets.
    let sessions = Sessions::new(&second.base_url(), Some(tokens["bo"].clone())).unwrap();
    let mut reviewed = None;
    for _ in 0..all.len() {
        let folder = dir.join(format!("review-{}", uuid::Uuid::new_v4()));
        let fetched = browserenv_tui::net::campaign::fetch_review(&sessions, &folder)
            .await
            .unwrap()
            .expect("a demonstration to review");
        assert_eq!(fetched.reviewer, "bo", "the token's person");
        assert_ne!(fetched.person, "bo", "nobody reviews their own");
        let quality = if fetched.person == "ana" && reviewed.is_none() {
            browserenv_tui::review::Quality::Bad
        } else {
            browserenv_tui::review::Quality::Good
        };
        let mut log = browserenv_tui::review::ReviewLog::new(&folder, Some("bo".into()));
        log.record(
            &fetched.episode_id,
            None,
            browserenv_tui::review::Change::Quality(Some(quality)),
        )
        .unwrap();
        let accepted = browserenv_tui::net::campaign::submit_review(&sessions, &folder, &fetched)
            .await
            .unwrap();
        assert_eq!(
            accepted,
            Some(quality == browserenv_tui::review::Quality::Good)
        );
        let _ = std::fs::remove_dir_all(&folder);
        if quality == browserenv_tui::review::Quality::Bad {
            reviewed = Some(fetched.task.clone());
        }
        if reviewed.is_some() && accepted == Some(true) {
            break;
        }
    }
    let back = reviewed.expect("a demonstration of ana's was reviewed");
    let progress: browserenv_collect::campaign::Progress =
        serde_json::from_value(sessions.get("/campaign").await.unwrap()).unwrap();
    let task = progress.tasks.iter().find(|t| t.id == back).unwrap();
    assert_eq!((task.done, task.rejected), (1, 1), "{task:?}");
    // Whoever has not done it gets it: ana did, so dee (who did nothing) is handed it first
    // unless an earlier task needs her; she works until nothing is left.
    let mut dee = collect(&second, &tokens, "dee");
    let done = dee.work(usize::MAX).await;
    dee.quit().await;
    assert_eq!(done, [back], "the task put back is the only one open");
    second.stop().await.unwrap();

    // The export of a campaign folder keeps what was accepted, with who did and who reviewed.
    let out = dir.join("export");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_browserenv-tui"))
        .arg("export")
        .arg(&dir)
        .args(["--format", "jsonl", "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(out.join("data.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!rows.is_empty());
    assert!(rows
        .iter()
        .all(|r| r["reviewer"] == "bo" && r["quality"] == "good"));
    assert!(rows
        .iter()
        .all(|r| r["person"] != "bo" && r["person"] != ""));
    let _ = std::fs::remove_dir_all(&dir);
}
