//! `--record-dir`: the server records every session as agent trajectories, with no client change.

use browserenv::trajectory::{read, Actor, Outcome};
use browserenv::{BrowserAction, ResetOptions};
use browserenv_server::ServerConfig;
use browserenv_tests::{test_settings, Harness, Picture};

#[tokio::test]
async fn the_server_records_every_session_as_agent_trajectories() {
    let dir = std::env::temp_dir().join(format!("browserenv-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        max_sessions: 4,
        warm_spare: true,
        record_dir: Some(dir.clone()),
        tasks: None,
    })
    .await;
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
