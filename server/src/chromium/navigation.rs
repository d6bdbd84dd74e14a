//! Where the page is and whether it is loading: history, the URL, and waiting for loads and
//! for the page to settle.

use super::*;

impl ChromiumBrowser {
    pub(super) async fn history(&self) -> Result<(i64, Vec<(i64, String)>), PageError> {
        let history = self.exec(GetNavigationHistoryParams::default()).await?;
        let entries = history
            .entries
            .iter()
            .map(|entry| (entry.id, entry.url.clone()))
            .collect();
        Ok((history.current_index, entries))
    }

    pub(super) async fn current_url(&self) -> Result<String, PageError> {
        let (index, entries) = self.history().await?;
        Ok(usize::try_from(index)
            .ok()
            .and_then(|i| entries.get(i))
            .map(|(_, url)| url.clone())
            .unwrap_or_default())
    }

    /// Whether the main frame is loading, or has started or committed a navigation since the
    /// counts given.
    pub(super) fn document_changing(&self, commits: u64, navigations: u64) -> bool {
        let state = self.current.load.borrow();
        state.loading || state.commits != commits || state.navigation_events != navigations
    }

    /// One settle attempt on the current document; `None` when a navigation replaced it.
    pub(super) async fn settle_once(
        &self,
        deadline: Instant,
        window: Duration,
    ) -> Option<SettleOutcome> {
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
        let call = format!("settle({QUIET_MS}, {min_ms}, {max_ms})");
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

    /// Wait (at most until `deadline`) for the current page's load state to satisfy `done`.
    pub(super) async fn wait_load(
        &self,
        deadline: Instant,
        done: impl Fn(&LoadState) -> bool,
    ) -> bool {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let mut load = self.current.load.clone();
        let reached = tokio::time::timeout(remaining, load.wait_for(|s| done(s) || s.crashed))
            .await
            .is_ok_and(|waited| waited.is_ok());
        reached
    }
}
