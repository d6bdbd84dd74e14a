//! Actions: the operations, the key names, and `BrowserAction` with its constructors.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Click,
    Type,
    Key,
    Scroll,
    Back,
    Wait,
    Finish,
}

impl Op {
    /// In the order of the Python `Literal`, which fixes the order in messages and the schema.
    pub const ALL: [Op; 7] = [
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
        }
    }

    /// Exact match, like a pydantic `Literal`.
    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == s)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserAction {
    #[serde(default)]
    pub metadata: Map<String, Value>,
    pub op: Op,
    #[serde(default)]
    pub x: Option<i64>,
    #[serde(default)]
    pub y: Option<i64>,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub dy: i64,
}

impl BrowserAction {
    fn with_op(op: Op) -> Self {
        BrowserAction {
            metadata: Map::new(),
            op,
            x: None,
            y: None,
            text: String::new(),
            dy: 0,
        }
    }

    pub fn click(x: i64, y: i64) -> Self {
        BrowserAction {
            x: Some(x),
            y: Some(y),
            ..Self::with_op(Op::Click)
        }
    }

    pub fn type_text(text: impl Into<String>) -> Self {
        BrowserAction {
            text: text.into(),
            ..Self::with_op(Op::Type)
        }
    }

    pub fn key(key: Key) -> Self {
        BrowserAction {
            text: key.name().to_owned(),
            ..Self::with_op(Op::Key)
        }
    }

    pub fn scroll(dy: i64) -> Self {
        BrowserAction {
            dy,
            ..Self::with_op(Op::Scroll)
        }
    }

    pub fn back() -> Self {
        Self::with_op(Op::Back)
    }

    pub fn wait() -> Self {
        Self::with_op(Op::Wait)
    }

    /// The answer goes in `text` and may be empty.
    pub fn finish(answer: impl Into<String>) -> Self {
        BrowserAction {
            text: answer.into(),
            ..Self::with_op(Op::Finish)
        }
    }
    /// The key named by `text` for a key action.
    pub fn key_name(&self) -> Option<Key> {
        match self.op {
            Op::Key => Key::from_name(&self.text),
            _ => None,
        }
    }

    /// Serialized like pydantic `model_dump()`: every field, explicit nulls, `"metadata": {}`.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("metadata".into(), Value::Object(self.metadata.clone()));
        map.insert("op".into(), self.op.name().into());
        map.insert("x".into(), self.x.into());
        map.insert("y".into(), self.y.into());
        map.insert("text".into(), self.text.as_str().into());
        map.insert("dy".into(), self.dy.into());
        Value::Object(map)
    }
}
