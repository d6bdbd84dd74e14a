//! `--record-dir`: the server records every session as agent trajectories, with no client change.

use browserenv::{BrowserAction, ResetOptions};
use browserenv_collect::trajectory::{read, Actor, Outcome};
use browserenv_tests::{test_settings, Harness, Picture};

#[tokio::test]
async fn the_server_records_every_session_as_agent_trajectories() {
    let dir = std::env::temp_dir().join(format!("browserenv-record-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("nav1.html")).episode_id("agent-1"))
        .await
        .unwrap();
    client.step(BrowserAction::click(200, 50)).await.unwrap();
    client.step(BrowserAction::back()).await.unwrap();
    client.step(BrowserAction::finish("done")).await.unwrap();
    // A second episode, left open when the client goes away.
    client
        .reset(ResetOptions::new(harness.page("long.html")).episode_id("agent-2"))
        .await
        .unwrap();
    client.step(BrowserAction::scroll(300)).await.unwrap();
    client.close().await.unwrap();
    harness.stop().await;

    let recording = read(&dir).unwrap();
    assert_eq!(recording.problems, vec![]);
    let first = recording.episode_steps("agent-1");
    assert_eq!(first.len(), 3);
    assert!(first.iter().all(|s| s.actor == Actor::Agent));
    assert!(first[0].url.ends_with("nav1.html"), "{}", first[0].url);
    assert!(first[0].next_url.ends_with("nav2.html"));
    assert_eq!(first[0].action["op"], "click");
    assert_eq!(first[0].action["x"], 200);
    assert!(first[1].url.ends_with("nav2.html") && first[1].next_url.ends_with("nav1.html"));
    assert!(first[2].done);
    // The frames are real 800x600 screenshots, stored once each.
    let png = std::fs::read(dir.join(&first[0].next_file_name)).unwrap();
    let picture = Picture::from_base64(&base64_of(&png));
    assert_eq!((picture.width, picture.height), (800, 600));
    assert_ne!(
        first[0].file_name, first[0].next_file_name,
        "navigation changed the picture"
    );

    let outcomes: Vec<_> = recording
        .episodes
        .iter()
        .map(|e| (e.episode_id.as_str(), e.outcome, e.steps))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("agent-1", Outcome::Finished, 3),
            ("agent-2", Outcome::Abandoned, 1)
        ]
    );
    assert_eq!(recording.episodes[0].answer.as_deref(), Some("done"));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn clicks_and_typing_carry_element_labels_and_passwords_never_reach_the_disk() {
    let dir = std::env::temp_dir().join(format!("browserenv-record-redact-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("login.html")).episode_id("login"))
        .await
        .unwrap();
    let user = client.step(BrowserAction::click(250, 115)).await.unwrap();
    let element = &user.observation.metadata["element"];
    assert_eq!(element["tag"], "input");
    assert_eq!(element["role"], "textbox");
    assert_eq!(
        element["name"], "User name",
        "the label is the accessible name"
    );
    assert_eq!(element["bbox"], serde_json::json!([100, 100, 308, 36]));
    let typed = client.step(BrowserAction::type_text("ada")).await.unwrap();
    assert_eq!(
        typed.observation.metadata["element"]["text"], "",
        "read before typing"
    );
    client.step(BrowserAction::click(250, 215)).await.unwrap();
    let secret = client
        .step(BrowserAction::type_text("hunter2"))
        .await
        .unwrap();
    assert_eq!(secret.observation.metadata["element"]["password"], true);
    assert_eq!(
        secret.observation.metadata["password_boxes"],
        // The password field, which holds a value; the one-time code below it is empty.
        serde_json::json!([[100, 200, 308, 36]])
    );
    // The agent's frame has the field holding a secret covered, the rest as the page is.
    let live = Picture::from_base64(&secret.observation.screenshot);
    assert_eq!(live.rgb(110, 215), [0, 0, 0]);
    assert_ne!(
        live.rgb(110, 315),
        [0, 0, 0],
        "the empty one-time code field"
    );
    client.close().await.unwrap();
    harness.stop().await;

    let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap();
    assert!(
        !steps.contains("hunter2"),
        "the password reached the recording"
    );
    let recording = read(&dir).unwrap();
    let recorded = recording.episode_steps("login");
    assert_eq!(recorded[1].action["text"], "ada");
    assert_eq!(recorded[3].action["text"], "<redacted:7 characters>");
    assert_eq!(recorded[0].element.as_ref().unwrap()["name"], "User name");
    // The saved frame has the password field covered.
    let png = std::fs::read(dir.join(&recorded[3].next_file_name)).unwrap();
    let saved = Picture::from_base64(&base64_of(&png));
    assert_eq!(saved.rgb(110, 215), [0, 0, 0]);
    assert_eq!(saved.rgb(390, 230), [0, 0, 0]);
    assert_ne!(saved.rgb(110, 115), [0, 0, 0], "only the password field");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn passwords_in_shadow_roots_iframes_and_other_origins_never_reach_the_disk() {
    let dir = std::env::temp_dir().join(format!("browserenv-record-deep-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mut client = harness.client().await;
    let first = client
        .reset(ResetOptions::new(harness.page("secrets.html")).episode_id("deep"))
        .await
        .unwrap();
    // Empty secret fields are not covered: the agent must see where to type.
    assert!(first.observation.metadata.get("password_boxes").is_none());
    // Click each field and type a secret into it; the last is login.html's password field in a
    // frame of another origin (localhost), at (100, 200) inside the frame.
    let fields = [
        ((150, 65), "shadowsecret"),
        ((150, 165), "framesecret"),
        ((150, 265), "pinsecret"),
        ((250, 535), "othersecret"),
    ];
    let mut last = None;
    for ((x, y), secret) in fields {
        client.step(BrowserAction::click(x, y)).await.unwrap();
        let typed = client.step(BrowserAction::type_text(secret)).await.unwrap();
        assert_eq!(
            typed.observation.metadata["element"]["password"], true,
            "{secret}: {:?}",
            typed.observation.metadata["element"]
        );
        last = Some(typed);
    }
    // The shadow root's field, the same-origin iframe's and the CSS-masked one hold secrets now
    // (the frame of another origin is not the page's to read).
    let boxes = &last.unwrap().observation.metadata["password_boxes"];
    for top in [50, 150, 250] {
        assert!(
            boxes
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b[0] == 100 && b[1] == top),
            "no box at y={top}: {boxes}"
        );
    }
    client.close().await.unwrap();
    harness.stop().await;

    let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap();
    for (_, secret) in fields {
        assert!(!steps.contains(secret), "{secret} reached the recording");
    }
    let recording = read(&dir).unwrap();
    let recorded = recording.episode_steps("deep");
    let png = std::fs::read(dir.join(&recorded.last().unwrap().next_file_name)).unwrap();
    let saved = Picture::from_base64(&base64_of(&png));
    for y in [60, 160, 260] {
        assert_eq!(
            saved.rgb(110, y),
            [0, 0, 0],
            "the field at y={y} is blacked out"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
