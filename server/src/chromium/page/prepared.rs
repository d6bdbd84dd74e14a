//! The next episode's page, loaded ahead (`Browser::prepare_next`, `Browser::take_prepared`).
//!
//! A session whose episodes start on the same page (a trainer's loop, a task run again) has its
//! next episode's context opened while the episode runs (its successor, `ChromiumLauncher::renew`);
//! here that context also loads the start page, settles it, reads its facts and takes its
//! picture, as a reset would. The reset that asks for the same start then hands it over: no load,
//! no settle, no capture on its clock. The context is fresh as every episode's is (the episode
//! before never touched it), and the first observation is the one a load gives: the picture was
//! taken as a load's would be, right after it; a page that did anything on its own since (a
//! change, a callback of its timers, intervals or frames, a request, an animation running, a
//! navigation, a tab) is not handed over, and the reset starts in another fresh context. A page
//! that reads the clock or `Math.random` as it loads shows what it read then, as a load now
//! would show what it reads now; a reset that sets up its pages before they load (an archive's
//! replay or recording; a MiniWoB++ task's clock, seeded per episode in a script that runs first
//! in every document, and its zoom) is never served from a prepared page: the page loaded ahead
//! ran without that set-up, on the real clock, from before the reset. `Environment::reset` says
//! which resets may take one.

use crate::chromium::*;

/// A page loaded ahead, and what a reset would have read of it.
pub(in crate::chromium) struct Prepared {
    /// The start it is: the reset's URL as asked.
    url: String,
    outcome: SettleOutcome,
    facts: PageFacts,
    picture: String,
    /// The probe's count of what the page did on its own, when it was pictured.
    activity: u64,
    navigation_events: u64,
}

/// What a hand-over gives the reset's observation in place of reading the page again.
pub(in crate::chromium) struct Handed {
    pub(in crate::chromium) outcome: SettleOutcome,
    pub(in crate::chromium) facts: Option<PageFacts>,
    pub(in crate::chromium) picture: Option<String>,
}

impl ChromiumBrowser {
    /// Have the successor (being opened) load `start` once it is open.
    pub(in crate::chromium) fn prepare_successor(&mut self, start: Preparation) {
        let Some(opening) = self.successor.take() else {
            return;
        };
        self.successor = Some(tokio::spawn(async move {
            let mut next = opening
                .await
                .context("the spare context's opening ended")??;
            match next.prepare(&start).await {
                Ok(prepared) => next.prepared = Some(prepared),
                // Not an error of the next episode's: it starts in another context.
                Err(err) => {
                    tracing::debug!("preparing {}: {err}", start.url);
                    next.spoiled = true;
                }
            }
            Ok(next)
        }));
    }

    /// Load, settle, read and picture `start`, as a reset does.
    async fn prepare(&mut self, start: &Preparation) -> Result<Prepared, PageError> {
        self.goto(&start.url, start.load_timeout).await?;
        // Anything in it is the preparation's: what the spare did before is nobody's.
        let outcome = self.settle_page(start.settle_bound).await?;
        let facts = self.facts().await?;
        if !self.renderer_answered {
            return Err(PageError::RendererTimeout);
        }
        let picture = self.screenshot().await?;
        let activity = probe(self.page()?, "activity()", false).await?;
        Ok(Prepared {
            url: start.url.clone(),
            outcome,
            facts,
            picture,
            activity: activity.as_u64().unwrap_or(u64::MAX),
            navigation_events: self.current.load.borrow().navigation_events,
        })
    }

    /// `Browser::take_prepared`: hand over a page prepared for `url` if it is unchanged.
    pub(in crate::chromium) async fn take_prepared_page(&mut self, url: Option<&str>) -> Handover {
        let prepared = self.prepared.take();
        if self.spoiled {
            return Handover::Spoiled;
        }
        let Some(prepared) = prepared else {
            return Handover::Fresh;
        };
        if url != Some(prepared.url.as_str()) || !self.unchanged(&prepared).await {
            self.spoiled = true;
            return Handover::Spoiled;
        }
        self.handed = Some(Handed {
            outcome: prepared.outcome,
            facts: Some(prepared.facts),
            picture: Some(prepared.picture),
        });
        Handover::Prepared
    }

    /// Whether the prepared page is as it was pictured: the same document in the only tab, alive,
    /// and the page has done nothing on its own since.
    async fn unchanged(&self, prepared: &Prepared) -> bool {
        let same_document = {
            let state = self.current.load.borrow();
            state.navigation_events == prepared.navigation_events
                && !state.loading
                && !state.crashed
                && !state.closed
        };
        let no_tabs = self.new_tabs.lock().is_ok_and(|tabs| tabs.is_empty())
            && self.previous_pages.is_empty();
        if !(same_document && no_tabs && self.is_alive()) {
            return false;
        }
        let call = format!("pristine({})", prepared.activity);
        let Ok(page) = self.page() else {
            return false;
        };
        let answer = tokio::time::timeout(FACTS_TIMEOUT, probe(page, &call, false)).await;
        if !matches!(answer, Ok(Ok(Value::Bool(true)))) {
            return false;
        }
        // A navigation requested before the page's answer, which the task following the events
        // may not have written yet. No round trip first (`events_caught_up`): it cost the
        // hand-over about 10 ms, the browser process being busy with the episode that ended; a
        // navigation requested as the page answered (a script's is activity its answer counts;
        // a meta refresh's is not) is one a fresh load's page could start right after its
        // picture too, and the first step's settle waits for it.
        super::navigation::catch_up(&self.current.events);
        self.current.load.borrow().navigation_events == prepared.navigation_events
    }
}
