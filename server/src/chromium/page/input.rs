//! Input: CDP commands on the current page, and trusted mouse and key events.

use crate::chromium::*;

impl ChromiumBrowser {
    /// Run a CDP command on the current page; a renderer crash fails it at once instead of at
    /// its timeout.
    pub(in crate::chromium) async fn exec<C: Command>(
        &self,
        command: C,
    ) -> Result<C::Response, PageError> {
        self.exec_or_closed(command)
            .await?
            .ok_or_else(|| PageError::ActionFailed("the tab closed".into()))
    }

    /// `exec`, but a tab that closes before answering gives `None`.
    pub(in crate::chromium) async fn exec_or_closed<C: Command>(
        &self,
        command: C,
    ) -> Result<Option<C::Response>, PageError> {
        let page = self.page()?;
        let mut load = self.current.load.clone();
        if load.borrow().closed {
            return Ok(None);
        }
        let reply = tokio::select! {
            biased;
            state = load.wait_for(|s| s.crashed || s.closed) => {
                return match state {
                    Ok(state) if !state.crashed => Ok(None),
                    _ => Err(PageError::RendererCrashed),
                };
            }
            reply = page.execute(command) => reply,
        };
        match reply {
            Ok(reply) => Ok(Some(reply.result)),
            // chromiumoxide forgets a destroyed tab before its TargetDestroyed event reaches us,
            // and commands to it fail at once: while the browser is still there, give the event
            // a moment before calling this a lost browser.
            Err(err) => {
                if !self.disconnected.load(Ordering::SeqCst) {
                    let closing =
                        tokio::time::timeout(CLOSING_GRACE, load.wait_for(|s| s.closed)).await;
                    if matches!(closing, Ok(Ok(_))) {
                        return Ok(None);
                    }
                }
                Err(cdp_error(err))
            }
        }
    }

    pub(in crate::chromium) fn acted(&mut self, may_navigate: bool) {
        self.last_action = Instant::now();
        self.expect_navigation = may_navigate;
    }

    pub(in crate::chromium) async fn mouse(
        &self,
        kind: DispatchMouseEventType,
        x: i64,
        y: i64,
        dy: Option<i64>,
    ) -> Result<(), PageError> {
        // Picture pixels, as the action gives them, to the page's (`page_setup.rs`).
        let (x, y) = self.to_page(x, y);
        let mut params = DispatchMouseEventParams::new(kind.clone(), x, y);
        match kind {
            DispatchMouseEventType::MousePressed | DispatchMouseEventType::MouseReleased => {
                params.button = Some(MouseButton::Left);
                params.click_count = Some(1);
                params.buttons = Some(i64::from(kind == DispatchMouseEventType::MousePressed));
            }
            DispatchMouseEventType::MouseWheel => {
                params.delta_x = Some(0.0);
                params.delta_y = dy.map(|dy| self.length_to_page(dy));
            }
            DispatchMouseEventType::MouseMoved => {}
        }
        self.input(params).await
    }

    /// Mouse events at one point, after moving the pointer there, in order and all in flight at
    /// once: Chromium handles them in the order sent. Waiting for each answer cost a frame of the
    /// page's per event, and so does the move (a moved pointer is answered at the next animation
    /// frame): it is left out when the pointer is already at that point of the same document,
    /// as for a scroll at the last clicked point (a scroll step: 67 ms with it, 50 without; docs/benchmark.md,
    /// "Benchmark").
    pub(in crate::chromium) async fn mouse_events(
        &mut self,
        events: &[(DispatchMouseEventType, Option<i64>)],
        x: i64,
        y: i64,
    ) -> Result<(), PageError> {
        let here = Pointer {
            tab: self.current.page.target_id().clone(),
            document: self.current.load.borrow().commits,
            x,
            y,
        };
        let moved = (self.pointer.as_ref() != Some(&here))
            .then_some((DispatchMouseEventType::MouseMoved, None));
        // Unknown until the events are answered: a bound may drop this call half-way.
        self.pointer = None;
        futures_util::future::try_join_all(
            moved
                .iter()
                .chain(events)
                .map(|(kind, dy)| self.mouse(kind.clone(), x, y, *dy)),
        )
        .await?;
        self.pointer = Some(here);
        Ok(())
    }

    pub(in crate::chromium) async fn key_event(
        &self,
        params: DispatchKeyEventParams,
    ) -> Result<(), PageError> {
        self.input(params).await
    }

    /// Key events in order, `IN_FLIGHT` of them sent and not yet answered at any time: each
    /// answer lets the next event go. An event is sent when first polled, and `buffered` polls
    /// them in the order given, so Chromium gets them in order. Batches of 64 that waited for all
    /// their answers before the next batch left the renderer idle at each wait: 2,000 characters
    /// took 3.5-4 s, now 1.8-3 s (`the_longest_type_action_types_every_character`, debug build).
    pub(in crate::chromium) async fn send_keys(
        &self,
        events: Vec<DispatchKeyEventParams>,
    ) -> Result<(), PageError> {
        use futures_util::{StreamExt, TryStreamExt};
        const IN_FLIGHT: usize = 64;
        futures_util::stream::iter(events)
            .map(|event| self.key_event(event))
            .buffered(IN_FLIGHT)
            .try_collect::<()>()
            .await
    }

    /// Send an input event. A tab that closes itself in response (`window.close()` in a click
    /// handler) can be destroyed before Chromium answers the event; that is the action taking
    /// effect, not a timeout.
    pub(in crate::chromium) async fn input<C: Command>(&self, event: C) -> Result<(), PageError> {
        self.exec_or_closed(event).await.map(|_| ())
    }

    pub(in crate::chromium) async fn press_key(&self, key: Key) -> Result<(), PageError> {
        let spec = key_spec(key);
        let mut down = DispatchKeyEventParams::new(if spec.text.is_some() {
            DispatchKeyEventType::KeyDown
        } else {
            DispatchKeyEventType::RawKeyDown
        });
        down.key = Some(spec.key.into());
        down.code = Some(spec.code.into());
        down.windows_virtual_key_code = Some(spec.key_code);
        down.native_virtual_key_code = Some(spec.key_code);
        down.modifiers = Some(spec.modifiers);
        down.text = spec.text.map(Into::into);
        down.unmodified_text = spec.text.map(Into::into);
        let mut up = DispatchKeyEventParams::new(DispatchKeyEventType::KeyUp);
        up.key = down.key.clone();
        up.code = down.code.clone();
        up.windows_virtual_key_code = down.windows_virtual_key_code;
        up.native_virtual_key_code = down.native_virtual_key_code;
        up.modifiers = down.modifiers;
        self.key_event(down).await?;
        self.key_event(up).await
    }
}

/// Where the pointer was last moved: a tab, its document (counted by commits) and a point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::chromium) struct Pointer {
    tab: TargetId,
    document: u64,
    x: i64,
    y: i64,
}

pub(in crate::chromium) struct KeySpec {
    key: &'static str,
    code: &'static str,
    key_code: i64,
    text: Option<&'static str>,
    modifiers: i64,
}

/// The nine keys of the action vocabulary as real key events. ENTER carries "\r" so it submits
/// forms; CTRL+A is Control + "a", which Chromium maps to select-all by itself.
pub(in crate::chromium) fn key_spec(key: Key) -> KeySpec {
    let spec = |key, code, key_code, text| KeySpec {
        key,
        code,
        key_code,
        text,
        modifiers: 0,
    };
    match key {
        Key::Enter => spec("Enter", "Enter", 13, Some("\r")),
        Key::Tab => spec("Tab", "Tab", 9, None),
        Key::Escape => spec("Escape", "Escape", 27, None),
        Key::Backspace => spec("Backspace", "Backspace", 8, None),
        Key::CtrlA => KeySpec {
            modifiers: 2,
            ..spec("a", "KeyA", 65, None)
        },
        Key::Up => spec("ArrowUp", "ArrowUp", 38, None),
        Key::Down => spec("ArrowDown", "ArrowDown", 40, None),
        Key::Left => spec("ArrowLeft", "ArrowLeft", 37, None),
        Key::Right => spec("ArrowRight", "ArrowRight", 39, None),
    }
}
