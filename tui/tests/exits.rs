//! Every way out ends the UI within a second, with the terminal put back and no Chromium left:
//! SIGTERM, SIGHUP, and the terminal going away (its pty closed), both as the controlling
//! terminal (the kernel sends SIGHUP) and as a plain one (input only fails). The UI runs its
//! embedded server and Chromium, in a pty this test reads like a terminal would (answering the
//! device attributes query, as every terminal does).

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TUI: &str = env!("CARGO_BIN_EXE_browserenv-tui");
/// The bound the UI promises.
const EXIT_WITHIN: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WayOut {
    Sigterm,
    Sighup,
    /// The terminal window closed: the kernel hangs up its session.
    ClosedControllingTerminal,
    /// A terminal that is not the controlling one goes away: input fails, no signal.
    ClosedTerminal,
}

struct Running {
    child: Child,
    /// Dropping it closes our side of the pty (the reader thread holds the only handle).
    master: Option<std::sync::mpsc::Sender<()>>,
    /// A second handle on the UI's side, to read its modes after it exits.
    slave: OwnedFd,
    output: Arc<Mutex<Vec<u8>>>,
    tmp: PathBuf,
    log: PathBuf,
}

fn openpty() -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty fills both descriptors; the size is read only.
    let done = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(done, 0, "openpty");
    // Not inherited by the UI (a master it held itself would keep its terminal alive).
    for fd in [master, slave] {
        // SAFETY: fcntl on the descriptors just made.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: fresh descriptors owned from here on.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}

fn start(name: &str, controlling: bool) -> Running {
    let tmp = std::env::temp_dir().join(format!("browserenv-exits-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let log = tmp.join("tui.log");
    let (master, slave) = openpty();
    let io = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
    let mut command = Command::new(TUI);
    command
        .args(["--log", log.to_str().unwrap()])
        // Chromium's profiles go under TMPDIR: what this test looks for afterwards.
        .env("TMPDIR", &tmp)
        .stdin(io(&slave))
        .stdout(io(&slave))
        .stderr(io(&slave));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::setsid();
            if controlling && libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().expect("the UI starts");
    let output = Arc::new(Mutex::new(Vec::new()));
    let seen = output.clone();
    let (close, closed) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut master = master;
        let mut buffer = [0u8; 65536];
        // Until told to close (the sender dropped): then the terminal goes away.
        while matches!(closed.try_recv(), Err(std::sync::mpsc::TryRecvError::Empty)) {
            let mut poll = libc::pollfd {
                fd: master.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the call.
            if unsafe { libc::poll(&mut poll, 1, 20) } <= 0 || poll.revents & libc::POLLIN == 0 {
                continue;
            }
            let Ok(read) = master.read(&mut buffer) else {
                break;
            };
            let chunk = &buffer[..read];
            // Answer the device attributes query like a VT220 would.
            if chunk.windows(3).any(|w| w == b"\x1b[c") {
                let _ = master.write_all(b"\x1b[?62;22c");
            }
            seen.lock().unwrap().extend_from_slice(chunk);
        }
    });
    Running {
        child,
        master: Some(close),
        slave,
        output,
        tmp,
        log,
    }
}

/// Processes whose command line names `dir` (Chromium's, by its profile path). Zombies have an
/// empty command line, so only live ones count.
fn processes_under(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains(&needle).then_some(cmdline)
        })
        .collect()
}

fn wait_for_picture(running: &Running) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = std::fs::read_to_string(&running.log).unwrap_or_default();
        if log.contains("picture: ") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the UI showed no picture:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One at a time, as on a person's machine: four UIs starting four browsers at once on two cores
/// measure the machine's load, not the UI.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn way_out(way: WayOut) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let controlling = way != WayOut::ClosedTerminal;
    let mut running = start(&format!("{way:?}"), controlling);
    wait_for_picture(&running);
    assert!(
        !processes_under(&running.tmp).is_empty(),
        "the embedded server runs Chromium"
    );
    let pid = running.child.id() as libc::pid_t;
    let asked = Instant::now();
    match way {
        // SAFETY: signals to our own child.
        WayOut::Sigterm => unsafe {
            libc::kill(pid, libc::SIGTERM);
        },
        WayOut::Sighup => unsafe {
            libc::kill(pid, libc::SIGHUP);
        },
        WayOut::ClosedControllingTerminal | WayOut::ClosedTerminal => {
            running.master = None;
        }
    }
    let status = loop {
        if let Some(status) = running.child.try_wait().unwrap() {
            break status;
        }
        if asked.elapsed() > Duration::from_secs(10) {
            let _ = running.child.kill();
            panic!("{way:?}: the UI was still running after 10 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = asked.elapsed();
    eprintln!(
        "{way:?}: the UI ended in {} ms ({status})",
        took.as_millis()
    );
    assert!(took <= EXIT_WITHIN, "{way:?}: the UI took {took:?} to end");
    assert!(status.success(), "{way:?}: {status}");
    // Chromium is gone with it (killed process groups may take a moment to be reaped).
    let deadline = Instant::now() + Duration::from_millis(500);
    while !processes_under(&running.tmp).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = processes_under(&running.tmp);
    assert!(left.is_empty(), "{way:?}: Chromium left running: {left:?}");
    if running.master.is_some() {
        // The terminal still exists: it is put back as it was.
        std::thread::sleep(Duration::from_millis(100));
        let output = running.output.lock().unwrap().clone();
        let tail = String::from_utf8_lossy(&output[output.len().saturating_sub(200)..]);
        for restore in ["\x1b[?1049l", "\x1b[?25h", "\x1b[?1016l", "\x1b[?1000l"] {
            assert!(
                tail.contains(restore),
                "{way:?}: {restore:?} missing at the end: {tail:?}"
            );
        }
        let mut modes = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: tcgetattr fills the struct on success.
        let modes = unsafe {
            assert_eq!(
                libc::tcgetattr(running.slave.as_raw_fd(), modes.as_mut_ptr()),
                0
            );
            modes.assume_init()
        };
        assert!(
            modes.c_lflag & libc::ECHO != 0 && modes.c_lflag & libc::ICANON != 0,
            "{way:?}: the terminal was left in raw mode"
        );
    }
    let _ = std::fs::remove_dir_all(&running.tmp);
}

#[test]
fn sigterm_ends_the_ui_and_its_browsers() {
    way_out(WayOut::Sigterm);
}

/// The embedded server is on loopback, where any local program or web page can reach it: it
/// takes only the UI's own random token.
#[test]
fn the_embedded_server_serves_only_the_ui() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut running = start("token", true);
    wait_for_picture(&running);
    let log = std::fs::read_to_string(&running.log).unwrap();
    let address = log
        .split("embedded server at http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the embedded server's address in the log")
        .to_string();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "GET /sessions HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 401"), "{reply}");
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(running.child.id() as libc::pid_t, libc::SIGTERM) };
    let _ = running.child.wait();
    let _ = std::fs::remove_dir_all(&running.tmp);
}

#[test]
fn sighup_ends_the_ui_and_its_browsers() {
    way_out(WayOut::Sighup);
}

#[test]
fn closing_the_terminal_window_ends_the_ui_and_its_browsers() {
    way_out(WayOut::ClosedControllingTerminal);
}

#[test]
fn a_terminal_that_goes_away_ends_the_ui_and_its_browsers() {
    way_out(WayOut::ClosedTerminal);
}
