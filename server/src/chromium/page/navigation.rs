//! Where the page is and whether it is loading: history, the URL, waiting for loads, and the
//! one judge of "is this page on its way to another document" that every action's settle uses
//! (`LoadState::navigating`).
//!
//! Whether an action started a navigation is read from the browser's own events, not guessed
//! from the kind of action: a renderer asks for a navigation of its frame (a link's default
//! action, a form's submission, a script setting `location`) with `Page.frameRequestedNavigation`,
//! sent from the renderer while it handles the input, so it reaches us before the input's own
//! answer and before the answer of any later call on the page (the settle's probe: the same
//! DevTools session, in order). The browser then starts it (`Page.frameStartedLoading`), commits
//! it (`Page.frameNavigated`) and finishes loading (`Page.frameStoppedLoading`); a navigation that
//! commits no document (a 204, a download) starts and stops. A request not yet started keeps the
//! page "navigating" until it starts, or for `REQUEST_START_LIMIT` (a request the browser refuses
//! never starts). Measured on Chromium 156: a link click's request, start and the document
//! request all arrive before the click's answer; a 204's start 3-27 ms after it.

use chromiumoxide::cdp::browser_protocol::page::{
    ClientNavigationDisposition, EventFrameRequestedNavigation,
};

use crate::chromium::*;

/// How long a requested navigation may take to start before the page is judged to stay (the
/// browser refused it: a `javascript:` or local URL from a script).
pub(in crate::chromium) const REQUEST_START_LIMIT: Duration = Duration::from_millis(500);

impl LoadState {
    /// The page is on its way to another document: loading one, or one was requested and has not
    /// started yet (for at most `REQUEST_START_LIMIT`).
    pub(in crate::chromium) fn navigating(&self, now: Instant) -> bool {
        self.loading
            || self
                .requested
                .is_some_and(|at| now.duration_since(at) < REQUEST_START_LIMIT)
    }
}

/// The task that writes a tab's load state from its main frame's navigation events: requests,
/// starts, commits and stops of loading.
///
/// They come on four streams, and a task reading one of them may run before the one reading
/// another: a start and its stop read in the wrong order left the page "loading" for good. So one
/// task reads them all, and takes each batch latest stage first (stops, commits, starts, then
/// requests): chromiumoxide puts each event in its stream in the order Chromium sent them, so an
/// event taken is never missing its causes (a request whose start was taken is taken too). More
/// stops than starts then means a start came before we listened (a tab we attached to late).
pub(in crate::chromium) async fn watch_loading(
    page: &Page,
    state: Arc<watch::Sender<LoadState>>,
    incidents: Arc<Mutex<Incidents>>,
) -> anyhow::Result<JoinHandle<()>> {
    let frame = page.target_id().as_ref().to_string();
    let mut requested = page
        .event_listener::<EventFrameRequestedNavigation>()
        .await?;
    let mut started = page.event_listener::<EventFrameStartedLoading>().await?;
    let mut navigated = page.event_listener::<EventFrameNavigated>().await?;
    let mut stopped = page.event_listener::<EventFrameStoppedLoading>().await?;
    Ok(tokio::spawn(async move {
        use futures_util::FutureExt;
        let main = |id: &str| id == frame;
        let (mut starts, mut stops) = (0u64, 0u64);
        loop {
            // One event, whichever comes first; then everything the streams hold.
            let mut batch = Batch::default();
            tokio::select! {
                event = stopped.next() => match event {
                    Some(event) => batch.stops += u64::from(main(event.frame_id.as_ref())),
                    None => break,
                },
                event = navigated.next() => match event {
                    Some(event) => batch.commits += u64::from(event.frame.parent_id.is_none()),
                    None => break,
                },
                event = started.next() => match event {
                    Some(event) => batch.starts += u64::from(main(event.frame_id.as_ref())),
                    None => break,
                },
                event = requested.next() => match event {
                    Some(event) => batch.requests += u64::from(in_this_tab(&event, &main)),
                    None => break,
                },
            }
            while let Some(Some(event)) = stopped.next().now_or_never() {
                batch.stops += u64::from(main(event.frame_id.as_ref()));
            }
            while let Some(Some(event)) = navigated.next().now_or_never() {
                batch.commits += u64::from(event.frame.parent_id.is_none());
            }
            while let Some(Some(event)) = started.next().now_or_never() {
                batch.starts += u64::from(main(event.frame_id.as_ref()));
            }
            while let Some(Some(event)) = requested.next().now_or_never() {
                batch.requests += u64::from(in_this_tab(&event, &main));
            }
            if batch.is_empty() {
                continue;
            }
            starts += batch.starts;
            stops += batch.stops;
            // A start we never heard of: its stop stands for both.
            starts = starts.max(stops);
            let progressed = batch.starts + batch.commits + batch.stops > 0;
            state.send_modify(|s| {
                s.loading = starts > stops;
                s.navigation_events += batch.requests + batch.starts + batch.commits;
                s.requests += batch.requests;
                s.loads_finished += batch.stops;
                s.commits += batch.commits;
                // A request taken with a later stage is that stage's cause; a request alone is
                // one the browser has not started yet.
                if progressed {
                    s.requested = None;
                } else if batch.requests > 0 {
                    s.requested = Some(Instant::now());
                }
            });
            if batch.commits > 0 {
                if let Ok(mut incidents) = incidents.lock() {
                    incidents.navigated = true;
                }
            }
        }
    }))
}

/// Main-frame navigation events taken at once.
#[derive(Default)]
struct Batch {
    requests: u64,
    starts: u64,
    commits: u64,
    stops: u64,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.requests + self.starts + self.commits + self.stops == 0
    }
}

/// A navigation requested for this tab's main frame (not one for a new tab or window, nor a
/// download: those leave the page where it is).
fn in_this_tab(event: &EventFrameRequestedNavigation, main: &impl Fn(&str) -> bool) -> bool {
    main(event.frame_id.as_ref()) && event.disposition == ClientNavigationDisposition::CurrentTab
}

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

    /// Wait (at most until `deadline`) until the page is not on its way to another document
    /// (`LoadState::navigating`); whether it got there.
    pub(in crate::chromium) async fn wait_arrived(&self, deadline: Instant) -> bool {
        loop {
            let lapses = {
                let state = self.current.load.borrow();
                let now = Instant::now();
                if state.crashed {
                    return false;
                }
                if !state.navigating(now) {
                    return true;
                }
                // A request not yet started stops counting after its limit, with no event.
                match (state.loading, state.requested) {
                    (false, Some(at)) => deadline.min(at + REQUEST_START_LIMIT),
                    _ => deadline,
                }
            };
            self.wait_load(lapses, |s| !s.loading && s.requested.is_none())
                .await;
            if Instant::now() >= deadline {
                return !self.current.load.borrow().navigating(Instant::now());
            }
        }
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
