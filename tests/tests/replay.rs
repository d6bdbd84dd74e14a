//! Replay: a recorded episode re-run against a fresh environment matches, step by step; a
//! recording that no longer matches the site is reported where it diverges.

use browserenv::{BrowserAction, ResetOptions};
use browserenv_tests::{test_settings, Harness};
use browserenv_tui::offline::replay::{replay, DEFAULT_TOLERANCE};

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
        if browserenv_collect::trajectory::read(&dir).is_ok_and(|r| r.episodes.len() == 1) {
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

/// A recording made with archives (`--archive`) replays offline: each episode from its own
/// archive, the site gone; nothing diverges. An archive whose page changed is reported at the
/// step where it shows. The export carries the archives.
#[tokio::test]
async fn a_recording_with_archives_replays_offline_and_a_changed_page_is_reported() {
    use browserenv_server::archive::ArchiveConfig;
    use browserenv_server::ServerConfig;
    use browserenv_tests::archive_site::{ArchiveSite, GO_LINK};
    use browserenv_tui::offline::replay::replay_offline;

    let dir =
        std::env::temp_dir().join(format!("browserenv-replay-archived-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let site = ArchiveSite::start().await;
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        record_dir: Some(dir.clone()),
        archive: ArchiveConfig {
            record_into: Some(dir.clone()),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(site.url("/")))
        .await
        .unwrap();
    for action in [
        BrowserAction::wait(),
        BrowserAction::click(GO_LINK.0, GO_LINK.1),
        BrowserAction::finish(""),
    ] {
        client.step(action).await.unwrap();
    }
    client.close().await.unwrap();
    harness.stop().await;
    drop(site);
    let recording = browserenv_collect::trajectory::read(&dir).unwrap();
    let archive = recording.episodes[0].archive.clone().expect("an archive");

    let replaying = Harness::start_with(ServerConfig {
        settings: test_settings(),
        archive: ArchiveConfig {
            dir: Some(dir.clone()),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let base = replaying.server.base_url();
    let (lines, diverged) = replay_offline(&dir, &base, None, DEFAULT_TOLERANCE)
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

    // The page the link leads to is another in the archive now: step 2 diverges, and says how.
    let path = dir.join(&archive.file);
    let mut changed = browserenv_archive::read(&path, &Default::default()).unwrap();
    for exchange in &mut changed.exchanges {
        if exchange.request.url.ends_with("/landed") {
            exchange.response.body = b"<h1 style='font-size:90px'>Moved away</h1>".to_vec();
        }
    }
    std::fs::remove_file(&path).unwrap();
    let mut writer = browserenv_archive::ArchiveWriter::create(&path, &changed.info).unwrap();
    for exchange in &changed.exchanges {
        writer.append(exchange).unwrap();
    }
    writer.finish().unwrap();
    let (lines, diverged) = replay_offline(&dir, &base, None, DEFAULT_TOLERANCE)
        .await
        .unwrap();
    assert!(diverged, "{lines:#?}");
    let step = lines.iter().find(|l| l.contains("step 2 click")).unwrap();
    assert!(
        step.contains("screenshot:") && step.contains("differ"),
        "{step}"
    );
    assert!(
        lines.iter().any(|l| l.contains("step 1 wait: same")),
        "{lines:#?}"
    );
    replaying.stop().await;

    // The export carries the archive: beside the images, named in every row of its episode.
    let out = dir.with_extension("export");
    let _ = std::fs::remove_dir_all(&out);
    let report = browserenv_tui::offline::export::export(
        &dir,
        &out,
        browserenv_tui::offline::export::ExportFormat::Hf,
        &Default::default(),
    )
    .unwrap();
    assert_eq!(report.archives, 1);
    assert!(out.join(&archive.file).is_file());
    let rows = std::fs::read_to_string(out.join("metadata.jsonl")).unwrap();
    for row in rows.lines() {
        let row: serde_json::Value = serde_json::from_str(row).unwrap();
        assert_eq!(row["archive"], archive.file.as_str());
    }
    let atif = out.with_extension("atif");
    let _ = std::fs::remove_dir_all(&atif);
    browserenv_tui::offline::export::export(
        &dir,
        &atif,
        browserenv_tui::offline::export::ExportFormat::Atif,
        &Default::default(),
    )
    .unwrap();
    let document = std::fs::read_dir(&atif)
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "json"))
        .unwrap();
    let document: serde_json::Value =
        serde_json::from_slice(&std::fs::read(document.path()).unwrap()).unwrap();
    assert_eq!(document["extra"]["archive"], archive.file.as_str());
    assert!(atif.join(&archive.file).is_file());
    for folder in [&dir, &out, &atif] {
        std::fs::remove_dir_all(folder).unwrap();
    }
}
