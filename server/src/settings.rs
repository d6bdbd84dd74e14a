//! Environment settings with the seed's names, defaults and ranges. They are read from the
//! environment variables of the same name or from CLI flags (see `cli/flags.rs`), and validated
//! once at start (`cli/config.rs`): an invalid value stops the server with a message naming the
//! setting.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SettleMode {
    /// Wait until the page is quiet, bounded by `BROWSER_ACTION_WAIT_SECONDS`.
    Adaptive,
    /// Sleep exactly `BROWSER_ACTION_WAIT_SECONDS` after every action and reset, as the seed does.
    Fixed,
}

impl SettleMode {
    pub fn name(self) -> &'static str {
        match self {
            SettleMode::Adaptive => "adaptive",
            SettleMode::Fixed => "fixed",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EnvSettings {
    /// The port the server listens on, once bound: a reset may not open the server's own routes
    /// on loopback in the agent's browser (`environment::check_not_the_server`).
    pub server_port: Option<u16>,
    /// `BROWSER_MAX_STEPS`, 1..=200, default 20.
    pub max_steps: u64,
    /// `BROWSER_ACTION_WAIT_SECONDS`, 0..=10, default 1.5: the fixed sleep, or the adaptive bound.
    pub action_wait: Duration,
    /// `BROWSER_EXPLICIT_WAIT_SECONDS`, 0..=10, default 3: what `wait` sleeps.
    pub explicit_wait: Duration,
    /// `BROWSER_SETTLE`, adaptive (default) or fixed.
    pub settle: SettleMode,
    /// `BROWSER_PAGE_LOAD_TIMEOUT_SECONDS`, 1..=120, default 30 (the seed's page-load timeout).
    pub page_load_timeout: Duration,
    /// `BROWSER_ACTION_TIMEOUT_SECONDS`, 1..=60, default 10: an input event the page never acknowledges.
    pub action_timeout: Duration,
    /// `BROWSER_SCREENSHOT_TIMEOUT_SECONDS`, 1..=60, default 10: past it, `renderer_timeout` ends the episode.
    pub screenshot_timeout: Duration,
    /// `BROWSER_OBSERVE_TEXT`, off by default: every observation's `metadata` also carries the
    /// page's visible text in the compact form (`text`, `text_truncated`), for clients that
    /// cannot call `read_page` (OpenEnv's over `/ws`). Off, observations are the seed's.
    pub observe_text: bool,
    /// `BROWSER_ACTIONS`: `full` (default) takes every action, `seed` the seed's seven with the
    /// seed's fields alone, every addition refused in the seed's words (docs/wire.md §1.1).
    pub actions: browserenv::ActionSet,
    /// Off with `BROWSER_NO_PREPARED_RESETS`: a session's next context loads the page the
    /// session last started on while the episode runs, and a reset to that page hands it over
    /// (`Browser::prepare_next`). Off, every reset loads its page.
    pub prepared_resets: bool,
}

impl Default for EnvSettings {
    fn default() -> Self {
        EnvSettings {
            server_port: None,
            max_steps: 20,
            action_wait: Duration::from_millis(1500),
            explicit_wait: Duration::from_secs(3),
            settle: SettleMode::Adaptive,
            page_load_timeout: Duration::from_secs(30),
            action_timeout: Duration::from_secs(10),
            screenshot_timeout: Duration::from_secs(10),
            observe_text: false,
            actions: browserenv::ActionSet::Full,
            prepared_resets: true,
        }
    }
}

/// How long the server waits on its peers before it lets them go: a client that sends nothing, a
/// socket that answers nothing or takes nothing, a connection that never finishes its request.
/// Without these bounds an idle or vanished peer holds a browser and a session slot for good.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerTimeouts {
    /// `BROWSER_SESSION_TIMEOUT_SECONDS` (OpenEnv's `session_timeout`), default 300, `None`
    /// (0) for never: a session (WebSocket, or the shared HTTP one) that gets no request for this
    /// long is ended, its browser closed and its slot freed. A request being answered never counts.
    pub session_timeout: Option<Duration>,
    /// `BROWSER_WS_PING_INTERVAL_SECONDS`, default 20 (uvicorn's `--ws-ping-interval`, which
    /// OpenEnv's Python servers run under): how often a WebSocket peer is pinged.
    pub ping_interval: Duration,
    /// `BROWSER_WS_PING_TIMEOUT_SECONDS`, default 20 (uvicorn's `--ws-ping-timeout`): how long a
    /// peer has to answer a ping, and to take any one frame, before it is dropped.
    pub ping_timeout: Duration,
    /// `BROWSER_HEADER_READ_TIMEOUT_SECONDS`, default 10: how long a connection has to send a
    /// request's headers, and a kept-alive connection its next request, before it is closed.
    pub header_read_timeout: Duration,
    /// `BROWSER_HANDOFF_WAIT_SECONDS`, default 30, 0..=600: how long an agent's request waits
    /// while a person who took control of its session holds it (`control.rs`).
    pub handoff_wait: Duration,
    /// `BROWSER_ASK_WAIT_SECONDS`, default 110, 1..=3600: the longest an agent's `request_human`
    /// waits for a person to take control and hand back.
    pub ask_wait: Duration,
}

/// `BROWSER_ASK_WAIT_SECONDS` by default: below the 120 s the balancer waits for a reply
/// (deploy/haproxy/haproxy.cfg), and a relayed call with it (`replicas/relay.rs`).
pub const DEFAULT_ASK_WAIT: Duration = Duration::from_secs(110);

/// `BROWSER_HANDOFF_WAIT_SECONDS` by default: below the 60 s OpenEnv's client waits for a reply,
/// with room for the step that runs after the hand-back.
pub const DEFAULT_HANDOFF_WAIT: Duration = Duration::from_secs(30);

impl Default for PeerTimeouts {
    fn default() -> Self {
        PeerTimeouts {
            session_timeout: Some(Duration::from_secs(300)),
            ping_interval: Duration::from_secs(20),
            ping_timeout: Duration::from_secs(20),
            header_read_timeout: Duration::from_secs(10),
            handoff_wait: DEFAULT_HANDOFF_WAIT,
            ask_wait: DEFAULT_ASK_WAIT,
        }
    }
}

/// Check that a number of seconds is within `min..=max` and turn it into a duration.
pub fn seconds_in_range(name: &str, value: f64, min: f64, max: f64) -> Result<Duration, String> {
    if value.is_finite() && (min..=max).contains(&value) {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(format!(
            "{name} must be between {min} and {max} seconds, got {value}"
        ))
    }
}

pub fn max_steps_in_range(value: u64) -> Result<u64, String> {
    if (1..=200).contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "BROWSER_MAX_STEPS must be between 1 and 200, got {value}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_match_the_seed() {
        assert!(max_steps_in_range(0).is_err());
        assert_eq!(max_steps_in_range(200), Ok(200));
        assert!(max_steps_in_range(201).is_err());
        assert_eq!(
            seconds_in_range("BROWSER_ACTION_WAIT_SECONDS", 0.0, 0.0, 10.0),
            Ok(Duration::ZERO)
        );
        assert!(seconds_in_range("BROWSER_ACTION_WAIT_SECONDS", 10.5, 0.0, 10.0).is_err());
        assert!(seconds_in_range("BROWSER_ACTION_WAIT_SECONDS", f64::NAN, 0.0, 10.0).is_err());
        let defaults = EnvSettings::default();
        assert_eq!(defaults.max_steps, 20);
        assert_eq!(defaults.action_wait, Duration::from_millis(1500));
        assert_eq!(defaults.explicit_wait, Duration::from_secs(3));
    }
}
