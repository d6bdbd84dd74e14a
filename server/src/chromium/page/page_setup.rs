//! What an episode asks of its pages beyond the seed's setup (`Browser::zoom`,
//! `Browser::add_document_script`, `Browser::evaluate`), and the one mapping between the
//! picture's pixels and the page's CSS pixels that a zoom makes.
//!
//! A zoom is Chromium's device scale factor: the page lays out in `800/zoom` x `600/zoom` CSS
//! pixels, each drawn as `zoom` device pixels, so the picture stays 800x600 and sharp, and the
//! page's scripts see one coordinate space. Tried first, on MiniWoB++'s `drag-box` at 2.5: a CSS
//! `zoom` on the root, or a `transform: scale` on the body (BrowserGym's), keep input events and
//! boxes in picture pixels, but jQuery UI's draggable mixes the two spaces and a 47-pixel drag
//! threw the box 413 pixels; a pinch zoom (`Emulation.setPageScaleFactor`) takes input in layout
//! pixels too and pans its visual viewport on a wheel before it scrolls. With the device scale
//! factor the same drag, mapped here, put the box where it was dropped (reward 1.0).

use crate::chromium::*;

/// The episode's zoom and document scripts, for every tab that becomes its page.
#[derive(Debug, Clone)]
pub(in crate::chromium) struct PageSetup {
    zoom: f64,
    scripts: Vec<String>,
}

impl Default for PageSetup {
    fn default() -> Self {
        PageSetup {
            zoom: 1.0,
            scripts: Vec::new(),
        }
    }
}

/// The page's size in CSS pixels at `zoom`, when `zoom` divides the viewport into whole pixels.
fn zoomed_viewport(zoom: f64) -> Option<(i64, i64)> {
    if !zoom.is_finite() || !(1.0..=8.0).contains(&zoom) {
        return None;
    }
    let whole = |side: i64| {
        let css = side as f64 / zoom;
        (css.fract() == 0.0).then_some(css as i64)
    };
    Some((whole(VIEWPORT_WIDTH)?, whole(VIEWPORT_HEIGHT)?))
}

async fn apply_zoom(page: &Page, zoom: f64) -> Result<(), PageError> {
    let (width, height) = zoomed_viewport(zoom)
        .ok_or_else(|| PageError::ActionFailed(format!("cannot zoom {zoom} times")))?;
    page.execute(SetDeviceMetricsOverrideParams::new(
        width, height, zoom, false,
    ))
    .await
    .map(|_| ())
    .map_err(cdp_error)
}

impl ChromiumBrowser {
    pub(in crate::chromium) async fn set_zoom(&mut self, zoom: f64) -> Result<(), PageError> {
        apply_zoom(self.page()?, zoom).await?;
        self.setup.zoom = zoom;
        // Where the pointer is, in picture pixels, changed meaning.
        self.pointer = None;
        Ok(())
    }

    pub(in crate::chromium) async fn add_script(
        &mut self,
        script: String,
    ) -> Result<(), PageError> {
        self.exec(AddScriptToEvaluateOnNewDocumentParams::new(script.clone()))
            .await?;
        self.setup.scripts.push(script);
        Ok(())
    }

    /// A tab that becomes the page gets the episode's zoom and scripts (a failure is only
    /// logged: the tab is followed as it is).
    pub(in crate::chromium) async fn set_up_tab(&mut self, page: &Page) {
        if self.setup.zoom != 1.0 {
            if let Err(err) = apply_zoom(page, self.setup.zoom).await {
                tracing::debug!("the episode's zoom on a tab: {err}");
            }
        }
        for script in &self.setup.scripts {
            let add = AddScriptToEvaluateOnNewDocumentParams::new(script.clone());
            if let Err(err) = page.execute(add).await {
                tracing::debug!("the episode's script on a tab: {err}");
            }
        }
    }

    pub(in crate::chromium) async fn evaluate_in_page(
        &self,
        expression: String,
    ) -> Result<Value, PageError> {
        evaluate(self.page()?, expression, true).await
    }

    /// A picture pixel as a point of the page, in CSS pixels.
    pub(in crate::chromium) fn to_page(&self, x: i64, y: i64) -> (f64, f64) {
        (x as f64 / self.setup.zoom, y as f64 / self.setup.zoom)
    }

    /// A distance in the picture (a wheel's travel) in the page's CSS pixels.
    pub(in crate::chromium) fn length_to_page(&self, length: i64) -> f64 {
        length as f64 / self.setup.zoom
    }

    /// A box of the page, `[x, y, width, height]` in CSS pixels, in picture pixels (the edges
    /// rounded outward, so it still covers what it covered).
    pub(in crate::chromium) fn box_to_picture(&self, [x, y, width, height]: [i64; 4]) -> [i64; 4] {
        let zoom = self.setup.zoom;
        if zoom == 1.0 {
            return [x, y, width, height];
        }
        let left = (x as f64 * zoom).floor();
        let top = (y as f64 * zoom).floor();
        let right = ((x + width) as f64 * zoom).ceil();
        let bottom = ((y + height) as f64 * zoom).ceil();
        [
            left as i64,
            top as i64,
            (right - left) as i64,
            (bottom - top) as i64,
        ]
    }

    /// A box of the page, `[x, y, width, height]` in CSS pixels, in picture pixels, unrounded
    /// (a point of the picture is tested against it: an open dropdown's rows).
    pub(in crate::chromium) fn frame_to_picture(&self, frame: [f64; 4]) -> [f64; 4] {
        frame.map(|side| side * self.setup.zoom)
    }

    /// A text run's box and size in picture pixels.
    pub(in crate::chromium) fn run_to_picture(&self, run: &mut TextRun) {
        let zoom = self.setup.zoom;
        if zoom == 1.0 {
            return;
        }
        let [x, y, width, height] = self.box_to_picture([
            i64::from(run.x),
            i64::from(run.y),
            i64::from(run.width),
            i64::from(run.height),
        ]);
        let clamp = |v: i64| i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX });
        (run.x, run.y, run.width, run.height) = (clamp(x), clamp(y), clamp(width), clamp(height));
        run.size = (f64::from(run.size) * zoom) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::zoomed_viewport;

    #[test]
    fn a_zoom_must_divide_the_viewport_into_whole_pixels() {
        assert_eq!(zoomed_viewport(1.0), Some((800, 600)));
        assert_eq!(zoomed_viewport(2.5), Some((320, 240)));
        assert_eq!(zoomed_viewport(2.0), Some((400, 300)));
        assert_eq!(zoomed_viewport(3.0), None, "800/3 is not whole");
        assert_eq!(zoomed_viewport(0.5), None);
        assert_eq!(zoomed_viewport(f64::NAN), None);
        assert_eq!(zoomed_viewport(f64::INFINITY), None);
    }
}
