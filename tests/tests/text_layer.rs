//! The text layer route (`GET /sessions/{id}/text`) on real Chromium: what a person can see is
//! listed with its box, what they cannot (hidden, transparent, covered, off screen) is not, form
//! fields show their values (passwords as bullets), and the observation stays as it was.

use browserenv::text_layer::{RunKind, TextLayer, TextRun};
use browserenv::{BrowserAction, ResetOptions};
use browserenv_tests::{test_settings, Harness};
use serde_json::Value;

/// The id `GET /sessions` lists for the session whose episode is `episode_id`.
async fn session_id(harness: &Harness, episode_id: &str) -> String {
    let sessions: Vec<Value> = reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    sessions
        .iter()
        .find(|s| s["episode_id"] == episode_id)
        .and_then(|s| s["id"].as_str())
        .expect("the session is listed with its episode")
        .to_string()
}

async fn text(harness: &Harness, session: &str) -> (u16, Value) {
    let response = reqwest::get(format!(
        "{}/sessions/{session}/text",
        harness.server.base_url()
    ))
    .await
    .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// The text of a page that is heavy to read: a read the busy machine cut short (timed out, or
/// truncated before anything was found) is asked again, as a UI does on its next request.
async fn text_of_a_heavy_page(harness: &Harness, session: &str) -> TextLayer {
    let mut last = (0, Value::Null);
    for _ in 0..3 {
        let (status, body) = text(harness, session).await;
        if status == 200 {
            let layer: TextLayer = serde_json::from_value(body.clone()).unwrap();
            if !(layer.truncated && layer.runs.is_empty()) {
                return layer;
            }
        } else {
            let detail = body["detail"].as_str().unwrap_or_default();
            assert!(detail.contains("renderer_timeout"), "{status} {body}");
        }
        last = (status, body);
    }
    panic!("no text in 3 reads: {last:?}");
}

fn run<'a>(layer: &'a TextLayer, text: &str) -> &'a TextRun {
    layer
        .runs
        .iter()
        .find(|r| r.text == text)
        .unwrap_or_else(|| panic!("no run {text:?} in {:#?}", layer.runs))
}

#[tokio::test]
async fn visible_text_is_listed_with_its_boxes_and_nothing_hidden_is() {
    let harness = Harness::start(test_settings()).await;
    let mut client = harness.client().await;
    let first = client
        .reset(ResetOptions::new(harness.page("text.html")).episode_id("text-1"))
        .await
        .unwrap();
    let id = session_id(&harness, "text-1").await;
    let (status, body) = text(&harness, &id).await;
    assert_eq!(status, 200, "{body}");
    let layer: TextLayer = serde_json::from_value(body).unwrap();
    assert_eq!(layer.session, id);
    assert_eq!(layer.episode_id.as_deref(), Some("text-1"));
    assert_eq!(layer.step, 0);
    assert_eq!(layer.url, harness.page("text.html"));
    assert!(!layer.truncated);

    let heading = run(&layer, "Harbor Prices");
    assert!((18..=22).contains(&heading.x), "{heading:?}");
    assert!((10..=20).contains(&heading.y), "{heading:?}");
    assert!(heading.bold && !heading.link);
    assert_eq!(heading.size, 24.0);
    assert_eq!(heading.color, [10, 40, 90]);

    // A wrapped paragraph is one run per line, in reading order, covering the whole text.
    let lines: Vec<&TextRun> = layer
        .runs
        .iter()
        .filter(|r| (55..=140).contains(&r.y) && r.x < 300)
        .collect();
    assert!(lines.len() >= 2, "{lines:#?}");
    assert!(lines.windows(2).all(|w| w[0].y < w[1].y), "{lines:#?}");
    let joined: Vec<&str> = lines.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(
        joined.join(" "),
        "The quick brown fox jumps over the lazy dog and keeps on running far away"
    );
    assert!(lines.iter().all(|r| r.width <= 262), "{lines:#?}");

    assert!(run(&layer, "Open the catalog").link);
    // A word the layout broke at its hyphen is split where the line breaks.
    let broken: Vec<&str> = layer
        .runs
        .iter()
        .filter(|r| (295..=385).contains(&r.x) && (115..=200).contains(&r.y))
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(broken, vec!["hook-and-", "loop pad"]);
    run(&layer, "SHOUT");
    run(&layer, "$129.00");
    run(&layer, "shadow text");
    let framed = run(&layer, "frame text");
    assert!(
        framed.x >= 418 && framed.y >= 398,
        "iframe offset: {framed:?}"
    );

    let field = run(&layer, "Ada Lovelace");
    assert_eq!((field.kind, field.size), (RunKind::Field, 14.0));
    let password = run(&layer, "•••••••");
    assert_eq!(password.kind, RunKind::Password);
    assert_eq!(run(&layer, "Search here").kind, RunKind::Placeholder);
    assert_eq!(run(&layer, "Second choice").kind, RunKind::Field);
    run(&layer, "line one");
    run(&layer, "line two");

    let all: Vec<&str> = layer.runs.iter().map(|r| r.text.as_str()).collect();
    for unseen in [
        "hidden words",
        "gone words",
        "clear words",
        "below the fold",
        "covered words",
        "secret1",
        "First choice",
    ] {
        assert!(
            !all.iter().any(|t| t.contains(unseen)),
            "{unseen:?} is not visible: {all:?}"
        );
    }
    assert!(
        layer
            .runs
            .windows(2)
            .all(|w| w[0].middle() <= w[1].middle()),
        "top to bottom"
    );

    // Reading the text is not a step: the episode, its count and its observations are untouched.
    let state = client.state().await.unwrap();
    assert_eq!(state.step_count, 0);
    assert!(first.observation.metadata.get("runs").is_none());
    let scrolled = client.step(BrowserAction::scroll(400)).await.unwrap();
    assert!(scrolled.observation.metadata.get("runs").is_none());
    let (_, body) = text(&harness, &id).await;
    let layer: TextLayer = serde_json::from_value(body).unwrap();
    assert_eq!(layer.step, 1);
    assert!(
        layer.runs.iter().any(|r| r.text == "below the fold"),
        "scrolled into view: {:?}",
        layer.runs
    );
    client.close().await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn text_requests_for_unknown_or_unstarted_sessions_say_why() {
    let harness = Harness::start(test_settings()).await;
    let (status, body) = text(&harness, "no-such-session").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("SESSION_NOT_FOUND"))
    );

    // Connected, not yet reset: listed, but there is no page to read.
    let _client = harness.client().await;
    let mut sessions: Vec<Value> = Vec::new();
    for _ in 0..50 {
        sessions = reqwest::get(format!("{}/sessions", harness.server.base_url()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if !sessions.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let id = sessions[0]["id"].as_str().unwrap();
    let (status, body) = text(&harness, id).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "EXECUTION_ERROR");
    assert!(body["detail"].as_str().unwrap().contains("reset first"));
    harness.stop().await;
}

#[tokio::test]
async fn the_http_session_serves_its_text_too() {
    let harness = Harness::start(test_settings()).await;
    let http = reqwest::Client::new();
    let base = harness.server.base_url();
    let reset: Value = http
        .post(format!("{base}/reset"))
        .json(
            &serde_json::json!({"start_url": harness.page("text.html"), "episode_id": "http-text"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reset["done"], false);
    let id = session_id(&harness, "http-text").await;
    assert!(id.starts_with("http-"));
    let (status, body) = text(&harness, &id).await;
    assert_eq!(status, 200, "{body}");
    let layer: TextLayer = serde_json::from_value(body).unwrap();
    run(&layer, "Harbor Prices");
    harness.stop().await;
}

#[tokio::test]
async fn a_huge_page_is_read_in_bounds_and_the_session_goes_on() {
    let harness = Harness::start(test_settings()).await;
    let mut client = harness.client().await;
    let middle = format!("{}#middle", harness.page("hugetext.html"));
    client
        .reset(ResetOptions::new(middle).episode_id("huge"))
        .await
        .unwrap();
    let id = session_id(&harness, "huge").await;
    let layer = text_of_a_heavy_page(&harness, &id).await;
    // The middle of the log is on screen (line 280000 / 19 px), read without walking the lines
    // before it.
    let line = |r: &TextRun| -> Option<u32> {
        r.text
            .strip_prefix("line ")?
            .split(' ')
            .next()?
            .parse()
            .ok()
    };
    let shown: Vec<u32> = layer.runs.iter().filter_map(line).collect();
    assert!(
        shown.len() >= 10 && shown.iter().all(|n| (14_000..15_000).contains(n)),
        "{shown:?} (truncated: {})",
        layer.truncated
    );
    assert!(layer.runs.iter().all(|r| r.text.chars().count() <= 1000));
    // The page is still fine for the agent: the next step has no error.
    let step = client.step(BrowserAction::scroll(600)).await.unwrap();
    assert_eq!(step.observation.error, "");

    // From the top: the 200,000-character line is cut, the log's first lines are there.
    client
        .reset(ResetOptions::new(harness.page("hugetext.html")).episode_id("huge-top"))
        .await
        .unwrap();
    let top = text_of_a_heavy_page(&harness, &id).await;
    let long = top
        .runs
        .iter()
        .find(|r| r.text.starts_with("start of a very long line"))
        .expect("the long line");
    assert!(long.text.chars().count() <= 1000);
    assert!(top
        .runs
        .iter()
        .any(|r| r.text.starts_with("line 0 of the log")));
    harness.stop().await;
}
