//! Command-line flags of `browserenv-server`. Every setting also reads the environment variable
//! of the seed's name, so the same image runs under Docker, HF Sandbox and plain shells.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
// On/off settings take what people write in an environment: 1/0, true/false, yes/no, on/off
// (anything but an empty value, 0, false, no, off, n or f is on).
use clap::builder::FalseyValueParser;
use clap::Parser;

use crate::chromium::{self, ChromiumConfig, ChromiumLauncher};
use crate::environment::TaskCatalog;
use crate::operations::drain::Stop;
use crate::settings::{
    max_steps_in_range, seconds_in_range, EnvSettings, PeerTimeouts, SettleMode,
};
use crate::ServerConfig;

/// What the server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Serve,
    Mcp,
}

/// What the server binary does besides serving.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// A campaign's people (docs/campaigns.md): each collects and reviews with a token of their
    /// own, which says who they are. Works on the folder, with or without a server running on
    /// it: a running server takes each change at its next request.
    Campaign {
        #[command(subcommand)]
        action: CampaignCommand,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum CampaignCommand {
    /// Add NAME to the campaign in DIR and print their token on stdout: shown this once (the
    /// campaign keeps its SHA-256 only); they pass it to `browserenv-tui collect --token`.
    AddPerson { dir: PathBuf, name: String },
    /// Remove NAME: their token is refused from the next request on, what they held goes back;
    /// what they did stays theirs. Adding them again gives them a new token.
    RemovePerson { dir: PathBuf, name: String },
    /// The names of the campaign's people, one a line.
    People { dir: PathBuf },
}

/// `browserenv-server campaign ...`: the people file of a campaign's folder.
fn campaign_command(action: &CampaignCommand) -> anyhow::Result<()> {
    use browserenv_collect::campaign::{People, CONFIG_FILE};
    let dir = match action {
        CampaignCommand::AddPerson { dir, .. }
        | CampaignCommand::RemovePerson { dir, .. }
        | CampaignCommand::People { dir } => dir,
    };
    // A typo must not start a people folder somewhere else.
    anyhow::ensure!(
        dir.join(CONFIG_FILE).is_file(),
        "{} is not a campaign's folder (it has no {CONFIG_FILE})",
        dir.display()
    );
    match action {
        CampaignCommand::AddPerson { name, .. } => {
            let (name, token) = People::add(dir, name).map_err(anyhow::Error::msg)?;
            eprintln!(
                "{name}'s token (shown this once: give it to {name} alone; browserenv-tui \
                 collect --server URL --token TOKEN):"
            );
            println!("{token}");
        }
        CampaignCommand::RemovePerson { name, .. } => {
            let name = People::remove(dir, name).map_err(anyhow::Error::msg)?;
            eprintln!("{name} is removed: their token is refused from now on");
        }
        CampaignCommand::People { .. } => {
            for name in People::load(dir).map_err(anyhow::Error::msg)?.names() {
                println!("{name}");
            }
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "browserenv-server",
    version,
    about = "OpenEnv browser environment server (real headless Chromium)"
)]
pub struct Cli {
    /// `serve`: HTTP and WebSocket on --host and --port. `mcp`: one MCP session over stdin and
    /// stdout, for desktop assistants; Chromium starts with it, and logs go to stderr.
    #[arg(value_enum, default_value_t = Mode::Serve)]
    pub mode: Mode,
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Address to bind. Loopback by default: pages in the browser are untrusted.
    #[arg(long, env = "BROWSER_HOST", default_value = "127.0.0.1")]
    pub host: String,
    /// TCP port (0 picks a free one).
    #[arg(long, env = "SBX_SERVICE_PORT", default_value_t = 8000)]
    pub port: u16,
    /// Listen on the Unix socket `<DIR>/<port>.sock` instead of TCP (the HF Sandbox proxy).
    #[arg(long = "unix-dir", env = "SBX_PROXY_DIR")]
    pub unix_dir: Option<PathBuf>,
    /// Sessions (browsers) at once; one more connection gets CAPACITY_REACHED.
    #[arg(long, env = "BROWSER_MAX_SESSIONS", default_value_t = 4)]
    pub max_sessions: usize,
    /// Seconds a session (WebSocket, MCP, or the shared HTTP one) may go without a request
    /// before it is ended: browser closed, slot freed, the client told why. 0 = never. OpenEnv's
    /// `session_timeout`.
    #[arg(long, env = "BROWSER_SESSION_TIMEOUT_SECONDS", default_value_t = 300.0)]
    pub session_timeout: f64,
    /// Seconds between the server's WebSocket pings, 1..=600.
    #[arg(long, env = "BROWSER_WS_PING_INTERVAL_SECONDS", default_value_t = 20.0)]
    pub ws_ping_interval: f64,
    /// Seconds a WebSocket peer has to answer a ping, and to take any one frame, before it is
    /// dropped, 1..=600.
    #[arg(long, env = "BROWSER_WS_PING_TIMEOUT_SECONDS", default_value_t = 20.0)]
    pub ws_ping_timeout: f64,
    /// Seconds a connection has to send its request headers (a kept-alive one its next request)
    /// before it is closed, 1..=600.
    #[arg(
        long,
        env = "BROWSER_HEADER_READ_TIMEOUT_SECONDS",
        default_value_t = 10.0
    )]
    pub header_read_timeout: f64,
    /// Seconds an agent's request waits while a person who took control of its session (from
    /// `browserenv-tui watch`) holds it; then a step gets the current observation with
    /// `metadata.control = "human"`, 0..=600. Keep it below the client's reply timeout (OpenEnv's
    /// Python client: 60 s).
    #[arg(long, env = "BROWSER_HANDOFF_WAIT_SECONDS", default_value_t = 30.0)]
    pub handoff_wait: f64,
    /// Seconds an agent's `request_human` waits, at most, for a person to take control and hand
    /// back (the agent may ask for less), 1..=3600. Behind a balancer, keep it below the
    /// balancer's reply timeout (deploy/haproxy: 120 s).
    #[arg(long, env = "BROWSER_ASK_WAIT_SECONDS", default_value_t = crate::settings::DEFAULT_ASK_WAIT.as_secs_f64())]
    pub ask_wait: f64,
    /// Seconds running episodes may go on after SIGTERM (readiness is 503 and new sessions are
    /// refused at once); then what still runs is ended with a frame saying why, 0..=3600. A
    /// second signal stops at once.
    #[arg(long, env = "BROWSER_DRAIN_SECONDS", default_value_t = crate::operations::drain::DEFAULT_DRAIN.as_secs_f64())]
    pub drain_seconds: f64,
    /// The replicas behind the same address (comma-separated `http://host:port`; a name whose
    /// DNS records are the replicas, such as a Kubernetes headless Service, stands for all of
    /// them): `/sessions` lists every replica's sessions, and a session's watch, hand-off and text
    /// are reached through any replica. They must share BROWSER_API_TOKEN.
    #[arg(long, env = "BROWSER_PEERS", value_delimiter = ',')]
    pub peers: Vec<String>,
    /// This replica's addresses (comma-separated `ip:port`) as its peers reach it, when that is
    /// not the address its connections arrive at (a published port, NAT): a peer's signed
    /// request is taken only when its Host names this replica.
    #[arg(long, env = "BROWSER_PEER_ADDRESSES", value_delimiter = ',')]
    pub peer_addresses: Vec<String>,
    /// Connections open at once (HTTP requests, WebSocket sessions, watchers); one more is
    /// answered 503 and closed.
    #[arg(long, env = "BROWSER_MAX_CONNECTIONS", default_value_t = 256)]
    pub max_connections: usize,
    /// Steps per episode, 1..=200.
    #[arg(long, env = "BROWSER_MAX_STEPS", default_value_t = 20)]
    pub max_steps: u64,
    /// Seconds slept after each action (fixed settle) or the bound of the adaptive settle, 0..=10.
    #[arg(long, env = "BROWSER_ACTION_WAIT_SECONDS", default_value_t = 1.5)]
    pub action_wait: f64,
    /// Seconds the `wait` action sleeps, 0..=10.
    #[arg(long, env = "BROWSER_EXPLICIT_WAIT_SECONDS", default_value_t = 3.0)]
    pub explicit_wait: f64,
    /// adaptive: screenshot as soon as the page is quiet; fixed: sleep exactly like the seed.
    #[arg(long, env = "BROWSER_SETTLE", value_enum, default_value = "adaptive")]
    pub settle: SettleMode,
    /// Seconds before a page load gives `page_load_timeout`, 1..=120.
    #[arg(
        long,
        env = "BROWSER_PAGE_LOAD_TIMEOUT_SECONDS",
        default_value_t = 30.0
    )]
    pub page_load_timeout: f64,
    /// Seconds an input event may take before `action_timeout`, 1..=60.
    #[arg(long, env = "BROWSER_ACTION_TIMEOUT_SECONDS", default_value_t = 10.0)]
    pub action_timeout: f64,
    /// Seconds a screenshot may take before `renderer_timeout` ends the episode, 1..=60.
    #[arg(
        long,
        env = "BROWSER_SCREENSHOT_TIMEOUT_SECONDS",
        default_value_t = 10.0
    )]
    pub screenshot_timeout: f64,
    /// Add the page's visible text to every observation's metadata (`text`: one line per run,
    /// `x,y,w,h [marker] text`; `text_truncated`), for OpenEnv clients that cannot call the MCP
    /// tool `read_page`. Off by default: observations stay the seed's.
    #[arg(long, env = "BROWSER_OBSERVE_TEXT", value_parser = FalseyValueParser::new())]
    pub observe_text: bool,
    /// The actions taken: full (every gesture: move, drag, press, select, ...) or seed (the
    /// seed's seven with the seed's fields alone; every addition refused in the seed's words).
    #[arg(long, env = "BROWSER_ACTIONS", default_value = "full", value_parser = action_set)]
    pub actions: browserenv::ActionSet,
    /// The Chromium executable: Debian's chromium-headless-shell where installed, else chromium.
    #[arg(long, env = "BROWSER_CHROMIUM", default_value_os_t = crate::chromium::default_executable())]
    pub chromium: PathBuf,
    /// Chromium's sandbox: `auto` (on unless the server runs as root or may not create user
    /// namespaces, said at start), `on` (refuse to start without it) or `off`.
    #[arg(long, env = "BROWSER_SANDBOX", value_enum, default_value = "auto")]
    pub sandbox: crate::chromium::launch::sandbox::SandboxSetting,
    /// Refuse the browsers' connections to loopback, private and link-local addresses (after
    /// resolving the name), except to the --site and task base URL and
    /// --private-network-allow: for servers whose network reaches what pages must not.
    #[arg(long, env = "BROWSER_BLOCK_PRIVATE_NETWORKS", value_parser = FalseyValueParser::new())]
    pub block_private_networks: bool,
    /// `host:port` entries (comma-separated) a page may reach although they are private.
    #[arg(long, env = "BROWSER_PRIVATE_NETWORK_ALLOW", value_delimiter = ',')]
    pub private_network_allow: Vec<String>,
    /// Memory one renderer (one site's pages) may use, in MiB; past it the renderer is stopped and
    /// the session sees `renderer_crashed`. 0: no limit. Our own browsers only.
    #[arg(long, env = "BROWSER_RENDERER_MEMORY_MB", default_value_t = crate::chromium::DEFAULT_RENDERER_MEMORY_MB)]
    pub renderer_memory_mb: u64,
    /// How sessions are kept apart: `process` (a Chromium per session) or `context` (sessions
    /// are browser contexts of one shared Chromium: less memory, one crash ends them all). Every
    /// episode gets a fresh context either way.
    #[arg(long, env = "BROWSER_ISOLATION", value_enum, default_value = "process")]
    pub isolation: crate::chromium::Isolation,
    /// Episodes one Chromium serves (each in a fresh context) before a fresh Chromium replaces
    /// it; 1 launches a new Chromium for every episode.
    #[arg(long, env = "BROWSER_EPISODES_PER_BROWSER", default_value_t = crate::chromium::DEFAULT_EPISODES_PER_BROWSER)]
    pub episodes_per_browser: u32,
    /// How screenshots are taken: `frame` (the compositor's next frame, about half the time,
    /// a PNG about 30% larger) or `redraw` (Chromium's `Page.captureScreenshot`, which has the
    /// page draw a frame for it). The same pixels either way (docs/benchmark.md).
    #[arg(long, env = "BROWSER_SCREENSHOTS", value_enum, default_value = "frame")]
    pub screenshots: crate::chromium::Screenshots,
    /// Load pages with invalid certificates instead of failing them (`navigation_failed` with the
    /// `net::ERR_CERT_…` detail otherwise). For test sites with self-signed certificates only.
    #[arg(long, env = "BROWSER_IGNORE_HTTPS_ERRORS", value_parser = FalseyValueParser::new())]
    pub ignore_https_errors: bool,
    /// Use an already running Chromium (a DevTools endpoint: `http://host:9222` or
    /// `ws://host:9222/devtools/browser/…`, e.g. a browserless pool) instead of launching one per
    /// session; each session gets a browser context of its own there.
    #[arg(long, env = "BROWSER_CDP_URL", hide_env_values = true)]
    pub browser_url: Option<String>,
    /// Also serve this folder of static pages (e.g. assets/pages) on a loopback listener of its
    /// own, never the API's; its URL is printed on a second stdout line.
    #[arg(long, env = "BROWSER_SITE_DIR")]
    pub site: Option<PathBuf>,
    /// Record every session's episodes into this folder (trajectory format v1, actor "agent").
    #[arg(long, env = "BROWSER_RECORD_DIR")]
    pub record_dir: Option<PathBuf>,
    /// Run a demonstration campaign from this folder (its campaign.json names the task file and
    /// the demonstrations wanted): people ask for tasks with `browserenv-tui collect`, their
    /// episodes are recorded into DIR/recording, reviews by `browserenv-tui review`.
    #[arg(long, env = "BROWSER_CAMPAIGN")]
    pub campaign: Option<PathBuf>,
    /// Accepted for older command lines: fields holding a secret are covered in recorded frames
    /// (and everywhere but the person at the wheel's view) without it.
    #[arg(long, env = "BROWSER_REDACT", value_parser = FalseyValueParser::new(), hide = true)]
    pub redact: bool,
    /// Require `Authorization: Bearer TOKEN` on every route but /health.
    #[arg(long, env = "BROWSER_API_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Allow binding a non-loopback address without a token.
    #[arg(long, env = "BROWSER_INSECURE", value_parser = FalseyValueParser::new())]
    pub insecure: bool,
    /// Browser origins (`scheme://host[:port]`, comma-separated) whose pages may use the server;
    /// any other request carrying an `Origin` header is refused (403).
    #[arg(long, env = "BROWSER_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,
    /// Host names (comma-separated) the server answers to besides IP addresses and localhost,
    /// e.g. a Kubernetes Service name; any other `Host` is refused (403, DNS rebinding).
    #[arg(long, env = "BROWSER_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
    /// A JSONL task file: `reset` then accepts `task_id`, and `finish` is rewarded 1.0 or 0.0.
    #[arg(long, env = "BROWSER_TASKS")]
    pub tasks: Option<PathBuf>,
    /// Base URL for the tasks' relative start URLs (default: the --site URL).
    #[arg(long, env = "BROWSER_TASK_BASE_URL")]
    pub task_base_url: Option<String>,
    /// Serve MiniWoB++'s 125 tasks from this folder (the `html` folder of the `miniwob` package
    /// on PyPI; `make miniwob` finds it): `reset(task_id="miniwob.click-test", seed=N)`, each
    /// episode scored by its page, listed by the Task API as BrowserGym's train and test splits.
    #[arg(long, env = "BROWSER_MINIWOB_DIR")]
    pub miniwob: Option<PathBuf>,
    /// Do not keep a browser launched, or a session's next context opened, ahead of the next
    /// reset.
    #[arg(long, env = "BROWSER_NO_WARM_SPARE", value_parser = FalseyValueParser::new())]
    pub no_warm_spare: bool,
    /// Do not load a session's start page ahead in its next context: every reset loads its
    /// page (for a site whose start page shows what the episode before changed on the server).
    #[arg(
        long,
        env = "BROWSER_NO_PREPARED_RESETS",
        value_parser = FalseyValueParser::new()
    )]
    pub no_prepared_resets: bool,
    #[command(flatten)]
    pub archive: crate::archive::ArchiveArgs,
}

impl Cli {
    /// Validate every setting; the error names the setting, as the seed's construction does.
    pub fn server_config(&self) -> Result<ServerConfig, String> {
        if !(1..=MAX_EPISODES_PER_BROWSER).contains(&self.episodes_per_browser) {
            return Err(format!(
                "BROWSER_EPISODES_PER_BROWSER must be between 1 and {MAX_EPISODES_PER_BROWSER}, got {}",
                self.episodes_per_browser
            ));
        }
        if !(1..=64).contains(&self.max_sessions) {
            return Err(format!(
                "BROWSER_MAX_SESSIONS must be between 1 and 64, got {}",
                self.max_sessions
            ));
        }
        if !(self.max_sessions..=65_536).contains(&self.max_connections) {
            return Err(format!(
                "BROWSER_MAX_CONNECTIONS must be between BROWSER_MAX_SESSIONS ({}) and 65536, got {}",
                self.max_sessions, self.max_connections
            ));
        }
        let session_timeout = seconds_in_range(
            "BROWSER_SESSION_TIMEOUT_SECONDS",
            self.session_timeout,
            0.0,
            86_400.0,
        )?;
        let timeouts = PeerTimeouts {
            session_timeout: (!session_timeout.is_zero()).then_some(session_timeout),
            ping_interval: seconds_in_range(
                "BROWSER_WS_PING_INTERVAL_SECONDS",
                self.ws_ping_interval,
                1.0,
                600.0,
            )?,
            ping_timeout: seconds_in_range(
                "BROWSER_WS_PING_TIMEOUT_SECONDS",
                self.ws_ping_timeout,
                1.0,
                600.0,
            )?,
            header_read_timeout: seconds_in_range(
                "BROWSER_HEADER_READ_TIMEOUT_SECONDS",
                self.header_read_timeout,
                1.0,
                600.0,
            )?,
            handoff_wait: seconds_in_range(
                "BROWSER_HANDOFF_WAIT_SECONDS",
                self.handoff_wait,
                0.0,
                600.0,
            )?,
            ask_wait: seconds_in_range("BROWSER_ASK_WAIT_SECONDS", self.ask_wait, 1.0, 3600.0)?,
        };
        let settings = EnvSettings {
            // Known once bound (`run`).
            server_port: None,
            max_steps: max_steps_in_range(self.max_steps)?,
            action_wait: seconds_in_range(
                "BROWSER_ACTION_WAIT_SECONDS",
                self.action_wait,
                0.0,
                10.0,
            )?,
            explicit_wait: seconds_in_range(
                "BROWSER_EXPLICIT_WAIT_SECONDS",
                self.explicit_wait,
                0.0,
                10.0,
            )?,
            settle: self.settle,
            page_load_timeout: seconds_in_range(
                "BROWSER_PAGE_LOAD_TIMEOUT_SECONDS",
                self.page_load_timeout,
                1.0,
                120.0,
            )?,
            action_timeout: seconds_in_range(
                "BROWSER_ACTION_TIMEOUT_SECONDS",
                self.action_timeout,
                1.0,
                60.0,
            )?,
            screenshot_timeout: seconds_in_range(
                "BROWSER_SCREENSHOT_TIMEOUT_SECONDS",
                self.screenshot_timeout,
                1.0,
                60.0,
            )?,
            observe_text: self.observe_text,
            actions: self.actions,
            prepared_resets: !self.no_prepared_resets,
        };
        let archive = self.archive.config(self.record_dir.as_deref())?;
        let shared = self.isolation == crate::chromium::Isolation::Context
            || self.browser_url.as_ref().is_some_and(|url| !url.is_empty());
        if self.archive.wanted() && (shared || self.campaign.is_some()) {
            return Err(
                "archives (--archive, --archive-dir) need a Chromium of each session's own \
                 (BROWSER_ISOLATION=process, no --browser-url: DevTools intercepts requests \
                 browser-wide) and no --campaign"
                    .into(),
            );
        }
        Ok(ServerConfig {
            archive,
            settings,
            max_sessions: self.max_sessions,
            warm_spare: !self.no_warm_spare,
            record_dir: self.record_dir.clone(),
            campaign: self.campaign.clone(),
            token: self.token.clone().filter(|t| !t.is_empty()),
            tasks: None,
            miniwob: None,
            allowed_origins: clean_list(&self.allowed_origins, "BROWSER_ALLOWED_ORIGINS", true)?,
            allowed_hosts: clean_list(&self.allowed_hosts, "BROWSER_ALLOWED_HOSTS", false)?,
            // Behind a Unix socket only the proxy connects, and it sends its own public name.
            check_host: self.unix_dir.is_none(),
            timeouts,
            max_connections: self.max_connections,
            drain: seconds_in_range("BROWSER_DRAIN_SECONDS", self.drain_seconds, 0.0, 3600.0)?,
            peers: crate::replicas::parse_peers(&self.peers)?,
            peer_addresses: crate::replicas::parse_own_addresses(&self.peer_addresses)?,
        })
    }

    /// Chromium's settings, with the sandbox decided by `for_this_process(self.sandbox)`.
    pub fn chromium_config(&self, sandbox: bool) -> ChromiumConfig {
        ChromiumConfig {
            executable: self.chromium.clone(),
            remote: self.browser_url.clone().filter(|url| !url.is_empty()),
            ignore_https_errors: self.ignore_https_errors,
            sandbox,
            renderer_memory_mb: self.renderer_memory_mb,
            isolation: self.isolation,
            episodes_per_browser: self.episodes_per_browser,
            spare_contexts: !self.no_warm_spare,
            screenshots: self.screenshots,
            replays: self.archive.archive_dir.is_some() || self.tasks.is_some(),
            ..ChromiumConfig::default()
        }
    }
}

/// Past this many episodes a browser is as good as never replaced.
const MAX_EPISODES_PER_BROWSER: u32 = 100_000;

/// A comma-separated setting as a list: blanks dropped; origins must look like `scheme://host`.
fn clean_list(values: &[String], name: &str, origins: bool) -> Result<Vec<String>, String> {
    let mut list = Vec::new();
    for value in values.iter().map(|v| v.trim()).filter(|v| !v.is_empty()) {
        let value = value.trim_end_matches('/');
        if origins {
            let parsed = url::Url::parse(value)
                .ok()
                .filter(|u| u.host_str().is_some() && u.path() == "/" && u.query().is_none());
            if parsed.is_none() {
                return Err(format!(
                    "{name}: {value:?} is not an origin (scheme://host[:port], e.g. http://localhost:3000)"
                ));
            }
        } else if value.contains(['/', ':', ' ']) {
            return Err(format!("{name}: {value:?} is not a host name"));
        }
        list.push(value.to_ascii_lowercase());
    }
    Ok(list)
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// SIGTERM or Ctrl-C asks the server to drain (`drain.rs`); a second one to stop now. The
/// handlers are installed when this is called, not later: a launcher may send SIGTERM right after
/// the address line appears.
fn stop_requests() -> anyhow::Result<crate::StopRequests> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let (asked, requests) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        for request in [Stop::Drain, Stop::Now] {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            tracing::info!(
                "{}",
                match request {
                    Stop::Drain => "shutting down (a second signal stops at once)",
                    Stop::Now => "stopping now (a third signal exits without closing the browsers)",
                }
            );
            // The server may be gone already; a third signal must still be heard.
            let _ = asked.send(Some(request));
        }
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        // The browsers die with the server (their parent-death signal); the next start removes
        // their profiles.
        tracing::warn!("exiting at once");
        std::process::exit(1);
    });
    Ok(requests)
}

/// The address line comes first: scripts and tests read it to find the server.
fn announce(address: &str, site: Option<&crate::site::SiteHandle>) {
    println!("browserenv-server listening on {address}");
    if let Some(site) = site {
        println!("static pages at {}", site.url(""));
    }
}

/// Bind, announce the address on stdout (one line, for scripts and tests), serve until a signal.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(Command::Campaign { action }) = &cli.command {
        return campaign_command(action);
    }
    let config = cli.server_config().map_err(anyhow::Error::msg)?;
    let listens = cli.mode == Mode::Serve;
    if listens
        && config.token.is_none()
        && cli.unix_dir.is_none()
        && !cli.insecure
        && !is_loopback(&cli.host)
    {
        anyhow::bail!(
            "refusing to serve {} without a token: pages and sessions would be open to the network. \
             Set BROWSER_API_TOKEN (or --token), or pass --insecure",
            cli.host
        );
    }
    let sandbox = crate::chromium::launch::sandbox::for_this_process(cli.sandbox)
        .map_err(anyhow::Error::msg)?;
    let chromium_config = cli.chromium_config(sandbox.enabled);
    if chromium_config.remote.is_none() {
        if sandbox.enabled {
            tracing::info!("Chromium runs in its sandbox ({})", sandbox.reason);
        } else {
            tracing::warn!(
                "Chromium runs without its sandbox (--no-sandbox): {}",
                sandbox.reason
            );
        }
    }
    if cli.block_private_networks && chromium_config.remote.is_some() {
        anyhow::bail!(
            "BROWSER_BLOCK_PRIVATE_NETWORKS needs browsers of our own: a --browser-url browser's connections do not pass through this server"
        );
    }
    if let Some(url) = &chromium_config.remote {
        // The URL may carry a pool's token: it is shown as `token=***` everywhere.
        let shown = chromium::redacted_url(url);
        let version = chromium::remote_version(url, chromium_config.launch_timeout)
            .await
            .with_context(|| format!("--browser-url {shown}"))?;
        tracing::info!("sessions run on the remote browser at {shown} ({version})");
    } else if !chromium_config.executable.exists() {
        anyhow::bail!(
            "Chromium not found at {} (install it: `sudo apt-get install chromium-headless-shell`, or pass --chromium PATH)",
            chromium_config.executable.display()
        );
    }
    let cleaned = chromium::clean_leftovers(&chromium_config.profile_root);
    if cleaned > 0 {
        tracing::info!("removed {cleaned} browser profiles left by a server that was killed");
    }
    if chromium_config.ignore_https_errors {
        tracing::warn!(
            "BROWSER_IGNORE_HTTPS_ERRORS: pages with invalid certificates load as if they were \
             fine; an agent may type into a site pretending to be another"
        );
    }
    let mut chromium_config = chromium_config;
    let stop = stop_requests()?;
    let site = match &cli.site {
        Some(dir) => Some(
            crate::site::serve_dir(dir)
                .await
                .with_context(|| format!("cannot serve {}", dir.display()))?,
        ),
        None => None,
    };
    let miniwob = match &cli.miniwob {
        Some(dir) => {
            let miniwob = crate::miniwob::MiniWob::serve(dir)
                .await
                .map_err(anyhow::Error::msg)?;
            tracing::info!(
                "{} MiniWoB++ tasks from {} (pages at http://{})",
                miniwob.tasks().len(),
                dir.display(),
                miniwob.address()
            );
            Some(std::sync::Arc::new(miniwob))
        }
        None => None,
    };
    let task_base = match (&cli.task_base_url, &site) {
        (Some(base), _) => {
            Some(url::Url::parse(base).with_context(|| format!("--task-base-url {base}"))?)
        }
        (None, Some(site)) => url::Url::parse(&site.url("")).ok(),
        (None, None) => None,
    };
    if cli.block_private_networks {
        // The configured site (and the tasks' base) stay reachable, though they are on loopback.
        let mut allowed = cli.private_network_allow.clone();
        let own = [
            site.as_ref().and_then(|s| url::Url::parse(&s.url("")).ok()),
            task_base.clone(),
        ];
        for url in own.into_iter().flatten() {
            if let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) {
                allowed.push(format!("{host}:{port}"));
            }
        }
        if let Some(miniwob) = &miniwob {
            allowed.push(miniwob.address().to_string());
        }
        let policy = crate::chromium::intercept::egress::EgressPolicy::new(&allowed)
            .await
            .map_err(|err| anyhow::anyhow!("BROWSER_PRIVATE_NETWORK_ALLOW: {err}"))?;
        tracing::info!(
            "private networks are refused to the browsers (allowed: {})",
            if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            }
        );
        chromium_config.egress = Some(std::sync::Arc::new(policy));
    }
    let launcher = ChromiumLauncher::new(chromium_config);
    let mut config = config;
    config.miniwob = miniwob;
    // A campaign's tasks are the file its campaign.json names: sessions reset them by id.
    let task_file = match (&cli.tasks, &cli.campaign) {
        (Some(_), Some(_)) => anyhow::bail!(
            "--tasks and --campaign: a campaign's tasks are the file its campaign.json names"
        ),
        (Some(path), None) => Some(path.clone()),
        (None, Some(dir)) => Some(
            browserenv_collect::campaign::CampaignConfig::load(dir)
                .map_err(anyhow::Error::msg)?
                .task_file(dir),
        ),
        (None, None) => None,
    };
    if let Some(path) = &task_file {
        let catalog = TaskCatalog::load(path, task_base).map_err(anyhow::Error::msg)?;
        tracing::info!(
            "{} tasks from {}",
            catalog.tasks.tasks.len(),
            path.display()
        );
        config.tasks = Some(std::sync::Arc::new(catalog));
    }
    let result = match &cli.unix_dir {
        // stdout is the MCP channel: nothing else may be written there.
        _ if !listens => {
            if let Some(site) = &site {
                tracing::info!("static pages at {}", site.url(""));
            }
            let mut stop = stop;
            let signalled = async move {
                let _ = stop.wait_for(Option::is_some).await;
            };
            crate::serve_mcp_stdio(launcher, config, signalled).await
        }
        Some(dir) => {
            // Only what can open the socket file reaches the server (the HF Sandbox proxy): the
            // Host check is off, and the token is what it is.
            tracing::info!(
                "listening on a Unix socket: Host is not checked; {}",
                if config.token.is_some() {
                    "every route but /health and /ready needs the token"
                } else {
                    "no token (BROWSER_API_TOKEN): whoever can open the socket drives the server"
                }
            );
            let path = dir.join(format!("{}.sock", cli.port));
            let _ = std::fs::remove_file(&path);
            let listener = tokio::net::UnixListener::bind(&path)
                .with_context(|| format!("cannot listen on {}", path.display()))?;
            announce(&format!("unix:{}", path.display()), site.as_ref());
            crate::serve(listener, launcher, config, stop).await
        }
        None => {
            let listener = tokio::net::TcpListener::bind((cli.host.as_str(), cli.port))
                .await
                .with_context(|| format!("cannot listen on {}:{}", cli.host, cli.port))?;
            let address = listener.local_addr()?;
            announce(&format!("http://{address}"), site.as_ref());
            let mut config = config;
            config.settings.server_port = Some(address.port());
            crate::serve(listener, launcher, config, stop).await
        }
    };
    // Whatever is still alive (a session mid-close, the spare) goes now.
    tokio::task::spawn_blocking(chromium::shutdown_all).await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    result
}

/// `BROWSER_ACTIONS`: `full` or `seed`.
fn action_set(name: &str) -> Result<browserenv::ActionSet, String> {
    browserenv::ActionSet::from_name(name)
        .ok_or_else(|| format!("BROWSER_ACTIONS is full or seed, got {name:?}"))
}
