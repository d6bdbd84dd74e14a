//! Actions: the operations, the seed's key names, and `BrowserAction`: the action as one
//! [`Action`] (a variant per op, with its own fields), validated once from the wire.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Click,
    Type,
    Key,
    Scroll,
    Back,
    Wait,
    Finish,
    Move,
    Drag,
    MouseDown,
    MouseUp,
    Press,
    Select,
    Forward,
    Goto,
}

impl Op {
    /// Every op: the seed's seven in the order of its Python `Literal` (which fixes the order in
    /// messages and the schema), then this server's additions.
    pub const ALL: [Op; 15] = [
        Op::Click,
        Op::Type,
        Op::Key,
        Op::Scroll,
        Op::Back,
        Op::Wait,
        Op::Finish,
        Op::Move,
        Op::Drag,
        Op::MouseDown,
        Op::MouseUp,
        Op::Press,
        Op::Select,
        Op::Forward,
        Op::Goto,
    ];

    /// The seed's seven (`BROWSER_ACTIONS=seed` takes these alone).
    pub const SEED: [Op; 7] = [
        Op::Click,
        Op::Type,
        Op::Key,
        Op::Scroll,
        Op::Back,
        Op::Wait,
        Op::Finish,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::Click => "click",
            Op::Type => "type",
            Op::Key => "key",
            Op::Scroll => "scroll",
            Op::Back => "back",
            Op::Wait => "wait",
            Op::Finish => "finish",
            Op::Move => "move",
            Op::Drag => "drag",
            Op::MouseDown => "mouse_down",
            Op::MouseUp => "mouse_up",
            Op::Press => "press",
            Op::Select => "select",
            Op::Forward => "forward",
            Op::Goto => "goto",
        }
    }

    /// Exact match, like a pydantic `Literal`.
    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == s)
    }

    /// One of the seed's seven.
    pub fn is_seed(self) -> bool {
        Op::SEED.contains(&self)
    }

    /// The wire fields this op acts on (besides `op` and `metadata`). The seed's ops also take
    /// the seed's other fields and ignore them, as the seed does; nothing else takes a field it
    /// does not act on.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            Op::Click => &["x", "y", "button", "count", "modifiers"],
            Op::Type | Op::Key | Op::Finish => &["text"],
            Op::Scroll => &["x", "y", "dy", "dx"],
            Op::Back | Op::Wait | Op::Forward => &[],
            Op::Move => &["x", "y"],
            Op::Drag => &["path", "button", "modifiers"],
            Op::MouseDown | Op::MouseUp => &["x", "y", "button"],
            Op::Press => &["text", "repeat"],
            Op::Select => &["x", "y", "text"],
            Op::Goto => &["url"],
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which actions a server takes: the seed's seven with the seed's fields alone
/// (`BROWSER_ACTIONS=seed`), or all of them (the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ActionSet {
    Seed,
    #[default]
    Full,
}

impl ActionSet {
    pub const ALL: [ActionSet; 2] = [ActionSet::Seed, ActionSet::Full];

    pub fn ops(self) -> &'static [Op] {
        match self {
            ActionSet::Seed => &Op::SEED,
            ActionSet::Full => &Op::ALL,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ActionSet::Seed => "seed",
            ActionSet::Full => "full",
        }
    }

    pub fn from_name(name: &str) -> Option<ActionSet> {
        ActionSet::ALL.into_iter().find(|set| set.name() == name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    Enter,
    Tab,
    Escape,
    Backspace,
    CtrlA,
    Up,
    Down,
    Left,
    Right,
}

impl Key {
    /// In the order the Python validator lists them in its error message.
    pub const ALL: [Key; 9] = [
        Key::Enter,
        Key::Tab,
        Key::Escape,
        Key::Backspace,
        Key::CtrlA,
        Key::Up,
        Key::Down,
        Key::Left,
        Key::Right,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Key::Enter => "ENTER",
            Key::Tab => "TAB",
            Key::Escape => "ESCAPE",
            Key::Backspace => "BACKSPACE",
            Key::CtrlA => "CTRL+A",
            Key::Up => "UP",
            Key::Down => "DOWN",
            Key::Left => "LEFT",
            Key::Right => "RIGHT",
        }
    }

    /// Exact and case-sensitive, like the Python validator.
    pub fn from_name(s: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|key| key.name() == s)
    }

    /// The same key as a chord of `press` (every seed key is one: its name parses as one).
    pub fn chord(self) -> Chord {
        // Every seed key's name is a chord of the keyboard (a test holds them to it).
        Chord::parse(self.name()).unwrap_or(Chord::new(KeyName::default()))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mouse button (`button`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MouseButton {
    #[default]
    Left,
    Right,
    Middle,
}

impl MouseButton {
    pub const ALL: [MouseButton; 3] = [MouseButton::Left, MouseButton::Right, MouseButton::Middle];

    pub fn name(self) -> &'static str {
        match self {
            MouseButton::Left => "left",
            MouseButton::Right => "right",
            MouseButton::Middle => "middle",
        }
    }

    pub fn from_name(name: &str) -> Option<MouseButton> {
        MouseButton::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// A pixel of the 800x600 screenshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Point {
    pub x: i64,
    pub y: i64,
}

impl Point {
    pub fn new(x: i64, y: i64) -> Point {
        Point { x, y }
    }
}

/// One action, with the fields its op acts on. Matched without a catch-all arm everywhere, so a
/// new op does not compile until every place that handles actions handles it.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `count` 2 is a double click, 3 a triple click; `modifiers` are held during it.
    Click {
        at: Point,
        button: MouseButton,
        count: u8,
        modifiers: Modifiers,
    },
    Type {
        text: String,
    },
    Key {
        key: Key,
    },
    /// The wheel turns at `at`, else at the last clicked point (the viewport's centre before any).
    Scroll {
        dx: i64,
        dy: i64,
        at: Option<Point>,
    },
    Back,
    Wait,
    Finish {
        answer: String,
    },
    /// The pointer moves to `at` (hover).
    Move {
        at: Point,
    },
    /// Press at the first point, move through the others, release at the last.
    Drag {
        path: Vec<Point>,
        button: MouseButton,
        modifiers: Modifiers,
    },
    MouseDown {
        at: Point,
        button: MouseButton,
    },
    MouseUp {
        at: Point,
        button: MouseButton,
    },
    /// A key or chord, pressed `repeat` times.
    Press {
        chord: Chord,
        repeat: u8,
    },
    /// The option labelled `label` of the `<select>` under `at`.
    Select {
        at: Point,
        label: String,
    },
    Forward,
    Goto {
        url: String,
    },
}

impl Action {
    pub fn op(&self) -> Op {
        match self {
            Action::Click { .. } => Op::Click,
            Action::Type { .. } => Op::Type,
            Action::Key { .. } => Op::Key,
            Action::Scroll { .. } => Op::Scroll,
            Action::Back => Op::Back,
            Action::Wait => Op::Wait,
            Action::Finish { .. } => Op::Finish,
            Action::Move { .. } => Op::Move,
            Action::Drag { .. } => Op::Drag,
            Action::MouseDown { .. } => Op::MouseDown,
            Action::MouseUp { .. } => Op::MouseUp,
            Action::Press { .. } => Op::Press,
            Action::Select { .. } => Op::Select,
            Action::Forward => Op::Forward,
            Action::Goto { .. } => Op::Goto,
        }
    }

    /// The point an action is about (its first, for a drag): where its element is read.
    pub fn point(&self) -> Option<Point> {
        match self {
            Action::Click { at, .. }
            | Action::Move { at }
            | Action::MouseDown { at, .. }
            | Action::MouseUp { at, .. }
            | Action::Select { at, .. } => Some(*at),
            Action::Drag { path, .. } => path.first().copied(),
            Action::Scroll { at, .. } => *at,
            Action::Type { .. }
            | Action::Key { .. }
            | Action::Back
            | Action::Wait
            | Action::Finish { .. }
            | Action::Press { .. }
            | Action::Forward
            | Action::Goto { .. } => None,
        }
    }

    /// The text a person's secret may be in (`secret_text_mut`).
    pub fn secret_text(&self) -> Option<&str> {
        match self {
            Action::Type { text } | Action::Select { label: text, .. } => Some(text),
            Action::Click { .. }
            | Action::Key { .. }
            | Action::Scroll { .. }
            | Action::Back
            | Action::Wait
            | Action::Finish { .. }
            | Action::Move { .. }
            | Action::Drag { .. }
            | Action::MouseDown { .. }
            | Action::MouseUp { .. }
            | Action::Press { .. }
            | Action::Forward
            | Action::Goto { .. } => None,
        }
    }

    /// The text a person's secret may be in, when it is one (what was typed, the chord pressed,
    /// the option chosen): what outlets show hidden (`browserenv::secrets`).
    pub fn secret_text_mut(&mut self) -> Option<&mut String> {
        match self {
            Action::Type { text } | Action::Select { label: text, .. } => Some(text),
            Action::Click { .. }
            | Action::Key { .. }
            | Action::Scroll { .. }
            | Action::Back
            | Action::Wait
            | Action::Finish { .. }
            | Action::Move { .. }
            | Action::Drag { .. }
            | Action::MouseDown { .. }
            | Action::MouseUp { .. }
            | Action::Press { .. }
            | Action::Forward
            | Action::Goto { .. } => None,
        }
    }
}

/// One action as on the wire: the action and the `metadata` every action may carry.
#[derive(Debug, Clone, PartialEq)]
pub struct BrowserAction {
    pub metadata: Map<String, Value>,
    pub action: Action,
}

impl From<Action> for BrowserAction {
    fn from(action: Action) -> Self {
        BrowserAction {
            metadata: Map::new(),
            action,
        }
    }
}

impl BrowserAction {
    pub fn op(&self) -> Op {
        self.action.op()
    }

    pub fn click(x: i64, y: i64) -> Self {
        Self::click_with(x, y, MouseButton::Left, 1, Modifiers::NONE)
    }

    /// A click with `button`, `count` (2: double, 3: triple) and `modifiers` held.
    pub fn click_with(
        x: i64,
        y: i64,
        button: MouseButton,
        count: u8,
        modifiers: Modifiers,
    ) -> Self {
        Action::Click {
            at: Point::new(x, y),
            button,
            count,
            modifiers,
        }
        .into()
    }

    pub fn double_click(x: i64, y: i64) -> Self {
        Self::click_with(x, y, MouseButton::Left, 2, Modifiers::NONE)
    }

    pub fn right_click(x: i64, y: i64) -> Self {
        Self::click_with(x, y, MouseButton::Right, 1, Modifiers::NONE)
    }

    pub fn type_text(text: impl Into<String>) -> Self {
        Action::Type { text: text.into() }.into()
    }

    pub fn key(key: Key) -> Self {
        Action::Key { key }.into()
    }

    pub fn scroll(dy: i64) -> Self {
        Action::Scroll {
            dx: 0,
            dy,
            at: None,
        }
        .into()
    }

    /// The wheel turned by (`dx`, `dy`) where the pointer rests (the last point it went to).
    pub fn scroll_at_pointer(dx: i64, dy: i64) -> Self {
        Action::Scroll { dx, dy, at: None }.into()
    }

    /// The wheel turned by (`dx`, `dy`) at (`x`, `y`): an inner scrollable box there scrolls.
    pub fn scroll_at(x: i64, y: i64, dx: i64, dy: i64) -> Self {
        Action::Scroll {
            dx,
            dy,
            at: Some(Point::new(x, y)),
        }
        .into()
    }

    pub fn back() -> Self {
        Action::Back.into()
    }

    pub fn wait() -> Self {
        Action::Wait.into()
    }

    /// The answer goes in `text` and may be empty.
    pub fn finish(answer: impl Into<String>) -> Self {
        Action::Finish {
            answer: answer.into(),
        }
        .into()
    }

    /// The pointer moves to (`x`, `y`) (hover).
    pub fn move_to(x: i64, y: i64) -> Self {
        Action::Move {
            at: Point::new(x, y),
        }
        .into()
    }

    /// A left-button drag through `path` (2 to 64 points).
    pub fn drag(path: impl IntoIterator<Item = (i64, i64)>) -> Self {
        Self::drag_with(path, MouseButton::Left, Modifiers::NONE)
    }

    pub fn drag_with(
        path: impl IntoIterator<Item = (i64, i64)>,
        button: MouseButton,
        modifiers: Modifiers,
    ) -> Self {
        Action::Drag {
            path: path.into_iter().map(|(x, y)| Point::new(x, y)).collect(),
            button,
            modifiers,
        }
        .into()
    }

    pub fn mouse_down(x: i64, y: i64, button: MouseButton) -> Self {
        Action::MouseDown {
            at: Point::new(x, y),
            button,
        }
        .into()
    }

    pub fn mouse_up(x: i64, y: i64, button: MouseButton) -> Self {
        Action::MouseUp {
            at: Point::new(x, y),
            button,
        }
        .into()
    }

    pub fn press(chord: Chord) -> Self {
        Self::press_repeat(chord, 1)
    }

    /// `chord` pressed `repeat` times (1..=20).
    pub fn press_repeat(chord: Chord, repeat: u8) -> Self {
        Action::Press { chord, repeat }.into()
    }

    /// A chord by name (`"SHIFT+TAB"`), or why it is none.
    pub fn press_named(chord: &str) -> Result<Self, ChordError> {
        Chord::parse(chord).map(Self::press)
    }

    pub fn select(x: i64, y: i64, label: impl Into<String>) -> Self {
        Action::Select {
            at: Point::new(x, y),
            label: label.into(),
        }
        .into()
    }

    pub fn forward() -> Self {
        Action::Forward.into()
    }

    pub fn goto(url: impl Into<String>) -> Self {
        Action::Goto { url: url.into() }.into()
    }

    /// The key of a key action.
    pub fn key_name(&self) -> Option<Key> {
        match self.action {
            Action::Key { key } => Some(key),
            _ => None,
        }
    }

    /// Serialized like pydantic `model_dump()` of the seed's model for the seed's ops (every seed
    /// field, explicit nulls, `"metadata": {}`), plus the fields of this server's additions that
    /// the action sets (a seed action's dump is the seed's, so a seed server takes it).
    pub fn to_value(&self) -> Value {
        let (point, text, dy) = self.seed_fields();
        let mut map = Map::new();
        map.insert("metadata".into(), Value::Object(self.metadata.clone()));
        map.insert("op".into(), self.op().name().into());
        map.insert("x".into(), point.map(|p| p.x).into());
        map.insert("y".into(), point.map(|p| p.y).into());
        map.insert("text".into(), text.into());
        map.insert("dy".into(), dy.into());
        map.extend(self.added_fields());
        Value::Object(map)
    }

    /// The seed's fields of this action: its point, its text and its `dy`.
    fn seed_fields(&self) -> (Option<Point>, String, i64) {
        match &self.action {
            Action::Click { at, .. }
            | Action::Move { at }
            | Action::MouseDown { at, .. }
            | Action::MouseUp { at, .. } => (Some(*at), String::new(), 0),
            Action::Type { text } => (None, text.clone(), 0),
            Action::Key { key } => (None, key.name().to_string(), 0),
            Action::Scroll { dy, at, .. } => (*at, String::new(), *dy),
            Action::Back
            | Action::Wait
            | Action::Forward
            | Action::Drag { .. }
            | Action::Goto { .. } => (None, String::new(), 0),
            Action::Finish { answer } => (None, answer.clone(), 0),
            Action::Press { chord, .. } => (None, chord.name(), 0),
            Action::Select { at, label } => (Some(*at), label.clone(), 0),
        }
    }

    /// The added fields this action sets to other than their defaults, in the wire's order.
    fn added_fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        let mut put = |name: &str, value: Value| {
            fields.insert(name.into(), value);
        };
        let button =
            |button: MouseButton| (button != MouseButton::Left).then(|| button.name().into());
        let held = |modifiers: Modifiers| (!modifiers.is_empty()).then(|| modifiers.to_value());
        match &self.action {
            Action::Click {
                button: b,
                count,
                modifiers,
                ..
            } => {
                button(*b).into_iter().for_each(|b| put("button", b));
                if *count != 1 {
                    put("count", (*count).into());
                }
                held(*modifiers)
                    .into_iter()
                    .for_each(|m| put("modifiers", m));
            }
            Action::Scroll { dx, .. } if *dx != 0 => put("dx", (*dx).into()),
            Action::Drag {
                path,
                button: b,
                modifiers,
            } => {
                button(*b).into_iter().for_each(|b| put("button", b));
                held(*modifiers)
                    .into_iter()
                    .for_each(|m| put("modifiers", m));
                put(
                    "path",
                    Value::Array(path.iter().map(|p| json!([p.x, p.y])).collect()),
                );
            }
            Action::MouseDown { button: b, .. } | Action::MouseUp { button: b, .. } => {
                button(*b).into_iter().for_each(|b| put("button", b));
            }
            Action::Press { repeat, .. } if *repeat != 1 => put("repeat", (*repeat).into()),
            Action::Goto { url } => put("url", url.as_str().into()),
            Action::Scroll { .. }
            | Action::Press { .. }
            | Action::Type { .. }
            | Action::Key { .. }
            | Action::Back
            | Action::Wait
            | Action::Finish { .. }
            | Action::Move { .. }
            | Action::Select { .. }
            | Action::Forward => {}
        }
        fields
    }
}

impl Serialize for BrowserAction {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for BrowserAction {
    /// Validated as the server validates (every op); the errors in pydantic's words.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        BrowserAction::from_value(&value).map_err(|errors| {
            let words: Vec<String> = errors.iter().map(ToString::to_string).collect();
            serde::de::Error::custom(words.join("; "))
        })
    }
}
