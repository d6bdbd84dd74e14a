//! The keyboard of `press`: every key of a US keyboard by name, the four modifiers, and chords
//! (`SHIFT+TAB`, `CTRL+C`). One table says each key's name and the DOM's words for it (`key`,
//! `code`, `keyCode`, the character it types with and without SHIFT); the server turns it into
//! key events, the docs and the schemas list its names, the terminal UI completes them.

use super::*;

/// One key of the keyboard, in the DOM's words (what a page's `KeyboardEvent` says of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyInfo {
    /// The name `press` takes (upper case; matched ignoring case).
    pub name: &'static str,
    /// `KeyboardEvent.key`, without SHIFT.
    pub key: &'static str,
    /// `KeyboardEvent.key` with SHIFT held (a letter's capital, a digit's symbol).
    pub shifted: &'static str,
    /// `KeyboardEvent.code`: the physical key.
    pub code: &'static str,
    /// `KeyboardEvent.keyCode` (Windows' virtual key code).
    pub key_code: i64,
    /// Whether the key types its `key` (a character), so typing it into a field changes the field.
    pub types: bool,
    /// `KeyboardEvent.location`: 0 standard, 1 left (the modifiers), 3 the numeric keypad.
    pub location: i64,
}

const fn info(
    name: &'static str,
    key: &'static str,
    shifted: &'static str,
    code: &'static str,
    key_code: i64,
    types: bool,
) -> KeyInfo {
    KeyInfo {
        name,
        key,
        shifted,
        code,
        key_code,
        types,
        location: 0,
    }
}

/// A key that types nothing (`Enter` types "\r", which is said where it is sent).
const fn named(
    name: &'static str,
    key: &'static str,
    code: &'static str,
    key_code: i64,
) -> KeyInfo {
    info(name, key, key, code, key_code, false)
}

const fn located(mut key: KeyInfo, location: i64) -> KeyInfo {
    key.location = location;
    key
}

macro_rules! letters {
    ($($name:literal $lower:literal $code:literal $kc:literal),* $(,)?) => {
        [$(info($name, $lower, $name, $code, $kc, true)),*]
    };
}

const LETTERS: [KeyInfo; 26] = letters![
    "A" "a" "KeyA" 65, "B" "b" "KeyB" 66, "C" "c" "KeyC" 67, "D" "d" "KeyD" 68,
    "E" "e" "KeyE" 69, "F" "f" "KeyF" 70, "G" "g" "KeyG" 71, "H" "h" "KeyH" 72,
    "I" "i" "KeyI" 73, "J" "j" "KeyJ" 74, "K" "k" "KeyK" 75, "L" "l" "KeyL" 76,
    "M" "m" "KeyM" 77, "N" "n" "KeyN" 78, "O" "o" "KeyO" 79, "P" "p" "KeyP" 80,
    "Q" "q" "KeyQ" 81, "R" "r" "KeyR" 82, "S" "s" "KeyS" 83, "T" "t" "KeyT" 84,
    "U" "u" "KeyU" 85, "V" "v" "KeyV" 86, "W" "w" "KeyW" 87, "X" "x" "KeyX" 88,
    "Y" "y" "KeyY" 89, "Z" "z" "KeyZ" 90,
];

const OTHERS: [KeyInfo; 74] = [
    info("0", "0", ")", "Digit0", 48, true),
    info("1", "1", "!", "Digit1", 49, true),
    info("2", "2", "@", "Digit2", 50, true),
    info("3", "3", "#", "Digit3", 51, true),
    info("4", "4", "$", "Digit4", 52, true),
    info("5", "5", "%", "Digit5", 53, true),
    info("6", "6", "^", "Digit6", 54, true),
    info("7", "7", "&", "Digit7", 55, true),
    info("8", "8", "*", "Digit8", 56, true),
    info("9", "9", "(", "Digit9", 57, true),
    named("ENTER", "Enter", "Enter", 13),
    named("TAB", "Tab", "Tab", 9),
    named("ESCAPE", "Escape", "Escape", 27),
    named("BACKSPACE", "Backspace", "Backspace", 8),
    info("SPACE", " ", " ", "Space", 32, true),
    named("UP", "ArrowUp", "ArrowUp", 38),
    named("DOWN", "ArrowDown", "ArrowDown", 40),
    named("LEFT", "ArrowLeft", "ArrowLeft", 37),
    named("RIGHT", "ArrowRight", "ArrowRight", 39),
    named("PAGE_UP", "PageUp", "PageUp", 33),
    named("PAGE_DOWN", "PageDown", "PageDown", 34),
    named("HOME", "Home", "Home", 36),
    named("END", "End", "End", 35),
    named("INSERT", "Insert", "Insert", 45),
    named("DELETE", "Delete", "Delete", 46),
    named("F1", "F1", "F1", 112),
    named("F2", "F2", "F2", 113),
    named("F3", "F3", "F3", 114),
    named("F4", "F4", "F4", 115),
    named("F5", "F5", "F5", 116),
    named("F6", "F6", "F6", 117),
    named("F7", "F7", "F7", 118),
    named("F8", "F8", "F8", 119),
    named("F9", "F9", "F9", 120),
    named("F10", "F10", "F10", 121),
    named("F11", "F11", "F11", 122),
    named("F12", "F12", "F12", 123),
    info("MINUS", "-", "_", "Minus", 189, true),
    info("EQUAL", "=", "+", "Equal", 187, true),
    info("BRACKET_LEFT", "[", "{", "BracketLeft", 219, true),
    info("BRACKET_RIGHT", "]", "}", "BracketRight", 221, true),
    info("BACKSLASH", "\\", "|", "Backslash", 220, true),
    info("SEMICOLON", ";", ":", "Semicolon", 186, true),
    info("QUOTE", "'", "\"", "Quote", 222, true),
    info("BACKQUOTE", "`", "~", "Backquote", 192, true),
    info("COMMA", ",", "<", "Comma", 188, true),
    info("PERIOD", ".", ">", "Period", 190, true),
    info("SLASH", "/", "?", "Slash", 191, true),
    located(named("SHIFT", "Shift", "ShiftLeft", 16), 1),
    located(named("CTRL", "Control", "ControlLeft", 17), 1),
    located(named("ALT", "Alt", "AltLeft", 18), 1),
    located(named("META", "Meta", "MetaLeft", 91), 1),
    named("CAPS_LOCK", "CapsLock", "CapsLock", 20),
    named("CONTEXT_MENU", "ContextMenu", "ContextMenu", 93),
    named("PRINT_SCREEN", "PrintScreen", "PrintScreen", 44),
    named("SCROLL_LOCK", "ScrollLock", "ScrollLock", 145),
    named("PAUSE", "Pause", "Pause", 19),
    named("NUM_LOCK", "NumLock", "NumLock", 144),
    located(info("NUMPAD_0", "0", "0", "Numpad0", 96, true), 3),
    located(info("NUMPAD_1", "1", "1", "Numpad1", 97, true), 3),
    located(info("NUMPAD_2", "2", "2", "Numpad2", 98, true), 3),
    located(info("NUMPAD_3", "3", "3", "Numpad3", 99, true), 3),
    located(info("NUMPAD_4", "4", "4", "Numpad4", 100, true), 3),
    located(info("NUMPAD_5", "5", "5", "Numpad5", 101, true), 3),
    located(info("NUMPAD_6", "6", "6", "Numpad6", 102, true), 3),
    located(info("NUMPAD_7", "7", "7", "Numpad7", 103, true), 3),
    located(info("NUMPAD_8", "8", "8", "Numpad8", 104, true), 3),
    located(info("NUMPAD_9", "9", "9", "Numpad9", 105, true), 3),
    located(info("NUMPAD_ADD", "+", "+", "NumpadAdd", 107, true), 3),
    located(
        info("NUMPAD_SUBTRACT", "-", "-", "NumpadSubtract", 109, true),
        3,
    ),
    located(
        info("NUMPAD_MULTIPLY", "*", "*", "NumpadMultiply", 106, true),
        3,
    ),
    located(
        info("NUMPAD_DIVIDE", "/", "/", "NumpadDivide", 111, true),
        3,
    ),
    located(
        info("NUMPAD_DECIMAL", ".", ".", "NumpadDecimal", 110, true),
        3,
    ),
    located(named("NUMPAD_ENTER", "Enter", "NumpadEnter", 13), 3),
];

/// One key `press` takes, by its place in [`KeyName::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct KeyName(u8);

/// Every key of the keyboard, in the order the docs list them.
static KEYS: std::sync::LazyLock<Vec<KeyInfo>> = std::sync::LazyLock::new(|| {
    let mut keys = LETTERS.to_vec();
    keys.extend(OTHERS);
    keys
});

impl KeyName {
    /// Every key, in the documented order.
    pub fn all() -> impl Iterator<Item = KeyName> {
        (0..KEYS.len()).map(|i| KeyName(i as u8))
    }

    pub fn info(self) -> &'static KeyInfo {
        &KEYS[usize::from(self.0)]
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// By name, ignoring case (`enter`, `page_down`).
    pub fn from_name(name: &str) -> Option<KeyName> {
        KeyName::all().find(|key| key.name().eq_ignore_ascii_case(name))
    }

    /// The key of a modifier (`SHIFT` is the left Shift key).
    pub fn of_modifier(modifier: Modifier) -> KeyName {
        KeyName::from_name(modifier.name()).unwrap_or(KeyName(0))
    }

    /// Whether this key is one of the modifiers.
    pub fn modifier(self) -> Option<Modifier> {
        Modifier::ALL.into_iter().find(|m| m.name() == self.name())
    }
}

/// A key held during a click, a drag or a key press.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Modifier {
    Shift,
    Ctrl,
    Alt,
    Meta,
}

impl Modifier {
    /// In the order the wire lists them (and a chord's canonical name writes them).
    pub const ALL: [Modifier; 4] = [
        Modifier::Shift,
        Modifier::Ctrl,
        Modifier::Alt,
        Modifier::Meta,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Modifier::Shift => "SHIFT",
            Modifier::Ctrl => "CTRL",
            Modifier::Alt => "ALT",
            Modifier::Meta => "META",
        }
    }

    /// Exact, as a pydantic `Literal` (the wire's `modifiers` list).
    pub fn from_name(name: &str) -> Option<Modifier> {
        Modifier::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The bit DevTools' input events carry for it (`Input.dispatchKeyEvent`'s `modifiers`).
    pub fn devtools_bit(self) -> i64 {
        match self {
            Modifier::Alt => 1,
            Modifier::Ctrl => 2,
            Modifier::Meta => 4,
            Modifier::Shift => 8,
        }
    }
}

/// A set of modifiers, held in [`Modifier::ALL`]'s order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Modifiers(u8);

impl Modifiers {
    pub const NONE: Modifiers = Modifiers(0);

    pub fn of(modifiers: &[Modifier]) -> Modifiers {
        modifiers
            .iter()
            .fold(Modifiers::NONE, |set, m| set.with(*m))
    }

    fn bit(modifier: Modifier) -> u8 {
        1 << (modifier as u8)
    }

    pub fn with(self, modifier: Modifier) -> Modifiers {
        Modifiers(self.0 | Self::bit(modifier))
    }

    pub fn contains(self, modifier: Modifier) -> bool {
        self.0 & Self::bit(modifier) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The modifiers held, in [`Modifier::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Modifier> {
        Modifier::ALL.into_iter().filter(move |m| self.contains(*m))
    }

    /// DevTools' bit mask of them.
    pub fn devtools_mask(self) -> i64 {
        self.iter().map(Modifier::devtools_bit).sum()
    }

    /// As the wire lists them: `["SHIFT", "CTRL"]`.
    pub fn to_value(self) -> Value {
        Value::Array(self.iter().map(|m| Value::from(m.name())).collect())
    }
}

/// A key with the modifiers held while it is pressed: `SHIFT+TAB`, `CTRL+C`, `PAGE_DOWN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chord {
    pub modifiers: Modifiers,
    pub key: KeyName,
}

/// Why a text is not a chord, in words for the agent that sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChordError(pub String);

impl fmt::Display for ChordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ChordError {}

impl Chord {
    pub fn new(key: KeyName) -> Chord {
        Chord {
            modifiers: Modifiers::NONE,
            key,
        }
    }

    pub fn with(self, modifier: Modifier) -> Chord {
        Chord {
            modifiers: self.modifiers.with(modifier),
            ..self
        }
    }

    /// `MOD+...+KEY`, the modifiers before the key, each name ignoring case; the last part is
    /// the key (which may itself be a modifier: `SHIFT` alone, `CTRL+SHIFT`).
    pub fn parse(text: &str) -> Result<Chord, ChordError> {
        let parts: Vec<&str> = text.split('+').map(str::trim).collect();
        let Some((last, held)) = parts.split_last() else {
            return Err(ChordError("empty".into()));
        };
        if parts.iter().any(|part| part.is_empty()) {
            return Err(ChordError(format!(
                "\"{text}\" has an empty part: write keys by name joined with + (SHIFT+EQUAL for +)"
            )));
        }
        let key = KeyName::from_name(last).ok_or_else(|| {
            ChordError(format!("unknown key \"{last}\" (keys: {})", key_summary()))
        })?;
        let mut chord = Chord::new(key);
        for part in held {
            let modifier = KeyName::from_name(part)
                .and_then(KeyName::modifier)
                .ok_or_else(|| {
                    ChordError(format!(
                        "\"{part}\" is not a modifier: only SHIFT, CTRL, ALT and META go before the key"
                    ))
                })?;
            if chord.modifiers.contains(modifier) || key.modifier() == Some(modifier) {
                return Err(ChordError(format!("{} is held twice", modifier.name())));
            }
            chord = chord.with(modifier);
        }
        Ok(chord)
    }

    /// The canonical name: modifiers in [`Modifier::ALL`]'s order, then the key.
    pub fn name(self) -> String {
        let mut name = String::new();
        for modifier in self.modifiers.iter() {
            name.push_str(modifier.name());
            name.push('+');
        }
        name.push_str(self.key.name());
        name
    }

    /// What pressing it types into a field: the key's character, unless CTRL, ALT or META is held.
    pub fn typed(self) -> Option<&'static str> {
        let info = self.key.info();
        let commands = [Modifier::Ctrl, Modifier::Alt, Modifier::Meta]
            .into_iter()
            .any(|m| self.modifiers.contains(m));
        match (
            info.types,
            commands,
            self.modifiers.contains(Modifier::Shift),
        ) {
            (true, false, true) => Some(info.shifted),
            (true, false, false) => Some(info.key),
            _ => None,
        }
    }
}

impl fmt::Display for Chord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The keys in a line, grouped as the docs write them (`A-Z, 0-9, F1-F12, ENTER, ...`).
pub fn key_summary() -> String {
    let mut groups = vec!["A-Z".to_string(), "0-9".to_string(), "F1-F12".to_string()];
    groups.extend(
        KeyName::all()
            .map(KeyName::name)
            .filter(|name| {
                !(name.len() == 1 || (name.starts_with('F') && name[1..].parse::<u8>().is_ok()))
            })
            .map(str::to_string),
    );
    groups.join(", ")
}
