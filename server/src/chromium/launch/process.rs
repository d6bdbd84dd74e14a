//! Chromium processes and their profiles: launched by us (not by chromiumoxide) so that
//! - each browser gets the kernel's parent-death signal: a SIGKILLed server leaves no browser behind;
//! - each browser leads its own process group: closing kills renderers and helpers with it;
//! - every live browser is in a registry that shutdown empties;
//! - profiles carry the server's pid in their name, so the next start can remove what a killed
//!   server left behind.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};

/// Prefix of every profile directory: `browserenv-<server pid>-<uuid>`.
const PROFILE_PREFIX: &str = "browserenv-";

/// The flags every browser is launched with, each with why this server wants it (measured where
/// it says; see docs/ARCHITECTURE.md, "Design decisions"). `launch` adds the ones that depend on
/// the settings: `--no-sandbox`, the WebRTC policy, V8's heap limit, the profile.
pub const FLAGS: &[&str] = &[
    // No window: servers and containers have no display. The headless shell is headless anyway;
    // this picks headless mode when the full browser is configured (`BROWSER_CHROMIUM`).
    "--headless",
    // No hardware GPU (servers have none, and drivers differ): pages are drawn in software
    // (SwiftShader), the same pixels on every machine.
    "--disable-gpu",
    // Shared memory as files in TMPDIR (inside the profile, `launch`), not in /dev/shm, which
    // Docker caps at 64 MB: renderers crash when it fills.
    "--disable-dev-shm-usage",
    // No HTTP/3 (QUIC, over UDP): requests go over TCP as they do through the egress proxy
    // (`egress.rs`), so pages load alike with and without it and where UDP is dropped.
    "--disable-quic",
    // No first-run welcome, import or default-browser prompts in a fresh profile per browser.
    "--no-first-run",
    "--no-default-browser-check",
    // No requests of Chromium's own (variations, safe-browsing and other updates) on a closed
    // network: no retries, nothing in the network's logs that no page asked for.
    "--disable-background-networking",
    // No component downloads (CRLSets, dictionaries, Widevine) for a profile that lives one browser.
    "--disable-component-update",
    // No Google account sync.
    "--disable-sync",
    // No extensions nor default apps: nothing runs in a page that the page did not bring.
    "--disable-extensions",
    "--disable-default-apps",
    // Features that call Google: the translate bar, cast discovery (UDP on the local network),
    // page hints, autofill's form queries, and the leak check that would send a hash of a
    // password a person types during a hand-off.
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,PasswordLeakDetection",
    // Chromedriver (the seed's Selenium) disables the popup blocker too: window.open from a click works.
    "--disable-popup-blocking",
    // An animated wheel scroll would still be moving when the screenshot is taken.
    "--disable-smooth-scrolling",
    // A changed tile is drawn whole, not only its changed rectangle into its old pixels: an
    // antialiased edge crossing that rectangle came out up to 23 levels different from the same
    // page drawn whole (corners.html: 10 rounds of 12), so the same replayed episode now and then
    // gave other pixels (tests/tests/settle.rs, a_region_drawn_again_has_the_pixels_of_the_whole_page).
    "--disable-partial-raster",
    // Saved passwords in the profile, not in a desktop keyring (GNOME Keyring, KWallet) that a
    // server lacks and a desktop would prompt for; the profile is deleted with the browser.
    "--password-store=basic",
    // The same for macOS's Keychain. No effect on Linux, the only system this server launches
    // on (prctl, /proc); kept with the usual automation flags.
    "--use-mock-keychain",
    // An agent's pages make no sound on the machine running the server (or the TUI).
    "--mute-audio",
    // The seed's 800x600 window. Alone it gives an 800x457 viewport: every tab also gets the
    // exact 800x600 at scale 1 (`Emulation.setDeviceMetricsOverride`, `page_events.rs`), which
    // `connect.rs` checks before the first navigation.
    "--window-size=800,600",
    // DevTools on fds 3 and 4, open to the server alone, not on a TCP port (`pipe.rs`).
    "--remote-debugging-pipe",
    // The first tab opens blank rather than on the new-tab page, which would load content of
    // its own; episodes open tabs in contexts of their own (`connect.rs`).
    "about:blank",
];

/// What of the server's environment Chromium gets: what it needs to find its files, fonts, time
/// zone and language, and a proxy the environment sets for it. Nothing else: the server's
/// environment holds its token, a remote browser's URL, a cloud's credentials, which a browser
/// (and every renderer a page runs in) has no business with. TMPDIR is its own (`launch`).
const ENVIRONMENT: &[&str] = &[
    "HOME",
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "FONTCONFIG_FILE",
    "FONTCONFIG_PATH",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
];

/// Profile preferences: no password manager, no download prompt.
const PREFERENCES: &str = r#"{"credentials_enable_service":false,"profile":{"password_manager_enabled":false,"password_manager_leak_detection":false},"download":{"prompt_for_download":false},"safebrowsing":{"enabled":false}}"#;

/// A launched Chromium: its process and profile. Dropping it kills the process group and removes
/// the profile (off the async runtime).
pub struct ChromiumProcess {
    pid: u32,
    /// Set when a renderer was killed for its memory (see `memory.rs`).
    memory_kill: super::memory::KillReport,
    profile: PathBuf,
    /// Taken by `Drop` to reap the process.
    child: Option<Child>,
    /// The server's ends of the DevTools pipes, until `serve_devtools` offers them.
    devtools: Option<super::pipe::ServerEnds>,
    /// Where chromiumoxide connects, once `serve_devtools` has run.
    pub websocket_url: String,
}

fn live() -> &'static Mutex<HashMap<u32, PathBuf>> {
    static LIVE: OnceLock<Mutex<HashMap<u32, PathBuf>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// The kernel sends the parent-death signal when the *thread* that forked the child exits, so every
/// browser is forked from one thread that lives as long as the server.
fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("chromium-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("cannot start the chromium spawner thread");
        Mutex::new(tx)
    })
}

impl ChromiumProcess {
    /// Start Chromium with a fresh profile and wait for its DevTools endpoint. Blocking: call from
    /// `spawn_blocking`.
    pub fn launch(config: &crate::chromium::ChromiumConfig) -> anyhow::Result<Self> {
        let (executable, profile_root) = (&config.executable, &config.profile_root);
        let (timeout, sandbox) = (config.launch_timeout, config.sandbox);
        let renderer_memory_mb = config.renderer_memory_mb;
        let mut unique = uuid::Uuid::new_v4().simple().to_string();
        unique.truncate(12);
        let profile = profile_root.join(format!("{PROFILE_PREFIX}{}-{unique}", owner_tag()));
        // The profile holds the episode's cookies and storage: the server's user's alone, from
        // the moment it exists (made 0755 by the umask, then narrowed, it could be opened in
        // between, and what is made inside it would stay as the umask left it).
        let private_dir = |dir: &Path| {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("cannot create the profile {}", dir.display()))
        };
        std::fs::create_dir_all(profile_root)
            .with_context(|| format!("cannot create {}", profile_root.display()))?;
        private_dir(&profile)?;
        private_dir(&profile.join("Default"))?;
        std::fs::write(profile.join("Default").join("Preferences"), PREFERENCES)?;
        // Chromium's own temporary files (shared-memory fallbacks, the singleton socket) go inside
        // the profile, so removing the profile removes them too, even after a SIGKILL. A Unix
        // socket path is limited to 107 bytes and Chromium appends ~46 to TMPDIR: with a long
        // profile path, they go to the system's TMPDIR (where that fits; else Chromium's default,
        // /tmp), not to a /tmp the operator may have moved them away from.
        let scratch = profile.join("t");
        private_dir(&scratch)?;
        let fits = |dir: &std::ffi::OsStr| dir.len() + 46 < 108;
        let tmpdir = if fits(scratch.as_os_str()) {
            Some(scratch.into_os_string())
        } else {
            std::env::var_os("TMPDIR").filter(|dir| !dir.is_empty() && fits(dir))
        };

        let mut command = Command::new(launchable(executable));
        command.env_clear();
        for name in ENVIRONMENT {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        if !sandbox {
            // Only where the sandbox cannot work (as root, without user namespaces): `sandbox.rs`.
            command.arg("--no-sandbox");
        }
        if config.egress.is_some() || config.replays {
            // WebRTC sends UDP to any address it is given, past the egress proxy (which carries
            // TCP only): with private networks blocked, or replays that must reach nothing, no
            // UDP that skips the proxy.
            command.arg("--force-webrtc-ip-handling-policy=disable_non_proxied_udp");
        }
        if renderer_memory_mb > 0 {
            // V8's heap of each renderer; the rest is the watchdog's (memory.rs).
            command.arg(format!(
                "--js-flags=--max-old-space-size={renderer_memory_mb}"
            ));
        }
        command
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(tmpdir) = tmpdir {
            command.env("TMPDIR", tmpdir);
        }
        let parent = std::process::id() as libc::pid_t;
        let (devtools, browser_ends) = super::pipe::pipes()?;
        let (commands, answers) = browser_ends.raw();
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || {
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The server may have died between fork and prctl.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                super::pipe::install(commands, answers)
            });
        }
        let (reply_tx, reply_rx) = mpsc::channel();
        spawner()
            .lock()
            .map_err(|_| anyhow!("chromium spawner poisoned"))?
            .send((command, reply_tx))
            .map_err(|_| anyhow!("chromium spawner stopped"))?;
        let spawned = reply_rx
            .recv()
            .map_err(|_| anyhow!("chromium spawner stopped"))?;
        // The browser holds its ends now; ours close, so its exit closes the pipes.
        drop(browser_ends);
        let mut child = match spawned {
            Ok(child) => child,
            Err(err) => {
                let _ = std::fs::remove_dir_all(&profile);
                return Err(err).with_context(|| {
                    format!(
                        "cannot run {} (install it with `apt-get install chromium-headless-shell` or pass --chromium PATH)",
                        executable.display()
                    )
                });
            }
        };
        let pid = child.id();
        if let Ok(mut map) = live().lock() {
            map.insert(pid, profile.clone());
        }
        let stderr = child.stderr.take().context("chromium stderr")?;
        let memory_kill = if renderer_memory_mb > 0 {
            super::memory::watch(pid, renderer_memory_mb)
        } else {
            Default::default()
        };
        let output = drain_stderr(stderr)?;
        let mut process = ChromiumProcess {
            pid,
            memory_kill,
            profile,
            child: Some(child),
            devtools: None,
            websocket_url: String::new(),
        };
        match devtools.wait_ready(timeout) {
            Ok(_) => {
                process.devtools = Some(devtools);
                Ok(process)
            }
            // Dropping the process kills it and removes its profile.
            Err(err) if err.kind() == std::io::ErrorKind::TimedOut => {
                bail!("chromium did not answer on its DevTools pipe within {timeout:?}")
            }
            Err(err) => {
                // Its last words are on stderr; the reader has them once the pipe closed.
                std::thread::sleep(Duration::from_millis(50));
                let said = output
                    .lock()
                    .map(|lines| lines.join("\n"))
                    .unwrap_or_default();
                bail!("chromium exited before it was ready ({err}): {said}")
            }
        }
    }

    /// Offer the DevTools pipe to chromiumoxide (`pipe.rs`) and keep its URL.
    pub async fn serve_devtools(&mut self) -> anyhow::Result<()> {
        let devtools = self
            .devtools
            .take()
            .context("the DevTools pipe is served already")?;
        self.websocket_url = devtools
            .serve()
            .await
            .context("cannot serve the DevTools pipe")?;
        Ok(())
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Why a renderer of this browser was killed for its memory, once.
    pub fn take_memory_kill(&self) -> Option<String> {
        self.memory_kill
            .lock()
            .ok()
            .and_then(|mut kill| kill.take())
    }
}

/// Debian's `/usr/bin/chromium-headless-shell` is a shell script that runs the browser as its
/// child instead of replacing itself with it: the parent-death signal would reach only the shell,
/// and a SIGKILLed server would leave the browser running (`server/tests/process.rs`). The binary
/// it runs is launched instead.
fn launchable(executable: &Path) -> &Path {
    const DEBIAN_SCRIPT: &str = "/usr/bin/chromium-headless-shell";
    let binary = Path::new(crate::chromium::HEADLESS_SHELL);
    if executable == Path::new(DEBIAN_SCRIPT) && binary.exists() {
        binary
    } else {
        executable
    }
}

/// Chromium's stderr, read to its end by a thread of its own so Chromium never blocks on a full
/// pipe; the last lines are kept for the error of a browser that exits before it is ready.
fn drain_stderr(
    stderr: std::process::ChildStderr,
) -> anyhow::Result<std::sync::Arc<Mutex<Vec<String>>>> {
    const KEPT: usize = 40;
    let lines = std::sync::Arc::new(Mutex::new(Vec::new()));
    let kept = lines.clone();
    std::thread::Builder::new()
        .name("chromium-stderr".into())
        .spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                tracing::trace!(target: "chromium", "{line}");
                if let Ok(mut kept) = kept.lock() {
                    if kept.len() == KEPT {
                        kept.remove(0);
                    }
                    kept.push(line);
                }
            }
        })?;
    Ok(lines)
}

impl Drop for ChromiumProcess {
    fn drop(&mut self) {
        super::memory::unwatch(self.pid);
        kill_group(self.pid);
        let child = self.child.take();
        let profile = std::mem::take(&mut self.profile);
        let pid = self.pid;
        // Reaping and deleting the profile can take a few ms; keep it off the caller's path.
        let cleanup = move || {
            if let Some(mut child) = child {
                let _ = child.wait();
            }
            remove_profile(&profile);
            if let Ok(mut map) = live().lock() {
                map.remove(&pid);
            }
        };
        if std::thread::Builder::new()
            .name("chromium-cleanup".into())
            .spawn(cleanup)
            .is_err()
        {
            tracing::warn!("could not start a cleanup thread for chromium {pid}");
        }
    }
}

fn kill_group(pid: u32) {
    // SAFETY: plain syscalls on a process group we created.
    unsafe {
        libc::killpg(pid as libc::pid_t, libc::SIGKILL);
    }
}

fn remove_profile(profile: &Path) {
    if profile.as_os_str().is_empty() {
        return;
    }
    // Chromium's helpers may still be writing for a moment after the kill.
    for _ in 0..5 {
        match std::fs::remove_dir_all(profile) {
            Ok(()) => return,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    tracing::warn!("could not remove the profile {}", profile.display());
}

/// SIGKILL every browser this server still has, at once, without waiting for any: the first thing
/// to do when the process must end now (the terminal UI's exits).
pub fn kill_all() {
    let pids: Vec<u32> = live()
        .lock()
        .map(|map| map.keys().copied().collect())
        .unwrap_or_default();
    for pid in pids {
        kill_group(pid);
    }
}

/// Kill every browser this server still has and remove their profiles. Called on shutdown.
pub fn shutdown_all() {
    kill_all();
    let entries: Vec<(u32, PathBuf)> = live()
        .lock()
        .map(|map| map.iter().map(|(pid, path)| (*pid, path.clone())).collect())
        .unwrap_or_default();
    for (pid, profile) in entries {
        // SAFETY: reap if it is our child; harmless otherwise.
        unsafe {
            libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
        }
        remove_profile(&profile);
        if let Ok(mut map) = live().lock() {
            map.remove(&pid);
        }
    }
}

/// How many browsers are alive (launched and not yet cleaned up).
pub fn live_count() -> usize {
    live().lock().map(|map| map.len()).unwrap_or(0)
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() == libc::EPERM }
}

/// When a process started, in clock ticks since boot (field 22 of `/proc/<pid>/stat`). A pid
/// alone does not name a server: in a container the server is pid 1 after every restart, so
/// a profile is owned by a pid *and* the start time of the process that had it.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: count after it.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// `<pid>-<start time>`: the part of a profile's name that says which server made it.
fn owner_tag() -> String {
    let pid = std::process::id();
    format!("{pid}-{}", start_time(pid).unwrap_or(0))
}

/// Whether the server that made the profile `name` is still running (this one included).
fn owner_running(name: &str) -> Option<bool> {
    let mut parts = name.strip_prefix(PROFILE_PREFIX)?.split('-');
    let pid: u32 = parts.next()?.parse().ok()?;
    let started: Option<u64> = match (parts.next(), parts.next()) {
        (Some(started), Some(_unique)) => Some(started.parse().ok()?),
        // `<pid>-<unique>`: written by a version before start times were recorded.
        (Some(_unique), None) => None,
        _ => return None,
    };
    if !pid_alive(pid as i32) {
        return Some(false);
    }
    Some(match started {
        Some(started) => start_time(pid).is_none_or(|now| now == started),
        None => pid != std::process::id(),
    })
}

/// Remove what an earlier server that was killed left behind: Chromium processes still running
/// with a profile of a dead server, and the profiles themselves. Returns how many were cleaned.
pub fn clean_leftovers(profile_root: &Path) -> usize {
    let mut cleaned = 0;
    let Ok(entries) = std::fs::read_dir(profile_root) else {
        return 0;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if owner_running(&name) != Some(false) {
            continue;
        }
        kill_processes_using(&entry.path());
        remove_profile(&entry.path());
        cleaned += 1;
    }
    cleaned
}

/// Kill processes whose command line names this profile (an orphan that escaped the death signal).
fn kill_processes_using(profile: &Path) {
    let needle = format!("--user-data-dir={}", profile.display());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for proc_entry in procs.flatten() {
        let Ok(pid) = proc_entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(proc_entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == needle.as_bytes())
        {
            // SAFETY: killing a leftover browser of ours.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_of_dead_servers_are_removed_and_live_ones_kept() {
        let root =
            std::env::temp_dir().join(format!("browserenv-test-root-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&root).unwrap();
        // pid 1 never belongs to a test server but is alive; a huge pid is dead.
        let init_started = start_time(1).unwrap();
        let alive = root.join(format!("{PROFILE_PREFIX}1-{init_started}-abc"));
        let alive_old_format = root.join(format!("{PROFILE_PREFIX}1-abc"));
        let dead = root.join(format!("{PROFILE_PREFIX}999999999-5-abc"));
        let dead_old_format = root.join(format!("{PROFILE_PREFIX}999999999-abc"));
        let mine = root.join(format!("{PROFILE_PREFIX}{}-abc", owner_tag()));
        // This pid, but another process that had it before (a container's pid 1 after a restart).
        let my_pid_reused = root.join(format!(
            "{PROFILE_PREFIX}{}-{}-abc",
            std::process::id(),
            start_time(std::process::id()).unwrap() + 1
        ));
        let pid_1_reused = root.join(format!("{PROFILE_PREFIX}1-{}-abc", init_started + 1));
        let unrelated = root.join("something-else");
        for dir in [
            &alive,
            &alive_old_format,
            &dead,
            &dead_old_format,
            &mine,
            &my_pid_reused,
            &pid_1_reused,
            &unrelated,
        ] {
            std::fs::create_dir_all(dir.join("Default")).unwrap();
        }
        assert_eq!(clean_leftovers(&root), 4);
        for gone in [&dead, &dead_old_format, &my_pid_reused, &pid_1_reused] {
            assert!(!gone.exists(), "{}", gone.display());
        }
        for kept in [&alive, &alive_old_format, &mine, &unrelated] {
            assert!(kept.exists(), "{}", kept.display());
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
