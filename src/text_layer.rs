//! The page's visible text as positioned runs: what the server's read-only route
//! `GET /sessions/{id}/text` returns, and what the terminal UI draws as real characters over a
//! half-block picture so the page can be read without pixel graphics (tmux, SSH, plain terminals).
//!
//! This is outside the OpenEnv wire contract on purpose: observations stay exactly as the contract
//! says, and a client that never asks for text pays nothing for it (`BROWSER_OBSERVE_TEXT` puts
//! the compact form into `metadata`, which the contract leaves open).
//!
//! [`TextLayer::compact`] is the form an agent reads (the MCP tool `read_page`, and
//! `metadata.text` with `BROWSER_OBSERVE_TEXT`): one line per run,
//! `x,y,w,h [marker] text`, boxes in screenshot pixels clipped to the 800x600 viewport, so the
//! centre of a line's box is a point `click` can take.

use serde::{Deserialize, Serialize};

use crate::models::{VIEWPORT_HEIGHT, VIEWPORT_WIDTH};

/// The most runs one answer carries; a page with more is cut (`truncated`).
pub const MAX_RUNS: usize = 2000;
/// The most characters of one run (the probe cuts longer lines).
pub const MAX_RUN_CHARS: usize = 1000;

/// The visible text of a session's current page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextLayer {
    /// The session (as listed by `GET /sessions`).
    pub session: String,
    pub episode_id: Option<String>,
    /// The episode's step count when the text was read (0 right after a reset).
    pub step: u64,
    pub url: String,
    /// In reading order: top to bottom, then left to right.
    pub runs: Vec<TextRun>,
    /// More runs were on screen than [`MAX_RUNS`], or the page took too long to walk.
    #[serde(default)]
    pub truncated: bool,
}

/// One line of text in one style, with its box in viewport pixels (the 800x600 screenshot's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextRun {
    pub text: String,
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
    /// CSS font size in pixels.
    pub size: f32,
    /// The text colour (sRGB).
    pub color: [u8; 3],
    #[serde(default)]
    pub bold: bool,
    /// Inside a link.
    #[serde(default)]
    pub link: bool,
    #[serde(default)]
    pub kind: RunKind,
}

/// Where a run's text comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// Text in the document.
    #[default]
    Text,
    /// The value of a form field (input, textarea, select).
    Field,
    /// A field's placeholder, shown while it is empty.
    Placeholder,
    /// A password field: one bullet per character, never the value.
    Password,
    /// The label of a button (`<button>`, `role="button"`, an input of type submit, reset or
    /// button).
    Button,
    /// A frame of another origin, whose text the page's own scripts (and so the probe) cannot
    /// read: its box, with no text, so that a reader knows something is there.
    Frame,
}

/// What `read_page` shows by default, in characters (about 2,000 tokens).
pub const DEFAULT_COMPACT_CHARS: usize = 8000;
/// The bounds a caller may ask of [`TextLayer::compact`] (`read_page`'s `max_chars`).
pub const MIN_COMPACT_CHARS: usize = 100;
pub const MAX_COMPACT_CHARS: usize = 100_000;
/// The last line of a compact text that does not hold the whole page.
pub const TRUNCATED_LINE: &str = "[truncated]";

/// Free text a person or an agent wrote, as it may be shown to others (an agent's
/// `request_human` reason, a watcher's name and note, a campaign's skip reason and review note):
/// at most `max` characters on one line, line breaks and tabs as spaces, without any other
/// control character (an escape would drive a terminal, a newline forge a log line) or a
/// character that reorders the text after it (bidi embeddings, overrides, isolates and marks:
/// `U+202E` shows `txt.exe` as `exe.txt`). The one cleaning of such texts.
pub fn printable(text: &str, max: usize) -> String {
    text.chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' | '\u{2028}' | '\u{2029}' => Some(' '),
            '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}' => None,
            c if c.is_control() => None,
            c => Some(c),
        })
        .take(max)
        .collect()
}
/// The marker of a frame of another origin.
pub const FRAME_MARKER: &str = "frame: other origin, not readable";

/// A page's text in the compact form (see [`TextLayer::compact`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactText {
    /// The lines, joined by `\n`; ends with [`TRUNCATED_LINE`] when `truncated`.
    pub text: String,
    /// Lines were left out: the bound was reached, or the page had more than the probe reads
    /// ([`MAX_RUNS`], or its time budget).
    pub truncated: bool,
}

impl TextRun {
    /// The run's centre line, in viewport pixels.
    pub fn middle(&self) -> f64 {
        f64::from(self.y) + f64::from(self.height) / 2.0
    }

    /// Its right and bottom edges, in viewport pixels. A layer may come from any server (or a page
    /// that answered in the probe's place): no sum of its numbers may overflow.
    pub fn right(&self) -> i32 {
        self.x.saturating_add(self.width)
    }

    pub fn bottom(&self) -> i32 {
        self.y.saturating_add(self.height)
    }

    /// The run's box cut to the viewport, as `(x, y, width, height)`; `None` when none of it is
    /// on screen.
    pub fn on_screen(&self) -> Option<(i32, i32, i32, i32)> {
        let (width, height) = (VIEWPORT_WIDTH as i32, VIEWPORT_HEIGHT as i32);
        let (left, top) = (self.x.clamp(0, width), self.y.clamp(0, height));
        let (right, bottom) = (self.right().clamp(0, width), self.bottom().clamp(0, height));
        let off = self.x >= width || self.y >= height || self.right() < 0 || self.bottom() < 0;
        (!off).then_some((left, top, right - left, bottom - top))
    }

    /// What the compact form says of the run's kind before its text: `link`, `button`, `field`
    /// (a field's value), `empty field` (a field's placeholder), `password`, the frame marker;
    /// `text` for plain text that itself starts with `[`, so that a line's first bracket is always
    /// its marker.
    pub fn marker(&self) -> Option<&'static str> {
        match self.kind {
            RunKind::Text if self.link => Some("link"),
            RunKind::Text if self.text.starts_with('[') => Some("text"),
            RunKind::Text => None,
            RunKind::Button => Some("button"),
            RunKind::Field => Some("field"),
            RunKind::Placeholder => Some("empty field"),
            RunKind::Password => Some("password"),
            RunKind::Frame => Some(FRAME_MARKER),
        }
    }

    /// The run as one compact line, `x,y,w,h [marker] text`; `None` when it is off screen or has
    /// no text to show.
    pub fn compact_line(&self) -> Option<String> {
        let (x, y, width, height) = self.on_screen()?;
        // One line per run, whatever the page put in it.
        let text: String = self
            .text
            .chars()
            .map(|c| {
                if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                    ' '
                } else {
                    c
                }
            })
            .collect();
        let text = text.trim();
        if text.is_empty() && self.kind != RunKind::Frame {
            return None;
        }
        let mut line = format!("{x},{y},{width},{height}");
        if let Some(marker) = self.marker() {
            line.push_str(" [");
            line.push_str(marker);
            line.push(']');
        }
        if !text.is_empty() && self.kind != RunKind::Frame {
            line.push(' ');
            line.push_str(text);
        }
        Some(line)
    }
}

impl TextLayer {
    /// The page's text as an agent reads it: one line per run in reading order,
    /// `x,y,w,h [marker] text` (see [`TextRun::compact_line`]), at most `max_chars` characters
    /// (whole lines; at least [`MIN_COMPACT_CHARS`]). When lines are left out the text ends with
    /// the line [`TRUNCATED_LINE`] (counted in the bound) and `truncated` is set.
    pub fn compact(&self, max_chars: usize) -> CompactText {
        let max_chars = max_chars.max(MIN_COMPACT_CHARS);
        let mut lines: Vec<(String, usize)> = Vec::new();
        // Characters so far, newlines included.
        let mut used = 0;
        let mut truncated = self.truncated;
        for line in self.runs.iter().filter_map(TextRun::compact_line) {
            let length = line.chars().count();
            let cost = length + usize::from(!lines.is_empty());
            if used + cost > max_chars {
                truncated = true;
                break;
            }
            used += cost;
            lines.push((line, length));
        }
        if truncated {
            let marker = TRUNCATED_LINE.len();
            while !lines.is_empty() && used + marker + 1 > max_chars {
                let (_, length) = lines.pop().expect("not empty");
                used -= length + usize::from(!lines.is_empty());
            }
            lines.push((TRUNCATED_LINE.to_string(), marker));
        }
        let text = lines
            .into_iter()
            .map(|(line, _)| line)
            .collect::<Vec<_>>()
            .join("\n");
        CompactText { text, truncated }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_is_shown_on_one_line_without_what_drives_terminals_or_reorders() {
        assert_eq!(
            printable(
                "sign in\u{202e}gpj.exe\n\u{1b}[2Jnow\u{2066}x\u{2069}\u{200f}",
                100
            ),
            "sign ingpj.exe [2Jnowx"
        );
        assert_eq!(printable("ab\tcd", 3), "ab ");
    }

    #[test]
    fn runs_read_with_defaults_for_the_optional_fields() {
        let layer: TextLayer = serde_json::from_str(
            r#"{"session":"s","episode_id":null,"step":2,"url":"http://a/","runs":[
                {"text":"Hammer","x":10,"y":20,"width":50,"height":16,"size":14,"color":[0,0,0]},
                {"text":"•••","x":10,"y":40,"width":30,"height":16,"size":14,"color":[9,9,9],"kind":"password"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(layer.runs.len(), 2);
        assert!(!layer.truncated);
        assert_eq!(layer.runs[0].kind, RunKind::Text);
        assert!(!layer.runs[0].bold && !layer.runs[0].link);
        assert_eq!(layer.runs[1].kind, RunKind::Password);
        assert_eq!(layer.runs[0].middle(), 28.0);
        let back: TextLayer =
            serde_json::from_value(serde_json::to_value(&layer).unwrap()).unwrap();
        assert_eq!(back, layer);
    }

    fn run(text: &str, x: i32, y: i32, kind: RunKind, link: bool) -> TextRun {
        TextRun {
            text: text.into(),
            x,
            y,
            width: 100,
            height: 20,
            size: 16.0,
            color: [0, 0, 0],
            bold: false,
            link,
            kind,
        }
    }

    #[test]
    fn the_compact_form_is_one_marked_line_per_run_with_boxes_on_screen() {
        let layer = TextLayer {
            runs: vec![
                run("Harbor Hardware", 10, 5, RunKind::Text, false),
                run("Catalog", 200, 5, RunKind::Text, true),
                run("Add to cart", 300, 40, RunKind::Button, false),
                run("Ada", 10, 80, RunKind::Field, false),
                run("Search", 10, 110, RunKind::Placeholder, false),
                run("•••", 10, 140, RunKind::Password, false),
                run("", 400, 500, RunKind::Frame, false),
                run("[1] a footnote", 10, 170, RunKind::Text, false),
                // Cut by the viewport's edges, and wholly off it.
                run("cut\u{2028}in\ttwo", 750, -5, RunKind::Text, false),
                run("off screen", -200, 300, RunKind::Text, false),
                run("below", 10, 600, RunKind::Text, false),
                run("   ", 10, 200, RunKind::Text, false),
            ],
            ..TextLayer::default()
        };
        let compact = layer.compact(DEFAULT_COMPACT_CHARS);
        assert!(!compact.truncated);
        assert_eq!(
            compact.text.lines().collect::<Vec<_>>(),
            [
                "10,5,100,20 Harbor Hardware",
                "200,5,100,20 [link] Catalog",
                "300,40,100,20 [button] Add to cart",
                "10,80,100,20 [field] Ada",
                "10,110,100,20 [empty field] Search",
                "10,140,100,20 [password] •••",
                "400,500,100,20 [frame: other origin, not readable]",
                "10,170,100,20 [text] [1] a footnote",
                "750,0,50,15 cut in two",
            ]
        );
        assert_eq!(TextLayer::default().compact(500), CompactText::default());
    }

    #[test]
    fn the_compact_form_keeps_whole_lines_within_its_bound_and_says_it_was_cut() {
        let runs: Vec<TextRun> = (0..50)
            .map(|i| run(&format!("line {i:02}"), 0, i * 10, RunKind::Text, false))
            .collect();
        let layer = TextLayer {
            runs,
            ..TextLayer::default()
        };
        let whole = layer.compact(MAX_COMPACT_CHARS);
        assert!(!whole.truncated);
        // "0,0,100,20 line 00": 18 characters and a newline each, the first ones.
        for max in [100, 137, 138, 200, 1000] {
            let cut = layer.compact(max);
            assert!(cut.truncated);
            assert!(cut.text.chars().count() <= max, "{max}: {}", cut.text);
            let lines: Vec<&str> = cut.text.lines().collect();
            assert_eq!(lines.last(), Some(&TRUNCATED_LINE));
            assert!(whole
                .text
                .starts_with(&cut.text[..cut.text.len() - TRUNCATED_LINE.len()]));
        }
        // Below the least bound: the least bound.
        assert_eq!(layer.compact(0), layer.compact(MIN_COMPACT_CHARS));
        // A page read only in part is said to be cut even when all of it fits.
        let partial = TextLayer {
            truncated: true,
            ..layer.clone()
        };
        let read = partial.compact(MAX_COMPACT_CHARS);
        assert!(read.truncated && read.text.ends_with("\n[truncated]"));
    }
}
