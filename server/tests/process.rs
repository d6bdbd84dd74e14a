//! The server binary as an operator runs it: real Chromium, signals, the Unix socket, leftovers.
//! Each test gives the server its own TMPDIR so profiles and processes can be counted exactly.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browserenv::{BrowserAction, Client, ResetOptions};
use browserenv_server::site::serve_dir;

const BIN: &str = env!("CARGO_BIN_EXE_browserenv-server");

fn scratch_dir() -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("browserenv-proc-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Start the binary; returns the child and the address line it printed.
fn spawn_server(tmp: &Path, envs: &[(&str, &str)]) -> (Child, String) {
    spawn_server_under(&[], tmp, envs)
}

/// The binary as the last argument of `wrapper` (e.g. `unshare … --`; empty: the binary itself).
fn server_under(wrapper: &[&str]) -> Command {
    match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(BIN);
            command
        }
        None => Command::new(BIN),
    }
}

/// Start the binary as the last argument of `wrapper`.
fn spawn_server_under(wrapper: &[&str], tmp: &Path, envs: &[(&str, &str)]) -> (Child, String) {
    let mut command = server_under(wrapper);
    let log = std::fs::File::create(tmp.join("server.log")).unwrap();
    let mut child = command
        .env("TMPDIR", tmp)
        .env("HOME", tmp)
        .env("SBX_SERVICE_PORT", "0")
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("browserenv-server listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, address)
}

fn profiles(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|name| name.starts_with("browserenv-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Processes whose command line mentions `tmp` (each browser carries its profile path; the full
/// Chromium's helpers do too), and every process in their process groups (the headless shell's
/// renderers do not carry it).
fn processes_using(tmp: &Path) -> Vec<i32> {
    let needle = tmp.to_string_lossy().to_string();
    let live: Vec<(i32, String)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_string_lossy().parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // A zombie has exited already; it is only waiting for its parent.
            let zombie = state.split(' ').nth(2) == Some("Z");
            (!zombie).then(|| (pid, String::from_utf8_lossy(&cmdline).to_string()))
        })
        .collect();
    // SAFETY: getpgid on an arbitrary pid only reads.
    let group = |pid: i32| unsafe { libc::getpgid(pid) };
    let groups: Vec<i32> = live
        .iter()
        .filter(|(_, cmdline)| cmdline.contains(&needle))
        .map(|(pid, _)| group(*pid))
        .filter(|pgid| *pgid > 1)
        .collect();
    live.iter()
        .filter(|(pid, cmdline)| cmdline.contains(&needle) || groups.contains(&group(*pid)))
        .map(|(pid, _)| *pid)
        .collect()
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for: {what}");
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
}

#[tokio::test]
async fn sigkill_leaves_no_browser_and_the_next_start_cleans_profiles() {
    let tmp = scratch_dir();
    let pages = serve_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/pages"))
        .await
        .unwrap();
    let (mut server, address) = spawn_server(&tmp, &[]);
    let mut client = Client::connect(&address).await.unwrap();
    client
        .reset(ResetOptions::new(pages.url("long.html")))
        .await
        .unwrap();
    assert!(!processes_using(&tmp).is_empty(), "a browser is running");
    assert!(
        profiles(&tmp).len() >= 2,
        "the session's profile and the spare's"
    );

    signal(&server, libc::SIGKILL);
    server.wait().unwrap();
    eventually("no Chromium process survives its server", || {
        processes_using(&tmp).is_empty()
    });
    let left = profiles(&tmp);
    assert!(
        !left.is_empty(),
        "a SIGKILLed server cannot delete its profiles"
    );

    let (mut second, _) = spawn_server(&tmp, &[]);
    let second_prefix = format!("browserenv-{}-", second.id());
    eventually("leftover profiles are removed at start", || {
        profiles(&tmp).iter().all(|p| p.starts_with(&second_prefix))
    });

    signal(&second, libc::SIGTERM);
    let status = second.wait().unwrap();
    assert!(status.success(), "graceful shutdown exits 0: {status:?}");
    assert!(processes_using(&tmp).is_empty());
    assert!(
        profiles(&tmp).is_empty(),
        "graceful shutdown removes every profile: {:?}",
        profiles(&tmp)
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[tokio::test]
async fn closing_a_session_removes_its_profile_and_sigterm_ends_sessions() {
    let tmp = scratch_dir();
    let pages = serve_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/pages"))
        .await
        .unwrap();
    let (mut server, address) = spawn_server(&tmp, &[("BROWSER_NO_WARM_SPARE", "true")]);
    let mut client = Client::connect(&address).await.unwrap();
    client
        .reset(ResetOptions::new(pages.url("long.html")))
        .await
        .unwrap();
    assert_eq!(profiles(&tmp).len(), 1);
    client.close().await.unwrap();
    eventually("the closed session's profile is removed", || {
        profiles(&tmp).is_empty()
    });
    eventually("its browser is gone", || processes_using(&tmp).is_empty());

    // A running episode is given the drain time; a second signal ends it at once.
    let mut open = Client::connect(&address).await.unwrap();
    open.reset(ResetOptions::new(pages.url("long.html")))
        .await
        .unwrap();
    signal(&server, libc::SIGTERM);
    eventually("readiness turns off", || ready(&address) == Some(503));
    assert!(
        server.try_wait().unwrap().is_none(),
        "the episode is waited for"
    );
    signal(&server, libc::SIGTERM);
    assert!(server.wait().unwrap().success());
    // It is told why before the close.
    match open.closed().await {
        browserenv::ClientError::Server(frame) => {
            assert_eq!(frame.extra["reason"], "SERVER_SHUTDOWN", "{frame:?}")
        }
        other => panic!("no frame saying why: {other}"),
    }
    assert!(processes_using(&tmp).is_empty());
    assert!(profiles(&tmp).is_empty());
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// `GET /ready`'s status, or None when nothing answers.
fn ready(address: &str) -> Option<u16> {
    let authority = address.strip_prefix("http://")?;
    let mut stream = std::net::TcpStream::connect(authority).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET /ready HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.split(' ').nth(1)?.parse().ok()
}

#[tokio::test]
async fn sigterm_drains_the_running_episode_and_its_recording_is_complete() {
    let tmp = scratch_dir();
    let record = tmp.join("recording");
    let pages = serve_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/pages"))
        .await
        .unwrap();
    let (mut server, address) = spawn_server(
        &tmp,
        &[
            ("BROWSER_DRAIN_SECONDS", "60"),
            ("BROWSER_RECORD_DIR", record.to_str().unwrap()),
        ],
    );
    assert_eq!(ready(&address), Some(200));
    let mut running = Client::connect(&address).await.unwrap();
    running
        .reset(ResetOptions::new(pages.url("long.html")).episode_id("drained"))
        .await
        .unwrap();
    let mut idle = Client::connect(&address).await.unwrap();
    idle.state().await.unwrap();

    signal(&server, libc::SIGTERM);
    eventually("readiness turns off at once", || {
        ready(&address) == Some(503)
    });
    // A new session is refused, saying why; the idle one is closed.
    let mut late = Client::connect(&address).await.unwrap();
    let refused = late
        .reset(ResetOptions::new(pages.url("long.html")))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("draining"), "{refused}");
    assert!(matches!(
        idle.closed().await,
        browserenv::ClientError::Closed
    ));
    // The running episode goes on to its end.
    let scrolled = running.step(BrowserAction::scroll(300)).await.unwrap();
    assert!(!scrolled.done);
    let finished = running.step(BrowserAction::finish("done")).await.unwrap();
    assert!(finished.done);
    // Then the server stops by itself, long before the drain time is over.
    let status = server.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(processes_using(&tmp).is_empty());
    let recording = browserenv_collect::trajectory::read(&record).unwrap();
    assert!(recording.problems.is_empty(), "{:?}", recording.problems);
    let episode = recording
        .episodes
        .iter()
        .find(|e| e.episode_id == "drained")
        .expect("the drained episode is recorded");
    assert_eq!(
        (episode.outcome, episode.steps),
        (browserenv_collect::trajectory::Outcome::Finished, 2)
    );
    assert_eq!(recording.episode_steps("drained").len(), 2);
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// One request over the Unix socket; the whole reply.
fn over_socket(path: &Path, head: &str) -> String {
    let mut stream = std::os::unix::net::UnixStream::connect(path).unwrap();
    stream
        .write_all(format!("{head}\r\nHost: sandbox\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
}

#[test]
fn listens_on_a_unix_socket_when_sbx_proxy_dir_is_set() {
    let tmp = scratch_dir();
    let sockets = tmp.join("proxy");
    std::fs::create_dir_all(&sockets).unwrap();
    let (mut server, address) = spawn_server(
        &tmp,
        &[
            ("SBX_PROXY_DIR", sockets.to_str().unwrap()),
            ("SBX_SERVICE_PORT", "8123"),
            ("BROWSER_NO_WARM_SPARE", "true"),
        ],
    );
    let path = sockets.join("8123.sock");
    assert_eq!(address, format!("unix:{}", path.display()));
    let reply = over_socket(&path, "GET /health HTTP/1.1");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with(r#"{"status":"healthy"}"#), "{reply}");
    signal(&server, libc::SIGTERM);
    server.wait().unwrap();
    // It says what it does not check, and that without a token the socket is the only lock.
    let log = std::fs::read_to_string(tmp.join("server.log")).unwrap();
    assert!(
        log.contains("Host is not checked; no token (BROWSER_API_TOKEN)"),
        "{log}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A token set for a Unix-socket server is asked for, as on TCP.
#[test]
fn a_unix_socket_server_honours_its_token() {
    let tmp = scratch_dir();
    let sockets = tmp.join("proxy");
    std::fs::create_dir_all(&sockets).unwrap();
    let (mut server, _) = spawn_server(
        &tmp,
        &[
            ("SBX_PROXY_DIR", sockets.to_str().unwrap()),
            ("SBX_SERVICE_PORT", "8124"),
            ("BROWSER_NO_WARM_SPARE", "true"),
            ("BROWSER_API_TOKEN", "unix-socket-token"),
        ],
    );
    let path = sockets.join("8124.sock");
    let refused = over_socket(&path, "GET /sessions HTTP/1.1");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let allowed = over_socket(
        &path,
        "GET /sessions HTTP/1.1\r\nAuthorization: Bearer unix-socket-token",
    );
    assert!(allowed.starts_with("HTTP/1.1 200"), "{allowed}");
    signal(&server, libc::SIGTERM);
    server.wait().unwrap();
    let log = std::fs::read_to_string(tmp.join("server.log")).unwrap();
    assert!(
        log.contains("every route but /health and /ready needs the token"),
        "{log}"
    );
    assert!(
        !log.contains("unix-socket-token"),
        "the token was logged: {log}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn a_public_address_needs_a_token_or_insecure() {
    let refused = Command::new(BIN)
        .args(["--host", "0.0.0.0", "--port", "0"])
        .env_remove("BROWSER_API_TOKEN")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr)
        .contains("refusing to serve 0.0.0.0 without a token"));
    // An on/off setting in the environment: 0 is off, 1 (or yes, true) is on.
    let off = Command::new(BIN)
        .args(["--host", "0.0.0.0", "--port", "0"])
        .env_remove("BROWSER_API_TOKEN")
        .env("BROWSER_INSECURE", "0")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&off.stderr).contains("without a token"));
    for (extra, insecure) in [
        (["--insecure", ""], None),
        (["--token", "t0ken"], None),
        (["", ""], Some("1")),
        (["", ""], Some("yes")),
    ] {
        let tmp = scratch_dir();
        let mut args = vec!["--host", "0.0.0.0", "--port", "0", "--no-warm-spare"];
        args.extend(extra.iter().filter(|a| !a.is_empty()));
        let mut command = Command::new(BIN);
        if let Some(value) = insecure {
            command.env("BROWSER_INSECURE", value);
        }
        let mut child = command
            .args(&args)
            .env("TMPDIR", &tmp)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with("browserenv-server listening on http://0.0.0.0:"),
            "{extra:?}: {line}"
        );
        signal(&child, libc::SIGTERM);
        assert!(child.wait().unwrap().success());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}

#[test]
fn an_unreachable_browser_url_stops_the_server_with_a_clear_message() {
    let output = Command::new(BIN)
        .args(["--port", "0", "--browser-url", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--browser-url http://127.0.0.1:1"),
        "{stderr}"
    );
    assert!(stderr.contains("cannot connect"), "{stderr}");
}

#[test]
fn blocking_private_networks_needs_our_own_browsers() {
    let output = Command::new(BIN)
        .args(["--port", "0", "--browser-url", "http://127.0.0.1:1"])
        .env("BROWSER_BLOCK_PRIVATE_NETWORKS", "true")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("BROWSER_BLOCK_PRIVATE_NETWORKS needs browsers of our own"),
        "{stderr}"
    );
}

#[test]
fn a_browser_url_token_is_never_shown() {
    let output = Command::new(BIN)
        .args([
            "--port",
            "0",
            "--browser-url",
            "ws://127.0.0.1:1/devtools?token=pool-s3cret-42",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!said.contains("pool-s3cret-42"), "{said}");
    assert!(
        said.contains("ws://127.0.0.1:1/devtools?token=***"),
        "{said}"
    );
}

#[test]
fn invalid_settings_stop_the_server_with_the_settings_name() {
    for (name, value) in [
        ("BROWSER_MAX_STEPS", "0"),
        ("BROWSER_ACTION_WAIT_SECONDS", "11"),
        ("BROWSER_EXPLICIT_WAIT_SECONDS", "-1"),
        ("BROWSER_SESSION_TIMEOUT_SECONDS", "-5"),
        ("BROWSER_WS_PING_INTERVAL_SECONDS", "0"),
        ("BROWSER_WS_PING_TIMEOUT_SECONDS", "601"),
        ("BROWSER_HEADER_READ_TIMEOUT_SECONDS", "0"),
        ("BROWSER_MAX_CONNECTIONS", "2"),
        ("BROWSER_DRAIN_SECONDS", "-1"),
        ("BROWSER_PEERS", "https://replica:8000"),
    ] {
        let output = Command::new(BIN)
            .args(["--port", "0"])
            .env(name, value)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{name}={value}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(name), "{name}: {stderr}");
    }
}

/// (pid, parent pid, state) of every process.
fn process_table() -> Vec<(i32, i32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_string_lossy().parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let mut after_name = stat.rsplit_once(')')?.1.split_whitespace();
            let state = after_name.next()?.to_string();
            let parent = after_name.next()?.parse().ok()?;
            Some((pid, parent, state))
        })
        .collect()
}

fn children_of(parent: i32) -> Vec<(i32, String)> {
    process_table()
        .into_iter()
        .filter(|(_, p, _)| *p == parent)
        .map(|(pid, _, state)| (pid, state))
        .collect()
}

#[tokio::test]
async fn as_pid_1_it_reaps_the_orphans_of_a_killed_browser_and_passes_sigterm_on() {
    let tmp = scratch_dir();
    let pages = serve_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/pages"))
        .await
        .unwrap();
    // A new pid namespace in which the server is pid 1, as in a container without `--init`.
    // Root may create one directly; anyone else inside a user namespace of their own.
    // SAFETY: geteuid has no preconditions.
    let wrapper: &[&str] = if unsafe { libc::geteuid() } == 0 {
        &["unshare", "--pid", "--fork", "--"]
    } else {
        &[
            "unshare",
            "--user",
            "--map-root-user",
            "--pid",
            "--fork",
            "--",
        ]
    };
    let (mut unshare, address) =
        spawn_server_under(wrapper, &tmp, &[("BROWSER_NO_WARM_SPARE", "true")]);
    let mut client = Client::connect(&address).await.unwrap();
    client
        .reset(ResetOptions::new(pages.url("index.html")))
        .await
        .unwrap();
    let init = children_of(unshare.id() as i32)
        .first()
        .expect("unshare's child: the namespace's pid 1")
        .0;
    // The server is pid 1's child when pid 1 became a reaper, else pid 1 itself.
    let server = children_of(init)
        .iter()
        .find(|(pid, _)| {
            std::fs::read_link(format!("/proc/{pid}/exe")).ok()
                == std::fs::read_link(format!("/proc/{init}/exe")).ok()
        })
        .map_or(init, |(pid, _)| *pid);
    let browsers = processes_using(&tmp);
    let browser = *browsers
        .iter()
        .find(|pid| children_of(server).iter().any(|(child, _)| child == *pid))
        .expect("the session's Chromium, a child of the server");
    // SAFETY: killing the browser of our own test server.
    unsafe {
        libc::kill(browser, libc::SIGKILL);
    }
    // The next episode replaces the dead browser (the server waits for its own child).
    client
        .reset(ResetOptions::new(pages.url("index.html")))
        .await
        .unwrap();
    eventually("every orphan of the killed browser is reaped", || {
        let zombies: Vec<_> = [init, server]
            .iter()
            .flat_map(|parent| children_of(*parent))
            .filter(|(_, state)| state == "Z")
            .collect();
        zombies.is_empty()
    });

    // `docker stop`: SIGTERM to pid 1 ends the server gracefully, and pid 1 with its status.
    signal_pid(init, libc::SIGTERM);
    let status = unshare.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(processes_using(&tmp).is_empty());
    assert!(profiles(&tmp).is_empty(), "{:?}", profiles(&tmp));
    std::fs::remove_dir_all(&tmp).unwrap();
}

fn signal_pid(pid: i32, signal: i32) {
    // SAFETY: signalling a process of our own test.
    unsafe {
        libc::kill(pid, signal);
    }
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[tokio::test]
async fn as_another_user_than_root_chromium_runs_in_its_sandbox() {
    let tmp = scratch_dir();
    let pages = serve_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/pages"))
        .await
        .unwrap();
    // As root, the test runs the server as `nobody`.
    let wrapper: &[&str] = if running_as_root() {
        std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        &[
            "setpriv",
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "--",
        ]
    } else {
        &[]
    };
    let (mut server, address) =
        spawn_server_under(wrapper, &tmp, &[("BROWSER_NO_WARM_SPARE", "true")]);
    let mut client = Client::connect(&address).await.unwrap();
    let result = client
        .reset(ResetOptions::new(pages.url("index.html")))
        .await
        .unwrap();
    assert_eq!(
        result.observation.error, "",
        "{:?}",
        result.observation.metadata
    );
    assert!(result.observation.screenshot.len() > 1000);
    let log = std::fs::read_to_string(tmp.join("server.log")).unwrap();
    assert!(log.contains("Chromium runs in its sandbox"), "{log}");

    let chromium = processes_using(&tmp);
    assert!(!chromium.is_empty());
    let namespace = |pid: i32| std::fs::read_link(format!("/proc/{pid}/ns/user")).ok();
    let server_namespace = namespace(server.id() as i32);
    let mut sandboxed = 0;
    for pid in &chromium {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains("--no-sandbox"),
            "{}",
            String::from_utf8_lossy(&cmdline)
        );
        if String::from_utf8_lossy(&cmdline).contains("--type=renderer")
            && namespace(*pid) != server_namespace
        {
            sandboxed += 1;
        }
    }
    assert!(
        sandboxed > 0,
        "renderers run in a user namespace of their own (the sandbox)"
    );
    client.close().await.unwrap();
    signal(&server, libc::SIGTERM);
    assert!(server.wait().unwrap().success());
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[tokio::test]
async fn as_root_chromium_runs_without_its_sandbox_and_says_why() {
    // Root, or root of a user namespace of our own when the test is not run as root.
    let wrapper: &[&str] = if running_as_root() {
        &[]
    } else {
        &["unshare", "--user", "--map-root-user", "--"]
    };
    let tmp = scratch_dir();
    let pages = serve_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/pages"))
        .await
        .unwrap();
    let (mut server, address) =
        spawn_server_under(wrapper, &tmp, &[("BROWSER_NO_WARM_SPARE", "true")]);
    let mut client = Client::connect(&address).await.unwrap();
    let result = client
        .reset(ResetOptions::new(pages.url("index.html")))
        .await
        .unwrap();
    assert_eq!(result.observation.error, "");
    let log = std::fs::read_to_string(tmp.join("server.log")).unwrap();
    assert!(
        log.contains("Chromium runs without its sandbox (--no-sandbox): the server runs as root")
            && log.contains("BROWSER_SANDBOX"),
        "{log}"
    );
    client.close().await.unwrap();
    signal(&server, libc::SIGTERM);
    assert!(server.wait().unwrap().success());

    // `on` refuses to start rather than run without it.
    let mut command = server_under(wrapper);
    let refused = command
        .args(["--port", "0", "--no-warm-spare"])
        .env("BROWSER_SANDBOX", "on")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "BROWSER_SANDBOX=on, but Chromium's sandbox cannot work here: the server runs as root"
        ),
        "{stderr}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn a_second_server_recording_into_the_same_folder_is_refused() {
    let tmp = scratch_dir();
    let record = tmp.join("recording");
    let record_dir = record.to_str().unwrap();
    let (mut first, _) = spawn_server(&tmp, &[("BROWSER_RECORD_DIR", record_dir)]);
    // The address is announced before the recorder opens the folder: wait for its lock.
    let lock = record.join(browserenv_collect::trajectory::LOCK_FILE);
    eventually("the first server's recording lock", || {
        std::fs::read_to_string(&lock).is_ok_and(|pid| pid == first.id().to_string())
    });
    let second = Command::new(BIN)
        .env("TMPDIR", &tmp)
        .env("SBX_SERVICE_PORT", "0")
        .env("BROWSER_RECORD_DIR", record_dir)
        .output()
        .unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot record into {record_dir}: {record_dir} is being recorded by another process \
             or recorder (lock {}, process {})",
            lock.display(),
            first.id()
        )),
        "{stderr}"
    );
    signal(&first, libc::SIGTERM);
    assert!(first.wait().unwrap().success());
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// The inodes of the TCP sockets listening on this machine (IPv4 and IPv6).
fn listening_inodes() -> Vec<String> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // `st` 0A is LISTEN; the inode is the tenth field.
            if fields.get(3) == Some(&"0A") {
                inodes.push(fields[9].to_string());
            }
        }
    }
    inodes
}

/// Whether `pid` holds a listening TCP socket.
fn listens(pid: i32, listening: &[String]) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|target| {
                    let target = target.to_string_lossy();
                    listening
                        .iter()
                        .any(|inode| target == format!("socket:[{inode}]"))
                })
            })
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn chromium_gets_no_secrets_of_the_server_and_no_port_anyone_could_drive_it_on() {
    let tmp = scratch_dir();
    let pages = serve_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/pages"))
        .await
        .unwrap();
    let (mut server, address) = spawn_server(
        &tmp,
        &[
            ("BROWSER_API_TOKEN", "token-canary-7f3a"),
            ("AWS_SECRET_ACCESS_KEY", "cloud-canary-91bd"),
        ],
    );
    let mut client = Client::connect_with_token(&address, Some("token-canary-7f3a"))
        .await
        .unwrap();
    client
        .reset(ResetOptions::new(pages.url("long.html")))
        .await
        .unwrap();
    let browsers = processes_using(&tmp);
    assert!(
        browsers.len() >= 3,
        "a browser and its helpers: {browsers:?}"
    );
    let listening = listening_inodes();
    for pid in &browsers {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let environ = String::from_utf8_lossy(&environ);
        for secret in [
            "token-canary-7f3a",
            "cloud-canary-91bd",
            "BROWSER_API_TOKEN",
        ] {
            assert!(
                !environ.contains(secret),
                "process {pid} has {secret} in its environment"
            );
        }
        let cmdline = String::from_utf8_lossy(
            &std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default(),
        )
        .to_string();
        assert!(!cmdline.contains("--remote-debugging-port"), "{cmdline}");
        if cmdline.contains("--user-data-dir=") {
            // The browser's temporary files go where the server's do (its profile path is too
            // long for them here), not to the /tmp the server was told not to use (unless the
            // server's is too long for them as well). Its helpers' environment cannot be read:
            // their titles are written over it.
            let tmpdir = environ
                .split('\0')
                .find_map(|variable| variable.strip_prefix("TMPDIR="));
            let fits = tmp.as_os_str().len() + 46 < 108;
            assert_eq!(
                tmpdir,
                fits.then(|| tmp.to_str().unwrap()),
                "process {pid}: {cmdline}"
            );
        }
        assert!(
            !listens(*pid, &listening),
            "process {pid} listens on a TCP port: {cmdline}"
        );
    }
    // The server itself listens on its API port alone: the DevTools bridge took its one
    // connection and closed.
    let server_pid = server.id() as i32;
    let own: Vec<String> = listening
        .iter()
        .filter(|inode| listens_on(server_pid, inode))
        .cloned()
        .collect();
    assert_eq!(
        own.len(),
        1,
        "the server listens on more than its API port: {own:?}"
    );
    // The profiles are the server's user's alone, and so is what is made inside them.
    let profiles = profiles(&tmp);
    assert!(!profiles.is_empty());
    for profile in profiles {
        let mode = |path: &Path| {
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions())
                & 0o777
        };
        let profile = tmp.join(&profile);
        assert_eq!(mode(&profile), 0o700, "{}", profile.display());
        for inside in ["Default", "t"] {
            let inside = profile.join(inside);
            assert_eq!(mode(&inside) & 0o077, 0, "{}", inside.display());
        }
    }
    client.close().await.unwrap();
    signal(&server, libc::SIGTERM);
    assert!(server.wait().unwrap().success());
    std::fs::remove_dir_all(&tmp).unwrap();
}

fn listens_on(pid: i32, inode: &str) -> bool {
    listens(pid, &[inode.to_string()])
}
