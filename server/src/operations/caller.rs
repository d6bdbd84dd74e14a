//! Who a request comes from, as its bearer token says (`access.rs` tells them apart): whoever
//! holds the server's token (agents, coordinators), or a person of the campaign, known by a token
//! of their own (`browserenv_collect::campaign::people`). A person's token reaches their campaign work
//! and nothing else: the one place that says which routes that is, `Caller::may_reach`.

use axum::http::Method;

use crate::api_error::{ApiError, Code};

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Caller {
    /// The server's token (`BROWSER_API_TOKEN`), or anyone on a server without one: agents and
    /// coordinators. Not a person: campaign work is refused to it.
    #[default]
    Shared,
    /// A person of the campaign, by the token `browserenv-server campaign add-person` made for
    /// them: every campaign request of theirs acts as this name.
    Person(String),
}

impl Caller {
    /// The person, when the caller is one.
    pub fn person(&self) -> Option<&str> {
        match self {
            Caller::Shared => None,
            Caller::Person(name) => Some(name),
        }
    }

    /// `Ok` when this caller may reach the request's route (`may_reach`), else the refusal.
    pub fn admit(&self, request: &axum::extract::Request) -> Result<(), ApiError> {
        let uri = request.uri();
        match self.may_reach(request.method(), uri.path(), uri.query()) {
            true => Ok(()),
            false => Err(Code::PersonNotAllowed.error(format!(
                "{} {} is not for a person's campaign token: it reaches the campaign's routes, \
                 /ws for a session of their own and that session's text",
                request.method(),
                uri.path()
            ))),
        }
    }

    /// Whether this caller may reach the route at all (the routes check the rest: whose lease,
    /// whose session). A person's token reaches the campaign's routes, `/ws` for a session of
    /// their own (not `?session_id=`, another's session) and the text of their own session, which
    /// the terminal UI shows; nothing else: not `/sessions`, watching or taking control of
    /// anyone's session, the HTTP and MCP sessions, nor the task set.
    pub fn may_reach(&self, method: &Method, path: &str, query: Option<&str>) -> bool {
        if matches!(self, Caller::Shared) {
            return true;
        }
        let attaching = || {
            url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .any(|(key, _)| key == "session_id")
        };
        let own_text = || {
            path.strip_prefix("/sessions/")
                .and_then(|rest| rest.strip_suffix("/text"))
                .is_some_and(|id| !id.is_empty() && !id.contains('/'))
        };
        match (method.clone(), path) {
            (Method::GET, "/campaign") => true,
            (
                Method::POST,
                "/campaign/lease"
                | "/campaign/skip"
                | "/campaign/complete"
                | "/campaign/review/next"
                | "/campaign/review",
            ) => true,
            (Method::GET, "/ws") => !attaching(),
            (Method::GET, _) => own_text(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_reaches_their_campaign_work_only() {
        let ana = Caller::Person("ana".into());
        for (method, path, query) in [
            (Method::GET, "/campaign", None),
            (Method::POST, "/campaign/lease", None),
            (Method::POST, "/campaign/skip", None),
            (Method::POST, "/campaign/complete", None),
            (Method::POST, "/campaign/review/next", None),
            (Method::POST, "/campaign/review", None),
            (Method::GET, "/ws", None),
            (Method::GET, "/ws", Some("x=1")),
            (Method::GET, "/sessions/abc/text", None),
        ] {
            assert!(ana.may_reach(&method, path, query), "{method} {path}");
            assert!(Caller::Shared.may_reach(&method, path, query));
        }
        for (method, path, query) in [
            (Method::GET, "/ws", Some("session_id=s1")),
            (Method::GET, "/sessions", None),
            (Method::GET, "/sessions/abc", None),
            (Method::GET, "/sessions/abc/watch", None),
            (Method::GET, "/sessions//text", None),
            (Method::GET, "/sessions/a/b/text", None),
            (Method::POST, "/reset", None),
            (Method::POST, "/step", None),
            (Method::POST, "/mcp", None),
            (Method::GET, "/tasks", None),
            (Method::POST, "/campaign", None),
            (Method::GET, "/campaign/lease", None),
            (Method::GET, "/replicas", None),
        ] {
            assert!(!ana.may_reach(&method, path, query), "{method} {path}");
            assert!(Caller::Shared.may_reach(&method, path, query));
        }
    }
}
