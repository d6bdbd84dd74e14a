//! Replay: a recorded episode re-run against a fresh environment matches, step by step; a
//! recording that no longer matches the site is reported where it diverges.

use browserenv::{BrowserAction, ResetOptions};
use browserenv_tests::{test_settings, Harness};
use browserenv_tui::replay::{replay, DEFAULT_TOLERANCE};

#[tokio::test]
async fn a_replayed_recording_matches_and_a_changed_one_is_reported() {
    let dir = std::env::temp_dir().join(format!("browserenv-replay-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("nav1.html")))
        .await
        .unwrap();
    client.step(BrowserAction::click(200, 50)).await.unwrap();
    client.step(BrowserAction::back()).await.unwrap();
    client.step(BrowserAction::finish("")).await.unwrap();
    client.close().await.unwrap();
    // The recorder writes on its own thread, a moment after the replies: wait for the episode.
    for _ in 0..100 {
        if browserenv::trajectory::read(&dir).is_ok_and(|r| r.episodes.len() == 1) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    // Replay against the same server: fresh sessions, fresh browsers.
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
        lines
            .last()
            .unwrap()
            .contains("1 episode(s), 3 step(s): no divergence"),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("step 1 click 200 50: same")),
        "{lines:#?}"
    );

    // The site "changed": the recording says the click led elsewhere.
    let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap();
    let changed = steps.replacen("nav2.html\",\"error\"", "nav3.html\",\"error\"", 1);
    assert_ne!(steps, changed);
    std::fs::write(dir.join("steps.jsonl"), changed).unwrap();
    let (lines, diverged) = replay(
        &dir,
        &harness.server.base_url(),
        None,
        DEFAULT_TOLERANCE,
        None,
    )
    .await
    .unwrap();
    assert!(diverged);
    let step = lines.iter().find(|l| l.contains("step 1 click")).unwrap();
    assert!(
        step.contains("url: recorded") && step.contains("nav3.html"),
        "{step}"
    );
    harness.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
