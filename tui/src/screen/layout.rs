//! Where things go on the screen: the rulers, the picture's pane and the picture in it, the task
//! row, the status bar and the bottom line. One function for the view that draws them, the
//! painter that encodes the picture for its place, and mouse mapping, so a click maps to what is
//! drawn.

use ratatui::layout::{Constraint, Layout, Rect};

use crate::graphics::picture::{Region, View};
use crate::graphics::Graphics;

/// Width of the left ruler: three digits and a tick (the top ruler is one row).
pub const RULER_WIDTH: u16 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub top_ruler: Rect,
    pub left_ruler: Rect,
    /// The pane the picture may use.
    pub pane: Rect,
    /// Where the picture is drawn and what it shows.
    pub picture: Option<View>,
    pub task: Rect,
    pub status: Rect,
    pub line: Rect,
}

/// `task_row`: one more row above the status bar for the task's instruction.
pub fn layout(area: Rect, graphics: &Graphics, task_row: bool, region: Region) -> Areas {
    let [pane_with_rulers, task, status, line] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(u16::from(task_row)),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let inner = Rect {
        x: pane_with_rulers.x + RULER_WIDTH.min(pane_with_rulers.width),
        y: pane_with_rulers.y + 1.min(pane_with_rulers.height),
        width: pane_with_rulers.width.saturating_sub(RULER_WIDTH),
        height: pane_with_rulers.height.saturating_sub(1),
    };
    let picture = View::fit(inner, graphics, region);
    let drawn = picture.map_or(inner, |view| view.cells);
    Areas {
        top_ruler: Rect::new(
            inner.x,
            pane_with_rulers.y,
            drawn.width,
            1.min(pane_with_rulers.height),
        ),
        left_ruler: Rect::new(
            pane_with_rulers.x,
            inner.y,
            RULER_WIDTH.min(pane_with_rulers.width),
            drawn.height,
        ),
        pane: inner,
        picture,
        task,
        status,
        line,
    }
}
