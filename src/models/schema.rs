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
