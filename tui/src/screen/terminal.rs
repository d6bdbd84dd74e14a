//! The real terminal: raw mode, alternate screen, mouse capture, the graphics probe, and putting
//! all of it back on every way out (quit, error, panic, signal, a terminal that went away).
//!
//! Raw mode goes on before anything is asked of the terminal and stays on until the very end, so
//! no reply is ever echoed; replies still on their way at the end are discarded before the
//! terminal is handed back, so none reaches the shell as typed text.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use crate::graphics::probe::{self, WindowSize};
use crate::graphics::{choose, Graphics, GraphicsChoice, TermEnv};
use crate::output::Output;

/// Restores the terminal when dropped, so an early return or an unwinding panic cannot leave it
/// in raw mode.
pub struct TerminalGuard {
    /// Never dropped: ratatui's own drop prints to stderr when it cannot show the cursor, and
    /// printing to a terminal that went away panics. `restore` shows the cursor instead.
    pub terminal: std::mem::ManuallyDrop<Terminal<CrosstermBackend<Output>>>,
    /// Everything drawn goes through here (its own thread).
    pub output: Output,
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // After the frames still on their way; a terminal that takes nothing is not waited for.
        if !self
            .output
            .finish(&restore_sequence(), Duration::from_millis(300))
        {
            write_restore_sequence();
        }
        release();
    }
}

/// What puts the terminal's modes back: pixel mouse, mouse and paste reports off, the main
/// screen, the cursor.
fn restore_sequence() -> Vec<u8> {
    let mut bytes = b"\x1b[?1016l".to_vec();
    let _ = crossterm::queue!(
        bytes,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    bytes
}

/// The terminal input crossterm reads: stdin when it is a terminal, else `/dev/tty`.
struct Tty {
    fd: RawFd,
    _owned: Option<std::fs::File>,
}

fn tty() -> Option<Tty> {
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
        return Some(Tty {
            fd: libc::STDIN_FILENO,
            _owned: None,
        });
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    Some(Tty {
        fd: file.as_raw_fd(),
        _owned: Some(file),
    })
}

/// The terminal's size in cells and pixels, when there is a terminal.
pub fn window_size() -> Option<WindowSize> {
    probe::window_size(libc::STDOUT_FILENO).or_else(|| tty().and_then(|t| probe::window_size(t.fd)))
}

/// Ask the terminal what it can show and decide how to draw (`--graphics` decides if given).
/// Raw mode must be on. Bounded by the probe's deadline; in practice one round trip.
pub fn probe_graphics(choice: GraphicsChoice) -> Graphics {
    let report = match tty() {
        Some(tty) => probe::query(tty.fd, &mut io::stdout()),
        None => probe::Report::default(),
    };
    choose(choice, &report, window_size(), &TermEnv::current())
}

/// Resolves when the terminal is gone (its other side closed, or it hung up). crossterm's reader
/// keeps retrying a dead terminal instead of reporting it, so the descriptor is watched here, on a
/// thread of its own that never holds up the exit.
pub async fn hangup() {
    let Some(tty) = tty() else {
        return std::future::pending().await;
    };
    let (gone, hung_up) = tokio::sync::oneshot::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("tty-hangup".into())
        .spawn(move || {
            let _keep = tty._owned;
            loop {
                // No events asked for: poll reports only hang-ups and errors.
                let mut poll = libc::pollfd {
                    fd: tty.fd,
                    events: 0,
                    revents: 0,
                };
                // SAFETY: one valid pollfd, for the call's duration.
                let ready = unsafe { libc::poll(&mut poll, 1, 250) };
                let closed = poll.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0;
                if (ready > 0 && closed) || gone.is_closed() {
                    let _ = gone.send(());
                    return;
                }
            }
        });
    if spawned.is_err() {
        return std::future::pending().await;
    }
    // An error here means the watcher ended without news: wait for nothing.
    if hung_up.await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Put the terminal back at once, from anywhere (a panic): the modes, then raw mode off.
pub fn restore() {
    write_restore_sequence();
    release();
}

/// The restore sequence straight to stdout. It must not hang on a terminal that stopped reading
/// (a frozen SSH connection): the few bytes go out if they can, else they are dropped. The flag is
/// shared with the shell's descriptor, so it is put back right after.
fn write_restore_sequence() {
    let mut stdout = io::stdout();
    // SAFETY: fcntl on our own stdout.
    let flags = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFL) };
    if flags >= 0 {
        unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_SETFL, flags | libc::O_NONBLOCK) };
    }
    let _ = stdout.write_all(&restore_sequence());
    let _ = stdout.flush();
    if flags >= 0 {
        // SAFETY: as above, the flags read before.
        unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_SETFL, flags) };
    }
}

/// Drop what the terminal still sends (late replies, keys typed meanwhile) so none reaches the
/// shell as typed text, then leave raw mode.
fn release() {
    if let Some(tty) = tty() {
        // SAFETY: tcflush on the terminal's descriptor.
        unsafe {
            libc::tcflush(tty.fd, libc::TCIFLUSH);
        }
    }
    let _ = disable_raw_mode();
}

/// Enter the UI's terminal mode. A panic of the UI itself (its loop runs on the main thread)
/// restores the terminal before its message is printed; one in a background task is logged and
/// the UI goes on (an encoding that panics says so and the next one starts).
pub fn enter() -> anyhow::Result<TerminalGuard> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some("main") {
            restore();
            previous(info);
        } else {
            let thread = std::thread::current();
            tracing::error!("panic in {}: {info}", thread.name().unwrap_or("a thread"));
        }
    }));
    enable_raw_mode()?;
    crossterm::execute!(
        io::stdout(),
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    )?;
    let output = Output::to_stdout();
    let terminal = Terminal::new(CrosstermBackend::new(output.clone()))?;
    Ok(TerminalGuard {
        terminal: std::mem::ManuallyDrop::new(terminal),
        output,
    })
}
