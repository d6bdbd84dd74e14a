//! JSON Schemas of the models, shaped like pydantic's `model_json_schema()`.

use super::*;

pub(super) fn metadata_schema() -> Value {
    json!({"additionalProperties": true, "default": {}, "title": "Metadata", "type": "object"})
}

pub(super) fn nullable_int_schema(bounds: IntBounds, title: &str) -> Value {
    json!({
        "anyOf": [bounds.schema(Map::new()), {"type": "null"}],
        "default": null,
        "title": title,
    })
}

/// Shaped like pydantic's `BrowserAction.model_json_schema()` (`python/browserenv/models.py`),
/// for a server that takes every op. The `text` description is our addition: pydantic cannot
/// express the after-validator, but callers need the key names.
pub fn action_schema() -> Value {
    action_schema_in(ActionSet::Full)
}

/// The action's schema for a server that takes `set`: the seed's model for `seed`.
pub fn action_schema_in(set: ActionSet) -> Value {
    let ops: Vec<&str> = set.ops().iter().map(|op| op.name()).collect();
    let mut dy = Map::new();
    dy.insert("default".into(), 0.into());
    dy.insert("title".into(), "Dy".into());
    let mut text = format!(
        "Text to type (op=type, non-empty), key name (op=key, one of {}), \
         or the answer (op=finish)",
        key_list()
    );
    if set == ActionSet::Full {
        text.push_str(&format!(
            "; for op=press a key or chord: SHIFT, CTRL, ALT, META joined by + before one of {}; \
             for op=select the option's label",
            key_summary()
        ));
    }
    let mut properties = json!({
        "metadata": metadata_schema(),
        "op": {"enum": ops, "title": "Op", "type": "string"},
        "x": nullable_int_schema(X_BOUNDS, "X"),
        "y": nullable_int_schema(Y_BOUNDS, "Y"),
        "text": {
            "default": "",
            "description": text,
            "maxLength": MAX_TEXT_CHARS,
            "title": "Text",
            "type": "string",
        },
        "dy": DY_BOUNDS.schema(dy),
    });
    if let (ActionSet::Full, Value::Object(properties)) = (set, &mut properties) {
        properties.extend(added_properties());
    }
    json!({
        "additionalProperties": false,
        "properties": properties,
        "required": ["op"],
        "title": "BrowserAction",
        "type": "object",
    })
}

/// A field that may be null, default null: pydantic's `T | None = None`.
fn nullable(schema: Value, title: &str, description: &str) -> Value {
    json!({
        "anyOf": [schema, {"type": "null"}],
        "default": null,
        "description": description,
        "title": title,
    })
}

/// The added fields' schemas, in declaration order.
fn added_properties() -> Map<String, Value> {
    let int = |bounds: IntBounds| bounds.schema(Map::new());
    let point = json!({
        "maxItems": 2,
        "minItems": 2,
        "prefixItems": [int(X_BOUNDS), int(Y_BOUNDS)],
        "type": "array",
    });
    let fields = [
        (
            "dx",
            nullable(
                int(DY_BOUNDS),
                "Dx",
                "op=scroll: pixels right (negative: left)",
            ),
        ),
        (
            "button",
            nullable(
                json!({"enum": MouseButton::ALL.map(MouseButton::name), "type": "string"}),
                "Button",
                "op=click, drag, mouse_down, mouse_up: the mouse button (left when null)",
            ),
        ),
        (
            "count",
            nullable(
                int(COUNT_BOUNDS),
                "Count",
                "op=click: 2 double-clicks, 3 triple-clicks",
            ),
        ),
        (
            "modifiers",
            nullable(
                json!({"items": {"enum": Modifier::ALL.map(Modifier::name), "type": "string"},
                       "maxItems": MAX_MODIFIERS, "type": "array"}),
                "Modifiers",
                "op=click, drag: keys held meanwhile",
            ),
        ),
        (
            "path",
            nullable(
                json!({"items": point, "maxItems": MAX_PATH_POINTS,
                       "minItems": MIN_PATH_POINTS, "type": "array"}),
                "Path",
                "op=drag: points [x, y], pressed at the first, released at the last",
            ),
        ),
        (
            "repeat",
            nullable(
                int(REPEAT_BOUNDS),
                "Repeat",
                "op=press: presses (1 when null)",
            ),
        ),
        (
            "url",
            nullable(
                json!({"maxLength": MAX_URL_CHARS, "type": "string"}),
                "Url",
                "op=goto: an http(s) URL",
            ),
        ),
    ];
    fields
        .into_iter()
        .map(|(name, schema)| (name.to_string(), schema))
        .collect()
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
