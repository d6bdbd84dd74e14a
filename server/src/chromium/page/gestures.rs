//! The pointer's and the keyboard's gestures beyond the seed's click: clicks with a button, a
//! count and modifiers held, hover, drags (pointer-event drags, and HTML5 drag-and-drop through
//! DevTools' drag interception: the headless shell starts no drag of its own), buttons held across
//! steps, key chords; and the isolated world they share with the dropdown and the clipboard
//! (`gestures.js`, prepared in every tab by [`prepare`]).

use chromiumoxide::cdp::browser_protocol::input::{
    DispatchDragEventParams, DispatchDragEventType, DragData, EventDragIntercepted,
    SetInterceptDragsParams,
};
use chromiumoxide::cdp::browser_protocol::page::CreateIsolatedWorldParams;
use chromiumoxide::cdp::js_protocol::runtime::{
    AddBindingParams, EventBindingCalled, ExecutionContextId,
};
use chromiumoxide::listeners::EventStream;
use futures_util::FutureExt;

use super::input::{button_bit, MouseEvent};
use crate::chromium::*;
use browserenv::models::{KeyInfo, Modifier};

/// A drag-and-drop the page started: what it carries, and whether it has entered the page yet.
#[derive(Debug, Clone)]
pub(in crate::chromium) struct Dragging {
    data: DragData,
    entered: bool,
}

/// The isolated world's name: its script, its binding and its contexts go by it.
pub(in crate::chromium) const WORLD: &str = "browserenv-gestures";
const GESTURES_JS: &str = include_str!("gestures.js");
/// What the world calls when a copy or cut puts text on the episode's clipboard.
const BINDING: &str = "__browserenvCopied";
/// What a call answers in a document whose world lacks the script (a tab we attached late).
const MISSING: &str = "browserenv: no gestures";
/// How far a pressed pointer moves before the page may start a drag (Blink's threshold).
const DRAG_THRESHOLD: f64 = 4.0;
/// How long after the page's `dragstart` the browser's report of the drag is waited for
/// (`late_drag`): seen more than 40 ms after it with the release build.
const DRAG_REPORT_WAIT: Duration = Duration::from_millis(500);

/// A tab's part of the gestures: its drag interceptions, its isolated world (per document), the
/// task that takes what its copies put on the clipboard.
pub(in crate::chromium) struct PageGestures {
    drags: Mutex<EventStream<EventDragIntercepted>>,
    world: Mutex<Option<(u64, ExecutionContextId)>>,
    _copies: Tasks,
}

/// Make a tab ready for the gestures: drags intercepted, the isolated world's script in every
/// document from now on (and the current one), its binding, what it reports written to the
/// episode's `clipboard`.
pub(in crate::chromium) async fn prepare(
    page: &Page,
    clipboard: &super::clipboard::Clipboard,
) -> anyhow::Result<PageGestures> {
    let mut script = AddScriptToEvaluateOnNewDocumentParams::new(GESTURES_JS);
    script.world_name = Some(WORLD.into());
    script.run_immediately = Some(true);
    let mut binding = AddBindingParams::new(BINDING);
    binding.execution_context_name = Some(WORLD.into());
    let drags = page.event_listener::<EventDragIntercepted>().await?;
    let mut copies = page.event_listener::<EventBindingCalled>().await?;
    // The binding first: a document's script may report before the others are answered.
    page.execute(binding).await?;
    let (intercept, installed) = tokio::join!(
        page.execute(SetInterceptDragsParams::new(true)),
        page.execute(script),
    );
    intercept?;
    installed?;
    let sink = clipboard.clone();
    let task = tokio::spawn(async move {
        while let Some(call) = copies.next().await {
            if call.name == BINDING {
                sink.copied(&call.payload);
            }
        }
    });
    Ok(PageGestures {
        drags: Mutex::new(drags),
        world: Mutex::new(None),
        _copies: Tasks(vec![task]),
    })
}

impl ChromiumBrowser {
    /// The current document's isolated world, made once per document.
    async fn world(&self) -> Result<ExecutionContextId, PageError> {
        let document = self.current.load.borrow().commits;
        let known = self.current.gestures.world.lock().ok().and_then(|w| *w);
        if let Some((seen, id)) = known {
            if seen == document {
                return Ok(id);
            }
        }
        let page = self.page()?;
        let mut world = CreateIsolatedWorldParams::new(page.target_id().as_ref().to_string());
        world.world_name = Some(WORLD.into());
        let id = self.exec(world).await?.execution_context_id;
        if let Ok(mut cached) = self.current.gestures.world.lock() {
            *cached = Some((document, id));
        }
        Ok(id)
    }

    /// `__gestures.<call>` in the isolated world of the current document (its script sent along
    /// when the world lacks it); `gesture`: as if a person's input ran it (a copy may write the
    /// clipboard).
    pub(in crate::chromium) async fn gestures(
        &self,
        call: &str,
        gesture: bool,
    ) -> Result<Value, PageError> {
        let bare = format!("globalThis.__gestures ? globalThis.__gestures.{call} : {MISSING:?}");
        let mut answer = self.in_world(&bare, gesture).await;
        if matches!(&answer, Err(PageError::ActionFailed(why)) if why.contains("context")) {
            // The document went since the world was made: a new one.
            if let Ok(mut cached) = self.current.gestures.world.lock() {
                *cached = None;
            }
            answer = self.in_world(&bare, gesture).await;
        }
        let value = answer?;
        if value.as_str() != Some(MISSING) {
            return Ok(value);
        }
        self.in_world(
            &format!("{GESTURES_JS}; globalThis.__gestures.{call}"),
            gesture,
        )
        .await
    }

    async fn in_world(&self, expression: &str, gesture: bool) -> Result<Value, PageError> {
        self.evaluate_in_world(expression, gesture, false).await
    }

    /// Once the page has presented the frames it owes: two animation frames in the isolated
    /// world (the page's own `requestAnimationFrame` may be anything), the first drawing what
    /// changed, the second after that frame went to the compositor.
    pub(in crate::chromium) async fn presented(&self) -> Result<(), PageError> {
        let twice =
            "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))";
        self.evaluate_in_world(twice, false, true).await.map(drop)
    }

    async fn evaluate_in_world(
        &self,
        expression: &str,
        gesture: bool,
        awaited: bool,
    ) -> Result<Value, PageError> {
        let mut params = EvaluateParams::new(expression);
        params.context_id = Some(self.world().await?);
        params.return_by_value = Some(true);
        params.user_gesture = Some(gesture);
        params.await_promise = Some(awaited);
        let reply = self.exec(params).await?;
        if let Some(exception) = &reply.exception_details {
            return Err(PageError::ActionFailed(format!(
                "script error: {}",
                clip(&exception.text)
            )));
        }
        Ok(reply.result.value.clone().unwrap_or(Value::Null))
    }

    /// A click: `count` presses and releases in a row (a double click is two, each with its
    /// count), with `modifiers` held down around them as a person holds them.
    pub(in crate::chromium) async fn click_at(
        &mut self,
        at: Point,
        button: MouseButton,
        count: u8,
        modifiers: Modifiers,
    ) -> Result<(), PageError> {
        self.end_stale_drags(at).await;
        let mask = modifiers.devtools_mask();
        self.send_keys(modifier_events(modifiers, true)).await?;
        let held = self.held_buttons;
        let mut events = Vec::new();
        for clicks in 1..=i64::from(count.max(1)) {
            let bit = button_bit(button);
            events.push(MouseEvent::button(true, button, clicks, held | bit, mask));
            events.push(MouseEvent::button(false, button, clicks, held & !bit, mask));
        }
        let clicked = self.mouse_events(&events, at).await;
        self.send_keys(modifier_events(modifiers, false)).await?;
        clicked
    }

    /// The pointer moved to `at`, with whatever buttons are held; during a drag-and-drop the
    /// page gets it as the drag passing over.
    pub(in crate::chromium) async fn move_pointer(&mut self, at: Point) -> Result<(), PageError> {
        self.end_stale_drags(at).await;
        if self.late_drag(at).await {
            return self.drag_over(at, 0).await;
        }
        self.mouse(&MouseEvent::moved(self.held_buttons, 0), at)
            .await?;
        self.pointer = None;
        if self.held_buttons != 0 {
            self.drag_started(at).await;
        }
        Ok(())
    }

    /// A button pressed or released at `at`, held between the two (moves meanwhile drag).
    pub(in crate::chromium) async fn button_at(
        &mut self,
        at: Point,
        button: MouseButton,
        down: bool,
    ) -> Result<(), PageError> {
        let bit = button_bit(button);
        // Only the left button drags (Blink's rule): another's release leaves the drag going.
        if !down && button == MouseButton::Left && self.late_drag(at).await {
            self.held_buttons &= !bit;
            return self.drop_at(at, 0).await;
        }
        if down {
            self.end_stale_drags(at).await;
            self.drag_decided = false;
        }
        let held = if down {
            self.held_buttons | bit
        } else {
            self.held_buttons & !bit
        };
        let event = MouseEvent::button(down, button, 1, held, 0);
        self.mouse_events(&[event], at).await?;
        self.held_buttons = held;
        Ok(())
    }

    /// A drag along `path`: pressed at its first point, moved through each (one frame of the
    /// page's each, as a person's pointer moves), released at its last. When the page starts a
    /// drag-and-drop (`draggable`, a link, a selection), the rest of the path is the drag passing
    /// over the page and the last point its drop, as the browser would send them.
    pub(in crate::chromium) async fn drag_along(
        &mut self,
        path: &[Point],
        button: MouseButton,
        modifiers: Modifiers,
    ) -> Result<(), PageError> {
        let (Some(first), Some(last)) = (path.first().copied(), path.last().copied()) else {
            return Ok(());
        };
        let mask = modifiers.devtools_mask();
        self.send_keys(modifier_events(modifiers, true)).await?;
        let bit = button_bit(button);
        self.end_stale_drags(first).await;
        self.drag_decided = false;
        let pressed = MouseEvent::button(true, button, 1, self.held_buttons | bit, mask);
        self.mouse_events(&[pressed], first).await?;
        self.held_buttons |= bit;
        self.pointer = None;
        let mut rest = path[1..].iter().copied();
        for point in rest.by_ref() {
            self.mouse(&MouseEvent::moved(self.held_buttons, mask), point)
                .await?;
            // Blink's threshold is the page's pixels (a zoomed page's are larger).
            let ((x, y), (x0, y0)) = (
                self.to_page(point.x, point.y),
                self.to_page(first.x, first.y),
            );
            let far = (x - x0).abs() >= DRAG_THRESHOLD || (y - y0).abs() >= DRAG_THRESHOLD;
            if far && self.drag_started(point).await {
                break;
            }
        }
        let released = match self.late_drag(last).await {
            true => {
                for point in rest {
                    self.drag_over(point, mask).await?;
                }
                self.held_buttons &= !bit;
                self.drop_at(last, mask).await
            }
            false => {
                self.held_buttons &= !bit;
                let up = MouseEvent::button(false, button, 1, self.held_buttons, mask);
                self.mouse(&up, last).await
            }
        };
        self.send_keys(modifier_events(modifiers, false)).await?;
        released
    }

    /// With no button held, any drag reported (one an earlier gesture started, reported after
    /// its release) or still held is stale: each is ended in the renderer with a cancel, since
    /// until a drop or a cancel ends it, a page in a drag hears no other input.
    async fn end_stale_drags(&mut self, at: Point) {
        if self.held_buttons != 0 {
            return;
        }
        let held = self.dragging.take().map(|d| d.data);
        for data in held.into_iter().chain(self.take_reports()) {
            let _ = self
                .drag_event(DispatchDragEventType::DragCancel, at, &data, 0)
                .await;
        }
    }

    /// The drags DevTools has reported and no gesture has taken yet, oldest first.
    fn take_reports(&self) -> Vec<DragData> {
        let mut reports = Vec::new();
        if let Ok(mut drags) = self.current.gestures.drags.lock() {
            while let Some(Some(event)) = drags.next().now_or_never() {
                reports.push(event.data.clone());
            }
        }
        reports
    }

    /// Whether the page started a drag-and-drop that DevTools has reported by now (usually
    /// before it answers the move that started it; `late_drag` for when not). The drag is held
    /// until it is dropped. A drag out of a secret field (its selection) is cancelled, as the
    /// browser refuses one out of a password field: else the agent drops a secret into a plain
    /// field, changes it and reads it back.
    async fn drag_started(&mut self, at: Point) -> bool {
        if let Some(data) = self.take_reports().pop() {
            self.drag_decided = true;
            if self.focus_is_secret().await {
                let _ = self
                    .drag_event(DispatchDragEventType::DragCancel, at, &data, 0)
                    .await;
                return false;
            }
            self.dragging = Some(Dragging {
                data,
                entered: false,
            });
        }
        self.dragging.is_some()
    }

    /// Whether a drag is under way, taking one the page started on an earlier move of the held
    /// left button. DevTools usually reports it before it answers that move, not always: on an
    /// idle machine one move in three was answered first, and with the release build the report
    /// came more than a step (40 ms) after the page heard `dragstart`; a release sent before the
    /// report is never heard by a page in a drag. So while the press's drag is undecided, the
    /// probe says whether (and how long ago) the page heard the browser's `dragstart`, and the
    /// report is waited for until `DRAG_REPORT_WAIT` after it: once per press, since a drag Blink
    /// abandons after its `dragstart` (one out of a password field, a source the page removes)
    /// is never reported.
    async fn late_drag(&mut self, at: Point) -> bool {
        if self.dragging.is_some() || self.held_buttons & button_bit(MouseButton::Left) == 0 {
            return self.dragging.is_some();
        }
        // A report taken (dropped on or cancelled) decides the press's drag.
        self.drag_started(at).await;
        if self.drag_decided {
            return self.dragging.is_some();
        }
        let ago = match probe(&self.current.page, "dragStartedAgo()", false).await {
            Ok(Value::Number(ms)) => ms.as_f64().filter(|ms| ms.is_finite()).unwrap_or(0.0),
            _ => return self.drag_started(at).await,
        };
        let left =
            DRAG_REPORT_WAIT.saturating_sub(Duration::from_secs_f64(ago.clamp(0.0, 1e6) / 1e3));
        let waiting = Instant::now();
        while waiting.elapsed() < left {
            self.drag_started(at).await;
            if self.drag_decided {
                return self.dragging.is_some();
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        self.drag_started(at).await;
        if !self.drag_decided {
            tracing::debug!("the page heard a dragstart the browser never reported");
            self.drag_decided = true;
        }
        self.dragging.is_some()
    }

    /// The drag passing over `at` (entering the page first, the first time).
    async fn drag_over(&mut self, at: Point, mask: i64) -> Result<(), PageError> {
        let Some(dragging) = self.dragging.as_mut() else {
            return Ok(());
        };
        let data = dragging.data.clone();
        if !std::mem::replace(&mut dragging.entered, true) {
            self.drag_event(DispatchDragEventType::DragEnter, at, &data, mask)
                .await?;
        }
        self.drag_event(DispatchDragEventType::DragOver, at, &data, mask)
            .await
    }

    async fn drag_event(
        &self,
        kind: DispatchDragEventType,
        at: Point,
        data: &DragData,
        modifiers: i64,
    ) -> Result<(), PageError> {
        let (x, y) = self.to_page(at.x, at.y);
        let mut event = DispatchDragEventParams::new(kind, x, y, data.clone());
        event.modifiers = (modifiers != 0).then_some(modifiers);
        self.input(event).await
    }

    /// The drop at `at`, then the button's release there (what the page hears after a drop).
    async fn drop_at(&mut self, at: Point, mask: i64) -> Result<(), PageError> {
        self.drag_over(at, mask).await?;
        let Some(Dragging { mut data, .. }) = self.dragging.take() else {
            return Ok(());
        };
        // Dropped into a plain field, the episode's secrets go hidden, as a paste (`clipboard.rs`).
        if !self.secret_at(Some((at.x, at.y))).await {
            for item in &mut data.items {
                item.data = self.clipboard.hidden(&item.data);
            }
        }
        self.drag_event(DispatchDragEventType::Drop, at, &data, mask)
            .await?;
        let up = MouseEvent::button(false, MouseButton::Left, 1, self.held_buttons, mask);
        self.mouse(&up, at).await?;
        self.pointer = None;
        Ok(())
    }

    /// A chord pressed `repeat` times: its modifiers down (in order), the key down and up each
    /// time, the modifiers up; all in flight at once, in order.
    pub(in crate::chromium) async fn press_chord(
        &self,
        chord: Chord,
        repeat: u8,
    ) -> Result<(), PageError> {
        let mask = chord.modifiers.devtools_mask();
        let mut events = modifier_events(chord.modifiers, true);
        for _ in 0..repeat.max(1) {
            events.extend(key_events(chord.key.info(), mask, chord_text(chord)));
        }
        events.extend(modifier_events(chord.modifiers, false));
        self.send_keys(events).await
    }
}

/// What a chord types: its character (`\r` for ENTER), unless CTRL, ALT or META is held.
fn chord_text(chord: Chord) -> Option<&'static str> {
    let commands = chord.modifiers.devtools_mask() & !8 != 0;
    match chord.key.info().key {
        "Enter" if !commands => Some("\r"),
        _ => chord.typed(),
    }
}

/// A key's down and up with `mask` held; a key that types sends its text with the down.
fn key_events(info: &KeyInfo, mask: i64, text: Option<&str>) -> [DispatchKeyEventParams; 2] {
    let shifted = mask & 8 != 0;
    let key = if shifted { info.shifted } else { info.key };
    let event = |kind| {
        let mut event = DispatchKeyEventParams::new(kind);
        event.key = Some(key.into());
        event.code = Some(info.code.into());
        event.windows_virtual_key_code = Some(info.key_code);
        event.native_virtual_key_code = Some(info.key_code);
        event.modifiers = Some(mask);
        if info.location != 0 {
            event.location = Some(info.location);
        }
        event
    };
    let mut down = event(match text {
        Some(_) => DispatchKeyEventType::KeyDown,
        None => DispatchKeyEventType::RawKeyDown,
    });
    down.text = text.map(Into::into);
    down.unmodified_text = text.map(Into::into);
    [down, event(DispatchKeyEventType::KeyUp)]
}

/// The modifiers' keys pressed (`down`, in order, each with those held so far) or released (in
/// reverse).
pub(in crate::chromium) fn modifier_events(
    modifiers: Modifiers,
    down: bool,
) -> Vec<DispatchKeyEventParams> {
    let order: Vec<Modifier> = modifiers.iter().collect();
    let key = |m: Modifier| browserenv::models::KeyName::of_modifier(m).info();
    if down {
        // Each down with the modifiers held so far, itself included.
        (0..order.len())
            .map(|i| {
                let held = Modifiers::of(&order[..=i]);
                let [press, _] = key_events(key(order[i]), held.devtools_mask(), None);
                press
            })
            .collect()
    } else {
        // Each up with the modifiers still held after it.
        (0..order.len())
            .rev()
            .map(|i| {
                let held = Modifiers::of(&order[..i]);
                let [_, release] = key_events(key(order[i]), held.devtools_mask(), None);
                release
            })
            .collect()
    }
}
