//! The text layer over a half-block picture: every run of the page's visible text (from the
//! server's `GET /sessions/{id}/text`) becomes real terminal characters at its place, on the
//! colour behind it, so a price or an error message can be read where pixel graphics cannot go
//! (tmux, SSH, plain terminals). This is how carbonyl draws text in a terminal, from the server's
//! runs instead of a patched renderer.
//!
//! A cell is much coarser than a glyph, so runs are laid out one character per cell starting at
//! their own position: a run that would cover another moves to a free row next to it, and runs on
//! one line keep their order with a space where the page shows a gap.

use image::{Rgb, RgbImage};
use ratatui::style::{Color, Modifier};
use unicode_width::UnicodeWidthChar;

use browserenv::text_layer::{RunKind, TextRun};

use crate::graphics::picture::{Region, View};

/// A run's text as placed on the picture's cells (column and row from its top-left).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub column: u16,
    pub row: u16,
    /// Characters with their cell widths (1 or 2).
    pub chars: Vec<(char, u16)>,
    /// Index of the run in the layer.
    pub run: usize,
}

impl Placed {
    pub fn width(&self) -> u16 {
        self.chars.iter().map(|(_, w)| w).sum()
    }

    pub fn text(&self) -> String {
        self.chars.iter().map(|(c, _)| c).collect()
    }
}

/// The cells a text layer takes: who holds each, for collisions.
struct Occupancy {
    width: u16,
    height: u16,
    taken: Vec<bool>,
}

impl Occupancy {
    fn free(&self, row: u16, column: u16, width: u16) -> bool {
        row < self.height
            && column + width <= self.width
            && (column..column + width)
                .all(|c| !self.taken[usize::from(row) * usize::from(self.width) + usize::from(c)])
    }

    fn take(&mut self, row: u16, column: u16, width: u16) {
        for c in column..(column + width).min(self.width) {
            self.taken[usize::from(row) * usize::from(self.width) + usize::from(c)] = true;
        }
    }
}

/// The end of the last run placed on a row: its last cell and its right edge on the page.
#[derive(Clone, Copy)]
struct LineEnd {
    column: u16,
    page_right: f64,
    page_middle: f64,
}

/// Lay the runs out on the view's cells.
pub fn place(runs: &[TextRun], view: &View) -> Vec<Placed> {
    let (columns, rows) = (view.cells.width, view.cells.height);
    if columns == 0 || rows == 0 {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| {
        runs[a]
            .middle()
            .total_cmp(&runs[b].middle())
            .then(runs[a].x.cmp(&runs[b].x))
    });
    let mut layer = Layer::new(view);
    order
        .into_iter()
        .filter_map(|index| layer.place(index, &runs[index]))
        .collect()
}

/// A layout under way: the cells taken, where each row's line ends, and how page pixels map
/// to cells.
struct Layer {
    columns: u16,
    rows: u16,
    occupancy: Occupancy,
    ends: Vec<Option<LineEnd>>,
    region: Region,
    /// Cells across and down the picture (fractions: its last column and row may be partial).
    cell_columns: f64,
    cell_rows: f64,
}

impl Layer {
    fn new(view: &View) -> Layer {
        let (columns, rows) = (view.cells.width, view.cells.height);
        Layer {
            columns,
            rows,
            occupancy: Occupancy {
                width: columns,
                height: rows,
                taken: vec![false; usize::from(columns) * usize::from(rows)],
            },
            ends: vec![None; usize::from(rows)],
            region: view.region,
            cell_columns: f64::from(view.pixels.0) / f64::from(view.cell.0.max(1)),
            cell_rows: f64::from(view.pixels.1) / f64::from(view.cell.1.max(1)),
        }
    }

    fn to_column(&self, x: f64) -> f64 {
        (x - self.region.x as f64) * self.cell_columns / self.region.width as f64
    }

    fn to_row(&self, y: f64) -> f64 {
        (y - self.region.y as f64) * self.cell_rows / self.region.height as f64
    }

    /// Place one run (`index` in the layer), or nothing when no part of it can show.
    fn place(&mut self, index: usize, run: &TextRun) -> Option<Placed> {
        let chars = visible_chars(&run.text);
        if chars.is_empty() {
            return None;
        }
        let row = self.to_row(run.middle()).floor();
        let (left, right) = (f64::from(run.x), f64::from(run.right()));
        if row < 0.0 || row >= f64::from(self.rows) || right <= self.region.x as f64 {
            return None;
        }
        let (mut chars, start) = self.cut_at_lens(chars, left, right);
        if start >= f64::from(self.columns) || chars.is_empty() {
            return None;
        }
        let row = row as u16;
        let column = self.after_line_end(row, start.floor() as u16, run);
        clip(&mut chars, self.columns.saturating_sub(column));
        if chars.is_empty() {
            return None;
        }
        let row = self.free_row(row, column, &mut chars)?;
        let wanted = cells_wide(&chars);
        self.occupancy.take(row, column, wanted);
        self.ends[usize::from(row)] = Some(LineEnd {
            column: column + wanted,
            page_right: right,
            page_middle: run.middle(),
        });
        Some(Placed {
            column,
            row,
            chars,
            run: index,
        })
    }

    /// The lens may cut off the run's start: drop the characters left of it. The characters
    /// left, and the column they start at.
    fn cut_at_lens(
        &self,
        mut chars: Vec<(char, u16)>,
        left: f64,
        right: f64,
    ) -> (Vec<(char, u16)>, f64) {
        let start = self.to_column(left);
        if start < 0.0 {
            let cut = (self.region.x as f64 - left) / (right - left).max(1.0);
            let drop = (cut * chars.len() as f64).ceil() as usize;
            (chars.split_off(drop.min(chars.len())), 0.0)
        } else {
            (chars, start)
        }
    }

    /// On the same line as the previous run on this row: keep reading order, and a space
    /// where the page shows one. The column the run starts at.
    fn after_line_end(&self, row: u16, column: u16, run: &TextRun) -> u16 {
        let Some(end) = self.ends[usize::from(row)] else {
            return column;
        };
        let left = f64::from(run.x);
        let same_line = (end.page_middle - run.middle()).abs() < f64::from(run.height) / 2.0
            && left >= end.page_right - 2.0;
        if same_line && end.column >= column {
            let gap = left - end.page_right > f64::from(run.size) * 0.2;
            return end.column + u16::from(gap);
        }
        column
    }

    /// Another line already there: the nearest free row, else as much as is free on `row`
    /// (`chars` cut to it; None when nothing is).
    fn free_row(&self, row: u16, column: u16, chars: &mut Vec<(char, u16)>) -> Option<u16> {
        let wanted = cells_wide(chars);
        let candidates = [Some(row), row.checked_add(1), row.checked_sub(1)];
        if let Some(free) = candidates
            .into_iter()
            .flatten()
            .find(|&r| self.occupancy.free(r, column, wanted))
        {
            return Some(free);
        }
        while !chars.is_empty() && !self.occupancy.free(row, column, cells_wide(chars)) {
            chars.pop();
        }
        (!chars.is_empty()).then_some(row)
    }
}

/// The characters of a run that take cells, with their widths (a control character shows as a
/// space).
fn visible_chars(text: &str) -> Vec<(char, u16)> {
    text.chars()
        .filter_map(|c| {
            let width = c.width()? as u16;
            (width > 0).then_some((if c.is_control() { ' ' } else { c }, width))
        })
        .collect()
}

fn cells_wide(chars: &[(char, u16)]) -> u16 {
    chars.iter().map(|(_, w)| w).sum::<u16>()
}

/// Clip at the picture's right edge (`room` cells left), in one pass (a page may have lines of
/// any length).
fn clip(chars: &mut Vec<(char, u16)>, room: u16) {
    let room = u32::from(room);
    let mut used = 0u32;
    let fits = chars
        .iter()
        .take_while(|(_, w)| {
            used += u32::from(*w);
            used <= room
        })
        .count();
    chars.truncate(fits);
}

/// The cells a run's box covers (rows it covers for at least 40% of their height), as
/// `(row, first column, end column)`: cleared to the background before the text is drawn, so the
/// blurred glyphs of the half-block picture do not show beside characters narrower than them.
pub fn box_cells(run: &TextRun, view: &View) -> Vec<(u16, u16, u16)> {
    let region = view.region;
    let cell_columns = f64::from(view.pixels.0) / f64::from(view.cell.0.max(1));
    let cell_rows = f64::from(view.pixels.1) / f64::from(view.cell.1.max(1));
    let column = |x: f64| (x - region.x as f64) * cell_columns / region.width as f64;
    let row = |y: f64| (y - region.y as f64) * cell_rows / region.height as f64;
    let (left, right) = (column(f64::from(run.x)), column(f64::from(run.right())));
    let (top, bottom) = (row(f64::from(run.y)), row(f64::from(run.bottom())));
    let first = left.floor().max(0.0) as u16;
    let end = (right.ceil().max(0.0) as u16).min(view.cells.width);
    if first >= end {
        return Vec::new();
    }
    let mut rows = Vec::new();
    let mut r = top.floor().max(0.0);
    while r < bottom && r < f64::from(view.cells.height) {
        let covered = bottom.min(r + 1.0) - top.max(r);
        if covered >= 0.4 {
            rows.push((r as u16, first, end));
        }
        r += 1.0;
    }
    rows
}

/// The colour behind a run on the page: the most common colour just around its box.
pub fn background(page: &RgbImage, run: &TextRun) -> Rgb<u8> {
    let (width, height) = (page.width() as i32, page.height() as i32);
    let mut counts: std::collections::HashMap<[u8; 3], (u32, [u32; 3])> = Default::default();
    let mut sample = |x: i32, y: i32| {
        if (0..width).contains(&x) && (0..height).contains(&y) {
            let pixel = page.get_pixel(x as u32, y as u32).0;
            let bucket = [pixel[0] >> 3, pixel[1] >> 3, pixel[2] >> 3];
            let entry = counts.entry(bucket).or_insert((0, [0; 3]));
            entry.0 += 1;
            for (sum, channel) in entry.1.iter_mut().zip(pixel) {
                *sum += u32::from(channel);
            }
        }
    };
    // Only the box's edges inside the page (and the pixel beyond): a box of any size costs at most
    // the page's perimeter.
    let (left, top) = (
        run.x.saturating_sub(1).max(-1),
        run.y.saturating_sub(1).max(-1),
    );
    let (right, bottom) = (run.right().min(width), run.bottom().min(height));
    for x in (left..=right).step_by(2) {
        sample(x, top);
        sample(x, bottom);
    }
    for y in (top..=bottom).step_by(2) {
        sample(left, y);
        sample(right, y);
    }
    counts
        .values()
        .max_by_key(|(count, _)| *count)
        .map(|(count, sum)| Rgb(sum.map(|s| (s / count) as u8)))
        .unwrap_or(Rgb([255, 255, 255]))
}

/// WCAG relative luminance.
fn luminance(Rgb(rgb): Rgb<u8>) -> f64 {
    let channel = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.03928 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(rgb[0]) + 0.7152 * channel(rgb[1]) + 0.0722 * channel(rgb[2])
}

/// WCAG contrast ratio, 1 (none) to 21 (black on white).
pub fn contrast(a: Rgb<u8>, b: Rgb<u8>) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// The text colour to draw on `bg`: the page's own unless it would be hard to read on a cell
/// (the page may have had an image behind it), else black or white.
pub fn foreground(run: &TextRun, bg: Rgb<u8>) -> Rgb<u8> {
    let own = Rgb(run.color);
    if contrast(own, bg) >= 3.0 {
        return own;
    }
    let (black, white) = (Rgb([0, 0, 0]), Rgb([255, 255, 255]));
    if contrast(black, bg) >= contrast(white, bg) {
        black
    } else {
        white
    }
}

/// How a run's characters look in the terminal.
pub fn style(run: &TextRun, bg: Rgb<u8>) -> (Color, Color, Modifier) {
    let Rgb([r, g, b]) = foreground(run, bg);
    let mut modifier = Modifier::empty();
    if run.bold {
        modifier |= Modifier::BOLD;
    }
    if run.link {
        modifier |= Modifier::UNDERLINED;
    }
    if run.kind == RunKind::Placeholder {
        modifier |= Modifier::ITALIC;
    }
    (
        Color::Rgb(r, g, b),
        Color::Rgb(bg.0[0], bg.0[1], bg.0[2]),
        modifier,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graphics::picture::Region;
    use ratatui::layout::Rect;

    fn run(text: &str, x: i32, y: i32, width: i32) -> TextRun {
        TextRun {
            text: text.into(),
            x,
            y,
            width,
            height: 18,
            size: 16.0,
            color: [20, 20, 20],
            bold: false,
            link: false,
            kind: RunKind::Text,
        }
    }

    /// 100x37 cells over 800x600: 8 page pixels per column, about 16 per row.
    fn view() -> View {
        View {
            cells: Rect::new(4, 1, 100, 37),
            pixels: (800, 37 * 16),
            cell: (8, 16),
            region: Region::PAGE,
        }
    }

    fn texts(placed: &[Placed]) -> Vec<(u16, u16, String)> {
        placed.iter().map(|p| (p.column, p.row, p.text())).collect()
    }

    /// Boxes of any numbers (a hostile server's, or a page's that answered in the probe's place)
    /// are placed, cleared and sampled without overflow and in time bounded by the page's size.
    #[test]
    fn runs_with_extreme_boxes_are_drawn_without_overflow() {
        let page = RgbImage::new(800, 600);
        for (x, y, width, height) in [
            (i32::MAX, i32::MAX, i32::MAX, i32::MAX),
            (i32::MIN, i32::MIN, i32::MAX, i32::MAX),
            (-5, 10, i32::MAX, 18),
            (10, 10, i32::MIN, i32::MIN),
        ] {
            let mut hostile = run("x", x, y, width);
            hostile.height = height;
            let _ = place(std::slice::from_ref(&hostile), &view());
            let _ = box_cells(&hostile, &view());
            let _ = background(&page, &hostile);
        }
    }

    #[test]
    fn runs_land_at_their_place_one_character_per_cell() {
        let runs = vec![
            run("Product catalog", 20, 75, 240),
            run("$129.00", 587, 252, 60),
        ];
        let placed = place(&runs, &view());
        // x 20 / 8 px = column 2; middle y 84 / (600 / 37) = row 5.
        assert_eq!(
            texts(&placed),
            vec![(2, 5, "Product catalog".into()), (73, 16, "$129.00".into())]
        );
    }

    #[test]
    fn colliding_lines_move_to_a_free_row_and_nothing_is_lost() {
        // Two 12 px lines whose middles fall on one 16 px row.
        let mut small = vec![
            run("first line here", 16, 100, 100),
            run("second line", 16, 104, 80),
        ];
        small[0].height = 10;
        small[1].height = 10;
        let placed = place(&small, &view());
        assert_eq!(placed.len(), 2);
        assert_ne!(placed[0].row, placed[1].row);
        assert_eq!(placed[1].text(), "second line");
    }

    #[test]
    fn runs_on_one_line_keep_order_and_gaps() {
        // "Cart (" "0" ")" as separate runs side by side; a wide word gap before "Stock".
        let runs = vec![
            run("Cart (", 700, 10, 42),
            run("0", 742, 10, 8),
            run(")", 750, 10, 6),
            run("Price", 500, 10, 38),
            run("Stock", 560, 10, 40),
        ];
        let placed = place(&runs, &view());
        let line: Vec<String> = placed.iter().map(Placed::text).collect();
        assert_eq!(line, vec!["Price", "Stock", "Cart (", "0", ")"]);
        let columns: Vec<u16> = placed.iter().map(|p| p.column).collect();
        assert_eq!(columns, vec![62, 70, 87, 93, 94]);
        // Squeezed: "Cart (" needs six columns from 87: "0" follows right after, no space.
        let squeezed = vec![run("Cart (", 700, 10, 30), run("0", 730, 10, 8)];
        let placed = place(&squeezed, &view());
        assert_eq!((placed[1].column, placed[1].text()), (93, "0".into()));
    }

    #[test]
    fn the_right_edge_and_the_lens_cut_text() {
        let placed = place(&[run("a long line at the edge", 760, 50, 200)], &view());
        assert_eq!(placed[0].text(), "a lon");
        let lens = View {
            region: Region::lens(2, (400, 300)),
            ..view()
        };
        // Starts 100 px left of the lens (x 200), half of its 200 px: half the text is cut.
        let cut = place(&[run("abcdefghij", 100, 200, 200)], &lens);
        assert_eq!((cut[0].column, cut[0].text()), (0, "fghij".into()));
        assert!(place(&[run("above", 300, 10, 50)], &lens).is_empty());
    }

    #[test]
    fn a_box_covers_the_rows_it_mostly_fills() {
        // 16 px rows: a box from y 100 to 118 covers row 6 (96..112) by 12/16, row 7 by 6/16.
        let text = TextRun {
            height: 18,
            ..run("Hammer", 80, 100, 60)
        };
        let view = View {
            pixels: (800, 592),
            ..view()
        };
        assert_eq!(box_cells(&text, &view), vec![(6, 10, 18)]);
        let tall = TextRun {
            height: 30,
            ..text.clone()
        };
        assert_eq!(box_cells(&tall, &view), vec![(6, 10, 18), (7, 10, 18)]);
    }

    #[test]
    fn a_line_of_any_length_is_clipped_at_once() {
        let long = "x".repeat(200_000);
        let placed = place(&[run(&long, 0, 0, 1_000_000)], &view());
        assert_eq!(placed[0].width(), 100);
        let wide = "価".repeat(100_000);
        let placed = place(&[run(&wide, 8, 0, 1_000_000)], &view());
        assert_eq!(placed[0].width(), 98, "49 wide characters from column 1");
    }

    #[test]
    fn wide_characters_take_two_cells() {
        let placed = place(&[run("価格 ok", 0, 0, 60)], &view());
        assert_eq!(placed[0].width(), 7);
    }

    #[test]
    fn the_background_is_what_surrounds_the_box_and_text_stays_readable() {
        let mut page = RgbImage::from_pixel(100, 50, Rgb([250, 250, 240]));
        // A dark "glyph" inside the box does not count.
        for x in 12..30 {
            for y in 12..20 {
                page.put_pixel(x, y, Rgb([0, 0, 0]));
            }
        }
        let text = run("Hi", 10, 10, 22);
        assert_eq!(
            background(
                &page,
                &TextRun {
                    height: 12,
                    ..text.clone()
                }
            ),
            Rgb([250, 250, 240])
        );
        // Grey text on a grey cell becomes black; dark text on white stays as it is.
        let grey = TextRun {
            color: [150, 150, 150],
            ..text.clone()
        };
        assert_eq!(foreground(&grey, Rgb([160, 160, 160])), Rgb([0, 0, 0]));
        assert_eq!(foreground(&grey, Rgb([20, 20, 60])), Rgb([150, 150, 150]));
        assert_eq!(foreground(&text, Rgb([255, 255, 255])), Rgb([20, 20, 20]));
        assert!((contrast(Rgb([0, 0, 0]), Rgb([255, 255, 255])) - 21.0).abs() < 0.01);
    }
}
