//! The observation's `error` codes: the one list the server, the trajectory code and the terminal
//! UI share, with each code's wire string and whether it ends the episode. The table in
//! docs/server.md ("Observation error codes") is held to this list by a test.

use std::fmt;

/// Everything an observation's `error` can say besides `""` (the action worked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObservationError {
    /// A reset's page did not finish loading in time (the screenshot shows what loaded).
    PageLoadTimeout,
    /// A page could not be loaded (DNS, refused, TLS, an HTTP error status).
    NavigationFailed,
    /// A navigation was stopped (a forbidden scheme, a private address).
    NavigationBlocked,
    /// The action started a download; downloads are denied.
    DownloadBlocked,
    /// The page did not take the input in time (a busy page).
    ActionTimeout,
    /// The browser refused the input.
    ActionFailed,
    /// A "verify you are human" page.
    BlockedByBotVerification,
    /// No screenshot in time (a hung page).
    RendererTimeout,
    /// The page's renderer process died.
    RendererCrashed,
    /// The browser is gone.
    BrowserDisconnected,
}

impl ObservationError {
    pub const ALL: [ObservationError; 10] = [
        ObservationError::PageLoadTimeout,
        ObservationError::NavigationFailed,
        ObservationError::NavigationBlocked,
        ObservationError::DownloadBlocked,
        ObservationError::ActionTimeout,
        ObservationError::ActionFailed,
        ObservationError::BlockedByBotVerification,
        ObservationError::RendererTimeout,
        ObservationError::RendererCrashed,
        ObservationError::BrowserDisconnected,
    ];

    /// The stable snake_case string on the wire.
    pub fn code(self) -> &'static str {
        match self {
            ObservationError::PageLoadTimeout => "page_load_timeout",
            ObservationError::NavigationFailed => "navigation_failed",
            ObservationError::NavigationBlocked => "navigation_blocked",
            ObservationError::DownloadBlocked => "download_blocked",
            ObservationError::ActionTimeout => "action_timeout",
            ObservationError::ActionFailed => "action_failed",
            ObservationError::BlockedByBotVerification => "blocked_by_bot_verification",
            ObservationError::RendererTimeout => "renderer_timeout",
            ObservationError::RendererCrashed => "renderer_crashed",
            ObservationError::BrowserDisconnected => "browser_disconnected",
        }
    }

    /// Whether an observation with this error is the episode's last (`done: true`): the page
    /// cannot be observed any more, or it is a wall the agent cannot pass.
    pub fn ends_episode(self) -> bool {
        matches!(
            self,
            ObservationError::BlockedByBotVerification
                | ObservationError::RendererTimeout
                | ObservationError::RendererCrashed
                | ObservationError::BrowserDisconnected
        )
    }

    /// Whether the page could not be observed any more (the episode failed, not just ended).
    pub fn page_lost(self) -> bool {
        self.ends_episode() && self != ObservationError::BlockedByBotVerification
    }

    /// The code for a wire string (`""` and unknown strings: none).
    pub fn parse(code: &str) -> Option<ObservationError> {
        ObservationError::ALL.into_iter().find(|e| e.code() == code)
    }
}

impl fmt::Display for ObservationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
#[path = "../tests/src/doc_table.rs"]
mod doc_table;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for error in ObservationError::ALL {
            assert_eq!(ObservationError::parse(error.code()), Some(error));
        }
        assert_eq!(ObservationError::parse(""), None);
    }

    /// The table of docs/server.md lists exactly these codes, with the same "ends the episode"
    /// column.
    #[test]
    fn the_documented_table_is_this_list() {
        let doc = include_str!("../docs/server.md");
        let mut listed = Vec::new();
        for row in doc_table::rows(doc, "## Observation error codes") {
            let code = row[0].as_str();
            if let Some(error) = ObservationError::parse(code) {
                let ends = row[row.len() - 1].as_str();
                assert_eq!(
                    ends == "yes",
                    error.ends_episode(),
                    "docs/server.md says {code:?} ends the episode: {ends:?}"
                );
                listed.push(error);
            } else {
                assert!(
                    code == "\"\"",
                    "docs/server.md lists {code:?}, which is not an observation error"
                );
            }
        }
        assert_eq!(
            listed,
            ObservationError::ALL.to_vec(),
            "same codes, same order"
        );
    }
}
