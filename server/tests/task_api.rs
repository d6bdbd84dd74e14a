//! OpenEnv's Task API (`server/src/routes/task_api.rs`) over real sockets, on the bundled demo task set:
//! every route, every refusal (404 unknown environment or split, 400 bad index or range, 422 a
//! body that does not validate, 401 without the token), and that asking changes nothing.

mod http;

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use browserenv_collect::tasks::TaskSet;
use browserenv_server::environment::TaskCatalog;
use browserenv_server::fake::{FakeLauncher, FakeScript};
use browserenv_server::{start, ServerConfig, ServerHandle};

const SITE: &str = "http://127.0.0.1:9/site/";
const TOKEN: &str = "t0ken";

fn demo() -> TaskSet {
    TaskSet::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/tasks/demo.jsonl"))
        .unwrap()
}

/// The demo tasks' ids in file order.
fn demo_ids() -> Vec<String> {
    demo().tasks.iter().map(|task| task.id.clone()).collect()
}

async fn server(tasks: Option<TaskSet>, token: Option<&str>) -> ServerHandle {
    start(
        FakeLauncher::new(FakeScript::default()),
        ServerConfig {
            tasks: tasks.map(|tasks| {
                Arc::new(TaskCatalog {
                    tasks,
                    base_url: Some(url::Url::parse(SITE).unwrap()),
                    folder: None,
                })
            }),
            token: token.map(str::to_string),
            warm_spare: false,
            ..ServerConfig::default()
        },
    )
    .await
    .unwrap()
}

async fn demo_server() -> ServerHandle {
    server(Some(demo()), None).await
}

async fn call(
    server: &ServerHandle,
    method: &str,
    path: &str,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, Value) {
    http::call(&server.base_url(), method, path, body, token).await
}

async fn get(server: &ServerHandle, path: &str) -> (u16, Value) {
    call(server, "GET", path, None, None).await
}

async fn post(server: &ServerHandle, path: &str, body: Value) -> (u16, Value) {
    call(server, "POST", path, Some(body), None).await
}

fn ids(tasks: &Value) -> Vec<String> {
    tasks
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {tasks}"))
        .iter()
        .map(|task| task["task_id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_environment_and_its_one_split_are_listed() {
    let server = demo_server().await;
    assert_eq!(
        get(&server, "/list_environments").await,
        (200, json!(["browserenv"]))
    );
    // The environment's name is the one /metadata gives.
    assert_eq!(get(&server, "/metadata").await.1["name"], "browserenv");
    let splits = json!([{"name": "demo", "type": "validation", "num_tasks": demo_ids().len()}]);
    assert_eq!(
        get(&server, "/browserenv/splits").await,
        (200, splits.clone())
    );
    // OpenEnv compares the name ignoring case.
    assert_eq!(get(&server, "/BrowserEnv/splits").await, (200, splits));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn tasks_and_num_tasks_give_the_whole_split_in_file_order() {
    let server = demo_server().await;
    let expected = demo_ids();
    let count = expected.len();
    assert_eq!(count, 20, "the demo set (docs/tasks.md)");
    let (status, body) = post(&server, "/browserenv/tasks", json!({"split": "demo"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["env_name"], "browserenv");
    assert_eq!(ids(&body["tasks"]), expected);
    for (index, task) in body["tasks"].as_array().unwrap().iter().enumerate() {
        assert_eq!(task["index"], index, "{task}");
        assert_eq!(task["dataset"], "demo", "{task}");
    }
    for split in ["demo", ""] {
        assert_eq!(
            post(&server, "/browserenv/num_tasks", json!({"split": split})).await,
            (200, json!({"num_tasks": count})),
            "split {split:?}"
        );
    }
    // An empty split is the first one, for every route.
    let (_, first) = post(&server, "/browserenv/tasks", json!({"split": ""})).await;
    assert_eq!(ids(&first["tasks"]), expected);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_task_carries_its_reset_arguments_and_nothing_its_check_expects() {
    let server = demo_server().await;
    let set = demo();
    let (status, body) = post(
        &server,
        "/browserenv/task",
        json!({"split": "demo", "index": 1}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let founded = &set.tasks[1];
    assert_eq!(founded.id, "info-founded");
    assert_eq!(
        body,
        json!({"task": {
            "index": 1,
            "task_id": "info-founded",
            "task_name": "info-founded",
            "dataset": "demo",
            "instruction": founded.instruction,
            "category": "information",
            "start_url": "http://127.0.0.1:9/site/index.html",
            "max_steps": 15,
            "checks": ["answer"],
            "reset": {"task_id": "info-founded"},
        }})
    );
    // Every task, by index: its id, and no value its check compares against.
    for (index, task) in set.tasks.iter().enumerate() {
        let (status, body) = post(
            &server,
            "/browserenv/task",
            json!({"split": "demo", "index": index}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["task"]["task_id"], task.id.as_str());
        assert_eq!(body["task"]["reset"], json!({"task_id": task.id}));
        let text = body.to_string();
        assert!(!text.contains("\"check\""), "{text}");
        // Every text of the check (values, patterns, selectors, keys), at any depth.
        fn texts(value: &Value, into: &mut Vec<String>) {
            match value {
                Value::String(text) => into.push(text.clone()),
                Value::Array(items) => items.iter().for_each(|item| texts(item, into)),
                Value::Object(fields) => fields.values().for_each(|item| texts(item, into)),
                _ => {}
            }
        }
        let mut secrets = Vec::new();
        texts(&serde_json::to_value(&task.check).unwrap(), &mut secrets);
        let modes = ["exact", "normalized", "regex"];
        for secret in secrets
            .into_iter()
            .filter(|text| !modes.contains(&text.as_str()))
        {
            let quoted = serde_json::to_string(&secret).unwrap();
            assert!(
                !text.contains(&quoted),
                "{} leaks {quoted}: {text}",
                task.id
            );
        }
    }
    // The index may be written as pydantic accepts an int.
    let (status, body) = post(
        &server,
        "/browserenv/task",
        json!({"split": "demo", "index": "2"}),
    )
    .await;
    assert_eq!((status, body["task"]["index"].clone()), (200, json!(2)));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn task_range_is_start_inclusive_stop_exclusive_and_stops_at_the_end() {
    let server = demo_server().await;
    let expected = demo_ids();
    let count = expected.len();
    let range = |body: Value| {
        let server = &server;
        async move {
            let (status, reply) = post(server, "/browserenv/task_range", body).await;
            assert_eq!(status, 200, "{reply}");
            ids(&reply["tasks"])
        }
    };
    assert_eq!(range(json!({"split": "demo"})).await, expected);
    assert_eq!(
        range(json!({"split": "demo", "start": null, "stop": null})).await,
        expected
    );
    assert_eq!(
        range(json!({"split": "demo", "start": 3, "stop": 5})).await,
        expected[3..5]
    );
    assert_eq!(
        range(json!({"split": "demo", "start": 15})).await,
        expected[15..]
    );
    assert_eq!(
        range(json!({"split": "demo", "stop": 2})).await,
        expected[..2]
    );
    // OpenEnv's client asks for 0..20 by default: a stop past the end stops there.
    assert_eq!(
        range(json!({"split": "demo", "start": 0, "stop": count + 3})).await,
        expected
    );
    assert!(range(json!({"split": "demo", "start": count}))
        .await
        .is_empty());
    assert!(range(json!({"split": "demo", "start": 4, "stop": 4}))
        .await
        .is_empty());
    let (_, reply) = post(
        &server,
        "/browserenv/task_range",
        json!({"split": "demo", "start": 16}),
    )
    .await;
    assert_eq!(reply["tasks"][0]["index"], 16);
    assert_eq!(reply.as_object().unwrap().len(), 1, "{reply}");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn an_unknown_environment_is_a_404_on_every_route() {
    let server = demo_server().await;
    let unknown =
        json!({"detail": "unknown environment 'harbor_env'", "code": "ENVIRONMENT_NOT_FOUND"});
    assert_eq!(
        get(&server, "/harbor_env/splits").await,
        (404, unknown.clone())
    );
    for (route, body) in [
        ("tasks", json!({"split": "demo"})),
        ("num_tasks", json!({"split": "demo"})),
        ("task", json!({"split": "demo", "index": 0})),
        (
            "task_range",
            json!({"split": "demo", "start": 0, "stop": 2}),
        ),
    ] {
        assert_eq!(
            post(&server, &format!("/harbor_env/{route}"), body).await,
            (404, unknown.clone()),
            "{route}"
        );
    }
    // Quoted as Python quotes it.
    let (status, body) = get(&server, "/o'k/splits").await;
    assert_eq!(
        (status, body["detail"].clone()),
        (404, json!("unknown environment \"o'k\""))
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn an_unknown_split_is_a_404_and_a_server_without_tasks_has_no_splits() {
    let server = demo_server().await;
    for (route, body) in [
        ("tasks", json!({"split": "train"})),
        ("num_tasks", json!({"split": "train"})),
        ("task", json!({"split": "train", "index": 0})),
        ("task_range", json!({"split": "train"})),
    ] {
        assert_eq!(
            post(&server, &format!("/browserenv/{route}"), body).await,
            (
                404,
                json!({"detail": "unknown split 'train'; served splits are ['demo']", "code": "SPLIT_NOT_FOUND"})
            ),
            "{route}"
        );
    }
    server.stop().await.unwrap();

    let bare = server_without_tasks().await;
    assert_eq!(
        get(&bare, "/list_environments").await,
        (200, json!(["browserenv"]))
    );
    assert_eq!(get(&bare, "/browserenv/splits").await, (200, json!([])));
    let (status, body) = post(&bare, "/browserenv/num_tasks", json!({"split": ""})).await;
    assert_eq!(
        (status, body["code"].clone()),
        (404, json!("SPLIT_NOT_FOUND"))
    );
    assert!(
        body["detail"].as_str().unwrap().contains("--tasks"),
        "{body}"
    );
    bare.stop().await.unwrap();
}

async fn server_without_tasks() -> ServerHandle {
    server(None, None).await
}

#[tokio::test]
async fn an_index_outside_the_split_is_a_400() {
    let server = demo_server().await;
    let count = demo_ids().len();
    for index in [json!(count), json!(-1), json!(1_000_000), json!(i64::MIN)] {
        let (status, body) = post(
            &server,
            "/browserenv/task",
            json!({"split": "demo", "index": index}),
        )
        .await;
        assert_eq!(status, 400, "{index}: {body}");
        assert_eq!(body["detail"], "Invalid task index", "{body}");
        assert_eq!(body["code"], "INVALID_TASK_INDEX", "{body}");
        assert_eq!(
            body["reason"],
            format!("index {index} is not in 0..{count} (split 'demo')"),
            "{body}"
        );
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_negative_reversed_or_out_of_bounds_range_is_a_400() {
    let server = demo_server().await;
    let count = demo_ids().len();
    let past =
        |start: usize| format!("start {start} is past the end of split 'demo' ({count} tasks)");
    for (start, stop, reason) in [
        (json!(-1), json!(null), "start -1 is negative".to_string()),
        (json!(-3), json!(-1), "start -3 is negative".into()),
        (json!(0), json!(-1), "stop -1 is negative".into()),
        (json!(5), json!(2), "stop 2 is before start 5".into()),
        (json!(count + 1), json!(count + 3), past(count + 1)),
        (json!(100), json!(null), past(100)),
    ] {
        let (status, body) = post(
            &server,
            "/browserenv/task_range",
            json!({"split": "demo", "start": start, "stop": stop}),
        )
        .await;
        assert_eq!(
            (status, body.clone()),
            (
                400,
                json!({
                    "detail": "Invalid task index",
                    "code": "INVALID_TASK_INDEX",
                    "reason": reason,
                })
            ),
            "{start}..{stop}"
        );
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn bodies_are_validated_as_fastapi_validates_openenvs_models_before_anything_else() {
    let server = demo_server().await;
    let detail = |status_body: (u16, Value)| {
        assert_eq!(status_body.0, 422, "{}", status_body.1);
        status_body.1["detail"].clone()
    };
    // No body at all.
    assert_eq!(
        detail(call(&server, "POST", "/browserenv/num_tasks", None, None).await),
        json!([{"type": "missing", "loc": ["body"], "msg": "Field required", "input": null}])
    );
    // Not an object.
    assert_eq!(
        detail(post(&server, "/browserenv/tasks", json!([])).await),
        json!([{"type": "model_attributes_type", "loc": ["body"],
            "msg": "Input should be a valid dictionary or object to extract fields from", "input": []}])
    );
    // Not JSON.
    let invalid = detail(post(&server, "/browserenv/task", json!("{\"split\":")).await);
    assert_eq!(invalid[0]["type"], "json_invalid", "{invalid}");
    // Every field's failure at once, then the extra keys; even for an unknown environment.
    assert_eq!(
        detail(post(&server, "/nope/task", json!({"index": "x", "zz": 1})).await),
        json!([
            {"type": "missing", "loc": ["body", "split"], "msg": "Field required", "input": {"index": "x", "zz": 1}},
            {"type": "int_parsing", "loc": ["body", "index"],
                "msg": "Input should be a valid integer, unable to parse string as an integer", "input": "x"},
            {"type": "extra_forbidden", "loc": ["body", "zz"], "msg": "Extra inputs are not permitted", "input": 1},
        ])
    );
    assert_eq!(
        detail(
            post(
                &server,
                "/browserenv/task_range",
                json!({"split": 3, "start": 1.5, "stop": null})
            )
            .await
        ),
        json!([
            {"type": "string_type", "loc": ["body", "split"], "msg": "Input should be a valid string", "input": 3},
            {"type": "int_from_float", "loc": ["body", "start"],
                "msg": "Input should be a valid integer, got a number with a fractional part", "input": 1.5},
        ])
    );
    assert_eq!(
        detail(
            post(
                &server,
                "/browserenv/task",
                json!({"split": "demo", "index": null})
            )
            .await
        ),
        json!([{"type": "int_type", "loc": ["body", "index"], "msg": "Input should be a valid integer", "input": null}])
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn each_route_answers_only_its_method() {
    let server = demo_server().await;
    for path in ["/list_environments", "/browserenv/splits"] {
        assert_eq!(
            call(&server, "POST", path, Some(json!({})), None).await.0,
            405,
            "{path}"
        );
    }
    for route in ["tasks", "num_tasks", "task", "task_range"] {
        assert_eq!(
            get(&server, &format!("/browserenv/{route}")).await.0,
            405,
            "{route}"
        );
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn every_route_needs_the_token_when_the_server_has_one() {
    let server = server(Some(demo()), Some(TOKEN)).await;
    let routes = [
        ("GET", "/list_environments", None),
        ("GET", "/browserenv/splits", None),
        ("POST", "/browserenv/tasks", Some(json!({"split": "demo"}))),
        (
            "POST",
            "/browserenv/num_tasks",
            Some(json!({"split": "demo"})),
        ),
        (
            "POST",
            "/browserenv/task",
            Some(json!({"split": "demo", "index": 0})),
        ),
        (
            "POST",
            "/browserenv/task_range",
            Some(json!({"split": "demo"})),
        ),
        // Refusals too: the token is checked before anything is said about the request.
        ("GET", "/nope/splits", None),
        ("POST", "/browserenv/task", Some(json!({"index": -1}))),
    ];
    for (method, path, body) in &routes {
        for token in [None, Some("wrong")] {
            let (status, reply) = call(&server, method, path, body.clone(), token).await;
            assert_eq!(
                (status, reply["code"].clone()),
                (401, json!("UNAUTHORIZED")),
                "{method} {path} with {token:?}"
            );
        }
    }
    for (method, path, body) in &routes[..6] {
        let (status, reply) = call(&server, method, path, body.clone(), Some(TOKEN)).await;
        assert_eq!(status, 200, "{method} {path}: {reply}");
    }
    assert_eq!(
        call(&server, "GET", "/nope/splits", None, Some(TOKEN))
            .await
            .0,
        404
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn asking_opens_no_session_and_changes_nothing() {
    let server = demo_server().await;
    let before = post(&server, "/browserenv/tasks", json!({"split": "demo"})).await;
    for _ in 0..3 {
        get(&server, "/browserenv/splits").await;
        post(&server, "/browserenv/num_tasks", json!({"split": "demo"})).await;
        post(
            &server,
            "/browserenv/task",
            json!({"split": "demo", "index": 4}),
        )
        .await;
        post(
            &server,
            "/browserenv/task_range",
            json!({"split": "demo", "start": 2, "stop": 9}),
        )
        .await;
        post(
            &server,
            "/browserenv/task",
            json!({"split": "demo", "index": 99}),
        )
        .await;
    }
    assert_eq!(
        post(&server, "/browserenv/tasks", json!({"split": "demo"})).await,
        before
    );
    assert_eq!(get(&server, "/sessions").await, (200, json!([])));
    assert_eq!(
        get(&server, "/state").await,
        (200, json!({"episode_id": null, "step_count": 0}))
    );
    assert_eq!(
        get(&server, "/ready").await,
        (200, json!({"status": "ready"}))
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_openapi_document_lists_the_task_api() {
    let server = demo_server().await;
    let (_, doc) = get(&server, "/openapi.json").await;
    for (path, method) in [
        ("/list_environments", "get"),
        ("/{env_name}/splits", "get"),
        ("/{env_name}/tasks", "post"),
        ("/{env_name}/num_tasks", "post"),
        ("/{env_name}/task", "post"),
        ("/{env_name}/task_range", "post"),
    ] {
        let operation = &doc["paths"][path][method];
        assert_eq!(
            operation["tags"],
            json!(["Task API"]),
            "{path}: {operation}"
        );
        assert_eq!(
            doc["paths"][path].as_object().map(|o| o.len()),
            Some(1),
            "{path}"
        );
    }
    let task = &doc["components"]["schemas"]["TaskRef"]["properties"];
    for field in [
        "index",
        "task_id",
        "task_name",
        "dataset",
        "instruction",
        "reset",
    ] {
        assert!(task.get(field).is_some(), "TaskRef.{field}: {task}");
    }
    server.stop().await.unwrap();
}
