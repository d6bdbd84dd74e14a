//! The page picture: where the 800x600 screenshot sits in the terminal, how a terminal cell maps to
//! page pixels and back, and how a screenshot becomes something the terminal can show (resized
//! once to exactly the cells it will fill, grid lines drawn into its pixels, encoded once).

use image::{DynamicImage, Rgb, RgbImage};
use ratatui::layout::{Rect, Size};
use ratatui_image::picker::ProtocolType;
use ratatui_image::protocol::halfblocks::Halfblocks;
use ratatui_image::protocol::iterm2::Iterm2;
use ratatui_image::protocol::kitty::Kitty;
use ratatui_image::protocol::sixel::Sixel;
use ratatui_image::protocol::Protocol;
use ratatui_image::FontSize;

pub const PAGE_WIDTH: i64 = 800;
pub const PAGE_HEIGHT: i64 = 600;
/// Grid lines every this many page pixels (the rulers label the same positions).
pub const GRID_STEP: i64 = 100;

/// How pictures are drawn in this terminal.
#[derive(Debug, Clone, Copy)]
pub struct Graphics {
    pub protocol: ProtocolType,
    /// The terminal's cell size in pixels (an estimate for half-blocks).
    pub font: FontSize,
    /// Inside tmux the graphics escapes need passthrough.
    pub tmux: bool,
    /// Kitty can take zlib-compressed data.
    pub compress: bool,
}

impl Graphics {
    pub fn halfblocks() -> Self {
        Graphics {
            protocol: ProtocolType::Halfblocks,
            font: FontSize::new(10, 20),
            tmux: false,
            compress: false,
        }
    }

    /// Pixels of the encoded image per terminal cell: half-blocks show two pixels per cell, one
    /// above the other; the graphics protocols show the cell's real pixels.
    pub fn pixels_per_cell(&self) -> (u32, u32) {
        match self.protocol {
            ProtocolType::Halfblocks => (1, 2),
            _ => (
                u32::from(self.font.width.max(1)),
                u32::from(self.font.height.max(1)),
            ),
        }
    }

    /// Text can be drawn over half-block cells, not over kitty/sixel/iTerm2 images.
    pub fn is_text(&self) -> bool {
        self.protocol == ProtocolType::Halfblocks
    }

    pub fn name(&self) -> &'static str {
        match self.protocol {
            ProtocolType::Halfblocks => "halfblocks",
            ProtocolType::Sixel => "sixel",
            ProtocolType::Kitty => "kitty",
            ProtocolType::Iterm2 => "iterm2",
        }
    }
}

/// The largest rectangle of cells inside `pane` that shows the page with its 4:3 aspect ratio,
/// anchored top-left (the rulers sit against it). None when the pane is empty.
pub fn fit(pane: Rect, font: FontSize) -> Option<Rect> {
    let (fw, fh) = (f64::from(font.width.max(1)), f64::from(font.height.max(1)));
    let aspect = PAGE_WIDTH as f64 / PAGE_HEIGHT as f64;
    let height_for_width = (f64::from(pane.width) * fw / aspect / fh).floor();
    let height = (f64::from(pane.height)).min(height_for_width).max(0.0) as u16;
    let width = ((f64::from(height) * fh * aspect / fw).round() as u16).min(pane.width);
    (width > 0 && height > 0).then(|| Rect::new(pane.x, pane.y, width, height))
}

/// The page pixel under the centre of a terminal cell, if the cell is on the picture.
pub fn cell_to_page(picture: Rect, column: u16, row: u16) -> Option<(i64, i64)> {
    if !picture.contains((column, row).into()) {
        return None;
    }
    let fraction = |offset: u16, cells: u16, size: i64| -> i64 {
        let pixel = (f64::from(offset) + 0.5) * size as f64 / f64::from(cells);
        (pixel.floor() as i64).clamp(0, size - 1)
    };
    Some((
        fraction(column - picture.x, picture.width, PAGE_WIDTH),
        fraction(row - picture.y, picture.height, PAGE_HEIGHT),
    ))
}

/// The cell showing a page pixel.
pub fn page_to_cell(picture: Rect, x: i64, y: i64) -> (u16, u16) {
    let column = x.clamp(0, PAGE_WIDTH - 1) * i64::from(picture.width) / PAGE_WIDTH;
    let row = y.clamp(0, PAGE_HEIGHT - 1) * i64::from(picture.height) / PAGE_HEIGHT;
    (picture.x + column as u16, picture.y + row as u16)
}

/// Resize the screenshot to exactly the pixels its cells show, and draw the grid into it.
pub fn prepare(
    screenshot: &DynamicImage,
    cells: Size,
    graphics: &Graphics,
    grid: bool,
) -> RgbImage {
    let (pw, ph) = graphics.pixels_per_cell();
    let (width, height) = (
        (u32::from(cells.width) * pw).max(1),
        (u32::from(cells.height) * ph).max(1),
    );
    let mut image = screenshot
        .resize_exact(width, height, image::imageops::FilterType::Triangle)
        .to_rgb8();
    if grid {
        draw_grid(&mut image);
    }
    image
}

/// One-pixel lines every `GRID_STEP` page pixels, blended so the page stays readable under them.
fn draw_grid(image: &mut RgbImage) {
    let (width, height) = image.dimensions();
    let tint = |pixel: &mut Rgb<u8>| {
        let [r, g, b] = pixel.0;
        // Half-way towards magenta: visible on white and on dark pages.
        *pixel = Rgb([r / 2 + 110, g / 2, b / 2 + 110]);
    };
    for step in (GRID_STEP..PAGE_WIDTH).step_by(GRID_STEP as usize) {
        let x = (step * i64::from(width) / PAGE_WIDTH) as u32;
        for y in 0..height {
            tint(image.get_pixel_mut(x.min(width - 1), y));
        }
    }
    for step in (GRID_STEP..PAGE_HEIGHT).step_by(GRID_STEP as usize) {
        let y = (step * i64::from(height) / PAGE_HEIGHT) as u32;
        for x in 0..width {
            tint(image.get_pixel_mut(x, y.min(height - 1)));
        }
    }
}

/// Encode a prepared image for the terminal. `kitty_id` alternates between two ids so the new
/// picture replaces the old one without a blank frame.
pub fn encode(
    image: RgbImage,
    cells: Size,
    graphics: &Graphics,
    kitty_id: u32,
) -> Result<Protocol, String> {
    let image = DynamicImage::ImageRgb8(image);
    let encoded = match graphics.protocol {
        ProtocolType::Halfblocks => Halfblocks::new(image, cells).map(Protocol::Halfblocks),
        ProtocolType::Sixel => Sixel::new(image, cells, graphics.tmux).map(Protocol::Sixel),
        ProtocolType::Kitty => Kitty::new(image, cells, kitty_id, graphics.tmux, graphics.compress)
            .map(Protocol::Kitty),
        ProtocolType::Iterm2 => Iterm2::new(image, cells, graphics.tmux).map(Protocol::ITerm2),
    };
    encoded.map_err(|err| err.to_string())
}

/// Decode a base64 PNG screenshot.
pub fn decode(screenshot: &str) -> Result<DynamicImage, String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(screenshot)
        .map_err(|err| format!("screenshot is not base64: {err}"))?;
    image::load_from_memory_with_format(&bytes, image::ImageFormat::Png)
        .map_err(|err| format!("screenshot is not a PNG: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HALF: FontSize = FontSize::new(10, 20);

    #[test]
    fn fits_four_by_three_in_half_block_cells() {
        // 10x20 cells: 8 columns per 3 rows.
        let picture = fit(Rect::new(4, 1, 196, 57), HALF).unwrap();
        assert_eq!(picture, Rect::new(4, 1, 152, 57));
        let narrow = fit(Rect::new(0, 0, 80, 60), HALF).unwrap();
        assert_eq!(narrow, Rect::new(0, 0, 80, 30));
        assert_eq!(fit(Rect::new(0, 0, 0, 10), HALF), None);
        assert_eq!(
            fit(Rect::new(0, 0, 1, 1), HALF),
            None,
            "less than one row fits"
        );
    }

    #[test]
    fn cell_centres_map_to_page_pixels() {
        let picture = Rect::new(4, 1, 80, 30);
        assert_eq!(cell_to_page(picture, 4, 1), Some((5, 10)));
        assert_eq!(cell_to_page(picture, 83, 30), Some((795, 590)));
        assert_eq!(cell_to_page(picture, 43, 16), Some((395, 310)));
        assert_eq!(cell_to_page(picture, 3, 1), None, "left of the picture");
        assert_eq!(cell_to_page(picture, 84, 1), None, "right of the picture");
        assert_eq!(cell_to_page(picture, 10, 31), None, "below the picture");
    }

    #[test]
    fn odd_sizes_stay_inside_the_page_and_round_trip() {
        for (width, height) in [(1, 1), (7, 3), (33, 13), (151, 57), (333, 101)] {
            let picture = Rect::new(5, 2, width, height);
            for column in picture.x..picture.x + width {
                for row in picture.y..picture.y + height {
                    let (x, y) = cell_to_page(picture, column, row).unwrap();
                    assert!((0..PAGE_WIDTH).contains(&x) && (0..PAGE_HEIGHT).contains(&y));
                    assert_eq!(
                        page_to_cell(picture, x, y),
                        (column, row),
                        "{width}x{height}"
                    );
                }
            }
        }
    }

    #[test]
    fn prepared_images_have_the_cells_pixels_and_grid_lines() {
        let white = DynamicImage::ImageRgb8(RgbImage::from_pixel(800, 600, Rgb([255, 255, 255])));
        let cells = Size::new(80, 30);
        let plain = prepare(&white, cells, &Graphics::halfblocks(), false);
        assert_eq!(plain.dimensions(), (80, 60));
        assert!(plain.pixels().all(|p| p.0 == [255, 255, 255]));
        let grid = prepare(&white, cells, &Graphics::halfblocks(), true);
        // x = 100 page px is column 10; y = 300 page px is image row 30.
        assert_ne!(grid.get_pixel(10, 5).0, [255, 255, 255]);
        assert_ne!(grid.get_pixel(3, 30).0, [255, 255, 255]);
        assert_eq!(grid.get_pixel(3, 5).0, [255, 255, 255]);
    }
}
