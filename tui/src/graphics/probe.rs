//! Asking the terminal what it is and what it can show, once at start.
//!
//! Every query goes out in one write, followed by a primary device attributes request (DA1),
//! which every VT-compatible terminal (and tmux) answers, and answers last: its reply ends the
//! wait, so a terminal that ignores the other queries costs nothing. Replies are read here, in raw
//! mode (no echo), before the UI reads any input, so no reply can be echoed on screen or taken for
//! a keystroke. The queries:
//!
//! - `XTVERSION` (`CSI > 0 q`): the terminal's name and version (`kitty(0.26.5)`, `XTerm(379)`,
//!   `tmux 3.3a`);
//! - the kitty graphics query (`APC G a=q`): answered `OK` by terminals with the kitty protocol;
//! - `CSI 16 t`: the cell size in pixels (kitty answers; xterm leaves it to `TIOCGWINSZ`);
//! - `XTSMGRAPHICS` (`CSI ? 2 ; 4 ; 0 S`, `CSI ? 1 ; 1 ; 0 S`): the largest sixel image and the
//!   colour registers, the limits xterm drops an image past;
//! - `DECRQM 1016`: whether mouse positions can be reported in pixels (SGR-Pixels).

use std::time::{Duration, Instant};

/// Every query, DA1 last.
pub const QUERIES: &[u8] = b"\x1b[>0q\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\\x1b[16t\x1b[?2;4;0S\x1b[?1;1;0S\x1b[?1016$p\x1b[c";

/// A terminal that has not answered DA1 by then is taken to answer nothing.
pub const DEADLINE: Duration = Duration::from_millis(1000);

/// What the terminal said about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// XTVERSION, e.g. `kitty(0.26.5)`.
    pub version: Option<String>,
    /// The kitty graphics query was answered OK.
    pub kitty: bool,
    /// `CSI 16 t`: cell width and height in pixels.
    pub cell: Option<(u16, u16)>,
    /// XTSMGRAPHICS: the largest sixel image, width and height.
    pub sixel_max: Option<(u32, u32)>,
    /// XTSMGRAPHICS: sixel colour registers.
    pub color_registers: Option<u16>,
    /// DECRQM 1016 answered with a known mode.
    pub pixel_mouse: bool,
    /// DA1 attributes; None when the terminal never answered.
    pub attributes: Option<Vec<u16>>,
}

impl Report {
    /// Sixel graphics, by DA1's attribute 4.
    pub fn sixel(&self) -> bool {
        self.attributes.as_ref().is_some_and(|a| a.contains(&4))
    }

    /// Read every reply found in `bytes`; unknown bytes (a key typed meanwhile) are skipped.
    pub fn parse(bytes: &[u8]) -> Report {
        let mut report = Report::default();
        let mut rest = bytes;
        while let Some(start) = rest.iter().position(|&b| b == 0x1b) {
            rest = &rest[start..];
            let Some((reply, len)) = Reply::read(rest) else {
                rest = &rest[1..];
                continue;
            };
            report.apply(reply);
            rest = &rest[len..];
        }
        report
    }

    fn apply(&mut self, reply: Reply) {
        match reply {
            Reply::Version(version) => self.version = Some(version),
            Reply::Kitty(ok) => self.kitty |= ok,
            Reply::Cell(width, height) if width > 0 && height > 0 => {
                self.cell = Some((width, height))
            }
            Reply::Cell(..) => {}
            Reply::Graphics { item: 2, values } => {
                if let [0, width, height, ..] = values[..] {
                    self.sixel_max = Some((width, height));
                }
            }
            Reply::Graphics { item: 1, values } => {
                if let [0, registers, ..] = values[..] {
                    self.color_registers = u16::try_from(registers).ok();
                }
            }
            Reply::Graphics { .. } => {}
            // 1 set, 2 reset, 3 permanently set; 4 (permanently reset) and 0 mean no.
            Reply::Mode { mode: 1016, value } => self.pixel_mouse = matches!(value, 1..=3),
            Reply::Mode { .. } => {}
            Reply::Attributes(attributes) => self.attributes = Some(attributes),
            Reply::Other => {}
        }
    }

    /// The DA1 reply ends every exchange.
    pub fn complete(bytes: &[u8]) -> bool {
        Report::parse(bytes).attributes.is_some()
    }
}

/// One terminal reply.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    Version(String),
    Kitty(bool),
    Cell(u16, u16),
    Graphics {
        item: u32,
        values: Vec<u32>,
    },
    Mode {
        mode: u32,
        value: u32,
    },
    Attributes(Vec<u16>),
    /// A well-formed sequence this probe did not ask about (skipped whole).
    Other,
}

impl Reply {
    /// A reply at the start of `bytes` (which begins with ESC) and its length.
    fn read(bytes: &[u8]) -> Option<(Reply, usize)> {
        match bytes.get(1)? {
            // DCS > | text ST
            b'P' => {
                let end = find(bytes, b"\x1b\\")?;
                let body = bytes[2..end].strip_prefix(b">|")?;
                Some((
                    Reply::Version(String::from_utf8_lossy(body).trim().to_string()),
                    end + 2,
                ))
            }
            // APC G i=31;OK ST
            b'_' => {
                let end = find(bytes, b"\x1b\\")?;
                let body = bytes[2..end].strip_prefix(b"G")?;
                let message = body.splitn(2, |&b| b == b';').nth(1).unwrap_or(b"");
                Some((Reply::Kitty(message == b"OK"), end + 2))
            }
            b'[' => {
                let body = &bytes[2..];
                // Parameters and intermediates until the final byte.
                let end = body.iter().position(|b| (0x40..=0x7e).contains(b))?;
                let (params, last) = (&body[..end], body[end]);
                let len = 2 + end + 1;
                let private = params.first() == Some(&b'?');
                let params = if private { &params[1..] } else { params };
                let numbers = |text: &[u8]| -> Vec<u32> {
                    String::from_utf8_lossy(text)
                        .split(';')
                        .filter_map(|n| n.trim().parse().ok())
                        .collect()
                };
                let reply = match (private, last) {
                    (false, b't') => match numbers(params)[..] {
                        [6, height, width] => Reply::Cell(
                            u16::try_from(width).unwrap_or(0),
                            u16::try_from(height).unwrap_or(0),
                        ),
                        _ => Reply::Other,
                    },
                    (true, b'S') => {
                        let values = numbers(params);
                        Reply::Graphics {
                            item: values.first().copied().unwrap_or(0),
                            values: values.into_iter().skip(1).collect(),
                        }
                    }
                    (true, b'y') => {
                        let values = numbers(params.strip_suffix(b"$").unwrap_or(params));
                        match values[..] {
                            [mode, value] => Reply::Mode { mode, value },
                            _ => Reply::Other,
                        }
                    }
                    (true, b'c') => Reply::Attributes(
                        numbers(params)
                            .into_iter()
                            .filter_map(|n| u16::try_from(n).ok())
                            .collect(),
                    ),
                    _ => Reply::Other,
                };
                Some((reply, len))
            }
            _ => None,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Send the queries to `out` and read the replies from the terminal `fd` until DA1 arrives or
/// the deadline passes. The terminal must already be in raw mode (no echo, no line editing).
pub fn query(fd: std::os::fd::RawFd, out: &mut impl std::io::Write) -> Report {
    if out.write_all(QUERIES).and_then(|()| out.flush()).is_err() {
        return Report::default();
    }
    let deadline = Instant::now() + DEADLINE;
    let mut replies = Vec::new();
    let mut buffer = [0u8; 1024];
    while !Report::complete(&replies) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(1000);
        // SAFETY: one valid pollfd, for the call's duration.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        if ready == 0 || poll.revents & libc::POLLIN == 0 {
            if poll.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                break;
            }
            continue;
        }
        // SAFETY: reading into a live buffer of the given length.
        let read = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
        if read <= 0 {
            break;
        }
        replies.extend_from_slice(&buffer[..read as usize]);
    }
    Report::parse(&replies)
}

/// The terminal's size in cells and pixels (`TIOCGWINSZ`); pixels are 0 where not reported.
pub fn window_size(fd: std::os::fd::RawFd) -> Option<WindowSize> {
    let mut size = std::mem::MaybeUninit::<libc::winsize>::zeroed();
    // SAFETY: TIOCGWINSZ fills the struct on success, and it is only read then.
    let size = unsafe {
        if libc::ioctl(fd, libc::TIOCGWINSZ, size.as_mut_ptr()) != 0 {
            return None;
        }
        size.assume_init()
    };
    Some(WindowSize {
        columns: size.ws_col,
        rows: size.ws_row,
        width: size.ws_xpixel,
        height: size.ws_ypixel,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSize {
    pub columns: u16,
    pub rows: u16,
    pub width: u16,
    pub height: u16,
}

impl WindowSize {
    /// One cell in pixels, when the terminal reports pixels at all.
    pub fn cell(&self) -> Option<(u16, u16)> {
        (self.columns > 0 && self.rows > 0 && self.width > 0 && self.height > 0).then(|| {
            (
                (self.width / self.columns).max(1),
                (self.height / self.rows).max(1),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What xterm 379 (`-ti vt340`, 100x35) answered to `QUERIES`, read under Xvfb.
    const XTERM: &[u8] = b"\x1bP>|XTerm(379)\x1b\\\x1b[?2;0;1000;1000S\x1b[?1;0;1024S\x1b[?1016;2$y\x1b[?63;1;2;4;6;9;15;16;22;28c";
    /// kitty 0.26.5 (Debian 12).
    const KITTY: &[u8] =
        b"\x1bP>|kitty(0.26.5)\x1b\\\x1b_Gi=31;OK\x1b\\\x1b[6;20;9t\x1b[?1016;2$y\x1b[?62;c";
    /// tmux 3.3a answers for itself.
    const TMUX: &[u8] = b"\x1bP>|tmux 3.3a\x1b\\\x1b[?1;2c";

    #[test]
    fn reads_what_xterm_kitty_and_tmux_answer() {
        let xterm = Report::parse(XTERM);
        assert_eq!(xterm.version.as_deref(), Some("XTerm(379)"));
        assert!(!xterm.kitty && xterm.sixel() && xterm.pixel_mouse);
        assert_eq!(xterm.sixel_max, Some((1000, 1000)));
        assert_eq!(xterm.color_registers, Some(1024));
        assert_eq!(xterm.cell, None, "xterm leaves the cell size to TIOCGWINSZ");

        let kitty = Report::parse(KITTY);
        assert_eq!(kitty.version.as_deref(), Some("kitty(0.26.5)"));
        assert!(kitty.kitty && !kitty.sixel() && kitty.pixel_mouse);
        assert_eq!(kitty.cell, Some((9, 20)));

        let tmux = Report::parse(TMUX);
        assert_eq!(tmux.version.as_deref(), Some("tmux 3.3a"));
        assert_eq!(tmux.attributes, Some(vec![1, 2]));
        assert!(!tmux.kitty && !tmux.sixel() && !tmux.pixel_mouse);
    }

    #[test]
    fn the_exchange_ends_with_da1_and_survives_noise() {
        assert!(!Report::complete(b"\x1bP>|XTerm(379)\x1b\\"));
        assert!(Report::complete(XTERM));
        // A key typed during the query, a half reply and an unknown sequence are skipped.
        let noisy = [b"q\x1b[?99;1$y\x1b[200~x" as &[u8], KITTY].concat();
        let report = Report::parse(&noisy);
        assert!(report.kitty);
        assert_eq!(report.cell, Some((9, 20)));
        assert_eq!(Report::parse(b"\x1bP>|unterminated"), Report::default());
        // A mode the terminal does not know (0) or has permanently off (4) is no pixel mouse.
        assert!(!Report::parse(b"\x1b[?1016;0$y").pixel_mouse);
        assert!(!Report::parse(b"\x1b[?1016;4$y").pixel_mouse);
        assert!(Report::parse(b"\x1b[?1016;1$y").pixel_mouse);
    }

    #[test]
    fn cell_size_from_the_window_size() {
        let xterm = WindowSize {
            columns: 100,
            rows: 35,
            width: 604,
            height: 459,
        };
        assert_eq!(xterm.cell(), Some((6, 13)), "border pixels round away");
        let silent = WindowSize {
            width: 0,
            height: 0,
            ..xterm
        };
        assert_eq!(silent.cell(), None);
    }
}
