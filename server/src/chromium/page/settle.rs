//! What "settled" means, in one place: when a step's screenshot may be taken. The page probe
//! (`probe.js`, `settle`) runs the in-page part with the numbers given here; the environment
//! bounds the whole by the seed's wait (`BROWSER_ACTION_WAIT_SECONDS`, `Browser::settle`'s
//! `bound`). A page is settled when, in order:
//!
//! 1. **Arrived.** A page on its way to another document (`LoadState::navigating`: a navigation
//!    requested by the page or started, not yet loaded) is waited for, and a navigation that
//!    comes while the probe runs starts the settle again on the new document. Which action
//!    started it does not matter: the browser says so (`navigation.rs`), for a click, a key, a
//!    timer's redirect or any input an action will send. The one guard beside the browser's word
//!    is the probe's: a link's click or a form's submission whose default action went ahead
//!    (`expected`) must be followed by the browser's request; when it has not come by the
//!    probe's answer, it gets `EXPECTED_REQUEST_WAIT` to come.
//! 2. **Loaded.** A document loading is waited for.
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

use super::navigation::catch_up;
use crate::chromium::*;

/// How long the DOM must be unchanged to count as quiet.
pub(in crate::chromium) const QUIET_MS: u64 = 30;
/// How long a link's click or a form's submission that went ahead (the probe's `expected`) may
/// take to be requested of the browser. Measured: the request comes before the input's answer
/// (a link, and ENTER in a form on Chromium 156); a submission's navigation is a task the page
/// runs after the event, so it may come later on a busy renderer.
const EXPECTED_REQUEST_WAIT: Duration = Duration::from_millis(250);
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
        if let Some(handed) = &self.handed {
            // The page was settled as it was prepared, and has not changed since.
            return Ok(handed.outcome);
        }
        let deadline = Instant::now() + bound;
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
                outcome = self.settle_once(deadline) => {
                    if let Some(outcome) = outcome {
                        self.requests_seen = self.current.load.borrow().requests;
                        return Ok(outcome);
                    }
                }
                // A page being closed may never answer the probe. (The sender lives as long as
                // the browser, so this never ends early.)
                _ = load.wait_for(|s| s.closed) => {}
            }
        }
    }

    /// One settle attempt on the current document; `None` when a navigation replaced it (or
    /// one is on its way).
    async fn settle_once(&self, deadline: Instant) -> Option<SettleOutcome> {
        let (outcome, facts) = self.settle_attempt(deadline).await?;
        if let Some(facts) = facts {
            self.keep_settled_facts(facts);
        }
        Some(outcome)
    }

    /// `settle_once` without keeping what it read: the outcome and the facts the probe read as
    /// it settled.
    async fn settle_attempt(&self, deadline: Instant) -> Option<(SettleOutcome, Option<Value>)> {
        // A navigation the action's input requested came before the input's answer (one not in
        // its stream yet is taken after the probe's answer, below).
        catch_up(&self.current.events);
        if !self.wait_arrived(deadline).await {
            return Some((SettleOutcome::Bounded, None));
        }
        let now = Instant::now();
        if now >= deadline {
            return Some((SettleOutcome::Bounded, None));
        }
        let before = self.current.load.borrow().navigation_events;
        let max_ms = deadline.duration_since(now).as_millis();
        let call = format!(
            "settle({QUIET_MS}, {FRAMES_AFTER_CHANGE}, {NO_FRAMES_MS}, {max_ms}, {MAX_TEXT_CHARS})"
        );
        let result = probe(&self.current.page, &call, true).await;
        // One the page requested while the probe ran (a timer's redirect) came before its answer.
        self.events_caught_up().await;
        let (navigated, requests) = {
            let state = self.current.load.borrow();
            (state.navigation_events != before, state.requests)
        };
        let mut value = match result {
            Ok(value) if !navigated => value,
            // A navigation replaced the document under the probe (or is on its way): settle
            // the new one.
            _ => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                return None;
            }
        };
        // Links the page stopped are the step's incidents whichever attempt read them.
        let facts = value.get_mut("facts").map(Value::take);
        if let Some(facts) = &facts {
            self.note_blocked(facts);
        }
        if value["expected"] == Value::Bool(true) && requests == self.requests_seen {
            // A link or a form went ahead and the browser has not been asked yet: give it the
            // time a busy renderer takes, then settle again (the probe has said it once).
            let until = deadline.min(Instant::now() + EXPECTED_REQUEST_WAIT);
            self.wait_load(until, |s| s.requests != requests).await;
            return None;
        }
        let outcome = if value["bounded"] == Value::Bool(true) {
            SettleOutcome::Bounded
        } else {
            SettleOutcome::Quiet
        };
        Some((outcome, facts))
    }
}

/// The facts a settle read as it ended (`facts` of the probe's answer), and the document they
/// are of: the current tab's, until a navigation (`LoadState::navigation_events`).
pub(in crate::chromium) struct SettledFacts {
    tab: TargetId,
    navigation_events: u64,
    facts: Value,
}

impl ChromiumBrowser {
    fn keep_settled_facts(&self, facts: Value) {
        let kept = SettledFacts {
            tab: self.current.page.target_id().clone(),
            navigation_events: self.current.load.borrow().navigation_events,
            facts,
        };
        if let Ok(mut settled) = self.settled_facts.lock() {
            *settled = Some(kept);
        }
    }

    /// The facts the last settle read, once, if the page is still the document they are of.
    pub(in crate::chromium) fn settled_facts(&self) -> Option<Value> {
        let kept = self.settled_facts.lock().ok()?.take()?;
        let same = kept.tab == *self.current.page.target_id()
            && kept.navigation_events == self.current.load.borrow().navigation_events;
        same.then_some(kept.facts)
    }

    /// The links the page's probe stopped since it was last asked (the probe's `facts`), as the
    /// step's incidents.
    pub(in crate::chromium) fn note_blocked(&self, facts: &Value) {
        if let (Some(blocked), Ok(mut incidents)) =
            (facts["blocked"].as_array(), self.incidents.lock())
        {
            for link in blocked {
                let start = link[0].as_str().unwrap_or_default();
                let length = link[1].as_u64().unwrap_or_default() as usize;
                incidents.navigations_blocked.push(clipped(start, length));
            }
            incidents.navigations_blocked.more += facts["blockedMore"].as_u64().unwrap_or(0);
        }
    }
}
