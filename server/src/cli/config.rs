//! The flags checked and turned into the server's and Chromium's settings.

use crate::chromium::ChromiumConfig;
use crate::settings::{max_steps_in_range, seconds_in_range, EnvSettings, PeerTimeouts};
use crate::ServerConfig;

use super::Cli;

impl Cli {
    /// Validate every setting; the error names the setting, as the seed's construction does.
    pub fn server_config(&self) -> Result<ServerConfig, String> {
        if !(1..=MAX_EPISODES_PER_BROWSER).contains(&self.episodes_per_browser) {
            return Err(format!(
                "BROWSER_EPISODES_PER_BROWSER must be between 1 and {MAX_EPISODES_PER_BROWSER}, got {}",
                self.episodes_per_browser
            ));
        }
        if !(1..=64).contains(&self.max_sessions) {
            return Err(format!(
                "BROWSER_MAX_SESSIONS must be between 1 and 64, got {}",
                self.max_sessions
            ));
        }
        if !(self.max_sessions..=65_536).contains(&self.max_connections) {
            return Err(format!(
                "BROWSER_MAX_CONNECTIONS must be between BROWSER_MAX_SESSIONS ({}) and 65536, got {}",
                self.max_sessions, self.max_connections
            ));
        }
        let session_timeout = seconds_in_range(
            "BROWSER_SESSION_TIMEOUT_SECONDS",
            self.session_timeout,
            0.0,
            86_400.0,
        )?;
        let timeouts = PeerTimeouts {
            session_timeout: (!session_timeout.is_zero()).then_some(session_timeout),
            ping_interval: seconds_in_range(
                "BROWSER_WS_PING_INTERVAL_SECONDS",
                self.ws_ping_interval,
                1.0,
                600.0,
            )?,
            ping_timeout: seconds_in_range(
                "BROWSER_WS_PING_TIMEOUT_SECONDS",
                self.ws_ping_timeout,
                1.0,
                600.0,
            )?,
            header_read_timeout: seconds_in_range(
                "BROWSER_HEADER_READ_TIMEOUT_SECONDS",
                self.header_read_timeout,
                1.0,
                600.0,
            )?,
            handoff_wait: seconds_in_range(
                "BROWSER_HANDOFF_WAIT_SECONDS",
                self.handoff_wait,
                0.0,
                600.0,
            )?,
            ask_wait: seconds_in_range("BROWSER_ASK_WAIT_SECONDS", self.ask_wait, 1.0, 3600.0)?,
        };
        let settings = EnvSettings {
            // Known once bound (`run`).
            server_port: None,
            max_steps: max_steps_in_range(self.max_steps)?,
            action_wait: seconds_in_range(
                "BROWSER_ACTION_WAIT_SECONDS",
                self.action_wait,
                0.0,
                10.0,
            )?,
            explicit_wait: seconds_in_range(
                "BROWSER_EXPLICIT_WAIT_SECONDS",
                self.explicit_wait,
                0.0,
                10.0,
            )?,
            settle: self.settle,
            page_load_timeout: seconds_in_range(
                "BROWSER_PAGE_LOAD_TIMEOUT_SECONDS",
                self.page_load_timeout,
                1.0,
                120.0,
            )?,
            action_timeout: seconds_in_range(
                "BROWSER_ACTION_TIMEOUT_SECONDS",
                self.action_timeout,
                1.0,
                60.0,
            )?,
            screenshot_timeout: seconds_in_range(
                "BROWSER_SCREENSHOT_TIMEOUT_SECONDS",
                self.screenshot_timeout,
                1.0,
                60.0,
            )?,
            observe_text: self.observe_text,
            actions: self.actions,
            prepared_resets: !self.no_prepared_resets,
        };
        let archive = self.archive.config(self.record_dir.as_deref())?;
        let shared = self.isolation == crate::chromium::Isolation::Context
            || self.browser_url.as_ref().is_some_and(|url| !url.is_empty());
        if self.archive.wanted() && (shared || self.campaign.is_some()) {
            return Err(
                "archives (--archive, --archive-dir) need a Chromium of each session's own \
                 (BROWSER_ISOLATION=process, no --browser-url: DevTools intercepts requests \
                 browser-wide) and no --campaign"
                    .into(),
            );
        }
        Ok(ServerConfig {
            archive,
            settings,
            max_sessions: self.max_sessions,
            warm_spare: !self.no_warm_spare,
            record_dir: self.record_dir.clone(),
            campaign: self.campaign.clone(),
            token: self.token.clone().filter(|t| !t.is_empty()),
            tasks: None,
            miniwob: None,
            allowed_origins: clean_list(&self.allowed_origins, "BROWSER_ALLOWED_ORIGINS", true)?,
            allowed_hosts: clean_list(&self.allowed_hosts, "BROWSER_ALLOWED_HOSTS", false)?,
            // Behind a Unix socket only the proxy connects, and it sends its own public name.
            check_host: self.unix_dir.is_none(),
            timeouts,
            max_connections: self.max_connections,
            drain: seconds_in_range("BROWSER_DRAIN_SECONDS", self.drain_seconds, 0.0, 3600.0)?,
            peers: crate::replicas::parse_peers(&self.peers)?,
            peer_addresses: crate::replicas::parse_own_addresses(&self.peer_addresses)?,
        })
    }

    /// Chromium's settings, with the sandbox decided by `for_this_process(self.sandbox)`.
    pub fn chromium_config(&self, sandbox: bool) -> ChromiumConfig {
        ChromiumConfig {
            executable: self.chromium.clone(),
            remote: self.browser_url.clone().filter(|url| !url.is_empty()),
            ignore_https_errors: self.ignore_https_errors,
            sandbox,
            renderer_memory_mb: self.renderer_memory_mb,
            isolation: self.isolation,
            episodes_per_browser: self.episodes_per_browser,
            spare_contexts: !self.no_warm_spare,
            screenshots: self.screenshots,
            replays: self.archive.archive_dir.is_some() || self.tasks.is_some(),
            ..ChromiumConfig::default()
        }
    }
}

/// Past this many episodes a browser is as good as never replaced.
const MAX_EPISODES_PER_BROWSER: u32 = 100_000;

/// A comma-separated setting as a list: blanks dropped; origins must look like `scheme://host`.
fn clean_list(values: &[String], name: &str, origins: bool) -> Result<Vec<String>, String> {
    let mut list = Vec::new();
    for value in values.iter().map(|v| v.trim()).filter(|v| !v.is_empty()) {
        let value = value.trim_end_matches('/');
        if origins {
            let parsed = url::Url::parse(value)
                .ok()
                .filter(|u| u.host_str().is_some() && u.path() == "/" && u.query().is_none());
            if parsed.is_none() {
                return Err(format!(
                    "{name}: {value:?} is not an origin (scheme://host[:port], e.g. http://localhost:3000)"
                ));
            }
        } else if value.contains(['/', ':', ' ']) {
            return Err(format!("{name}: {value:?} is not a host name"));
        }
        list.push(value.to_ascii_lowercase());
    }
    Ok(list)
}
