//! Pointing at the page: the crosshair the arrows move, the wheel, the zoom lens that follows the crosshair, and the grid and text-layer
//! switches that change how the picture is drawn.

use browserenv::models::BrowserAction;

use super::{App, Effect};
use crate::graphics::picture::{Region, PAGE_HEIGHT, PAGE_WIDTH, ZOOMS};

/// Arrow keys move the crosshair this far; with Shift, `FAST_STEP`.
pub const STEP: i64 = 10;
pub const FAST_STEP: i64 = 50;

impl App {
    pub(super) fn on_wheel(&mut self, direction: i64) -> Vec<Effect> {
        if self.help {
            return Vec::new();
        }
        self.step(BrowserAction::scroll(direction * self.scroll_step))
    }

    pub(super) fn move_crosshair(&mut self, dx: i64, dy: i64) {
        let (x, y) = self.crosshair;
        self.crosshair = (
            (x + dx).clamp(0, PAGE_WIDTH - 1),
            (y + dy).clamp(0, PAGE_HEIGHT - 1),
        );
        // The lens follows a crosshair that leaves it.
        if self.zoom > 1 && !self.lens.contains(self.crosshair.0, self.crosshair.1) {
            self.lens = Region::lens(self.zoom, self.crosshair);
        }
    }

    /// The part of the page the picture shows: all of it, or the lens's part.
    pub fn region(&self) -> Region {
        if self.zoom > 1 {
            self.lens
        } else {
            Region::PAGE
        }
    }

    /// Whether the picture should carry the text layer (and so whether to ask for it).
    pub fn wants_text(&self) -> bool {
        self.text_picture && self.text_layer && self.text_unavailable.is_none()
    }

    /// `z`: 1x, 2x, 4x, back to 1x; or straight to `zoom`.
    pub(super) fn set_zoom(&mut self, zoom: Option<u8>) -> Vec<Effect> {
        let next = zoom.unwrap_or_else(|| {
            let at = ZOOMS.iter().position(|&z| z == self.zoom).unwrap_or(0);
            ZOOMS[(at + 1) % ZOOMS.len()]
        });
        if !ZOOMS.contains(&next) {
            self.error("zoom is 1, 2 or 4");
            return Vec::new();
        }
        self.zoom = next;
        self.lens = Region::lens(next, self.crosshair);
        self.notice(if next == 1 {
            "zoom off: the whole page".to_string()
        } else {
            format!("zoom {next}x around the crosshair (arrows move it, z again for more)")
        });
        vec![Effect::Redraw]
    }

    pub(super) fn toggle_grid(&mut self) -> Vec<Effect> {
        self.grid = !self.grid;
        self.notice(if self.grid { "grid on" } else { "grid off" });
        vec![Effect::Redraw]
    }

    pub(super) fn toggle_text(&mut self) -> Vec<Effect> {
        if !self.text_picture {
            self.error("the text layer draws over half-blocks only (--graphics halfblocks)");
            return Vec::new();
        }
        self.text_layer = !self.text_layer;
        let text = match (&self.text_unavailable, self.text_layer) {
            (Some(reason), true) => format!("text layer on, but {reason}"),
            (None, true) => "text layer on".into(),
            (_, false) => "text layer off: the picture alone".into(),
        };
        self.notice(text);
        vec![Effect::Redraw]
    }

    /// The server has no text layer: said once, and the picture goes on alone.
    pub(super) fn on_text_unavailable(&mut self, reason: String) -> Vec<Effect> {
        if self.text_unavailable.is_none() {
            self.notice(format!(
                "no text layer: {reason}; showing the picture alone"
            ));
            self.text_unavailable = Some(reason);
        }
        vec![Effect::Redraw]
    }
}
