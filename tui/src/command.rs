//! The `:` command line: exact actions typed as text (`click 320 180`, `key ENTER`, ...).

use browserenv::models::{Action, BrowserAction, Chord, Key, Modifier, Modifiers, MouseButton};

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Action(BrowserAction),
    /// `reset` alone goes back to the start URL.
    Reset(Option<String>),
    /// `task ID`: a new episode of a task the server knows (its `--tasks`, or `--miniwob`'s
    /// `miniwob.click-test`), by its id.
    Task(String),
    Grid,
    /// `zoom` cycles; `zoom N` sets 1, 2 or 4.
    Zoom(Option<u8>),
    Text,
    Help,
    Quit,
}

const USAGE: &str = "commands: click X Y [right|middle] [2|3] [SHIFT+CTRL...] | type TEXT | key NAME | press CHORD [N] | scroll DY [DX [X Y]] | move X Y | drag X Y X Y ... | down X Y [BUTTON] | up X Y [BUTTON] | select X Y LABEL | back | forward | goto URL | wait | finish [ANSWER] | reset [URL] | task ID | grid | zoom [1|2|4] | text | help | quit";

pub fn parse_command(line: &str) -> Result<Command, String> {
    let line = line.trim();
    let (verb, rest) = line
        .split_once(char::is_whitespace)
        .map(|(verb, rest)| (verb, rest.trim()))
        .unwrap_or((line, ""));
    match verb.to_ascii_lowercase().as_str() {
        "reset" => Ok(Command::Reset((!rest.is_empty()).then(|| rest.to_string()))),
        "task" => match rest.split_whitespace().collect::<Vec<_>>().as_slice() {
            [id] => Ok(Command::Task(id.to_string())),
            _ => Err("usage: task ID (a task of the server's, e.g. miniwob.click-test)".into()),
        },
        "grid" => Ok(Command::Grid),
        "zoom" if rest.is_empty() => Ok(Command::Zoom(None)),
        "zoom" => {
            let zoom = rest
                .trim_end_matches(['x', 'X'])
                .parse::<u8>()
                .map_err(|_| format!("usage: zoom [1|2|4], got {rest:?}"))?;
            Ok(Command::Zoom(Some(zoom)))
        }
        "text" => Ok(Command::Text),
        "help" | "?" => Ok(Command::Help),
        "quit" | "q" => Ok(Command::Quit),
        "" => Err(USAGE.into()),
        _ => parse_action(verb, rest).map(Command::Action),
    }
}

/// A command that is a browser action: `verb` and the `rest` of the line after it.
fn parse_action(verb: &str, rest: &str) -> Result<BrowserAction, String> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    Ok(match verb.to_ascii_lowercase().as_str() {
        "click" => click(&words)?,
        "type" => {
            if rest.is_empty() {
                return Err("usage: type TEXT".into());
            }
            BrowserAction::type_text(rest)
        }
        "key" => key(rest)?,
        "press" => press(&words)?,
        "scroll" => scroll(&words)?,
        "move" | "hover" => match words.as_slice() {
            [x, y] => {
                let (x, y) = point(x, y)?;
                BrowserAction::move_to(x, y)
            }
            _ => return Err("usage: move X Y".into()),
        },
        "drag" => drag(&words)?,
        "down" | "up" => down_or_up(verb, &words)?,
        "select" => select(&words, rest)?,
        "back" => BrowserAction::back(),
        "forward" => BrowserAction::forward(),
        "goto" if !rest.is_empty() => BrowserAction::goto(rest),
        "goto" => return Err("usage: goto URL".into()),
        "wait" => BrowserAction::wait(),
        "finish" => BrowserAction::finish(rest),
        other => return Err(format!("unknown command {other:?}; {USAGE}")),
    })
}

fn number(text: &str, what: &str) -> Result<i64, String> {
    text.parse()
        .map_err(|_| format!("{what} must be a whole number, got {text:?}"))
}

fn point(x: &str, y: &str) -> Result<(i64, i64), String> {
    Ok((number(x, "X")?, number(y, "Y")?))
}

/// `key NAME`: one of `Key::ALL`, by name.
fn key(rest: &str) -> Result<BrowserAction, String> {
    let name = rest.to_ascii_uppercase();
    let key = Key::from_name(&name).ok_or_else(|| {
        let names: Vec<_> = Key::ALL.iter().map(|k| k.name()).collect();
        format!(
            "unknown key {rest:?}; one of {} (or press CHORD)",
            names.join(" ")
        )
    })?;
    Ok(BrowserAction::key(key))
}

/// `press CHORD [N]`.
fn press(words: &[&str]) -> Result<BrowserAction, String> {
    let (chord, repeat) = match words {
        [chord] => (*chord, 1),
        [chord, n] => (*chord, number(n, "N")?),
        _ => return Err("usage: press CHORD [N] (e.g. SHIFT+TAB, PAGE_DOWN 3)".into()),
    };
    let chord = Chord::parse(chord).map_err(|e| format!("press: {}", e.0))?;
    Ok(BrowserAction::press_repeat(
        chord,
        u8::try_from(repeat).unwrap_or(u8::MAX),
    ))
}

/// `scroll DY [DX [X Y]]`: without a point, where the pointer is (or the page's middle).
fn scroll(words: &[&str]) -> Result<BrowserAction, String> {
    Ok(match words {
        [dy] => BrowserAction::scroll(number(dy, "DY")?),
        [dy, dx] => BrowserAction::scroll_at_pointer(number(dx, "DX")?, number(dy, "DY")?),
        [dy, dx, x, y] => {
            let (x, y) = point(x, y)?;
            BrowserAction::scroll_at(x, y, number(dx, "DX")?, number(dy, "DY")?)
        }
        _ => return Err("usage: scroll DY [DX [X Y]]".into()),
    })
}

/// `drag X Y X Y [X Y ...]`: a path of at least two points.
fn drag(words: &[&str]) -> Result<BrowserAction, String> {
    if words.len() < 4 || !words.len().is_multiple_of(2) {
        return Err("usage: drag X Y X Y [X Y ...] (a path of points)".into());
    }
    let path = words
        .chunks(2)
        .map(|pair| point(pair[0], pair[1]))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(BrowserAction::drag(path))
}

/// `down X Y [BUTTON]` and `up X Y [BUTTON]` (`verb` says which).
fn down_or_up(verb: &str, words: &[&str]) -> Result<BrowserAction, String> {
    let (x, y, button) = match words {
        [x, y] => (x, y, MouseButton::Left),
        [x, y, b] => (x, y, button(b)?),
        _ => return Err(format!("usage: {verb} X Y [left|right|middle]")),
    };
    let (x, y) = point(x, y)?;
    Ok(if verb.eq_ignore_ascii_case("down") {
        BrowserAction::mouse_down(x, y, button)
    } else {
        BrowserAction::mouse_up(x, y, button)
    })
}

/// `select X Y LABEL`: the label is the rest of the line, spaces and all.
fn select(words: &[&str], rest: &str) -> Result<BrowserAction, String> {
    match words {
        [x, y, _, ..] => {
            let (x, y) = point(x, y)?;
            let label = rest
                .splitn(3, char::is_whitespace)
                .nth(2)
                .unwrap_or("")
                .trim();
            Ok(BrowserAction::select(x, y, label))
        }
        _ => Err("usage: select X Y LABEL".into()),
    }
}

/// A recorded action (a step's JSON) described, or its op and why it cannot be read.
pub fn describe_recorded(action: &serde_json::Value) -> String {
    match BrowserAction::from_value(action) {
        Ok(action) => describe(&action),
        Err(errors) => format!(
            "{} (unreadable: {})",
            action["op"].as_str().unwrap_or("?"),
            errors.first().map(ToString::to_string).unwrap_or_default()
        ),
    }
}

fn button(word: &str) -> Result<MouseButton, String> {
    MouseButton::from_name(&word.to_ascii_lowercase())
        .ok_or_else(|| format!("unknown button {word:?}; left, right or middle"))
}

/// `click X Y [right|middle] [2|3] [SHIFT+CTRL...]`, the optional words in any order.
fn click(words: &[&str]) -> Result<BrowserAction, String> {
    let [x, y, options @ ..] = words else {
        return Err(
            "usage: click X Y [right|middle] [2|3] [SHIFT+CTRL...] (page pixels, 0..799 0..599)"
                .into(),
        );
    };
    let (x, y) = (number(x, "X")?, number(y, "Y")?);
    let (mut pressed, mut count, mut held) = (MouseButton::Left, 1, Vec::new());
    for option in options {
        if let Ok(n) = option.parse::<u8>() {
            count = n;
        } else if let Ok(b) = button(option) {
            pressed = b;
        } else {
            for name in option.split('+') {
                let upper = name.to_ascii_uppercase();
                held.push(Modifier::from_name(&upper).ok_or_else(|| {
                    format!(
                        "{option:?} is not a button, a count or modifiers (SHIFT, CTRL, ALT, META)"
                    )
                })?);
            }
        }
    }
    Ok(BrowserAction::click_with(
        x,
        y,
        pressed,
        count,
        Modifiers::of(&held),
    ))
}

/// A short description of an action, in the command line's own syntax (the chord by name, the
/// path point by point).
pub fn describe(action: &BrowserAction) -> String {
    let cut = |text: &str| {
        let shown: String = text.chars().take(30).collect();
        let more = if text.chars().count() > 30 { "…" } else { "" };
        format!("{shown}{more}")
    };
    let named_button = |b: &MouseButton| match b {
        MouseButton::Left => String::new(),
        other => format!(" {}", other.name()),
    };
    let held = |m: &Modifiers| {
        let names: Vec<&str> = m.iter().map(Modifier::name).collect();
        if names.is_empty() {
            String::new()
        } else {
            format!(" {}", names.join("+"))
        }
    };
    match &action.action {
        Action::Click {
            at,
            button,
            count,
            modifiers,
        } => {
            let count = if *count > 1 {
                format!(" {count}")
            } else {
                String::new()
            };
            format!(
                "click {} {}{}{count}{}",
                at.x,
                at.y,
                named_button(button),
                held(modifiers)
            )
        }
        Action::Type { text } => format!("type {}", cut(text)),
        Action::Key { key } => format!("key {key}"),
        Action::Press { chord, repeat } if *repeat > 1 => format!("press {chord} {repeat}"),
        Action::Press { chord, .. } => format!("press {chord}"),
        Action::Scroll {
            dx: 0,
            dy,
            at: None,
        } => format!("scroll {dy}"),
        Action::Scroll { dx, dy, at: None } => format!("scroll {dy} {dx}"),
        Action::Scroll {
            dx,
            dy,
            at: Some(at),
        } => format!("scroll {dy} {dx} {} {}", at.x, at.y),
        Action::Back => "back".into(),
        Action::Forward => "forward".into(),
        Action::Wait => "wait".into(),
        Action::Finish { answer } if answer.is_empty() => "finish".into(),
        Action::Finish { answer } => format!("finish {answer}"),
        Action::Move { at } => format!("move {} {}", at.x, at.y),
        Action::Drag {
            path,
            button,
            modifiers,
        } => {
            let points: Vec<String> = path.iter().map(|p| format!("{} {}", p.x, p.y)).collect();
            format!(
                "drag {}{}{}",
                points.join(" "),
                named_button(button),
                held(modifiers)
            )
        }
        Action::MouseDown { at, button } => {
            format!("down {} {}{}", at.x, at.y, named_button(button))
        }
        Action::MouseUp { at, button } => format!("up {} {}{}", at.x, at.y, named_button(button)),
        Action::Select { at, label } => format!("select {} {} {}", at.x, at.y, cut(label)),
        Action::Goto { url } => format!("goto {}", cut(url)),
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
        assert_eq!(
            parse_command("task miniwob.click-test").unwrap(),
            Command::Task("miniwob.click-test".into())
        );
        assert!(parse_command("task")
            .unwrap_err()
            .contains("usage: task ID"));
        assert!(parse_command("task a b")
            .unwrap_err()
            .contains("usage: task ID"));
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
        assert_eq!(
            describe(&BrowserAction::drag([(1, 2), (30, 40), (50, 60)])),
            "drag 1 2 30 40 50 60"
        );
        assert_eq!(
            describe(&BrowserAction::press_named("shift+tab").unwrap()),
            "press SHIFT+TAB"
        );
        assert_eq!(
            describe(&BrowserAction::click_with(
                1,
                2,
                MouseButton::Right,
                2,
                Modifiers::of(&[Modifier::Shift])
            )),
            "click 1 2 right 2 SHIFT"
        );
    }

    #[test]
    fn parses_every_gesture_and_reads_back_as_it_describes() {
        for line in [
            "click 1 2 right 2 SHIFT",
            "click 0 599 middle",
            "press SHIFT+TAB",
            "press PAGE_DOWN 3",
            "scroll -300 40 10 20",
            "move 799 599",
            "drag 1 2 30 40 50 60",
            "down 5 6 right",
            "up 5 6",
            "select 100 40 Price: low to high",
            "forward",
            "goto https://example.com/",
        ] {
            let action = match parse_command(line).unwrap() {
                Command::Action(action) => action,
                other => panic!("{line}: {other:?}"),
            };
            assert_eq!(describe(&action), line);
            assert_eq!(action.validate(), Ok(()), "{line}");
        }
        assert!(parse_command("press CTRL+FOO")
            .unwrap_err()
            .contains("unknown key"));
        assert!(parse_command("drag 1 2 3")
            .unwrap_err()
            .contains("usage: drag"));
        assert!(parse_command("click 1 2 sideways")
            .unwrap_err()
            .contains("not a button"));
    }
}
