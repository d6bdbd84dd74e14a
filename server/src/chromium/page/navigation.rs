//! Where the page is and whether it is loading: history, the URL, and waiting for loads.

use crate::chromium::*;

impl ChromiumBrowser {
    pub(in crate::chromium) async fn history(
        &self,
    ) -> Result<(i64, Vec<(i64, String)>), PageError> {
        let history = self.exec(GetNavigationHistoryParams::default()).await?;
        let entries = history
            .entries
            .iter()
            .map(|entry| (entry.id, entry.url.clone()))
            .collect();
        Ok((history.current_index, entries))
    }

    pub(in crate::chromium) async fn current_url(&self) -> Result<String, PageError> {
        let (index, entries) = self.history().await?;
        Ok(usize::try_from(index)
            .ok()
            .and_then(|i| entries.get(i))
            .map(|(_, url)| url.clone())
            .unwrap_or_default())
    }

    /// Whether the main frame is loading, or has started or committed a navigation since the
    /// counts given.
    pub(in crate::chromium) fn document_changing(&self, commits: u64, navigations: u64) -> bool {
        let state = self.current.load.borrow();
        state.loading || state.commits != commits || state.navigation_events != navigations
    }

    /// Wait (at most until `deadline`) for the current page's load state to satisfy `done`.
    pub(in crate::chromium) async fn wait_load(
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
