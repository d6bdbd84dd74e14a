//! Command-line flags of `browserenv-server`. Every setting also reads the environment variable
//! of the seed's name, so the same image runs under Docker, HF Sandbox and plain shells.

use std::path::PathBuf;

// On/off settings take what people write in an environment: 1/0, true/false, yes/no, on/off
// (anything but an empty value, 0, false, no, off, n or f is on).
use clap::builder::FalseyValueParser;
use clap::Parser;

use crate::settings::SettleMode;

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

/// `BROWSER_ACTIONS`: `full` or `seed`.
fn action_set(name: &str) -> Result<browserenv::ActionSet, String> {
    browserenv::ActionSet::from_name(name)
        .ok_or_else(|| format!("BROWSER_ACTIONS is full or seed, got {name:?}"))
}
