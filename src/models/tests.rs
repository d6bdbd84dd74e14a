//! The models' tests: pydantic's lax validation case by case, schemas, wire shapes.

use super::validation::*;
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
        .map(|a| match a.action {
            Action::Scroll { dy, .. } => dy,
            other => panic!("a scroll, not {other:?}"),
        })
        .map_err(|e| (e[0].kind.clone(), e[0].msg.clone()))
}

/// The seed's validator (`BROWSER_ACTIONS=seed`).
fn seed_errors_of(value: Value) -> Vec<FieldError> {
    match BrowserAction::from_value_in(&value, ActionSet::Seed) {
        Ok(action) => panic!("expected errors for {value}, got {action:?}"),
        Err(errors) => errors,
    }
}

fn kinds(errors: &[FieldError]) -> Vec<(&str, Vec<Value>)> {
    errors
        .iter()
        .map(|e| (e.kind.as_str(), e.loc.clone()))
        .collect()
}

#[test]
fn python_client_full_dump_is_accepted() {
    let dump = json!({"metadata": {}, "op": "scroll", "x": null, "y": null, "text": "", "dy": 500});
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
        // The seed's words on a seed server, the whole list on this one's default.
        let seed = seed_errors_of(json!({"op": op}));
        assert_eq!(seed.len(), 1, "{seed:?}");
        let e = &seed[0];
        assert_eq!(e.kind, "literal_error");
        assert_eq!(e.loc, vec![json!("op")]);
        assert_eq!(
            e.msg,
            "Input should be 'click', 'type', 'key', 'scroll', 'back', 'wait' or 'finish'"
        );
        assert_eq!(e.input, op);
        let full = only_error(json!({"op": op}));
        assert_eq!(
            full.msg,
            "Input should be 'click', 'type', 'key', 'scroll', 'back', 'wait', 'finish', \
             'move', 'drag', 'mouse_down', 'mouse_up', 'press', 'select', 'forward' or 'goto'"
        );
        assert_eq!(
            (full.kind, full.loc, full.input),
            (e.kind.clone(), e.loc.clone(), op)
        );
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
                "Input should be a valid integer, unable to parse string as an integer".to_owned()
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
    assert_eq!(dy_of(json!(-1200)), Ok(-1200));
    assert_eq!(dy_of(json!(1200)), Ok(1200));
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
    assert_eq!(
        accepted(json!({"op": "type", "text": wide})).action,
        Action::Type { text: wide }
    );
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
    assert!(BrowserAction::from_value_in(
        &json!({"op": "back", "x": 3, "text": "hi"}),
        ActionSet::Seed
    )
    .is_ok());
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

fn every_seed_constructor() -> Vec<BrowserAction> {
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
    for action in every_seed_constructor() {
        let value = action.to_value();
        assert_eq!(BrowserAction::from_value(&value), Ok(action.clone()));
        assert_eq!(action.validate(), Ok(()));
        assert_eq!(serde_json::to_value(&action).ok(), Some(value.clone()));
        let via_serde: Option<BrowserAction> = serde_json::from_value(value.clone()).ok();
        assert_eq!(via_serde, Some(action.clone()));
        let obj = value.as_object().map(|m| m.len());
        assert_eq!(obj, Some(6), "every field is dumped: {value}");
        // What a seed server takes, as it was.
        assert_eq!(
            BrowserAction::from_value_in(&value, ActionSet::Seed),
            Ok(action.clone())
        );
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
    // Each field of the enum is what the wire says: out of range, it says so in the wire's words.
    let bad = BrowserAction::click(800, -5);
    let e = bad.validate().err().unwrap_or_default();
    assert_eq!(
        kinds(&e),
        vec![
            ("less_than", vec![json!("x")]),
            ("greater_than_equal", vec![json!("y")]),
        ]
    );
    let long = BrowserAction::type_text("x".repeat(MAX_TEXT_CHARS + 1));
    let e = long.validate().err().unwrap_or_default();
    assert_eq!(kinds(&e), vec![("string_too_long", vec![json!("text")])]);
    let far = BrowserAction::scroll(5000);
    let e = far.validate().err().unwrap_or_default();
    assert_eq!(kinds(&e), vec![("less_than_equal", vec![json!("dy")])]);
    let e = BrowserAction::type_text("")
        .validate()
        .err()
        .unwrap_or_default();
    assert_eq!(kinds(&e), vec![("value_error", vec![])]);
    assert_eq!(e[0].input, BrowserAction::type_text("").to_value());
    let outside = BrowserAction::drag([(0, 0), (800, 10)]);
    let e = outside.validate().err().unwrap_or_default();
    assert_eq!(
        kinds(&e),
        vec![("less_than", vec![json!("path"), json!(1), json!(0)])]
    );
    assert!(BrowserAction::press_repeat(Key::Tab.chord(), 21)
        .validate()
        .is_err());
    assert!(BrowserAction::select(1, 1, "").validate().is_err());
    assert_eq!(BrowserAction::type_text("ENTER").key_name(), None);
}

#[test]
fn key_name_only_for_key_actions() {
    let bad_key = BrowserAction::from_value(&json!({"op": "key", "text": "enter"}));
    assert!(bad_key.is_err());
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
        // Every seed key is a chord of `press`, by the same name.
        assert_eq!(key.chord().name(), key.name());
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
    // The seed's schema on a seed server: its six fields, its seven ops.
    let seed = action_schema_in(ActionSet::Seed);
    let fields: Vec<&String> = seed["properties"].as_object().unwrap().keys().collect();
    assert_eq!(fields.len(), 6, "{fields:?}");
    assert_eq!(
        seed["properties"]["op"]["enum"].as_array().map(Vec::len),
        Some(7)
    );
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

mod tools {
    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn tool_arguments_become_the_action() {
        let click = action_from_tool_arguments(Op::Click, &args(json!({"x": 10, "y": "20"})));
        assert_eq!(click.unwrap(), BrowserAction::click(10, 20));
        let key = action_from_tool_arguments(Op::Key, &args(json!({"key": "ENTER"})));
        assert_eq!(key.unwrap(), BrowserAction::key(Key::Enter));
        let finish = action_from_tool_arguments(Op::Finish, &args(json!({})));
        assert_eq!(finish.unwrap(), BrowserAction::finish(""));
        let back = action_from_tool_arguments(Op::Back, &args(json!({})));
        assert_eq!(back.unwrap(), BrowserAction::back());
    }

    #[test]
    fn tool_schemas_hold_the_action_bounds() {
        let click = action_tool_schema(Op::Click);
        assert_eq!(click["properties"]["x"]["exclusiveMaximum"], 800);
        assert_eq!(click["properties"]["y"]["exclusiveMaximum"], 600);
        assert_eq!(click["required"], json!(["x", "y"]));
        let key = action_tool_schema(Op::Key);
        assert_eq!(
            key["properties"]["key"]["enum"].as_array().unwrap().len(),
            Key::ALL.len()
        );
        let scroll = action_tool_schema(Op::Scroll);
        assert_eq!(scroll["properties"]["dy"]["maximum"], MAX_SCROLL);
        for op in Op::ALL {
            assert_eq!(action_tool_schema(op)["additionalProperties"], false);
            assert!(action_tool_description(op).contains("800x600"));
        }
    }
}
