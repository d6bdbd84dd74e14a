//! A recorded action drawn onto the frame it was taken on (the viewer's "before" picture, and
//! the watched session's last action).

use image::{DynamicImage, Rgb, RgbImage};

use browserenv::models::{Action, BrowserAction, Point};
use browserenv_collect::trajectory::StepRecord;

use crate::graphics::picture::{PAGE_HEIGHT, PAGE_WIDTH};

/// Draw the step's action onto the frame it was taken on, in page pixels.
pub fn mark_action(frame: &DynamicImage, step: &StepRecord) -> DynamicImage {
    mark(frame, &step.action)
}

/// Draw a wire action onto a frame: a cross where the pointer acted (a click, a hover, a button,
/// a `select`), a drag's path from a ring at its start to a cross at its end, an arrow for a
/// scroll. Keys, typing and navigation leave the frame as it was.
pub fn mark(frame: &DynamicImage, action: &serde_json::Value) -> DynamicImage {
    let mut image: RgbImage = frame.to_rgb8();
    let red = Rgb([230, 20, 20]);
    let mut dot = |x: i64, y: i64| {
        if (0..i64::from(image.width())).contains(&x) && (0..i64::from(image.height())).contains(&y)
        {
            image.put_pixel(x as u32, y as u32, red);
        }
    };
    let Ok(action) = BrowserAction::from_value(action) else {
        return DynamicImage::ImageRgb8(image);
    };
    match &action.action {
        Action::Click { at, .. }
        | Action::MouseDown { at, .. }
        | Action::MouseUp { at, .. }
        | Action::Select { at, .. } => cross(&mut dot, *at, 30),
        Action::Move { at } => cross(&mut dot, *at, 15),
        Action::Drag { path, .. } => {
            for pair in path.windows(2) {
                line(&mut dot, pair[0], pair[1]);
            }
            if let Some(first) = path.first() {
                for d in 0..360 {
                    let angle = f64::from(d).to_radians();
                    for r in 10..=13 {
                        dot(
                            first.x + (f64::from(r) * angle.cos()) as i64,
                            first.y + (f64::from(r) * angle.sin()) as i64,
                        );
                    }
                }
            }
            if let Some(last) = path.last() {
                cross(&mut dot, *last, 20);
            }
        }
        Action::Scroll { dy, .. } => {
            // An arrow at the right edge, pointing the way the page moved.
            let down = *dy >= 0;
            let (x, top, bottom) = (PAGE_WIDTH - 30, PAGE_HEIGHT / 2 - 60, PAGE_HEIGHT / 2 + 60);
            for y in top..bottom {
                for w in -2..=2 {
                    dot(x + w, y);
                }
            }
            let tip = if down { bottom } else { top };
            for d in 0..20 {
                let y = if down { tip - d } else { tip + d };
                for w in -1..=1 {
                    dot(x - d + w, y);
                    dot(x + d + w, y);
                }
            }
        }
        Action::Type { .. }
        | Action::Key { .. }
        | Action::Press { .. }
        | Action::Back
        | Action::Forward
        | Action::Goto { .. }
        | Action::Wait
        | Action::Finish { .. } => {}
    }
    DynamicImage::ImageRgb8(image)
}

/// A cross at `at`, big enough to survive the scaling down to terminal cells. The point is
/// whatever the recording (or the watched server) says: the sums saturate, and `dot` leaves out
/// what is off the frame.
fn cross(dot: &mut dyn FnMut(i64, i64), at: Point, arm: i64) {
    for d in -arm..=arm {
        for w in -3..=3 {
            dot(at.x.saturating_add(d), at.y.saturating_add(w));
            dot(at.x.saturating_add(w), at.y.saturating_add(d));
        }
    }
}

/// A thick line from `a` to `b`.
fn line(dot: &mut dyn FnMut(i64, i64), a: Point, b: Point) {
    let steps = (b.x - a.x).abs().max((b.y - a.y).abs()).max(1);
    for i in 0..=steps {
        let x = a.x + (b.x - a.x) * i / steps;
        let y = a.y + (b.y - a.y) * i / steps;
        for w in -2..=2 {
            dot(x + w, y);
            dot(x, y + w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red_pixels(image: &DynamicImage) -> usize {
        image
            .to_rgb8()
            .pixels()
            .filter(|p| p.0 == [230, 20, 20])
            .count()
    }

    #[test]
    fn a_click_anywhere_is_drawn_only_on_the_frame() {
        let frame = DynamicImage::ImageRgb8(RgbImage::new(100, 80));
        let click = |x: i64, y: i64| serde_json::json!({"op": "click", "x": x, "y": y});
        let (max, min) = (i64::MAX, i64::MIN);
        for (x, y) in [
            (max, max),
            (min, min),
            (max, min),
            (min, max),
            (max, 10),
            (10, min),
        ] {
            assert_eq!(red_pixels(&mark(&frame, &click(x, y))), 0, "{x},{y}");
        }
        // At a corner, the part of the cross on the frame.
        assert_eq!(red_pixels(&mark(&frame, &click(0, 0))), 2 * 31 * 4 - 16);
        assert_eq!(red_pixels(&mark(&frame, &click(99, 79))), 2 * 31 * 4 - 16);
    }
}
