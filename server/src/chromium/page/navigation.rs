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

use std::task::{Context, Poll, Waker};

use chromiumoxide::cdp::browser_protocol::page::{
    ClientNavigationDisposition, EventFrameRequestedNavigation,
};
use chromiumoxide::cdp::IntoEventKind;
use chromiumoxide::listeners::EventStream;

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

/// A tab's main-frame navigation events (requests, starts, commits and stops of loading) and
/// what they have added up to, written into its load state by the task that follows them
/// (`watch_loading`) and by a settle that must know whether a navigation came before an answer
/// (`catch_up`).
///
/// They come on four streams, and reading one of them before another could take a start and its
/// stop in the wrong order, which left the page "loading" for good. So each take reads them all,
/// latest stage first (stops, commits, starts, then requests): chromiumoxide puts each event in
/// its stream in the order Chromium sent them, so an event taken is never missing its causes (a
/// request whose start was taken is taken too). More stops than starts then means a start came
/// before we listened (a tab we attached to late).
pub(in crate::chromium) struct LoadEvents {
    frame: String,
    requested: EventStream<EventFrameRequestedNavigation>,
    started: EventStream<EventFrameStartedLoading>,
    navigated: EventStream<EventFrameNavigated>,
    stopped: EventStream<EventFrameStoppedLoading>,
    starts: u64,
    stops: u64,
    state: Arc<watch::Sender<LoadState>>,
    incidents: Arc<Mutex<Incidents>>,
    /// The following task's waker: a catch-up polls the streams with another, which takes the
    /// task's place in them, so the task is woken to put its own back.
    follower: Option<Waker>,
}

/// A tab's navigation events, shared by the task that follows them and the tab's settles.
pub(in crate::chromium) type SharedLoadEvents = Arc<Mutex<LoadEvents>>;

/// Count every event `stream` holds now; false once it has ended.
fn drain<T>(stream: &mut EventStream<T>, cx: &mut Context<'_>, mut count: impl FnMut(&T)) -> bool
where
    T: IntoEventKind + Unpin,
{
    loop {
        match stream.poll_next_unpin(cx) {
            Poll::Ready(Some(event)) => count(&*event),
            Poll::Ready(None) => return false,
            Poll::Pending => return true,
        }
    }
}

impl LoadEvents {
    /// Take what the streams hold and write it into the load state: `Ready(true)` if anything
    /// was taken, `Ready(false)` once the tab's streams have ended, `Pending` otherwise.
    fn poll_take(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let mut batch = Batch::default();
        let frame = self.frame.as_str();
        let main = |id: &str| id == frame;
        // `&`, not `&&`: every stream is drained, also once one has ended.
        let open = drain(&mut self.stopped, cx, |event| {
            batch.stops += u64::from(main(event.frame_id.as_ref()))
        }) & drain(&mut self.navigated, cx, |event| {
            batch.commits += u64::from(event.frame.parent_id.is_none())
        }) & drain(&mut self.started, cx, |event| {
            batch.starts += u64::from(main(event.frame_id.as_ref()))
        }) & drain(&mut self.requested, cx, |event| {
            batch.requests += u64::from(in_this_tab(event, &main))
        });
        if !batch.is_empty() {
            self.write(batch);
            return Poll::Ready(true);
        }
        if open {
            Poll::Pending
        } else {
            Poll::Ready(false)
        }
    }

    fn write(&mut self, batch: Batch) {
        self.starts += batch.starts;
        self.stops += batch.stops;
        // A start we never heard of: its stop stands for both.
        self.starts = self.starts.max(self.stops);
        let loading = self.starts > self.stops;
        let progressed = batch.starts + batch.commits + batch.stops > 0;
        self.state.send_modify(|s| {
            s.loading = loading;
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
            if let Ok(mut incidents) = self.incidents.lock() {
                incidents.navigated = true;
            }
        }
    }
}

/// Follow a tab's navigation events into its load state, from now on.
pub(in crate::chromium) async fn watch_loading(
    page: &Page,
    state: Arc<watch::Sender<LoadState>>,
    incidents: Arc<Mutex<Incidents>>,
) -> anyhow::Result<(JoinHandle<()>, SharedLoadEvents)> {
    Ok(follow(LoadEvents {
        frame: page.target_id().as_ref().to_string(),
        // Latest stage first, as they are taken: an event that comes between two listeners'
        // registrations may reach the one registered first only, and a stop heard without its
        // start is counted as both, a start without its stop would be loading for good.
        stopped: page.event_listener().await?,
        navigated: page.event_listener().await?,
        started: page.event_listener().await?,
        requested: page.event_listener().await?,
        starts: 0,
        stops: 0,
        state,
        incidents,
        follower: None,
    }))
}

/// The task that writes what comes into the load state until the tab's streams end.
fn follow(events: LoadEvents) -> (JoinHandle<()>, SharedLoadEvents) {
    let events = Arc::new(Mutex::new(events));
    let following = events.clone();
    let task = tokio::spawn(async move {
        let take = || {
            std::future::poll_fn(|cx| {
                let Ok(mut events) = following.lock() else {
                    return Poll::Ready(false);
                };
                if !events
                    .follower
                    .as_ref()
                    .is_some_and(|waker| waker.will_wake(cx.waker()))
                {
                    events.follower = Some(cx.waker().clone());
                }
                events.poll_take(cx)
            })
        };
        while take().await {}
    });
    (task, events)
}

/// Write into the load state every navigation event of the tab that is in its streams. The task
/// that follows them may not have run since they came (a busy machine). An event comes into its
/// stream one pass of chromiumoxide's handler after it was read, while an answer read with it is
/// handed over at once: `ChromiumBrowser::events_caught_up` makes that pass happen first.
pub(in crate::chromium) fn catch_up(events: &SharedLoadEvents) {
    let Ok(mut events) = events.lock() else {
        return;
    };
    let _ = events.poll_take(&mut Context::from_waker(
        futures_util::task::noop_waker_ref(),
    ));
    if let Some(follower) = &events.follower {
        follower.wake_by_ref();
    }
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
    /// Every navigation event the browser sent before the last answer we read is in the load
    /// state: a command the browser process answers (not the renderer) is read by chromiumoxide's handler in a pass after the one that put the
    /// earlier events in their streams; then `catch_up` takes them. So the settle, reading the
    /// state after its probe's answer, never misses a navigation the page requested before it
    /// answered (a timer's redirect), however late the task that follows the events runs.
    pub(in crate::chromium) async fn events_caught_up(&self) {
        let _ = self
            .current
            .page
            .execute(GetNavigationHistoryParams::default())
            .await;
        catch_up(&self.current.events);
    }

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

#[cfg(test)]
mod tests {
    use chromiumoxide::cdp::browser_protocol::page::{
        EventFrameStartedLoading, EventFrameStoppedLoading,
    };
    use chromiumoxide::cdp::Event;
    use futures_channel::mpsc::{unbounded, UnboundedSender};
    use serde_json::json;

    use super::*;

    /// An event as chromiumoxide's handler puts it in a listener's stream.
    fn send<T: Event + serde::de::DeserializeOwned>(
        to: &UnboundedSender<Arc<dyn Event>>,
        v: Value,
    ) {
        let event: T = serde_json::from_value(v).unwrap();
        to.unbounded_send(Arc::new(event)).unwrap();
    }

    /// A navigation whose request has reached us but not the task that follows the events (one
    /// thread here: it runs only when the test waits) is in the load state once a settle catches
    /// up, and the task goes on following after it.
    #[tokio::test(flavor = "current_thread")]
    async fn a_catch_up_takes_what_the_follower_has_not_yet() {
        let (requests, requested) = unbounded();
        let (starts, started) = unbounded();
        let (_commits, navigated) = unbounded();
        let (stops, stopped) = unbounded();
        let (state, load) = watch::channel(LoadState::default());
        let (task, events) = follow(LoadEvents {
            frame: "F".into(),
            requested: EventStream::new(requested),
            started: EventStream::new(started),
            navigated: EventStream::new(navigated),
            stopped: EventStream::new(stopped),
            starts: 0,
            stops: 0,
            state: Arc::new(state),
            incidents: Arc::default(),
            follower: None,
        });
        // The follower waits on its streams.
        tokio::task::yield_now().await;
        send::<EventFrameRequestedNavigation>(
            &requests,
            json!({"frameId": "F", "reason": "scriptInitiated", "url": "http://a/",
                   "disposition": "currentTab"}),
        );
        assert!(
            !load.borrow().navigating(Instant::now()),
            "the follower has not run"
        );
        catch_up(&events);
        assert!(load.borrow().navigating(Instant::now()));
        assert_eq!(load.borrow().requests, 1);
        // The follower still hears its streams once a catch-up has polled them in its place,
        // with nothing for it to take (its own wake from the request's arrival spent).
        tokio::task::yield_now().await;
        catch_up(&events);
        send::<EventFrameStartedLoading>(&starts, json!({"frameId": "F"}));
        let mut watching = load.clone();
        tokio::time::timeout(Duration::from_secs(5), watching.wait_for(|s| s.loading))
            .await
            .expect("the follower took the start")
            .unwrap();
        send::<EventFrameStoppedLoading>(&stops, json!({"frameId": "F"}));
        tokio::time::timeout(
            Duration::from_secs(5),
            watching.wait_for(|s| !s.navigating(Instant::now())),
        )
        .await
        .expect("the follower took the stop")
        .unwrap();
        assert_eq!(
            (load.borrow().requests, load.borrow().loads_finished),
            (1, 1)
        );
        drop((requests, starts, stops));
        task.abort();
    }
}
