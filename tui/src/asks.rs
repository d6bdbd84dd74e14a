//! Agents asking for a person (the server's MCP tool `request_human`): which sessions ask, why and
//! since when, as `GET /sessions` lists them and as the watch stream's `control` carries them
//! (`"asking": {"reason", "since"}`, docs/wire.md §8); the order watch mode offers sessions in
//! (the ones asking first, the longest waiting first); and which asks were heard already, so the
//! bell rings once per ask and not at every frame that repeats it.

use std::collections::BTreeSet;

use serde_json::Value;

/// One session's open request for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub session: String,
    pub reason: String,
    /// When the agent asked, as the server stamps it (`2025-05-01T12:00:00.000Z`): fixed width,
    /// so these strings sort as the times do, across replicas too.
    pub since: String,
}

impl Ask {
    /// The ask in `holder`, a value with an `asking` field: a control view of the watch stream
    /// (`{"actor", "name", "asking"}`) or an entry of `GET /sessions`.
    pub fn of(session: &str, holder: &Value) -> Option<Ask> {
        let asking = holder.get("asking")?;
        Some(Ask {
            session: session.to_string(),
            reason: asking.get("reason")?.as_str()?.to_string(),
            since: asking
                .get("since")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
    }

    /// The reason cut to `chars` characters (an ellipsis says so), for a one-line bar.
    pub fn short_reason(&self, chars: usize) -> String {
        if self.reason.chars().count() <= chars {
            return self.reason.clone();
        }
        let cut: String = self.reason.chars().take(chars.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The asks among the sessions `GET /sessions` listed, the longest waiting first.
pub fn asks(listed: &[Value]) -> Vec<Ask> {
    let mut asks: Vec<Ask> = listed
        .iter()
        .filter_map(|s| Ask::of(s["id"].as_str()?, s))
        .collect();
    asks.sort_by(|a, b| a.since.cmp(&b.since));
    asks
}

/// The listed sessions' ids in the order watch mode offers them: those asking for a person first,
/// the longest waiting first (a person is what they wait for), then the rest in the server's
/// order.
pub fn ordered(listed: &[Value]) -> Vec<String> {
    let asking = asks(listed);
    let rest = listed
        .iter()
        .filter_map(|s| s["id"].as_str())
        .filter(|id| !asking.iter().any(|a| a.session == *id))
        .map(str::to_string);
    asking
        .iter()
        .map(|a| a.session.clone())
        .chain(rest)
        .collect()
}

/// The session Tab goes to from `current`: from a session that is not asking, the one that has
/// waited longest for a person (if any does); otherwise the next in `ordered`, round.
pub fn next_after(listed: &[Value], current: Option<&str>) -> Option<String> {
    let ids = ordered(listed);
    let asking = asks(listed);
    let current_asks = asking.iter().any(|a| Some(a.session.as_str()) == current);
    if !current_asks {
        if let Some(first) = asking.first() {
            return Some(first.session.clone());
        }
    }
    let at = current.and_then(|c| ids.iter().position(|id| id == c));
    ids.get(at.map_or(0, |i| (i + 1) % ids.len())).cloned()
}

/// The asks heard so far, by session and time: an ask is new once. Kept for the whole run (one
/// entry per `request_human` call watched, a few dozen bytes each), because the two sources, the
/// watched session's frames and the list of sessions polled, may tell of the same ask in either
/// order and more than once.
#[derive(Debug, Default)]
pub struct Heard(BTreeSet<(String, String)>);

impl Heard {
    /// True the first time `ask` is heard of.
    pub fn first_time(&mut self, ask: &Ask) -> bool {
        self.0.insert((ask.session.clone(), ask.since.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listed() -> Vec<Value> {
        vec![
            json!({"id": "s-1", "control": "agent"}),
            json!({"id": "s-2", "asking": {"reason": "sign in", "since": "2025-05-01T12:00:09.000Z"}}),
            json!({"id": "s-3", "control": "agent"}),
            json!({"id": "s-4", "asking": {"reason": "captcha", "since": "2025-05-01T12:00:01.500Z"}}),
        ]
    }

    #[test]
    fn sessions_asking_come_first_the_longest_waiting_first() {
        assert_eq!(ordered(&listed()), ["s-4", "s-2", "s-1", "s-3"]);
        let reasons: Vec<_> = asks(&listed()).into_iter().map(|a| a.reason).collect();
        assert_eq!(reasons, ["captcha", "sign in"]);
        // Nobody asking: the server's order, untouched.
        let quiet: Vec<Value> = ["b", "a"].iter().map(|id| json!({"id": id})).collect();
        assert_eq!(ordered(&quiet), ["b", "a"]);
    }

    #[test]
    fn tab_goes_to_whoever_asks_then_round() {
        let listed = listed();
        assert_eq!(next_after(&listed, None).as_deref(), Some("s-4"));
        assert_eq!(next_after(&listed, Some("s-1")).as_deref(), Some("s-4"));
        assert_eq!(next_after(&listed, Some("s-4")).as_deref(), Some("s-2"));
        assert_eq!(next_after(&listed, Some("s-2")).as_deref(), Some("s-1"));
        assert_eq!(next_after(&listed, Some("s-3")).as_deref(), Some("s-4"));
        let quiet: Vec<Value> = ["a", "b"].iter().map(|id| json!({"id": id})).collect();
        assert_eq!(next_after(&quiet, Some("a")).as_deref(), Some("b"));
        assert_eq!(next_after(&quiet, Some("b")).as_deref(), Some("a"));
        assert_eq!(next_after(&quiet, Some("gone")).as_deref(), Some("a"));
        assert_eq!(next_after(&[], None), None);
    }

    #[test]
    fn an_ask_is_new_once_and_another_ask_of_the_same_session_is_new_again() {
        let control = json!({"actor": "agent", "asking": {"reason": "r", "since": "t1"}});
        let ask = Ask::of("s-1", &control).unwrap();
        assert_eq!(Ask::of("s-1", &json!({"actor": "agent"})), None);
        let mut heard = Heard::default();
        assert!(heard.first_time(&ask));
        assert!(!heard.first_time(&ask.clone()));
        let again = Ask {
            since: "t2".into(),
            ..ask
        };
        assert!(heard.first_time(&again));
    }

    #[test]
    fn a_long_reason_is_cut_for_the_bar() {
        let ask = Ask {
            session: "s".into(),
            reason: "a".repeat(10),
            since: String::new(),
        };
        assert_eq!(ask.short_reason(10), "a".repeat(10));
        assert_eq!(ask.short_reason(4), "aaa…");
    }
}
