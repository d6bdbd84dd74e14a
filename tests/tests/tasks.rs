//! Task episodes on real Chromium: `reset` with `task_id`, and the reward on `finish`.

use browserenv::models::Key;
use browserenv::protocol::ErrorCode;
use browserenv::{BrowserAction, ClientError, StepResult};
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
    assert_eq!(verdict(&wrong)["passed"], false);
    assert!(verdict(&wrong)["details"][0]
        .as_str()
        .unwrap()
        .contains("does not match"));
    harness.stop().await;
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
    let tasks = browserenv::tasks::TaskSet::load(&assets_dir().join("tasks/demo.jsonl")).unwrap();
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
