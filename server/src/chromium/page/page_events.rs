//! A tab made ready to be the page: its probe script, its event watchers (loading, navigation,
//! failed documents, dialogs) writing its load state and the session's incidents, and `evaluate`.

use crate::chromium::intercept::requests;
use crate::chromium::*;

/// Viewport, probe script, focus and event watchers for a page we are about to drive.
pub(in crate::chromium) async fn prepare_page(
    page: Page,
    incidents: Arc<Mutex<Incidents>>,
    requests: requests::RequestLog,
    load_states: &LoadStates,
    frames: &Frames,
    clipboard: &super::clipboard::Clipboard,
) -> anyhow::Result<CurrentPage> {
    let metrics = SetDeviceMetricsOverrideParams::new(VIEWPORT_WIDTH, VIEWPORT_HEIGHT, 1.0, false);
    // The full Chromium's monospace font (its "Monospace", which fontconfig resolves): the
    // headless shell's own default, "Courier New", resolves to another font with other line
    // heights. With it, both draw pages pixel for pixel alike (tests/tests/settle.rs). Chromium
    // takes this once per tab ("can only be set once"): a tab we switch back to has it already.
    let fonts = FontFamilies {
        fixed: Some("Monospace".into()),
        ..FontFamilies::default()
    };
    // chromiumoxide asks for every new worker and frame of the tab to wait for a debugger, then
    // detaches from service workers at once, and the release is often lost: the page's
    // `register()` never settles (tests/tests/isolation.rs). Ours start at once.
    let attach = SetAutoAttachParams {
        auto_attach: true,
        wait_for_debugger_on_start: false,
        flatten: Some(true),
        filter: None,
    };
    // Sent together, not one after another's answer: Chromium runs a tab's commands in the
    // order they come, and six round trips in a row were about 6 ms of every new context.
    // Documents that loaded before we attached (a new tab) get the probe at once (`evaluate`).
    let (sized, fonts, attached, probe_installed, _, front, gestures) = tokio::join!(
        page.execute(metrics),
        page.execute(SetFontFamiliesParams::new(fonts)),
        page.execute(attach),
        page.execute(AddScriptToEvaluateOnNewDocumentParams::new(PROBE_JS)),
        evaluate(&page, PROBE_JS.into(), false),
        page.execute(BringToFrontParams::default()),
        super::gestures::prepare(&page, clipboard),
    );
    let gestures = gestures?;
    if let Err(err) = fonts {
        tracing::debug!("font families: {err}");
    }
    sized?;
    attached?;
    probe_installed?;
    front?;
    let (tx, rx) = watch::channel(LoadState::default());
    let tx = Arc::new(tx);
    if let Ok(mut states) = load_states.lock() {
        states.insert(page.target_id().clone(), tx.clone());
    }
    let main_frame = page.target_id().as_ref().to_string();
    let mut tasks = Vec::new();

    // Child frames in this tab's renderer (same-site iframes), for telling our downloads apart.
    let mut attached = page.event_listener::<EventFrameAttached>().await?;
    let known = frames.clone();
    tasks.push(tokio::spawn(async move {
        while let Some(event) = attached.next().await {
            if let Ok(mut frames) = known.lock() {
                frames.insert(event.frame_id.as_ref().to_string());
            }
        }
    }));

    let (following, events) =
        super::navigation::watch_loading(&page, tx.clone(), incidents.clone()).await?;
    tasks.push(following);
    // The main frame's requests, for a task's `request` check (marked when they fail); and a
    // navigation of the main frame that fails (a certificate error, an unreachable host) after a
    // click: its document request is the main frame's, and it fails with Chromium's net error.
    let mut requested = page.event_listener::<EventRequestWillBeSent>().await?;
    let mut failed = page.event_listener::<EventLoadingFailed>().await?;
    let (sink, frame) = (incidents.clone(), main_frame.clone());
    tasks.push(tokio::spawn(async move {
        let mut documents: HashSet<String> = HashSet::new();
        loop {
            tokio::select! {
                // A request's failure must not be read before the request itself: both are in
                // their streams by then, so taking requests first keeps the browser's order.
                biased;
                Some(event) = requested.next() => {
                    let main = event.frame_id.as_ref().is_some_and(|f| f.as_ref() == frame);
                    if main {
                        requests.push(event.request_id.as_ref(), &event.request);
                    }
                    if main && event.r#type == Some(ResourceType::Document) {
                        // A document at a time: older ones have ended one way or the other.
                        documents.clear();
                        documents.insert(event.request_id.as_ref().to_string());
                    }
                }
                Some(event) = failed.next() => {
                    if !event.canceled.unwrap_or(false) {
                        requests.failed(event.request_id.as_ref());
                    }
                    let ours = documents.remove(event.request_id.as_ref());
                    if ours && !event.canceled.unwrap_or(false) {
                        if let Ok(mut incidents) = sink.lock() {
                            incidents.navigation_errors.push(event.error_text.clone());
                        }
                    }
                }
                else => break,
            }
        }
    }));
    let mut within = page
        .event_listener::<EventNavigatedWithinDocument>()
        .await?;
    let sink = incidents.clone();
    tasks.push(tokio::spawn(async move {
        while within.next().await.is_some() {
            if let Ok(mut incidents) = sink.lock() {
                incidents.navigated = true;
            }
        }
    }));
    let mut dialogs = page
        .event_listener::<EventJavascriptDialogOpening>()
        .await?;
    let (dialog_page, sink) = (page.clone(), incidents);
    tasks.push(tokio::spawn(async move {
        while let Some(event) = dialogs.next().await {
            // Accept every dialog (OK / leave page), answering prompts with their default text.
            let mut answer = HandleJavaScriptDialogParams::new(true);
            answer.prompt_text = event.default_prompt.clone();
            let flood = match sink.lock() {
                Ok(mut incidents) => {
                    let kind: &str = event.r#type.as_ref();
                    incidents
                        .dialogs
                        .push((kind.to_string(), clip(&event.message)));
                    let flood = incidents.dialogs.total() % DIALOG_FLOOD == 0;
                    if flood {
                        incidents.scripts_stopped += 1;
                    }
                    flood
                }
                Err(_) => false,
            };
            if flood {
                // A script that opens dialogs without end (each answer opens the next) would
                // hold the step until its timeout: it is stopped, as a person's browser offers.
                let page = dialog_page.clone();
                tokio::spawn(async move {
                    let stopped = page.execute(TerminateExecutionParams::default()).await;
                    tracing::debug!("stopping a dialog loop: {:?}", stopped.map(|_| ()));
                });
            }
            let page = dialog_page.clone();
            tokio::spawn(async move {
                if let Err(err) = page.execute(answer).await {
                    tracing::debug!("could not answer a dialog: {err}");
                }
            });
        }
    }));
    Ok(CurrentPage {
        page,
        load: rx,
        events,
        tasks,
        gestures,
    })
}

/// What the expression of `probe` answers when the document has no probe yet.
const PROBE_MISSING: &str = "browserenv: no probe";

/// Call the probe's `call` (`facts(…)`, `settle(…)`) in the page's current document. The probe's
/// source (27 KB) goes along only when the document lacks it, one that loaded before we attached:
/// parsed on every call, it cost a few milliseconds of each step.
pub(in crate::chromium) async fn probe(
    page: &Page,
    call: &str,
    await_promise: bool,
) -> Result<Value, PageError> {
    let bare = format!("window.__browserenv ? window.__browserenv.{call} : {PROBE_MISSING:?}");
    let value = evaluate(page, bare, await_promise).await?;
    if value.as_str() != Some(PROBE_MISSING) {
        return Ok(value);
    }
    let whole = format!("{PROBE_JS}; window.__browserenv.{call}");
    evaluate(page, whole, await_promise).await
}

/// `Runtime.evaluate` in the page's current main-world context (no cached context id, so it never
/// hits a context destroyed by a navigation that already happened).
pub(in crate::chromium) async fn evaluate(
    page: &Page,
    expression: String,
    await_promise: bool,
) -> Result<Value, PageError> {
    let mut params = EvaluateParams::new(expression);
    params.return_by_value = Some(true);
    params.await_promise = Some(await_promise);
    let reply = page.execute(params).await.map_err(cdp_error)?;
    if let Some(exception) = &reply.result.exception_details {
        return Err(PageError::ActionFailed(format!(
            "script error: {}",
            exception.text
        )));
    }
    Ok(reply.result.result.value.clone().unwrap_or(Value::Null))
}
