//! The gestures recorded, exported and replayed, on real Chromium: `steps.jsonl` carries each op
//! with its arguments and the element under the pointer; a chord typed into a secret field and a
//! `select` a person marked secret leave no trace of what they put there; the HF/JSONL/ATIF
//! exports carry each step as its tool call; `replay` re-runs every op without divergence.

use std::path::Path;
use std::time::Duration;

use browserenv::models::{Chord, MouseButton};
use browserenv::{BrowserAction, Client, ResetOptions};
use browserenv_tests::watch::{reply, send, session_id, until, watch};
use browserenv_tests::{test_settings, Harness};
use browserenv_tui::offline::export::{export, ExportFormat, Selection};
use browserenv_tui::offline::replay::{replay, DEFAULT_TOLERANCE};
use serde_json::{json, Value};

async fn wait_for_episodes(dir: &Path, count: usize) -> Vec<Value> {
    for _ in 0..200 {
        if browserenv_collect::trajectory::read(dir).is_ok_and(|r| r.episodes.len() == count) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::read_to_string(dir.join("steps.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

async fn step(client: &mut Client, action: BrowserAction) {
    let result = client.step(action).await.unwrap();
    assert_eq!(
        result.observation.error, "",
        "{:?}",
        result.observation.metadata
    );
}

#[tokio::test]
async fn gestures_are_recorded_with_their_arguments_exported_as_tool_calls_and_replayed() {
    let dir = std::env::temp_dir().join(format!("browserenv-gestures-rec-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("shop.html")))
        .await
        .unwrap();
    let gestures = [
        BrowserAction::select(180, 68, "Price: low to high"),
        BrowserAction::drag([(620, 68), (560, 68), (420, 68)]),
        BrowserAction::click(180, 68),
        BrowserAction::press_repeat(Chord::parse("DOWN").unwrap(), 2),
        BrowserAction::press(Chord::parse("ENTER").unwrap()),
        BrowserAction::goto(harness.page("menu.html")),
        BrowserAction::move_to(70, 20),
        BrowserAction::double_click(60, 250),
        BrowserAction::press(Chord::parse("ESCAPE").unwrap()),
        BrowserAction::mouse_down(100, 400, MouseButton::Right),
        BrowserAction::mouse_up(100, 400, MouseButton::Right),
        BrowserAction::back(),
        BrowserAction::forward(),
        BrowserAction::scroll_at(300, 300, 0, 100),
        BrowserAction::finish(""),
    ];
    for action in gestures.iter().cloned() {
        step(&mut client, action).await;
    }
    client.close().await.unwrap();
    let steps = wait_for_episodes(&dir, 1).await;
    assert_eq!(steps.len(), gestures.len());
    for (recorded, sent) in steps.iter().zip(&gestures) {
        assert_eq!(recorded["action"], sent.to_value(), "recorded as sent");
    }
    assert_eq!(steps[0]["action"]["text"], "Price: low to high");
    assert_eq!(steps[0]["element"]["tag"], "select");
    assert_eq!(
        steps[1]["action"]["path"],
        json!([[620, 68], [560, 68], [420, 68]])
    );
    assert_eq!(
        steps[1]["element"]["tag"], "div",
        "the slider's thumb, where the drag began"
    );
    assert_eq!(steps[3]["action"]["repeat"], 2);
    assert_eq!(steps[6]["element"]["text"], "Products");
    assert_eq!(steps[7]["action"]["count"], 2);
    assert_eq!(steps[9]["action"]["button"], "right");
    // Every step's tool call in the exports: the op and its arguments by the tools' names.
    let out = dir.join("export-jsonl");
    export(&dir, &out, ExportFormat::Jsonl, &Selection::default()).unwrap();
    let rows: Vec<Value> = std::fs::read_to_string(out.join("data.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = |row: &Value| -> Value {
        serde_json::from_str(row["tool_call"].as_str().unwrap()).unwrap()
    };
    assert_eq!(
        call(&rows[0]),
        json!({"name": "select", "arguments": {"x": 180, "y": 68, "label": "Price: low to high"}})
    );
    assert_eq!(
        call(&rows[1])["arguments"]["path"],
        json!([[620, 68], [560, 68], [420, 68]])
    );
    assert_eq!(rows[1]["path"], json!([[620, 68], [560, 68], [420, 68]]));
    assert_eq!(
        call(&rows[3]),
        json!({"name": "press", "arguments": {"keys": "DOWN", "repeat": 2}})
    );
    assert_eq!(
        (rows[7]["count"].as_i64(), rows[9]["button"].as_str()),
        (Some(2), Some("right"))
    );
    let atif = dir.join("export-atif");
    export(&dir, &atif, ExportFormat::Atif, &Selection::default()).unwrap();
    let document = std::fs::read_dir(&atif)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().extension().is_some_and(|x| x == "json"))
        .unwrap();
    let document: Value = serde_json::from_slice(&std::fs::read(document.path()).unwrap()).unwrap();
    let calls: Vec<&Value> = document["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["tool_calls"][0])
        .collect();
    assert_eq!(calls[1]["function_name"], "drag");
    assert_eq!(calls[6]["arguments"], json!({"x": 70, "y": 20}));
    assert!(
        document["steps"][1]["message"][0]["text"]
            .as_str()
            .unwrap()
            .contains("drag 620 68 560 68 420 68"),
        "the step named with its path"
    );
    // Replayed: every op again on a fresh browser, the same pages.
    let (lines, diverged) = replay(
        &dir,
        &harness.server.base_url(),
        None,
        DEFAULT_TOLERANCE,
        None,
    )
    .await
    .unwrap();
    assert!(!diverged, "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.contains("press DOWN 2: same")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("select 180 68 Price: low to high: same")),
        "{lines:#?}"
    );
    harness.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn what_a_chord_or_a_marked_select_puts_in_a_secret_field_is_never_recorded() {
    let dir =
        std::env::temp_dir().join(format!("browserenv-gestures-secret-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mut agent = harness.client().await;
    agent
        .reset(ResetOptions::new(harness.page("pwform.html")))
        .await
        .unwrap();
    // Chords into the password field: each a character of the secret, then the form sent.
    step(&mut agent, BrowserAction::click(250, 215)).await;
    for chord in ["SHIFT+Z", "SHIFT+Q", "7", "SHIFT+1"] {
        step(
            &mut agent,
            BrowserAction::press_repeat(Chord::parse(chord).unwrap(), 2),
        )
        .await;
    }
    let sent = agent
        .step(BrowserAction::press(Chord::parse("ENTER").unwrap()))
        .await
        .unwrap();
    assert!(
        sent.observation
            .url
            .contains("pw=%3Credacted%3A8%20characters%3E")
            || sent.observation.url.contains("pw=<redacted:8 characters>"),
        "{}",
        sent.observation.url
    );
    // A person marks a select's choice as theirs alone.
    agent
        .step(BrowserAction::goto(harness.page("shop.html")))
        .await
        .unwrap();
    let id = session_id(&harness).await;
    let mut person = watch(&harness, &id, None).await.unwrap();
    send(
        &mut person,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    until(&mut person, reply).await;
    send(
        &mut person,
        json!({"type": "step", "data": {"op": "select", "x": 180, "y": 68, "text": "Most reviews"},
               "secret": true}),
    )
    .await;
    let chosen = until(&mut person, reply).await;
    assert_eq!(chosen["type"], "observation", "{chosen}");
    send(&mut person, json!({"type": "release"})).await;
    until(&mut person, |f| f["type"] == "control").await;
    let after = agent.step(BrowserAction::wait()).await.unwrap();
    let shown = Value::Object(after.observation.metadata.clone()).to_string();
    assert!(
        !shown.contains("Most reviews") && !shown.contains("\"reviews\""),
        "{shown}"
    );
    // The page's text, where the select shows the label chosen: hidden there too.
    let text = reqwest::get(format!("{}/sessions/{id}/text", harness.server.base_url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!text.contains("Most reviews"), "{text}");
    assert!(text.contains("<redacted:12 characters>"), "{text}");
    agent.step(BrowserAction::finish("")).await.unwrap();
    agent.close().await.unwrap();
    wait_for_episodes(&dir, 2).await;
    let everything: String = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    for secret in ["ZZQQ77!!", "Most reviews", "\"reviews\""] {
        assert!(
            !everything.contains(secret),
            "{secret} reached the recording"
        );
    }
    assert!(
        everything.contains("<redacted:2 characters>"),
        "the chords, as typing hidden"
    );
    assert!(
        everything.contains("\"op\":\"select\",\"text\":\"<redacted:12 characters>\"")
            || everything.contains("<redacted:12 characters>"),
        "the select's label hidden"
    );
    harness.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
