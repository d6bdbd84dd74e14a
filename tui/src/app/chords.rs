//! The chord prompt (`p`): a key or chord of `press` typed by name, Tab completing the part
//! being typed over the keyboard's one list (`KeyName::all`), Enter pressing it.

use browserenv::models::KeyName;

use super::{App, Effect};
use crate::command::{parse_command, Command};

/// The names that complete `prefix` (any case): every key whose name starts with it.
pub fn completions(prefix: &str) -> Vec<&'static str> {
    KeyName::all()
        .map(KeyName::name)
        .filter(|name| {
            name.len() >= prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix)
        })
        .collect()
}

/// The longest start the names share.
fn common_start(names: &[&str]) -> String {
    let Some(first) = names.first() else {
        return String::new();
    };
    let mut len = first.len();
    for name in &names[1..] {
        len = len.min(
            first
                .bytes()
                .zip(name.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    first[..len].to_string()
}

/// `text` with its last key name completed as far as the names agree, and the names that fit.
pub fn complete(text: &str) -> (String, Vec<&'static str>) {
    // The part being typed: after the last `+`, before any repeat count.
    if text.contains(' ') {
        return (text.to_string(), Vec::new());
    }
    let (head, part) = match text.rfind('+') {
        Some(at) => text.split_at(at + 1),
        None => ("", text),
    };
    let names = completions(part);
    let completed = match names.as_slice() {
        [] => part.to_string(),
        [one] => one.to_string(),
        many => {
            // The common start, unless it is shorter than what was typed.
            let start = common_start(many);
            if start.len() >= part.len() {
                start
            } else {
                part.to_string()
            }
        }
    };
    (format!("{head}{completed}"), names)
}

impl App {
    /// Tab in the chord prompt.
    pub(super) fn complete_chord(&mut self, text: String) -> String {
        let (completed, names) = complete(&text);
        match names.len() {
            0 if !text.contains(' ') => {
                self.error(format!("no key starts with {:?}", last_part(&text)))
            }
            0 | 1 => self.notice = None,
            n => {
                let shown: Vec<&str> = names.iter().take(16).copied().collect();
                let more = if n > shown.len() { " ..." } else { "" };
                self.notice(format!("{n} keys: {}{more}", shown.join(" ")));
            }
        }
        completed
    }

    /// Enter in the chord prompt: `CHORD [N]` pressed as one step.
    pub(super) fn press_line(&mut self, text: &str) -> Vec<Effect> {
        if text.trim().is_empty() {
            return Vec::new();
        }
        match parse_command(&format!("press {text}")) {
            Ok(Command::Action(action)) => self.step(action),
            Ok(_) => Vec::new(),
            Err(message) => {
                self.error(message);
                Vec::new()
            }
        }
    }
}

fn last_part(text: &str) -> &str {
    text.rsplit('+').next().unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use browserenv::models::Chord;

    fn is_chord(text: &str) -> bool {
        Chord::parse(text).is_ok()
    }

    #[test]
    fn completion_comes_from_the_keyboard_list() {
        assert_eq!(
            complete("page_d"),
            ("PAGE_DOWN".to_string(), vec!["PAGE_DOWN"])
        );
        assert_eq!(complete("shift+ta").0, "shift+TAB");
        let (text, names) = complete("PAGE");
        assert_eq!(text, "PAGE_");
        assert_eq!(names, vec!["PAGE_UP", "PAGE_DOWN"]);
        let (_, names) = complete("F1");
        assert!(names.contains(&"F1") && names.contains(&"F12"), "{names:?}");
        assert_eq!(complete("ctrl+zz").1, Vec::<&str>::new());
        // Every name offered is one `press` takes.
        for name in completions("") {
            assert!(is_chord(name), "{name}");
        }
        assert_eq!(completions("").len(), KeyName::all().count());
    }
}
