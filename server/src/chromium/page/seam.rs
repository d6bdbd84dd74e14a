//! The `Browser` seam implemented on Chromium: each operation of the environment, built from
//! the rooms next to this one.

use crate::browser::{first_chars, ElementFacts, HeldSecret, COOKIES_KEPT, STATE_TEXT_CHARS};
use crate::capped::INCIDENT_TEXT_CHARS;
use crate::chromium::*;
use browserenv_collect::tasks::{Lookup, PageState, Wants};
use chromiumoxide::cdp::browser_protocol::network::GetCookiesParams;
use chromiumoxide::cdp::browser_protocol::page::CreateIsolatedWorldParams;
use serde_json::json;

impl ChromiumBrowser {
    /// One step through the tab's history (`-1` back, `1` forward); false when there is no
    /// entry there.
    async fn through_history(&mut self, step: i64) -> Result<bool, PageError> {
        let (index, entries) = self.history().await?;
        let next = usize::try_from(index + step)
            .ok()
            .and_then(|i| entries.get(i));
        let Some((entry_id, _)) = next else {
            return Ok(false);
        };
        // The browser's own navigation: no request of the page's announces it, so it is waited
        // for here until it shows (it started loading, or a back/forward-cache restore
        // committed), for as long as a request may take to start.
        let before = self.current.load.borrow().navigation_events;
        self.exec(NavigateToHistoryEntryParams::new(*entry_id))
            .await?;
        let until = Instant::now() + super::navigation::REQUEST_START_LIMIT;
        self.wait_load(until, |s| s.navigation_events != before)
            .await;
        Ok(true)
    }
}

impl Browser for ChromiumBrowser {
    async fn goto(&mut self, url: &str, timeout: Duration) -> Result<(), PageError> {
        let deadline = Instant::now() + timeout;
        let finished_before = self.current.load.borrow().loads_finished;
        let reply = self.exec(NavigateParams::new(url)).await?;
        if let Some(error) = &reply.error_text {
            return Err(PageError::NavigationFailed(error.clone()));
        }
        if reply.loader_id.is_none() {
            return Ok(()); // same-document navigation: nothing to load
        }
        if self
            .wait_load(deadline, |s| {
                !s.loading && s.loads_finished > finished_before
            })
            .await
        {
            // The navigation asked for is over. A load handler's redirect is a request of the
            // page's own, which the settle waits for (`LoadState::navigating`).
            Ok(())
        } else if self.current.load.borrow().crashed {
            Err(PageError::RendererCrashed)
        } else {
            Err(PageError::PageLoadTimeout)
        }
    }

    async fn click(
        &mut self,
        at: Point,
        button: MouseButton,
        count: u8,
        modifiers: Modifiers,
    ) -> Result<(), PageError> {
        self.click_or_choose(at, button, count, modifiers).await?;
        // A click may open a dropdown (or close the one open): drawn before the settle.
        self.refresh_dropdown(Value::Null).await;
        Ok(())
    }

    async fn type_text(&mut self, text: &str) -> Result<(), PageError> {
        // Each character is a real key down and up, as before; they are sent without waiting for
        // each answer (Chromium handles them in order), so 2,000 characters take well under a
        // second instead of a round trip per event (10 s, past the action timeout).
        let enter = Chord::parse("ENTER").map_err(|e| PageError::ActionFailed(e.0))?;
        let mut events = Vec::new();
        for ch in text.chars() {
            if ch == '\n' {
                self.send_keys(std::mem::take(&mut events)).await?;
                self.press_chord(enter, 1).await?;
                continue;
            }
            let typed = ch.to_string();
            let mut down = DispatchKeyEventParams::new(DispatchKeyEventType::KeyDown);
            down.key = Some(typed.clone());
            down.text = Some(typed.clone());
            down.unmodified_text = Some(typed.clone());
            let mut up = DispatchKeyEventParams::new(DispatchKeyEventType::KeyUp);
            up.key = Some(typed);
            events.push(down);
            events.push(up);
        }
        self.send_keys(events).await?;
        if self.dropdown_open() {
            self.refresh_dropdown(Value::Null).await;
        }
        Ok(())
    }

    async fn press(&mut self, chord: Chord, repeat: u8) -> Result<(), PageError> {
        let was_open = self.dropdown_open();
        self.press_keeping_clipboard(chord, repeat).await?;
        let key = chord.key.name();
        // Keys in an open popup move its highlight; a key may open one (ALT+DOWN, SPACE).
        let nav = match (was_open && chord.modifiers.is_empty(), key) {
            (true, "UP" | "DOWN" | "HOME" | "END" | "PAGE_UP" | "PAGE_DOWN") => {
                json!({"key": key, "repeat": repeat})
            }
            (true, single) if single.len() == 1 => json!({"key": single, "repeat": repeat}),
            _ => Value::Null,
        };
        self.refresh_dropdown(nav).await;
        Ok(())
    }

    async fn scroll(&mut self, at: Point, dx: i64, dy: i64) -> Result<(), PageError> {
        let wheel = super::input::MouseEvent::wheel(dx, dy, self.held_buttons);
        self.mouse_events(&[wheel], at).await?;
        if self.dropdown_open() {
            self.refresh_dropdown(Value::Null).await;
        }
        Ok(())
    }

    async fn move_to(&mut self, at: Point) -> Result<(), PageError> {
        if let Some(hovered) = self.hover_dropdown(at).await {
            return hovered;
        }
        self.move_pointer(at).await?;
        if self.dropdown_open() {
            self.refresh_dropdown(Value::Null).await;
        }
        Ok(())
    }

    async fn drag(
        &mut self,
        path: &[Point],
        button: MouseButton,
        modifiers: Modifiers,
    ) -> Result<(), PageError> {
        self.drag_along(path, button, modifiers).await?;
        self.refresh_dropdown(Value::Null).await;
        Ok(())
    }

    async fn mouse_button(
        &mut self,
        at: Point,
        button: MouseButton,
        down: bool,
    ) -> Result<(), PageError> {
        self.button_at(at, button, down).await?;
        self.refresh_dropdown(Value::Null).await;
        Ok(())
    }

    async fn select_option(&mut self, at: Point, label: &str) -> Result<(), PageError> {
        self.select_label(at, label).await?;
        self.refresh_dropdown(Value::Null).await;
        Ok(())
    }

    async fn back(&mut self) -> Result<bool, PageError> {
        self.through_history(-1).await
    }

    async fn forward(&mut self) -> Result<bool, PageError> {
        self.through_history(1).await
    }

    async fn settle(&mut self, bound: Duration) -> Result<SettleOutcome, PageError> {
        self.settle_page(bound).await
    }

    async fn follow_tabs(&mut self) -> Result<(), PageError> {
        // The newest tab becomes the page; the older new ones stay open, unwatched. It leaves the
        // list only once followed: a step's bound may drop this call half-way (a popup flood
        // on a loaded machine), and the next call must still know the tab.
        let newest = self
            .new_tabs
            .lock()
            .ok()
            .and_then(|tabs| tabs.last().cloned());
        if let Some(target) = newest {
            let followed = if *self.current.page.target_id() == target {
                Ok(())
            } else {
                self.open_new_tab(target.clone()).await
            };
            if let Ok(mut tabs) = self.new_tabs.lock() {
                if let Some(at) = tabs.iter().position(|tab| *tab == target) {
                    tabs.drain(..=at);
                }
            }
            followed?;
        }
        // The current tab closed itself (window.close()): back to the tab before it, as in a
        // person's browser.
        while self.is_closed(self.current.page.target_id()) {
            let Some(previous) = self.previous_pages.pop() else {
                break;
            };
            if self.is_closed(previous.target_id()) {
                continue;
            }
            self.switch_to(previous).await?;
        }
        self.keep_in_front().await
    }

    async fn facts(&mut self) -> Result<PageFacts, PageError> {
        if let Some(facts) = self.handed.as_mut().and_then(|handed| handed.facts.take()) {
            // Read as the page was prepared; it has not changed since.
            self.renderer_answered = true;
            return Ok(facts);
        }
        // The URL comes from the browser process, so it is known even when the renderer is hung.
        // Unset until the read answers: the caller's bound may drop this call at any await.
        self.renderer_answered = false;
        // What the settle read as it ended, when the page is still that document; else read
        // now, both at once: one round trip of the step instead of two.
        let (url, read) = match self.settled_facts() {
            Some(facts) => (self.current_url().await, Ok(Ok(facts))),
            None => {
                let call = format!("facts({MAX_TEXT_CHARS})");
                let (url, read) = tokio::join!(
                    self.current_url(),
                    tokio::time::timeout(FACTS_TIMEOUT, probe(&self.current.page, &call, false))
                );
                if let Ok(Ok(facts)) = &read {
                    self.note_blocked(facts);
                }
                (url, read)
            }
        };
        let url = url?;
        self.renderer_answered = matches!(read, Ok(Ok(_)));
        let mut facts = PageFacts {
            url,
            ..PageFacts::default()
        };
        if let Ok(Ok(value)) = read {
            // Cut again: the probe cuts, but a page can answer in its place (`first_chars`).
            let text = |key: &str, max: usize| {
                crate::browser::first_chars(value[key].as_str().unwrap_or_default(), max)
            };
            facts.title = text("title", crate::browser::MAX_TITLE_CHARS);
            facts.text = text("text", MAX_TEXT_CHARS);
            facts.password_boxes = value["passwords"]
                .as_array()
                .map(|boxes| {
                    boxes
                        .iter()
                        .filter_map(|b| serde_json::from_value::<[i64; 4]>(b.clone()).ok())
                        .map(|b| self.box_to_picture(b))
                        .take(crate::browser::MAX_SECRET_BOXES)
                        .collect()
                })
                .unwrap_or_default();
            if value["secretDropdown"] == true {
                facts.password_boxes.extend(self.dropdown_box());
            }
            facts.held = held_secret(&value["held"]);
            let inputs = value["inputs"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            for input in inputs.iter().take(crate::browser::MAX_SECRET_INPUTS) {
                match held_secret(input) {
                    Some(held) => facts.inputs.push(held),
                    None => facts.opaque_input |= input["opaque"] == true,
                }
            }
        }
        Ok(facts)
    }

    async fn element(
        &mut self,
        at: Option<(i64, i64)>,
        mark: bool,
    ) -> Result<Option<ElementFacts>, PageError> {
        let (x, y) = match at {
            Some((x, y)) => {
                let (x, y) = self.to_page(x, y);
                (x.to_string(), y.to_string())
            }
            None => ("null".into(), "null".into()),
        };
        let value = probe(self.page()?, &format!("element({x}, {y}, {mark})"), false).await?;
        if value.is_null() {
            return Ok(None);
        }
        let held = held_secret(&value["held"]);
        let mut shown = bounded_element(value);
        if let Ok(bbox) = serde_json::from_value::<[i64; 4]>(shown["bbox"].clone()) {
            shown["bbox"] = serde_json::json!(self.box_to_picture(bbox));
        }
        Ok(Some(ElementFacts { shown, held }))
    }

    async fn visible_text(&mut self) -> Result<PageText, PageError> {
        let call = format!("textRuns({MAX_RUNS}, {})", TEXT_BUDGET.as_millis());
        let url = self.current_url().await?;
        let value = probe(self.page()?, &call, false).await?;
        let mut runs: Vec<TextRun> = serde_json::from_value(value["runs"].clone())
            .map_err(|err| PageError::ActionFailed(format!("unreadable text runs: {err}")))?;
        // Bounded as the probe bounds them, for a page that answers in its place.
        runs.truncate(MAX_RUNS);
        for run in &mut runs {
            run.text = crate::browser::first_chars(&run.text, MAX_RUN_CHARS);
            self.run_to_picture(run);
        }
        Ok(PageText {
            url,
            runs,
            truncated: value["truncated"].as_bool().unwrap_or(false),
        })
    }

    async fn read_state(&mut self, wants: &Wants) -> Result<PageState, PageError> {
        let mut state = PageState::default();
        if wants.reads_document() {
            let spec = serde_json::json!({
                "elements": wants.elements, "fields": wants.fields, "storage": wants.local_storage,
            });
            // In a world of its own: the page's document and storage, none of its scripts'
            // changes to the functions the probe reads them with (a page that replaced
            // `Array.prototype.map` or a getter would pass a check it did not).
            let page = self.page()?;
            let mut world = CreateIsolatedWorldParams::new(page.target_id().as_ref().to_string());
            world.world_name = Some("browserenv-check".into());
            let world = page.execute(world).await.map_err(cdp_error)?;
            let mut read = EvaluateParams::new(format!(
                "{PROBE_JS}; window.__browserenv.state({spec}, {STATE_TEXT_CHARS})"
            ));
            read.context_id = Some(world.result.execution_context_id);
            read.return_by_value = Some(true);
            let reply = page.execute(read).await.map_err(cdp_error)?;
            if let Some(exception) = &reply.result.exception_details {
                let why = clip(&exception.text);
                return Err(PageError::ActionFailed(format!("script error: {why}")));
            }
            let value = reply.result.result.value.clone().unwrap_or(Value::Null);
            for (index, selector) in wants.elements.iter().enumerate() {
                let found = lookup(&value["elements"][index]);
                state.elements.insert(selector.clone(), found);
            }
            for (index, selector) in wants.fields.iter().enumerate() {
                state
                    .fields
                    .insert(selector.clone(), lookup(&value["fields"][index]));
            }
            for (index, key) in wants.local_storage.iter().enumerate() {
                let item = value["storage"][index]
                    .as_str()
                    .map(|item| first_chars(item, STATE_TEXT_CHARS));
                state.local_storage.insert(key.clone(), item);
            }
        }
        if wants.cookies {
            // The browser's cookies for the page's own URL, HttpOnly ones too; not its frames':
            // a frame of another site setting a cookie of the same name is not the site's.
            let url = self.current_url().await?;
            let reply = self
                .page()?
                .execute(GetCookiesParams {
                    urls: Some(vec![url]),
                })
                .await
                .map_err(cdp_error)?;
            for cookie in reply.result.cookies.iter().take(COOKIES_KEPT) {
                let value = first_chars(&cookie.value, STATE_TEXT_CHARS);
                state
                    .cookies
                    .insert(first_chars(&cookie.name, STATE_TEXT_CHARS), value);
            }
        }
        if wants.requests {
            state.requests = self.requests.all();
        }
        Ok(state)
    }

    async fn capture_region(
        &mut self,
        region: crate::browser::Region,
        scale: f64,
    ) -> Result<String, PageError> {
        self.keep_in_front().await?;
        self.capture_clip(region, scale).await
    }

    async fn screenshot(&mut self) -> Result<String, PageError> {
        // A capture still pending when the page commits a new document (often in a new renderer)
        // goes down with the old one: it fails ("Not attached to an active page") or is never
        // answered. It is sent again, to the new document, for as long as the step's screenshot
        // budget (the caller's bound) lasts: a page that navigates without end is judged by it.
        // So is one that opens tabs in front of ours while it is captured (`keep_in_front`).
        if let Some(picture) = self.handed.take().and_then(|handed| handed.picture) {
            // Taken as the page was prepared; it has not changed since.
            return Ok(picture);
        }
        let mut commits = self.current.load.clone();
        loop {
            self.keep_in_front().await?;
            let (before, navigations) = {
                let state = commits.borrow();
                (state.commits, state.navigation_events)
            };
            let swapped = async {
                if commits.wait_for(|s| s.commits != before).await.is_err() {
                    // The page's watchers are gone: only the capture can end this.
                    std::future::pending::<()>().await;
                }
            };
            let mut tabs = self.tab_changes.clone();
            let tab_changed = async {
                if tabs.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let failed = tokio::select! {
                reply = self.capture() => match reply {
                    Ok(png) => return Ok(png),
                    Err(err) if is_lost_capture(&err) => {
                        tracing::debug!("capture lost with its document: {err}");
                        None
                    }
                    // Other failures too ("Unable to capture screenshot") while the document is
                    // being replaced.
                    Err(err) if self.document_changing(before, navigations) => {
                        tracing::debug!("capture failed while the document changed: {err}");
                        None
                    }
                    Err(err) => Some(err),
                },
                () = swapped => {
                    tracing::debug!("a new document while capturing");
                    None
                }
                () = tab_changed => {
                    tracing::debug!("a tab opened or closed while capturing");
                    None
                }
            };
            if let Some(err) = failed {
                // The failure's reply can come before the navigation's events, and later still
                // on a busy machine: a new document within `LATE_NAVIGATION` of it explains it.
                let mut load = self.current.load.clone();
                let changed = tokio::time::timeout(
                    LATE_NAVIGATION,
                    load.wait_for(|s| {
                        s.loading || s.commits != before || s.navigation_events != navigations
                    }),
                )
                .await;
                if !matches!(changed, Ok(Ok(_))) {
                    return Err(err);
                }
                tracing::debug!("capture failed, then the document changed: {err}");
            }
            // Let the new document come up before asking again; its renderer has not answered
            // yet, so the capture waits for it to draw (`capture.rs`).
            self.renderer_answered = false;
            tokio::time::sleep(CAPTURE_RETRY_PAUSE).await;
        }
    }

    async fn start_archive(&mut self, work: crate::archive::Work) -> Result<(), PageError> {
        self.start_interception(work).await
    }

    async fn stop_archive(&mut self) {
        self.stop_interception().await;
    }

    async fn add_document_script(&mut self, script: String) -> Result<(), PageError> {
        self.add_script(script).await
    }

    async fn evaluate(&mut self, expression: String) -> Result<Value, PageError> {
        self.evaluate_in_page(expression).await
    }

    async fn zoom(&mut self, factor: f64) -> Result<(), PageError> {
        self.set_zoom(factor).await
    }

    fn know_secrets(&mut self, secrets: &browserenv::secrets::Secrets) {
        self.clipboard.know(secrets);
    }

    fn is_alive(&self) -> bool {
        !self.disconnected.load(Ordering::SeqCst)
    }

    fn prepare_next(&mut self, start: Preparation) {
        self.prepare_successor(start);
    }

    async fn take_prepared(&mut self, url: Option<&str>) -> Handover {
        self.take_prepared_page(url).await
    }

    fn take_incidents(&mut self) -> Incidents {
        let mut incidents = self
            .incidents
            .lock()
            .map(|mut incidents| std::mem::take(&mut *incidents))
            .unwrap_or_default();
        // The memory watchdog's report is the browser's: on a shared one, only the episode whose
        // renderer crashed may take it.
        if self.current.load.borrow().crashed {
            incidents.renderer_killed = self.host.take_memory_kill();
        }
        if let Some(proxy) = &self.egress {
            incidents.network_refused = proxy.take_refusals();
        }
        incidents
    }

    async fn close(self) {
        self.dispose().await;
    }
}

/// Between a capture lost with its document and the next one.
const CAPTURE_RETRY_PAUSE: Duration = Duration::from_millis(10);
/// How long after a failed capture the navigation that caused it may still be reported.
const LATE_NAVIGATION: Duration = Duration::from_millis(250);

/// A capture that failed because its document went away mid-way, not because the page is broken.
fn is_lost_capture(err: &PageError) -> bool {
    matches!(err, PageError::ActionFailed(message)
        if message.contains("Not attached to an active page"))
}

/// What the probe's `state` found for a selector: `null` (nothing), `{invalid}` or `{text, secret}`,
/// cut again for a page that answers in the probe's place.
fn lookup(found: &Value) -> Lookup {
    if found.is_null() {
        return Lookup::Missing;
    }
    if let Some(why) = found["invalid"].as_str() {
        return Lookup::BadSelector(first_chars(why, INCIDENT_TEXT_CHARS));
    }
    Lookup::Found {
        text: first_chars(found["text"].as_str().unwrap_or_default(), STATE_TEXT_CHARS),
        secret: found["secret"].as_bool().unwrap_or(false),
    }
}

/// A JSON number that is a whole one (the probe's `Math.round`, which can give `-0`), as an i64.
fn whole_number(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        // Whole, and small enough that the conversion is exact.
        let float = value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)?;
        Some(float as i64)
    })
}

/// What a secret field holds (the probe's `held`), held to its shape and to a `type` action's
/// length.
fn held_secret(value: &Value) -> Option<HeldSecret> {
    Some(HeldSecret {
        field: value["field"].as_u64()?,
        value: crate::browser::first_chars(
            value["value"].as_str()?,
            browserenv::models::MAX_TEXT_CHARS,
        ),
    })
}

/// What the probe says of an element, held to its shape and its bounds (200 characters per text,
/// four whole numbers in the box, else no box), whatever a page that answers in its place
/// returns.
fn bounded_element(value: Value) -> Value {
    const TEXT_CHARS: usize = 200;
    let Value::Object(fields) = value else {
        return Value::Null;
    };
    let kept = fields
        .into_iter()
        .filter_map(|(key, value)| {
            let value = match (key.as_str(), value) {
                ("tag" | "role" | "name" | "text" | "type", Value::String(text)) => {
                    Value::String(crate::browser::first_chars(&text, TEXT_CHARS))
                }
                ("type", Value::Null) => Value::Null,
                ("password", Value::Bool(secret)) => Value::Bool(secret),
                ("bbox", Value::Array(numbers)) if numbers.len() == 4 => Value::Array(
                    numbers
                        .iter()
                        .map(|number| whole_number(number).map(Value::from))
                        .collect::<Option<_>>()?,
                ),
                _ => return None,
            };
            Some((key, value))
        })
        .collect();
    Value::Object(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_element_s_box_is_four_whole_numbers_or_none() {
        let element =
            |bbox: Value| bounded_element(json!({"tag": "input", "password": true, "bbox": bbox}));
        let huge = "x".repeat(1024 * 1024);
        for bbox in [
            json!([huge, 1, 2, 3]),
            json!([[1, 2, 3, 4], 1, 2, 3]),
            json!([{"x": huge}, 1, 2, 3]),
            json!([1, 2, 3, null]),
            json!([1.5, 2, 3, 4]),
            json!([1e300, 2, 3, 4]),
            json!([1, 2, 3]),
            json!([1, 2, 3, 4, 5]),
            json!("1,2,3,4"),
        ] {
            let shown = element(bbox.clone());
            assert_eq!(
                shown,
                json!({"tag": "input", "password": true}),
                "{:.80}",
                bbox.to_string()
            );
        }
        // The probe's own numbers (`Math.round` can give -0) pass, as integers.
        assert_eq!(
            element(json!([10, -0.0, 300, 30.0])),
            json!({"tag": "input", "password": true, "bbox": [10, 0, 300, 30]})
        );
    }
}
