//! The `capture` tool: a fresh picture of the page without acting (a vendor's `screenshot`), or a
//! region of it drawn at a higher scale (Anthropic's `zoom`): `environment::capture`. Its
//! arguments are checked like an action's fields, in the same words.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};

use crate::environment::{Capture, Region, MAX_SCALE, MIN_SCALE};

use super::tools::ToolFailure;

/// The tool's name.
pub const CAPTURE: &str = "capture";

/// What the model reads about the tool.
pub fn description() -> String {
    format!(
        "Take a fresh picture of the page without acting: it neither steps the episode nor \
         changes the page. With no arguments, the whole 800x600 viewport as it is now (a \
         screenshot). With region [x0, y0, x1, y1] (screenshot pixels, x1 and y1 excluded), that \
         part of the page drawn again at a higher scale: more pixels of the page, as sharp as a \
         denser display would show it, not an enlarged copy. scale (from {MIN_SCALE} to \
         {MAX_SCALE}) is how many picture pixels per screenshot pixel; by default the largest at \
         which the region fills 800x600. Fields holding a secret are covered."
    )
}

/// The tool's argument schema.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0},
                "minItems": 4,
                "maxItems": 4,
                "description": "[x0, y0, x1, y1] in screenshot pixels: 0 <= x0 < x1 <= 800, 0 <= y0 < y1 <= 600 (the whole viewport when absent)",
            },
            "scale": {
                "type": "number",
                "minimum": MIN_SCALE,
                "maximum": MAX_SCALE,
                "description": "Picture pixels per screenshot pixel (the picture at most 1600x1200)",
            },
        },
        "additionalProperties": false,
    })
}

/// What its structured content holds.
pub fn output_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "episode_id": {"type": ["string", "null"]},
            "step": {"type": "integer", "description": "The episode's step count when the picture was taken"},
            "region": {"type": "array", "items": {"type": "integer"}, "description": "[x0, y0, x1, y1] in screenshot pixels"},
            "scale": {"type": "number"},
            "width": {"type": "integer", "description": "The picture's width in pixels"},
            "height": {"type": "integer", "description": "The picture's height in pixels"},
        },
        "required": ["url", "step", "region", "scale", "width", "height"],
    });
    let Value::Object(schema) = schema else {
        unreachable!()
    };
    schema
}

/// The region and scale asked for, checked (a `VALIDATION_ERROR`'s message when not).
pub fn arguments(arguments: &Map<String, Value>) -> Result<(Region, Option<f64>), ToolFailure> {
    let invalid = |message: String| ToolFailure::Invalid(format!("Invalid message: {message}"));
    if let Some(extra) = arguments
        .keys()
        .find(|key| !["region", "scale"].contains(&key.as_str()))
    {
        return Err(invalid(format!("{extra}: Extra inputs are not permitted")));
    }
    let region = match arguments.get("region") {
        None | Some(Value::Null) => Region::VIEWPORT,
        Some(Value::Array(items)) if items.len() == 4 => {
            let mut corners = [0i64; 4];
            for (at, item) in items.iter().enumerate() {
                corners[at] = item.as_i64().ok_or_else(|| {
                    invalid(format!("region.{at}: Input should be a valid integer"))
                })?;
            }
            Region::from_corners(corners).map_err(|why| invalid(format!("region: {why}")))?
        }
        Some(Value::Array(_)) => {
            return Err(invalid(
                "region: should be 4 integers [x0, y0, x1, y1]".into(),
            ))
        }
        Some(_) => return Err(invalid("region: Input should be a valid list".into())),
    };
    let scale = match arguments.get("scale") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_f64()
                .ok_or_else(|| invalid("scale: Input should be a valid number".into()))?,
        ),
    };
    if let Some(Err(why)) =
        scale.map(|scale| crate::environment::checked_scale(&region, Some(scale)))
    {
        return Err(invalid(format!("scale: {why}")));
    }
    Ok((region, scale))
}

/// A picture and where and when it was taken.
pub struct Picture {
    pub capture: Capture,
    pub episode_id: Option<String>,
    pub step: u64,
}

impl Picture {
    /// The structured content (no picture).
    pub fn facts(&self) -> Value {
        let capture = &self.capture;
        json!({
            "url": capture.url,
            "episode_id": self.episode_id,
            "step": self.step,
            "region": capture.region.corners(),
            "scale": capture.scale,
            "width": capture.width,
            "height": capture.height,
        })
    }

    /// The MCP result: the picture as an image, the facts as text and as structured content.
    pub fn into_result(self) -> CallToolResult {
        let facts = self.facts();
        let content = vec![
            ContentBlock::image(self.capture.png, "image/png"),
            ContentBlock::text(facts.to_string()),
        ];
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(facts);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(value: Value) -> Result<(Region, Option<f64>), String> {
        let Value::Object(map) = value else {
            unreachable!()
        };
        arguments(&map).map_err(|failure| failure.message())
    }

    #[test]
    fn its_arguments_are_checked_like_an_actions_fields() {
        assert_eq!(checked(json!({})), Ok((Region::VIEWPORT, None)));
        let (region, scale) = checked(json!({"region": [10, 20, 110, 70], "scale": 3})).unwrap();
        assert_eq!((region.corners(), scale), ([10, 20, 110, 70], Some(3.0)));
        for (bad, words) in [
            (json!({"zoom": 2}), "zoom: Extra inputs are not permitted"),
            (json!({"region": [1, 2, 3]}), "region: should be 4 integers"),
            (
                json!({"region": "0,0,5,5"}),
                "region: Input should be a valid list",
            ),
            (
                json!({"region": [0, 0, 900, 10]}),
                "region: the bottom-right corner",
            ),
            (
                json!({"region": [0, "a", 9, 10]}),
                "region.1: Input should be a valid integer",
            ),
            (json!({"scale": 9}), "scale: should be from 0.25 to 4"),
            (
                json!({"scale": 3}),
                "scale: the picture would be 2400x1800 pixels",
            ),
        ] {
            let message = checked(bad.clone()).unwrap_err();
            assert!(message.starts_with("Invalid message: "), "{bad}: {message}");
            assert!(message.contains(words), "{bad}: {message}");
        }
    }
}
