//! `--browser-url`: sessions on a Chromium someone else started (here: a separate process with
//! a different window size, device scale factor 2, smooth scrolling and the popup blocker on, as a
//! browserless pool's might be), reached only through its DevTools endpoint.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browserenv::{BrowserAction, ResetOptions};
use browserenv_server::chromium::remote_version;
use browserenv_server::ServerConfig;
use browserenv_tests::{chromium_path, test_settings, title, Harness, Picture};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// A Chromium running on its own, with a DevTools port and nothing else.
struct RemoteChromium {
    child: Child,
    profile: PathBuf,
    port: u16,
    /// The browser's own DevTools WebSocket path.
    browser_path: String,
}

impl RemoteChromium {
    fn start() -> RemoteChromium {
        let profile = std::env::temp_dir().join(format!(
            "remote-chromium-{}-{}",
            std::process::id(),
            rand_seed()
        ));
        std::fs::create_dir_all(&profile).unwrap();
        let mut command = Command::new(chromium_path());
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

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The URLs of the browser's page targets, asked over a DevTools connection of our own.
    async fn page_urls(&self) -> Vec<String> {
        let url = format!("ws://127.0.0.1:{}{}", self.port, self.browser_path);
        let (mut socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let request = json!({"id": 1, "method": "Target.getTargets"}).to_string();
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
        reply["result"]["targetInfos"]
            .as_array()
            .expect("a target list")
            .iter()
            .filter(|t| t["type"] == "page")
            .map(|t| t["url"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Wait until the browser's pages satisfy `done`; the last list seen.
    async fn pages_until(&self, done: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pages = self.page_urls().await;
            if done(&pages) || Instant::now() > deadline {
                return pages;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn running(&mut self) -> bool {
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

#[tokio::test]
async fn sessions_on_a_remote_browser_get_an_exact_viewport_and_contexts_of_their_own() {
    let mut remote = RemoteChromium::start();
    let before = remote.page_urls().await;
    let harness = Harness::start_on(
        Some(remote.url()),
        ServerConfig {
            settings: test_settings(),
            max_sessions: 4,
            warm_spare: true,
            ..ServerConfig::default()
        },
    )
    .await;

    // 800x600 at scale 1, although the remote's window is 1280x900 at scale 2.
    let (mut first, opened) = harness.open("storage.html").await;
    let picture = Picture::from_base64(&opened.observation.screenshot);
    assert_eq!((picture.width, picture.height), (800, 600));
    assert_eq!(title(&opened), "visits 1 cookie seen=1");
    let again = first.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(title(&again), "visits 2 cookie seen=2");

    // A second session shares neither storage nor cookies with the first.
    let (mut second, opened) = harness.open("storage.html").await;
    assert_eq!(title(&opened), "visits 1 cookie seen=1");

    // A tab the second session opens is followed there and nowhere else.
    second
        .reset(ResetOptions::new(harness.page("blank.html")))
        .await
        .unwrap();
    let tab = second.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(tab.observation.url, harness.page("newtab.html"));
    assert_eq!(tab.observation.metadata["tab_switches"], 1);
    let waited = first.step(BrowserAction::wait()).await.unwrap();
    assert_eq!(waited.observation.url, harness.page("storage.html"));
    assert!(waited.observation.metadata.get("tab_switches").is_none());

    // Downloads are denied in the session's context and reported to that session only.
    first
        .reset(ResetOptions::new(harness.page("download.html")))
        .await
        .unwrap();
    let download = first.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(download.observation.error, "download_blocked");
    let quiet = second.step(BrowserAction::wait()).await.unwrap();
    assert!(quiet.observation.metadata.get("downloads_denied").is_none());

    // Smooth scrolling is on in this remote (our launches turn it off): the step's screenshot is
    // still the scroll's final state. (Measured: headless Chromium does not animate CDP wheel
    // events, so this holds without extra waiting.)
    first
        .reset(ResetOptions::new(harness.page("long.html")))
        .await
        .unwrap();
    let scrolled = first.step(BrowserAction::scroll(400)).await.unwrap();
    let later = first.step(BrowserAction::wait()).await.unwrap();
    assert_eq!(
        Picture::from_base64(&scrolled.observation.screenshot).pixels,
        Picture::from_base64(&later.observation.screenshot).pixels,
        "the screenshot after the scroll step is its final state"
    );

    // Closing a session disposes its context (and its tabs) at once; the remote keeps running.
    second.close().await.unwrap();
    let newtab = harness.page("newtab.html");
    let pages = remote.pages_until(|pages| !pages.contains(&newtab)).await;
    assert!(!pages.contains(&newtab), "{pages:?}");
    first.close().await.unwrap();
    harness.stop().await;
    let pages = remote.pages_until(|pages| pages == before).await;
    assert_eq!(pages, before, "only the remote's own tab is left");
    assert!(remote.running());
}

#[tokio::test]
async fn a_dead_endpoint_is_reported() {
    let error = remote_version("http://127.0.0.1:1", Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(format!("{error:#}").contains("cannot connect"), "{error:#}");
}
