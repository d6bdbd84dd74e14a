//! One frame of the live screen: drawn whole (`render`, on the size `screen` gives), reported
//! to what follows the UI's state (`FrameReport`: the tests, the benchmark), and logged where
//! the terminal tests read it (`log_graphics`, `log_picture`).

use std::io::Write;

use ratatui::backend::Backend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use tokio::sync::mpsc;

use crate::app::App;
use crate::graphics::Graphics;
use crate::screen::layout::layout;
use crate::screen::painter::Painter;
use crate::screen::view::draw;

/// Draw one frame. With `out` (a real terminal) the frame is one synchronized update and pixel
/// pictures are written after the cells; without it (a test backend) only cells are drawn.
pub fn render<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    painter: &mut Painter,
    mut out: Option<&mut dyn Write>,
) -> anyhow::Result<()> {
    let size = screen(terminal)?;
    let areas = layout(
        Rect::new(0, 0, size.width, size.height),
        &painter.graphics,
        !app.tasks.is_empty(),
        app.region(),
    );
    app.picture = areas.picture;
    // The help's pages follow the size drawn on.
    app.terminal = (size.width, size.height);
    painter.resized(size);
    let pixels = painter.ready && !painter.graphics.is_text();
    if let Some(out) = out.as_deref_mut() {
        // Synchronized update (mode 2026): the terminal shows the frame whole.
        out.write_all(b"\x1b[?2026h")?;
    }
    let visible = !app.overlay_open();
    if pixels && painter.slot.needs_clear(visible, app.picture) {
        // A pixel picture that went away or moved leaves its pixels where no cell changes.
        terminal
            .clear()
            .map_err(|err| anyhow::anyhow!("clear: {err:?}"))?;
        painter.slot.forget_screen();
    }
    terminal
        .draw(|frame| draw(frame, app, &painter.slot, &painter.graphics))
        .map_err(|err| anyhow::anyhow!("draw: {err:?}"))?;
    if let Some(out) = out {
        if pixels {
            let passthrough = painter.graphics.passthrough;
            painter
                .slot
                .draw_pixels(out, visible, app.picture, passthrough)?;
        }
        out.write_all(b"\x1b[?2026l")?;
        out.flush()?;
    }
    Ok(())
}

/// The size the UI draws on: the terminal's (after following a resize), or a fixed viewport's.
pub fn screen<B: Backend>(terminal: &mut Terminal<B>) -> anyhow::Result<ratatui::layout::Size> {
    terminal
        .autoresize()
        .map_err(|err| anyhow::anyhow!("terminal size: {err:?}"))?;
    Ok(terminal.get_frame().area().as_size())
}

/// The UI's state as of a drawn frame.
#[derive(Debug, Clone)]
pub struct FrameReport {
    pub observed: Option<crate::app::Observed>,
    pub link: crate::app::LinkState,
    pub in_flight: bool,
    /// Watch mode: the person in control of the watched session (None: its agent).
    pub controller: Option<String>,
    /// Watch mode: this UI holds control.
    pub in_control: bool,
    /// The picture on screen belongs to the latest screenshot.
    pub picture_current: bool,
    /// The picture on screen carries the text layer.
    pub text_shown: bool,
    pub notice: Option<crate::app::Notice>,
    /// Where the picture is and what it shows.
    pub picture: Option<crate::graphics::picture::View>,
    pub graphics: Option<Graphics>,
    /// Collect mode: the lease in hand, whether its episode waits for the mark, what was saved.
    pub collect: Option<crate::app::Collecting>,
    /// The task of the current episode.
    pub task: Option<String>,
    /// Watch mode: the watched session's agent asks for a person.
    pub asking: Option<crate::asks::Ask>,
    /// How many times the terminal's bell rang so far.
    pub bells: u64,
}

/// Report the frame just drawn (`bells`: how many times the bell rang so far).
pub fn report(
    frames: &mpsc::UnboundedSender<FrameReport>,
    app: &App,
    painter: &Painter,
    bells: u64,
) {
    let _ = frames.send(FrameReport {
        observed: app.observed.clone(),
        link: app.link.clone(),
        in_flight: app.in_flight.is_some(),
        controller: app.controller.clone(),
        in_control: app.in_control,
        picture_current: painter.slot.current(),
        text_shown: painter.slot.current() && painter.slot.text_shown(),
        notice: app.notice.clone(),
        picture: painter.slot.shown_view(),
        graphics: painter.ready.then(|| painter.graphics.clone()),
        collect: app.collect.clone(),
        task: app.task().map(|t| t.id.clone()),
        asking: app.asking.clone(),
        bells,
    });
}

/// What the terminal said and what was chosen, for `--log` (the terminal tests read it).
pub fn log_graphics(graphics: &Graphics) {
    tracing::info!(
        "graphics: {} ({}); terminal {}, cell {}x{} px{}, sixel limit {:?}, pixel mouse {}",
        graphics.name(),
        graphics.reason,
        graphics.terminal,
        graphics.cell.0,
        graphics.cell.1,
        if graphics.cell_known {
            ""
        } else {
            " (estimated)"
        },
        graphics.sixel_max,
        graphics.pixel_mouse,
    );
}

/// Where the picture is, for `--log` (the terminal tests find it on screen with this).
pub fn log_picture(graphics: &Graphics, view: &crate::graphics::picture::View) {
    tracing::info!(
        "picture: {} at cell {},{} size {}x{} cells, {}x{} px, region {},{} {}x{}",
        graphics.name(),
        view.cells.x,
        view.cells.y,
        view.cells.width,
        view.cells.height,
        view.pixels.0,
        view.pixels.1,
        view.region.x,
        view.region.y,
        view.region.width,
        view.region.height,
    );
}
