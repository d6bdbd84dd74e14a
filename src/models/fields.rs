//! The fields this server adds to the seed's action (`button`, `count`, `modifiers`, `path`,
//! `dx`, `repeat`, `url`), validated as pydantic validates the Python model's
//! (`python/browserenv/models.py`), and the after-rule that makes one [`Action`] of the fields:
//! which op takes which field, what each op needs.

use super::*;

/// The added fields, in declaration order (after the seed's): pydantic reports in this order.
pub(super) const ADDED_FIELDS: [&str; 7] = [
    "dx",
    "button",
    "count",
    "modifiers",
    "path",
    "repeat",
    "url",
];

/// The most points of a drag's path, the fewest.
pub const MAX_PATH_POINTS: usize = 64;
pub const MIN_PATH_POINTS: usize = 2;
/// The most times one `press` repeats its chord.
pub const MAX_REPEAT: i64 = 20;
/// The most clicks of one `click` (3: a triple click).
pub const MAX_CLICK_COUNT: i64 = 3;
/// The most characters of a `goto` URL.
pub const MAX_URL_CHARS: usize = 8192;
/// The most modifiers of one list (each at most once is meant; repeats are taken as one).
pub const MAX_MODIFIERS: usize = 4;

pub(super) const COUNT_BOUNDS: IntBounds = IntBounds::new(1, MAX_CLICK_COUNT);
pub(super) const REPEAT_BOUNDS: IntBounds = IntBounds::new(1, MAX_REPEAT);

/// The seed's fields, validated.
pub(super) struct SeedFields {
    pub x: Option<i64>,
    pub y: Option<i64>,
    pub text: String,
    pub dy: i64,
}

/// The added fields, validated; `None` is absent or null.
#[derive(Debug, Default)]
pub(super) struct Added {
    dx: Option<i64>,
    button: Option<MouseButton>,
    count: Option<i64>,
    modifiers: Option<Vec<Modifier>>,
    path: Option<Vec<Point>>,
    repeat: Option<i64>,
    url: Option<String>,
}

fn loc(parts: &[Value]) -> Vec<Value> {
    parts.to_vec()
}

impl Added {
    /// The added fields of `obj`, their errors pushed in field order.
    pub(super) fn parse(obj: &Map<String, Value>, errors: &mut Vec<FieldError>) -> Option<Added> {
        let before = errors.len();
        let added = Added {
            dx: collect(errors, parse_optional_int(obj, "dx", DY_BOUNDS)).flatten(),
            button: collect(errors, parse_button(obj)).flatten(),
            count: collect(errors, parse_optional_int(obj, "count", COUNT_BOUNDS)).flatten(),
            modifiers: parse_modifiers(obj, errors),
            path: parse_path(obj, errors),
            repeat: collect(errors, parse_optional_int(obj, "repeat", REPEAT_BOUNDS)).flatten(),
            url: collect(errors, parse_url(obj)).flatten(),
        };
        (errors.len() == before).then_some(added)
    }

    /// Whether the field (an added one) is given.
    fn given(&self, field: &str) -> Option<Value> {
        match field {
            "dx" => self.dx.map(Value::from),
            "button" => self.button.map(|b| b.name().into()),
            "count" => self.count.map(Value::from),
            "modifiers" => self
                .modifiers
                .as_ref()
                .map(|m| Value::Array(m.iter().map(|m| Value::from(m.name())).collect())),
            "path" => self
                .path
                .as_ref()
                .map(|p| Value::Array(p.iter().map(|p| json!([p.x, p.y])).collect())),
            "repeat" => self.repeat.map(Value::from),
            "url" => self.url.clone().map(Value::from),
            _ => None,
        }
    }
}

fn parse_button(obj: &Map<String, Value>) -> Result<Option<MouseButton>, FieldError> {
    match obj.get("button") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_str()
            .and_then(MouseButton::from_name)
            .map(Some)
            .ok_or_else(|| {
                let names = MouseButton::ALL.map(MouseButton::name);
                FieldError::new(
                    "literal_error",
                    vec!["button".into()],
                    literal_message(&names),
                    v.clone(),
                )
            }),
    }
}

fn parse_url(obj: &Map<String, Value>) -> Result<Option<String>, FieldError> {
    let at = || vec![Value::from("url")];
    match obj.get("url") {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::String(s)) if s.chars().count() > MAX_URL_CHARS => Err(FieldError::new(
            "string_too_long",
            at(),
            format!("String should have at most {MAX_URL_CHARS} characters"),
            v.clone(),
        )),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(FieldError::new(
            "string_type",
            at(),
            "Input should be a valid string",
            other.clone(),
        )),
    }
}

/// A list field as pydantic-core checks one: not an array is `list_type`; more than `max` items
/// is `too_long` alone (checked before the items); else each item's errors, and `too_short`
/// when they are valid but too few.
fn parse_list<T>(
    obj: &Map<String, Value>,
    field: &str,
    (min, max): (usize, usize),
    errors: &mut Vec<FieldError>,
    item: impl Fn(&Value, Vec<Value>) -> Result<T, Vec<FieldError>>,
) -> Option<Option<Vec<T>>> {
    let at = || vec![Value::from(field)];
    let list = match obj.get(field) {
        None | Some(Value::Null) => return Some(None),
        Some(Value::Array(list)) => list,
        Some(other) => {
            errors.push(FieldError::new(
                "list_type",
                at(),
                "Input should be a valid list",
                other.clone(),
            ));
            return None;
        }
    };
    let whole = || Value::Array(list.clone());
    if list.len() > max {
        errors.push(FieldError::new(
            "too_long",
            at(),
            format!(
                "List should have at most {max} items after validation, not {}",
                list.len()
            ),
            whole(),
        ));
        return None;
    }
    let before = errors.len();
    let items: Vec<T> = list
        .iter()
        .enumerate()
        .filter_map(|(i, value)| {
            item(value, loc(&[field.into(), i.into()]))
                .map_err(|e| errors.extend(e))
                .ok()
        })
        .collect();
    if errors.len() > before {
        return None;
    }
    if list.len() < min {
        errors.push(FieldError::new(
            "too_short",
            at(),
            format!(
                "List should have at least {min} items after validation, not {}",
                list.len()
            ),
            whole(),
        ));
        return None;
    }
    Some(Some(items))
}

fn parse_modifiers(
    obj: &Map<String, Value>,
    errors: &mut Vec<FieldError>,
) -> Option<Vec<Modifier>> {
    let names = Modifier::ALL.map(Modifier::name);
    parse_list(obj, "modifiers", (0, MAX_MODIFIERS), errors, |value, at| {
        value.as_str().and_then(Modifier::from_name).ok_or_else(|| {
            vec![FieldError::new(
                "literal_error",
                at,
                literal_message(&names),
                value.clone(),
            )]
        })
    })
    .flatten()
}

/// A point of a path: a pair `[x, y]`, as pydantic validates `tuple[int, int]` with bounds.
fn parse_point(value: &Value, at: Vec<Value>) -> Result<Point, Vec<FieldError>> {
    let Value::Array(pair) = value else {
        return Err(vec![FieldError::new(
            "tuple_type",
            at,
            "Input should be a valid tuple",
            value.clone(),
        )]);
    };
    if pair.len() > 2 {
        return Err(vec![FieldError::new(
            "too_long",
            at,
            format!(
                "Tuple should have at most 2 items after validation, not {}",
                pair.len()
            ),
            value.clone(),
        )]);
    }
    let mut errors = Vec::new();
    let mut coordinate = |index: usize, bounds: IntBounds| {
        let mut here = at.clone();
        here.push(index.into());
        let Some(item) = pair.get(index) else {
            errors.push(FieldError::new(
                "missing",
                here,
                "Field required",
                value.clone(),
            ));
            return None;
        };
        let checked = pydantic_int(item, here.clone()).and_then(|n| bounds.check_at(here, n, item));
        collect(&mut errors, checked)
    };
    let x = coordinate(0, X_BOUNDS);
    let y = coordinate(1, Y_BOUNDS);
    match (x, y) {
        (Some(x), Some(y)) if errors.is_empty() => Ok(Point::new(x, y)),
        _ => Err(errors),
    }
}

fn parse_path(obj: &Map<String, Value>, errors: &mut Vec<FieldError>) -> Option<Vec<Point>> {
    parse_list(
        obj,
        "path",
        (MIN_PATH_POINTS, MAX_PATH_POINTS),
        errors,
        parse_point,
    )
    .flatten()
}

/// Whether a seed field holds other than its default (what the Python client sends when unset).
fn seed_given(seed: &SeedFields, field: &str) -> Option<Value> {
    match field {
        "x" => seed.x.map(Value::from),
        "y" => seed.y.map(Value::from),
        "text" => (!seed.text.is_empty()).then(|| seed.text.clone().into()),
        "dy" => (seed.dy != 0).then_some(seed.dy.into()),
        _ => None,
    }
}

/// The refusal of a field `op` does not act on, naming both.
fn not_a_field_of(op: Op, field: &str, input: Value) -> FieldError {
    let takes = match op.fields() {
        [] => format!("{op} takes no fields"),
        fields => format!("{op} takes {}", fields.join(", ")),
    };
    FieldError::new(
        "extra_forbidden",
        vec![field.into()],
        format!("Extra inputs are not permitted: {field} is not a field of {op} ({takes})"),
        input,
    )
}

/// The model's after-validator: fields the op does not act on are refused (a seed op keeps the
/// seed's leave to carry the seed's fields), then the op's own rule; the seed's rules in the
/// seed's words. Makes the action.
pub(super) fn build(
    op: Op,
    seed: SeedFields,
    added: Added,
    set: ActionSet,
    whole: &Value,
) -> Result<Action, Vec<FieldError>> {
    if set == ActionSet::Full {
        let strays: Vec<FieldError> = FIELDS[2..]
            .iter()
            .filter(|_| !op.is_seed())
            .filter_map(|field| seed_given(&seed, field).map(|v| (*field, v)))
            .chain(
                ADDED_FIELDS
                    .iter()
                    .filter_map(|field| added.given(field).map(|v| (*field, v))),
            )
            .filter(|(field, _)| !op.fields().contains(field))
            .map(|(field, value)| not_a_field_of(op, field, value))
            .collect();
        if !strays.is_empty() {
            return Err(strays);
        }
    }
    let refuse = |msg: String| Err(vec![value_error(msg, whole.clone())]);
    let point = match (seed.x, seed.y) {
        (Some(x), Some(y)) => Some(Point::new(x, y)),
        _ => None,
    };
    let needs_point = |op: Op| format!("{op} needs both x and y");
    let button = added.button.unwrap_or_default();
    let modifiers = Modifiers::of(added.modifiers.as_deref().unwrap_or_default());
    let action = match op {
        Op::Click => match point {
            Some(at) => Action::Click {
                at,
                button,
                count: added.count.unwrap_or(1) as u8,
                modifiers,
            },
            None => return refuse(needs_point(op)),
        },
        Op::Type if seed.text.is_empty() => return refuse("type needs non-empty text".into()),
        Op::Type => Action::Type { text: seed.text },
        Op::Key => match Key::from_name(&seed.text) {
            Some(key) => Action::Key { key },
            None => return refuse(format!("key must be one of {}", key_list())),
        },
        // A point needs both; one alone is left, as the seed leaves it.
        Op::Scroll => Action::Scroll {
            dx: added.dx.unwrap_or(0),
            dy: seed.dy,
            at: point.filter(|_| set == ActionSet::Full),
        },
        Op::Back => Action::Back,
        Op::Wait => Action::Wait,
        Op::Finish => Action::Finish { answer: seed.text },
        Op::Move => match point {
            Some(at) => Action::Move { at },
            None => return refuse(needs_point(op)),
        },
        Op::Drag => match added.path {
            Some(path) => Action::Drag {
                path,
                button,
                modifiers,
            },
            None => {
                return refuse(format!(
                    "drag needs path: {MIN_PATH_POINTS} to {MAX_PATH_POINTS} points [x, y]"
                ))
            }
        },
        Op::MouseDown | Op::MouseUp => match (point, op) {
            (Some(at), Op::MouseDown) => Action::MouseDown { at, button },
            (Some(at), _) => Action::MouseUp { at, button },
            (None, _) => return refuse(needs_point(op)),
        },
        Op::Press => match Chord::parse(&seed.text) {
            Ok(chord) => Action::Press {
                chord,
                repeat: added.repeat.unwrap_or(1) as u8,
            },
            Err(_) if seed.text.is_empty() => {
                return refuse(
                    "press needs text: a key or chord such as ENTER, SHIFT+TAB or CTRL+C".into(),
                )
            }
            Err(ChordError(why)) => {
                return refuse(format!(
                    "press: text \"{}\" is not a key or chord: {why}",
                    seed.text
                ))
            }
        },
        Op::Select => match point {
            None => return refuse(needs_point(op)),
            Some(_) if seed.text.is_empty() => {
                return refuse("select needs text: the label of the option to choose".into())
            }
            Some(at) => Action::Select {
                at,
                label: seed.text,
            },
        },
        Op::Forward => Action::Forward,
        Op::Goto => match added.url {
            Some(url) => Action::Goto { url },
            None => return refuse("goto needs url: an HTTP(S) URL".into()),
        },
    };
    Ok(action)
}
