//! Watch mode and agents that ask for a person (`request_human`): what the UI keeps of their asks
//! (the watched session's, for the status bar's badge; everyone's, for the count and Tab), the
//! bell once per ask, and the hand-back of a session that asked, which takes a note for its
//! agent first.

use super::{App, Effect};
use crate::asks::Ask;

/// The most characters of a session's id in a notice.
const SHORT_ID: usize = 13;

impl App {
    /// The watched session's frames say whether its agent asks: a new ask rings the bell.
    pub(super) fn on_asking(&mut self, ask: Option<Ask>) -> Vec<Effect> {
        let new = ask.as_ref().is_some_and(|a| self.heard.first_time(a));
        if let (true, Some(ask)) = (new, &ask) {
            self.notice(asked_here(ask, self.in_control));
        }
        self.asking = ask;
        if new {
            vec![Effect::Bell]
        } else {
            Vec::new()
        }
    }

    /// The server's list of sessions says who asks: one that was not heard of rings the bell.
    pub(super) fn on_asks(&mut self, asks: Vec<Ask>) -> Vec<Effect> {
        let heard = &mut self.heard;
        let new: Vec<Ask> = asks
            .iter()
            .filter(|a| heard.first_time(a))
            .cloned()
            .collect();
        self.asks = asks;
        let Some(first) = new.first() else {
            return Vec::new();
        };
        if self.watching.as_ref() == Some(&first.session) {
            self.notice(asked_here(first, self.in_control));
        } else {
            let short: String = first.session.chars().take(SHORT_ID).collect();
            self.notice(format!(
                "session {short} asks for a person: {} (Tab goes there)",
                first.reason
            ));
        }
        vec![Effect::Bell]
    }

    /// The sessions other than the watched one whose agents ask for a person, the longest
    /// waiting first.
    pub fn others_asking(&self) -> impl Iterator<Item = &Ask> {
        self.asks
            .iter()
            .filter(move |a| self.watching.as_ref() != Some(&a.session))
    }

    /// Hand the watched session back, with the person's note for an agent that asked.
    pub(super) fn hand_back(&mut self, note: Option<String>) -> Vec<Effect> {
        self.notice("handing back...");
        vec![Effect::HandBack { note }]
    }
}

/// The notice for an ask of the watched session: what to press next.
fn asked_here(ask: &Ask, in_control: bool) -> String {
    let next = if in_control {
        "c hands back with a note"
    } else {
        "c takes control"
    };
    format!("the agent asks for a person: {} ({next})", ask.reason)
}

#[cfg(test)]
mod tests {
    use super::super::{KeyInput, LineKind, Mode, Msg};
    use super::*;

    fn ask(session: &str, reason: &str, since: &str) -> Ask {
        Ask {
            session: session.into(),
            reason: reason.into(),
            since: since.into(),
        }
    }

    fn watching(session: &str) -> App {
        let mut app = App::new(String::new(), "test".into());
        app.watch_mode = true;
        app.update(Msg::Following(session.into()));
        app.update(Msg::Connected);
        app
    }

    fn key(app: &mut App, key: KeyInput) -> Vec<Effect> {
        app.update(Msg::Key(key))
    }

    fn in_control(app: &mut App) {
        assert_eq!(key(app, KeyInput::Char('c')), vec![Effect::Take]);
        app.update(Msg::Control {
            holder: Some("ana".into()),
            yours: Some(true),
        });
        assert!(app.in_control);
    }

    #[test]
    fn an_ask_rings_once_and_its_hand_back_takes_a_note() {
        let mut app = watching("s-1");
        let asked = ask("s-1", "please sign me in", "t1");
        assert_eq!(
            app.update(Msg::Asking(Some(asked.clone()))),
            vec![Effect::Bell]
        );
        let notice = app.notice.clone().unwrap().text;
        assert!(notice.contains("please sign me in"), "{notice}");
        // Every later frame repeats the ask, and the list of sessions tells of it too: no bell.
        assert!(app.update(Msg::Asking(Some(asked.clone()))).is_empty());
        assert!(app.update(Msg::Asks(vec![asked.clone()])).is_empty());
        assert_eq!(app.asking.as_ref(), Some(&asked));
        assert_eq!(app.others_asking().count(), 0);

        in_control(&mut app);
        assert!(key(&mut app, KeyInput::Char('c')).is_empty());
        assert_eq!(
            app.mode,
            Mode::Line {
                kind: LineKind::HandBackNote,
                text: String::new()
            }
        );
        for c in "signed in ".chars() {
            key(&mut app, KeyInput::Char(c));
        }
        assert_eq!(
            key(&mut app, KeyInput::Enter),
            vec![Effect::HandBack {
                note: Some("signed in".into())
            }]
        );
        assert_eq!(app.mode, Mode::Normal);
    }

    #[test]
    fn esc_or_an_empty_note_hands_back_without_one() {
        let mut app = watching("s-1");
        app.update(Msg::Asking(Some(ask("s-1", "captcha", "t1"))));
        in_control(&mut app);
        key(&mut app, KeyInput::Char('c'));
        assert_eq!(
            key(&mut app, KeyInput::Esc),
            vec![Effect::HandBack { note: None }]
        );
        key(&mut app, KeyInput::Char('c'));
        key(&mut app, KeyInput::Char(' '));
        assert_eq!(
            key(&mut app, KeyInput::Enter),
            vec![Effect::HandBack { note: None }]
        );
    }

    #[test]
    fn a_session_that_did_not_ask_is_handed_back_at_once() {
        let mut app = watching("s-1");
        in_control(&mut app);
        assert_eq!(
            key(&mut app, KeyInput::Char('c')),
            vec![Effect::HandBack { note: None }]
        );
    }

    #[test]
    fn another_session_asking_rings_and_says_where() {
        let mut app = watching("s-1");
        let theirs = ask("s-2", "a cookie wall", "t1");
        assert_eq!(
            app.update(Msg::Asks(vec![theirs.clone()])),
            vec![Effect::Bell]
        );
        let notice = app.notice.clone().unwrap().text;
        assert!(
            notice.contains("s-2") && notice.contains("a cookie wall") && notice.contains("Tab"),
            "{notice}"
        );
        assert_eq!(app.others_asking().collect::<Vec<_>>(), vec![&theirs]);
        // The same ask once more: quiet. The same session asking again later: a new ask.
        assert!(app.update(Msg::Asks(vec![theirs.clone()])).is_empty());
        let again = ask("s-2", "a cookie wall", "t2");
        assert_eq!(app.update(Msg::Asks(vec![again])), vec![Effect::Bell]);
        // Following it: its own frames say it asks; the list counts only the others.
        app.update(Msg::Following("s-2".into()));
        assert_eq!(app.asking, None);
        assert_eq!(app.others_asking().count(), 0);
    }
}
