//! Shared fixtures for the end-to-end tests and the benchmark: an in-process server on real
//! Chromium, the test pages on their own listener, and PNG helpers. "The seed" in comments is the
//! original Python environment (`docs/ARCHITECTURE.md`, "Terms").

pub mod archive_site;
pub mod outlets;
pub mod raw_cdp;
pub mod socket;
pub mod stand_in_browser;
pub mod watch;

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use browserenv::{Client, ResetOptions, StepResult};
use browserenv_server::chromium::{ChromiumConfig, ChromiumLauncher};
use browserenv_server::settings::EnvSettings;
use browserenv_server::site::{serve_dir, SiteHandle};
use browserenv_server::{start, ServerConfig, ServerHandle};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// The repository's `assets/` folder.
pub fn assets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets")
}

/// MiniWoB++'s pages: `BROWSER_MINIWOB_DIR`, else the `html` folder of the `miniwob` package in
/// the repository's venv (`.venv`, which `make venv` installs from tests/python/requirements.txt).
pub fn miniwob_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("BROWSER_MINIWOB_DIR") {
        return Some(PathBuf::from(dir));
    }
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/lib");
    std::fs::read_dir(lib)
        .ok()?
        .flatten()
        .map(|python| python.path().join("site-packages/miniwob/html"))
        .find(|html| html.join("core/core.js").is_file())
}

pub fn chromium_path() -> PathBuf {
    std::env::var_os("BROWSER_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(browserenv_server::chromium::default_executable)
}

/// The browsers tests launch: the Chromium of `BROWSER_CHROMIUM`, the rest as the server does.
pub fn test_chromium() -> ChromiumConfig {
    ChromiumConfig {
        executable: chromium_path(),
        // Tests open many short episodes, four at a time on two cores: a spare context per session
        // adds a renderer start to every reset, and under `make test` typing slowed from about 5
        // to 21 ms a character (past `type`'s budget). tests/tests/isolation.rs runs with spare
        // contexts on, as do the terminal UI's and the Python tests (the binary's defaults).
        spare_contexts: false,
        ..ChromiumConfig::default()
    }
}

/// One DevTools command without parameters over a connection of our own to the browser endpoint
/// `url`; its result.
pub async fn devtools_call(url: &str, method: &str) -> Value {
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let request = json!({"id": 1, "method": method}).to_string();
    socket.send(Message::text(request)).await.unwrap();
    let reply = loop {
        let frame = socket.next().await.expect("a reply").unwrap();
        let Message::Text(text) = frame else { continue };
        let value: Value = serde_json::from_str(&text).unwrap();
        if value["id"] == 1 {
            break value;
        }
    };
    let _ = socket.close(None).await;
    reply["result"].clone()
}

/// Settings for tests: adaptive settle with the seed's bound, short timeouts so failure tests end
/// quickly.
pub fn test_settings() -> EnvSettings {
    EnvSettings {
        action_timeout: Duration::from_secs(3),
        screenshot_timeout: Duration::from_secs(3),
        page_load_timeout: Duration::from_secs(5),
        explicit_wait: Duration::from_millis(200),
        ..EnvSettings::default()
    }
}

/// A server on real Chromium plus the test pages.
pub struct Harness {
    pub server: ServerHandle,
    pub pages: SiteHandle,
}

impl Harness {
    pub async fn start(settings: EnvSettings) -> Harness {
        Self::start_with(ServerConfig {
            settings,
            ..ServerConfig::default()
        })
        .await
    }

    pub async fn start_with(config: ServerConfig) -> Harness {
        Self::start_on(None, config).await
    }

    /// A server whose sessions run on the Chromium at `remote` (a DevTools endpoint) when given,
    /// else on browsers it launches.
    pub async fn start_on(remote: Option<String>, config: ServerConfig) -> Harness {
        let chromium = ChromiumConfig {
            remote,
            ..test_chromium()
        };
        Self::start_with_browser(chromium, config).await
    }

    /// A server whose browsers are launched (or reached) as `chromium` says.
    pub async fn start_with_browser(chromium: ChromiumConfig, config: ServerConfig) -> Harness {
        // Profiles whose test process ended before its cleanup threads did, as the server's
        // binary does at start (only those of processes that are gone).
        browserenv_server::chromium::clean_leftovers(&std::env::temp_dir());
        let chromium = ChromiumConfig {
            replays: chromium.replays || config.archive.dir.is_some() || config.tasks.is_some(),
            ..chromium
        };
        let launcher = ChromiumLauncher::new(chromium);
        let server = start(launcher, config).await.expect("server starts");
        let pages = serve_dir(assets_dir().join("pages"))
            .await
            .expect("pages are served");
        Harness { server, pages }
    }

    /// A server with the demo site on its own listener and the bundled demo tasks.
    pub async fn with_demo_tasks(settings: EnvSettings) -> (Harness, SiteHandle) {
        Self::with_demo_tasks_and(ServerConfig {
            settings,
            ..ServerConfig::default()
        })
        .await
    }

    /// `with_demo_tasks` on a server configured as `config` otherwise (e.g. recording).
    pub async fn with_demo_tasks_and(config: ServerConfig) -> (Harness, SiteHandle) {
        let site = serve_dir(assets_dir().join("site"))
            .await
            .expect("the demo site is served");
        let tasks =
            browserenv_collect::tasks::TaskSet::load(&assets_dir().join("tasks/demo.jsonl"))
                .expect("the demo tasks load");
        let catalog = browserenv_server::environment::TaskCatalog {
            tasks,
            base_url: Some(url::Url::parse(&site.url("")).expect("site URL")),
            folder: None,
        };
        let harness = Self::start_with(ServerConfig {
            tasks: Some(std::sync::Arc::new(catalog)),
            ..config
        })
        .await;
        (harness, site)
    }

    /// A server that records every session into `dir` (emptied first).
    pub async fn recording(dir: &std::path::Path, settings: EnvSettings) -> Harness {
        let _ = std::fs::remove_dir_all(dir);
        Self::start_with(ServerConfig {
            settings,
            record_dir: Some(dir.to_path_buf()),
            ..ServerConfig::default()
        })
        .await
    }

    pub fn page(&self, name: &str) -> String {
        self.pages.url(name)
    }

    pub async fn client(&self) -> Client {
        Client::connect(&self.server.base_url())
            .await
            .expect("client connects")
    }

    /// A connected client already reset to the named page.
    pub async fn open(&self, page: &str) -> (Client, StepResult) {
        let mut client = self.client().await;
        let first = client
            .reset(ResetOptions::new(self.page(page)))
            .await
            .expect("reset");
        (client, first)
    }

    pub async fn stop(self) {
        self.server.stop().await.expect("server stops cleanly");
    }
}

/// A decoded screenshot.
pub struct Picture {
    pub width: u32,
    pub height: u32,
    /// RGBA, row-major.
    pub pixels: Vec<u8>,
}

impl Picture {
    pub fn from_base64(data: &str) -> Picture {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("screenshot is base64");
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::ALPHA);
        let mut reader = decoder.read_info().expect("screenshot is a PNG");
        let mut pixels = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut pixels).expect("PNG frame");
        pixels.truncate(info.buffer_size());
        Picture {
            width: info.width,
            height: info.height,
            pixels,
        }
    }

    pub fn rgb(&self, x: u32, y: u32) -> [u8; 3] {
        let i = ((y * self.width + x) * 4) as usize;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }

    /// How many pixels differ from `other`'s (of the same size).
    pub fn differing_pixels(&self, other: &Picture) -> usize {
        self.pixels
            .chunks(4)
            .zip(other.pixels.chunks(4))
            .filter(|(a, b)| a != b)
            .count()
    }

    /// The smallest box (x0, y0, x1, y1) that holds every pixel where `other` differs.
    pub fn differing_box(&self, other: &Picture) -> Option<(u32, u32, u32, u32)> {
        let mut found: Option<(u32, u32, u32, u32)> = None;
        for y in 0..self.height.min(other.height) {
            for x in 0..self.width.min(other.width) {
                if self.rgb(x, y) != other.rgb(x, y) {
                    let (x0, y0, x1, y1) = found.unwrap_or((x, y, x, y));
                    found = Some((x0.min(x), y0.min(y), x1.max(x), y1.max(y)));
                }
            }
        }
        found
    }
}

/// The page title the server reports in observation metadata.
pub fn title(result: &StepResult) -> String {
    result.observation.metadata["title"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A Chromium running on its own, with a DevTools port and nothing else: what `--browser-url`
/// points at in the tests and the benchmark. Unlike our launches it has a 1280x900 window at
/// scale 2, smooth scrolling and the popup blocker.
pub struct RemoteChromium {
    child: Child,
    profile: PathBuf,
    port: u16,
    /// The browser's own DevTools WebSocket path.
    browser_path: String,
}

impl RemoteChromium {
    pub fn start() -> RemoteChromium {
        let profile = std::env::temp_dir().join(format!(
            "remote-chromium-{}-{}",
            std::process::id(),
            rand_seed()
        ));
        std::fs::create_dir_all(&profile).unwrap();
        // The full Chromium, as a pool's browser usually is, where it is installed.
        let full = PathBuf::from(browserenv_server::chromium::CHROMIUM);
        let mut command = Command::new(if full.exists() { full } else { chromium_path() });
        // Deliberately not the server's flags (server/src/chromium/launch/process.rs): a remote is someone else's
        // browser, started the plain way a pool starts one, without our popup and scrolling
        // flags and at another window size and scale, which the server must cope with.
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                // Not what our own launches use: the server must still deliver 800x600 at scale 1.
                "--window-size=1280,900",
                "--force-device-scale-factor=2",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so its helpers die with it.
            .process_group(0);
        // If the test process dies, so does this browser.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command.spawn().expect("chromium starts");
        let port_file = profile.join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(20);
        let (port, browser_path) = loop {
            let written = std::fs::read_to_string(&port_file).ok().and_then(|text| {
                let mut lines = text.lines();
                let port = lines.next()?.parse::<u16>().ok()?;
                Some((port, lines.next()?.to_string()))
            });
            if let Some(written) = written {
                break written;
            }
            assert!(Instant::now() < deadline, "chromium wrote no DevTools port");
            std::thread::sleep(Duration::from_millis(50));
        };
        RemoteChromium {
            child,
            profile,
            port,
            browser_path,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The URLs of the browser's page targets, asked over a DevTools connection of our own.
    pub async fn page_urls(&self) -> Vec<String> {
        let url = format!("ws://127.0.0.1:{}{}", self.port, self.browser_path);
        let reply = devtools_call(&url, "Target.getTargets").await;
        reply["targetInfos"]
            .as_array()
            .expect("a target list")
            .iter()
            .filter(|t| t["type"] == "page")
            .map(|t| t["url"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Wait until the browser's pages satisfy `done`; the last list seen.
    pub async fn pages_until(&self, done: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pages = self.page_urls().await;
            if done(&pages) || Instant::now() > deadline {
                return pages;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

/// Tell apart the profiles of browsers started by tests running at the same time.
fn rand_seed() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

impl Drop for RemoteChromium {
    fn drop(&mut self) {
        // SAFETY: a plain syscall on the process group this test created.
        unsafe {
            libc::killpg(self.child.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.child.wait();
        // Helpers may still be writing into the profile for a moment after the browser is gone.
        for _ in 0..20 {
            if std::fs::remove_dir_all(&self.profile).is_ok() || !self.profile.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The test pages over HTTPS with a self-signed certificate (a site nobody should trust): Python's
/// own HTTP server wrapped in TLS, on a loopback port of its own.
pub struct HttpsPages {
    child: Child,
    dir: PathBuf,
    pub port: u16,
}

const HTTPS_SERVER: &str = r#"
import functools, http.server, ssl, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
handler.log_message = lambda *args: None
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

impl HttpsPages {
    pub fn start() -> HttpsPages {
        let dir = std::env::temp_dir().join(format!(
            "browserenv-https-{}-{}",
            std::process::id(),
            rand_seed()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let made = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args([
                "-subj",
                "/CN=127.0.0.1",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(made.success(), "openssl made no certificate");
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(HTTPS_SERVER)
            .arg(assets_dir().join("pages"))
            .arg(&cert)
            .arg(&key)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let port = line.trim().parse().expect("the HTTPS server's port");
        HttpsPages { child, dir, port }
    }

    pub fn url(&self, page: &str) -> String {
        format!("https://127.0.0.1:{}/{page}", self.port)
    }
}

impl Drop for HttpsPages {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A page that keeps a request open to the test, so the test sees when the browser showing it is
/// gone: the connection closes with the browser's processes. Serve it to one session only.
pub struct Tether {
    port: u16,
    hold: tokio::sync::watch::Receiver<Hold>,
    task: tokio::task::JoinHandle<()>,
}

/// Where the page's held request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The page has not asked yet.
    Waiting,
    /// The request is open.
    Held,
    /// Its connection closed: the browser is gone.
    Released,
}

const TETHER_PAGE: &str = "<!doctype html><title>Tethered</title><p>Tethered to the test.</p>\
    <script>addEventListener('load', () => fetch('/hold'))</script>";

impl Tether {
    pub async fn start() -> Tether {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("the tether listens");
        let port = listener.local_addr().unwrap().port();
        let (hold_tx, hold) = tokio::sync::watch::channel(Hold::Waiting);
        let hold_tx = std::sync::Arc::new(hold_tx);
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let hold_tx = hold_tx.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut chunk = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let path = String::from_utf8_lossy(&head)
                        .split_whitespace()
                        .nth(1)
                        .unwrap_or("")
                        .to_string();
                    if path == "/hold" {
                        // Never answered: the browser keeps the connection until it dies.
                        let _ = hold_tx.send(Hold::Held);
                        while let Ok(n) = stream.read(&mut chunk).await {
                            if n == 0 {
                                break;
                            }
                        }
                        let _ = hold_tx.send(Hold::Released);
                        return;
                    }
                    let (status, body) = match path.as_str() {
                        "/" => ("200 OK", TETHER_PAGE),
                        _ => ("404 Not Found", ""),
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                         cache-control: no-store\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Tether { port, hold, task }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn state(&self) -> Hold {
        *self.hold.borrow()
    }

    /// Wait (at most `bound`) until the hold is past `state`; the state then.
    async fn beyond(&self, state: Hold, bound: Duration) -> Hold {
        let mut hold = self.hold.clone();
        let order = |h: Hold| h as u8;
        let _ = tokio::time::timeout(bound, hold.wait_for(|h| order(*h) > order(state))).await;
        self.state()
    }

    /// Whether the page holds its request (within `bound`).
    pub async fn held(&self, bound: Duration) -> bool {
        self.beyond(Hold::Waiting, bound).await == Hold::Held
    }

    /// Whether the browser is gone (within `bound`).
    pub async fn released(&self, bound: Duration) -> bool {
        self.beyond(Hold::Held, bound).await == Hold::Released
    }
}

impl Drop for Tether {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The balancer's config (`deploy/haproxy/haproxy.cfg`) with its servers, the lines between each
/// `# servers begin` / `# servers end` pair (one pair per backend), replaced by `servers`.
pub fn with_servers(config: &str, servers: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut rest = config;
    while let Some(begin) = rest.find("# servers begin\n") {
        let after = begin + "# servers begin\n".len();
        let Some(end) = rest[after..].find("# servers end") else {
            anyhow::bail!("a '# servers begin' without its '# servers end'");
        };
        out.push_str(&rest[..after]);
        out.push_str(servers);
        rest = &rest[after + end..];
    }
    if out.is_empty() {
        anyhow::bail!("no '# servers begin' / '# servers end' lines");
    }
    out.push_str(rest);
    Ok(out)
}
