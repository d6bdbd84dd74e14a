//! The picture on screen: the decoded screenshot, its text layer, and their encoding for this
//! terminal. Encoding runs off the UI loop; the previous picture stays until the new one is ready,
//! so nothing flashes.
//!
//! Half-block pictures are cells that the view draws like any other: `▀` with the upper pixel's
//! colour in front and the lower one's behind. Pixel pictures (sixel,
//! kitty, iTerm2) are written straight to the terminal after the cells, at the picture's corner,
//! and only when something changed: a new picture, a cleared screen, or the picture coming back
//! from under the help overlay. Kitty images sit above the text, so they are taken off explicitly
//! when hidden; sixel and iTerm2 images are part of the text area and are overwritten by it.

use std::io::Write;
use std::sync::Arc;

use image::{DynamicImage, RgbImage};
use ratatui::style::{Color, Modifier};

use browserenv::text_layer::TextLayer;

use crate::graphics::picture::{prepare, Region, View, PAGE_HEIGHT, PAGE_WIDTH};
use crate::graphics::{encode, Graphics, Protocol};
use crate::screen::text_overlay;

/// One terminal cell of a half-block picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint {
    pub symbol: char,
    pub fg: Color,
    pub bg: Color,
    pub modifier: Modifier,
}

/// A picture encoded for the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encoded {
    /// Half-blocks: the view's cells, row by row.
    Cells(Vec<Paint>),
    /// A pixel protocol: the escape that draws the image at the cursor.
    Escape {
        data: String,
        /// The kitty image id the escape transmits.
        kitty_id: Option<u32>,
    },
}

/// What a picture is encoded for; a new one is encoded when this changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    generation: u64,
    /// The text layer's generation, 0 without one.
    text: u64,
    pub view: View,
    grid: bool,
}

/// A picture slot: the main UI has one, the recording viewer two.
pub struct Slot {
    /// Kitty ids `kitty_base` and `kitty_base + 1`, alternating: the new image is placed before
    /// the old one is deleted, so nothing flashes.
    kitty_base: u32,
    next_kitty: u32,
    image: Option<Arc<DynamicImage>>,
    /// The PNG the image was decoded from, sent as it is when shown unchanged at 1:1.
    png: Option<Arc<Vec<u8>>>,
    generation: u64,
    text: Option<Arc<TextLayer>>,
    text_generation: u64,
    shown: Option<(Wanted, Arc<Encoded>)>,
    encoding: Option<Wanted>,
    /// What the terminal shows of a pixel picture; None after a clear.
    on_screen: Option<OnScreen>,
    /// The kitty image the terminal holds for this slot, and which picture it is; kept across
    /// clears, so it is deleted (or placed again) on the next draw.
    kitty_placed: Option<(u32, Wanted)>,
}

#[derive(Debug, Clone, Copy)]
struct OnScreen {
    wanted: Wanted,
    kitty_id: Option<u32>,
    hidden: bool,
}

/// The work of one encoding, to run on a blocking thread.
pub struct Job {
    wanted: Wanted,
    image: Arc<DynamicImage>,
    png: Option<Arc<Vec<u8>>>,
    text: Option<Arc<TextLayer>>,
    graphics: Graphics,
    kitty_id: u32,
}

impl Job {
    /// Always answers, even if encoding panicked: the slot waits for this answer before it
    /// starts another encoding.
    pub fn run(self) -> (Wanted, Result<Encoded, String>) {
        let encoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            encode_picture(
                &self.image,
                self.png.as_deref().map(Vec::as_slice),
                self.text.as_deref(),
                &self.wanted,
                &self.graphics,
                self.kitty_id,
            )
        }))
        .unwrap_or_else(|_| Err("encoding the picture panicked".into()));
        (self.wanted, encoded)
    }
}

impl Slot {
    pub fn new(kitty_base: u32) -> Self {
        Slot {
            kitty_base,
            next_kitty: kitty_base,
            image: None,
            png: None,
            generation: 0,
            text: None,
            text_generation: 0,
            shown: None,
            encoding: None,
            on_screen: None,
            kitty_placed: None,
        }
    }

    /// A new screenshot (None: none to show). Its text layer comes separately, later.
    pub fn set_image(&mut self, image: Option<Arc<DynamicImage>>) {
        self.set_picture(image, None);
    }

    /// A new screenshot with the PNG it was decoded from.
    pub fn set_picture(&mut self, image: Option<Arc<DynamicImage>>, png: Option<Arc<Vec<u8>>>) {
        self.generation += 1;
        self.text = None;
        if image.is_none() {
            self.shown = None;
        }
        self.image = image;
        self.png = png;
    }

    /// The text layer of the current screenshot.
    pub fn set_text(&mut self, text: Option<Arc<TextLayer>>) {
        self.text_generation += 1;
        self.text = text;
    }

    pub fn has_image(&self) -> bool {
        self.image.is_some()
    }

    /// What should be on screen for this view.
    pub fn wanted(&self, view: Option<View>, grid: bool, text_on: bool) -> Option<Wanted> {
        self.image.as_ref()?;
        let text = match (&self.text, text_on) {
            (Some(_), true) => self.text_generation,
            _ => 0,
        };
        Some(Wanted {
            generation: self.generation,
            text,
            view: view?,
            grid,
        })
    }

    /// The encoding to start now, if the picture shown is not the one wanted and none is running.
    pub fn job(&mut self, wanted: Option<Wanted>, graphics: &Graphics) -> Option<Job> {
        let wanted = wanted?;
        let current = self.shown.as_ref().map(|(key, _)| *key);
        if current == Some(wanted) || self.encoding.is_some() {
            return None;
        }
        let image = self.image.clone()?;
        self.encoding = Some(wanted);
        let kitty_id = self.next_kitty;
        self.next_kitty = if kitty_id == self.kitty_base {
            self.kitty_base + 1
        } else {
            self.kitty_base
        };
        Some(Job {
            wanted,
            image,
            png: self.png.clone(),
            text: (wanted.text != 0).then(|| self.text.clone()).flatten(),
            graphics: graphics.clone(),
            kitty_id,
        })
    }

    /// A finished encoding; one for an older screenshot is dropped.
    pub fn encoded(&mut self, wanted: Wanted, encoded: Result<Encoded, String>) {
        self.encoding = None;
        match encoded {
            Ok(encoded) if wanted.generation == self.generation => {
                self.shown = Some((wanted, Arc::new(encoded)))
            }
            Ok(_) => {}
            Err(err) => tracing::warn!("could not encode the picture: {err}"),
        }
    }

    /// Encode right here (the viewer, tests and the benchmark).
    pub fn encode_now(&mut self, wanted: Option<Wanted>, graphics: &Graphics) {
        if let Some(job) = self.job(wanted, graphics) {
            let (wanted, encoded) = job.run();
            self.encoded(wanted, encoded);
        }
    }

    /// The picture's cells, when it is a half-block one.
    pub fn cells(&self) -> Option<(View, &[Paint])> {
        let (wanted, encoded) = self.shown.as_ref()?;
        match encoded.as_ref() {
            Encoded::Cells(cells) => Some((wanted.view, cells)),
            Encoded::Escape { .. } => None,
        }
    }

    /// The picture on screen belongs to the newest screenshot.
    pub fn current(&self) -> bool {
        self.shown
            .as_ref()
            .is_some_and(|(key, _)| key.generation == self.generation)
    }

    /// The text layer shown with the picture, if any.
    pub fn text_shown(&self) -> bool {
        self.shown.as_ref().is_some_and(|(key, _)| key.text != 0)
    }

    /// The view of the picture on screen.
    pub fn shown_view(&self) -> Option<View> {
        self.shown.as_ref().map(|(key, _)| key.view)
    }

    /// The terminal was cleared: a pixel picture must be drawn again.
    pub fn forget_screen(&mut self) {
        self.on_screen = None;
    }

    /// The pixel picture to show now: the one encoded, if the view is the one on screen now
    /// (after a resize, an old encoding is not drawn into the new layout) and nothing covers it.
    fn to_show(&self, visible: bool, current: Option<View>) -> Option<(Wanted, Arc<Encoded>)> {
        let (wanted, encoded) = self.shown.as_ref()?;
        (visible && Some(wanted.view) == current && matches!(**encoded, Encoded::Escape { .. }))
            .then(|| (*wanted, encoded.clone()))
    }

    /// Before the cells are drawn: whether the screen must be cleared first. A sixel or iTerm2
    /// image is part of the text area: when it goes away, moves, or goes under an overlay, its
    /// pixels stay where no cell changes (a blank cell over a blank cell is never written).
    pub fn needs_clear(&self, visible: bool, current: Option<View>) -> bool {
        let Some(on_screen) = self.on_screen else {
            return false;
        };
        if on_screen.kitty_id.is_some() || on_screen.hidden {
            // Kitty images are taken off by id; a hidden one is already off.
            return false;
        }
        match self.to_show(visible, current) {
            Some((wanted, _)) => wanted.view.cells != on_screen.wanted.view.cells,
            None => true,
        }
    }

    /// After the cells are drawn: bring the terminal's pixel picture up to date for the view on
    /// screen (`current`); `visible`: the picture is not under an overlay.
    pub fn draw_pixels(
        &mut self,
        out: &mut dyn Write,
        visible: bool,
        current: Option<View>,
        passthrough: bool,
    ) -> std::io::Result<()> {
        let wrap = |escape: String| {
            if passthrough {
                encode::passthrough(&escape)
            } else {
                escape
            }
        };
        let Some((wanted, encoded)) = self.to_show(visible, current) else {
            // Hidden or gone: kitty images float above the text and must be taken off (once);
            // a picture that is gone for good takes its data with it.
            let gone = self.shown.is_none();
            match self.kitty_placed {
                Some((id, holds)) if !self.on_screen.is_some_and(|s| s.hidden) || gone => {
                    out.write_all(wrap(encode::kitty_delete(id, gone)).as_bytes())?;
                    self.on_screen = Some(OnScreen {
                        wanted: holds,
                        kitty_id: Some(id),
                        hidden: true,
                    });
                    if gone {
                        self.kitty_placed = None;
                        self.on_screen = None;
                    }
                }
                _ => {
                    if let Some(on_screen) = self.on_screen.as_mut() {
                        on_screen.hidden = true;
                    }
                }
            }
            return Ok(());
        };
        if self
            .on_screen
            .is_some_and(|s| s.wanted == wanted && !s.hidden)
        {
            return Ok(());
        }
        let Encoded::Escape { data, kitty_id } = encoded.as_ref() else {
            return Ok(());
        };
        let (column, row) = (wanted.view.cells.x, wanted.view.cells.y);
        write!(out, "\x1b[{};{}H", row + 1, column + 1)?;
        match (*kitty_id, self.kitty_placed) {
            // The same kitty image, back from under an overlay or after a clear: its placements
            // off, then one again, without sending its data again.
            (Some(id), Some((placed, holds))) if placed == id && holds == wanted => {
                out.write_all(wrap(encode::kitty_delete(id, false)).as_bytes())?;
                out.write_all(wrap(encode::kitty_place(id)).as_bytes())?;
            }
            (Some(id), previous) => {
                out.write_all(wrap(data.clone()).as_bytes())?;
                if let Some((old, _)) = previous.filter(|(old, _)| *old != id) {
                    out.write_all(wrap(encode::kitty_delete(old, true)).as_bytes())?;
                }
                self.kitty_placed = Some((id, wanted));
            }
            (None, _) => out.write_all(wrap(data.clone()).as_bytes())?,
        }
        self.on_screen = Some(OnScreen {
            wanted,
            kitty_id: *kitty_id,
            hidden: false,
        });
        Ok(())
    }
}

/// The main UI's picture: one slot, encoded on the blocking pool, drawn with this terminal's
/// graphics once they are known.
pub struct Painter {
    pub graphics: Graphics,
    /// The terminal's answers are in (until then nothing is encoded: no flash of half-blocks).
    pub ready: bool,
    pub slot: Slot,
    /// The terminal size of the last frame: a new one means ratatui cleared the screen.
    size: Option<ratatui::layout::Size>,
}

impl Painter {
    pub fn new(graphics: Graphics) -> Self {
        Painter {
            graphics,
            ready: true,
            slot: Slot::new(1),
            size: None,
        }
    }

    /// Waiting for the terminal's answers: draw nothing but cells until `set_graphics`.
    pub fn pending() -> Self {
        Painter {
            ready: false,
            ..Painter::new(Graphics::halfblocks())
        }
    }

    pub fn set_graphics(&mut self, graphics: Graphics) {
        self.graphics = graphics;
        self.ready = true;
        self.slot.forget_screen();
    }

    /// What should be on screen for the app's state on a `screen` of cells.
    pub fn wanted(&self, app: &crate::app::App, screen: ratatui::layout::Size) -> Option<Wanted> {
        if !self.ready {
            return None;
        }
        let area = ratatui::layout::Rect::new(0, 0, screen.width, screen.height);
        let areas = crate::screen::layout::layout(
            area,
            &self.graphics,
            !app.tasks.is_empty(),
            app.region(),
        );
        self.slot.wanted(areas.picture, app.grid, app.wants_text())
    }

    /// The encoding to start for the app's state, if one is needed.
    pub fn job(&mut self, app: &crate::app::App, screen: ratatui::layout::Size) -> Option<Job> {
        let wanted = self.wanted(app, screen);
        self.slot.job(wanted, &self.graphics)
    }

    /// Encode synchronously (tests and the frame benchmark).
    pub fn encode_now(&mut self, app: &crate::app::App, screen: ratatui::layout::Size) {
        let wanted = self.wanted(app, screen);
        self.slot.encode_now(wanted, &self.graphics);
    }

    /// A frame of `size` is about to be drawn; true when the size changed (the screen is cleared).
    pub fn resized(&mut self, size: ratatui::layout::Size) -> bool {
        let changed = self.size.is_some_and(|s| s != size);
        self.size = Some(size);
        if changed {
            self.slot.forget_screen();
        }
        changed
    }
}

/// Encode a screenshot for the view: pixels for a pixel protocol, or half-block cells with the
/// text layer drawn over them.
fn encode_picture(
    screenshot: &DynamicImage,
    original: Option<&[u8]>,
    text: Option<&TextLayer>,
    wanted: &Wanted,
    graphics: &Graphics,
    kitty_id: u32,
) -> Result<Encoded, String> {
    let view = &wanted.view;
    // Shown as it is (the whole page at 1:1, no grid): the server's own PNG, not a new one.
    let as_is = view.region == Region::PAGE
        && view.pixels == (PAGE_WIDTH as u32, PAGE_HEIGHT as u32)
        && !wanted.grid;
    let png = |prepared: &RgbImage| match original.filter(|_| as_is) {
        Some(original) => original.to_vec(),
        None => encode::png(prepared),
    };
    let prepared = prepare(screenshot, view, graphics.protocol, wanted.grid);
    match graphics.protocol {
        Protocol::Halfblocks => Ok(Encoded::Cells(half_blocks(
            &prepared, screenshot, text, view,
        ))),
        Protocol::Sixel => Ok(Encoded::Escape {
            data: encode::sixel(&prepared, graphics.colors)?,
            kitty_id: None,
        }),
        Protocol::Kitty => Ok(Encoded::Escape {
            data: encode::kitty_show(&png(&prepared), kitty_id),
            kitty_id: Some(kitty_id),
        }),
        Protocol::Iterm2 => Ok(Encoded::Escape {
            data: encode::iterm2(&png(&prepared), view.pixels.0, view.pixels.1),
            kitty_id: None,
        }),
    }
}

/// Half-block cells, then the text layer's characters on the colour behind each run.
fn half_blocks(
    prepared: &RgbImage,
    screenshot: &DynamicImage,
    text: Option<&TextLayer>,
    view: &View,
) -> Vec<Paint> {
    let (columns, rows) = (view.cells.width, view.cells.height);
    // 32 levels per channel: neighbouring cells of one colour (most of a page) then compare equal
    // and are sent without a colour change, and a changed frame costs less over SSH.
    let level = |c: u8| (c & 0xf8) | (c >> 5);
    let rgb = |p: &image::Rgb<u8>| Color::Rgb(level(p.0[0]), level(p.0[1]), level(p.0[2]));
    let mut cells = Vec::with_capacity(usize::from(columns) * usize::from(rows));
    for row in 0..u32::from(rows) {
        for column in 0..u32::from(columns) {
            let top = prepared.get_pixel(column, row * 2);
            let bottom = prepared.get_pixel(column, (row * 2 + 1).min(prepared.height() - 1));
            let (fg, bg) = (rgb(top), rgb(bottom));
            // One colour: a blank in it, which neighbours in the same colour send for free.
            let symbol = if fg == bg { ' ' } else { '▀' };
            cells.push(Paint {
                symbol,
                fg,
                bg,
                modifier: Modifier::empty(),
            });
        }
    }
    let Some(text) = text else { return cells };
    let page = screenshot.to_rgb8();
    let placed = text_overlay::place(&text.runs, view);
    let styles: Vec<_> = placed
        .iter()
        .map(|p| {
            let run = &text.runs[p.run];
            text_overlay::style(run, text_overlay::background(&page, run))
        })
        .collect();
    // Clear every run's box first, then write all the text, so no box hides another's text.
    for (placed, (_, bg, _)) in placed.iter().zip(&styles) {
        for (row, first, end) in text_overlay::box_cells(&text.runs[placed.run], view) {
            for column in first..end {
                let index = usize::from(row) * usize::from(columns) + usize::from(column);
                if let Some(cell) = cells.get_mut(index) {
                    *cell = Paint {
                        symbol: ' ',
                        fg: *bg,
                        bg: *bg,
                        modifier: Modifier::empty(),
                    };
                }
            }
        }
    }
    for (placed, &(fg, bg, modifier)) in placed.iter().zip(&styles) {
        let mut column = placed.column;
        for (symbol, width) in &placed.chars {
            for part in 0..*width {
                let index =
                    usize::from(placed.row) * usize::from(columns) + usize::from(column + part);
                if let Some(cell) = cells.get_mut(index) {
                    // The second half of a wide character is a blank the terminal covers.
                    let symbol = if part == 0 { *symbol } else { ' ' };
                    *cell = Paint {
                        symbol,
                        fg,
                        bg,
                        modifier,
                    };
                }
            }
            column += width;
        }
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;
    use browserenv::text_layer::{RunKind, TextRun};
    use ratatui::layout::Rect;

    fn page() -> Arc<DynamicImage> {
        Arc::new(DynamicImage::ImageRgb8(RgbImage::from_pixel(
            800,
            600,
            image::Rgb([255, 255, 255]),
        )))
    }

    fn view(graphics: &Graphics) -> View {
        View::fit(Rect::new(4, 1, 100, 37), graphics, Region::PAGE).unwrap()
    }

    #[test]
    fn half_blocks_carry_the_text_layer() {
        let graphics = Graphics::halfblocks();
        let mut slot = Slot::new(1);
        slot.set_image(Some(page()));
        let layer = TextLayer {
            runs: vec![TextRun {
                text: "$18.95".into(),
                x: 0,
                y: 0,
                width: 50,
                height: 16,
                size: 16.0,
                color: [200, 200, 200],
                bold: true,
                link: false,
                kind: RunKind::Text,
            }],
            ..TextLayer::default()
        };
        slot.set_text(Some(Arc::new(layer)));
        let wanted = slot.wanted(Some(view(&graphics)), false, true);
        slot.encode_now(wanted, &graphics);
        assert!(slot.current() && slot.text_shown());
        let (view, cells) = slot.cells().unwrap();
        assert_eq!(
            cells.len(),
            usize::from(view.cells.width * view.cells.height)
        );
        let line: String = cells[..6].iter().map(|c| c.symbol).collect();
        assert_eq!(line, "$18.95");
        // Light grey on white is unreadable: drawn black, bold, on the white behind it.
        assert_eq!(cells[0].fg, Color::Rgb(0, 0, 0));
        assert_eq!(cells[0].bg, Color::Rgb(255, 255, 255));
        assert!(cells[0].modifier.contains(Modifier::BOLD));
        assert_eq!(cells[6].symbol, ' ', "white above white");
        // Text off: the same screenshot again, without it.
        let plain = slot.wanted(Some(view), false, false);
        slot.encode_now(plain, &graphics);
        assert_eq!(slot.cells().unwrap().1[0].symbol, ' ');
    }

    #[test]
    fn kitty_pictures_replace_the_old_id_and_hide_under_overlays() {
        let graphics = Graphics::pixels(Protocol::Kitty, (9, 20));
        let mut slot = Slot::new(5);
        slot.set_image(Some(page()));
        let view = view(&graphics);
        let now = Some(view);
        slot.encode_now(slot.wanted(now, false, false), &graphics);
        let draw = |slot: &mut Slot, visible: bool| {
            let mut out = Vec::new();
            slot.draw_pixels(&mut out, visible, now, false).unwrap();
            String::from_utf8(out).unwrap()
        };
        let first = draw(&mut slot, true);
        assert!(
            first.starts_with("\x1b[2;5H\x1b_Ga=T,f=100,t=d,i=5,"),
            "{:?}",
            &first[..40]
        );
        // Nothing changed: nothing is written.
        assert_eq!(draw(&mut slot, true), "");
        // Under the help overlay: taken off once, data kept; back: placed again, no new data.
        assert_eq!(draw(&mut slot, false), "\x1b_Ga=d,d=i,i=5,q=2\x1b\\");
        assert_eq!(draw(&mut slot, false), "", "taken off once");
        assert!(!slot.needs_clear(false, now), "kitty needs no clearing");
        assert_eq!(
            draw(&mut slot, true),
            "\x1b[2;5H\x1b_Ga=d,d=i,i=5,q=2\x1b\\\x1b_Ga=p,i=5,q=2,C=1\x1b\\"
        );
        // After the screen was cleared: placed again, without new data.
        slot.forget_screen();
        assert!(draw(&mut slot, true).ends_with("\x1b_Ga=p,i=5,q=2,C=1\x1b\\"));
        // A new screenshot: id 6 shown, then 5 deleted with its data.
        slot.set_image(Some(page()));
        slot.encode_now(slot.wanted(now, false, false), &graphics);
        let second = draw(&mut slot, true);
        assert!(second.contains("i=6,"));
        assert!(second.ends_with("\x1b_Ga=d,d=I,i=5,q=2\x1b\\"));
        // The layout changed (a resize) and the new picture is not encoded yet: the old one is
        // not drawn into it.
        let mut out = Vec::new();
        let moved = View {
            cells: Rect::new(4, 1, 10, 5),
            ..view
        };
        slot.forget_screen();
        slot.draw_pixels(&mut out, true, Some(moved), false)
            .unwrap();
        assert!(!String::from_utf8(out).unwrap().contains("a=p"));
    }

    #[test]
    fn sixel_pictures_are_redrawn_only_when_needed_and_cleared_under_overlays() {
        let graphics = Graphics::pixels(Protocol::Sixel, (6, 13));
        let mut slot = Slot::new(1);
        slot.set_image(Some(page()));
        let view = view(&graphics);
        let now = Some(view);
        slot.encode_now(slot.wanted(now, false, false), &graphics);
        let mut out = Vec::new();
        slot.draw_pixels(&mut out, true, now, false).unwrap();
        assert!(String::from_utf8_lossy(&out).contains("\x1bP9;1;0q"));
        let mut out = Vec::new();
        slot.draw_pixels(&mut out, true, now, false).unwrap();
        assert!(out.is_empty());
        assert!(!slot.needs_clear(true, now));
        // The help overlay opens over it: the screen is cleared so the overlay shows whole.
        assert!(slot.needs_clear(false, now));
        // The screen was cleared (a resize, an overlay): drawn again once visible.
        slot.forget_screen();
        let mut out = Vec::new();
        slot.draw_pixels(&mut out, true, now, false).unwrap();
        assert!(!out.is_empty());
        // A new layout (too small for a picture): cleared away.
        assert!(slot.needs_clear(true, None));
        // Gone: the screen must be cleared where it was.
        slot.set_image(None);
        assert!(slot.needs_clear(true, now));
    }
}
