//! The added gestures' validation: fields and ops the seed has not, refused by a seed server in
//! the seed's words, each op taking its own fields and refusing others by name.

use super::*;

fn accepted(value: Value) -> BrowserAction {
    match BrowserAction::from_value(&value) {
        Ok(action) => action,
        Err(errors) => panic!("expected {value} to validate, got {errors:?}"),
    }
}

fn errors_of(value: Value) -> Vec<(String, Vec<Value>, String)> {
    match BrowserAction::from_value(&value) {
        Ok(action) => panic!("expected errors for {value}, got {action:?}"),
        Err(errors) => errors.into_iter().map(|e| (e.kind, e.loc, e.msg)).collect(),
    }
}

fn every_added_constructor() -> Vec<BrowserAction> {
    let shift_tab = Chord::parse("SHIFT+TAB").unwrap();
    vec![
        BrowserAction::click_with(0, 599, MouseButton::Right, 1, Modifiers::NONE),
        BrowserAction::double_click(799, 0),
        BrowserAction::click_with(
            5,
            5,
            MouseButton::Middle,
            3,
            Modifiers::of(&[Modifier::Shift, Modifier::Meta]),
        ),
        BrowserAction::scroll_at(10, 20, -1200, 1200),
        BrowserAction::scroll_at(0, 0, 0, 5),
        BrowserAction::move_to(799, 599),
        BrowserAction::drag([(0, 0), (799, 599)]),
        BrowserAction::drag_with(
            (0..64).map(|i| (i, i)),
            MouseButton::Right,
            Modifiers::of(&[Modifier::Alt]),
        ),
        BrowserAction::mouse_down(1, 2, MouseButton::Left),
        BrowserAction::mouse_up(3, 4, MouseButton::Middle),
        BrowserAction::press(shift_tab),
        BrowserAction::press_repeat(Chord::parse("page_down").unwrap(), 20),
        BrowserAction::press_named("CTRL+SHIFT+F5").unwrap(),
        BrowserAction::select(100, 40, "Price: low to high"),
        BrowserAction::forward(),
        BrowserAction::goto("https://example.com/a?b=c"),
    ]
}

#[test]
fn added_constructors_round_trip_and_validate() {
    for action in every_added_constructor() {
        let value = action.to_value();
        assert_eq!(
            BrowserAction::from_value(&value),
            Ok(action.clone()),
            "{value}"
        );
        assert_eq!(action.validate(), Ok(()), "{value}");
        let via_serde: Option<BrowserAction> = serde_json::from_value(value.clone()).ok();
        assert_eq!(via_serde, Some(action.clone()));
        // A seed server refuses each of them (a seed op with an added field, or a new op), or
        // takes it as the seed would (a scroll's point ignored).
        assert_ne!(
            BrowserAction::from_value_in(&value, ActionSet::Seed).ok(),
            Some(action.clone()),
            "{value}"
        );
    }
}

#[test]
fn an_added_action_dumps_the_seed_fields_and_its_own() {
    assert_eq!(
        BrowserAction::drag([(1, 2), (3, 4)]).to_value(),
        json!({"metadata": {}, "op": "drag", "x": null, "y": null, "text": "", "dy": 0,
               "path": [[1, 2], [3, 4]]})
    );
    assert_eq!(
        BrowserAction::double_click(3, 4).to_value(),
        json!({"metadata": {}, "op": "click", "x": 3, "y": 4, "text": "", "dy": 0, "count": 2})
    );
    assert_eq!(
        BrowserAction::press_named("ctrl+shift+tab")
            .unwrap()
            .to_value()["text"],
        "SHIFT+CTRL+TAB"
    );
    // The Python client's dump of an added op: every field, explicit nulls.
    let dump = json!({"metadata": {}, "op": "move", "x": 0, "y": 599, "text": "", "dy": 0,
                      "dx": null, "button": null, "count": null, "modifiers": null,
                      "path": null, "repeat": null, "url": null});
    assert_eq!(accepted(dump), BrowserAction::move_to(0, 599));
}

#[test]
fn a_seed_server_refuses_every_addition_in_the_seed_s_words() {
    let seed = |value: Value| {
        BrowserAction::from_value_in(&value, ActionSet::Seed)
            .err()
            .unwrap_or_default()
    };
    let e = seed(json!({"op": "drag", "path": [[1, 2], [3, 4]]}));
    assert_eq!(
        e.iter()
            .map(|e| (e.kind.as_str(), e.msg.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (
                "literal_error",
                "Input should be 'click', 'type', 'key', 'scroll', 'back', 'wait' or 'finish'"
            ),
            ("extra_forbidden", "Extra inputs are not permitted"),
        ]
    );
    let e = seed(json!({"op": "click", "x": 1, "y": 2, "button": "right", "count": 2}));
    assert_eq!(
        e.iter()
            .map(|e| (e.kind.as_str(), e.loc.clone()))
            .collect::<Vec<_>>(),
        vec![
            ("extra_forbidden", vec![json!("button")]),
            ("extra_forbidden", vec![json!("count")]),
        ]
    );
    // Even a null added field is an extra input to the seed's model.
    assert_eq!(
        seed(json!({"op": "back", "dx": null}))[0].kind,
        "extra_forbidden"
    );
    // A seed server ignores a scroll's point, as the seed does.
    let scroll =
        BrowserAction::from_value_in(&json!({"op": "scroll", "x": 1, "y": 2}), ActionSet::Seed);
    assert_eq!(scroll, Ok(BrowserAction::scroll(0)));
}

#[test]
fn each_op_refuses_fields_it_does_not_act_on_by_name() {
    assert_eq!(
        errors_of(json!({"op": "type", "text": "a", "button": "left"})),
        vec![(
            "extra_forbidden".into(),
            vec![json!("button")],
            "Extra inputs are not permitted: button is not a field of type (type takes text)"
                .into()
        )]
    );
    let e = errors_of(json!({"op": "move", "x": 1, "y": 2, "text": "hi", "dy": 3, "url": "u"}));
    let fields: Vec<&Value> = e.iter().map(|(_, loc, _)| &loc[0]).collect();
    assert_eq!(fields, vec!["text", "dy", "url"]);
    assert!(
        e[0].2
            .ends_with("text is not a field of move (move takes x, y)"),
        "{e:?}"
    );
    let e = errors_of(json!({"op": "forward", "x": 0}));
    assert!(e[0]
        .2
        .ends_with("x is not a field of forward (forward takes no fields)"));
    // The seed's ops keep the seed's leave to carry its fields; an added field is theirs or not.
    assert!(BrowserAction::from_value(&json!({"op": "wait", "x": 1, "dy": 5})).is_ok());
    assert_eq!(
        errors_of(json!({"op": "scroll", "count": 2}))[0].1,
        vec![json!("count")]
    );
    assert_eq!(
        errors_of(json!({"op": "key", "text": "TAB", "repeat": 2}))[0].1,
        vec![json!("repeat")]
    );
    // Defaults are not values: what the Python client sends when a field is unset.
    assert_eq!(
        accepted(json!({"op": "forward", "x": null, "text": "", "dy": 0, "button": null})),
        BrowserAction::forward()
    );
}

#[test]
fn each_added_op_says_what_it_needs() {
    let rule = |value: Value| {
        let e = errors_of(value);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!((e[0].0.as_str(), e[0].1.len()), ("value_error", 0));
        e[0].2.clone()
    };
    for op in ["move", "mouse_down", "mouse_up", "select"] {
        assert_eq!(
            rule(json!({"op": op, "x": 5, "text": if op == "select" { "A" } else { "" }})),
            format!("Value error, {op} needs both x and y")
        );
    }
    assert_eq!(
        rule(json!({"op": "drag"})),
        "Value error, drag needs path: 2 to 64 points [x, y]"
    );
    assert_eq!(
        rule(json!({"op": "goto"})),
        "Value error, goto needs url: an HTTP(S) URL"
    );
    assert_eq!(
        rule(json!({"op": "select", "x": 1, "y": 1})),
        "Value error, select needs text: the label of the option to choose"
    );
    assert_eq!(
        rule(json!({"op": "press"})),
        "Value error, press needs text: a key or chord such as ENTER, SHIFT+TAB or CTRL+C"
    );
    let unknown = rule(json!({"op": "press", "text": "CTRL+FOO"}));
    assert!(
        unknown.starts_with(
            "Value error, press: text \"CTRL+FOO\" is not a key or chord: unknown key \"FOO\" \
             (keys: A-Z, 0-9, F1-F12, ENTER, TAB"
        ),
        "{unknown}"
    );
    for (text, why) in [
        ("CTRL++", "has an empty part"),
        ("A+B", "\"A\" is not a modifier"),
        ("SHIFT+shift+A", "SHIFT is held twice"),
        ("CTRL+CTRL", "CTRL is held twice"),
    ] {
        let message = rule(json!({"op": "press", "text": text}));
        assert!(message.contains(why), "{text}: {message}");
    }
}

#[test]
fn fields_of_the_added_ops_are_checked_as_pydantic_checks_them() {
    let e = |value: Value| {
        errors_of(value)
            .into_iter()
            .map(|(kind, loc, msg)| (kind, Value::Array(loc), msg))
            .collect::<Vec<_>>()
    };
    let one = |kind: &str, loc: Value, msg: &str| vec![(kind.to_string(), loc, msg.to_string())];
    // The path's points, at the viewport's edges and past them.
    assert!(
        BrowserAction::from_value(&json!({"op": "drag", "path": [[0, 0], [799, 599]]})).is_ok()
    );
    assert_eq!(
        e(json!({"op": "drag", "path": [[0, 0], [800, 600]]})),
        vec![
            (
                "less_than".into(),
                json!(["path", 1, 0]),
                "Input should be less than 800".into()
            ),
            (
                "less_than".into(),
                json!(["path", 1, 1]),
                "Input should be less than 600".into()
            ),
        ]
    );
    assert_eq!(
        e(json!({"op": "drag", "path": [[-1, 2], [3, 4, 5]]})),
        vec![
            (
                "greater_than_equal".into(),
                json!(["path", 0, 0]),
                "Input should be greater than or equal to 0".into()
            ),
            (
                "too_long".into(),
                json!(["path", 1]),
                "Tuple should have at most 2 items after validation, not 3".into()
            ),
        ]
    );
    let long: Vec<Value> = (0..65).map(|_| json!([1, 2])).collect();
    assert_eq!(
        e(json!({"op": "drag", "path": long})),
        one(
            "too_long",
            json!(["path"]),
            "List should have at most 64 items after validation, not 65"
        )
    );
    assert_eq!(
        e(json!({"op": "drag", "path": [[1, 2]]})),
        one(
            "too_short",
            json!(["path"]),
            "List should have at least 2 items after validation, not 1"
        )
    );
    assert_eq!(
        e(json!({"op": "drag", "path": [["a"], {"x": 1}]})),
        vec![
            (
                "int_parsing".into(),
                json!(["path", 0, 0]),
                "Input should be a valid integer, unable to parse string as an integer".into()
            ),
            (
                "missing".into(),
                json!(["path", 0, 1]),
                "Field required".into()
            ),
            (
                "tuple_type".into(),
                json!(["path", 1]),
                "Input should be a valid tuple".into()
            ),
        ]
    );
    assert_eq!(
        e(json!({"op": "drag", "path": "0,0 1,1"})),
        one("list_type", json!(["path"]), "Input should be a valid list")
    );
    assert_eq!(
        e(json!({"op": "click", "x": 1, "y": 1, "button": "Left"})),
        one(
            "literal_error",
            json!(["button"]),
            "Input should be 'left', 'right' or 'middle'"
        )
    );
    assert_eq!(
        e(json!({"op": "click", "x": 1, "y": 1, "modifiers": ["SHIFT", "shift"]})),
        one(
            "literal_error",
            json!(["modifiers", 1]),
            "Input should be 'SHIFT', 'CTRL', 'ALT' or 'META'"
        )
    );
    assert_eq!(
        e(json!({"op": "click", "x": 1, "y": 1, "count": 4})),
        one(
            "less_than_equal",
            json!(["count"]),
            "Input should be less than or equal to 3"
        )
    );
    assert_eq!(
        e(json!({"op": "press", "text": "TAB", "repeat": 0})),
        one(
            "greater_than_equal",
            json!(["repeat"]),
            "Input should be greater than or equal to 1"
        )
    );
    assert_eq!(
        e(json!({"op": "scroll", "dx": -1201})),
        one(
            "greater_than_equal",
            json!(["dx"]),
            "Input should be greater than or equal to -1200"
        )
    );
    assert_eq!(
        e(json!({"op": "goto", "url": 5})),
        one(
            "string_type",
            json!(["url"]),
            "Input should be a valid string"
        )
    );
    assert_eq!(
        e(json!({"op": "goto", "url": "x".repeat(MAX_URL_CHARS + 1)}))[0].2,
        "String should have at most 8192 characters"
    );
    // Lax integers, as for the seed's fields; repeated modifiers are one.
    let action = accepted(json!({"op": "drag", "path": [["1", 2.0], [3, true]],
                                 "modifiers": ["SHIFT", "SHIFT"]}));
    assert_eq!(
        action,
        BrowserAction::drag_with(
            [(1, 2), (3, 1)],
            MouseButton::Left,
            Modifiers::of(&[Modifier::Shift])
        )
    );
}

#[test]
fn a_scroll_turns_where_it_is_told_when_told_both() {
    let at = |value: Value| match accepted(value).action {
        Action::Scroll { at, dx, .. } => (at, dx),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        at(json!({"op": "scroll", "x": 0, "y": 599, "dx": 40})),
        (Some(Point::new(0, 599)), 40)
    );
    // One alone is taken and left, as the seed takes it.
    assert_eq!(at(json!({"op": "scroll", "x": 3})), (None, 0));
}

#[test]
fn chords_name_keys_of_one_list() {
    let names: Vec<&str> = KeyName::all().map(KeyName::name).collect();
    for expected in [
        "A",
        "Z",
        "0",
        "9",
        "F1",
        "F12",
        "PAGE_UP",
        "PAGE_DOWN",
        "HOME",
        "END",
        "INSERT",
        "DELETE",
        "SPACE",
        "UP",
        "DOWN",
        "LEFT",
        "RIGHT",
        "ENTER",
        "TAB",
        "ESCAPE",
        "BACKSPACE",
        "SHIFT",
        "CTRL",
        "ALT",
        "META",
    ] {
        assert!(names.contains(&expected), "{expected}");
    }
    let unique: std::collections::HashSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "each key once");
    let chord = Chord::parse(" meta + Shift+a").unwrap();
    assert_eq!(chord.name(), "SHIFT+META+A");
    assert_eq!(chord.modifiers.devtools_mask(), 8 + 4);
    assert_eq!(Chord::parse("SHIFT+1").unwrap().typed(), Some("!"));
    assert_eq!(Chord::parse("q").unwrap().typed(), Some("q"));
    assert_eq!(Chord::parse("CTRL+C").unwrap().typed(), None);
    assert_eq!(Chord::parse("TAB").unwrap().typed(), None);
    assert!(key_summary().starts_with("A-Z, 0-9, F1-F12, ENTER, TAB, ESCAPE"));
}

#[test]
fn added_tools_take_their_arguments_by_their_names() {
    let args = |value: Value| value.as_object().unwrap().clone();
    let press =
        action_from_tool_arguments(Op::Press, &args(json!({"keys": "shift+tab", "repeat": 2})));
    assert_eq!(
        press,
        Ok(BrowserAction::press_repeat(
            Chord::parse("SHIFT+TAB").unwrap(),
            2
        ))
    );
    let select =
        action_from_tool_arguments(Op::Select, &args(json!({"x": 1, "y": 2, "label": "B"})));
    assert_eq!(select, Ok(BrowserAction::select(1, 2, "B")));
    let drag = action_from_tool_arguments(Op::Drag, &args(json!({"path": [[1, 2], [900, 4]]})));
    let errors = drag.unwrap_err();
    assert_eq!(errors[0].loc, vec![json!("path"), json!(1), json!(0)]);
    let scroll = action_from_tool_arguments(
        Op::Scroll,
        &args(json!({"dy": 0, "dx": 50, "x": 3, "y": 4})),
    );
    assert_eq!(scroll, Ok(BrowserAction::scroll_at(3, 4, 50, 0)));
    // Their refusals' words: protocol.rs's tests (the wire's frame is the protocol's).
    for op in Op::ALL {
        let schema = action_tool_schema(op);
        assert_eq!(schema["additionalProperties"], false);
        let names: Vec<&str> = action_tool_argument_names(op)
            .iter()
            .map(|(a, _)| *a)
            .collect();
        let properties: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            properties.len(),
            names.len(),
            "{op}: {properties:?} {names:?}"
        );
        for name in names {
            assert!(schema["properties"].get(name).is_some(), "{op}: {name}");
        }
    }
}
