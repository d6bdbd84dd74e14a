//! The real terminal: raw mode, alternate screen, mouse capture, and putting all of it back on
//! every way out (normal quit, error, panic, signal).

use std::io::{self, Stdout};
use std::time::Duration;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use ratatui_image::picker::cap_parser::QueryStdioOptions;
use ratatui_image::picker::{Capability, Picker, ProtocolType};

use crate::picture::Graphics;

/// Restores the terminal when dropped, so an early return or an unwinding panic cannot leave it
/// in raw mode.
pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// ratatui-image reads the terminal's answers on a thread of its own, with echo and line mode off,
/// until a device status report arrives. When the terminal stays silent past the timeout, that
/// thread is left behind: it would steal the person's first keystrokes and, once it ends, put the
/// terminal back in line mode under the UI (seen in tmux: the first `:` was lost). Ask for a status
/// report ourselves, unwrapped (every VT terminal and tmux itself answers `ESC[5n`), and wait for
/// the thread to restore the terminal before the UI takes it over. A late answer that reaches the
/// UI instead is a sequence crossterm drops.
fn release_query_reader() {
    use std::io::Write;
    // The thread holds the terminal while line mode is off (the caller left raw mode for this).
    let line_mode_off = || {
        let mut termios = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: tcgetattr fills the struct on success, and it is only read then.
        unsafe {
            libc::tcgetattr(libc::STDIN_FILENO, termios.as_mut_ptr()) == 0
                && termios.assume_init().c_lflag & libc::ICANON == 0
        }
    };
    if !line_mode_off() {
        return;
    }
    let mut stdout = io::stdout();
    let _ = stdout.write_all(b"\x1b[5n");
    let _ = stdout.flush();
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    while line_mode_off() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn restore() {
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        io::stdout(),
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

/// Enter the UI's terminal mode. A panic restores the terminal before its message is printed.
pub fn enter() -> anyhow::Result<TerminalGuard> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    enable_raw_mode()?;
    crossterm::execute!(
        io::stdout(),
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    )?;
    let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    Ok(TerminalGuard { terminal })
}

/// `--graphics` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphicsChoice {
    /// Ask the terminal; fall back to half-blocks.
    Auto,
    Kitty,
    Sixel,
    Iterm2,
    /// Unicode half-blocks: works everywhere (SSH, tmux, plain terminals).
    Halfblocks,
}

/// Decide how to draw pictures. Detection queries the terminal once (bounded by a short timeout);
/// half-blocks needs no query at all.
pub fn detect_graphics(choice: GraphicsChoice) -> Graphics {
    if choice == GraphicsChoice::Halfblocks {
        return Graphics::halfblocks();
    }
    // Inside tmux the query travels through tmux's passthrough, which is off by default
    // (`allow-passthrough`): nothing would answer, and pictures through tmux are half-blocks in
    // practice anyway. An explicit --graphics still asks.
    if choice == GraphicsChoice::Auto && std::env::var_os("TMUX").is_some_and(|v| !v.is_empty()) {
        return Graphics::halfblocks();
    }
    let options = QueryStdioOptions {
        timeout: Duration::from_millis(500),
        ..QueryStdioOptions::default()
    };
    // The query thread switches line mode and echo off itself and restores what it found; with
    // the UI's raw mode off meanwhile, line mode tells whether that thread is still running.
    let raw = crossterm::terminal::is_raw_mode_enabled().unwrap_or(false);
    if raw {
        let _ = disable_raw_mode();
    }
    let picker =
        Picker::from_query_stdio_with_options(options).unwrap_or_else(|_| Picker::halfblocks());
    release_query_reader();
    if raw {
        let _ = enable_raw_mode();
    }
    let protocol = match choice {
        GraphicsChoice::Auto => picker.protocol_type(),
        GraphicsChoice::Kitty => ProtocolType::Kitty,
        GraphicsChoice::Sixel => ProtocolType::Sixel,
        GraphicsChoice::Iterm2 => ProtocolType::Iterm2,
        GraphicsChoice::Halfblocks => ProtocolType::Halfblocks,
    };
    let mut graphics = Graphics {
        protocol,
        font: picker.font_size(),
        tmux: picker.tmux_detected(),
        compress: picker
            .capabilities()
            .contains(&Capability::KittyCompression),
    };
    if protocol == ProtocolType::Halfblocks {
        graphics.font = Graphics::halfblocks().font;
    }
    graphics
}
