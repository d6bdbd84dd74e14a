//! The page's visible text as positioned runs: what the server's read-only route
//! `GET /sessions/{id}/text` returns, and what the terminal UI draws as real characters over a
//! half-block picture so the page can be read without pixel graphics (tmux, SSH, plain terminals).
//!
//! This is outside the OpenEnv wire contract on purpose: observations stay exactly as the contract
//! says, and a client that never asks for text pays nothing for it.

use serde::{Deserialize, Serialize};

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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
