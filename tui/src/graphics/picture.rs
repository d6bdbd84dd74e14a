//! The page picture's geometry: where the 800x600 screenshot (or the zoom lens's part of it) sits
//! in the terminal, how a terminal cell or pixel maps to a page pixel and back, and how a
//! screenshot is prepared for drawing (cropped to the lens, scaled, grid lines drawn in).
//!
//! Pixel pictures are never scaled past 1:1: a terminal bigger than 800x600 pixels gets margins,
//! not a blurrier, larger image that a terminal may refuse (xterm drops sixel images past its
//! 1000x1000 limit and shows nothing).

use image::{DynamicImage, Rgb, RgbImage};
use ratatui::layout::Rect;

use crate::graphics::{Graphics, Protocol};

pub const PAGE_WIDTH: i64 = 800;
pub const PAGE_HEIGHT: i64 = 600;
/// Grid lines and ruler labels every this many page pixels at 1x (half as many per zoom step).
pub const GRID_STEP: i64 = 100;
/// The zoom lens's magnifications; 1 is the whole page.
pub const ZOOMS: [u8; 3] = [1, 2, 4];
/// A pixel picture that would be scaled to this percentage or more is shown at 1:1 instead, cut
/// to the room there is.
const NEARLY_WHOLE: u32 = 95;

/// The part of the page that is shown, in page pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Region {
    pub x: i64,
    pub y: i64,
    pub width: i64,
    pub height: i64,
}

impl Region {
    pub const PAGE: Region = Region {
        x: 0,
        y: 0,
        width: PAGE_WIDTH,
        height: PAGE_HEIGHT,
    };

    /// The lens at `zoom`: 1/zoom of the page, centred on `around` as far as the page allows.
    pub fn lens(zoom: u8, around: (i64, i64)) -> Region {
        let zoom = i64::from(zoom.max(1));
        let (width, height) = (PAGE_WIDTH / zoom, PAGE_HEIGHT / zoom);
        Region {
            x: (around.0 - width / 2).clamp(0, PAGE_WIDTH - width),
            y: (around.1 - height / 2).clamp(0, PAGE_HEIGHT - height),
            width,
            height,
        }
    }

    pub fn zoom(&self) -> i64 {
        (PAGE_WIDTH / self.width.max(1)).max(1)
    }

    pub fn contains(&self, x: i64, y: i64) -> bool {
        (self.x..self.x + self.width).contains(&x) && (self.y..self.y + self.height).contains(&y)
    }

    /// Ruler labels and grid lines: every 100 page pixels at 1x, 50 at 2x, 25 at 4x.
    pub fn step(&self) -> i64 {
        (GRID_STEP / self.zoom()).max(1)
    }

    /// The first grid position at or after the region's start.
    pub fn first_step(&self, start: i64) -> i64 {
        let step = self.step();
        (start + step - 1).div_euclid(step) * step
    }
}

/// Where the picture is drawn and what it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct View {
    /// The cells the picture covers (the last column and row may be partly covered).
    pub cells: Rect,
    /// The picture's size in screen pixels: exactly what a pixel protocol draws; for half-blocks,
    /// the pixels of its cells.
    pub pixels: (u32, u32),
    /// One cell in screen pixels.
    pub cell: (u16, u16),
    pub region: Region,
}

impl View {
    /// The largest 4:3 picture inside `pane`, anchored top-left (the rulers sit against it).
    /// Pixel protocols never go past 800x600 screen pixels nor past the terminal's largest image.
    /// None when not even one cell fits.
    pub fn fit(pane: Rect, graphics: &Graphics, region: Region) -> Option<View> {
        let (cw, ch) = (
            u32::from(graphics.cell.0.max(1)),
            u32::from(graphics.cell.1.max(1)),
        );
        let (page_w, page_h) = (PAGE_WIDTH as u32, PAGE_HEIGHT as u32);
        let (width, height) = match graphics.protocol {
            Protocol::Halfblocks => {
                // Whole cells; one cell shows two picture pixels, one above the other.
                let rows_for_width =
                    (u64::from(pane.width) * u64::from(cw) * 3) / (4 * u64::from(ch));
                let rows = u64::from(pane.height)
                    .min(rows_for_width)
                    .min(u64::from(page_h / 2));
                let columns =
                    ((rows * u64::from(ch) * 4) as f64 / (3.0 * f64::from(cw))).round() as u64;
                let columns = columns.min(u64::from(pane.width)).min(u64::from(page_w));
                (columns as u32 * cw, rows as u32 * ch)
            }
            _ => {
                let (max_w, max_h) = graphics.sixel_max.unwrap_or((page_w, page_h));
                let fits = |w: u32| {
                    let h = w * 3 / 4;
                    w <= page_w
                        && w <= u32::from(pane.width) * cw
                        && h <= u32::from(pane.height) * ch
                        && (graphics.protocol != Protocol::Sixel || (w <= max_w && h <= max_h))
                };
                // The widest width (a multiple of 4, so the height is whole) that fits.
                let mut w = page_w;
                while w > 0 && !fits(w) {
                    w -= 4;
                }
                let (room_w, room_h) = (
                    (u32::from(pane.width) * cw).min(page_w),
                    (u32::from(pane.height) * ch).min(page_h),
                );
                let (room_w, room_h) = match graphics.protocol {
                    Protocol::Sixel => (room_w.min(max_w), room_h.min(max_h)),
                    _ => (room_w, room_h),
                };
                if w < page_w && w * 100 >= page_w * NEARLY_WHOLE {
                    // Nearly room for 1:1: the page at its own pixels, less the few rows or
                    // columns that do not fit, is sharper than all of it scaled by a few percent
                    // (and smaller to send: scaling multiplies a page's colours).
                    let region = Region {
                        width: region.width * i64::from(room_w) / PAGE_WIDTH,
                        height: region.height * i64::from(room_h) / PAGE_HEIGHT,
                        ..region
                    };
                    return Self::placed(pane, (room_w, room_h), (cw, ch), region);
                }
                (w, w * 3 / 4)
            }
        };
        Self::placed(pane, (width, height), (cw, ch), region)
    }

    fn placed(
        pane: Rect,
        (width, height): (u32, u32),
        (cw, ch): (u32, u32),
        region: Region,
    ) -> Option<View> {
        if width < cw || height < ch {
            return None;
        }
        let cells = Rect::new(
            pane.x,
            pane.y,
            width.div_ceil(cw) as u16,
            height.div_ceil(ch) as u16,
        );
        Some(View {
            cells,
            pixels: (width, height),
            cell: (cw as u16, ch as u16),
            region,
        })
    }

    /// The size of the image to prepare: screen pixels for a pixel protocol, two picture pixels
    /// per cell (one above the other) for half-blocks.
    pub fn image_size(&self, protocol: Protocol) -> (u32, u32) {
        match protocol {
            Protocol::Halfblocks => (
                u32::from(self.cells.width),
                u32::from(self.cells.height) * 2,
            ),
            _ => self.pixels,
        }
    }

    /// A screen pixel of the picture (from its top-left) to the page pixel it shows.
    fn picture_pixel_to_page(&self, px: u32, py: u32) -> (i64, i64) {
        let scale = |offset: u32, size: u32, start: i64, span: i64| -> i64 {
            let offset = offset.min(size.saturating_sub(1));
            start + (i64::from(offset) * span / i64::from(size.max(1))).clamp(0, span - 1)
        };
        (
            scale(px, self.pixels.0, self.region.x, self.region.width),
            scale(py, self.pixels.1, self.region.y, self.region.height),
        )
    }

    /// The page pixel under the centre of a terminal cell, if the cell is on the picture.
    pub fn cell_to_page(&self, column: u16, row: u16) -> Option<(i64, i64)> {
        if !self.cells.contains((column, row).into()) {
            return None;
        }
        let (cw, ch) = (u32::from(self.cell.0), u32::from(self.cell.1));
        let px = u32::from(column - self.cells.x) * cw + cw / 2;
        let py = u32::from(row - self.cells.y) * ch + ch / 2;
        Some(self.picture_pixel_to_page(px, py))
    }

    /// The page pixel under a terminal pixel (SGR-Pixels mouse reports: 0-based, from the top-left
    /// of the terminal's text area), if it is on the picture.
    pub fn pixel_to_page(&self, x: u32, y: u32) -> Option<(i64, i64)> {
        let left = u32::from(self.cells.x) * u32::from(self.cell.0);
        let top = u32::from(self.cells.y) * u32::from(self.cell.1);
        let (px, py) = (x.checked_sub(left)?, y.checked_sub(top)?);
        (px < self.pixels.0 && py < self.pixels.1).then(|| self.picture_pixel_to_page(px, py))
    }

    /// The cell showing a page pixel; None when the pixel is outside the region shown.
    pub fn page_to_cell(&self, x: i64, y: i64) -> Option<(u16, u16)> {
        if !self.region.contains(x, y) {
            return None;
        }
        let to = |offset: i64, span: i64, size: u32, cell: u16| -> u16 {
            let pixel = offset * i64::from(size) / span;
            (pixel / i64::from(cell.max(1))) as u16
        };
        let column = to(
            x - self.region.x,
            self.region.width,
            self.pixels.0,
            self.cell.0,
        );
        let row = to(
            y - self.region.y,
            self.region.height,
            self.pixels.1,
            self.cell.1,
        );
        Some((
            self.cells.x + column.min(self.cells.width - 1),
            self.cells.y + row.min(self.cells.height - 1),
        ))
    }

    /// A page position (pixels, may be fractional) to picture image pixels of `size`.
    pub fn page_to_image(&self, x: f64, y: f64, size: (u32, u32)) -> (f64, f64) {
        (
            (x - self.region.x as f64) * f64::from(size.0) / self.region.width as f64,
            (y - self.region.y as f64) * f64::from(size.1) / self.region.height as f64,
        )
    }
}

/// Crop the screenshot to the view's region, scale it to exactly the pixels the view draws, and
/// draw the grid into it.
pub fn prepare(screenshot: &DynamicImage, view: &View, protocol: Protocol, grid: bool) -> RgbImage {
    let (width, height) = view.image_size(protocol);
    let region = view.region;
    let source = if region == Region::PAGE {
        screenshot.to_rgb8()
    } else {
        screenshot
            .crop_imm(
                region.x as u32,
                region.y as u32,
                region.width as u32,
                region.height as u32,
            )
            .to_rgb8()
    };
    let mut image = if source.dimensions() == (width.max(1), height.max(1)) {
        source
    } else {
        // Half-blocks average many page pixels per picture pixel; pixel protocols keep text edges.
        let filter = match protocol {
            Protocol::Halfblocks => image::imageops::FilterType::Triangle,
            _ => image::imageops::FilterType::CatmullRom,
        };
        image::imageops::resize(&source, width.max(1), height.max(1), filter)
    };
    if grid {
        draw_grid(&mut image, view);
    }
    image
}

/// One-pixel lines at every ruler step, blended so the page stays readable under them.
fn draw_grid(image: &mut RgbImage, view: &View) {
    let (width, height) = image.dimensions();
    let region = view.region;
    let tint = |pixel: &mut Rgb<u8>| {
        let [r, g, b] = pixel.0;
        // Half-way towards magenta: visible on white and on dark pages.
        *pixel = Rgb([r / 2 + 110, g / 2, b / 2 + 110]);
    };
    let step = region.step() as usize;
    for page_x in (region.first_step(region.x.max(1))..region.x + region.width).step_by(step) {
        let x = ((page_x - region.x) * i64::from(width) / region.width) as u32;
        for y in 0..height {
            tint(image.get_pixel_mut(x.min(width - 1), y));
        }
    }
    for page_y in (region.first_step(region.y.max(1))..region.y + region.height).step_by(step) {
        let y = ((page_y - region.y) * i64::from(height) / region.height) as u32;
        for x in 0..width {
            tint(image.get_pixel_mut(x, y.min(height - 1)));
        }
    }
}

/// Decode a base64 PNG screenshot.
pub fn decode(screenshot: &str) -> Result<DynamicImage, String> {
    decode_png(screenshot).map(|(image, _)| image)
}

/// Decode a base64 PNG screenshot, keeping the PNG (sent as it is where it is shown unchanged).
pub fn decode_png(screenshot: &str) -> Result<(DynamicImage, Vec<u8>), String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(screenshot)
        .map_err(|err| format!("screenshot is not base64: {err}"))?;
    let image = image::load_from_memory_with_format(&bytes, image::ImageFormat::Png)
        .map_err(|err| format!("screenshot is not a PNG: {err}"))?;
    Ok((image, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half(cell: (u16, u16)) -> Graphics {
        Graphics {
            cell,
            ..Graphics::halfblocks()
        }
    }

    #[test]
    fn half_blocks_fit_four_by_three_in_whole_cells() {
        // 10x20 cells: 8 columns per 3 rows.
        let view = View::fit(Rect::new(4, 1, 196, 57), &half((10, 20)), Region::PAGE).unwrap();
        assert_eq!(view.cells, Rect::new(4, 1, 152, 57));
        let narrow = View::fit(Rect::new(0, 0, 80, 60), &half((10, 20)), Region::PAGE).unwrap();
        assert_eq!(narrow.cells, Rect::new(0, 0, 80, 30));
        assert_eq!(narrow.image_size(Protocol::Halfblocks), (80, 60));
        assert_eq!(
            View::fit(Rect::new(0, 0, 0, 10), &half((10, 20)), Region::PAGE),
            None
        );
        // xterm's 6x13 cells are narrower: more columns per row.
        let xterm = View::fit(Rect::new(4, 1, 116, 37), &half((6, 13)), Region::PAGE).unwrap();
        assert_eq!(xterm.cells.height, 37);
        assert_eq!(xterm.cells.width, 107);
    }

    #[test]
    fn pixel_pictures_stop_at_one_to_one_and_at_the_terminals_limit() {
        let sixel = Graphics::pixels(Protocol::Sixel, (6, 13));
        // 170x55 xterm: room for 1000+ pixels, but the page is 800x600.
        let big = View::fit(Rect::new(4, 1, 166, 52), &sixel, Region::PAGE).unwrap();
        assert_eq!(big.pixels, (800, 600));
        assert_eq!(big.cells, Rect::new(4, 1, 134, 47));
        // 100x35: 96 columns of 6 pixels = 576 wide at most.
        let small = View::fit(Rect::new(4, 1, 96, 32), &sixel, Region::PAGE).unwrap();
        assert_eq!(small.pixels, (552, 414), "32 rows of 13 px = 416 high");
        assert!(small.cells.width <= 96 && small.cells.height <= 32);
        // A terminal that takes at most 400x400 sixel pixels.
        let limited = Graphics {
            sixel_max: Some((400, 400)),
            ..sixel.clone()
        };
        let capped = View::fit(Rect::new(4, 1, 166, 52), &limited, Region::PAGE).unwrap();
        assert_eq!(capped.pixels, (400, 300));
        // Nearly room for 1:1 (8x16 cells, 116x37: 928x592 pixels): 1:1, less eight rows.
        let kitty8 = Graphics::pixels(Protocol::Kitty, (8, 16));
        let near = View::fit(Rect::new(4, 1, 116, 37), &kitty8, Region::PAGE).unwrap();
        assert_eq!(near.pixels, (800, 592));
        assert_eq!(
            near.region,
            Region {
                height: 592,
                ..Region::PAGE
            }
        );
        assert_eq!(near.pixel_to_page(32 + 799, 16 + 591), Some((799, 591)));
        // Kitty has no such limit, but stops at 1:1 too.
        let kitty = Graphics::pixels(Protocol::Kitty, (9, 20));
        let view = View::fit(Rect::new(4, 1, 196, 57), &kitty, Region::PAGE).unwrap();
        assert_eq!(view.pixels, (800, 600));
        assert_eq!(view.cells.width, 89, "800 / 9, rounded up");
    }

    #[test]
    fn cells_and_pixels_map_to_page_pixels() {
        let view = View::fit(Rect::new(4, 1, 80, 30), &half((10, 20)), Region::PAGE).unwrap();
        assert_eq!(view.cells, Rect::new(4, 1, 80, 30));
        assert_eq!(view.cell_to_page(4, 1), Some((5, 10)));
        assert_eq!(view.cell_to_page(83, 30), Some((795, 590)));
        assert_eq!(view.cell_to_page(43, 16), Some((395, 310)));
        assert_eq!(view.cell_to_page(3, 1), None, "left of the picture");
        assert_eq!(view.cell_to_page(84, 1), None, "right of the picture");
        assert_eq!(view.cell_to_page(10, 31), None, "below the picture");

        // At 1:1 a terminal pixel is a page pixel.
        let sixel = Graphics::pixels(Protocol::Sixel, (6, 13));
        let one = View::fit(Rect::new(4, 1, 166, 52), &sixel, Region::PAGE).unwrap();
        assert_eq!(one.pixel_to_page(24, 13), Some((0, 0)));
        assert_eq!(one.pixel_to_page(24 + 123, 13 + 234), Some((123, 234)));
        assert_eq!(one.pixel_to_page(24 + 800, 13), None);
        assert_eq!(one.pixel_to_page(23, 13), None);
        // The last, partly covered cell maps inside the page.
        let last = one.cell_to_page(one.cells.right() - 1, one.cells.bottom() - 1);
        assert_eq!(last, Some((799, 599)));
    }

    #[test]
    fn the_lens_magnifies_around_the_crosshair_and_clicks_stay_exact() {
        assert_eq!(
            Region::lens(2, (400, 300)),
            Region {
                x: 200,
                y: 150,
                width: 400,
                height: 300
            }
        );
        assert_eq!(Region::lens(4, (10, 590)).x, 0, "kept inside the page");
        assert_eq!(Region::lens(4, (10, 590)).y, 450);
        assert_eq!(Region::lens(4, (10, 590)).step(), 25);
        let sixel = Graphics::pixels(Protocol::Sixel, (6, 13));
        let lens = View::fit(
            Rect::new(4, 1, 166, 52),
            &sixel,
            Region::lens(2, (400, 300)),
        )
        .unwrap();
        // Two screen pixels per page pixel.
        assert_eq!(lens.pixel_to_page(24, 13), Some((200, 150)));
        assert_eq!(lens.pixel_to_page(24 + 201, 13 + 101), Some((300, 200)));
        assert_eq!(
            lens.page_to_cell(300, 200),
            Some((4 + 200 / 6, 1 + 100 / 13))
        );
        assert_eq!(lens.page_to_cell(100, 100), None, "outside the lens");
    }

    #[test]
    fn odd_sizes_stay_inside_the_page_and_round_trip() {
        for (width, height) in [(1, 1), (7, 3), (33, 13), (151, 57), (333, 101)] {
            let view = View {
                cells: Rect::new(5, 2, width, height),
                pixels: (u32::from(width) * 10, u32::from(height) * 20),
                cell: (10, 20),
                region: Region::PAGE,
            };
            for column in view.cells.x..view.cells.x + width {
                for row in view.cells.y..view.cells.y + height {
                    let (x, y) = view.cell_to_page(column, row).unwrap();
                    assert!((0..PAGE_WIDTH).contains(&x) && (0..PAGE_HEIGHT).contains(&y));
                    assert_eq!(
                        view.page_to_cell(x, y),
                        Some((column, row)),
                        "{width}x{height}"
                    );
                }
            }
        }
    }

    #[test]
    fn prepared_images_have_the_views_pixels_and_grid_lines() {
        let white = DynamicImage::ImageRgb8(RgbImage::from_pixel(800, 600, Rgb([255, 255, 255])));
        let view = View::fit(Rect::new(0, 0, 80, 30), &half((10, 20)), Region::PAGE).unwrap();
        let plain = prepare(&white, &view, Protocol::Halfblocks, false);
        assert_eq!(plain.dimensions(), (80, 60));
        assert!(plain.pixels().all(|p| p.0 == [255, 255, 255]));
        let grid = prepare(&white, &view, Protocol::Halfblocks, true);
        // x = 100 page px is column 10; y = 300 page px is image row 30.
        assert_ne!(grid.get_pixel(10, 5).0, [255, 255, 255]);
        assert_ne!(grid.get_pixel(3, 30).0, [255, 255, 255]);
        assert_eq!(grid.get_pixel(3, 5).0, [255, 255, 255]);
        // A 1:1 sixel picture is the screenshot itself.
        let sixel = Graphics::pixels(Protocol::Sixel, (6, 13));
        let one = View::fit(Rect::new(0, 0, 166, 52), &sixel, Region::PAGE).unwrap();
        assert_eq!(
            prepare(&white, &one, Protocol::Sixel, false).dimensions(),
            (800, 600)
        );
        // The lens at 2x: the grid every 50 page px, 100 screen px apart.
        let lens = View {
            region: Region::lens(2, (400, 300)),
            ..one
        };
        let zoomed = prepare(&white, &lens, Protocol::Sixel, true);
        assert_ne!(zoomed.get_pixel(100, 7).0, [255, 255, 255], "page x = 250");
        assert_eq!(zoomed.get_pixel(150, 7).0, [255, 255, 255]);
    }
}
