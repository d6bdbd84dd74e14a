//! The actions as tools (MCP): one tool per op, whose arguments are that op's fields with the
//! action's own bounds and key names (the same tables as `action_schema`), described for a language
//! model. Arguments are checked by the action's validator, so a bad argument gets the words a
//! `VALIDATION_ERROR` would; only the field is named as the tool names it (`key`, `answer`).

use super::*;

/// The tool's name for the field an argument fills in the action: `(argument, field)`.
pub fn action_tool_argument_names(op: Op) -> &'static [(&'static str, &'static str)] {
    match op {
        Op::Click => &[
            ("x", "x"),
            ("y", "y"),
            ("button", "button"),
            ("count", "count"),
            ("modifiers", "modifiers"),
        ],
        Op::Type => &[("text", "text")],
        Op::Key => &[("key", "text")],
        Op::Scroll => &[("dy", "dy"), ("dx", "dx"), ("x", "x"), ("y", "y")],
        Op::Back | Op::Wait | Op::Forward => &[],
        Op::Finish => &[("answer", "text")],
        Op::Move => &[("x", "x"), ("y", "y")],
        Op::Drag => &[
            ("path", "path"),
            ("button", "button"),
            ("modifiers", "modifiers"),
        ],
        Op::MouseDown | Op::MouseUp => &[("x", "x"), ("y", "y"), ("button", "button")],
        Op::Press => &[("keys", "text"), ("repeat", "repeat")],
        Op::Select => &[("x", "x"), ("y", "y"), ("label", "text")],
        Op::Goto => &[("url", "url")],
    }
}

/// What the tool does, for a model choosing its next call.
pub fn action_tool_description(op: Op) -> String {
    let result = "Returns the page after the action: a fresh 800x600 PNG screenshot, its URL and \
                  title, an error code (empty when all went well) and whether the episode is done.";
    let what = match op {
        Op::Click => {
            "Click at a pixel of the 800x600 screenshot: x counts from the left edge, y \
             from the top, in the pixels of the latest screenshot. Click a text field before \
             typing into it. Optional: button (right opens a context menu), count (2 double-clicks, \
             3 triple-clicks), modifiers held during the click (SHIFT extends a selection)."
        }
        Op::Type => {
            "Type text into the focused element, character by character, as a person \
             would. Click the field first; use the key tool for Enter, Tab and the like."
        }
        Op::Key => "Press one key (Enter submits a form, Tab moves the focus, CTRL+A selects all).",
        Op::Scroll => {
            "Scroll with the mouse wheel: positive dy scrolls down, negative up, dx right or \
             left, in pixels; at x, y when given (an inner scrollable box there scrolls), else at \
             the point last clicked (the centre before any click)."
        }
        Op::Back => "Go back one page in the browser history.",
        Op::Wait => "Wait a moment for the page to change (a load, an animation), then look again.",
        Op::Finish => {
            "End the episode. Give the answer if the task asks for one; a task episode \
             is scored now."
        }
        Op::Move => {
            "Move the mouse pointer to a pixel without clicking (hover): opens menus and \
             tooltips that show on hover."
        }
        Op::Drag => {
            "Drag with the mouse: press at the first point of path, move through the \
             others, release at the last (sliders, sortable lists, drag-and-drop, drawing, \
             selecting text)."
        }
        Op::MouseDown => "Press a mouse button at a pixel and keep it down (mouse_up releases it).",
        Op::MouseUp => "Release a mouse button at a pixel.",
        Op::Press => {
            "Press a key or a chord of keys, e.g. PAGE_DOWN, SHIFT+TAB, CTRL+C then CTRL+V \
             (copy and paste), F5, HOME, DELETE; repeat presses it several times."
        }
        Op::Select => {
            "Choose an option of the dropdown (<select>) at a pixel by its label, as a \
             person choosing it would."
        }
        Op::Forward => "Go forward one page in the browser history.",
        Op::Goto => "Open a URL (http or https) in the current tab, as typed in the address bar.",
    };
    format!("{what} {result}")
}

fn described(description: &str) -> Map<String, Value> {
    let mut schema = Map::new();
    schema.insert("description".into(), description.into());
    schema
}

fn x_schema() -> Value {
    X_BOUNDS.schema(described("Pixel column: 0 is the left edge, 799 the right"))
}

fn y_schema() -> Value {
    Y_BOUNDS.schema(described("Pixel row: 0 is the top edge, 599 the bottom"))
}

fn button_schema() -> Value {
    json!({"type": "string", "enum": MouseButton::ALL.map(MouseButton::name), "default": "left",
           "description": "The mouse button"})
}

fn modifiers_schema() -> Value {
    json!({"type": "array", "items": {"type": "string", "enum": Modifier::ALL.map(Modifier::name)},
           "maxItems": MAX_MODIFIERS, "description": "Keys held down meanwhile"})
}

/// The JSON Schema of the tool's arguments.
pub fn action_tool_schema(op: Op) -> Value {
    let mut properties = Map::new();
    let mut put = |name: &str, schema: Value| {
        properties.insert(name.into(), schema);
    };
    let required: &[&str] = match op {
        Op::Click => {
            put("x", x_schema());
            put("y", y_schema());
            put("button", button_schema());
            put(
                "count",
                COUNT_BOUNDS.schema(described("Clicks: 2 double-clicks, 3 triple-clicks")),
            );
            put("modifiers", modifiers_schema());
            &["x", "y"]
        }
        Op::Type => {
            put(
                "text",
                json!({"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS,
                       "description": "The text to type"}),
            );
            &["text"]
        }
        Op::Key => {
            put(
                "key",
                json!({"type": "string", "enum": Key::ALL.map(Key::name),
                       "description": "The key to press"}),
            );
            &["key"]
        }
        Op::Scroll => {
            put(
                "dy",
                DY_BOUNDS.schema(described("Pixels to scroll: positive down, negative up")),
            );
            put(
                "dx",
                DY_BOUNDS.schema(described("Pixels to scroll: positive right, negative left")),
            );
            put("x", x_schema());
            put("y", y_schema());
            &["dy"]
        }
        Op::Back | Op::Wait | Op::Forward => &[],
        Op::Finish => {
            put(
                "answer",
                json!({"type": "string", "maxLength": MAX_TEXT_CHARS, "default": "",
                       "description": "The answer, if the task asks for one"}),
            );
            &[]
        }
        Op::Move => {
            put("x", x_schema());
            put("y", y_schema());
            &["x", "y"]
        }
        Op::Drag => {
            put(
                "path",
                json!({"type": "array", "minItems": MIN_PATH_POINTS, "maxItems": MAX_PATH_POINTS,
                       "items": {"type": "array", "items": {"type": "integer", "minimum": 0},
                                 "minItems": 2, "maxItems": 2},
                       "description": "Points [x, y] of the screenshot (x 0..799, y 0..599): \
                                       pressed at the first, released at the last"}),
            );
            put("button", button_schema());
            put("modifiers", modifiers_schema());
            &["path"]
        }
        Op::MouseDown | Op::MouseUp => {
            put("x", x_schema());
            put("y", y_schema());
            put("button", button_schema());
            &["x", "y"]
        }
        Op::Press => {
            put(
                "keys",
                json!({"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS,
                       "description": format!(
                           "A key, or modifiers and a key joined by +: SHIFT, CTRL, ALT, META \
                            before one of {}", key_summary())}),
            );
            put(
                "repeat",
                REPEAT_BOUNDS.schema(described("How many times to press it (default 1)")),
            );
            &["keys"]
        }
        Op::Select => {
            put("x", x_schema());
            put("y", y_schema());
            put(
                "label",
                json!({"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS,
                       "description": "The option's label, as the dropdown shows it"}),
            );
            &["x", "y", "label"]
        }
        Op::Goto => {
            put(
                "url",
                json!({"type": "string", "minLength": 1, "maxLength": MAX_URL_CHARS,
                       "description": "An http(s) URL"}),
            );
            &["url"]
        }
    };
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
