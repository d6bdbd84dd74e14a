//! The actions as tools (MCP): one tool per op, whose arguments are that op's fields with the
//! action's own bounds and key names (the same tables as `action_schema`), described for a language
//! model. Arguments are checked by the action's validator, so a bad argument gets the words a
//! `VALIDATION_ERROR` would; only the field is named as the tool names it (`key`, `answer`).

use super::*;

/// The tool's name for the field an argument fills in the action: `(argument, field)`.
pub fn action_tool_argument_names(op: Op) -> &'static [(&'static str, &'static str)] {
    match op {
        Op::Click => &[("x", "x"), ("y", "y")],
        Op::Type => &[("text", "text")],
        Op::Key => &[("key", "text")],
        Op::Scroll => &[("dy", "dy")],
        Op::Back | Op::Wait => &[],
        Op::Finish => &[("answer", "text")],
    }
}

/// What the tool does, for a model choosing its next call.
pub fn action_tool_description(op: Op) -> String {
    let result = "Returns the page after the action: a fresh 800x600 PNG screenshot, its URL and \
                  title, an error code (empty when all went well) and whether the episode is done.";
    let what = match op {
        Op::Click => {
            "Click at a pixel of the 800x600 screenshot: x counts from the left edge, y \
                      from the top, in the pixels of the latest screenshot. Click a text field \
                      before typing into it."
        }
        Op::Type => {
            "Type text into the focused element, character by character, as a person \
                     would. Click the field first; use the key tool for Enter, Tab and the like."
        }
        Op::Key => "Press one key (Enter submits a form, Tab moves the focus, CTRL+A selects all).",
        Op::Scroll => {
            "Scroll the page with the mouse wheel, at the point last clicked (the centre \
                       before any click): positive dy scrolls down, negative up, in pixels."
        }
        Op::Back => "Go back one page in the browser history.",
        Op::Wait => "Wait a moment for the page to change (a load, an animation), then look again.",
        Op::Finish => {
            "End the episode. Give the answer if the task asks for one; a task episode \
                       is scored now."
        }
    };
    format!("{what} {result}")
}

/// The JSON Schema of the tool's arguments.
pub fn action_tool_schema(op: Op) -> Value {
    let described = |description: &str| {
        let mut schema = Map::new();
        schema.insert("description".into(), description.into());
        schema
    };
    let mut properties = Map::new();
    let mut required: Vec<&str> = Vec::new();
    match op {
        Op::Click => {
            properties.insert(
                "x".into(),
                X_BOUNDS.schema(described("Pixel column: 0 is the left edge, 799 the right")),
            );
            properties.insert(
                "y".into(),
                Y_BOUNDS.schema(described("Pixel row: 0 is the top edge, 599 the bottom")),
            );
            required.extend(["x", "y"]);
        }
        Op::Type => {
            properties.insert(
                "text".into(),
                json!({"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS,
                       "description": "The text to type"}),
            );
            required.push("text");
        }
        Op::Key => {
            properties.insert(
                "key".into(),
                json!({"type": "string", "enum": Key::ALL.map(Key::name),
                       "description": "The key to press"}),
            );
            required.push("key");
        }
        Op::Scroll => {
            properties.insert(
                "dy".into(),
                DY_BOUNDS.schema(described("Pixels to scroll: positive down, negative up")),
            );
            required.push("dy");
        }
        Op::Back | Op::Wait => {}
        Op::Finish => {
            properties.insert(
                "answer".into(),
                json!({"type": "string", "maxLength": MAX_TEXT_CHARS, "default": "",
                       "description": "The answer, if the task asks for one"}),
            );
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The action a tool call asks for, or the field errors (located by the tool's argument names).
pub fn action_from_tool_arguments(
    op: Op,
    arguments: &Map<String, Value>,
) -> Result<BrowserAction, Vec<FieldError>> {
    let names = action_tool_argument_names(op);
    let mut action = Map::new();
    let mut extra = Vec::new();
    for (argument, value) in arguments {
        match names.iter().find(|(name, _)| name == argument) {
            Some((_, field)) => {
                action.insert((*field).into(), value.clone());
            }
            None => extra.push(FieldError::new(
                "extra_forbidden",
                vec![Value::from(argument.as_str())],
                "Extra inputs are not permitted",
                value.clone(),
            )),
        }
    }
    // The action's own rules name a missing x, y, text or key; `dy` would silently default to 0.
    if op == Op::Scroll && !arguments.contains_key("dy") {
        extra.push(FieldError::new(
            "missing",
            vec![Value::from("dy")],
            "Field required",
            Value::Object(arguments.clone()),
        ));
    }
    action.insert("op".into(), op.name().into());
    let renamed = |mut error: FieldError| {
        if let Some(Value::String(field)) = error.loc.first_mut() {
            if let Some((name, _)) = names.iter().find(|(_, f)| f == field) {
                *field = (*name).to_string();
            }
        }
        error
    };
    match BrowserAction::from_value(&Value::Object(action)) {
        Ok(action) if extra.is_empty() => Ok(action),
        Ok(_) => Err(extra),
        Err(errors) => Err(errors.into_iter().map(renamed).chain(extra).collect()),
    }
}
