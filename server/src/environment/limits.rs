//! How long each part of an observation may take: the step's bound, the action's own limit, the
//! budget the phases after the action share, and the deadline every browser call runs under. A
//! test's time bound comes from here (`step_bound`), never from how fast a machine is.

use std::future::Future;
use std::time::{Duration, Instant};

use browserenv::models::{Action, BrowserAction};

use crate::browser::PageError;
use crate::settings::EnvSettings;

/// Reading the target element is one small script; a page too busy to answer is not waited for.
pub(super) const ELEMENT_TIMEOUT: Duration = Duration::from_millis(1000);
/// Time the phases between the action and the screenshot (following tabs, settling, reading the
/// page) may take beyond `BROWSER_ACTION_WAIT_SECONDS`, all together.
pub const OBSERVE_SLACK: Duration = Duration::from_secs(3);
/// How long the adaptive settle's probe may overrun its own bound (a slow page answering late).
pub(super) const SETTLE_PROBE_SLACK: Duration = Duration::from_secs(2);
/// `type` may take this much longer per character than the action timeout.
pub const TYPE_TIME_PER_CHARACTER: Duration = Duration::from_millis(10);
/// Reading the text layer: the page walk stops itself well before this.
pub(super) const TEXT_TIMEOUT: Duration = Duration::from_secs(2);
/// Reading what a task's check needs of the final page (`Browser::read_state`): a few small
/// scripts and one DevTools call.
pub(super) const STATE_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the wheel turns when nothing was clicked yet: the viewport centre.
pub(super) const VIEWPORT_CENTRE: (i64, i64) = (
    browserenv::models::VIEWPORT_WIDTH / 2,
    browserenv::models::VIEWPORT_HEIGHT / 2,
);
/// The longest `action` can take to answer (docs/server.md, "Step time"): reading the element under the
/// pointer, the action's own limit (`finish`'s: reading what a task's check needs), the shared
/// budget of settling and reading the page, and the screenshot's timeout; with
/// `BROWSER_OBSERVE_TEXT`, reading the page's text after it. Whatever a page does, a step stays
/// inside it.
pub fn step_bound(settings: &EnvSettings, action: &BrowserAction) -> Duration {
    let text = if settings.observe_text {
        TEXT_TIMEOUT
    } else {
        Duration::ZERO
    };
    ELEMENT_TIMEOUT
        + action_limit(settings, &action.action)
        + settings.action_wait
        + OBSERVE_SLACK
        + settings.screenshot_timeout
        + text
}

/// How long the action itself may take, its part of `step_bound`. Every character `type`s is a key
/// down and up that the page handles in turn (about 1 ms a character, 3 on a loaded machine,
/// measured: docs/ARCHITECTURE.md, decision 16): long text gets 10 ms a character on top of the
/// timeout. `finish` reads what a task's check needs; `goto` loads a page as a reset does.
pub(super) fn action_limit(settings: &EnvSettings, action: &Action) -> Duration {
    match action {
        Action::Wait => settings.explicit_wait,
        Action::Finish { .. } => STATE_TIMEOUT,
        Action::Type { text } => {
            settings.action_timeout + TYPE_TIME_PER_CHARACTER * text.chars().count() as u32
        }
        Action::Goto { .. } => settings.page_load_timeout + GOTO_SLACK,
        Action::Click { .. }
        | Action::Key { .. }
        | Action::Scroll { .. }
        | Action::Back
        | Action::Move { .. }
        | Action::Drag { .. }
        | Action::MouseDown { .. }
        | Action::MouseUp { .. }
        | Action::Press { .. }
        | Action::Select { .. }
        | Action::Forward => settings.action_timeout,
    }
}

/// What a `goto` may take beyond the page-load timeout (the reset's own slack for its load).
pub(super) const GOTO_SLACK: Duration = Duration::from_secs(5);

/// The time left of the budget that the phases between an action and its screenshot share.
pub(super) struct Budget {
    deadline: Instant,
}

impl Budget {
    pub(super) fn from_now(budget: Duration) -> Self {
        Budget {
            deadline: Instant::now() + budget,
        }
    }

    /// `limit`, or what is left of the budget if that is less.
    pub(super) fn within(&self, limit: Duration) -> Duration {
        limit.min(self.deadline.saturating_duration_since(Instant::now()))
    }
}

/// Run a browser call with a deadline; past it, the call is abandoned and `on_timeout` reported.
pub(super) async fn bounded<T>(
    limit: Duration,
    on_timeout: PageError,
    future: impl Future<Output = Result<T, PageError>>,
) -> Result<T, PageError> {
    match tokio::time::timeout(limit, future).await {
        Ok(result) => result,
        Err(_) => Err(on_timeout),
    }
}
