//! The floor: the same Chromium, launched with the server's flags and spoken to on the same
//! DevTools pipe, but with nothing of ours in between (no chromiumoxide, no bridge, no probe, no
//! settle): the fewest CDP calls that open a context, load a page, scroll it and copy a frame.
//! What the server adds on top of these is its own cost; what these take is Chromium's. The
//! bench puts them beside the server's phases, and the perf smoke (`tests/tests/perf_smoke.rs`)
//! holds the server to a multiple of them.

use std::collections::HashMap;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// How long any one call or awaited event may take before the floor run gives up.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// A Chromium on a DevTools pipe of our own, spoken to with raw JSON messages.
pub struct RawChromium {
    child: Child,
    profile: PathBuf,
    commands: tokio::net::unix::pipe::Sender,
    pending: Pending,
    events: mpsc::UnboundedReceiver<Value>,
    next_id: u64,
    reader: tokio::task::JoinHandle<()>,
}

/// One tab in a browser context of its own, attached with a flat session.
pub struct RawTab {
    pub context: String,
    pub session: String,
}

/// Where a raw reset's time went, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawReset {
    /// Opening the context and its tab (what the server's spare context does ahead of time).
    pub context: f64,
    /// `Page.navigate` until the page's `load` event.
    pub load: f64,
    /// A screencast's first frame after the load.
    pub screenshot: f64,
}

impl RawReset {
    /// The reset as the server's default takes it: the context is ready (a spare).
    pub fn with_spare(&self) -> f64 {
        self.load + self.screenshot
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the two fds it was given room for.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds are new and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl RawChromium {
    /// Launch `executable` with the server's flags (and `--no-sandbox` where the server would
    /// add it) and a fresh profile, and wait until it answers on its pipe.
    pub async fn launch(executable: &Path) -> anyhow::Result<RawChromium> {
        use std::os::fd::AsRawFd;
        let profile = std::env::temp_dir().join(format!(
            "browserenv-raw-{}-{}",
            std::process::id(),
            uuid_like()
        ));
        std::fs::create_dir_all(&profile)?;
        let (command_read, command_write) = pipe()?;
        let (answer_read, answer_write) = pipe()?;
        let mut command = Command::new(executable);
        if !browserenv_server::chromium::launch::sandbox::auto() {
            command.arg("--no-sandbox");
        }
        command
            .args(browserenv_server::chromium::FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let (theirs_in, theirs_out) = (command_read.as_raw_fd(), answer_write.as_raw_fd());
        // SAFETY: only fcntl, dup2 and setpgid between fork and exec, all async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                libc::setpgid(0, 0);
                let commands = libc::fcntl(theirs_in, libc::F_DUPFD_CLOEXEC, 5);
                let answers = libc::fcntl(theirs_out, libc::F_DUPFD_CLOEXEC, 5);
                if commands < 0
                    || answers < 0
                    || libc::dup2(commands, 3) < 0
                    || libc::dup2(answers, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .with_context(|| format!("cannot run {}", executable.display()))?;
        drop((command_read, answer_write));
        let commands = tokio::net::unix::pipe::Sender::from_owned_fd(command_write)?;
        let answers = tokio::net::unix::pipe::Receiver::from_owned_fd(answer_read)?;
        let pending: Pending = Default::default();
        let (event_tx, events) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_messages(answers, pending.clone(), event_tx));
        let mut browser = RawChromium {
            child,
            profile,
            commands,
            pending,
            events,
            next_id: 0,
            reader,
        };
        browser
            .call("Browser.getVersion", json!({}), None)
            .await
            .context("the raw Chromium did not answer")?;
        Ok(browser)
    }

    /// One command; its result, or an error for a CDP error answer.
    pub async fn call(
        &mut self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> anyhow::Result<Value> {
        let answer = self.send(method, params, session).await?;
        let answer = tokio::time::timeout(CALL_TIMEOUT, answer)
            .await
            .map_err(|_| anyhow!("{method}: no answer in {CALL_TIMEOUT:?}"))?
            .map_err(|_| anyhow!("{method}: the browser closed its pipe"))?;
        if let Some(error) = answer.get("error") {
            bail!("{method}: {error}");
        }
        Ok(answer["result"].clone())
    }

    /// Send one command without waiting for its answer; the answer's receiver.
    async fn send(
        &mut self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> anyhow::Result<oneshot::Receiver<Value>> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.commands.write_all(&bytes).await?;
        Ok(rx)
    }

    /// The next event `method` of `session`; events before it are let go.
    async fn event(&mut self, session: &str, method: &str) -> anyhow::Result<Value> {
        let wanted = async {
            while let Some(event) = self.events.recv().await {
                if event["method"] == method && event["sessionId"] == session {
                    return Ok(event["params"].clone());
                }
            }
            bail!("the browser closed its pipe")
        };
        tokio::time::timeout(CALL_TIMEOUT, wanted)
            .await
            .map_err(|_| anyhow!("no {method} in {CALL_TIMEOUT:?}"))?
    }

    /// Let go of every event received so far.
    fn forget_events(&mut self) {
        while self.events.try_recv().is_ok() {}
    }

    /// A new browser context and a blank tab in it, at the server's 800x600.
    pub async fn open_tab(&mut self) -> anyhow::Result<RawTab> {
        let context = self
            .call("Target.createBrowserContext", json!({}), None)
            .await?["browserContextId"]
            .as_str()
            .context("no context id")?
            .to_string();
        let target = self
            .call(
                "Target.createTarget",
                json!({"url": "about:blank", "browserContextId": context}),
                None,
            )
            .await?["targetId"]
            .clone();
        let session = self
            .call(
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
                None,
            )
            .await?["sessionId"]
            .as_str()
            .context("no session id")?
            .to_string();
        let metrics = json!({"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": false});
        let tab = Some(session.as_str());
        let (enabled, sized) = (
            self.send("Page.enable", json!({}), tab).await?,
            self.send("Emulation.setDeviceMetricsOverride", metrics, tab)
                .await?,
        );
        let (_, _) = tokio::join!(enabled, sized);
        Ok(RawTab { context, session })
    }

    /// Dispose of a tab's context without waiting for the browser to finish (as the server does,
    /// off the reset's clock).
    pub async fn dispose(&mut self, tab: RawTab) -> anyhow::Result<()> {
        let params = json!({"browserContextId": tab.context});
        drop(
            self.send("Target.disposeBrowserContext", params, None)
                .await?,
        );
        Ok(())
    }

    /// Navigate the tab and wait for the page's `load` event.
    pub async fn load(&mut self, tab: &RawTab, url: &str) -> anyhow::Result<()> {
        self.forget_events();
        let tab_session = Some(tab.session.as_str());
        self.call("Page.navigate", json!({"url": url}), tab_session)
            .await?;
        self.event(&tab.session, "Page.loadEventFired").await?;
        Ok(())
    }

    /// A wheel scroll at the viewport's centre, answered once the renderer has taken it.
    pub async fn scroll(&mut self, tab: &RawTab, dy: i64) -> anyhow::Result<()> {
        let wheel = json!({"type": "mouseWheel", "x": 400, "y": 300, "deltaX": 0, "deltaY": dy});
        self.call("Input.dispatchMouseEvent", wheel, Some(&tab.session))
            .await?;
        Ok(())
    }

    /// A left click: press and release at a point, each answered once the page has taken it.
    pub async fn click(&mut self, tab: &RawTab, x: i64, y: i64) -> anyhow::Result<()> {
        for kind in ["mousePressed", "mouseReleased"] {
            let event = json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1});
            self.call("Input.dispatchMouseEvent", event, Some(&tab.session))
                .await?;
        }
        Ok(())
    }

    /// Characters typed as key down and up events, all sent before the first answer is awaited
    /// (as the server sends them).
    pub async fn type_text(&mut self, tab: &RawTab, text: &str) -> anyhow::Result<()> {
        let mut answers = Vec::new();
        for ch in text.chars() {
            let ch = ch.to_string();
            let down = json!({"type": "keyDown", "key": ch, "text": ch, "unmodifiedText": ch});
            let up = json!({"type": "keyUp", "key": ch});
            for event in [down, up] {
                answers.push(
                    self.send("Input.dispatchKeyEvent", event, Some(&tab.session))
                        .await?,
                );
            }
        }
        for answer in answers {
            tokio::time::timeout(CALL_TIMEOUT, answer).await??;
        }
        Ok(())
    }

    /// BACKSPACE, down and up.
    pub async fn backspace(&mut self, tab: &RawTab) -> anyhow::Result<()> {
        for kind in ["rawKeyDown", "keyUp"] {
            let event = json!({"type": kind, "key": "Backspace", "code": "Backspace",
                "windowsVirtualKeyCode": 8, "nativeVirtualKeyCode": 8});
            self.call("Input.dispatchKeyEvent", event, Some(&tab.session))
                .await?;
        }
        Ok(())
    }

    /// A click on a link, and the page it opens loaded.
    pub async fn click_to_load(&mut self, tab: &RawTab, x: i64, y: i64) -> anyhow::Result<()> {
        self.forget_events();
        self.click(tab, x, y).await?;
        self.event(&tab.session, "Page.loadEventFired").await?;
        Ok(())
    }

    /// Back one entry in the tab's history, and that page loaded again.
    pub async fn back(&mut self, tab: &RawTab) -> anyhow::Result<()> {
        self.forget_events();
        let session = Some(tab.session.as_str());
        let history = self
            .call("Page.getNavigationHistory", json!({}), session)
            .await?;
        let index = history["currentIndex"]
            .as_u64()
            .context("no history index")?;
        let entry = history["entries"][index.saturating_sub(1) as usize]["id"].clone();
        self.call(
            "Page.navigateToHistoryEntry",
            json!({"entryId": entry}),
            session,
        )
        .await?;
        self.event(&tab.session, "Page.loadEventFired").await?;
        Ok(())
    }

    /// A screencast's first frame (base64 PNG), as the server's default capture takes it.
    pub async fn frame(&mut self, tab: &RawTab) -> anyhow::Result<String> {
        self.forget_events();
        let session = Some(tab.session.as_str());
        self.call("Page.startScreencast", json!({"format": "png"}), session)
            .await?;
        let frame = self.event(&tab.session, "Page.screencastFrame").await?;
        let stop = self.send("Page.stopScreencast", json!({}), session).await?;
        let ack = self
            .send(
                "Page.screencastFrameAck",
                json!({"sessionId": frame["sessionId"]}),
                session,
            )
            .await?;
        let (_, _) = tokio::join!(stop, ack);
        Ok(frame["data"].as_str().unwrap_or_default().to_string())
    }

    /// A reset as the server's default runs it, timed by phase: a new context and tab, the
    /// previous one disposed, the page loaded, its first frame. Returns the new tab.
    pub async fn reset(
        &mut self,
        previous: Option<RawTab>,
        url: &str,
    ) -> anyhow::Result<(RawTab, RawReset)> {
        let started = Instant::now();
        let tab = self.open_tab().await?;
        let context = started.elapsed();
        if let Some(previous) = previous {
            self.dispose(previous).await?;
        }
        let started = Instant::now();
        self.load(&tab, url).await?;
        let load = started.elapsed();
        let started = Instant::now();
        self.frame(&tab).await?;
        let screenshot = started.elapsed();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        Ok((
            tab,
            RawReset {
                context: ms(context),
                load: ms(load),
                screenshot: ms(screenshot),
            },
        ))
    }

    /// The browser's process id (it leads the group of its renderers and helpers).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A scroll step on the floor: the wheel, then the next frame.
    pub async fn scroll_step(&mut self, tab: &RawTab, dy: i64) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.scroll(tab, dy).await?;
        self.frame(tab).await?;
        Ok(started.elapsed())
    }
}

impl Drop for RawChromium {
    fn drop(&mut self) {
        self.reader.abort();
        // SAFETY: kill on the process group this browser leads.
        unsafe {
            libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL);
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Answers to their callers, events to the channel, until the pipe closes.
async fn read_messages(
    mut answers: tokio::net::unix::pipe::Receiver,
    pending: Pending,
    events: mpsc::UnboundedSender<Value>,
) {
    let mut message = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match answers.read(&mut buffer).await {
            Ok(read) if read > 0 => read,
            _ => return,
        };
        for part in buffer[..read].split_inclusive(|b| *b == 0) {
            let Some((&0, body)) = part.split_last() else {
                message.extend_from_slice(part);
                continue;
            };
            message.extend_from_slice(body);
            let Ok(value) = serde_json::from_slice::<Value>(&message) else {
                message.clear();
                continue;
            };
            message.clear();
            match value["id"].as_u64() {
                Some(id) => {
                    if let Some(caller) = pending.lock().unwrap().remove(&id) {
                        let _ = caller.send(value);
                    }
                }
                None => {
                    let _ = events.send(value);
                }
            }
        }
    }
}

/// A short unique name for a profile.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{nanos:08x}")
}
