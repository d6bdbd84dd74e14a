//! How this terminal shows pictures: which protocol, how big a cell is in pixels, and the limits
//! the terminal reported. `probe` asks the terminal; `choose` decides from its answers (a pure
//! function, tested on the answers real terminals gave); `encode` makes what is sent.
//!
//! Why not ratatui-image's own picker and kitty path: its kitty images use Unicode placeholders,
//! which kitty has only since 0.28 (Debian 12 ships 0.26.5: a blank pane), and its query runs on a
//! thread that switches the terminal's modes while the UI starts (replies echoed, input lost).
//! Pixel pictures here are written with kitty's direct placement, sixel (icy_sixel encodes) or
//! iTerm2's inline images, never scaled past the page's own 800x600 pixels.

pub mod encode;
pub mod picture;
pub mod probe;

use probe::{Report, WindowSize};

/// What `--graphics` may force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphicsChoice {
    /// Ask the terminal; half-blocks when in doubt.
    Auto,
    Kitty,
    Sixel,
    Iterm2,
    /// Unicode half-blocks with the page's text drawn over them: works everywhere (SSH, tmux).
    Halfblocks,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Halfblocks,
    Sixel,
    Kitty,
    Iterm2,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Halfblocks => "halfblocks",
            Protocol::Sixel => "sixel",
            Protocol::Kitty => "kitty",
            Protocol::Iterm2 => "iterm2",
        }
    }
}

/// A cell size for terminals that report none: the usual 1:2 aspect is all half-blocks need.
pub const ESTIMATED_CELL: (u16, u16) = (8, 16);

/// How pictures are drawn in this terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graphics {
    pub protocol: Protocol,
    /// One cell in screen pixels.
    pub cell: (u16, u16),
    /// Whether `cell` was reported (`CSI 16 t` or `TIOCGWINSZ`) or is [`ESTIMATED_CELL`].
    pub cell_known: bool,
    /// The largest sixel image the terminal takes (XTSMGRAPHICS).
    pub sixel_max: Option<(u32, u32)>,
    /// Sixel colours (the terminal's colour registers, at most 256).
    pub colors: u16,
    /// Mouse positions come in pixels (SGR-Pixels, mode 1016).
    pub pixel_mouse: bool,
    /// Where those pixels count from: xterm's first pixel is 1, kitty's (and most newer
    /// terminals') is 0 (measured under Xvfb with xdotool clicks).
    pub pixel_origin: u16,
    /// Escapes travel through tmux's passthrough (forced protocols inside tmux).
    pub passthrough: bool,
    /// What the terminal called itself (XTVERSION), for the log.
    pub terminal: String,
    /// Why this protocol, for the log.
    pub reason: String,
}

impl Graphics {
    /// Half-blocks with an estimated cell: what needs no terminal at all (tests, the benchmark).
    pub fn halfblocks() -> Self {
        Graphics {
            protocol: Protocol::Halfblocks,
            cell: ESTIMATED_CELL,
            cell_known: false,
            sixel_max: None,
            colors: 256,
            pixel_mouse: false,
            pixel_origin: 0,
            passthrough: false,
            terminal: String::new(),
            reason: "asked for".into(),
        }
    }

    /// A pixel protocol with a known cell size (tests, the benchmark).
    pub fn pixels(protocol: Protocol, cell: (u16, u16)) -> Self {
        Graphics {
            protocol,
            cell,
            cell_known: true,
            ..Graphics::halfblocks()
        }
    }

    /// Text can be drawn over half-block cells, not over pixel images.
    pub fn is_text(&self) -> bool {
        self.protocol == Protocol::Halfblocks
    }

    pub fn name(&self) -> &'static str {
        self.protocol.name()
    }

    /// The terminal's cell size changed (a resize, a font change).
    pub fn resized(&mut self, window: Option<WindowSize>) {
        if let Some(cell) = window.and_then(|w| w.cell()) {
            if self.cell_known && !self.passthrough {
                self.cell = cell;
            }
        }
    }
}

/// Facts from the environment that the terminal's answers do not give.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermEnv {
    /// `$TMUX` is set.
    pub tmux: bool,
    pub term: String,
    /// `$TERM_PROGRAM` (iTerm.app, WezTerm, ...), `$LC_TERMINAL` (iTerm2 sends it over SSH).
    pub program: String,
}

impl TermEnv {
    pub fn current() -> Self {
        let var = |name: &str| std::env::var(name).unwrap_or_default();
        TermEnv {
            tmux: !var("TMUX").is_empty(),
            term: var("TERM"),
            program: format!("{} {}", var("TERM_PROGRAM"), var("LC_TERMINAL")),
        }
    }
}

/// Decide how to draw from what the terminal answered. `auto` picks a protocol only when the
/// terminal said it has it and gave its cell size; anything in doubt is half-blocks.
pub fn choose(
    choice: GraphicsChoice,
    report: &Report,
    window: Option<WindowSize>,
    env: &TermEnv,
) -> Graphics {
    let version = report.version.clone().unwrap_or_default();
    let multiplexer = env.tmux
        || version.starts_with("tmux")
        || env.term.starts_with("screen")
        || env.term.starts_with("tmux");
    // tmux 3.3 makes up pixel sizes when its own client reports none: not to be trusted.
    let cell = report
        .cell
        .or_else(|| window.and_then(|w| w.cell()))
        .filter(|_| !multiplexer);
    let iterm = version.starts_with("iTerm2")
        || version.starts_with("WezTerm")
        || env.program.contains("iTerm")
        || env.program.contains("WezTerm");
    let (protocol, reason) = match choice {
        GraphicsChoice::Halfblocks => (Protocol::Halfblocks, "asked for (--graphics)".to_string()),
        GraphicsChoice::Kitty => (Protocol::Kitty, "asked for (--graphics)".into()),
        GraphicsChoice::Sixel => (Protocol::Sixel, "asked for (--graphics)".into()),
        GraphicsChoice::Iterm2 => (Protocol::Iterm2, "asked for (--graphics)".into()),
        GraphicsChoice::Auto if multiplexer => (
            Protocol::Halfblocks,
            "inside tmux or screen, whose passthrough is off by default".into(),
        ),
        GraphicsChoice::Auto if report.attributes.is_none() => (
            Protocol::Halfblocks,
            "the terminal did not answer its queries".into(),
        ),
        GraphicsChoice::Auto if cell.is_none() => (
            Protocol::Halfblocks,
            "the terminal did not report its cell size in pixels".into(),
        ),
        // Their own inline images first: the most complete of what they speak.
        GraphicsChoice::Auto if iterm => (
            Protocol::Iterm2,
            format!(
                "it is {} (inline images)",
                version_or(&version, &env.program)
            ),
        ),
        GraphicsChoice::Auto if report.kitty => (
            Protocol::Kitty,
            "it answered the kitty graphics query (direct placement)".into(),
        ),
        GraphicsChoice::Auto if report.sixel() => {
            (Protocol::Sixel, "its device attributes list sixel".into())
        }
        GraphicsChoice::Auto => (Protocol::Halfblocks, "it reported no pixel graphics".into()),
    };
    let passthrough = multiplexer && protocol != Protocol::Halfblocks;
    let reported = report.cell.or_else(|| window.and_then(|w| w.cell()));
    // A forced protocol inside tmux uses what it can get; elsewhere only what was reported.
    let cell = if passthrough { reported } else { cell };
    Graphics {
        protocol,
        cell: cell.unwrap_or(ESTIMATED_CELL),
        cell_known: cell.is_some(),
        sixel_max: report.sixel_max,
        colors: report.color_registers.unwrap_or(256).clamp(2, 256),
        pixel_mouse: report.pixel_mouse && !multiplexer && cell.is_some(),
        pixel_origin: u16::from(version.starts_with("XTerm(")),
        passthrough,
        terminal: version_or(&version, "unknown").to_string(),
        reason,
    }
}

fn version_or<'a>(version: &'a str, other: &'a str) -> &'a str {
    if version.is_empty() {
        other.trim()
    } else {
        version
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(columns: u16, rows: u16, width: u16, height: u16) -> Option<WindowSize> {
        Some(WindowSize {
            columns,
            rows,
            width,
            height,
        })
    }

    fn xterm() -> Report {
        Report::parse(b"\x1bP>|XTerm(379)\x1b\\\x1b[?2;0;1000;1000S\x1b[?1;0;1024S\x1b[?1016;2$y\x1b[?63;1;2;4;6;9;15;16;22;28c")
    }

    fn kitty() -> Report {
        Report::parse(
            b"\x1bP>|kitty(0.26.5)\x1b\\\x1b_Gi=31;OK\x1b\\\x1b[6;20;9t\x1b[?1016;2$y\x1b[?62;c",
        )
    }

    #[test]
    fn auto_picks_what_each_terminal_really_shows() {
        let env = TermEnv::default();
        let sixel = choose(
            GraphicsChoice::Auto,
            &xterm(),
            window(100, 35, 604, 459),
            &env,
        );
        assert_eq!(sixel.protocol, Protocol::Sixel);
        assert_eq!((sixel.cell, sixel.cell_known), ((6, 13), true));
        assert_eq!((sixel.sixel_max, sixel.colors), (Some((1000, 1000)), 256));
        assert!(sixel.pixel_mouse);
        assert_eq!(sixel.pixel_origin, 1);
        assert_eq!(sixel.terminal, "XTerm(379)");

        let direct = choose(
            GraphicsChoice::Auto,
            &kitty(),
            window(100, 35, 900, 700),
            &env,
        );
        assert_eq!(
            direct.protocol,
            Protocol::Kitty,
            "0.26 included: direct placement"
        );
        assert_eq!(direct.cell, (9, 20));
        assert_eq!(direct.pixel_origin, 0);

        // tmux answers DA1 itself and makes up pixel sizes.
        let tmux = Report::parse(b"\x1bP>|tmux 3.3a\x1b\\\x1b[?1;2c");
        let inside = choose(
            GraphicsChoice::Auto,
            &tmux,
            window(120, 40, 1920, 1280),
            &env,
        );
        assert_eq!(inside.protocol, Protocol::Halfblocks);
        assert!(!inside.cell_known && !inside.pixel_mouse);
        let env_tmux = TermEnv {
            tmux: true,
            ..TermEnv::default()
        };
        let through = choose(
            GraphicsChoice::Auto,
            &kitty(),
            window(100, 35, 900, 700),
            &env_tmux,
        );
        assert_eq!(through.protocol, Protocol::Halfblocks, "$TMUX wins");
    }

    #[test]
    fn in_doubt_it_is_half_blocks() {
        let env = TermEnv::default();
        // Sixel listed, but no cell size anywhere: the picture could not be sized.
        let no_cell = choose(GraphicsChoice::Auto, &xterm(), window(100, 35, 0, 0), &env);
        assert_eq!(no_cell.protocol, Protocol::Halfblocks);
        assert!(no_cell.reason.contains("cell size"), "{}", no_cell.reason);
        let silent = choose(GraphicsChoice::Auto, &Report::default(), None, &env);
        assert_eq!(silent.protocol, Protocol::Halfblocks);
        assert!(
            silent.reason.contains("did not answer"),
            "{}",
            silent.reason
        );
        let plain = Report::parse(b"\x1b[?62;22c");
        let vt = choose(GraphicsChoice::Auto, &plain, window(80, 24, 640, 384), &env);
        assert_eq!(vt.protocol, Protocol::Halfblocks);
        let iterm = TermEnv {
            program: "iTerm.app iTerm2".into(),
            ..TermEnv::default()
        };
        let inline = choose(
            GraphicsChoice::Auto,
            &plain,
            window(80, 24, 640, 384),
            &iterm,
        );
        assert_eq!(inline.protocol, Protocol::Iterm2);
        // WezTerm answers the kitty query and lists sixel too: its inline images win.
        let wezterm =
            Report::parse(b"\x1bP>|WezTerm 20240203\x1b\\\x1b_Gi=31;OK\x1b\\\x1b[?65;4;6;18;22c");
        let chosen = choose(
            GraphicsChoice::Auto,
            &wezterm,
            window(80, 24, 640, 384),
            &env,
        );
        assert_eq!(chosen.protocol, Protocol::Iterm2);
    }

    #[test]
    fn a_forced_choice_is_kept() {
        let env = TermEnv::default();
        for (choice, protocol) in [
            (GraphicsChoice::Kitty, Protocol::Kitty),
            (GraphicsChoice::Sixel, Protocol::Sixel),
            (GraphicsChoice::Iterm2, Protocol::Iterm2),
            (GraphicsChoice::Halfblocks, Protocol::Halfblocks),
        ] {
            let graphics = choose(choice, &Report::default(), None, &env);
            assert_eq!(graphics.protocol, protocol);
            assert_eq!(graphics.cell, ESTIMATED_CELL);
        }
        let tmux = TermEnv {
            tmux: true,
            ..TermEnv::default()
        };
        let forced = choose(
            GraphicsChoice::Sixel,
            &xterm(),
            window(100, 35, 604, 459),
            &tmux,
        );
        assert!(forced.passthrough && forced.cell_known);
    }
}
