//! Task episodes on real Chromium: `reset` with `task_id`, and the reward and verdict on `finish`.

use std::sync::{Mutex, OnceLock};

use browserenv::models::Key;
use browserenv::protocol::ErrorCode;
use browserenv::{BrowserAction, ClientError, StepResult};
use browserenv_collect::tasks::TaskSet;
use browserenv_collect::trajectory::read;
use browserenv_server::ServerConfig;
use browserenv_tests::{assets_dir, test_settings, Harness};
use serde_json::{json, Map, Value};

fn task_reset(id: &str) -> Map<String, Value> {
    let mut kwargs = Map::new();
    kwargs.insert("task_id".into(), json!(id));
    kwargs
}

fn verdict(result: &StepResult) -> &Value {
    &result.observation.metadata["verdict"]
}

#[tokio::test]
async fn a_right_answer_earns_1_and_a_wrong_one_0() {
    let (harness, site) = Harness::with_demo_tasks(test_settings()).await;
    let mut client = harness.client().await;
    let first = client.reset_with(task_reset("info-founded")).await.unwrap();
    assert_eq!(first.observation.url, site.url("index.html"));
    assert_eq!(first.observation.metadata["task"]["id"], "info-founded");
    assert!(first.observation.metadata["task"]["instruction"]
        .as_str()
        .unwrap()
        .contains("founded"));
    assert_eq!(first.reward, Some(0.0));
    let right = client.step(BrowserAction::finish("1968")).await.unwrap();
    assert!(right.done);
    assert_eq!(right.reward, Some(1.0));
    assert_eq!(verdict(&right)["passed"], true);

    client.reset_with(task_reset("info-founded")).await.unwrap();
    let wrong = client.step(BrowserAction::finish("1979")).await.unwrap();
    assert_eq!(wrong.reward, Some(0.0));
    assert_eq!(
        *verdict(&wrong),
        json!({"passed": false, "failed": ["answer"]})
    );
    harness.stop().await;
}

/// Everything the server logs, from the first test of this binary that asks (the server runs in
/// the test's process): the tests find their own lines by episode id.
fn server_log() -> &'static Mutex<Vec<u8>> {
    static LOG: OnceLock<&'static Mutex<Vec<u8>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log: &'static Mutex<Vec<u8>> = Box::leak(Box::new(Mutex::new(Vec::new())));
        struct Appender(&'static Mutex<Vec<u8>>);
        impl std::io::Write for Appender {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        tracing_subscriber::fmt()
            .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
            .with_ansi(false)
            .with_writer(move || Appender(log))
            .try_init()
            .expect("the only subscriber of this test binary");
        log
    })
}

/// A failed `finish` says which part of the check failed and nothing of what the check expects,
/// or an agent could read the answer off its observation, reset and finish again with it. The
/// whole verdict, details and all, goes to the recording's episode line and the server's log.
#[tokio::test]
async fn a_failed_finish_names_the_failed_check_and_never_what_it_expects() {
    let log = server_log();
    let dir = std::env::temp_dir().join(format!("browserenv-verdicts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (harness, _site) = Harness::with_demo_tasks_and(ServerConfig {
        settings: test_settings(),
        record_dir: Some(dir.clone()),
        ..ServerConfig::default()
    })
    .await;
    let tasks = TaskSet::load(&assets_dir().join("tasks/demo.jsonl")).unwrap();
    // What each task's check expects: its answer, URL pattern or page text.
    let expected = |id: &str| -> Vec<String> {
        let check = &tasks.get(id).unwrap().check;
        [
            check.answer.as_ref().map(|answer| answer.value.clone()),
            check.url.clone(),
            check.page_text_contains.clone(),
        ]
        .into_iter()
        .flatten()
        .collect()
    };
    let cases = [
        // An answer matched as a string (normalized), one matched by a regex, and a URL regex
        // with page text, both failing.
        ("info-founded", "1979", json!(["answer"])),
        ("info-workshop-time", "11:00", json!(["answer"])),
        ("act-search-clamp", "", json!(["url", "page_text_contains"])),
    ];
    let mut client = harness.client().await;
    for (id, answer, failed) in &cases {
        let mut kwargs = task_reset(id);
        kwargs.insert("episode_id".into(), json!(format!("wrong-{id}")));
        client.reset_with(kwargs).await.unwrap();
        let wrong = client.step(BrowserAction::finish(*answer)).await.unwrap();
        assert!(wrong.done);
        assert_eq!(wrong.reward, Some(0.0));
        assert_eq!(*verdict(&wrong), json!({"passed": false, "failed": failed}));
        // The observation as the wire carries it, all of it but the screenshot (a base64 PNG
        // holds any few characters somewhere).
        let mut seen = wrong.clone();
        seen.observation.screenshot.clear();
        let seen = browserenv::protocol::step_result_body(&seen).to_string();
        for value in expected(id) {
            // As it is, and as it would be written inside a JSON string, as such or quoted.
            let in_json = |text: &str| {
                let quoted = json!(text).to_string();
                quoted[1..quoted.len() - 1].to_string()
            };
            for secret in [
                value.clone(),
                in_json(&value),
                in_json(&format!("{value:?}")),
            ] {
                assert!(!seen.contains(&secret), "{id}: {secret:?} in {seen}");
            }
        }
        for phrase in ["does not match", "does not show", "details"] {
            assert!(!seen.contains(phrase), "{id}: {phrase:?} in {seen}");
        }
    }
    client.close().await.unwrap();
    harness.stop().await;

    let recording = read(&dir).unwrap();
    assert_eq!(recording.problems, vec![]);
    let log = String::from_utf8(log.lock().unwrap().clone()).unwrap();
    for (id, answer, failed) in &cases {
        let episode_id = format!("wrong-{id}");
        let episode = recording
            .episodes
            .iter()
            .find(|episode| episode.episode_id == episode_id)
            .unwrap_or_else(|| panic!("{id}: no episode line"));
        let whole = episode.verdict.as_ref().expect("the whole verdict");
        assert!(!whole.passed);
        assert_eq!(json!(whole.failed), *failed);
        // The details quote what the check expects.
        let details = whole.details.join("; ");
        for value in expected(id) {
            let quoted = format!("{value:?}");
            assert!(
                details.contains(value.as_str()) || details.contains(&quoted),
                "{id}: {value:?} not in {details}"
            );
        }
        if *id != "act-search-clamp" {
            let task = tasks.get(id).unwrap();
            let ending = browserenv_collect::tasks::Ending {
                answer,
                ..Default::default()
            };
            assert_eq!(*whole, task.judge(&ending));
        }
        // And the server's log has the same, once.
        let line = format!("episode {episode_id} of task {id} failed");
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(&line)).collect();
        assert_eq!(lines.len(), 1, "{id}: {lines:?}");
        assert!(lines[0].contains(&details), "{id}: {}", lines[0]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn navigation_and_interaction_tasks_are_judged_on_the_final_page() {
    let (harness, _site) = Harness::with_demo_tasks(test_settings()).await;
    let mut client = harness.client().await;
    // The store map opens in a new tab, which becomes the page.
    client
        .reset_with(task_reset("nav-store-map"))
        .await
        .unwrap();
    let map = client.step(BrowserAction::click(373, 279)).await.unwrap();
    assert!(
        map.observation.url.ends_with("map.html"),
        "{}",
        map.observation.url
    );
    let done = client.step(BrowserAction::finish("")).await.unwrap();
    assert_eq!(done.reward, Some(1.0), "{:?}", verdict(&done));

    // Search: click the box, type, ENTER; the final URL and page text are checked.
    client
        .reset_with(task_reset("act-search-clamp"))
        .await
        .unwrap();
    client.step(BrowserAction::click(130, 170)).await.unwrap();
    client
        .step(BrowserAction::type_text("clamp"))
        .await
        .unwrap();
    let searched = client.step(BrowserAction::key(Key::Enter)).await.unwrap();
    assert!(searched.observation.url.ends_with("catalog.html?q=clamp"));
    let done = client.step(BrowserAction::finish("")).await.unwrap();
    assert_eq!(done.reward, Some(1.0), "{:?}", verdict(&done));
    harness.stop().await;
}

#[tokio::test]
async fn unknown_task_ids_are_execution_errors_that_name_the_known_ones() {
    let (harness, _site) = Harness::with_demo_tasks(test_settings()).await;
    let mut client = harness.client().await;
    match client.reset_with(task_reset("no-such-task")).await {
        Err(ClientError::Server(frame)) => {
            assert_eq!(frame.code, ErrorCode::ExecutionError);
            assert!(frame.message.contains("unknown task_id \"no-such-task\""));
            assert!(frame.message.contains("info-founded"));
        }
        other => panic!("{other:?}"),
    }
    // Without a task, the reward stays 0 as in the seed.
    let plain = client
        .reset(browserenv::ResetOptions::new(harness.page("long.html")))
        .await
        .unwrap();
    let finished = client
        .step(BrowserAction::finish("anything"))
        .await
        .unwrap();
    assert_eq!((plain.reward, finished.reward), (Some(0.0), Some(0.0)));
    assert!(finished.observation.metadata.get("verdict").is_none());
    harness.stop().await;
}

/// `assets/tasks/demo-solutions.jsonl`: for every bundled task, the wire actions a person would
/// take. Replaying each one on Chromium proves the task can be done on the demo site and that its
/// check accepts the done state (and it is a reference demonstration for each task).
#[tokio::test]
async fn every_bundled_task_is_solved_by_its_reference_solution() {
    let tasks =
        browserenv_collect::tasks::TaskSet::load(&assets_dir().join("tasks/demo.jsonl")).unwrap();
    let file = assets_dir().join("tasks/demo-solutions.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let solutions: Vec<(String, Vec<BrowserAction>)> = text
        .lines()
        .enumerate()
        .map(|(index, line)| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("{}:{}: {err}", file.display(), index + 1));
            let actions = value["actions"]
                .as_array()
                .unwrap_or_else(|| panic!("{}:{}: no actions", file.display(), index + 1))
                .iter()
                .map(|action| {
                    BrowserAction::from_value(action).unwrap_or_else(|errors| {
                        panic!("{}:{}: {errors:?}", file.display(), index + 1)
                    })
                })
                .collect();
            (value["task_id"].as_str().unwrap().to_string(), actions)
        })
        .collect();
    let solved: Vec<&str> = solutions.iter().map(|(id, _)| id.as_str()).collect();
    let bundled: Vec<&str> = tasks.tasks.iter().map(|task| task.id.as_str()).collect();
    assert_eq!(solved, bundled, "one solution per bundled task, in order");

    let (harness, _site) = Harness::with_demo_tasks(test_settings()).await;
    let mut client = harness.client().await;
    for (id, actions) in &solutions {
        client.reset_with(task_reset(id)).await.unwrap();
        let mut last = None;
        for (n, action) in actions.iter().enumerate() {
            let result = client.step(action.clone()).await.unwrap();
            assert_eq!(result.observation.error, "", "{id}, action {}", n + 1);
            last = Some(result);
        }
        let last = last.expect("a solution has actions");
        assert!(last.done, "{id}: a solution ends with finish");
        assert_eq!(
            last.reward,
            Some(1.0),
            "{id}: {} at {}",
            verdict(&last),
            last.observation.url
        );
    }
    harness.stop().await;
}

/// Each kind of check on the demo site, judged on real Chromium when the page did not get where
/// the task asks: the form sent with the wrong topic (`request`), one hammer instead of two
/// (`element`, `local_storage`), the banner left alone (`cookie`), one of two fields filled
/// (`all_of`), the drill instead of a clamp (`any_of`). The reference solutions pass them all
/// (`every_bundled_task_is_solved_by_its_reference_solution`).
#[tokio::test]
async fn each_kind_of_check_fails_when_the_page_did_not_get_there() {
    let (harness, _site) = Harness::with_demo_tasks(test_settings()).await;
    let mut client = harness.client().await;
    let click = BrowserAction::click;
    let type_text = BrowserAction::type_text;
    let cases: Vec<(&str, Vec<BrowserAction>, Value)> = vec![
        (
            "act-contact-returns",
            vec![
                click(167, 223),
                type_text("Ada Lovelace"),
                click(473, 223),
                type_text("ada@example.com"),
                click(143, 526),
                click(473, 223),
                BrowserAction::key(Key::Enter),
            ],
            json!(["request"]),
        ),
        (
            "act-contact-returns",
            vec![click(167, 223), type_text("Ada Lovelace")],
            json!(["page_text_contains", "request"]),
        ),
        (
            "act-add-two-hammers",
            vec![click(114, 584), click(452, 357)],
            json!(["page_text_contains", "element", "local_storage"]),
        ),
        ("act-accept-cookies", vec![], json!(["cookie"])),
        (
            "act-contact-draft",
            vec![click(473, 223), type_text("ada@example.com")],
            json!(["all_of"]),
        ),
        (
            "act-add-a-clamp",
            vec![click(109, 567), click(452, 357)],
            json!(["any_of"]),
        ),
    ];
    for (id, actions, failed) in cases {
        client.reset_with(task_reset(id)).await.unwrap();
        for action in actions {
            let result = client.step(action).await.unwrap();
            assert_eq!(result.observation.error, "", "{id}");
        }
        let done = client.step(BrowserAction::finish("")).await.unwrap();
        assert_eq!(done.reward, Some(0.0), "{id}");
        assert_eq!(
            *verdict(&done),
            json!({"passed": false, "failed": failed}),
            "{id}"
        );
    }
    harness.stop().await;
}

/// A page that replaces the functions a check would read it with (`querySelector`, `innerText`,
/// a textarea's `value`, `checked`, `Storage.getItem`, `Array.prototype.map`, `Map` iteration),
/// stores megabytes, sends 300 posts of 20 KiB and one that fails, holds a frame of another site
/// that sets a cookie and posts, and copies a typed password where a check reads it: the check
/// reads what is there in a world the page's scripts do not reach, counts the page's own
/// requests that were sent (the newest only) and the page's own cookies, and quotes neither a
/// password, typed or not, nor a cookie in the verdict, whose lines stay short.
#[tokio::test]
async fn checks_read_the_page_with_the_browser_s_own_functions_and_within_bounds() {
    let pages = browserenv_server::site::serve_dir(assets_dir().join("pages"))
        .await
        .unwrap();
    // Room for the waits below, the typing before them and the finish after.
    const MAX_STEPS: usize = 200;
    let task = |id: &str, check: Value| {
        json!({"id": id, "category": "interaction", "instruction": "Wait for the posts.",
               "start_url": "taskstate.html", "max_steps": MAX_STEPS, "check": check})
        .to_string()
    };
    let kept = browserenv_server::browser::REQUESTS_KEPT;
    let newest = format!("n={}&", 300 - 1);
    let evicted = format!("n={}&", 300 - kept - 1);
    let file = [
        task(
            "truth",
            json!({"all_of": [
                {"element": {"selector": "#real", "text": {"match": "exact", "value": "real text"}}},
                {"field": {"selector": "#notes", "value": {"match": "exact", "value": "kept"}}},
                {"field": {"selector": "#agree", "value": {"match": "exact", "value": "yes"}}},
                {"local_storage": {"key": "answer", "value": {"match": "exact", "value": "truth"}}},
                {"local_storage": {"key": "big", "value": {"match": "regex", "value": "^x+$"}}},
                {"cookie": {"name": "big"}},
                {"request": {"method": "POST", "url": "delayed\\.json\\?n=299$", "body_contains": newest}},
            ]}),
        ),
        task(
            "hidden",
            json!({
                "field": {"selector": "#pw", "value": {"match": "exact", "value": "letmein"}},
                "cookie": {"name": "session", "value": {"match": "exact", "value": "other"}},
                "request": {"body_contains": evicted},
                "element": {"selector": "p[", "text": {"match": "exact", "value": "x"}},
                // Each of these passes only if the page's lies, its frame's cookie or post, a
                // post that failed, or a missing item counted.
                "any_of": [
                    {"field": {"selector": "#unchecked", "value": {"match": "exact", "value": "yes"}}},
                    {"field": {"selector": "#typed", "value": {"match": "exact", "value": "yes"}}},
                    {"local_storage": {"key": "unset"}},
                    {"request": {"body_contains": "refused=1"}},
                    {"request": {"body_contains": "from-the-frame"}},
                    {"local_storage": {"key": "copy", "value": {"match": "exact", "value": "other"}}},
                    {"element": {"selector": "#echo", "text": {"match": "exact", "value": "other"}}},
                ],
            }),
        ),
    ]
    .join("\n");
    let tasks = TaskSet::parse(&file, "state.jsonl").unwrap();
    let dir = std::env::temp_dir().join(format!("browserenv-task-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        record_dir: Some(dir.clone()),
        tasks: Some(std::sync::Arc::new(
            browserenv_server::environment::TaskCatalog {
                tasks,
                base_url: Some(url::Url::parse(&pages.url("")).unwrap()),
                folder: None,
            },
        )),
        ..ServerConfig::default()
    })
    .await;
    let mut client = harness.client().await;
    for (id, passed) in [("truth", true), ("hidden", false)] {
        client.reset_with(task_reset(id)).await.unwrap();
        // Into the focused password field: a secret the page copies where a check reads it.
        client
            .step(BrowserAction::type_text("typed-secret"))
            .await
            .unwrap();
        // Until the page says its posts are out (each `wait` is a step of its own, within the
        // task's step limit: a loaded machine sends the 300 posts more slowly).
        // The page's title says which post failed, if one did.
        let mut title = Value::Null;
        for _ in 0..MAX_STEPS - 5 {
            let waited = client.step(BrowserAction::wait()).await.unwrap();
            title = waited.observation.metadata["title"].clone();
            if title == "posted" {
                break;
            }
        }
        assert_eq!(title, "posted", "{id}: the page's 300 posts did not end");
        let done = client.step(BrowserAction::finish("")).await.unwrap();
        assert_eq!(verdict(&done)["passed"], passed, "{id}: {}", verdict(&done));
        if !passed {
            assert_eq!(
                verdict(&done)["failed"],
                json!(["element", "field", "request", "cookie", "any_of"])
            );
        }
    }
    client.close().await.unwrap();
    harness.stop().await;
    let recording = read(&dir).unwrap();
    let hidden = recording
        .episodes
        .iter()
        .filter_map(|episode| episode.verdict.as_ref())
        .find(|verdict| !verdict.passed)
        .expect("the failed verdict");
    let details = hidden.details.join("\n");
    assert!(details.contains("(secret, 7 characters)"), "{details}");
    assert!(details.contains("refused the selector"), "{details}");
    assert!(
        details.contains("any_of: 0 of 7 checks passed"),
        "{details}"
    );
    assert!(
        details.contains(&format!("the episode made {kept} requests")),
        "{details}"
    );
    for secret in ["hunter2", "s3cr3t-cookie", "typed-secret"] {
        assert!(!details.contains(secret), "{details}");
    }
    assert!(
        hidden
            .details
            .iter()
            .all(|line| line.chars().count() < 1000),
        "{details}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
