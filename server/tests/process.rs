//! The server binary as an operator runs it: real Chromium, signals, the Unix socket, leftovers.
//! Each test gives the server its own TMPDIR so profiles and processes can be counted exactly.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browserenv::{Client, ResetOptions};
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
    let mut child = Command::new(BIN)
        .env("TMPDIR", tmp)
        .env("SBX_SERVICE_PORT", "0")
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
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

/// Processes whose command line mentions `tmp` (Chromium and its helpers carry the profile path).
fn processes_using(tmp: &Path) -> Vec<i32> {
    let needle = tmp.to_string_lossy().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_string_lossy().parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // A zombie has exited already; it is only waiting for its parent.
            let zombie = state.split(' ').nth(2) == Some("Z");
            (!zombie && String::from_utf8_lossy(&cmdline).contains(&needle)).then_some(pid)
        })
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

    // A session that is open when the server is told to stop is ended, not waited for.
    let mut open = Client::connect(&address).await.unwrap();
    open.reset(ResetOptions::new(pages.url("long.html")))
        .await
        .unwrap();
    signal(&server, libc::SIGTERM);
    assert!(server.wait().unwrap().success());
    assert!(processes_using(&tmp).is_empty());
    assert!(profiles(&tmp).is_empty());
    std::fs::remove_dir_all(&tmp).unwrap();
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
    let mut stream = std::os::unix::net::UnixStream::connect(&path).unwrap();
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: sandbox\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with(r#"{"status":"healthy"}"#), "{reply}");
    signal(&server, libc::SIGTERM);
    server.wait().unwrap();
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
    for extra in [["--insecure", ""], ["--token", "t0ken"]] {
        let tmp = scratch_dir();
        let mut args = vec!["--host", "0.0.0.0", "--port", "0", "--no-warm-spare"];
        args.extend(extra.iter().filter(|a| !a.is_empty()));
        let mut child = Command::new(BIN)
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
