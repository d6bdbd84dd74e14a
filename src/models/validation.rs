//! Validating actions as pydantic v2 does in lax mode (an unmodified Python client sends them),
//! with failures in pydantic's error shape: `FieldError`, integer coercion, the field rules.

use super::*;

/// jiter refuses integers longer than this, sign included (CPython's int-string limit).
pub(super) const MAX_INT_DIGITS: usize = 4300;

/// Field names in declaration order; pydantic reports field errors in this order.
pub(super) const FIELDS: [&str; 6] = ["metadata", "op", "x", "y", "text", "dy"];

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
pub(super) struct IntBounds {
    ge: i64,
    upper: Upper,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Upper {
    Lt(i64),
    Le(i64),
}

pub(super) const X_BOUNDS: IntBounds = IntBounds {
    ge: 0,
    upper: Upper::Lt(VIEWPORT_WIDTH),
};
pub(super) const Y_BOUNDS: IntBounds = IntBounds {
    ge: 0,
    upper: Upper::Lt(VIEWPORT_HEIGHT),
};
pub(super) const DY_BOUNDS: IntBounds = IntBounds {
    ge: -MAX_SCROLL,
    upper: Upper::Le(MAX_SCROLL),
};

impl IntBounds {
    pub(super) const fn new(ge: i64, le: i64) -> IntBounds {
        IntBounds {
            ge,
            upper: Upper::Le(le),
        }
    }

    /// Checked in pydantic-core's order (upper before lower); at most one can fail anyway.
    fn check(self, field: &str, n: i128, input: &Value) -> Result<i64, FieldError> {
        self.check_at(vec![Value::from(field)], n, input)
    }

    /// `check` of a value at `loc` (an item of a list).
    pub(super) fn check_at(
        self,
        loc: Vec<Value>,
        n: i128,
        input: &Value,
    ) -> Result<i64, FieldError> {
        let error =
            |kind: &str, msg: String| FieldError::new(kind, loc.clone(), msg, input.clone());
        match self.upper {
            Upper::Le(le) if n > i128::from(le) => {
                return Err(error(
                    "less_than_equal",
                    format!("Input should be less than or equal to {le}"),
                ))
            }
            Upper::Lt(lt) if n >= i128::from(lt) => {
                return Err(error(
                    "less_than",
                    format!("Input should be less than {lt}"),
                ))
            }
            _ => {}
        }
        if n < i128::from(self.ge) {
            return Err(error(
                "greater_than_equal",
                format!("Input should be greater than or equal to {}", self.ge),
            ));
        }
        // In bounds, so it fits; the fallback only keeps this total.
        i64::try_from(n).map_err(|_| FieldError {
            loc: loc.clone(),
            ..IntError::ParsingSize.at("", input)
        })
    }

    /// The keywords pydantic emits for `ge`/`lt`/`le`.
    pub(super) fn schema(self, mut schema: Map<String, Value>) -> Value {
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
pub(super) enum IntError {
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

/// A value validated as pydantic v2's lax `int` (what FastAPI does to an `int` field of a request
/// body), with the error at `loc`. Python ints are unbounded: a value past `i64` comes back
/// saturated in `i128`, for the caller's range check.
pub fn pydantic_int(value: &Value, loc: Vec<Value>) -> Result<i128, FieldError> {
    lax_int(value).map_err(|error| FieldError {
        loc,
        ..error.at("", value)
    })
}

/// Pydantic lax-mode int coercion. Python ints are unbounded, so out-of-`i64` values are kept
/// (saturated in `i128`) and rejected by the range check, as pydantic does.
pub(super) fn lax_int(value: &Value) -> Result<i128, IntError> {
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

pub(super) fn float_as_int(f: f64) -> Result<i128, IntError> {
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
pub(super) fn str_as_int(s: &str) -> Result<i128, IntError> {
    match json_int(s.as_bytes()) {
        Ok(n) => return Ok(n),
        Err(JsonIntError::OutOfRange) => return Err(IntError::ParsingSize),
        Err(JsonIntError::Invalid) => {}
    }
    let cleaned = clean_int_str(s).ok_or(IntError::Parsing)?;
    json_int(cleaned.as_bytes()).map_err(|_| IntError::Parsing)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsonIntError {
    Invalid,
    OutOfRange,
}

/// jiter's `NumberInt::try_from`: `-?(0|[1-9][0-9]*)` spanning the whole input. A digit run
/// (sign included) longer than CPython's limit is out of range even if garbage follows it.
pub(super) fn json_int(bytes: &[u8]) -> Result<i128, JsonIntError> {
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
pub(super) fn clean_int_str(original: &str) -> Option<String> {
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
pub(super) fn strip_leading_zeros(s: &str) -> Option<&str> {
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
pub(super) fn strip_underscores(s: &str) -> Option<String> {
    if s.starts_with('_') || s.ends_with('_') || !s.contains('_') || s.contains("__") {
        None
    } else {
        Some(s.replace('_', ""))
    }
}

pub(super) fn model_type_error(input: &Value) -> FieldError {
    FieldError::new(
        "model_type",
        Vec::new(),
        "Input should be a valid dictionary or instance of BrowserAction",
        input.clone(),
    )
}

/// Pydantic's wording: "Input should be 'a', 'b' or 'c'".
pub(super) fn literal_message(names: &[&str]) -> String {
    let mut msg = String::from("Input should be ");
    for (i, name) in names.iter().enumerate() {
        if i + 1 == names.len() && i > 0 {
            msg.push_str(" or ");
        } else if i > 0 {
            msg.push_str(", ");
        }
        msg.push('\'');
        msg.push_str(name);
        msg.push('\'');
    }
    msg
}

/// The `op` literal's message: the ops `set` takes.
pub(super) fn op_literal_message(set: ActionSet) -> String {
    let names: Vec<&str> = set.ops().iter().map(|op| op.name()).collect();
    literal_message(&names)
}

pub(super) fn key_list() -> String {
    Key::ALL.map(Key::name).join(", ")
}

pub(super) fn too_long_error(input: &Value) -> FieldError {
    FieldError::field(
        "text",
        "string_too_long",
        format!("String should have at most {MAX_TEXT_CHARS} characters"),
        input.clone(),
    )
}

/// Records a field's error, or yields its value.
pub(super) fn collect<T>(errors: &mut Vec<FieldError>, result: Result<T, FieldError>) -> Option<T> {
    result.map_err(|e| errors.push(e)).ok()
}

pub(super) fn parse_optional_int(
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

pub(super) fn parse_int(
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

pub(super) fn parse_text(obj: &Map<String, Value>) -> Result<String, FieldError> {
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

pub(super) fn parse_metadata(obj: &Map<String, Value>) -> Result<Map<String, Value>, FieldError> {
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

pub(super) fn parse_op(
    obj: &Map<String, Value>,
    whole: &Value,
    set: ActionSet,
) -> Result<Op, FieldError> {
    match obj.get("op") {
        None => Err(FieldError::field(
            "op",
            "missing",
            "Field required",
            whole.clone(),
        )),
        Some(v) => v
            .as_str()
            .and_then(Op::from_name)
            .filter(|op| set.ops().contains(op))
            .ok_or_else(|| {
                FieldError::field("op", "literal_error", op_literal_message(set), v.clone())
            }),
    }
}

impl BrowserAction {
    /// Parse and validate a JSON value exactly as pydantic would (the model with every op); all
    /// errors at once.
    pub fn from_value(value: &Value) -> Result<Self, Vec<FieldError>> {
        Self::from_value_in(value, ActionSet::Full)
    }

    /// As `from_value`, for a server that takes `set`: the seed's, with the seed's fields alone
    /// (every other field is an extra input, every other op a literal error, as the seed says),
    /// or all.
    pub fn from_value_in(value: &Value, set: ActionSet) -> Result<Self, Vec<FieldError>> {
        let Some(obj) = value.as_object() else {
            return Err(vec![model_type_error(value)]);
        };
        let mut errors = Vec::new();
        let metadata = collect(&mut errors, parse_metadata(obj));
        let op = collect(&mut errors, parse_op(obj, value, set));
        let x = collect(&mut errors, parse_optional_int(obj, "x", X_BOUNDS));
        let y = collect(&mut errors, parse_optional_int(obj, "y", Y_BOUNDS));
        let text = collect(&mut errors, parse_text(obj));
        let dy = collect(&mut errors, parse_int(obj, "dy", DY_BOUNDS, 0));
        let added = match set {
            ActionSet::Seed => Some(Added::default()),
            ActionSet::Full => Added::parse(obj, &mut errors),
        };
        let known = |key: &str| {
            FIELDS.contains(&key) || (set == ActionSet::Full && ADDED_FIELDS.contains(&key))
        };
        // After the fields, like pydantic; in key order, as serde_json's map is sorted.
        errors.extend(obj.iter().filter(|(k, _)| !known(k)).map(|(k, v)| {
            FieldError::field(
                k,
                "extra_forbidden",
                "Extra inputs are not permitted",
                v.clone(),
            )
        }));
        let (Some(metadata), Some(op), Some(x), Some(y), Some(text), Some(dy), Some(added)) =
            (metadata, op, x, y, text, dy, added)
        else {
            return Err(errors);
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        // Pydantic runs the after-validator only once every field is valid.
        let seed = SeedFields { x, y, text, dy };
        let action = build(op, seed, added, set, value)?;
        Ok(BrowserAction { metadata, action })
    }

    /// Check ranges and the rules on an already-built action (the Rust client's, before it is
    /// sent): what the server would say of its wire form.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        Self::from_value(&self.to_value()).map(|_| ())
    }
}

pub(super) fn value_error(msg: String, input: Value) -> FieldError {
    FieldError::new(
        "value_error",
        Vec::new(),
        format!("Value error, {msg}"),
        input,
    )
}
