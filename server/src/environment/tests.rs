//! The episode rules, against the fake browser.

use super::*;
use crate::browser::Incidents;
use crate::fake::{FakeLauncher, FakeScript};
use crate::settings::SettleMode;
use browserenv::models::Key;
use std::time::Duration;

fn settings() -> EnvSettings {
    EnvSettings {
        max_steps: 3,
        action_wait: Duration::from_millis(20),
        explicit_wait: Duration::from_millis(10),
        action_timeout: Duration::from_millis(200),
        screenshot_timeout: Duration::from_millis(200),
        page_load_timeout: Duration::from_millis(200),
        ..EnvSettings::default()
    }
}

fn kwargs(url: &str) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("start_url".into(), json!(url));
    map
}

fn env(script: FakeScript) -> (Environment<FakeLauncher>, Arc<FakeLauncher>) {
    let launcher = Arc::new(FakeLauncher::new(script));
    (
        Environment::new(launcher.clone(), settings()).for_session("s"),
        launcher,
    )
}

#[tokio::test]
async fn rejects_bad_start_urls_without_touching_the_episode() {
    let (mut env, launcher) = env(FakeScript::default());
    env.reset(&kwargs("https://a.example/")).await.unwrap();
    for bad in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "https://user:pw@a.example/",
        "https://user@a.example/",
        "ftp://a.example/",
        "not a url",
        "http://",
        "data:text/html,hi",
        "http:///basic.html",
        "https:///a.example/",
        "http:/basic.html",
        "http:basic.html",
        "http://@/x",
    ] {
        let err = env.reset(&kwargs(bad)).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected an HTTP(S) URL without credentials",
            "{bad}"
        );
    }
    assert!(env.reset(&Map::new()).await.is_err());
    assert_eq!(launcher.launched(), 1);
    // The episode survived the bad input.
    assert!(env.step(&BrowserAction::wait(), false).await.is_ok());
}

#[tokio::test]
async fn step_before_reset_and_after_done_is_refused() {
    let (mut env, _) = env(FakeScript::default());
    assert_eq!(
        env.step(&BrowserAction::back(), false)
            .await
            .unwrap_err()
            .to_string(),
        "reset before stepping"
    );
    env.reset(&kwargs("https://a.example/")).await.unwrap();
    let result = env
        .step(&BrowserAction::finish("done"), false)
        .await
        .unwrap();
    assert!(result.done);
    assert_eq!(
        env.step(&BrowserAction::back(), false)
            .await
            .unwrap_err()
            .to_string(),
        "reset before stepping"
    );
}

#[tokio::test]
async fn state_counts_steps_and_keeps_the_given_episode_id() {
    let (mut env, _) = env(FakeScript::default());
    assert_eq!(env.state(), BrowserState::default());
    let mut args = kwargs("https://a.example/");
    args.insert("episode_id".into(), json!("ep-1"));
    args.insert("seed".into(), json!(7));
    args.insert("unknown".into(), json!(true));
    let first = env.reset(&args).await.unwrap();
    assert_eq!(first.observation.url, "https://a.example/");
    assert!(!first.done);
    env.step(&BrowserAction::scroll(100), false).await.unwrap();
    assert_eq!(
        env.state(),
        BrowserState {
            episode_id: Some("ep-1".into()),
            step_count: 1
        }
    );
    env.reset(&kwargs("https://a.example/")).await.unwrap();
    let state = env.state();
    assert_eq!(state.step_count, 0);
    assert_eq!(state.episode_id.unwrap().len(), 36, "a uuid4");
}

#[tokio::test]
async fn step_limit_ends_the_episode() {
    let (mut env, _) = env(FakeScript::default());
    env.reset(&kwargs("https://a.example/")).await.unwrap();
    assert!(!env.step(&BrowserAction::wait(), false).await.unwrap().done);
    assert!(!env.step(&BrowserAction::wait(), false).await.unwrap().done);
    assert!(env.step(&BrowserAction::wait(), false).await.unwrap().done);
}

#[tokio::test]
async fn scroll_uses_the_last_click_else_the_centre() {
    let (mut env, launcher) = env(FakeScript::default());
    env.reset(&kwargs("https://a.example/")).await.unwrap();
    env.step(&BrowserAction::scroll(300), false).await.unwrap();
    env.step(&BrowserAction::click(10, 20), false)
        .await
        .unwrap();
    env.step(&BrowserAction::scroll(-300), false).await.unwrap();
    let calls = launcher.calls();
    assert!(
        calls.contains(&"scroll 400 300 300".to_string()),
        "{calls:?}"
    );
    assert!(calls.contains(&"click 10 20".to_string()), "{calls:?}");
    assert!(
        calls.contains(&"scroll 10 20 -300".to_string()),
        "{calls:?}"
    );
}

#[tokio::test]
async fn keys_and_text_reach_the_browser() {
    let (mut env, launcher) = env(FakeScript::default());
    env.reset(&kwargs("https://a.example/")).await.unwrap();
    env.step(&BrowserAction::type_text("héllo"), false)
        .await
        .unwrap();
    env.step(&BrowserAction::key(Key::CtrlA), false)
        .await
        .unwrap();
    let calls = launcher.calls();
    assert!(calls.contains(&"type héllo".to_string()));
    assert!(calls.contains(&"press CTRL+A".to_string()));
}

#[tokio::test]
async fn bot_verification_ends_the_episode() {
    let script = FakeScript {
        page_text: "Verify you are human. Performance & security by Cloudflare".into(),
        ..FakeScript::default()
    };
    let (mut env, _) = env(script);
    let result = env.reset(&kwargs("https://a.example/")).await.unwrap();
    assert!(result.done);
    assert_eq!(result.observation.error, "blocked_by_bot_verification");
}

#[tokio::test]
async fn a_hung_screenshot_is_renderer_timeout_and_done() {
    let script = FakeScript {
        hang_screenshot: true,
        ..FakeScript::default()
    };
    let (mut env, _) = env(script);
    let result = env.reset(&kwargs("https://a.example/")).await.unwrap();
    assert!(result.done);
    assert_eq!(result.observation.error, "renderer_timeout");
    assert_eq!(result.observation.screenshot, "");
}

#[tokio::test]
async fn a_hung_action_is_reported_and_bounded() {
    let script = FakeScript {
        hang_click: true,
        ..FakeScript::default()
    };
    let (mut env, _) = env(script);
    env.reset(&kwargs("https://a.example/")).await.unwrap();
    let result = env.step(&BrowserAction::click(1, 1), false).await.unwrap();
    assert_eq!(result.observation.error, "action_timeout");
    assert!(
        !result.done,
        "the page still paints, so the episode goes on"
    );
}

#[tokio::test]
async fn page_load_timeout_is_not_fatal() {
    let script = FakeScript {
        hang_goto: true,
        ..FakeScript::default()
    };
    let (mut env, _) = env(script);
    let result = env.reset(&kwargs("https://a.example/")).await.unwrap();
    assert_eq!(result.observation.error, "page_load_timeout");
    assert!(!result.done);
    assert!(!result.observation.screenshot.is_empty());
}

#[tokio::test]
async fn incidents_become_metadata_and_codes() {
    let mut incidents = Incidents::default();
    for i in 0..25 {
        incidents.dialogs.push(("alert".into(), format!("hi {i}")));
    }
    incidents
        .downloads_denied
        .push("https://a.example/x.bin".into());
    incidents.tabs_closed = 3;
    let script = FakeScript {
        incidents,
        ..FakeScript::default()
    };
    let (mut env, _) = env(script);
    let result = env.reset(&kwargs("https://a.example/")).await.unwrap();
    let metadata = &result.observation.metadata;
    assert_eq!(metadata["dialogs"][0]["type"], "alert");
    assert_eq!(
        metadata["dialogs"].as_array().unwrap().len(),
        crate::capped::INCIDENTS_KEPT
    );
    assert_eq!(metadata["dialogs_more"], 15);
    assert_eq!(metadata["tabs_closed"], 3);
    assert!(metadata.get("downloads_denied_more").is_none());
    assert_eq!(result.observation.error, "download_blocked");
    assert!(metadata["timings_ms"]["total"].is_number());
    // A reset says how long it waited for its browser; a step has none to wait for.
    assert!(metadata["timings_ms"]["browser"].is_number());
    assert_eq!(metadata["title"], "Fake page");
    let stepped = env.step(&BrowserAction::wait(), false).await.unwrap();
    assert!(stepped.observation.metadata["timings_ms"]
        .get("browser")
        .is_none());
}

#[tokio::test]
async fn task_resets_use_the_tasks_start_url_and_step_limit() {
    let tasks = TaskSet::parse(
        r#"{"id":"t1","category":"navigation","instruction":"Go","start_url":"start.html","max_steps":2,"check":{"url":"/done"}}"#,
        "inline",
    )
    .unwrap();
    let catalog = TaskCatalog {
        tasks,
        base_url: Some(url::Url::parse("https://site.example/").unwrap()),
        folder: None,
    };
    let (base, _) = self::env(FakeScript::default());
    let mut tasked = Environment {
        settings: EnvSettings {
            max_steps: 50,
            ..settings()
        },
        ..base
    }
    .with_tasks(Some(Arc::new(catalog)));
    let mut args = Map::new();
    args.insert("task_id".into(), json!("t1"));
    let first = tasked.reset(&args).await.unwrap();
    assert_eq!(first.observation.url, "https://site.example/start.html");
    assert_eq!(tasked.task_id().as_deref(), Some("t1"));
    assert!(
        !tasked
            .step(&BrowserAction::wait(), false)
            .await
            .unwrap()
            .done
    );
    let last = tasked.step(&BrowserAction::wait(), false).await.unwrap();
    assert!(
        last.done,
        "the task's max_steps (2) wins over the server's (50)"
    );
    assert_eq!(last.reward, Some(0.0), "not finished: no reward");

    let (mut plain, _) = self::env(FakeScript::default());
    let err = plain.reset(&args).await.unwrap_err();
    assert!(
        err.to_string().contains("this server has no tasks"),
        "{}",
        err.to_string()
    );
}

#[tokio::test]
async fn the_text_layer_is_read_once_per_step_and_needs_a_page() {
    let (mut env, launcher) = env(FakeScript::default());
    let err = env.visible_text().await.unwrap_err();
    assert!(
        err.to_string().contains("reset first"),
        "{}",
        err.to_string()
    );
    env.reset(&kwargs("https://a.example/")).await.unwrap();
    let first = env.visible_text().await.unwrap();
    assert_eq!((first.session.as_str(), first.step), ("s", 0));
    env.visible_text().await.unwrap();
    let reads = |launcher: &FakeLauncher| {
        launcher
            .calls()
            .iter()
            .filter(|c| *c == "visible_text")
            .count()
    };
    assert_eq!(reads(&launcher), 1, "the same step is read once");
    env.step(&BrowserAction::wait(), false).await.unwrap();
    assert_eq!(env.visible_text().await.unwrap().step, 1);
    assert_eq!(reads(&launcher), 2);
    assert_eq!(env.state().step_count, 1, "reading is not a step");
}

#[tokio::test]
async fn fixed_mode_sleeps_the_action_wait() {
    let launcher = Arc::new(FakeLauncher::new(FakeScript::default()));
    let mut env = Environment::new(
        launcher.clone(),
        EnvSettings {
            settle: SettleMode::Fixed,
            action_wait: Duration::from_millis(150),
            ..settings()
        },
    );
    env.reset(&kwargs("https://a.example/")).await.unwrap();
    let result = env.step(&BrowserAction::scroll(10), false).await.unwrap();
    assert_eq!(result.observation.metadata["settle"], "fixed");
    assert!(
        result.observation.metadata["timings_ms"]["settle"]
            .as_f64()
            .unwrap()
            >= 150.0
    );
    assert!(!launcher.calls().iter().any(|c| c == "settle"));
}

/// A task started anywhere but its own start (where it ends, a page of the agent's that shows
/// the answer) is refused: its reward would be earned without doing it.
#[tokio::test]
async fn a_task_starts_at_its_own_start_url_only() {
    let tasks = TaskSet::parse(
        r#"{"id":"t1","category":"navigation","instruction":"Go","start_url":"start.html","max_steps":5,"check":{"url":"/done"}}"#,
        "inline",
    )
    .unwrap();
    let catalog = TaskCatalog {
        tasks,
        base_url: Some(url::Url::parse("https://site.example/").unwrap()),
        folder: None,
    };
    let (base, _) = self::env(FakeScript::default());
    let mut tasked = base.with_tasks(Some(Arc::new(catalog)));
    for elsewhere in ["https://attacker.example/done", "https://site.example/done"] {
        let mut args = Map::new();
        args.insert("task_id".into(), json!("t1"));
        args.insert("start_url".into(), json!(elsewhere));
        let refused = tasked.reset(&args).await.unwrap_err();
        assert!(
            refused.to_string().contains("starts at its own start URL"),
            "{}",
            refused.to_string()
        );
    }
    // Its own start, named or not, is the task.
    let mut args = Map::new();
    args.insert("task_id".into(), json!("t1"));
    args.insert("start_url".into(), json!("https://site.example/start.html"));
    tasked.reset(&args).await.unwrap();
    args.remove("start_url");
    tasked.reset(&args).await.unwrap();
}

/// A replay's misses are the page's URLs: a form sent with GET carries what a person typed as a
/// secret, which the observation hides there as everywhere else.
#[tokio::test]
async fn a_replay_s_missed_url_does_not_show_a_secret() {
    let dir = crate::archive::tests::folder("misses");
    crate::archive::tests::write(
        &dir.join("login.warc.gz"),
        &[("https://a.example/login", b"<form><input name=pw></form>")],
    );
    let archives = crate::archive::Archives::start(
        crate::archive::ArchiveConfig {
            dir: Some(dir.clone()),
            ..Default::default()
        },
        None,
    )
    .unwrap();
    let (env, _) = self::env(FakeScript {
        enter_goes_to: Some("https://a.example/login?pw=hunter2".into()),
        ..FakeScript::default()
    });
    let mut env = env.with_archives(Some(Arc::new(archives)));
    let mut args = kwargs("https://a.example/login");
    args.insert("archive".into(), json!("login.warc.gz"));
    let reset = env.reset(&args).await.unwrap();
    assert_eq!(reset.observation.metadata["archive"]["answered"], 1);
    env.step(&BrowserAction::type_text("hunter2"), true)
        .await
        .unwrap();
    let sent = env
        .step(&BrowserAction::key(Key::Enter), false)
        .await
        .unwrap();
    let metadata = &sent.observation.metadata;
    assert_eq!(metadata["archive"]["missed"], 1, "{metadata:?}");
    assert_eq!(
        metadata["archive_misses"],
        json!(["https://a.example/login?pw=<redacted:7 characters>"])
    );
    let shown = format!("{} {metadata:?}", sent.observation.url);
    assert!(!shown.contains("hunter2"), "{shown}");
    env.close().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What a reset's observation says of a prepared page (`metadata.prepared`).
fn was_prepared(result: &StepResult) -> bool {
    result.observation.metadata.get("prepared") == Some(&json!(true))
}

/// A reset after an episode (a tenth of a second, longer than the fake's reset).
async fn reset_after_an_episode<L: Launcher>(env: &mut Environment<L>, url: &str) -> StepResult {
    if env.state().episode_id.is_some() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    env.reset(&kwargs(url)).await.unwrap()
}

fn prepares(launcher: &FakeLauncher) -> usize {
    launcher
        .calls()
        .iter()
        .filter(|call| call.starts_with("prepare "))
        .count()
}

#[tokio::test]
async fn a_reset_takes_the_page_prepared_for_its_start_and_nothing_else() {
    let (mut env, launcher) = env(FakeScript::default());
    let (a, b) = ("https://a.example/", "https://b.example/");
    let gotos = |launcher: &FakeLauncher, url: &str| {
        launcher
            .calls()
            .iter()
            .filter(|call| **call == format!("goto {url}"))
            .count()
    };
    // The session's first start is prepared for the next episode.
    assert!(!was_prepared(&reset_after_an_episode(&mut env, a).await));
    assert_eq!(gotos(&launcher, a), 1);
    // The same start again: the page loaded ahead, nothing loaded on the reset.
    let again = reset_after_an_episode(&mut env, a).await;
    assert!(was_prepared(&again));
    assert_eq!(gotos(&launcher, a), 1);
    assert_eq!(again.observation.url, a);
    // Another start: the page prepared is let go (another fresh browser), the start is loaded,
    // and nothing is prepared after a start that changed.
    let launched = launcher.launched();
    let other = reset_after_an_episode(&mut env, b).await;
    assert!(!was_prepared(&other));
    assert_eq!(gotos(&launcher, b), 1);
    assert_eq!(launcher.launched(), launched + 2, "the prepared one let go");
    assert_eq!(prepares(&launcher), 2);
    // Repeated, it is prepared again.
    assert!(!was_prepared(&reset_after_an_episode(&mut env, b).await));
    assert!(was_prepared(&reset_after_an_episode(&mut env, b).await));
    assert_eq!(gotos(&launcher, b), 2);
}

/// Resets back to back would each wait for the page loaded ahead just before them: after an
/// episode shorter than its reset nothing is loaded ahead; a longer one brings it back.
#[tokio::test]
async fn resets_back_to_back_load_their_own_page() {
    let (mut env, launcher) = env(FakeScript {
        load_time: Duration::from_millis(30),
        ..FakeScript::default()
    });
    let a = "https://a.example/";
    env.reset(&kwargs(a)).await.unwrap();
    assert_eq!(
        prepares(&launcher),
        1,
        "a session's first start is prepared"
    );
    assert!(was_prepared(&env.reset(&kwargs(a)).await.unwrap()));
    assert_eq!(
        prepares(&launcher),
        1,
        "not after an episode shorter than its reset"
    );
    for _ in 0..3 {
        assert!(!was_prepared(&env.reset(&kwargs(a)).await.unwrap()));
    }
    assert_eq!(prepares(&launcher), 1);
    assert!(!was_prepared(&reset_after_an_episode(&mut env, a).await));
    assert_eq!(
        prepares(&launcher),
        2,
        "after a longer episode it is prepared again"
    );
    assert!(was_prepared(&reset_after_an_episode(&mut env, a).await));
}

/// A session's first reset launches its browser: that is not what loading its page ahead takes,
/// and an episode shorter than the launch still leaves time for the load.
#[tokio::test]
async fn an_episode_shorter_than_the_browser_s_launch_still_gets_its_page_prepared() {
    let (mut env, launcher) = env(FakeScript {
        load_time: Duration::from_millis(20),
        launch_time: Duration::from_millis(400),
        ..FakeScript::default()
    });
    let a = "https://a.example/";
    env.reset(&kwargs(a)).await.unwrap();
    for episode in 2..=3 {
        assert!(
            was_prepared(&reset_after_an_episode(&mut env, a).await),
            "episode {episode} (100 ms after a reset whose launch took 400) starts prepared"
        );
    }
    assert_eq!(prepares(&launcher), 3);
}

#[tokio::test]
async fn nothing_is_prepared_when_turned_off_or_after_a_fixed_wait() {
    for settings in [
        EnvSettings {
            prepared_resets: false,
            ..settings()
        },
        EnvSettings {
            settle: SettleMode::Fixed,
            ..settings()
        },
    ] {
        let launcher = Arc::new(FakeLauncher::new(FakeScript::default()));
        let mut env = Environment::new(launcher.clone(), settings.clone());
        for _ in 0..3 {
            let result = env.reset(&kwargs("https://a.example/")).await.unwrap();
            assert!(!was_prepared(&result), "{settings:?}");
        }
        assert!(
            !launcher
                .calls()
                .iter()
                .any(|call| call.starts_with("prepare ")),
            "{settings:?}"
        );
    }
}
