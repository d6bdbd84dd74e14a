//! `browserenv-tui` flags and the program's run: pick the server (remote or embedded), set up the
//! terminal, run the loop, put everything back.

use std::path::PathBuf;

use clap::Parser;
use futures_util::StreamExt;

use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;

use anyhow::Context;
use browserenv::tasks::TaskSet;
use browserenv::trajectory::{Actor, Recorder, RecorderHandle, TrajectoryWriter};

use crate::app::{App, Msg, TaskView};
use crate::embedded::{default_site_dir, start_embedded};
use crate::event_loop::{run as run_loop, Exit, LoopOptions};
use crate::export::ExportFormat;
use crate::terminal::{detect_graphics, enter, GraphicsChoice};

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
    /// Bearer token of a server started with BROWSER_API_TOKEN.
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
    /// Chromium executable (embedded mode).
    #[arg(
        long,
        env = "BROWSER_CHROMIUM",
        default_value = "/usr/bin/chromium",
        global = true
    )]
    pub chromium: PathBuf,
    /// Record demonstrations into this folder (trajectory format v1, actor "human"); `R` toggles.
    #[arg(long, global = true)]
    pub record: Option<PathBuf>,
    /// With --record: black out password inputs in the saved screenshots.
    #[arg(long, global = true)]
    pub redact: bool,
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
    /// Write a recording as a Hugging Face ImageFolder (metadata.jsonl + images).
    Export {
        /// The recording folder (steps.jsonl, episodes.jsonl, screenshots/).
        dir: PathBuf,
        #[arg(long, value_enum, default_value = "hf")]
        format: ExportFormat,
        /// Where to write the export.
        #[arg(long)]
        out: PathBuf,
    },
    /// Re-run every recorded episode against a fresh environment and report where it diverged.
    /// Exits 0 when nothing diverged, 2 when something did.
    Replay {
        dir: PathBuf,
        /// Replay against this server (default: an embedded server and the demo site; recorded
        /// URLs on a loopback origin are mapped onto the new site's origin).
        #[arg(long)]
        server: Option<String>,
        /// Fraction of pixels that may differ before a screenshot counts as diverged.
        #[arg(long, default_value_t = crate::replay::DEFAULT_TOLERANCE)]
        tolerance: f64,
    },
    /// Browse a recording in the terminal: steps, the frame before and after, the action drawn on it.
    View { dir: PathBuf },
    /// Follow a session an agent drives, read-only (needs --server). Without SESSION, the first
    /// live one; Tab moves to the next. With --record, what is watched is recorded as actor "agent".
    Watch { session: Option<String> },
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match &cli.command {
        Some(Command::Export {
            dir,
            format: ExportFormat::Hf,
            out,
        }) => {
            let report = crate::export::export_hf(dir, out)?;
            for problem in &report.problems {
                eprintln!("warning: {problem}");
            }
            println!(
                "exported {} rows and {} images to {}",
                report.rows,
                report.images,
                out.display()
            );
            return Ok(());
        }
        Some(Command::Replay {
            dir,
            server,
            tolerance,
        }) => return replay_command(&cli, dir, server.clone(), *tolerance).await,
        Some(Command::View { dir }) => return crate::viewer::run_viewer(dir, cli.graphics),
        Some(Command::Watch { .. }) | None => {}
    }
    let watch = match &cli.command {
        Some(Command::Watch { session }) => {
            let server = cli.server.clone().context("watch needs --server URL")?;
            Some(match session {
                Some(session) => session.clone(),
                None => crate::watching::list_sessions(&server, cli.token.as_deref())
                    .await?
                    .first()
                    .and_then(|s| s["id"].as_str().map(str::to_string))
                    .with_context(|| format!("no live sessions on {server} to watch"))?,
            })
        }
        _ => None,
    };
    let tasks = match &cli.tasks {
        Some(path) => Some(TaskSet::load(path).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let mut embedded = None;
    let (server, start_url, max_steps) = match &cli.server {
        Some(server) => {
            let start = cli
                .start_url
                .clone()
                .unwrap_or_else(|| "https://example.com/".into());
            (server.clone(), start, None)
        }
        None => {
            let config = ServerConfig {
                settings: EnvSettings {
                    max_steps: cli.max_steps,
                    ..EnvSettings::default()
                },
                max_sessions: 2,
                warm_spare: true,
                record_dir: None,
                redact: false,
                token: None,
                tasks: None,
            };
            let site = cli.site.clone().unwrap_or_else(default_site_dir);
            let started = start_embedded(site, cli.chromium.clone(), config, tasks.clone()).await?;
            let start = cli
                .start_url
                .clone()
                .unwrap_or_else(|| started.site.url("index.html"));
            let server = started.server.base_url();
            embedded = Some(started);
            (server, start, Some(cli.max_steps))
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
    let recorder = match &cli.record {
        Some(dir) => {
            let (writer, recovery) = TrajectoryWriter::open(dir)
                .with_context(|| format!("cannot record into {}", dir.display()))?;
            if !recovery.incomplete.is_empty() {
                app.update(Msg::RecorderError(format!(
                    "{} episode(s) interrupted last time are marked incomplete in {}",
                    recovery.incomplete.len(),
                    dir.display()
                )));
            }
            let (errors_tx, errors) = tokio::sync::mpsc::unbounded_channel();
            let actor = if watch.is_some() {
                Actor::Agent
            } else {
                Actor::Human
            };
            let recorder = Recorder::new(writer, actor).redacting(cli.redact);
            let handle = RecorderHandle::spawn(recorder, move |err| {
                let _ = errors_tx.send(err.to_string());
            })?;
            app.can_record = true;
            app.recording = true;
            Some((handle, errors))
        }
        None => None,
    };
    let mut guard = enter()?;
    let graphics = detect_graphics(cli.graphics);
    let input =
        crossterm::event::EventStream::new().filter_map(|event| std::future::ready(event.ok()));
    let signals = quit_on_signal();
    let outcome = tokio::select! {
        outcome = run_loop(&mut guard.terminal, &mut app, input, LoopOptions {
            server,
            token: cli.token.clone(),
            graphics,
            synchronized: true,
            frames: None,
            recorder,
            watch,
        }) => outcome,
        _ = signals => Ok(Exit::Quit),
    };
    drop(guard);
    if let Some(embedded) = embedded {
        embedded.server.stop().await?;
    }
    outcome.map(|_| ())
}

async fn replay_command(
    cli: &Cli,
    dir: &std::path::Path,
    server: Option<String>,
    tolerance: f64,
) -> anyhow::Result<()> {
    let mut embedded = None;
    let (server, site_origin) = match server {
        Some(server) => (server, None),
        None => {
            let site = cli.site.clone().unwrap_or_else(default_site_dir);
            let started =
                start_embedded(site, cli.chromium.clone(), ServerConfig::default(), None).await?;
            let server = started.server.base_url();
            let origin = crate::replay::origin(&started.site.url(""));
            embedded = Some(started);
            (server, origin)
        }
    };
    let outcome =
        crate::replay::replay(dir, &server, cli.token.as_deref(), tolerance, site_origin).await;
    if let Some(embedded) = embedded {
        embedded.server.stop().await?;
    }
    let (lines, diverged) = outcome?;
    for line in lines {
        println!("{line}");
    }
    if diverged {
        std::process::exit(2);
    }
    Ok(())
}

/// SIGTERM or SIGHUP (the SSH connection dropped) end the UI like `q` does, terminal restored.
async fn quit_on_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hangup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = hangup.recv() => {}
    }
}
