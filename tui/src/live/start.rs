//! A live session on the terminal, from the command line to the end: the server (remote, or
//! embedded with the demo site), the terminal and its graphics probe, the recorder, the loop, and
//! everything put back however it ends.

use std::path::{Path, PathBuf};

use anyhow::Context;
use futures_util::StreamExt;
use tokio::sync::oneshot;

use browserenv_collect::tasks::TaskSet;
use browserenv_collect::trajectory::{Actor, Recorder, RecorderHandle, TrajectoryWriter};
use browserenv_server::settings::{EnvSettings, PeerTimeouts};
use browserenv_server::ServerConfig;

use crate::app::{App, Msg, TaskView};
use crate::graphics::GraphicsChoice;
use crate::live::event_loop::{run as run_loop, Exit, GraphicsSource, LoopOptions};
use crate::net::embedded::{
    default_site_dir, embedded_token, start_embedded, stop_embedded, Embedded,
};
use crate::screen::terminal::{enter, hangup, probe_graphics};

/// The command line's flags (`browserenv-tui --help`), most of them the live session's; the
/// subcommands take the ones they share (`--server`, `--token`, `--graphics`, `--site`,
/// `--chromium`).
#[derive(Debug, Clone, clap::Args)]
pub struct Flags {
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

impl Flags {
    /// The demo site folder of an embedded server: `--site`, or the bundled one.
    pub fn site_dir(&self) -> PathBuf {
        self.site.clone().unwrap_or_else(default_site_dir)
    }
}

/// What the live session does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Drive a session of the UI's own.
    Drive,
    /// Follow a session an agent drives (None: the first live one, waiting for one).
    Watch(Option<String>),
    /// Collect demonstrations for the server's campaign.
    Collect,
}

/// The recorder of `--record DIR`, its error reports, and a note about episodes a crash left open.
type OpenRecorder = (
    RecorderHandle,
    tokio::sync::mpsc::UnboundedReceiver<String>,
    Option<String>,
);

/// Run the live UI until the person quits, a signal comes or the terminal goes.
pub async fn run(flags: &Flags, mode: Mode) -> anyhow::Result<()> {
    let watch = match &mode {
        Mode::Watch(session) => Some(session.clone()),
        _ => None,
    };
    let tasks = match &flags.tasks {
        Some(path) => Some(TaskSet::load(path).map_err(anyhow::Error::msg)?),
        None => None,
    };
    if flags.archive && (flags.record.is_none() || flags.server.is_some()) {
        anyhow::bail!(
            "--archive keeps the pages of a --record DIR of the embedded server (where the browser \
             runs); a remote server archives with its own --record-dir DIR --archive"
        );
    }
    let recorder = match &flags.record {
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
    let choice = flags.graphics;
    let (graphics_tx, graphics_rx) = oneshot::channel();
    let probe = tokio::task::spawn_blocking(move || {
        let _ = graphics_tx.send(probe_graphics(choice));
    });
    let served = tokio::select! {
        served = serve(flags, tasks.clone(), &typed_secrets) => served,
        _ = &mut stop => {
            // Ended while starting: nothing recorded yet, nothing to keep.
            browserenv_server::chromium::kill_all();
            drop(guard);
            return Ok(());
        }
    };
    let served = match served {
        Ok(served) => served,
        Err(err) => {
            let _ = probe.await;
            drop(guard);
            return Err(err);
        }
    };
    let mut app = App::new(served.start_url, served.server.clone());
    let recorder = set_up(&mut app, flags, tasks.as_ref(), served.max_steps, recorder);
    // Input is read only once the probe has its answers: no reply is taken for a keystroke.
    // crossterm's reader reports no end of a closed terminal, so `hangup` watches for it.
    let input = futures_util::stream::once(Box::pin(async move {
        let _ = probe.await;
        crossterm::event::EventStream::new()
    }))
    .flatten()
    .take_while(|event| std::future::ready(event.is_ok()))
    .filter_map(|event| std::future::ready(event.ok()));
    let options = LoopOptions {
        server: served.server,
        token: served.token,
        graphics: GraphicsSource::Probing(graphics_rx),
        out: Some(guard.output.clone()),
        frames: None,
        recorder,
        watch,
        collect: mode == Mode::Collect,
        stop: Some(stop),
        typed_secrets: Some(typed_secrets),
    };
    let outcome = run_loop(&mut guard.terminal, &mut app, input, options).await;
    drop(guard);
    tracing::info!("ending: {outcome:?}");
    if let Some(embedded) = served.embedded {
        stop_embedded(embedded).await;
    }
    tracing::info!("ended");
    outcome.map(|_| ())
}

/// The app as the flags set it up: the scroll step, the step limit, the task list, recording on
/// with `--record` (and the note about episodes a crash left open). Returns the recorder's part
/// for the loop.
fn set_up(
    app: &mut App,
    flags: &Flags,
    tasks: Option<&TaskSet>,
    max_steps: Option<u64>,
    recorder: Option<OpenRecorder>,
) -> Option<(RecorderHandle, tokio::sync::mpsc::UnboundedReceiver<String>)> {
    app.scroll_step = flags.scroll_step;
    app.max_steps = max_steps;
    if let Some(tasks) = tasks {
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
    recorder.map(|(handle, errors, incomplete)| {
        app.can_record = true;
        app.recording = true;
        if let Some(incomplete) = incomplete {
            app.update(Msg::RecorderError(incomplete));
        }
        (handle, errors)
    })
}

/// The server the UI talks to.
struct Served {
    server: String,
    /// Where episodes start.
    start_url: String,
    /// The step limit, when known (the embedded server's).
    max_steps: Option<u64>,
    /// The embedded server, stopped at the end.
    embedded: Option<Embedded>,
    token: Option<String>,
}

/// The server to talk to: `--server`, or an embedded one with the demo site.
async fn serve(
    flags: &Flags,
    tasks: Option<TaskSet>,
    typed_secrets: &browserenv_server::archive::TypedSecrets,
) -> anyhow::Result<Served> {
    if let Some(server) = &flags.server {
        let start = flags
            .start_url
            .clone()
            .unwrap_or_else(|| "https://example.com/".into());
        return Ok(Served {
            server: server.clone(),
            start_url: start,
            max_steps: None,
            embedded: None,
            token: flags.token.clone(),
        });
    }
    let token = embedded_token();
    let config = ServerConfig {
        settings: EnvSettings {
            max_steps: flags.max_steps,
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
            record_into: flags.record.clone().filter(|_| flags.archive),
            typed_secrets: typed_secrets.clone(),
            ..Default::default()
        },
        ..ServerConfig::default()
    };
    let started = start_embedded(flags.site_dir(), flags.chromium.clone(), config, tasks).await?;
    let start = flags
        .start_url
        .clone()
        .unwrap_or_else(|| started.site.url("index.html"));
    Ok(Served {
        server: started.server.base_url(),
        start_url: start,
        max_steps: Some(flags.max_steps),
        embedded: Some(started),
        token: Some(token),
    })
}

/// Open `--record DIR`: the recorder thread and what `OpenRecorder` says.
fn open_recorder(dir: &Path, watching: bool) -> anyhow::Result<OpenRecorder> {
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
