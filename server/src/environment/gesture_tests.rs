//! The gestures' episode rules, against the fake browser: each op becomes its browser call, a
//! seed server refuses the additions, a `goto` takes the reset's URL rule before the step counts.

use super::*;
use crate::fake::{FakeLauncher, FakeScript};
use browserenv::models::{ActionSet, Chord, Key, Modifier, Modifiers, MouseButton};
use std::time::Duration;

fn settings(actions: ActionSet) -> EnvSettings {
    EnvSettings {
        max_steps: 50,
        action_wait: Duration::from_millis(20),
        explicit_wait: Duration::from_millis(10),
        action_timeout: Duration::from_millis(200),
        screenshot_timeout: Duration::from_millis(200),
        page_load_timeout: Duration::from_millis(200),
        server_port: Some(8123),
        actions,
        ..EnvSettings::default()
    }
}

async fn started(actions: ActionSet) -> (Environment<FakeLauncher>, Arc<FakeLauncher>) {
    let launcher = Arc::new(FakeLauncher::new(FakeScript::default()));
    let mut env = Environment::new(launcher.clone(), settings(actions)).for_session("s");
    let mut kwargs = Map::new();
    kwargs.insert("start_url".into(), json!("https://a.example/"));
    env.reset(&kwargs).await.unwrap();
    (env, launcher)
}

fn chord(name: &str) -> Chord {
    Chord::parse(name).unwrap()
}

#[tokio::test]
async fn each_gesture_is_one_browser_call() {
    let (mut env, launcher) = started(ActionSet::Full).await;
    let steps = [
        BrowserAction::click_with(
            0,
            599,
            MouseButton::Right,
            2,
            Modifiers::of(&[Modifier::Shift]),
        ),
        BrowserAction::move_to(799, 0),
        BrowserAction::drag([(10, 10), (20, 20), (30, 30)]),
        BrowserAction::mouse_down(5, 6, MouseButton::Left),
        BrowserAction::mouse_up(7, 8, MouseButton::Middle),
        BrowserAction::press_repeat(chord("shift+tab"), 3),
        BrowserAction::key(Key::CtrlA),
        BrowserAction::select(100, 40, "Price: low to high"),
        BrowserAction::scroll_at(1, 2, 30, -40),
        BrowserAction::scroll(5),
        BrowserAction::forward(),
        BrowserAction::goto("https://b.example/x"),
    ];
    for step in &steps {
        let result = env.step(step, false).await.unwrap();
        assert_eq!(result.observation.error, "", "{step:?}");
    }
    let calls: Vec<String> = launcher
        .calls()
        .into_iter()
        // The reset's own calls (its load, the next episode's page prepared) are not the steps'.
        .filter(|c| {
            c != "settle" && !c.starts_with("goto https://a.") && !c.starts_with("prepare ")
        })
        .collect();
    assert_eq!(
        calls,
        [
            "click 0 599 right 2 SHIFT",
            "move 799 0",
            "drag left 10,10 20,20 30,30",
            "mouse_down 5 6 left",
            "mouse_up 7 8 middle",
            "press SHIFT+TAB x3",
            "press CTRL+A",
            "select 100 40 Price: low to high",
            "scroll 1 2 -40 dx 30",
            // A scroll that names no point turns the wheel where the pointer rests.
            "scroll 1 2 5",
            "forward",
            "goto https://b.example/x",
        ]
    );
    assert_eq!(env.state().step_count, steps.len() as u64);
}

#[tokio::test]
async fn pointer_gestures_read_the_element_under_the_pointer() {
    let (mut env, _) = started(ActionSet::Full).await;
    for (step, at) in [
        (BrowserAction::move_to(3, 4), json!([3, 4])),
        (BrowserAction::drag([(5, 6), (7, 8)]), json!([5, 6])),
        (BrowserAction::select(9, 10, "A"), json!([9, 10])),
        (
            BrowserAction::mouse_down(11, 12, MouseButton::Left),
            json!([11, 12]),
        ),
        (BrowserAction::press(chord("PAGE_DOWN")), Value::Null),
    ] {
        let result = env.step(&step, false).await.unwrap();
        let element = &result.observation.metadata["element"];
        assert_eq!(element["at"], at, "{step:?}: {element}");
    }
    let result = env.step(&BrowserAction::forward(), false).await.unwrap();
    assert!(result.observation.metadata.get("element").is_none());
}

#[tokio::test]
async fn a_seed_server_refuses_the_additions_before_they_count() {
    let (mut env, launcher) = started(ActionSet::Seed).await;
    let refused = env
        .step(&BrowserAction::move_to(1, 1), false)
        .await
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "move is not an action of this server: it takes the seed's seven (BROWSER_ACTIONS=seed)"
    );
    assert_eq!(env.state().step_count, 0);
    assert!(!launcher.calls().iter().any(|c| c.starts_with("move")));
    // The seed's own still work.
    env.step(&BrowserAction::click(1, 1), false).await.unwrap();
    assert_eq!(env.state().step_count, 1);
}

#[tokio::test]
async fn goto_takes_the_reset_s_url_rule_and_the_session_goes_on() {
    let (mut env, launcher) = started(ActionSet::Full).await;
    for (url, words) in [
        (
            "file:///etc/passwd",
            "url: expected an HTTP(S) URL without credentials",
        ),
        (
            "https://user:pw@a.example/",
            "url: expected an HTTP(S) URL without credentials",
        ),
        (
            "javascript:alert(1)",
            "url: expected an HTTP(S) URL without credentials",
        ),
        (
            "http://127.0.0.1:8123/sessions",
            "url is this server's own address: its routes are not a page for the agent",
        ),
    ] {
        let refused = env
            .step(&BrowserAction::goto(url), false)
            .await
            .unwrap_err();
        assert_eq!(refused.to_string(), words, "{url}");
    }
    assert_eq!(env.state().step_count, 0, "refused before counting");
    assert!(!launcher.calls().iter().any(|c| c.contains("etc/passwd")));
    env.step(&BrowserAction::goto("http://127.0.0.1:9/"), false)
        .await
        .unwrap();
    assert_eq!(env.state().step_count, 1);
}

#[tokio::test]
async fn a_chord_into_a_marked_field_is_the_person_s_secret() {
    let (mut env, _) = started(ActionSet::Full).await;
    // A person marks the step secret: what the chord types goes the way typed secrets go.
    let press = BrowserAction::press_repeat(chord("SHIFT+Q"), 2);
    let result = env.step(&press, true).await.unwrap();
    let shown = browserenv::secrets::shown_action(&press, &result, true);
    assert_eq!(shown, BrowserAction::type_text("<redacted:2 characters>"));
    // A chord that types nothing stays what it is.
    let tab = BrowserAction::press(chord("SHIFT+TAB"));
    let result = env.step(&tab, true).await.unwrap();
    assert_eq!(browserenv::secrets::shown_action(&tab, &result, true), tab);
    // A select's label is hidden like typing.
    let select = BrowserAction::select(1, 2, "4111 1111");
    let result = env.step(&select, true).await.unwrap();
    assert_eq!(
        browserenv::secrets::shown_action(&select, &result, true),
        BrowserAction::select(1, 2, "<redacted:9 characters>")
    );
}
