//! The `:` command line: exact actions typed as text (`click 320 180`, `key ENTER`, ...).

use browserenv::models::{BrowserAction, Key, Op};

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Action(BrowserAction),
    /// `reset` alone goes back to the start URL.
    Reset(Option<String>),
    Grid,
    /// `zoom` cycles; `zoom N` sets 1, 2 or 4.
    Zoom(Option<u8>),
    Text,
    Help,
    Quit,
}

const USAGE: &str = "commands: click X Y | type TEXT | key NAME | scroll DY | back | wait | finish [ANSWER] | reset [URL] | grid | zoom [1|2|4] | text | help | quit";

pub fn parse_command(line: &str) -> Result<Command, String> {
    let line = line.trim();
    let (verb, rest) = line
        .split_once(char::is_whitespace)
        .map(|(verb, rest)| (verb, rest.trim()))
        .unwrap_or((line, ""));
    let number = |text: &str, what: &str| -> Result<i64, String> {
        text.parse()
            .map_err(|_| format!("{what} must be a whole number, got {text:?}"))
    };
    let action = match verb.to_ascii_lowercase().as_str() {
        "click" => {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            let [x, y] = parts.as_slice() else {
                return Err("usage: click X Y (page pixels, 0..799 0..599)".into());
            };
            BrowserAction::click(number(x, "X")?, number(y, "Y")?)
        }
        "type" => {
            if rest.is_empty() {
                return Err("usage: type TEXT".into());
            }
            BrowserAction::type_text(rest)
        }
        "key" => {
            let name = rest.to_ascii_uppercase();
            let key = Key::from_name(&name).ok_or_else(|| {
                let names: Vec<_> = Key::ALL.iter().map(|k| k.name()).collect();
                format!("unknown key {rest:?}; one of {}", names.join(" "))
            })?;
            BrowserAction::key(key)
        }
        "scroll" => BrowserAction::scroll(number(rest, "DY")?),
        "back" => BrowserAction::back(),
        "wait" => BrowserAction::wait(),
        "finish" => BrowserAction::finish(rest),
        "reset" => {
            return Ok(Command::Reset((!rest.is_empty()).then(|| rest.to_string())));
        }
        "grid" => return Ok(Command::Grid),
        "zoom" if rest.is_empty() => return Ok(Command::Zoom(None)),
        "zoom" => {
            let zoom = rest
                .trim_end_matches(['x', 'X'])
                .parse::<u8>()
                .map_err(|_| format!("usage: zoom [1|2|4], got {rest:?}"))?;
            return Ok(Command::Zoom(Some(zoom)));
        }
        "text" => return Ok(Command::Text),
        "help" | "?" => return Ok(Command::Help),
        "quit" | "q" => return Ok(Command::Quit),
        "" => return Err(USAGE.into()),
        other => return Err(format!("unknown command {other:?}; {USAGE}")),
    };
    Ok(Command::Action(action))
}

/// A short description of an action, in the command line's own syntax.
pub fn describe(action: &BrowserAction) -> String {
    match action.op {
        Op::Click => format!(
            "click {} {}",
            action.x.unwrap_or_default(),
            action.y.unwrap_or_default()
        ),
        Op::Type => {
            let shown: String = action.text.chars().take(30).collect();
            let more = if action.text.chars().count() > 30 {
                "…"
            } else {
                ""
            };
            format!("type {shown}{more}")
        }
        Op::Key => format!("key {}", action.text),
        Op::Scroll => format!("scroll {}", action.dy),
        Op::Back => "back".into(),
        Op::Wait => "wait".into(),
        Op::Finish if action.text.is_empty() => "finish".into(),
        Op::Finish => format!("finish {}", action.text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_action() {
        let action = |line: &str| match parse_command(line).unwrap() {
            Command::Action(action) => action,
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(action("click 320 180"), BrowserAction::click(320, 180));
        assert_eq!(action("  CLICK   1  2 "), BrowserAction::click(1, 2));
        assert_eq!(
            action("type hello  world"),
            BrowserAction::type_text("hello  world")
        );
        assert_eq!(action("key enter"), BrowserAction::key(Key::Enter));
        assert_eq!(action("key ctrl+a"), BrowserAction::key(Key::CtrlA));
        assert_eq!(action("scroll -300"), BrowserAction::scroll(-300));
        assert_eq!(action("back"), BrowserAction::back());
        assert_eq!(action("wait"), BrowserAction::wait());
        assert_eq!(action("finish"), BrowserAction::finish(""));
        assert_eq!(
            action("finish 42 apples"),
            BrowserAction::finish("42 apples")
        );
    }

    #[test]
    fn parses_the_ui_commands() {
        assert_eq!(parse_command("reset").unwrap(), Command::Reset(None));
        assert_eq!(
            parse_command("reset https://a.example/").unwrap(),
            Command::Reset(Some("https://a.example/".into()))
        );
        assert_eq!(parse_command("grid").unwrap(), Command::Grid);
        assert_eq!(parse_command("zoom").unwrap(), Command::Zoom(None));
        assert_eq!(parse_command("zoom 4x").unwrap(), Command::Zoom(Some(4)));
        assert!(parse_command("zoom big")
            .unwrap_err()
            .contains("usage: zoom"));
        assert_eq!(parse_command("text").unwrap(), Command::Text);
        assert_eq!(parse_command("help").unwrap(), Command::Help);
        assert_eq!(parse_command("q").unwrap(), Command::Quit);
    }

    #[test]
    fn explains_mistakes() {
        assert!(parse_command("click 1")
            .unwrap_err()
            .contains("usage: click X Y"));
        assert!(parse_command("click a b")
            .unwrap_err()
            .contains("whole number"));
        assert!(parse_command("key F5").unwrap_err().contains("CTRL+A"));
        assert!(parse_command("type").unwrap_err().contains("usage"));
        assert!(parse_command("dance")
            .unwrap_err()
            .contains("unknown command"));
        assert!(parse_command("").unwrap_err().starts_with("commands:"));
    }

    #[test]
    fn descriptions_read_like_commands() {
        assert_eq!(describe(&BrowserAction::click(3, 4)), "click 3 4");
        assert_eq!(describe(&BrowserAction::key(Key::CtrlA)), "key CTRL+A");
        assert_eq!(
            describe(&BrowserAction::type_text("x".repeat(40))),
            format!("type {}…", "x".repeat(30))
        );
        assert_eq!(describe(&BrowserAction::finish("")), "finish");
    }
}
