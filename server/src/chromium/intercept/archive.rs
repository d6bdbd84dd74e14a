//! An episode's archive work on Chromium (docs/archives.md): DevTools request interception
//! (`Fetch`) on the browser's own DevTools session, which pauses every request of every tab, frame
//! and worker of the browser (a popup's first request too, which a tab's own session would see
//! too late). Recording, a request is paused once its response's headers are in: the body is
//! read, the exchange kept (`archive::record`), the response let go. Replaying, a request is paused
//! before it leaves and answered from the archive (`archive::replay`): none goes on to the
//! network. Interception is browser-wide, so only a browser the session has to itself does it
//! (`Host::is_private`); a browser's episodes take turns (`Host::interception`): the episode that
//! ended stops before the next one starts.

use std::sync::atomic::AtomicU64;
use std::time::SystemTime;

use base64::Engine;
use browserenv_archive::{Exchange, Header, Request, Response};
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, DisableParams, EnableParams, EventRequestPaused, FailRequestParams,
    FulfillRequestParams, GetResponseBodyParams, HeaderEntry, RequestId, RequestPattern,
    RequestStage,
};
use chromiumoxide::cdp::browser_protocol::network::{
    ErrorReason, EventResponseReceivedExtraInfo, EventWebSocketCreated, Request as CdpRequest,
};

use crate::archive::record::{BodyPlan, Recording};
use crate::archive::replay::{Answer, Pick, Replaying};
use crate::archive::Work;
use crate::chromium::*;

/// Tells interceptions apart: a browser's is the one whose token it holds.
static TOKENS: AtomicU64 = AtomicU64::new(1);
/// Opening a replay's offline context may take this long.
const OFFLINE_CONTEXT_TIMEOUT: Duration = Duration::from_secs(20);
/// Reading a body may take this long (a slow server) before the response goes on without it.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// A replay's answers on their way to the browser at once: each holds a recorded body (up to
/// `BROWSER_ARCHIVE_BODY_MB`) and its base64, so a page asking for a big resource a thousand
/// times holds a few hundred MB at most, not gigabytes; the other requests wait their turn.
const FULFILS_AT_ONCE: usize = 16;

/// The replay's answers being sent, at most `FULFILS_AT_ONCE`, in the order asked for.
struct Fulfils {
    turns: Arc<tokio::sync::Semaphore>,
    /// Told when the answer asked for last has been sent: the next one waits for it.
    last: std::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

impl Fulfils {
    fn new() -> Fulfils {
        Fulfils {
            turns: Arc::new(tokio::sync::Semaphore::new(FULFILS_AT_ONCE)),
            last: std::sync::Mutex::new(None),
        }
    }

    /// Wait for a turn, then decide the answer (`make`, in the order asked for), and on a task
    /// of its own that holds the turn: prepare it (`load`: a recorded body read from the file,
    /// alongside the others), then send it once the answer asked for before it has gone, so the
    /// browser takes answers in the order the page asked (a URL asked three times gets its
    /// three recorded responses in turn).
    async fn answer<A, B, L, F>(
        &self,
        make: impl FnOnce() -> A,
        load: impl FnOnce(A) -> L + Send + 'static,
        send: impl FnOnce(B) -> F + Send + 'static,
    ) where
        A: Send + 'static,
        B: Send + 'static,
        L: std::future::Future<Output = B> + Send + 'static,
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let Ok(turn) = self.turns.clone().acquire_owned().await else {
            return;
        };
        let made = make();
        let (done, next) = tokio::sync::oneshot::channel();
        let before = self
            .last
            .lock()
            .ok()
            .and_then(|mut last| last.replace(next));
        tokio::spawn(async move {
            let answer = load(made).await;
            if let Some(before) = before {
                let _ = before.await;
            }
            send(answer).await;
            let _ = done.send(());
            drop(turn);
        });
    }
}

/// An episode's interception, while it runs.
pub(in crate::chromium) struct Interception {
    token: u64,
    work: Work,
    /// The task that takes the paused requests, and those that hear of the cookies responses
    /// set; they end with the interception.
    tasks: Tasks,
}

impl ChromiumBrowser {
    /// Begin `work`: from here on every request of this browser is paused for it.
    pub(in crate::chromium) async fn start_interception(
        &mut self,
        work: Work,
    ) -> Result<(), PageError> {
        if !self.host.is_private() {
            return Err(PageError::ActionFailed(
                "archives need a browser of the session's own (BROWSER_ISOLATION=process, not \
                 --browser-url): DevTools intercepts requests browser-wide"
                    .into(),
            ));
        }
        self.stop_interception().await;
        if matches!(work, Work::Replay(_)) {
            self.go_offline().await?;
        }
        let token = TOKENS.fetch_add(1, Ordering::SeqCst);
        let stage = match &work {
            Work::Record(_) => RequestStage::Response,
            Work::Replay(_) => RequestStage::Request,
        };
        // Listening first: no request paused by the `enable` below goes unseen.
        let mut paused = self
            .host
            .cdp
            .event_listener::<EventRequestPaused>()
            .await
            .map_err(cdp_error)?;
        self.host.interception.store(token, Ordering::SeqCst);
        let pattern = RequestPattern {
            url_pattern: Some("*".into()),
            resource_type: None,
            request_stage: Some(stage),
        };
        let enable = EnableParams {
            patterns: Some(vec![pattern]),
            handle_auth_requests: None,
        };
        self.host.cdp.execute(enable).await.map_err(cdp_error)?;
        let host = Arc::downgrade(&self.host);
        let taken = work.clone();
        let fulfils = Fulfils::new();
        let task = tokio::spawn(async move {
            while let Some(event) = paused.next().await {
                let Some(host) = host.upgrade() else { break };
                // Another episode's turn: its own listener answers.
                if host.interception.load(Ordering::SeqCst) != token {
                    continue;
                }
                match &taken {
                    // Answered here, in the order the page asked: a URL asked again gets the
                    // next recorded response. Sent by a task of its own, a few at once.
                    Work::Replay(replaying) => {
                        let id = event.request_id.clone();
                        let (loading, url) = (replaying.clone(), event.request.url.clone());
                        fulfils
                            .answer(
                                || pick(replaying, &event.request),
                                move |pick| async move {
                                    match pick {
                                        Pick::Now(answer) => answer,
                                        // The record is read off the event loop.
                                        Pick::Load(index) => {
                                            tokio::task::spawn_blocking(move || {
                                                loading.load(index, &url)
                                            })
                                            .await
                                            .unwrap_or(Answer::Refuse)
                                        }
                                    }
                                },
                                move |answer| async move { send(&host, id, answer).await },
                            )
                            .await;
                    }
                    Work::Record(recording) => {
                        let recording = recording.clone();
                        tokio::spawn(async move { keep(&host, &recording, &event).await });
                    }
                }
            }
        });
        self.archive = Some(Interception {
            token,
            work,
            tasks: Tasks(vec![task]),
        });
        let page = self.current.page.clone();
        self.intercept_tab(&page).await;
        Ok(())
    }

    /// A replay's context: one whose every connection goes to a proxy that refuses it
    /// (`EgressPolicy::offline`), so what request interception does not see (WebSockets,
    /// preconnects, DNS prefetches: a proxied context resolves no names) reaches nothing. The
    /// episode moves to a new context (the one it had, opened ahead without that proxy, is
    /// closed); its successor stays. Before the first navigation, so the page never knew the
    /// other.
    async fn go_offline(&mut self) -> Result<(), PageError> {
        if self.egress.as_ref().is_some_and(|proxy| proxy.is_offline()) {
            return Ok(());
        }
        let policy = Arc::new(super::egress::EgressPolicy::offline());
        let open = ChromiumBrowser::open(self.host.clone(), Some(policy), self.screenshots);
        let fresh = tokio::time::timeout(OFFLINE_CONTEXT_TIMEOUT, open)
            .await
            .map_err(|_| PageError::ActionTimeout)?
            .map_err(|err| PageError::ActionFailed(format!("{err:#}")))?;
        let mut previous = std::mem::replace(self, fresh);
        self.successor = previous.successor.take();
        tokio::spawn(previous.close());
        Ok(())
    }

    /// End this episode's interception: requests go to the network again, unanswered ones go on.
    pub(in crate::chromium) async fn stop_interception(&mut self) {
        let Some(interception) = self.archive.take() else {
            return;
        };
        let ours = self
            .host
            .interception
            .compare_exchange(interception.token, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if ours {
            if let Err(err) = self.host.cdp.execute(DisableParams::default()).await {
                tracing::debug!("cannot stop intercepting requests: {err}");
            }
        }
    }

    /// A tab that becomes the page: a replay's clock in its documents; a recording hears of the
    /// cookies its responses set (DevTools reports them on the tab's own session only).
    pub(in crate::chromium) async fn intercept_tab(&mut self, page: &Page) {
        let Some(interception) = &mut self.archive else {
            return;
        };
        match &interception.work {
            Work::Replay(replaying) => {
                if let Err(err) = install_clock(page, replaying).await {
                    tracing::debug!("the replay's clock on a tab: {err}");
                }
                // A WebSocket is no request interception sees: the offline proxy fails it (an
                // archive keeps no WebSocket messages a replay could play), and the
                // observation lists it.
                match page.event_listener::<EventWebSocketCreated>().await {
                    Ok(mut created) => {
                        let replaying = replaying.clone();
                        interception.tasks.0.push(tokio::spawn(async move {
                            while let Some(event) = created.next().await {
                                replaying.unanswerable(&event.url, "WebSocket");
                            }
                        }));
                    }
                    Err(err) => tracing::debug!("a tab's WebSockets cannot be heard of: {err}"),
                }
            }
            Work::Record(recording) => match page
                .event_listener::<EventResponseReceivedExtraInfo>()
                .await
            {
                Ok(mut extra) => {
                    let recording = recording.clone();
                    interception.tasks.0.push(tokio::spawn(async move {
                        while let Some(event) = extra.next().await {
                            let cookies = set_cookies(&event.headers);
                            let status = u16::try_from(event.status_code).unwrap_or(0);
                            recording.saw_cookies(event.request_id.inner(), status, cookies);
                        }
                    }));
                }
                Err(err) => tracing::debug!("a tab's cookies cannot be heard of: {err}"),
            },
        }
    }
}

/// The replay's clock in every new document of `page`.
async fn install_clock(page: &Page, replaying: &Replaying) -> Result<(), PageError> {
    page.execute(AddScriptToEvaluateOnNewDocumentParams::new(
        replaying.clock_script(),
    ))
    .await
    .map(|_| ())
    .map_err(cdp_error)
}

/// What the archive has for a request.
fn pick(replaying: &Replaying, request: &CdpRequest) -> Pick {
    let headers = request_headers(request);
    // Chromium's own CORS preflight: its origin, when the request is one.
    let preflight = (request.method.eq_ignore_ascii_case("OPTIONS")
        && headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("access-control-request-method")))
    .then(|| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("origin"))
            .cloned()
    })
    .flatten();
    let body = request_body(request, u64::MAX);
    replaying.pick(&request.method, &request.url, &body, preflight.as_ref())
}

async fn send(host: &Host, id: RequestId, answer: Answer) {
    let sent = match answer {
        Answer::Fulfill {
            status,
            phrase,
            headers,
            body,
        } => {
            let params = FulfillRequestParams {
                request_id: id,
                response_code: i64::from(status),
                response_headers: Some(
                    headers
                        .into_iter()
                        .map(|(name, value)| HeaderEntry { name, value })
                        .collect(),
                ),
                binary_response_headers: None,
                body: Some(
                    base64::engine::general_purpose::STANDARD
                        .encode(body)
                        .into(),
                ),
                response_phrase: Some(phrase),
            };
            host.cdp.execute(params).await.map(|_| ())
        }
        Answer::Refuse => host
            .cdp
            .execute(FailRequestParams::new(id, ErrorReason::BlockedByClient))
            .await
            .map(|_| ()),
    };
    if let Err(err) = sent {
        // The page went away meanwhile (a navigation, a closed tab): nothing waits for it.
        tracing::debug!("a replayed answer was not taken: {err}");
    }
}

/// Keep a response paused with its headers in: read its body (within the bounds), let it go on,
/// hand the exchange to the recording.
async fn keep(host: &Host, recording: &Recording, event: &EventRequestPaused) {
    let id = event.request_id.clone();
    let status = event
        .response_status_code
        .filter(|_| event.response_error_reason.is_none())
        .and_then(|status| u16::try_from(status).ok());
    let kept = status.filter(|_| recording.keeps(&event.request.url));
    let Some(status) = kept else {
        go_on(host, id).await;
        return;
    };
    let headers: Vec<Header> = event
        .response_headers
        .iter()
        .flatten()
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect();
    let (body, body_left_out) = match recording.body_plan(status, &headers) {
        BodyPlan::Skip => {
            recording.skipped();
            go_on(host, id).await;
            return;
        }
        BodyPlan::None => (Vec::new(), false),
        BodyPlan::LeaveOut => (Vec::new(), true),
        BodyPlan::Read => match read_body(host, &id, recording.body_limit()).await {
            Some(body) => (body, false),
            None => (Vec::new(), true),
        },
    };
    go_on(host, id).await;
    let request = Request {
        method: event.request.method.clone(),
        url: event.request.url.clone(),
        headers: request_headers(&event.request),
        body: request_body(&event.request, recording.body_limit()),
    };
    let exchange = Exchange {
        request,
        response: Response {
            status,
            reason: event.response_status_text.clone().unwrap_or_default(),
            headers,
            body,
            body_left_out,
        },
        date: SystemTime::now(),
    };
    let network_id = event.network_id.as_ref().map(|id| id.inner().clone());
    recording.keep(exchange, network_id);
}

/// A paused response's body, or None when it cannot be had within `BODY_TIMEOUT` or is longer
/// than `limit`.
async fn read_body(host: &Host, id: &RequestId, limit: u64) -> Option<Vec<u8>> {
    let reading = host.cdp.execute(GetResponseBodyParams::new(id.clone()));
    let reply = match tokio::time::timeout(BODY_TIMEOUT, reading).await {
        Ok(Ok(reply)) => reply.result,
        Ok(Err(err)) => {
            tracing::debug!("a response's body could not be read: {err}");
            return None;
        }
        Err(_) => return None,
    };
    let body = if reply.base64_encoded {
        base64::engine::general_purpose::STANDARD
            .decode(reply.body.as_bytes())
            .ok()?
    } else {
        reply.body.into_bytes()
    };
    (body.len() as u64 <= limit).then_some(body)
}

async fn go_on(host: &Host, id: RequestId) {
    if let Err(err) = host.cdp.execute(ContinueRequestParams::new(id)).await {
        tracing::debug!("a paused response could not go on: {err}");
    }
}

/// The `Set-Cookie` lines of a response's headers as DevTools reports them apart (one value, the
/// lines joined by line breaks).
fn set_cookies(headers: &chromiumoxide::cdp::browser_protocol::network::Headers) -> Vec<String> {
    headers
        .inner()
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|(_, value)| value.as_str())
        .flat_map(|value| value.split('\n').map(str::to_string))
        .filter(|line| !line.trim().is_empty())
        .collect()
}

/// A request's headers as DevTools reports them (an object of name to value).
fn request_headers(request: &CdpRequest) -> Vec<Header> {
    request
        .headers
        .inner()
        .as_object()
        .map(|headers| {
            headers
                .iter()
                .map(|(name, value)| {
                    let value = value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_string);
                    (name.clone(), value)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A request's body (DevTools' base64 entries, joined); left out when longer than `limit`.
fn request_body(request: &CdpRequest, limit: u64) -> Vec<u8> {
    let mut body = Vec::new();
    for entry in request.post_data_entries.iter().flatten() {
        let Some(encoded) = entry.bytes.as_ref() else {
            continue;
        };
        let encoded: &str = encoded.as_ref();
        if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(encoded) {
            body.extend_from_slice(&bytes);
        }
        if body.len() as u64 > limit {
            return Vec::new();
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A page asking for a big recorded resource a thousand times: at most `FULFILS_AT_ONCE`
    /// answers (bodies) are held while the browser takes them, the others wait, all are sent.
    #[tokio::test]
    async fn a_replay_holds_a_few_answers_at_once() {
        const ASKED: usize = 1000;
        let fulfils = Fulfils::new();
        let held = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let sent = Arc::new(AtomicUsize::new(0));
        // The browser takes nothing until this opens.
        let browser = Arc::new(tokio::sync::Semaphore::new(0));
        let asking = {
            let (held, most, sent, browser) =
                (held.clone(), most.clone(), sent.clone(), browser.clone());
            tokio::spawn(async move {
                for _ in 0..ASKED {
                    let (counted, most) = (held.clone(), most.clone());
                    let (held, sent, browser) = (held.clone(), sent.clone(), browser.clone());
                    fulfils
                        .answer(
                            move || {
                                let now = counted.fetch_add(1, Ordering::SeqCst) + 1;
                                most.fetch_max(now, Ordering::SeqCst);
                                vec![0u8; 1 << 10]
                            },
                            |body| async move { body },
                            move |body| async move {
                                let _taken = browser.acquire().await;
                                drop(body);
                                held.fetch_sub(1, Ordering::SeqCst);
                                sent.fetch_add(1, Ordering::SeqCst);
                            },
                        )
                        .await;
                }
            })
        };
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(held.load(Ordering::SeqCst), FULFILS_AT_ONCE);
        assert!(!asking.is_finished());
        browser.add_permits(ASKED);
        asking.await.unwrap();
        while sent.load(Ordering::SeqCst) < ASKED {
            tokio::task::yield_now().await;
        }
        assert_eq!(most.load(Ordering::SeqCst), FULFILS_AT_ONCE);
        assert_eq!(held.load(Ordering::SeqCst), 0);
    }
}
