//! What "settled" means, in one place: when a step's screenshot may be taken. The page probe
//! (`probe.js`, `settle`) runs the in-page part with the numbers given here; the environment
//! bounds the whole by the seed's wait (`BROWSER_ACTION_WAIT_SECONDS`, `Browser::settle`'s
//! `bound`). A page is settled when, in order:
//!
//! 1. **A navigation the action may have started has started or not.** A click or key that may
//!    navigate (`acted(true)`) gets `NAVIGATION_WINDOW` from the action for it to start (measured:
//!    ~10 ms after a link click, ~25 ms after an ENTER); a navigation the server itself asked for
//!    and saw load (`goto`, `back`) needs none.
//! 2. **Loaded.** A document loading is waited for, and a navigation that replaces the document
//!    under the probe starts the settle again on the new one.
//! 3. **Quiet.** No fetch/XHR (or its body) pending, no short timer, `readyState` complete, and the
//!    DOM unchanged for `QUIET_MS` (changes while the parser builds the document start no quiet
//!    window: they are not what scripts keep changing).
//! 4. **Drawn.** `FRAMES_AFTER_CHANGE` animation frames have begun since the last change (a DOM
//!    change, a short timer's callback, a request's end): the frame that painted it has gone to
//!    the compositor. The frames overlap the quiet; a change once the page was found quiet needs
//!    the frames again, not the quiet again.
//!
//! Bounds: past the action wait the settle ends `Bounded` (once the frames have begun); a page
//! that draws no frame for `NO_FRAMES_MS` (a hidden page, a machine too loaded to draw) ends it
//! `Bounded` at once. Why each number is what it is: docs/ARCHITECTURE.md, decision 6.

use crate::chromium::*;

/// How long the DOM must be unchanged to count as quiet.
pub(in crate::chromium) const QUIET_MS: u64 = 30;
/// A click or key that navigates starts its navigation within ~10-25 ms (measured); wait this long
/// before believing that it did not.
pub(in crate::chromium) const NAVIGATION_WINDOW: Duration = Duration::from_millis(40);
/// Animation frames that must begin after the last change: the second one begins once the first,
/// which painted the change, has gone to the compositor.
const FRAMES_AFTER_CHANGE: u32 = 2;
/// A page that draws no frame this long ends the settle: on a loaded machine frames come 100-200
/// ms apart (eight Chromiums on two cores), so waiting that long still gives the settled picture;
/// a hidden page draws none.
const NO_FRAMES_MS: u64 = 300;

impl ChromiumBrowser {
    /// Settle the current page (the tab a person would be looking at), at most `bound`.
    pub(in crate::chromium) async fn settle_page(
        &mut self,
        bound: Duration,
    ) -> Result<SettleOutcome, PageError> {
        let deadline = Instant::now() + bound;
        let window = if self.expect_navigation {
            NAVIGATION_WINDOW
        } else {
            Duration::ZERO
        };
        loop {
            if self.is_closed(self.current.page.target_id()) {
                // The tab closed itself: settle the one a person would be looking at now.
                self.follow_tabs().await?;
                if self.is_closed(self.current.page.target_id()) {
                    return Ok(SettleOutcome::Bounded);
                }
            }
            self.page()?;
            let mut load = self.current.load.clone();
            tokio::select! {
                outcome = self.settle_once(deadline, window) => {
                    if let Some(outcome) = outcome {
                        return Ok(outcome);
                    }
                }
                // A page being closed may never answer the probe. (The sender lives as long as
                // the browser, so this never ends early.)
                _ = load.wait_for(|s| s.closed) => {}
            }
        }
    }

    /// One settle attempt on the current document; `None` when a navigation replaced it.
    async fn settle_once(&self, deadline: Instant, window: Duration) -> Option<SettleOutcome> {
        if self.current.load.borrow().loading && !self.wait_load(deadline, |s| !s.loading).await {
            return Some(SettleOutcome::Bounded);
        }
        let now = Instant::now();
        if now >= deadline {
            return Some(SettleOutcome::Bounded);
        }
        let before = self.current.load.borrow().navigation_events;
        let min_ms = window
            .saturating_sub(now.duration_since(self.last_action))
            .as_millis();
        let max_ms = deadline.duration_since(now).as_millis();
        let call = format!(
            "settle({QUIET_MS}, {FRAMES_AFTER_CHANGE}, {NO_FRAMES_MS}, {min_ms}, {max_ms})"
        );
        let result = probe(&self.current.page, &call, true).await;
        let navigated = self.current.load.borrow().navigation_events != before;
        match result {
            Ok(value) if !navigated => Some(if value["bounded"] == Value::Bool(true) {
                SettleOutcome::Bounded
            } else {
                SettleOutcome::Quiet
            }),
            // A navigation replaced the document under the probe: settle the new one.
            _ => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                None
            }
        }
    }
}
