//! `browserenv-tui` flags and the program's run: pick the server (remote or embedded), set up the
//! terminal, run the loop, put everything back.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use futures_util::StreamExt;
use tokio::sync::oneshot;

use browserenv_server::settings::{EnvSettings, PeerTimeouts};
use browserenv_server::ServerConfig;

use anyhow::Context;
use browserenv_collect::tasks::TaskSet;
use browserenv_collect::trajectory::{Actor, Recorder, RecorderHandle, TrajectoryWriter};

use crate::app::{App, Msg, TaskView};
use crate::graphics::GraphicsChoice;
use crate::live::event_loop::{run as run_loop, Exit, GraphicsSource, LoopOptions};
use crate::net::embedded::{default_site_dir, start_embedded, Embedded};
use crate::offline::export::ExportFormat;
use crate::output::printable;
use crate::screen::terminal::{enter, hangup, probe_graphics};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "browserenv-tui",
    version,
    about = "Watch and drive a browserenv session from the terminal"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A server speaking the OpenEnv browser protocol (ours or the Python one). Without it, an
    /// embedded server and the offline demo site start in this process.
    #[arg(long, env = "BROWSERENV_SERVER", global = true)]
    pub server: Option<String>,
    /// Bearer token of a server started with BROWSER_API_TOKEN; for `collect` and `review`, your
    /// own token of the campaign (`browserenv-server campaign add-person`), which says who you are.
    #[arg(long, env = "BROWSER_API_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// Where each episode starts (default: the demo site's home page).
    #[arg(long)]
    pub start_url: Option<String>,
    /// How to draw the page: auto-detect, or force one protocol.
    #[arg(long, value_enum, default_value = "auto", global = true)]
    pub graphics: GraphicsChoice,
    /// Pixels per wheel notch / j / u / PgDn / PgUp.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(i64).range(1..=1200))]
    pub scroll_step: i64,
    /// The demo site folder (embedded mode).
    #[arg(long, global = true)]
    pub site: Option<PathBuf>,
    /// Steps per episode (embedded mode).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=200))]
    pub max_steps: u64,
    /// Chromium executable (embedded mode): chromium-headless-shell where installed, else chromium.
    #[arg(
        long,
        env = "BROWSER_CHROMIUM",
        default_value_os_t = browserenv_server::chromium::default_executable(),
        global = true
    )]
    pub chromium: PathBuf,
    /// Record demonstrations into this folder (trajectory format v1, actor "human"); `R` toggles.
    #[arg(long, global = true)]
    pub record: Option<PathBuf>,
    /// Accepted for older command lines: fields holding a secret are covered in saved frames
    /// without it.
    #[arg(long, global = true, hide = true)]
    pub redact: bool,
    /// With --record and the embedded server: also keep what each episode's pages load, as a
    /// WARC file in DIR/archives/ (docs/archives.md); `replay` then runs offline.
    #[arg(long)]
    pub archive: bool,
    /// Walk through the tasks of this JSONL file (N next, S skip). Embedded mode loads them into
    /// its server; a remote server must have been started with the same --tasks.
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Write logs here (the terminal belongs to the UI).
    #[arg(long)]
    pub log: Option<PathBuf>,
}

/// Work on recordings instead of driving a browser.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Write a recording and its review as a dataset: a Hugging Face ImageFolder (hf), JSON rows
    /// with image paths (jsonl), one ATIF v1.8 trajectory per episode (atif), or its episodes'
    /// web archives as one WACZ package (wacz).
    Export {
        /// The recording folder (steps.jsonl, episodes.jsonl, screenshots/, review.jsonl), or a
        /// campaign's folder (its accepted demonstrations).
        dir: PathBuf,
        #[arg(long, value_enum, default_value = "hf")]
        format: ExportFormat,
        /// Where to write the export.
        #[arg(long)]
        out: PathBuf,
        /// Keep only the episodes whose review says quality good.
        #[arg(long)]
        reviewed_only: bool,
        /// Leave out the steps with these marks (comma-separated: redundant,wrong).
        #[arg(long, value_enum, value_delimiter = ',')]
        drop_marked: Vec<crate::review::Mark>,
        /// With a campaign's folder: also the demonstrations nobody has reviewed yet (never a
        /// rejected one).
        #[arg(long)]
        unreviewed: bool,
    },
    /// Re-run every recorded episode against a fresh environment and report where it diverged:
    /// offline, from the episodes' web archives, when the recording has them (`--archive`);
    /// else, or with --live, against the site. Exits 0 when nothing diverged, 2 when something did.
    Replay {
        dir: PathBuf,
        /// Replay against the live site even when the recording has archives.
        #[arg(long)]
        live: bool,
        /// Replay against this server (default: an embedded server and the demo site; recorded
        /// URLs on a loopback origin are mapped onto the new site's origin).
        #[arg(long)]
        server: Option<String>,
        /// Fraction of pixels that may differ before a screenshot counts as diverged.
        #[arg(long, default_value_t = crate::offline::replay::DEFAULT_TOLERANCE)]
        tolerance: f64,
    },
    /// Browse and review a recording in the terminal: steps, the frame before and after, the
    /// action drawn on it; marks, notes, outcome and quality go to DIR/review.jsonl.
    View {
        dir: PathBuf,
        /// Who reviews (recorded with each change; default: the login name, $USER).
        #[arg(long, env = "BROWSERENV_REVIEWER")]
        reviewer: Option<String>,
    },
    /// Task files (`--tasks`, the server's `--tasks`).
    Tasks {
        #[command(subcommand)]
        action: TasksCommand,
    },
    /// Collect demonstrations for the server's campaign (`--campaign DIR` on the server; needs
    /// --server and your own --token, which says who you are): the server hands you your next
    /// task; finish it, then P (done as asked) or F (not) saves it and the next one comes; S skips
    /// with a reason; V shows the progress.
    Collect,
    /// Review the campaign's demonstrations (needs --server and your own --token): the next one
    /// not yours and not reviewed opens in the review mode (`view`'s keys); G (good) accepts it,
    /// B (bad) sends its task back to the queue; then the next one. U or no quality leaves it for
    /// someone else.
    Review,
    /// Follow a session an agent drives (needs --server). Without SESSION, the first live one
    /// (waiting for one); when it ends, the next. Tab moves to the next; c takes control and hands
    /// it back. With --record, what is watched is recorded, each step with its actor.
    Watch { session: Option<String> },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum TasksCommand {
    /// Check a task file as the server would load it: every problem with its line number (exit
    /// 1), or what the file holds (exit 0).
    Check { file: PathBuf },
    /// Run each task's start page (and its reference solution, NAME-solutions.jsonl beside the
    /// file) live, archiving what the pages load, and write PACK: tasks.jsonl with an archive per
    /// task, the archives, the solutions. `browserenv-server --tasks PACK/tasks.jsonl` serves it
    /// with no network.
    Snapshot {
        file: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// Reference solutions (default: NAME-solutions.jsonl beside the task file).
        #[arg(long)]
        solutions: Option<PathBuf>,
        /// The live site of the tasks' relative start URLs (default: the demo site, served).
        #[arg(long)]
        task_base_url: Option<String>,
        /// Each task's archive as a WACZ package (archives/TASK.wacz), which ReplayWeb.page and
        /// `wacz validate` read, instead of a WARC file.
        #[arg(long)]
        wacz: bool,
    },
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match &cli.command {
        Some(Command::Export {
            dir,
            format,
            out,
            reviewed_only,
            drop_marked,
            unreviewed,
        }) => {
            let mut selection = crate::offline::export::Selection {
                reviewed_only: *reviewed_only,
                drop_marked: drop_marked.clone(),
                episodes: None,
            };
            let mut recording = dir.clone();
            if dir
                .join(browserenv_collect::campaign::CONFIG_FILE)
                .is_file()
            {
                let (campaign, problems) = browserenv_collect::campaign::Campaign::open(dir)
                    .map_err(anyhow::Error::msg)?;
                for problem in &problems {
                    eprintln!("warning: {}", printable(&problem.to_string()));
                }
                let kept = campaign.accepted(*unreviewed);
                println!(
                    "campaign {}: {} of {} demonstrations {}",
                    printable(&dir.display().to_string()),
                    kept.len(),
                    campaign.demonstrations().len(),
                    if *unreviewed {
                        "accepted or not reviewed yet"
                    } else {
                        "accepted"
                    }
                );
                selection.episodes = Some(kept);
                recording = campaign.recording_dir();
            } else if *unreviewed {
                anyhow::bail!("--unreviewed is for a campaign's folder (it has campaign.json)");
            }
            let report = crate::offline::export::export(&recording, out, *format, &selection)?;
            for problem in &report.problems {
                eprintln!("warning: {}", printable(problem));
            }
            let what = match format {
                ExportFormat::Atif => format!(
                    "{} {} ({} steps)",
                    report.trajectories,
                    if report.trajectories == 1 {
                        "trajectory"
                    } else {
                        "trajectories"
                    },
                    report.rows
                ),
                ExportFormat::Wacz => format!("{} pages in recording.wacz", report.rows),
                _ => format!("{} rows", report.rows),
            };
            println!(
                "exported {what}, {} images and {} archives to {}",
                report.images,
                report.archives,
                printable(&out.display().to_string())
            );
            if report.episodes_left_out > 0 || report.steps_left_out > 0 {
                let episodes = match selection.episodes {
                    Some(_) => "not accepted demonstrations",
                    None => "not reviewed good",
                };
                println!(
                    "left out by the review: {} episode(s) {episodes}, {} marked step(s)",
                    report.episodes_left_out, report.steps_left_out
                );
            }
            return Ok(());
        }
        Some(Command::Replay {
            dir,
            live,
            server,
            tolerance,
        }) => {
            let diverged =
                crate::offline::replay::command(&cli, dir, server.clone(), *live, *tolerance)
                    .await?;
            if diverged {
                std::process::exit(2);
            }
            return Ok(());
        }
        Some(Command::View { dir, reviewer }) => {
            let reviewer = crate::review::default_reviewer(reviewer.clone());
            return crate::offline::viewer::run_viewer(dir, cli.graphics, reviewer);
        }
        Some(Command::Tasks {
            action:
                TasksCommand::Snapshot {
                    file,
                    out,
                    solutions,
                    task_base_url,
                    wacz,
                },
        }) => {
            let asked = crate::offline::task_files::Snapshot {
                file: file.clone(),
                out: out.clone(),
                solutions: solutions.clone(),
                base_url: task_base_url.clone(),
                site: cli.site.clone().unwrap_or_else(default_site_dir),
                chromium: cli.chromium.clone(),
                wacz: *wacz,
            };
            let report = crate::offline::task_files::snapshot(&asked).await?;
            for line in crate::offline::task_files::summary(&asked, &report) {
                println!("{}", printable(&line));
            }
            return Ok(());
        }
        Some(Command::Tasks {
            action: TasksCommand::Check { file },
        }) => match crate::offline::task_files::check(file) {
            Ok(summary) => {
                println!("{}", printable(&summary));
                return Ok(());
            }
            Err(problems) => {
                for line in problems.lines() {
                    eprintln!("{}", printable(line));
                }
                std::process::exit(1);
            }
        },
        Some(Command::Review) => {
            let server = cli.server.as_ref().context("review needs --server URL")?;
            let token = cli
                .token
                .clone()
                .context("review needs your own --token (browserenv-server campaign add-person)")?;
            return review_command(server, token, cli.graphics).await;
        }
        Some(Command::Collect) => {
            cli.token.as_ref().context(
                "collect needs your own --token (browserenv-server campaign add-person)",
            )?;
            cli.server
                .as_ref()
                .context("collect needs --server URL: the server runs the campaign")?;
        }
        Some(Command::Watch { .. }) | None => {}
    }
    let collect = matches!(&cli.command, Some(Command::Collect));
    // Without a session the watch link waits for the first one (and says so).
    let watch = match &cli.command {
        Some(Command::Watch { session }) => {
            cli.server.as_ref().context("watch needs --server URL")?;
            Some(session.clone())
        }
        _ => None,
    };
    let tasks = match &cli.tasks {
        Some(path) => Some(TaskSet::load(path).map_err(anyhow::Error::msg)?),
        None => None,
    };
    if cli.archive && (cli.record.is_none() || cli.server.is_some()) {
        anyhow::bail!(
            "--archive keeps the pages of a --record DIR of the embedded server (where the browser \
             runs); a remote server archives with its own --record-dir DIR --archive"
        );
    }
    let recorder = match &cli.record {
        Some(dir) => Some(open_recorder(dir, watch.is_some())?),
        None => None,
    };
    let typed_secrets = browserenv_server::archive::TypedSecrets::default();
    // Signals are caught from here on, also while the server starts (their default action would
    // leave the terminal raw and a browser running), and a terminal that goes away is noticed.
    let mut stop = stop_requests();
    // The terminal first: the graphics probe needs raw mode (no echo), and it runs while the
    // embedded server starts and the UI connects, so it holds up neither.
    let mut guard = enter()?;
    let choice = cli.graphics;
    let (graphics_tx, graphics_rx) = oneshot::channel();
    let probe = tokio::task::spawn_blocking(move || {
        let _ = graphics_tx.send(probe_graphics(choice));
    });
    let served = tokio::select! {
        served = serve(&cli, tasks.clone(), &typed_secrets) => served,
        _ = &mut stop => {
            // Ended while starting: nothing recorded yet, nothing to keep.
            browserenv_server::chromium::kill_all();
            drop(guard);
            return Ok(());
        }
    };
    let (server, start_url, max_steps, embedded, token) = match served {
        Ok(served) => served,
        Err(err) => {
            let _ = probe.await;
            drop(guard);
            return Err(err);
        }
    };
    let mut app = App::new(start_url, server.clone());
    app.scroll_step = cli.scroll_step;
    app.max_steps = max_steps;
    if let Some(tasks) = &tasks {
        app.tasks = tasks
            .tasks
            .iter()
            .map(|t| TaskView {
                id: t.id.clone(),
                category: format!("{:?}", t.category).to_lowercase(),
                instruction: t.instruction.clone(),
            })
            .collect();
    }
    let recorder = recorder.map(|(handle, errors, incomplete)| {
        app.can_record = true;
        app.recording = true;
        if let Some(incomplete) = incomplete {
            app.update(Msg::RecorderError(incomplete));
        }
        (handle, errors)
    });
    // Input is read only once the probe has its answers: no reply is taken for a keystroke.
    // crossterm's reader reports no end of a closed terminal, so `hangup` watches for it.
    let input = futures_util::stream::once(Box::pin(async move {
        let _ = probe.await;
        crossterm::event::EventStream::new()
    }))
    .flatten()
    .take_while(|event| std::future::ready(event.is_ok()))
    .filter_map(|event| std::future::ready(event.ok()));
    let outcome = run_loop(
        &mut guard.terminal,
        &mut app,
        input,
        LoopOptions {
            server,
            token,
            graphics: GraphicsSource::Probing(graphics_rx),
            out: Some(guard.output.clone()),
            frames: None,
            recorder,
            watch,
            collect,
            stop: Some(stop),
            typed_secrets: Some(typed_secrets),
        },
    )
    .await;
    drop(guard);
    tracing::info!("ending: {outcome:?}");
    if let Some(embedded) = embedded {
        stop_embedded(embedded).await;
    }
    tracing::info!("ended");
    outcome.map(|_| ())
}

/// The server to talk to: `--server`, or an embedded one with the demo site. Returns its URL,
/// where episodes start, the step limit when known, the embedded server to stop at the end, and
/// the token to use.
async fn serve(
    cli: &Cli,
    tasks: Option<TaskSet>,
    typed_secrets: &browserenv_server::archive::TypedSecrets,
) -> anyhow::Result<Served> {
    if let Some(server) = &cli.server {
        let start = cli
            .start_url
            .clone()
            .unwrap_or_else(|| "https://example.com/".into());
        return Ok((server.clone(), start, None, None, cli.token.clone()));
    }
    let token = embedded_token();
    let config = ServerConfig {
        settings: EnvSettings {
            max_steps: cli.max_steps,
            ..EnvSettings::default()
        },
        max_sessions: 2,
        token: Some(token.clone()),
        // A person at the keyboard may leave the UI alone for long; the server is theirs alone.
        timeouts: PeerTimeouts {
            session_timeout: None,
            ..PeerTimeouts::default()
        },
        archive: browserenv_server::archive::ArchiveConfig {
            record_into: cli.record.clone().filter(|_| cli.archive),
            typed_secrets: typed_secrets.clone(),
            ..Default::default()
        },
        ..ServerConfig::default()
    };
    let site = cli.site.clone().unwrap_or_else(default_site_dir);
    let started = start_embedded(site, cli.chromium.clone(), config, tasks).await?;
    let start = cli
        .start_url
        .clone()
        .unwrap_or_else(|| started.site.url("index.html"));
    let server = started.server.base_url();
    Ok((
        server,
        start,
        Some(cli.max_steps),
        Some(started),
        Some(token),
    ))
}

/// What `serve` gives: URL, start URL, step limit, embedded server, token.
type Served = (
    String,
    String,
    Option<u64>,
    Option<Embedded>,
    Option<String>,
);

/// The embedded server listens on loopback, where every local program and every web page the
/// person's browser (or ours) opens can reach it: a random token keeps them out of the session.
pub(crate) fn embedded_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The embedded server ends within the UI's one-second promise, also on a loaded machine: its
/// browsers are killed at once (nothing of theirs needs saving), then its sessions end and the
/// profiles are removed, each bounded. A profile left behind is removed by the next start.
async fn stop_embedded(embedded: Embedded) {
    use browserenv_server::chromium;
    let started = std::time::Instant::now();
    chromium::kill_all();
    if tokio::time::timeout(Duration::from_millis(300), embedded.server.stop())
        .await
        .is_err()
    {
        tracing::warn!("the embedded server did not stop within 300 ms");
    }
    let left = Duration::from_millis(700).saturating_sub(started.elapsed());
    // A thread of its own, not the blocking pool: the runtime would wait for it at exit.
    let (done, cleaned) = oneshot::channel();
    let _ = std::thread::Builder::new()
        .name("profile-cleanup".into())
        .spawn(move || {
            chromium::shutdown_all();
            let _ = done.send(());
        });
    if tokio::time::timeout(left, cleaned).await.is_err() {
        tracing::warn!("browser profiles not all removed in time; the next start removes them");
    }
}

/// The recorder of `--record DIR`, its error reports, and a note about episodes a crash left open.
#[allow(clippy::type_complexity)]
fn open_recorder(
    dir: &std::path::Path,
    watching: bool,
) -> anyhow::Result<(
    RecorderHandle,
    tokio::sync::mpsc::UnboundedReceiver<String>,
    Option<String>,
)> {
    let (writer, recovery) = TrajectoryWriter::open(dir)
        .with_context(|| format!("cannot record into {}", dir.display()))?;
    let incomplete = (!recovery.incomplete.is_empty()).then(|| {
        format!(
            "{} episode(s) interrupted last time are marked incomplete in {}",
            recovery.incomplete.len(),
            dir.display()
        )
    });
    let (errors_tx, errors) = tokio::sync::mpsc::unbounded_channel();
    let actor = if watching { Actor::Agent } else { Actor::Human };
    let recorder = Recorder::new(writer, actor);
    let handle = RecorderHandle::spawn(recorder, move |err| {
        let _ = errors_tx.send(err.to_string());
    })?;
    Ok((handle, errors, incomplete))
}

/// What ends the UI from outside, the way `q` does (recording finished, terminal restored):
/// SIGTERM, SIGHUP (the SSH connection or the terminal window went away), SIGINT, SIGQUIT, or a
/// terminal that closed. The signal handlers are in place when this returns.
fn stop_requests() -> std::pin::Pin<Box<dyn std::future::Future<Output = Exit> + Send>> {
    use tokio::signal::unix::{signal, SignalKind};
    let kinds = [
        SignalKind::terminate(),
        SignalKind::hangup(),
        SignalKind::interrupt(),
        SignalKind::quit(),
    ];
    let mut streams: Vec<_> = kinds.into_iter().filter_map(|k| signal(k).ok()).collect();
    Box::pin(async move {
        let signalled = async {
            if streams.is_empty() {
                return std::future::pending().await;
            }
            let received = streams.iter_mut().map(|s| Box::pin(s.recv()));
            futures_util::future::select_all(received).await;
        };
        tokio::select! {
            _ = signalled => Exit::Quit,
            _ = hangup() => Exit::InputClosed,
        }
    })
}

/// `review --token TOKEN`: fetch the next demonstration for the token's person into a folder of
/// its own, show it in the review mode, send the verdict back; until none is left or the
/// reviewer leaves one undecided.
async fn review_command(
    server: &str,
    token: String,
    graphics: crate::graphics::GraphicsChoice,
) -> anyhow::Result<()> {
    let sessions = crate::net::sessions::Sessions::new(server, Some(token))?;
    let mut reviewed = 0;
    loop {
        let dir = std::env::temp_dir().join(format!(
            "browserenv-review-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        let fetched = crate::net::campaign::fetch_review(&sessions, &dir).await;
        let fetched = match fetched {
            Ok(Some(fetched)) => fetched,
            Ok(None) => {
                let _ = std::fs::remove_dir_all(&dir);
                println!("nothing left for you to review ({reviewed} reviewed now)");
                return Ok(());
            }
            Err(err) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(err);
            }
        };
        println!(
            "reviewing {}'s demonstration of {}: {}",
            printable(&fetched.person),
            printable(&fetched.task),
            printable(&fetched.instruction)
        );
        for problem in &fetched.problems {
            eprintln!("warning: {}", printable(problem));
        }
        let shown = {
            let (dir, name) = (dir.clone(), fetched.reviewer.clone());
            tokio::task::spawn_blocking(move || {
                crate::offline::viewer::run_viewer(&dir, graphics, Some(name))
            })
            .await?
        };
        let sent = match shown {
            Ok(()) => crate::net::campaign::submit_review(&sessions, &dir, &fetched).await,
            Err(err) => Err(err),
        };
        let _ = std::fs::remove_dir_all(&dir);
        match sent? {
            Some(accepted) => {
                reviewed += 1;
                println!(
                    "{} {}",
                    if accepted {
                        "accepted"
                    } else {
                        "rejected (its task goes back to the queue):"
                    },
                    printable(&fetched.episode_id)
                );
            }
            None => {
                println!(
                    "no verdict on {} (G good accepts, B bad rejects): `review` again takes it up \
                     (others get it after the campaign's lease_idle_seconds); {reviewed} reviewed now",
                    printable(&fetched.episode_id)
                );
                return Ok(());
            }
        }
    }
}
