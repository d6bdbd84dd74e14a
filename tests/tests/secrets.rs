//! A person's secrets on real Chromium, wherever they could leave the server: the agent's
//! pixels, a check's details (in the log, the recording), and a secret typed in pieces.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use browserenv::{BrowserAction, Key, ResetOptions};
use browserenv_server::environment::TaskCatalog;
use browserenv_server::ServerConfig;
use browserenv_tests::watch::{reply, send, session_id, until, watch};
use browserenv_tests::{test_settings, Harness, Picture};
use serde_json::json;

/// What the server logs in this test binary (its verdict lines), kept to be searched.
fn log() -> Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || Sink(sink.clone()))
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
        buffer
    })
    .clone()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every file under `dir`, read as text.
fn everything_in(dir: &std::path::Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        all.push_str(&String::from_utf8_lossy(
            &std::fs::read(entry.path()).unwrap_or_default(),
        ));
    }
    all
}

/// A plain text field into which a person typed a secret is covered in the agent's picture (and
/// the other watchers'), the rest of the page as it is; the person at the wheel sees their own.
#[tokio::test]
async fn a_secret_a_person_types_into_a_plain_field_is_covered_in_the_agents_frame() {
    let harness = Harness::start(test_settings()).await;
    let mut agent = harness.client().await;
    agent
        .reset(ResetOptions::new(harness.page("login.html")))
        .await
        .unwrap();
    let id = session_id(&harness).await;
    let mut person = watch(&harness, &id, None).await.unwrap();
    let mut other = watch(&harness, &id, None).await.unwrap();
    send(
        &mut person,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    assert_eq!(until(&mut person, reply).await["type"], "control");
    let secret = "hunter2-774411";
    let mut own = None;
    for (step, mark) in [
        (json!({"op": "click", "x": 250, "y": 115}), false),
        (json!({"op": "type", "text": secret}), true),
    ] {
        send(
            &mut person,
            json!({"type": "step", "data": step, "secret": mark}),
        )
        .await;
        let answer = until(&mut person, reply).await;
        assert_eq!(answer["type"], "observation", "{answer}");
        own = Some(answer);
    }
    // What the other watcher was shown of the secret step.
    let shown = until(&mut other, |f| {
        f["type"] == "event" && f["data"]["action"]["op"] == "type"
    })
    .await;
    send(&mut person, json!({"type": "release"})).await;
    until(&mut person, |f| f["type"] == "control").await;
    let after = agent.step(BrowserAction::wait()).await.unwrap();
    let own = own.unwrap();
    let own_picture =
        Picture::from_base64(own["data"]["observation"]["screenshot"].as_str().unwrap());
    let agents = Picture::from_base64(&after.observation.screenshot);
    assert_eq!(
        after.observation.metadata["password_boxes"],
        json!([[100, 100, 308, 36]]),
        "the marked field holds a secret"
    );
    // The person saw their own typing; the agent sees the field covered, all of it.
    assert_ne!(own_picture.rgb(110, 115), [0, 0, 0]);
    for y in 100..136 {
        for x in 100..408 {
            assert_eq!(agents.rgb(x, y), [0, 0, 0], "({x}, {y}) of the field shows");
        }
    }
    // And nothing else of the page changed (the field's box aside).
    for y in 0..600 {
        for x in 0..800 {
            if !((100..408).contains(&x) && (100..136).contains(&y)) {
                assert_eq!(agents.rgb(x, y), own_picture.rgb(x, y), "({x}, {y})");
            }
        }
    }
    let watched = shown["data"]["result"]["observation"]["screenshot"]
        .as_str()
        .unwrap();
    assert_eq!(Picture::from_base64(watched).rgb(110, 115), [0, 0, 0]);
    agent.close().await.unwrap();
    harness.stop().await;
}

/// The secret is what the field holds: typed in pieces with a BACKSPACE between, then sent in a
/// GET form, it is hidden whole in the agent's URL.
#[tokio::test]
async fn a_secret_typed_in_pieces_is_hidden_as_the_field_holds_it() {
    let harness = Harness::start(test_settings()).await;
    let mut agent = harness.client().await;
    agent
        .reset(ResetOptions::new(harness.page("pwform.html")))
        .await
        .unwrap();
    agent.step(BrowserAction::click(250, 215)).await.unwrap();
    for action in [
        BrowserAction::type_text("qwerty9"),
        BrowserAction::key(Key::Backspace),
        BrowserAction::type_text("8Z"),
        BrowserAction::key(Key::Enter),
    ] {
        agent.step(action).await.unwrap();
    }
    let after = agent.step(BrowserAction::wait()).await.unwrap();
    let url = &after.observation.url;
    assert!(url.contains("pw="), "the form was sent: {url}");
    assert!(!url.contains("qwerty") && !url.contains("8Z"), "{url}");
    assert!(url.contains("<redacted:8 characters>"), "{url}");
    agent.close().await.unwrap();
    harness.stop().await;
}

/// A check's details quote the final URL: a typed secret in it, however it is spelled there
/// (`hun+ter2%21%22q`), is hidden before it is quoted, in the log and in the recording.
#[tokio::test]
async fn a_secret_spelled_otherwise_stays_out_of_a_checks_details() {
    let log = log();
    let dir =
        std::env::temp_dir().join(format!("browserenv-secret-details-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let pages = browserenv_server::site::serve_dir(browserenv_tests::assets_dir().join("pages"))
        .await
        .unwrap();
    let tasks = browserenv_collect::tasks::TaskSet::parse(
        &json!({
            "id": "sign-in", "category": "interaction", "instruction": "Sign in.",
            "start_url": "pwform.html", "check": {"url": "^never$"},
        })
        .to_string(),
        "tasks.jsonl",
    )
    .unwrap();
    let catalog = TaskCatalog {
        tasks,
        base_url: Some(url::Url::parse(&pages.url("")).unwrap()),
        folder: None,
    };
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        record_dir: Some(dir.clone()),
        tasks: Some(Arc::new(catalog)),
        ..ServerConfig::default()
    })
    .await;
    let mut agent = harness.client().await;
    let task = json!({"task_id": "sign-in"}).as_object().unwrap().clone();
    agent.reset_with(task).await.unwrap();
    agent.step(BrowserAction::click(250, 215)).await.unwrap();
    let secret = "hun ter2!\"q";
    agent.step(BrowserAction::type_text(secret)).await.unwrap();
    agent.step(BrowserAction::key(Key::Enter)).await.unwrap();
    let done = agent.step(BrowserAction::finish("")).await.unwrap();
    assert_eq!(done.reward, Some(0.0));
    agent.close().await.unwrap();
    harness.stop().await;
    let logged = String::from_utf8_lossy(&log.lock().unwrap()).to_string();
    let recorded = everything_in(&dir);
    assert!(
        logged.contains("final URL"),
        "the verdict was logged: {logged}"
    );
    assert!(recorded.contains("final URL"), "the verdict was recorded");
    for form in [
        secret,
        "hun+ter2",
        "ter2%21",
        "hun%20ter2",
        "ter2!\\\"q",
        "hun ter2",
    ] {
        assert!(!logged.contains(form), "the log holds {form}: {logged}");
        assert!(!recorded.contains(form), "the recording holds {form}");
    }
    assert!(logged.contains("<redacted:11 characters>"), "{logged}");
    let _ = std::fs::remove_dir_all(&dir);
}
