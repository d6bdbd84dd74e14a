//! A person's pointer gestures, each one step in an agent's vocabulary: the mouse's press,
//! motion and release become a click (with its button, its modifiers and, when clicks follow
//! each other at one place, its count) or a `drag` path; the pointer resting where the terminal
//! reports motion becomes a `move`. The keyboard-only ways work from the crosshair: a click of
//! each kind, hover, a mark and a drag from it, modifiers held for the next click or drag.

use std::time::Duration;

use browserenv::models::{BrowserAction, Modifiers, MouseButton, MAX_PATH_POINTS, MIN_PATH_POINTS};

use super::{App, Effect, LinkState, Mode, MouseKind, Msg, Spot};

/// Clicks at one place within this of each other are one double (or triple) click: a click
/// waits this long for the next before it is sent, so a double click is one step, not two.
pub const MULTI_CLICK: Duration = Duration::from_millis(350);
/// The pointer rests this long before a hover becomes a `move` step (motion reports come many
/// a second; only where the pointer stops is worth a step).
pub const HOVER_REST: Duration = Duration::from_millis(400);
/// A keyboard drag's path has a point about every this many page pixels.
const KEY_DRAG_SPACING: i64 = 20;

/// The pointer's state between terminal events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gestures {
    /// A button held since a press: the page points it passed through.
    pressed: Option<Pressed>,
    /// A click waiting out the multi-click window.
    pending: Option<PendingClick>,
    /// Where the pointer rests (waiting out `HOVER_REST`), with its number.
    resting: Option<((i64, i64), u64)>,
    /// Where the last hover `move` went (a rest at the same place sends nothing).
    hovered: Option<(i64, i64)>,
    /// Numbers the click and hover timers, so a late one for a superseded gesture does nothing.
    serial: u64,
    /// The start of a keyboard drag (`m`).
    pub mark: Option<(i64, i64)>,
    /// Modifiers held (`M`) for the next click or drag, by mouse or keyboard.
    pub held: Modifiers,
}

#[derive(Debug, Clone, PartialEq)]
struct Pressed {
    button: MouseButton,
    modifiers: Modifiers,
    path: Vec<(i64, i64)>,
}

#[derive(Debug, Clone, PartialEq)]
struct PendingClick {
    at: (i64, i64),
    button: MouseButton,
    modifiers: Modifiers,
    count: u8,
    serial: u64,
}

impl Gestures {
    fn next_serial(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }
}

/// At most `MAX_PATH_POINTS` of `path`, evenly spaced, the first and the last kept.
pub fn sample_path(path: &[(i64, i64)]) -> Vec<(i64, i64)> {
    if path.len() <= MAX_PATH_POINTS {
        return path.to_vec();
    }
    let last = path.len() - 1;
    (0..MAX_PATH_POINTS)
        .map(|i| path[i * last / (MAX_PATH_POINTS - 1)])
        .collect()
}

/// A straight path from `from` to `to`, a point about every `KEY_DRAG_SPACING` pixels.
pub fn straight_path(from: (i64, i64), to: (i64, i64)) -> Vec<(i64, i64)> {
    let length = (to.0 - from.0).abs().max((to.1 - from.1).abs());
    let segments = (length / KEY_DRAG_SPACING)
        .clamp((MIN_PATH_POINTS - 1) as i64, (MAX_PATH_POINTS - 1) as i64);
    (0..=segments)
        .map(|i| {
            (
                from.0 + (to.0 - from.0) * i / segments,
                from.1 + (to.1 - from.1) * i / segments,
            )
        })
        .collect()
}

impl App {
    /// The page pixel under a terminal cell or pixel, if it is on the picture.
    fn page_point(&self, at: Spot) -> Option<(i64, i64)> {
        let picture = self.picture?;
        match at {
            Spot::Cell { column, row } => picture.cell_to_page(column, row),
            Spot::Pixel { x, y } => picture.pixel_to_page(x, y),
        }
    }

    pub(super) fn on_mouse(
        &mut self,
        kind: MouseKind,
        at: Spot,
        modifiers: Modifiers,
    ) -> Vec<Effect> {
        if self.help || !matches!(self.mode, Mode::Normal) {
            self.gestures.pressed = None;
            return Vec::new();
        }
        let point = self.page_point(at);
        match kind {
            MouseKind::Down(button) => {
                let Some(point) = point else {
                    return Vec::new();
                };
                self.gestures.resting = None;
                // A press elsewhere or with another button ends the clicks before it.
                let effects = match &self.gestures.pending {
                    Some(p) if p.at != point || p.button != button => self.send_pending_click(),
                    _ => Vec::new(),
                };
                // The modifiers held from the keyboard (`M`) go with the mouse's too: terminals
                // keep shift-click for their own selection.
                let held = std::mem::take(&mut self.gestures.held);
                let modifiers = held.iter().fold(modifiers, Modifiers::with);
                self.gestures.pressed = Some(Pressed {
                    button,
                    modifiers,
                    path: vec![point],
                });
                self.crosshair = point;
                effects
            }
            MouseKind::Drag => {
                if let (Some(point), Some(pressed)) = (point, self.gestures.pressed.as_mut()) {
                    if pressed.path.last() != Some(&point) {
                        pressed.path.push(point);
                    }
                    self.crosshair = point;
                }
                Vec::new()
            }
            MouseKind::Up => self.on_release(point),
            MouseKind::Moved => match point {
                Some(point) if self.gestures.pressed.is_none() => self.rest_at(point),
                _ => Vec::new(),
            },
        }
    }

    /// The button released: a drag when the pointer moved while it was held, else a click
    /// (counted with the clicks before it at the same place).
    fn on_release(&mut self, point: Option<(i64, i64)>) -> Vec<Effect> {
        let Some(mut pressed) = self.gestures.pressed.take() else {
            return Vec::new();
        };
        if let Some(point) = point.filter(|p| pressed.path.last() != Some(p)) {
            pressed.path.push(point);
        }
        if pressed.path.len() >= MIN_PATH_POINTS {
            let end = *pressed.path.last().expect("two points");
            self.crosshair = end;
            let action = BrowserAction::drag_with(
                sample_path(&pressed.path),
                pressed.button,
                pressed.modifiers,
            );
            return self.step(action);
        }
        let at = pressed.path[0];
        let count = match &self.gestures.pending {
            Some(p) if p.at == at && p.button == pressed.button => p.count + 1,
            _ => 1,
        };
        let serial = self.gestures.next_serial();
        self.gestures.pending = Some(PendingClick {
            at,
            button: pressed.button,
            modifiers: pressed.modifiers,
            count,
            serial,
        });
        if usize::from(count) >= 3 {
            return self.send_pending_click();
        }
        vec![Effect::After {
            delay: MULTI_CLICK,
            msg: Box::new(Msg::ClickDue(serial)),
        }]
    }

    /// The multi-click window of click `serial` closed.
    pub(super) fn on_click_due(&mut self, serial: u64) -> Vec<Effect> {
        match &self.gestures.pending {
            Some(p) if p.serial == serial && self.gestures.pressed.is_none() => {
                self.send_pending_click()
            }
            _ => Vec::new(),
        }
    }

    /// The click waiting out its window, sent now.
    pub(super) fn send_pending_click(&mut self) -> Vec<Effect> {
        match self.gestures.pending.take() {
            Some(p) => {
                self.crosshair = p.at;
                let (x, y) = p.at;
                self.step(BrowserAction::click_with(
                    x,
                    y,
                    p.button,
                    p.count,
                    p.modifiers,
                ))
            }
            None => Vec::new(),
        }
    }

    /// The pointer moved with no button held: a hover once it rests.
    fn rest_at(&mut self, point: (i64, i64)) -> Vec<Effect> {
        let serial = self.gestures.next_serial();
        self.gestures.resting = Some((point, serial));
        vec![Effect::After {
            delay: HOVER_REST,
            msg: Box::new(Msg::HoverDue(serial)),
        }]
    }

    /// The pointer rested: a `move` there, unless it is where the last one went, a button is
    /// held, a click waits, or a step is on the wire (hovers never queue up behind steps). A
    /// pointer only passing over a page it cannot act on (watching without control, no live
    /// episode) says nothing: only a gesture made on purpose earns an error.
    pub(super) fn on_hover_due(&mut self, serial: u64) -> Vec<Effect> {
        let Some((point, _)) = self.gestures.resting.filter(|(_, s)| *s == serial) else {
            return Vec::new();
        };
        self.gestures.resting = None;
        let busy = self.gestures.pressed.is_some()
            || self.gestures.pending.is_some()
            || self.in_flight.is_some()
            || !matches!(self.mode, Mode::Normal)
            || self.help
            || (self.watch_mode && !self.in_control)
            || self.link != LinkState::Connected
            || self.observed.as_ref().is_none_or(|o| o.done);
        if busy || self.gestures.hovered == Some(point) {
            return Vec::new();
        }
        self.hover_at(point)
    }

    fn hover_at(&mut self, (x, y): (i64, i64)) -> Vec<Effect> {
        self.gestures.hovered = Some((x, y));
        self.step(BrowserAction::move_to(x, y))
    }

    /// `h`: hover at the crosshair.
    pub(super) fn hover_crosshair(&mut self) -> Vec<Effect> {
        self.hover_at(self.crosshair)
    }

    /// Enter, `d`, `D`, `x`, `X`: a click at the crosshair, with the held modifiers (`M`).
    pub(super) fn click_crosshair(&mut self, button: MouseButton, count: u8) -> Vec<Effect> {
        let (x, y) = self.crosshair;
        let modifiers = std::mem::take(&mut self.gestures.held);
        self.step(BrowserAction::click_with(x, y, button, count, modifiers))
    }

    /// `m`: the crosshair is a drag's start.
    pub(super) fn mark(&mut self) -> Vec<Effect> {
        self.gestures.mark = Some(self.crosshair);
        let (x, y) = self.crosshair;
        self.notice(format!(
            "marked {x},{y}: move the crosshair, then v drags from the mark to it"
        ));
        Vec::new()
    }

    /// `v`: drag from the mark to the crosshair, with the held modifiers.
    pub(super) fn drag_from_mark(&mut self) -> Vec<Effect> {
        let Some(mark) = self.gestures.mark else {
            self.error("no mark: m marks the crosshair as the drag's start");
            return Vec::new();
        };
        if mark == self.crosshair {
            self.error("the crosshair is on the mark: move it where the drag ends");
            return Vec::new();
        }
        self.gestures.mark = None;
        let modifiers = std::mem::take(&mut self.gestures.held);
        let path = straight_path(mark, self.crosshair);
        self.step(BrowserAction::drag_with(path, MouseButton::Left, modifiers))
    }

    /// `M`'s prompt answered: `SHIFT+CTRL` (any case), or nothing to hold none.
    pub(super) fn hold(&mut self, text: &str) -> Vec<Effect> {
        let mut held = Modifiers::NONE;
        for part in text.split('+').map(str::trim).filter(|p| !p.is_empty()) {
            let modifier = browserenv::models::Modifier::ALL
                .into_iter()
                .find(|m| m.name().eq_ignore_ascii_case(part));
            match modifier {
                Some(modifier) => held = held.with(modifier),
                None => {
                    self.error(format!("{part:?} is not SHIFT, CTRL, ALT or META"));
                    return Vec::new();
                }
            }
        }
        self.gestures.held = held;
        if held.is_empty() {
            self.notice("no modifiers held");
        } else {
            let names: Vec<&str> = held.iter().map(|m| m.name()).collect();
            self.notice(format!(
                "holding {} for the next click or drag",
                names.join("+")
            ));
        }
        Vec::new()
    }
}
