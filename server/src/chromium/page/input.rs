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

    pub(in crate::chromium) async fn mouse(
        &self,
        event: &MouseEvent,
        at: Point,
    ) -> Result<(), PageError> {
        // Picture pixels, as the action gives them, to the page's (`page_setup.rs`).
        let (x, y) = self.to_page(at.x, at.y);
        let mut params = DispatchMouseEventParams::new(event.kind.clone(), x, y);
        params.button = event.button.clone();
        params.buttons = Some(event.buttons);
        params.modifiers = (event.modifiers != 0).then_some(event.modifiers);
        if event.clicks > 0 {
            params.click_count = Some(event.clicks);
        }
        if let Some((dx, dy)) = event.wheel {
            params.delta_x = Some(self.length_to_page(dx));
            params.delta_y = Some(self.length_to_page(dy));
        }
        self.input(params).await
    }

    /// Mouse events at one point, after moving the pointer there, in order and all in flight at
    /// once: Chromium handles them in the order sent. Waiting for each answer cost a frame of the
    /// page's per event, and so does the move (a moved pointer is answered at the next animation
    /// frame): it is left out when the pointer is already at that point of the same document,
    /// as for a scroll at the last clicked point (a scroll step: 67 ms with it, 50 without; docs/benchmark.md,
    /// "Benchmark"). The move carries the buttons held (a drag's move).
    pub(in crate::chromium) async fn mouse_events(
        &mut self,
        events: &[MouseEvent],
        at: Point,
    ) -> Result<(), PageError> {
        let here = Pointer {
            tab: self.current.page.target_id().clone(),
            document: self.current.load.borrow().commits,
            x: at.x,
            y: at.y,
        };
        let moved =
            (self.pointer.as_ref() != Some(&here)).then(|| MouseEvent::moved(self.held_buttons, 0));
        // Unknown until the events are answered: a bound may drop this call half-way.
        self.pointer = None;
        futures_util::future::try_join_all(
            moved
                .iter()
                .chain(events)
                .map(|event| self.mouse(event, at)),
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
}

/// Where the pointer was last moved: a tab, its document (counted by commits) and a point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::chromium) struct Pointer {
    tab: TargetId,
    document: u64,
    x: i64,
    y: i64,
}

/// One mouse event's particulars besides its point.
#[derive(Debug, Clone)]
pub(in crate::chromium) struct MouseEvent {
    pub kind: DispatchMouseEventType,
    /// The button that changed (a press, a release), or the one held during a move.
    pub button: Option<CdpButton>,
    /// DevTools' mask of the buttons held during the event: left 1, right 2, middle 4.
    pub buttons: i64,
    pub clicks: i64,
    pub modifiers: i64,
    pub wheel: Option<(i64, i64)>,
}

impl MouseEvent {
    /// A move with `held` buttons (the first of them named, as a drag's moves are).
    pub fn moved(held: u8, modifiers: i64) -> MouseEvent {
        let button = [MouseButton::Left, MouseButton::Right, MouseButton::Middle]
            .into_iter()
            .find(|b| held & button_bit(*b) != 0)
            .map(cdp_button);
        MouseEvent {
            kind: DispatchMouseEventType::MouseMoved,
            button,
            buttons: i64::from(held),
            clicks: 0,
            modifiers,
            wheel: None,
        }
    }

    /// A press (`down`) or release of `button`, the `clicks`th in a row, `held` the buttons
    /// down after it.
    pub fn button(down: bool, button: MouseButton, clicks: i64, held: u8, modifiers: i64) -> Self {
        MouseEvent {
            kind: if down {
                DispatchMouseEventType::MousePressed
            } else {
                DispatchMouseEventType::MouseReleased
            },
            button: Some(cdp_button(button)),
            buttons: i64::from(held),
            clicks,
            modifiers,
            wheel: None,
        }
    }

    pub fn wheel(dx: i64, dy: i64, held: u8) -> MouseEvent {
        MouseEvent {
            kind: DispatchMouseEventType::MouseWheel,
            button: None,
            buttons: i64::from(held),
            clicks: 0,
            modifiers: 0,
            wheel: Some((dx, dy)),
        }
    }
}

/// DevTools' bit for a button in `buttons`.
pub(in crate::chromium) fn button_bit(button: MouseButton) -> u8 {
    match button {
        MouseButton::Left => 1,
        MouseButton::Right => 2,
        MouseButton::Middle => 4,
    }
}

pub(in crate::chromium) fn cdp_button(button: MouseButton) -> CdpButton {
    match button {
        MouseButton::Left => CdpButton::Left,
        MouseButton::Right => CdpButton::Right,
        MouseButton::Middle => CdpButton::Middle,
    }
}
