//! Taking the page's picture (`BROWSER_SCREENSHOTS`).
//!
//! `Page.captureScreenshot` asks the page to draw a new frame, waits until that frame has been
//! presented, asks for a copy of the next one and encodes it: three frames of the compositor at
//! 60 Hz plus the encoding, 50-60 ms on this project's 2-core machine (docs/benchmark.md).
//! A screencast's first frame is a copy of what the compositor shows now, taken at its next
//! frame: 25-30 ms, the same pixels (tests/tests/settle.rs), in a PNG encoded for speed (about
//! 30% larger).
//!
//! What the compositor shows is the page once its renderer has drawn it. A frame is only taken
//! from a renderer that answered this step (its facts were read), after the adaptive settle
//! waited for two animation frames; a renderer that did not answer (a hung page) gets the
//! redrawn capture, which waits for it, and so ends in `renderer_timeout` as before.

use chromiumoxide::cdp::browser_protocol::page::{
    EventScreencastFrame, ScreencastFrameAckParams, StartScreencastFormat, StartScreencastParams,
    StopScreencastParams, Viewport,
};

use crate::chromium::*;

/// How screenshots are taken (`BROWSER_SCREENSHOTS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Screenshots {
    /// The compositor's next frame (a screencast's first): about half the time of `redraw`, the
    /// same pixels, a PNG about 30% larger.
    #[default]
    Frame,
    /// `Page.captureScreenshot`: the page draws a new frame for it, the PNG is smaller.
    Redraw,
}

/// How long a screencast may take to send its first frame before the redrawn capture is used
/// instead (a tab the compositor does not draw sends none).
const FIRST_FRAME_WAIT: Duration = Duration::from_millis(500);

impl ChromiumBrowser {
    /// One capture of the current tab, as base64 PNG of the viewport.
    pub(in crate::chromium) async fn capture(&self) -> Result<String, PageError> {
        let frames_fit = !self.frames_misfit.load(Ordering::Relaxed);
        // An open `<select>` is pictured from a frame in either mode: the gestures' world draws
        // its popup (`dropdown.rs`), whose rows are where a click chooses, while a redraw also
        // paints the browser's own popup over it, with rows of another height (a click on the
        // pictured option would choose its neighbour, and a secret select's cover would miss
        // its lower rows). The frame must hold the drawing: the page presents it first.
        let dropdown = self.dropdown_open();
        let framed = self.screenshots == Screenshots::Frame || dropdown;
        if framed && self.renderer_answered && frames_fit {
            if dropdown {
                self.presented().await?;
            }
            if let Some(png) = self.next_frame().await? {
                return Ok(png);
            }
            // A browser whose frames are not the viewport (a remote one rendering at another
            // scale) would pay a screencast before every redraw: it gets redraws only.
            tracing::debug!("no screencast frame of the viewport: capturing with a redraw");
            self.frames_misfit.store(true, Ordering::Relaxed);
        }
        let params = CaptureScreenshotParams {
            format: Some(CaptureScreenshotFormat::Png),
            from_surface: Some(true),
            capture_beyond_viewport: Some(false),
            ..CaptureScreenshotParams::default()
        };
        // Already base64 on the wire from Chromium: pass it through.
        Ok(self.exec(params).await?.data.into())
    }

    /// `region` of the viewport drawn at `scale` by `Page.captureScreenshot`'s clip: the renderer
    /// paints the clip again at that scale (text and edges as sharp as a display that dense would
    /// show them), not an enlargement of the screenshot's pixels. The clip is in the document's
    /// CSS pixels: the region goes through the same picture-to-page mapping as an action's point
    /// (a zoomed page's CSS pixels are `zoom` picture pixels each), and the viewport's scroll
    /// offsets are added. Chromium draws a clip at its scale times the device scale factor (the
    /// zoom), so `scale` stays as asked: the picture is the region's picture pixels times `scale`.
    pub(super) async fn capture_clip(
        &self,
        region: crate::browser::Region,
        scale: f64,
    ) -> Result<String, PageError> {
        let scrolled = evaluate(
            self.page()?,
            "[visualViewport.pageLeft, visualViewport.pageTop]".into(),
            false,
        )
        .await?;
        let offset = |at: usize| scrolled.get(at).and_then(Value::as_f64).unwrap_or(0.0);
        let (left, top) = self.to_page(i64::from(region.left), i64::from(region.top));
        let (right, bottom) = self.to_page(i64::from(region.right), i64::from(region.bottom));
        let clip = Viewport {
            x: offset(0) + left,
            y: offset(1) + top,
            width: right - left,
            height: bottom - top,
            scale,
        };
        let params = CaptureScreenshotParams {
            format: Some(CaptureScreenshotFormat::Png),
            clip: Some(clip),
            from_surface: Some(true),
            capture_beyond_viewport: Some(false),
            ..CaptureScreenshotParams::default()
        };
        Ok(self.exec(params).await?.data.into())
    }

    /// The first frame of a screencast started now, or `None` when none comes in time or it is
    /// not the viewport's size.
    async fn next_frame(&self) -> Result<Option<String>, PageError> {
        let page = self.page()?;
        let mut frames = page
            .event_listener::<EventScreencastFrame>()
            .await
            .map_err(cdp_error)?;
        let start = StartScreencastParams {
            format: Some(StartScreencastFormat::Png),
            ..StartScreencastParams::default()
        };
        self.exec(start).await?;
        let frame = tokio::time::timeout(FIRST_FRAME_WAIT, frames.next()).await;
        let stop = self.exec(StopScreencastParams::default());
        let Ok(Some(frame)) = frame else {
            stop.await?;
            return Ok(None);
        };
        // Chromium sends no further frame until this one is acknowledged.
        let (stopped, _) = tokio::join!(
            stop,
            self.exec(ScreencastFrameAckParams::new(frame.session_id))
        );
        stopped?;
        let png: String = frame.data.clone().into();
        Ok((png_size(&png) == Some((VIEWPORT_WIDTH, VIEWPORT_HEIGHT))).then_some(png))
    }
}

/// Width and height from a base64 PNG's header, without decoding the rest.
fn png_size(base64_png: &str) -> Option<(i64, i64)> {
    use base64::Engine;
    // Signature (8 bytes), chunk length and type (8), then width and height (4 each): the first
    // 24 bytes are the first 32 base64 characters.
    let head = base64::engine::general_purpose::STANDARD
        .decode(base64_png.get(..32)?)
        .ok()?;
    if head.get(..8)? != b"\x89PNG\r\n\x1a\n" || head.get(12..16)? != b"IHDR" {
        return None;
    }
    let number = |at: usize| u32::from_be_bytes(head[at..at + 4].try_into().unwrap()) as i64;
    Some((number(16), number(20)))
}

#[cfg(test)]
mod tests {
    use super::png_size;
    use base64::Engine;

    /// A PNG's signature and header chunk (what `png_size` reads), then some bytes.
    fn png_head(width: u32, height: u32) -> String {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend(width.to_be_bytes());
        bytes.extend(height.to_be_bytes());
        bytes.extend([8, 6, 0, 0, 0, 1, 2, 3, 4]);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn a_png_header_gives_its_size() {
        assert_eq!(png_size(&png_head(800, 600)), Some((800, 600)));
        assert_eq!(png_size(&png_head(1600, 1200)), Some((1600, 1200)));
    }

    #[test]
    fn what_is_not_a_png_has_no_size() {
        assert_eq!(png_size(""), None);
        assert_eq!(png_size("aGVsbG8="), None);
        let jpeg = base64::engine::general_purpose::STANDARD.encode([0xFFu8; 40]);
        assert_eq!(png_size(&jpeg), None);
    }
}
