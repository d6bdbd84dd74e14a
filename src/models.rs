//! Typed models of the browser environment, mirroring the Python pydantic models of OpenEnv.
//!
//! Actions arrive from an unmodified Python client, so [`BrowserAction::from_value`] validates
//! them the way pydantic v2 does in lax mode and reports failures in pydantic's error shape.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

pub const VIEWPORT_WIDTH: i64 = 800;
pub const VIEWPORT_HEIGHT: i64 = 600;
/// Counted in chars (unicode scalar values), like Python's `len()`.
pub const MAX_TEXT_CHARS: usize = 2000;
pub const MAX_SCROLL: i64 = 1200;

/// jiter refuses integers longer than this, sign included (CPython's int-string limit).
const MAX_INT_DIGITS: usize = 4300;

/// Field names in declaration order; pydantic reports field errors in this order.
const FIELDS: [&str; 6] = ["metadata", "op", "x", "y", "text", "dy"];

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

/// One validation failure, in pydantic v2's error shape (serialized as {"type","loc","msg","input"}).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldError {
    #[serde(rename = "type")]
    pub kind: String,
    pub loc: Vec<Value>,
    pub msg: String,
    pub input: Value,
}

impl FieldError {
    pub fn new(kind: &str, loc: Vec<Value>, msg: impl Into<String>, input: Value) -> Self {
        FieldError {
            kind: kind.to_owned(),
            loc,
            msg: msg.into(),
            input,
        }
    }

    fn field(field: &str, kind: &str, msg: impl Into<String>, input: Value) -> Self {
        FieldError::new(kind, vec![Value::from(field)], msg, input)
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, part) in self.loc.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            match part {
                Value::String(s) => f.write_str(s)?,
                other => write!(f, "{other}")?,
            }
        }
        if !self.loc.is_empty() {
            f.write_str(": ")?;
        }
        f.write_str(&self.msg)
    }
}

impl std::error::Error for FieldError {}

/// Bounds of an integer field; one table drives both validation and the JSON schema.
#[derive(Debug, Clone, Copy)]
struct IntBounds {
    ge: i64,
    upper: Upper,
}

#[derive(Debug, Clone, Copy)]
enum Upper {
    Lt(i64),
    Le(i64),
}

const X_BOUNDS: IntBounds = IntBounds {
    ge: 0,
    upper: Upper::Lt(VIEWPORT_WIDTH),
};
const Y_BOUNDS: IntBounds = IntBounds {
    ge: 0,
    upper: Upper::Lt(VIEWPORT_HEIGHT),
};
const DY_BOUNDS: IntBounds = IntBounds {
    ge: -MAX_SCROLL,
    upper: Upper::Le(MAX_SCROLL),
};

impl IntBounds {
    /// Checked in pydantic-core's order (upper before lower); at most one can fail anyway.
    fn check(self, field: &str, n: i128, input: &Value) -> Result<i64, FieldError> {
        match self.upper {
            Upper::Le(le) if n > i128::from(le) => {
                return Err(FieldError::field(
                    field,
                    "less_than_equal",
                    format!("Input should be less than or equal to {le}"),
                    input.clone(),
                ))
            }
            Upper::Lt(lt) if n >= i128::from(lt) => {
                return Err(FieldError::field(
                    field,
                    "less_than",
                    format!("Input should be less than {lt}"),
                    input.clone(),
                ))
            }
            _ => {}
        }
        if n < i128::from(self.ge) {
            return Err(FieldError::field(
                field,
                "greater_than_equal",
                format!("Input should be greater than or equal to {}", self.ge),
                input.clone(),
            ));
        }
        // In bounds, so it fits; the fallback only keeps this total.
        i64::try_from(n).map_err(|_| IntError::ParsingSize.at(field, input))
    }

    /// The keywords pydantic emits for `ge`/`lt`/`le`.
    fn schema(self, mut schema: Map<String, Value>) -> Value {
        schema.insert("minimum".into(), self.ge.into());
        match self.upper {
            Upper::Lt(lt) => schema.insert("exclusiveMaximum".into(), lt.into()),
            Upper::Le(le) => schema.insert("maximum".into(), le.into()),
        };
        schema.insert("type".into(), "integer".into());
        Value::Object(schema)
    }
}

/// Why a value is not an integer, as pydantic's lax `int` validator words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IntError {
    Type,
    FromFloat,
    Parsing,
    ParsingSize,
    FiniteNumber,
}

impl IntError {
    fn at(self, field: &str, input: &Value) -> FieldError {
        let (kind, msg) = match self {
            IntError::Type => ("int_type", "Input should be a valid integer"),
            IntError::FromFloat => (
                "int_from_float",
                "Input should be a valid integer, got a number with a fractional part",
            ),
            IntError::Parsing => (
                "int_parsing",
                "Input should be a valid integer, unable to parse string as an integer",
            ),
            IntError::ParsingSize => (
                "int_parsing_size",
                "Unable to parse input string as an integer, exceeded maximum size",
            ),
            IntError::FiniteNumber => ("finite_number", "Input should be a finite number"),
        };
        FieldError::field(field, kind, msg, input.clone())
    }
}

/// Pydantic lax-mode int coercion. Python ints are unbounded, so out-of-`i64` values are kept
/// (saturated in `i128`) and rejected by the range check, as pydantic does.
fn lax_int(value: &Value) -> Result<i128, IntError> {
    match value {
        Value::Bool(b) => Ok(i128::from(*b)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i128::from(i))
            } else if let Some(u) = n.as_u64() {
                Ok(i128::from(u))
            } else {
                n.as_f64().map_or(Err(IntError::Type), float_as_int)
            }
        }
        Value::String(s) => str_as_int(s),
        _ => Err(IntError::Type),
    }
}

fn float_as_int(f: f64) -> Result<i128, IntError> {
    if !f.is_finite() {
        Err(IntError::FiniteNumber)
    } else if f % 1.0 != 0.0 {
        Err(IntError::FromFloat)
    } else if (i64::MIN as f64) < f && f < (i64::MAX as f64) {
        // Integral and strictly inside the i64 range, so the cast is exact.
        Ok(f as i128)
    } else {
        Err(IntError::ParsingSize)
    }
}

/// pydantic-core's `str_as_int`: try the string as a strict JSON integer, then once more after
/// `clean_int_str`. Its quirks (e.g. `"0-5"` is -5, `"12."` is refused) are kept on purpose.
fn str_as_int(s: &str) -> Result<i128, IntError> {
    match json_int(s.as_bytes()) {
        Ok(n) => return Ok(n),
        Err(JsonIntError::OutOfRange) => return Err(IntError::ParsingSize),
        Err(JsonIntError::Invalid) => {}
    }
    let cleaned = clean_int_str(s).ok_or(IntError::Parsing)?;
    json_int(cleaned.as_bytes()).map_err(|_| IntError::Parsing)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonIntError {
    Invalid,
    OutOfRange,
}

/// jiter's `NumberInt::try_from`: `-?(0|[1-9][0-9]*)` spanning the whole input. A digit run
/// (sign included) longer than CPython's limit is out of range even if garbage follows it.
fn json_int(bytes: &[u8]) -> Result<i128, JsonIntError> {
    let negative = bytes.first() == Some(&b'-');
    let start = usize::from(negative);
    let digits = bytes.get(start..).unwrap_or_default();
    match digits.first() {
        Some(b'0') if digits.len() == 1 => Ok(0),
        Some(b'1'..=b'9') => {
            let run = digits.iter().take_while(|b| b.is_ascii_digit()).count();
            if start + run > MAX_INT_DIGITS {
                Err(JsonIntError::OutOfRange)
            } else if run != digits.len() {
                Err(JsonIntError::Invalid)
            } else {
                // Saturating: beyond i64 only the sign matters, for the range check.
                let magnitude = digits.iter().fold(0i128, |acc, b| {
                    acc.saturating_mul(10).saturating_add(i128::from(b - b'0'))
                });
                Ok(if negative { -magnitude } else { magnitude })
            }
        }
        _ => Err(JsonIntError::Invalid),
    }
}

/// pydantic-core's `clean_int_str`: trim, drop a `+`, leading zeros and a `.0+` suffix, then
/// underscores between digits. `None` when nothing changed or the shape is hopeless.
fn clean_int_str(original: &str) -> Option<String> {
    let mut s = original.trim();
    if let Some(rest) = s.strip_prefix('+') {
        if rest.starts_with('-') {
            return None;
        }
        s = rest;
    }
    let mut negative = false;
    if let Some(rest) = s.strip_prefix('-') {
        if rest.starts_with(['-', '+']) {
            return None;
        }
        negative = true;
        s = rest;
    }
    s = strip_leading_zeros(s)?;
    if let Some((int, frac)) = s.split_once('.') {
        if !frac.is_empty() && frac.bytes().all(|b| b == b'0') {
            s = int;
        }
    }
    let sign = if negative { "-" } else { "" };
    if let Some(stripped) = strip_underscores(s) {
        return Some(format!("{sign}{stripped}"));
    }
    // Compared with the untrimmed original, so a lone sign removal counts as a change.
    if original.len() == s.len() {
        return None;
    }
    Some(format!("{sign}{s}"))
}

/// Leading zeros (and underscores among them) go, keeping one zero before a `.` or when the
/// string is all zeros; a string not starting with a digit or `-` is refused.
fn strip_leading_zeros(s: &str) -> Option<&str> {
    let mut chars = s.char_indices();
    match chars.next() {
        Some((_, '0')) => {}
        Some((_, '1'..='9' | '-')) => return Some(s),
        _ => return None,
    }
    for (i, c) in chars {
        match c {
            '0' | '_' => {}
            '1'..='9' | '-' => return s.get(i..),
            // The previous char is an ASCII '0' or '_', so `i - 1` is a char boundary.
            '.' => return s.get(i - 1..),
            _ => return None,
        }
    }
    s.get(s.len() - 1..)
}

/// Python's rule: underscores only singly and between characters.
fn strip_underscores(s: &str) -> Option<String> {
    if s.starts_with('_') || s.ends_with('_') || !s.contains('_') || s.contains("__") {
        None
    } else {
        Some(s.replace('_', ""))
    }
}

fn model_type_error(input: &Value) -> FieldError {
    FieldError::new(
        "model_type",
        Vec::new(),
        "Input should be a valid dictionary or instance of BrowserAction",
        input.clone(),
    )
}

/// Pydantic's wording: "Input should be 'a', 'b' or 'c'".
fn op_literal_message() -> String {
    let mut msg = String::from("Input should be ");
    for (i, op) in Op::ALL.iter().enumerate() {
        if i + 1 == Op::ALL.len() && i > 0 {
            msg.push_str(" or ");
        } else if i > 0 {
            msg.push_str(", ");
        }
        msg.push('\'');
        msg.push_str(op.name());
        msg.push('\'');
    }
    msg
}

fn key_list() -> String {
    Key::ALL.map(Key::name).join(", ")
}

fn too_long_error(input: &Value) -> FieldError {
    FieldError::field(
        "text",
        "string_too_long",
        format!("String should have at most {MAX_TEXT_CHARS} characters"),
        input.clone(),
    )
}

/// Records a field's error, or yields its value.
fn collect<T>(errors: &mut Vec<FieldError>, result: Result<T, FieldError>) -> Option<T> {
    result.map_err(|e| errors.push(e)).ok()
}

fn parse_optional_int(
    obj: &Map<String, Value>,
    field: &str,
    bounds: IntBounds,
) -> Result<Option<i64>, FieldError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let n = lax_int(v).map_err(|e| e.at(field, v))?;
            bounds.check(field, n, v).map(Some)
        }
    }
}

fn parse_int(
    obj: &Map<String, Value>,
    field: &str,
    bounds: IntBounds,
    default: i64,
) -> Result<i64, FieldError> {
    match obj.get(field) {
        None => Ok(default),
        Some(v) => {
            let n = lax_int(v).map_err(|e| e.at(field, v))?;
            bounds.check(field, n, v)
        }
    }
}

fn parse_text(obj: &Map<String, Value>) -> Result<String, FieldError> {
    match obj.get("text") {
        None => Ok(String::new()),
        Some(v @ Value::String(s)) if s.chars().count() > MAX_TEXT_CHARS => Err(too_long_error(v)),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(FieldError::field(
            "text",
            "string_type",
            "Input should be a valid string",
            other.clone(),
        )),
    }
}

fn parse_metadata(obj: &Map<String, Value>) -> Result<Map<String, Value>, FieldError> {
    match obj.get("metadata") {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(other) => Err(FieldError::field(
            "metadata",
            "dict_type",
            "Input should be a valid dictionary",
            other.clone(),
        )),
    }
}

fn parse_op(obj: &Map<String, Value>, whole: &Value) -> Result<Op, FieldError> {
    match obj.get("op") {
        None => Err(FieldError::field(
            "op",
            "missing",
            "Field required",
            whole.clone(),
        )),
        Some(v) => v.as_str().and_then(Op::from_name).ok_or_else(|| {
            FieldError::field("op", "literal_error", op_literal_message(), v.clone())
        }),
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

    /// Parse and validate a JSON value exactly as pydantic would; all errors at once.
    pub fn from_value(value: &Value) -> Result<Self, Vec<FieldError>> {
        let Some(obj) = value.as_object() else {
            return Err(vec![model_type_error(value)]);
        };
        let mut errors = Vec::new();
        let metadata = collect(&mut errors, parse_metadata(obj));
        let op = collect(&mut errors, parse_op(obj, value));
        let x = collect(&mut errors, parse_optional_int(obj, "x", X_BOUNDS));
        let y = collect(&mut errors, parse_optional_int(obj, "y", Y_BOUNDS));
        let text = collect(&mut errors, parse_text(obj));
        let dy = collect(&mut errors, parse_int(obj, "dy", DY_BOUNDS, 0));
        // After the fields, like pydantic; in key order, as serde_json's map is sorted.
        errors.extend(
            obj.iter()
                .filter(|(k, _)| !FIELDS.contains(&k.as_str()))
                .map(|(k, v)| {
                    FieldError::field(
                        k,
                        "extra_forbidden",
                        "Extra inputs are not permitted",
                        v.clone(),
                    )
                }),
        );
        let action = match (metadata, op, x, y, text, dy) {
            (Some(metadata), Some(op), Some(x), Some(y), Some(text), Some(dy))
                if errors.is_empty() =>
            {
                BrowserAction {
                    metadata,
                    op,
                    x,
                    y,
                    text,
                    dy,
                }
            }
            _ => return Err(errors),
        };
        // Pydantic runs the after-validator only once every field is valid.
        match action.rule_violation() {
            Some(msg) => Err(vec![value_error(msg, value.clone())]),
            None => Ok(action),
        }
    }

    /// Re-check field ranges and the cross-field rules on an already-built action (used by the
    /// Rust client before sending).
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errors = Vec::new();
        for (field, value, bounds) in [("x", self.x, X_BOUNDS), ("y", self.y, Y_BOUNDS)] {
            if let Some(v) = value {
                collect(
                    &mut errors,
                    bounds.check(field, i128::from(v), &Value::from(v)),
                );
            }
        }
        if self.text.chars().count() > MAX_TEXT_CHARS {
            errors.push(too_long_error(&Value::from(self.text.as_str())));
        }
        collect(
            &mut errors,
            DY_BOUNDS.check("dy", i128::from(self.dy), &Value::from(self.dy)),
        );
        if errors.is_empty() {
            if let Some(msg) = self.rule_violation() {
                errors.push(value_error(msg, self.to_value()));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
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

    /// The Python model's after-validator, without pydantic's "Value error, " prefix.
    fn rule_violation(&self) -> Option<String> {
        match self.op {
            Op::Click if self.x.is_none() || self.y.is_none() => {
                Some("click needs both x and y".to_owned())
            }
            Op::Type if self.text.is_empty() => Some("type needs non-empty text".to_owned()),
            Op::Key if Key::from_name(&self.text).is_none() => {
                Some(format!("key must be one of {}", key_list()))
            }
            _ => None,
        }
    }
}

fn value_error(msg: String, input: Value) -> FieldError {
    FieldError::new(
        "value_error",
        Vec::new(),
        format!("Value error, {msg}"),
        input,
    )
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrowserObservation {
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Base64-encoded PNG.
    pub screenshot: String,
    pub url: String,
    #[serde(default)]
    pub error: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StepResult {
    pub observation: BrowserObservation,
    pub reward: Option<f64>,
    pub done: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BrowserState {
    pub episode_id: Option<String>,
    #[serde(default)]
    pub step_count: u64,
}

fn metadata_schema() -> Value {
    json!({"additionalProperties": true, "default": {}, "title": "Metadata", "type": "object"})
}

fn nullable_int_schema(bounds: IntBounds, title: &str) -> Value {
    json!({
        "anyOf": [bounds.schema(Map::new()), {"type": "null"}],
        "default": null,
        "title": title,
    })
}

/// Shaped like pydantic's `BrowserAction.model_json_schema()`. The `text` description is our
/// addition: pydantic cannot express the after-validator, but callers need the key names.
pub fn action_schema() -> Value {
    let ops = Op::ALL.map(Op::name);
    let mut dy = Map::new();
    dy.insert("default".into(), 0.into());
    dy.insert("title".into(), "Dy".into());
    json!({
        "additionalProperties": false,
        "properties": {
            "metadata": metadata_schema(),
            "op": {"enum": ops, "title": "Op", "type": "string"},
            "x": nullable_int_schema(X_BOUNDS, "X"),
            "y": nullable_int_schema(Y_BOUNDS, "Y"),
            "text": {
                "default": "",
                "description": format!(
                    "Text to type (op=type, non-empty), key name (op=key, one of {}), \
                     or the answer (op=finish)",
                    key_list()
                ),
                "maxLength": MAX_TEXT_CHARS,
                "title": "Text",
                "type": "string",
            },
            "dy": DY_BOUNDS.schema(dy),
        },
        "required": ["op"],
        "title": "BrowserAction",
        "type": "object",
    })
}

/// Shaped like pydantic's `BrowserObservation.model_json_schema()`, including the inherited
/// `done`/`reward`, which travel beside the observation on the wire.
pub fn observation_schema() -> Value {
    json!({
        "additionalProperties": false,
        "properties": {
            "done": {"default": false, "title": "Done", "type": "boolean"},
            "reward": {
                "anyOf": [
                    {"type": "boolean"},
                    {"type": "integer"},
                    {"type": "number"},
                    {"type": "null"},
                ],
                "default": null,
                "title": "Reward",
            },
            "metadata": metadata_schema(),
            "screenshot": {"title": "Screenshot", "type": "string"},
            "url": {"title": "Url", "type": "string"},
            "error": {"default": "", "title": "Error", "type": "string"},
        },
        "required": ["screenshot", "url"],
        "title": "BrowserObservation",
        "type": "object",
    })
}

/// Shaped like pydantic's `BrowserState.model_json_schema()` (`extra="allow"`).
pub fn state_schema() -> Value {
    json!({
        "additionalProperties": true,
        "properties": {
            "episode_id": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": null,
                "title": "Episode Id",
            },
            "step_count": {"default": 0, "minimum": 0, "title": "Step Count", "type": "integer"},
        },
        "title": "BrowserState",
        "type": "object",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(value: Value) -> Vec<FieldError> {
        match BrowserAction::from_value(&value) {
            Ok(action) => panic!("expected errors for {value}, got {action:?}"),
            Err(errors) => errors,
        }
    }

    fn only_error(value: Value) -> FieldError {
        let mut errors = errors_of(value);
        assert_eq!(errors.len(), 1, "{errors:?}");
        errors.remove(0)
    }

    fn accepted(value: Value) -> BrowserAction {
        match BrowserAction::from_value(&value) {
            Ok(action) => action,
            Err(errors) => panic!("expected {value} to validate, got {errors:?}"),
        }
    }

    fn dy_of(input: Value) -> Result<i64, (String, String)> {
        BrowserAction::from_value(&json!({"op": "scroll", "dy": input}))
            .map(|a| a.dy)
            .map_err(|e| (e[0].kind.clone(), e[0].msg.clone()))
    }

    fn kinds(errors: &[FieldError]) -> Vec<(&str, Vec<Value>)> {
        errors
            .iter()
            .map(|e| (e.kind.as_str(), e.loc.clone()))
            .collect()
    }

    #[test]
    fn python_client_full_dump_is_accepted() {
        let dump =
            json!({"metadata": {}, "op": "scroll", "x": null, "y": null, "text": "", "dy": 500});
        let action = accepted(dump.clone());
        assert_eq!(action, BrowserAction::scroll(500));
        assert_eq!(action.to_value(), dump);
    }

    #[test]
    fn minimal_forms_are_accepted() {
        assert_eq!(accepted(json!({"op": "back"})), BrowserAction::back());
        assert_eq!(accepted(json!({"op": "wait"})), BrowserAction::wait());
        assert_eq!(accepted(json!({"op": "finish"})), BrowserAction::finish(""));
        assert_eq!(accepted(json!({"op": "scroll"})), BrowserAction::scroll(0));
        assert_eq!(
            accepted(json!({"op": "click", "x": 0, "y": 599})),
            BrowserAction::click(0, 599)
        );
        assert_eq!(
            accepted(json!({"op": "key", "text": "CTRL+A"})),
            BrowserAction::key(Key::CtrlA)
        );
        let with_meta = accepted(json!({"op": "wait", "metadata": {"k": [1, 2]}}));
        assert_eq!(with_meta.metadata.get("k"), Some(&json!([1, 2])));
    }

    #[test]
    fn non_object_is_model_type() {
        for input in [
            json!(5),
            json!(null),
            json!([]),
            json!("click"),
            json!(true),
        ] {
            let e = only_error(input.clone());
            assert_eq!(e.kind, "model_type");
            assert!(e.loc.is_empty());
            assert_eq!(
                e.msg,
                "Input should be a valid dictionary or instance of BrowserAction"
            );
            assert_eq!(e.input, input);
        }
    }

    #[test]
    fn missing_op_reports_whole_input() {
        let input = json!({"x": 3});
        let e = only_error(input.clone());
        assert_eq!(
            e,
            FieldError::new("missing", vec![json!("op")], "Field required", input)
        );
        assert_eq!(only_error(json!({})).input, json!({}));
    }

    #[test]
    fn bad_op_is_literal_error() {
        for op in [
            json!("CLICK"),
            json!("jump"),
            json!(1),
            json!(null),
            json!(["click"]),
        ] {
            let e = only_error(json!({"op": op}));
            assert_eq!(e.kind, "literal_error");
            assert_eq!(e.loc, vec![json!("op")]);
            assert_eq!(
                e.msg,
                "Input should be 'click', 'type', 'key', 'scroll', 'back', 'wait' or 'finish'"
            );
            assert_eq!(e.input, op);
        }
    }

    #[test]
    fn extra_keys_are_forbidden() {
        let e = only_error(json!({"op": "back", "answer": 42}));
        assert_eq!(
            e,
            FieldError::new(
                "extra_forbidden",
                vec![json!("answer")],
                "Extra inputs are not permitted",
                json!(42)
            )
        );
        // The inherited Observation fields are not action fields either.
        assert_eq!(
            only_error(json!({"op": "back", "done": false})).kind,
            "extra_forbidden"
        );
    }

    #[test]
    fn integers_are_coerced_like_pydantic_lax_mode() {
        assert_eq!(dy_of(json!(12)), Ok(12));
        assert_eq!(dy_of(json!(12.0)), Ok(12));
        assert_eq!(dy_of(json!(-0.0)), Ok(0));
        assert_eq!(dy_of(json!(1e3)), Ok(1000));
        assert_eq!(dy_of(json!(true)), Ok(1));
        assert_eq!(dy_of(json!(false)), Ok(0));
        for (s, n) in [
            ("12", 12),
            (" 12 ", 12),
            ("\u{a0}12\u{2003}", 12),
            ("+12", 12),
            ("-0012", -12),
            ("1_000", 1000),
            ("1_2.00", 12),
            ("12.000", 12),
            ("00.0", 0),
            ("0_0", 0),
        ] {
            assert_eq!(dy_of(json!(s)), Ok(n), "{s:?}");
        }
    }

    #[test]
    fn integer_errors_use_pydantic_types() {
        let int_type = (
            "int_type".to_owned(),
            "Input should be a valid integer".to_owned(),
        );
        assert_eq!(dy_of(json!(null)), Err(int_type.clone()));
        assert_eq!(dy_of(json!([1])), Err(int_type.clone()));
        assert_eq!(dy_of(json!({})), Err(int_type));
        assert_eq!(
            dy_of(json!(12.5)),
            Err((
                "int_from_float".to_owned(),
                "Input should be a valid integer, got a number with a fractional part".to_owned()
            ))
        );
        for s in [
            "12.5", "12.", "1e3", "0x10", "", "_10", "1__0", "10_", "+_1", "- 12", "--1", ".0",
            "12.0_0", "１２", "true",
        ] {
            assert_eq!(
                dy_of(json!(s)),
                Err((
                    "int_parsing".to_owned(),
                    "Input should be a valid integer, unable to parse string as an integer"
                        .to_owned()
                )),
                "{s:?}"
            );
        }
        for input in [json!(1e19), json!(-1e300), json!("9".repeat(4301))] {
            assert_eq!(
                dy_of(input).map_err(|e| e.0),
                Err("int_parsing_size".to_owned())
            );
        }
    }

    #[test]
    fn integer_string_quirks_follow_pydantic_core() {
        // Measured against pydantic-core 2.46: leading zeros are stripped before the sign.
        assert_eq!(dy_of(json!("0-52")), Ok(-52));
        assert_eq!(dy_of(json!("0__8")), Ok(8));
        assert_eq!(dy_of(json!("0-_14")), Ok(-14));
        assert_eq!(dy_of(json!("-00.00")), Ok(0));
        for s in ["+-1", "-+1", "0.", "+.0", "0x", "0_"] {
            assert_eq!(
                dy_of(json!(s)).map_err(|e| e.0),
                Err("int_parsing".into()),
                "{s:?}"
            );
        }
        // The 4300-digit limit counts a minus sign and only applies on the first attempt.
        let size = |s: String| dy_of(json!(s)).map_err(|e| e.0);
        assert_eq!(
            size(format!("-{}", "1".repeat(4300))),
            Err("int_parsing_size".into())
        );
        assert_eq!(
            size(format!("+{}", "1".repeat(4300))),
            Err("less_than_equal".into())
        );
        assert_eq!(
            size(format!("{}x", "1".repeat(4301))),
            Err("int_parsing_size".into())
        );
        let padded = format!("{}{}", "0".repeat(10), "1".repeat(4301));
        assert_eq!(size(padded), Err("int_parsing".into()));
    }

    #[test]
    fn range_errors() {
        let e = errors_of(json!({"op": "click", "x": 800, "y": -1}));
        assert_eq!(
            e,
            vec![
                FieldError::new(
                    "less_than",
                    vec![json!("x")],
                    "Input should be less than 800",
                    json!(800)
                ),
                FieldError::new(
                    "greater_than_equal",
                    vec![json!("y")],
                    "Input should be greater than or equal to 0",
                    json!(-1)
                ),
            ]
        );
        let e = only_error(json!({"op": "click", "x": 1, "y": 600}));
        assert_eq!(
            (e.kind.as_str(), e.msg.as_str()),
            ("less_than", "Input should be less than 600")
        );
        let e = only_error(json!({"op": "scroll", "dy": 1201}));
        assert_eq!(
            (e.kind.as_str(), e.msg.as_str()),
            (
                "less_than_equal",
                "Input should be less than or equal to 1200"
            )
        );
        // The input is echoed as sent, not as coerced.
        let e = only_error(json!({"op": "scroll", "dy": "-1201"}));
        assert_eq!(e.msg, "Input should be greater than or equal to -1200");
        assert_eq!(e.input, json!("-1201"));
        // Python ints are unbounded: huge values are range errors, not type errors.
        assert_eq!(
            only_error(json!({"op": "scroll", "dy": u64::MAX})).kind,
            "less_than_equal"
        );
        assert_eq!(
            only_error(json!({"op": "scroll", "dy": "-100000000000000000000"})).kind,
            "greater_than_equal"
        );
        assert_eq!(accepted(json!({"op": "scroll", "dy": -1200})).dy, -1200);
        assert_eq!(accepted(json!({"op": "scroll", "dy": 1200})).dy, 1200);
    }

    #[test]
    fn text_errors() {
        let e = only_error(json!({"op": "type", "text": 5}));
        assert_eq!(
            e,
            FieldError::new(
                "string_type",
                vec![json!("text")],
                "Input should be a valid string",
                json!(5)
            )
        );
        assert_eq!(
            only_error(json!({"op": "finish", "text": null})).kind,
            "string_type"
        );
        let long = "a".repeat(MAX_TEXT_CHARS + 1);
        let e = only_error(json!({"op": "type", "text": long}));
        assert_eq!(e.kind, "string_too_long");
        assert_eq!(e.msg, "String should have at most 2000 characters");
        assert_eq!(e.input, json!(long));
        // Counted in chars, not bytes.
        let wide = "é".repeat(MAX_TEXT_CHARS);
        assert_eq!(accepted(json!({"op": "type", "text": wide})).text, wide);
    }

    #[test]
    fn metadata_must_be_an_object() {
        for input in [json!([]), json!(null), json!("x")] {
            let e = only_error(json!({"op": "back", "metadata": input}));
            assert_eq!(
                e,
                FieldError::new(
                    "dict_type",
                    vec![json!("metadata")],
                    "Input should be a valid dictionary",
                    input
                )
            );
        }
    }

    #[test]
    fn cross_field_rules() {
        let input = json!({"op": "click", "x": 5});
        assert_eq!(
            only_error(input.clone()),
            FieldError::new(
                "value_error",
                vec![],
                "Value error, click needs both x and y",
                input
            )
        );
        assert_eq!(
            only_error(json!({"op": "click", "y": 5, "x": null})).msg,
            "Value error, click needs both x and y"
        );
        assert_eq!(
            only_error(json!({"op": "type", "text": ""})).msg,
            "Value error, type needs non-empty text"
        );
        for text in ["enter", "Enter", "", "F5", "CTRL+B"] {
            let input = json!({"op": "key", "text": text});
            let e = only_error(input.clone());
            assert_eq!(e.kind, "value_error");
            assert!(e.loc.is_empty());
            assert_eq!(
                e.msg,
                "Value error, key must be one of ENTER, TAB, ESCAPE, BACKSPACE, CTRL+A, UP, DOWN, LEFT, RIGHT"
            );
            assert_eq!(e.input, input);
        }
        for key in Key::ALL {
            assert_eq!(
                accepted(json!({"op": "key", "text": key.name()})).key_name(),
                Some(key)
            );
        }
        // Fields the rule does not mention are allowed, as in Python.
        assert!(BrowserAction::from_value(&json!({"op": "back", "x": 3, "text": "hi"})).is_ok());
    }

    #[test]
    fn cross_field_rules_wait_for_valid_fields() {
        let e = errors_of(json!({"op": "click", "x": 5, "dy": 9999}));
        assert_eq!(kinds(&e), vec![("less_than_equal", vec![json!("dy")])]);
        let e = errors_of(json!({"op": "type", "junk": 1}));
        assert_eq!(kinds(&e), vec![("extra_forbidden", vec![json!("junk")])]);
    }

    #[test]
    fn all_errors_are_reported_in_field_order() {
        let e = errors_of(json!({
            "zz": 1, "aa": 2, "dy": 2000, "text": 1, "y": 1.5, "x": "a", "op": "nope", "metadata": []
        }));
        assert_eq!(
            kinds(&e),
            vec![
                ("dict_type", vec![json!("metadata")]),
                ("literal_error", vec![json!("op")]),
                ("int_parsing", vec![json!("x")]),
                ("int_from_float", vec![json!("y")]),
                ("string_type", vec![json!("text")]),
                ("less_than_equal", vec![json!("dy")]),
                // serde_json's map is sorted, so extras come in key order.
                ("extra_forbidden", vec![json!("aa")]),
                ("extra_forbidden", vec![json!("zz")]),
            ]
        );
    }

    fn every_constructor() -> Vec<BrowserAction> {
        let mut all = vec![
            BrowserAction::click(0, 0),
            BrowserAction::click(799, 599),
            BrowserAction::type_text("hello, wörld"),
            BrowserAction::scroll(-1200),
            BrowserAction::scroll(1200),
            BrowserAction::back(),
            BrowserAction::wait(),
            BrowserAction::finish(""),
            BrowserAction::finish("42"),
        ];
        all.extend(Key::ALL.map(BrowserAction::key));
        all
    }

    #[test]
    fn constructors_round_trip_and_validate() {
        for action in every_constructor() {
            let value = action.to_value();
            assert_eq!(BrowserAction::from_value(&value), Ok(action.clone()));
            assert_eq!(action.validate(), Ok(()));
            assert_eq!(serde_json::to_value(&action).ok(), Some(value.clone()));
            let via_serde: Option<BrowserAction> = serde_json::from_value(value.clone()).ok();
            assert_eq!(via_serde, Some(action.clone()));
            let obj = value.as_object().map(|m| m.len());
            assert_eq!(obj, Some(6), "every field is dumped: {value}");
        }
    }

    #[test]
    fn to_value_matches_model_dump() {
        assert_eq!(
            BrowserAction::click(3, 4).to_value(),
            json!({"metadata": {}, "op": "click", "x": 3, "y": 4, "text": "", "dy": 0})
        );
        assert_eq!(
            BrowserAction::key(Key::Enter).to_value(),
            json!({"metadata": {}, "op": "key", "x": null, "y": null, "text": "ENTER", "dy": 0})
        );
    }

    #[test]
    fn validate_rechecks_ranges_and_rules() {
        let bad = BrowserAction {
            x: Some(800),
            y: Some(-5),
            dy: 5000,
            text: "x".repeat(MAX_TEXT_CHARS + 1),
            ..BrowserAction::click(0, 0)
        };
        let e = bad.validate().err().unwrap_or_default();
        assert_eq!(
            kinds(&e),
            vec![
                ("less_than", vec![json!("x")]),
                ("greater_than_equal", vec![json!("y")]),
                ("string_too_long", vec![json!("text")]),
                ("less_than_equal", vec![json!("dy")]),
            ]
        );
        let no_y = BrowserAction {
            y: None,
            ..BrowserAction::click(1, 1)
        };
        let e = no_y.validate().err().unwrap_or_default();
        assert_eq!(kinds(&e), vec![("value_error", vec![])]);
        assert_eq!(e[0].input, no_y.to_value());
        assert!(BrowserAction::type_text("").validate().is_err());
        let bad_key = BrowserAction {
            text: "enter".into(),
            ..BrowserAction::key(Key::Enter)
        };
        assert!(bad_key.validate().is_err());
        assert_eq!(bad_key.key_name(), None);
    }

    #[test]
    fn key_name_only_for_key_actions() {
        assert_eq!(BrowserAction::key(Key::Left).key_name(), Some(Key::Left));
        assert_eq!(BrowserAction::type_text("ENTER").key_name(), None);
        assert_eq!(BrowserAction::finish("TAB").key_name(), None);
    }

    #[test]
    fn names_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::from_name(op.name()), Some(op));
            assert_eq!(serde_json::to_value(op).ok(), Some(json!(op.name())));
        }
        for key in Key::ALL {
            assert_eq!(Key::from_name(key.name()), Some(key));
        }
        assert_eq!(Op::from_name("Click"), None);
        assert_eq!(Key::from_name("ctrl+a"), None);
        assert_eq!(Key::CtrlA.name(), "CTRL+A");
    }

    #[test]
    fn serde_deserialize_rejects_unknown_fields() {
        let r: Result<BrowserAction, _> = serde_json::from_value(json!({"op": "back", "zz": 1}));
        assert!(r.is_err());
    }

    #[test]
    fn action_schema_matches_validator() {
        let schema = action_schema();
        let props = &schema["properties"];
        let ops: Vec<Value> = Op::ALL.iter().map(|op| json!(op.name())).collect();
        assert_eq!(props["op"]["enum"], Value::Array(ops));
        assert_eq!(schema["required"], json!(["op"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(
            props["x"]["anyOf"],
            json!([{"exclusiveMaximum": 800, "minimum": 0, "type": "integer"}, {"type": "null"}])
        );
        assert_eq!(props["y"]["anyOf"][0]["exclusiveMaximum"], json!(600));
        assert_eq!(props["x"]["default"], Value::Null);
        assert_eq!(
            props["dy"],
            json!({"default": 0, "maximum": 1200, "minimum": -1200, "title": "Dy", "type": "integer"})
        );
        assert_eq!(props["text"]["maxLength"], json!(2000));
        let description = props["text"]["description"].as_str().unwrap_or_default();
        for key in Key::ALL {
            assert!(description.contains(key.name()), "{description}");
        }
        assert_eq!(
            props["metadata"],
            json!({"additionalProperties": true, "default": {}, "title": "Metadata", "type": "object"})
        );
    }

    #[test]
    fn observation_and_state_schemas() {
        let obs = observation_schema();
        assert_eq!(obs["required"], json!(["screenshot", "url"]));
        assert_eq!(obs["properties"]["error"]["default"], json!(""));
        assert_eq!(
            obs["properties"]["reward"]["anyOf"]
                .as_array()
                .map(Vec::len),
            Some(4)
        );
        let state = state_schema();
        assert_eq!(state["additionalProperties"], json!(true));
        assert_eq!(state["properties"]["step_count"]["minimum"], json!(0));
        assert_eq!(state["title"], json!("BrowserState"));
    }

    #[test]
    fn field_error_serializes_in_pydantic_shape() {
        let e = FieldError::new(
            "less_than",
            vec![json!("x")],
            "Input should be less than 800",
            json!(900),
        );
        assert_eq!(
            serde_json::to_value(&e).ok(),
            Some(
                json!({"type": "less_than", "loc": ["x"], "msg": "Input should be less than 800", "input": 900})
            )
        );
        let back: Option<FieldError> = serde_json::from_value(json!({
            "type": "missing", "loc": ["op"], "msg": "Field required", "input": {}
        }))
        .ok();
        assert_eq!(back.map(|e| e.kind), Some("missing".to_owned()));
    }

    #[test]
    fn field_error_display() {
        let e = FieldError::new(
            "less_than",
            vec![json!("x")],
            "Input should be less than 800",
            json!(900),
        );
        assert_eq!(e.to_string(), "x: Input should be less than 800");
        let nested = FieldError::new("t", vec![json!("a"), json!(0)], "m", json!(null));
        assert_eq!(nested.to_string(), "a.0: m");
        let root = FieldError::new("value_error", vec![], "Value error, boom", json!({}));
        assert_eq!(root.to_string(), "Value error, boom");
    }

    #[test]
    fn observation_and_state_serde() {
        let obs: Option<BrowserObservation> =
            serde_json::from_value(json!({"screenshot": "iVBOR", "url": "about:blank"})).ok();
        assert_eq!(
            obs,
            Some(BrowserObservation {
                metadata: Map::new(),
                screenshot: "iVBOR".into(),
                url: "about:blank".into(),
                error: String::new(),
            })
        );
        let state: Option<BrowserState> =
            serde_json::from_value(json!({"episode_id": null, "step_count": 3, "extra": 1})).ok();
        assert_eq!(
            state,
            Some(BrowserState {
                episode_id: None,
                step_count: 3
            })
        );
        let empty: Option<BrowserState> = serde_json::from_value(json!({})).ok();
        assert_eq!(empty, Some(BrowserState::default()));
    }
}
