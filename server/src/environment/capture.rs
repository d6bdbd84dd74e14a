//! A picture of the page on demand, outside the episode's steps: the viewport as it is now, or a
//! region of it drawn again at a higher scale (more pixels of the page, not an enlarged copy of
//! the screenshot's): what a computer-use model's `screenshot` and `zoom` ask for. It neither
//! steps the episode nor touches the page, and fields holding a secret are covered in it, as in
//! every picture an agent gets (`browserenv::secrets`).

use std::time::{Duration, Instant};

use browserenv::models::{VIEWPORT_HEIGHT, VIEWPORT_WIDTH};

use super::limits::{bounded, STATE_TIMEOUT};
use super::{EnvError, Environment, Episode};
use crate::browser::{Browser, Launcher, PageError, Region};

/// The largest scale a region may be drawn at: four times the pixels each way.
pub const MAX_SCALE: f64 = 4.0;
/// The smallest scale (a thumbnail of the viewport).
pub const MIN_SCALE: f64 = 0.25;
/// The most pixels of a capture each way: twice the viewport's (so the whole viewport at scale 2).
pub const MAX_WIDTH: u32 = 2 * VIEWPORT_WIDTH as u32;
pub const MAX_HEIGHT: u32 = 2 * VIEWPORT_HEIGHT as u32;

/// The capture rule's part of a region (the type itself is the browser seam's, below this room).
impl Region {
    /// The scale when none is asked: the largest, up to `MAX_SCALE`, at which the region fills
    /// the viewport's size (a quarter of the viewport comes back at 800x600, twice as sharp).
    pub fn fitting_scale(&self) -> f64 {
        let across = f64::from(VIEWPORT_WIDTH as u32) / f64::from(self.width());
        let down = f64::from(VIEWPORT_HEIGHT as u32) / f64::from(self.height());
        across.min(down).clamp(1.0, MAX_SCALE)
    }

    /// The picture's size at `scale`, in pixels (what Chromium draws: the region's size times the
    /// scale, rounded).
    pub fn size_at(&self, scale: f64) -> (u32, u32) {
        let side = |length: u32| (f64::from(length) * scale).round().max(1.0) as u32;
        (side(self.width()), side(self.height()))
    }

    /// A box `[x, y, w, h]` of the viewport in the picture of this region at `scale`, grown to
    /// whole pixels (a secret field's box covers all it touches).
    fn place(&self, [x, y, w, h]: [i64; 4], scale: f64) -> [i64; 4] {
        let left = ((x - i64::from(self.left)) as f64 * scale).floor() as i64;
        let top = ((y - i64::from(self.top)) as f64 * scale).floor() as i64;
        let right = ((x + w - i64::from(self.left)) as f64 * scale).ceil() as i64;
        let bottom = ((y + h - i64::from(self.top)) as f64 * scale).ceil() as i64;
        [left, top, right - left, bottom - top]
    }
}

/// The scale asked for (`None`: the fitting one), checked against the bounds and the picture's
/// size (in the words of a field's validation error, after `scale: `).
pub fn checked_scale(region: &Region, scale: Option<f64>) -> Result<f64, String> {
    let Some(scale) = scale else {
        return Ok(region.fitting_scale());
    };
    if !scale.is_finite() || !(MIN_SCALE..=MAX_SCALE).contains(&scale) {
        return Err(format!("should be from {MIN_SCALE} to {MAX_SCALE}"));
    }
    let (width, height) = region.size_at(scale);
    if width > MAX_WIDTH || height > MAX_HEIGHT {
        return Err(format!(
            "the picture would be {width}x{height} pixels, more than {MAX_WIDTH}x{MAX_HEIGHT}: \
             ask a smaller scale or region"
        ));
    }
    Ok(scale)
}

/// A picture taken on demand.
#[derive(Debug, Clone)]
pub struct Capture {
    /// Base64 PNG of the region at `scale`, fields holding a secret covered.
    pub png: String,
    pub url: String,
    pub region: Region,
    pub scale: f64,
    pub width: u32,
    pub height: u32,
    pub took: Duration,
}

/// Draw `region` of the episode's page at `scale` and cover what a secret field shows in it.
pub(super) async fn capture<B: Browser>(
    episode: &mut Episode<B>,
    region: Region,
    scale: f64,
    screenshot_timeout: Duration,
) -> Result<Capture, EnvError> {
    let started = Instant::now();
    // The page's facts now: its URL, and the boxes of the fields that hold a secret.
    let facts = bounded(
        STATE_TIMEOUT,
        PageError::RendererTimeout,
        episode.browser.facts(),
    )
    .await
    .map_err(|err| EnvError::Capture(err.to_string()))?;
    let png = bounded(
        screenshot_timeout,
        PageError::RendererTimeout,
        episode.browser.capture_region(region, scale),
    )
    .await
    .map_err(|err| EnvError::Capture(err.to_string()))?;
    let boxes: Vec<[i64; 4]> = facts
        .password_boxes
        .iter()
        .map(|&found| region.place(found, scale))
        .collect();
    let png = covered(&png, &boxes)?;
    let mut url = facts.url;
    episode.secrets.hide_in_url(&mut url);
    let (width, height) = png_size(&png).unwrap_or_else(|| region.size_at(scale));
    Ok(Capture {
        png,
        url,
        region,
        scale,
        width,
        height,
        took: started.elapsed(),
    })
}

impl<L: Launcher> Environment<L> {
    /// A picture of `region` of the current page at `scale` (`None`: the scale at which it fills
    /// the viewport's size), fields holding a secret covered. Read-only: the episode, its step
    /// count and its observations are untouched.
    pub async fn capture(
        &mut self,
        region: Region,
        scale: Option<f64>,
    ) -> Result<Capture, EnvError> {
        let scale = checked_scale(&region, scale).map_err(EnvError::CaptureScale)?;
        let timeout = self.settings.screenshot_timeout;
        let episode = self.episode.as_mut().ok_or(EnvError::NoPage)?;
        capture(episode, region, scale, timeout).await
    }
}

/// The base64 PNG with `boxes` painted over; a picture that cannot be read is refused, never
/// passed on uncovered.
fn covered(png: &str, boxes: &[[i64; 4]]) -> Result<String, EnvError> {
    use base64::Engine;
    if boxes.is_empty() {
        return Ok(png.to_string());
    }
    let engine = base64::engine::general_purpose::STANDARD;
    engine
        .decode(png)
        .ok()
        .and_then(|bytes| browserenv::secrets::cover_boxes(&bytes, boxes).ok())
        .map(|bytes| engine.encode(bytes))
        .ok_or_else(|| EnvError::Capture("an unreadable picture".into()))
}

/// Width and height from a base64 PNG's header.
fn png_size(png: &str) -> Option<(u32, u32)> {
    use base64::Engine;
    let head = base64::engine::general_purpose::STANDARD
        .decode(png.get(..32)?)
        .ok()?;
    if head.get(..8)? != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let number = |at: usize| u32::from_be_bytes(head[at..at + 4].try_into().unwrap());
    Some((number(16), number(20)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_lies_in_the_viewport_with_its_corners_in_order() {
        assert_eq!(Region::from_corners([0, 0, 800, 600]), Ok(Region::VIEWPORT));
        let small = Region::from_corners([10, 20, 110, 70]).unwrap();
        assert_eq!((small.width(), small.height()), (100, 50));
        for bad in [
            [0, 0, 801, 600],
            [-1, 0, 10, 10],
            [10, 10, 10, 20],
            [50, 50, 40, 60],
        ] {
            let refused = Region::from_corners(bad).unwrap_err();
            assert!(refused.contains("corner"), "{bad:?}: {refused}");
        }
    }

    #[test]
    fn the_fitting_scale_fills_the_viewport_up_to_four_times() {
        assert_eq!(Region::VIEWPORT.fitting_scale(), 1.0);
        let quarter = Region::from_corners([0, 0, 400, 300]).unwrap();
        assert_eq!(quarter.fitting_scale(), 2.0);
        assert_eq!(quarter.size_at(2.0), (800, 600));
        let tiny = Region::from_corners([0, 0, 20, 10]).unwrap();
        assert_eq!(tiny.fitting_scale(), MAX_SCALE);
        let wide = Region::from_corners([0, 0, 800, 100]).unwrap();
        assert_eq!(wide.fitting_scale(), 1.0);
    }

    #[test]
    fn a_scale_is_bounded_and_so_is_the_picture() {
        let region = Region::VIEWPORT;
        assert_eq!(checked_scale(&region, Some(2.0)), Ok(2.0));
        assert!(checked_scale(&region, Some(2.5))
            .unwrap_err()
            .contains("1600x1200"));
        assert!(checked_scale(&region, Some(0.1))
            .unwrap_err()
            .contains("from 0.25"));
        assert!(checked_scale(&region, Some(f64::NAN)).is_err());
        assert_eq!(checked_scale(&region, None), Ok(1.0));
    }

    #[test]
    fn a_secret_box_is_placed_in_the_picture_and_grown_to_whole_pixels() {
        let region = Region::from_corners([100, 50, 300, 150]).unwrap();
        assert_eq!(region.place([110, 60, 20, 10], 2.0), [20, 20, 40, 20]);
        assert_eq!(region.place([100, 50, 1, 1], 1.5), [0, 0, 2, 2]);
        // A box outside the region lands outside the picture (and `cover_boxes` clips it).
        assert_eq!(region.place([0, 0, 10, 10], 1.0), [-100, -50, 10, 10]);
    }
}
