//! Web archives on real Chromium (docs/archives.md): an episode recorded live (every response with
//! its request, in a WARC file of the recording, named in its episode line), then replayed with no
//! network: the same pixels, requests answered in order, redirects, posted forms and the cookies
//! they set; misses listed; every tab, frame and worker answered; a seed that fixes the clock.

use std::path::{Path, PathBuf};

use browserenv::{BrowserAction, Client, Key, ResetOptions, StepResult};
use browserenv_server::archive::{ArchiveConfig, ArchiveLimits};
use browserenv_server::ServerConfig;
use browserenv_tests::archive_site::{ArchiveSite, GO_LINK, NAME_FIELD, POPUP_LINK};
use browserenv_tests::{test_settings, Harness, Picture};
use serde_json::{json, Map, Value};

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("browserenv-archive-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A server recording every episode, with its archive, into `dir`.
async fn recording_server(dir: &Path, limits: ArchiveLimits) -> Harness {
    Harness::start_with(ServerConfig {
        settings: test_settings(),
        record_dir: Some(dir.to_path_buf()),
        archive: ArchiveConfig {
            record_into: Some(dir.to_path_buf()),
            limits,
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
}

/// A server replaying the archives of `dir` (`--archive-dir`).
async fn replaying_server(dir: &Path) -> Harness {
    Harness::start_with(ServerConfig {
        settings: test_settings(),
        archive: ArchiveConfig {
            dir: Some(dir.to_path_buf()),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
}

fn replay_reset(start_url: &str, archive: &str, seed: Option<i64>) -> Map<String, Value> {
    let mut kwargs = Map::new();
    kwargs.insert("start_url".into(), json!(start_url));
    kwargs.insert("archive".into(), json!(archive));
    if let Some(seed) = seed {
        kwargs.insert("seed".into(), json!(seed));
    }
    kwargs
}

/// The recording's episodes once the recorder has written `count` of them.
async fn episodes(dir: &Path, count: usize) -> Vec<browserenv_collect::trajectory::EpisodeRecord> {
    for _ in 0..200 {
        if let Ok(recording) = browserenv_collect::trajectory::read(dir) {
            if recording.episodes.len() >= count {
                return recording.episodes;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the recording never had {count} episode(s)");
}

/// The archive file once the writer has put at least `responses` exchanges in it.
async fn archive_of(path: &Path, responses: usize) -> browserenv_archive::Archive {
    let mut last = String::new();
    for _ in 0..200 {
        match browserenv_archive::read(path, &browserenv_archive::ReadLimits::default()) {
            Ok(archive) if archive.exchanges.len() >= responses => return archive,
            Ok(archive) => last = format!("{} responses", archive.exchanges.len()),
            Err(err) => last = err.to_string(),
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!(
        "{} never held {responses} responses: {last}",
        path.display()
    );
}

/// The same actions, in a person's order: wait for the page, follow a redirect, come back, post
/// a form that sets a cookie, finish.
fn actions() -> Vec<BrowserAction> {
    vec![
        BrowserAction::wait(),
        BrowserAction::click(GO_LINK.0, GO_LINK.1),
        BrowserAction::back(),
        BrowserAction::wait(),
        BrowserAction::click(NAME_FIELD.0, NAME_FIELD.1),
        BrowserAction::type_text("Ada"),
        BrowserAction::key(Key::Enter),
        BrowserAction::finish(""),
    ]
}

async fn run(client: &mut Client, first: StepResult) -> Vec<StepResult> {
    let mut seen = vec![first];
    for action in actions() {
        let result = client.step(action.clone()).await.unwrap();
        assert_eq!(
            result.observation.error, "",
            "{action:?}: {:?}",
            result.observation.metadata
        );
        seen.push(result);
    }
    seen
}

fn text_of(result: &StepResult) -> String {
    format!(
        "{} {}",
        result.observation.url, result.observation.metadata["title"]
    )
}

#[tokio::test]
async fn an_episode_recorded_live_replays_offline_with_the_same_pixels() {
    let dir = scratch("replay");
    let site = ArchiveSite::start().await;
    let harness = recording_server(&dir, ArchiveLimits::default()).await;
    let mut client = harness.client().await;
    let first = client
        .reset(ResetOptions::new(site.url("/")))
        .await
        .unwrap();
    let archive_name = first.observation.metadata["archive"]["file"]
        .as_str()
        .expect("the observation names the archive being recorded")
        .to_string();
    let live = run(&mut client, first).await;
    assert!(
        live[2].observation.url.ends_with("/landed"),
        "{}",
        text_of(&live[2])
    );
    assert!(
        live[7].observation.url.ends_with("/whoami"),
        "{}",
        text_of(&live[7])
    );
    client.close().await.unwrap();
    harness.stop().await;

    // The episode line names the archive; the archive holds every response with its request.
    let episode = &episodes(&dir, 1).await[0];
    let named = episode
        .archive
        .as_ref()
        .expect("the episode line names its archive");
    assert_eq!(named.file, archive_name);
    assert_eq!(named.left_out, Default::default());
    let archive = archive_of(&dir.join(&archive_name), named.responses as usize).await;
    let asked = |suffix: &str| {
        archive
            .exchanges
            .iter()
            .filter(|e| e.request.url.contains(suffix))
            .count()
    };
    for (suffix, at_least) in [
        ("/style.css", 1),
        ("/pixel.svg", 1),
        ("/counter", 6),
        ("/data.json?_=", 2),
        ("/go", 1),
        ("/landed", 1),
        ("/login", 1),
        ("/whoami", 1),
    ] {
        assert!(
            asked(suffix) >= at_least,
            "{suffix}: {:?}",
            archive
                .exchanges
                .iter()
                .map(|e| &e.request.url)
                .collect::<Vec<_>>()
        );
    }
    let login = archive
        .exchanges
        .iter()
        .find(|e| e.request.url.ends_with("/login"))
        .unwrap();
    assert_eq!(
        (login.request.method.as_str(), login.request.body.as_slice()),
        ("POST", &b"name=Ada"[..])
    );
    assert_eq!(login.response.status, 303);
    assert!(login
        .response
        .header("set-cookie")
        .unwrap()
        .starts_with("who=Ada"));
    assert_eq!(
        archive.info.start_url.as_deref(),
        Some(site.url("/").as_str())
    );
    assert_eq!(named.responses as usize, archive.exchanges.len());

    // The site changes; the replay shows it as it was, and asks it for nothing.
    site.set_edition(2);
    let served = site.served();
    let replay = replaying_server(&dir).await;
    let mut client = replay.client().await;
    let first = client
        .reset_with(replay_reset(&site.url("/"), &archive_name, None))
        .await
        .unwrap();
    assert_eq!(
        first.observation.metadata["archive"]["replay"],
        archive_name.as_str()
    );
    let replayed = run(&mut client, first).await;
    assert_eq!(site.served(), served, "a replay reaches no server");
    for (n, (live, replayed)) in live.iter().zip(&replayed).enumerate() {
        assert_eq!(
            live.observation.url, replayed.observation.url,
            "observation {n}"
        );
        let (a, b) = (
            Picture::from_base64(&live.observation.screenshot),
            Picture::from_base64(&replayed.observation.screenshot),
        );
        if a.pixels != b.pixels {
            save(&format!("live-{n}"), &live.observation.screenshot);
            save(&format!("replayed-{n}"), &replayed.observation.screenshot);
        }
        assert!(
            a.pixels == b.pixels,
            "observation {n} ({}) has other pixels in the replay",
            text_of(live)
        );
        assert!(
            replayed
                .observation
                .metadata
                .get("archive_misses")
                .is_none(),
            "observation {n}: {:?}",
            replayed.observation.metadata
        );
    }
    assert!(replayed[1].observation.metadata["title"] == "Edition 1");

    // A page the recording never saw: a 404, listed.
    let missing = client
        .reset_with(replay_reset(
            &site.url("/never-seen.html"),
            &archive_name,
            None,
        ))
        .await
        .unwrap();
    assert_eq!(
        missing.observation.metadata["archive_misses"],
        json!([site.url("/never-seen.html")])
    );
    client.close().await.unwrap();
    replay.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn popups_frames_and_workers_are_answered_from_the_archive_too() {
    let dir = scratch("tabs");
    let site = ArchiveSite::start().await;
    let harness = recording_server(&dir, ArchiveLimits::default()).await;
    let mut client = harness.client().await;
    let first = client
        .reset(ResetOptions::new(site.url("/parts.html")))
        .await
        .unwrap();
    let name = first.observation.metadata["archive"]["file"]
        .as_str()
        .unwrap()
        .to_string();
    let live = settled_parts(&harness, &mut client).await;
    let popup = client
        .step(BrowserAction::click(POPUP_LINK.0, POPUP_LINK.1))
        .await
        .unwrap();
    assert!(
        popup.observation.url.ends_with("/popup.html"),
        "{}",
        popup.observation.url
    );
    client.close().await.unwrap();
    harness.stop().await;
    let archive = &episodes(&dir, 1).await[0];
    let recorded = archive_of(
        &dir.join(&name),
        archive.archive.as_ref().unwrap().responses as usize,
    )
    .await;
    for part in [
        "/frame.html",
        "/from-frame",
        "/worker.js",
        "/from-worker",
        "/popup.html",
    ] {
        assert!(
            recorded
                .exchanges
                .iter()
                .any(|e| e.request.url.ends_with(part)),
            "{part} was recorded"
        );
    }
    let site_url = site.url("/parts.html");
    drop(site);

    // The site is gone: only the archive can answer.
    let replay = replaying_server(&dir).await;
    let mut client = replay.client().await;
    // No start URL: the archive's own (where its recording started).
    let mut kwargs = Map::new();
    kwargs.insert("archive".into(), json!(name));
    let first = client.reset_with(kwargs).await.unwrap();
    assert_eq!(first.observation.url, site_url);
    let replayed = settled_parts(&replay, &mut client).await;
    assert!(
        replayed
            .observation
            .metadata
            .get("archive_misses")
            .is_none(),
        "{:?}",
        replayed.observation.metadata
    );
    // The frame (another site's process) shows what the archive gave it, as it did live.
    let (a, b) = (
        Picture::from_base64(&live.observation.screenshot),
        Picture::from_base64(&replayed.observation.screenshot),
    );
    if a.pixels != b.pixels {
        save("parts-live", &live.observation.screenshot);
        save("parts-replayed", &replayed.observation.screenshot);
    }
    assert!(
        a.pixels == b.pixels,
        "the frame and the worker as they were"
    );
    let popup = client
        .step(BrowserAction::click(POPUP_LINK.0, POPUP_LINK.1))
        .await
        .unwrap();
    assert_eq!(
        popup.observation.metadata["title"], "Popup",
        "{:?}",
        popup.observation.metadata
    );
    assert!(popup.observation.metadata.get("archive_misses").is_none());
    client.close().await.unwrap();
    replay.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The parts page once its worker has answered (the settle waits for the page's own requests,
/// not a worker's), and a moment more for the frame.
async fn settled_parts(harness: &Harness, client: &mut Client) -> StepResult {
    for _ in 0..20 {
        if read_text(harness, client).await.contains("from the worker") {
            break;
        }
        client.step(BrowserAction::wait()).await.unwrap();
    }
    client.step(BrowserAction::wait()).await.unwrap();
    client.step(BrowserAction::wait()).await.unwrap()
}

/// A screenshot kept for a look when a comparison fails.
fn save(name: &str, screenshot: &str) {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(screenshot)
        .unwrap();
    let path = std::env::temp_dir().join(format!("browserenv-archive-{name}.png"));
    std::fs::write(&path, bytes).unwrap();
    eprintln!("saved {}", path.display());
}

/// The page's text as `read_page` gives it, frames included.
async fn read_text(harness: &Harness, client: &mut Client) -> String {
    let _ = client;
    let sessions: Value = reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    let layer: Value = reqwest::get(format!("{}/sessions/{id}/text", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    layer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|run| run["text"].as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[tokio::test]
async fn a_seed_fixes_the_clock_and_chance_and_without_one_the_clock_is_the_recorded_time() {
    let dir = scratch("clock");
    let site = ArchiveSite::start().await;
    let harness = recording_server(&dir, ArchiveLimits::default()).await;
    let mut client = harness.client().await;
    let first = client
        .reset(ResetOptions::new(site.url("/clock.html")))
        .await
        .unwrap();
    let name = first.observation.metadata["archive"]["file"]
        .as_str()
        .unwrap()
        .to_string();
    client.close().await.unwrap();
    harness.stop().await;
    episodes(&dir, 1).await;
    let recorded = browserenv_archive::read(&dir.join(&name), &Default::default())
        .unwrap()
        .info
        .recorded
        .unwrap();
    drop(site);
    let start_url = browserenv_archive::read(&dir.join(&name), &Default::default())
        .unwrap()
        .info
        .start_url
        .unwrap();

    let replay = replaying_server(&dir).await;
    let mut client = replay.client().await;
    let mut shots = Vec::new();
    for seed in [Some(7), Some(7), Some(8)] {
        let result = client
            .reset_with(replay_reset(&start_url, &name, seed))
            .await
            .unwrap();
        shots.push(result.observation.screenshot);
    }
    let [seven, seven_again, eight] = &shots[..] else {
        unreachable!()
    };
    assert!(
        Picture::from_base64(seven).pixels == Picture::from_base64(seven_again).pixels,
        "a seed gives the same pixels"
    );
    let text = read_text(&replay, &mut client).await;
    assert!(
        Picture::from_base64(seven).pixels != Picture::from_base64(eight).pixels,
        "another seed, another page: {text}"
    );
    client
        .reset_with(replay_reset(&start_url, &name, None))
        .await
        .unwrap();
    let text = read_text(&replay, &mut client).await;
    let day = chrono_day(recorded);
    assert!(text.contains(&day), "the recorded day {day} in {text}");
    client.close().await.unwrap();
    replay.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `YYYY-MM-DD` of a time, UTC.
fn chrono_day(at: std::time::SystemTime) -> String {
    let days = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() / 86_400;
    let stamp = browserenv_collect::trajectory::timestamp(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(days * 86_400),
    );
    stamp[..10].to_string()
}

#[tokio::test]
async fn bodies_and_responses_past_the_bounds_are_left_out_and_counted() {
    let dir = scratch("bounds");
    let site = ArchiveSite::start().await;
    let harness = recording_server(
        &dir,
        ArchiveLimits {
            body_bytes: 1 << 20,
            episode_bytes: 1000,
        },
    )
    .await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(site.url("/big.bin")))
        .await
        .unwrap();
    client
        .reset(ResetOptions::new(site.url("/")))
        .await
        .unwrap();
    let page = client.step(BrowserAction::wait()).await.unwrap();
    let left_out = &page.observation.metadata["archive"]["left_out"];
    assert!(left_out["responses"].as_u64().unwrap() > 0, "{left_out}");
    client.close().await.unwrap();
    harness.stop().await;
    let episodes = episodes(&dir, 2).await;
    let big = episodes[0].archive.as_ref().unwrap();
    assert_eq!(big.left_out.bodies, 1, "{big:?}");
    let archive = archive_of(&dir.join(&big.file), 1).await;
    assert!(
        archive.exchanges[0].response.body_left_out
            && archive.exchanges[0].response.body.is_empty()
    );
    let full = episodes[1].archive.as_ref().unwrap();
    assert!(full.left_out.responses > 0, "{full:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Everything an archive file holds, unpacked: what its bytes could give away.
fn unpacked(path: &Path) -> String {
    use std::io::Read;
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    String::from_utf8_lossy(&text).into_owned()
}

#[tokio::test]
async fn a_person_s_secrets_never_reach_the_archive() {
    let dir = scratch("secrets");
    let site = ArchiveSite::start().await;
    let typed = browserenv_server::archive::TypedSecrets::default();
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        record_dir: Some(dir.clone()),
        archive: ArchiveConfig {
            record_into: Some(dir.clone()),
            typed_secrets: typed.clone(),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut client = harness.client().await;
    // Typed into a password field: the session knows it is a secret.
    let first = client
        .reset(ResetOptions::new(site.url("/password.html")))
        .await
        .unwrap();
    let password_archive = first.observation.metadata["archive"]["file"]
        .as_str()
        .unwrap()
        .to_string();
    for action in [
        BrowserAction::click(NAME_FIELD.0, NAME_FIELD.1),
        BrowserAction::type_text("hunter2 p@ss"),
        BrowserAction::key(Key::Enter),
    ] {
        client.step(action).await.unwrap();
    }
    // Typed into a plain field as a person's secret (the UI's `s`): its client says so.
    let second = client
        .reset(ResetOptions::new(site.url("/")))
        .await
        .unwrap();
    let plain_archive = second.observation.metadata["archive"]["file"]
        .as_str()
        .unwrap()
        .to_string();
    typed.add("Grace Hopper");
    let done = [
        BrowserAction::click(NAME_FIELD.0, NAME_FIELD.1),
        BrowserAction::type_text("Grace Hopper"),
        BrowserAction::key(Key::Enter),
    ];
    let mut last = None;
    for action in done {
        last = Some(client.step(action).await.unwrap());
    }
    assert!(last.unwrap().observation.url.ends_with("/whoami"));
    client.close().await.unwrap();
    harness.stop().await;
    episodes(&dir, 2).await;
    for (name, secret, encoded) in [
        (&password_archive, "hunter2", "p%40ss"),
        (&plain_archive, "Grace", "Grace+Hopper"),
    ] {
        let text = unpacked(&dir.join(name));
        assert!(
            text.contains("/login") && text.contains("/whoami"),
            "{name} holds the exchanges"
        );
        assert!(
            !text.contains(secret) && !text.contains(encoded),
            "{name}: {text}"
        );
        assert!(text.contains("<redacted:12 characters>"), "{name}: {text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
