//! Campaigns (`--campaign DIR`, `server/src/campaign.rs`) over real sockets on the fake browser:
//! a person's lease started with `reset`, recorded under their name, saved with their mark; a
//! skip; a lease lost when its session closes; a restart that loses nothing; a reviewer's
//! "wrong" putting the task back; and every refusal.

mod http;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use browserenv::campaign::{CONFIG_FILE, RECORDING_DIR};
use browserenv::tasks::TaskSet;
use browserenv::{BrowserAction, Client};
use browserenv_server::environment::TaskCatalog;
use browserenv_server::fake::{FakeLauncher, FakeScript};
use browserenv_server::{start, ServerConfig, ServerHandle};

const SITE: &str = "http://127.0.0.1:9/site/";
const TOKEN: &str = "c4mpaign";

/// Two tasks of the demo set, in a campaign that wants `wanted` demonstrations of each.
fn campaign_dir(name: &str, wanted: u32) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("browserenv-campaign-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let demo = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/tasks/demo.jsonl"),
    )
    .unwrap();
    let two: Vec<&str> = demo.lines().take(2).collect();
    std::fs::write(dir.join("tasks.jsonl"), two.join("\n")).unwrap();
    std::fs::write(
        dir.join(CONFIG_FILE),
        json!({"tasks": "tasks.jsonl", "demos_wanted": wanted}).to_string(),
    )
    .unwrap();
    dir
}

fn task_ids(dir: &Path) -> Vec<String> {
    let set = TaskSet::load(&dir.join("tasks.jsonl")).unwrap();
    set.tasks.into_iter().map(|t| t.id).collect()
}

async fn server(dir: &Path) -> ServerHandle {
    start(
        FakeLauncher::new(FakeScript::default()),
        ServerConfig {
            tasks: Some(Arc::new(TaskCatalog {
                tasks: TaskSet::load(&dir.join("tasks.jsonl")).unwrap(),
                base_url: Some(url::Url::parse(SITE).unwrap()),
                folder: None,
            })),
            campaign: Some(dir.to_path_buf()),
            token: Some(TOKEN.into()),
            warm_spare: false,
            ..ServerConfig::default()
        },
    )
    .await
    .unwrap()
}

async fn call(
    server: &ServerHandle,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    call_with(server, method, path, body, Some(TOKEN)).await
}

async fn call_with(
    server: &ServerHandle,
    method: &str,
    path: &str,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, Value) {
    http::call(&server.base_url(), method, path, body, token).await
}

async fn lease(server: &ServerHandle, name: &str) -> (String, String) {
    let (status, reply) = call(
        server,
        "POST",
        "/campaign/lease",
        Some(json!({"name": name})),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    (
        reply["lease"]["id"].as_str().expect("a lease").to_string(),
        reply["task"]["id"].as_str().unwrap().to_string(),
    )
}

async fn person(server: &ServerHandle) -> Client {
    Client::connect_with_token(&server.base_url(), Some(TOKEN))
        .await
        .unwrap()
}

fn with_lease(lease: &str) -> Map<String, Value> {
    Map::from_iter([("campaign_lease".to_string(), json!(lease))])
}

/// `lease`'s task, started, finished with `answer` and saved with `mark`.
async fn demonstrate(
    server: &ServerHandle,
    name: &str,
    lease: &str,
    answer: &str,
    mark: &str,
) -> Value {
    let mut client = person(server).await;
    let saved = demonstrate_in(server, &mut client, name, lease, answer, mark).await;
    client.close().await.unwrap();
    saved
}

/// The same, in `client`'s session.
async fn demonstrate_in(
    server: &ServerHandle,
    client: &mut Client,
    name: &str,
    lease: &str,
    answer: &str,
    mark: &str,
) -> Value {
    client.reset_with(with_lease(lease)).await.unwrap();
    let finished = client.step(BrowserAction::finish(answer)).await.unwrap();
    assert!(finished.done);
    let (status, saved) = call(
        server,
        "POST",
        "/campaign/complete",
        Some(json!({"lease": lease, "name": name, "mark": mark})),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    saved
}

async fn progress(server: &ServerHandle) -> Value {
    let (status, progress) = call(server, "GET", "/campaign", None).await;
    assert_eq!(status, 200, "{progress}");
    progress
}

#[tokio::test]
async fn a_team_fills_the_campaign_and_a_restart_loses_nothing() {
    let dir = campaign_dir("team", 2);
    let ids = task_ids(&dir);
    let server = server(&dir).await;
    let (ana, task) = lease(&server, "ana").await;
    assert_eq!(task, ids[0]);
    let saved = demonstrate(&server, "ana", &ana, "$129", "pass").await;
    assert_eq!(saved["person"], "ana");
    assert_eq!(saved["task"], ids[0]);
    assert_eq!(saved["check"], true, "the demo task's answer check passed");
    // bo gets the first task (it wants two); ana, who did it, the second.
    let (bo, task) = lease(&server, "bo").await;
    assert_eq!(task, ids[0]);
    let (ana2, task) = lease(&server, "ana").await;
    assert_eq!(task, ids[1]);
    let p = progress(&server).await;
    assert_eq!(p["tasks"][0]["done"], 1);
    assert_eq!(p["tasks"][0]["leased"], 1);
    assert_eq!(p["tasks"][1]["leased"], 1);
    let people = p["people"].as_array().unwrap();
    assert_eq!(people[0]["name"], "ana");
    assert_eq!(people[0]["demonstrations"], 1);
    assert_eq!(people[0]["pass_rate"], 1.0);
    assert_eq!(people[0]["working_on"], ids[1].as_str());
    // A wrong answer is still a demonstration, with its check and the person's own mark.
    let saved = demonstrate(&server, "bo", &bo, "no idea", "fail").await;
    assert_eq!(
        (saved["check"].clone(), saved["mark"].clone()),
        (json!(false), json!("fail"))
    );
    demonstrate(&server, "ana", &ana2, "1968", "pass").await;
    server.stop().await.unwrap();

    // A new server on the same folder: the same progress, and the recording has each person.
    let server = self::server(&dir).await;
    let p = progress(&server).await;
    assert_eq!(
        (p["done"].clone(), p["wanted"].clone()),
        (json!(3), json!(4))
    );
    assert_eq!(p["pass_rate"], json!(2.0 / 3.0));
    let (cy, task) = lease(&server, "cy").await;
    assert_eq!(task, ids[1]);
    demonstrate(&server, "cy", &cy, "1968", "pass").await;
    let p = progress(&server).await;
    assert_eq!(p["tasks_complete"], 2);
    let (status, none) = call(
        &server,
        "POST",
        "/campaign/lease",
        Some(json!({"name": "dee"})),
    )
    .await;
    assert_eq!((status, none), (200, json!({"lease": null, "task": null})));
    server.stop().await.unwrap();
    let recording = browserenv::trajectory::read(&dir.join(RECORDING_DIR)).unwrap();
    let mut people: Vec<_> = recording
        .episodes
        .iter()
        .map(|e| (e.person.clone().unwrap(), e.task.clone().unwrap()))
        .collect();
    people.sort();
    assert_eq!(
        people,
        [
            ("ana".into(), ids[0].clone()),
            ("ana".into(), ids[1].clone()),
            ("bo".into(), ids[0].clone()),
            ("cy".into(), ids[1].clone())
        ]
    );
    assert!(recording
        .steps
        .iter()
        .all(|s| s.actor == browserenv::trajectory::Actor::Human));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_lease_goes_back_when_its_session_closes_or_it_is_skipped() {
    let dir = campaign_dir("leases", 1);
    let ids = task_ids(&dir);
    let server = server(&dir).await;
    let (ana, _) = lease(&server, "ana").await;
    // ana starts, then drops mid-task: the lease ends with the session.
    let mut client = person(&server).await;
    client.reset_with(with_lease(&ana)).await.unwrap();
    let (bo, task) = lease(&server, "bo").await;
    assert_eq!(task, ids[1], "task 1 is in ana's hands");
    drop(client);
    let mut freed = false;
    for _ in 0..100 {
        let p = progress(&server).await;
        if p["tasks"][0]["leased"] == 0 {
            freed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(freed, "ana's session closed: her lease ends");
    let (status, ended) = call(
        &server,
        "POST",
        "/campaign/complete",
        Some(json!({"lease": ana, "name": "ana", "mark": "pass"})),
    )
    .await;
    assert_eq!((status, ended["code"].clone()), (409, json!("LEASE_ENDED")));
    let (cy, task) = lease(&server, "cy").await;
    assert_eq!(task, ids[0]);
    // Saving before the episode ended is refused; a skip is kept with its reason.
    let (status, early) = call(
        &server,
        "POST",
        "/campaign/complete",
        Some(json!({"lease": cy, "name": "cy", "mark": "pass"})),
    )
    .await;
    assert_eq!(
        (status, early["code"].clone()),
        (409, json!("EPISODE_NOT_ENDED"))
    );
    let (status, _) = call(
        &server,
        "POST",
        "/campaign/skip",
        Some(json!({"lease": bo, "name": "bo", "reason": "the page would not load"})),
    )
    .await;
    assert_eq!(status, 200);
    let (_, bo_again) = call(
        &server,
        "POST",
        "/campaign/lease",
        Some(json!({"name": "bo"})),
    )
    .await;
    assert_eq!(
        bo_again["lease"],
        Value::Null,
        "bo skipped task 2 and task 1 is cy's"
    );
    assert_eq!(progress(&server).await["tasks"][1]["skipped"], 1);
    server.stop().await.unwrap();
    let log = std::fs::read_to_string(dir.join("campaign.jsonl")).unwrap();
    assert!(log.contains("the page would not load"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_review_marked_wrong_puts_the_task_back() {
    let dir = campaign_dir("review", 1);
    let ids = task_ids(&dir);
    let server = server(&dir).await;
    // ana does both tasks in one session: each episode is recorded whole.
    let mut client = person(&server).await;
    for answer in ["$129", "1968"] {
        let (ana, _) = lease(&server, "ana").await;
        demonstrate_in(&server, &mut client, "ana", &ana, answer, "pass").await;
    }
    client.close().await.unwrap();
    // Nobody reviews their own; bo gets ana's with its steps and screenshots.
    let (status, own) = call(
        &server,
        "POST",
        "/campaign/review/next",
        Some(json!({"name": "ana"})),
    )
    .await;
    assert_eq!((status, own), (200, Value::Null));
    let first = {
        let (_, p) = call(&server, "GET", "/campaign", None).await;
        p
    };
    assert_eq!(first["done"], 2);
    let (status, item) = call(
        &server,
        "POST",
        "/campaign/review/next",
        Some(json!({"name": "bo"})),
    )
    .await;
    assert_eq!(status, 200, "{item}");
    let episode = item["demonstration"]["episode_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Only what is in one's hands is reviewed: cy has not asked for it.
    let (status, refused) = call(
        &server,
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "name": "cy", "accepted": true})),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (409, json!("NOT_IN_YOUR_HANDS"))
    );
    assert_eq!(item["demonstration"]["person"], "ana");
    assert_eq!(item["task"]["id"], ids[0].as_str());
    assert_eq!(item["episode"]["person"], "ana");
    assert_eq!(item["steps"].as_array().unwrap().len(), 1);
    let frame = item["steps"][0]["next_file_name"].as_str().unwrap();
    assert!(item["frames"][frame]
        .as_str()
        .is_some_and(|f| !f.is_empty()));
    let (_, other) = call(
        &server,
        "POST",
        "/campaign/review/next",
        Some(json!({"name": "cy"})),
    )
    .await;
    assert_ne!(
        other["demonstration"]["episode_id"],
        episode.as_str(),
        "that one is in bo's hands"
    );
    assert_eq!(
        other["steps"].as_array().unwrap().len(),
        1,
        "the session's second episode, whole"
    );
    let (_, held) = call(
        &server,
        "POST",
        "/campaign/review/next",
        Some(json!({"name": "dee"})),
    )
    .await;
    assert_eq!(held, Value::Null, "both are in someone's hands");
    let (status, refused) = call(
        &server,
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "name": "ana", "accepted": true})),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (403, json!("OWN_DEMONSTRATION"))
    );
    let (status, refused) = call(
        &server,
        "POST",
        "/campaign/review",
        Some(
            json!({"episode_id": episode, "name": "bo", "accepted": false,
                    "events": [{"schema": "browserenv.review.v1", "episode_id": "another"}]}),
        ),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (422, json!("INVALID_REQUEST"))
    );
    let huge = json!({"schema": "browserenv.review.v1", "episode_id": episode, "step": 1,
                      "field": "note", "value": "x".repeat(5000)});
    let (status, refused) = call(
        &server,
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "name": "bo", "accepted": true, "events": [huge]})),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (422, json!("INVALID_REQUEST")),
        "{refused}"
    );
    let mark = json!({"schema": "browserenv.review.v1", "time": "2026-12-03T00:00:00.000Z",
                      "episode_id": episode, "step": 1, "field": "mark", "value": "wrong"});
    let (status, reviewed) = call(
        &server,
        "POST",
        "/campaign/review",
        Some(
            json!({"episode_id": episode, "name": "bo", "accepted": false,
                    "note": "answered without looking", "events": [mark]}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{reviewed}");
    let (status, again) = call(
        &server,
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "name": "bo", "accepted": true})),
    )
    .await;
    assert_eq!(
        (status, again["code"].clone()),
        (409, json!("REVIEWED_ALREADY")),
        "no flip"
    );
    let p = progress(&server).await;
    assert_eq!(p["tasks"][0]["done"], 0);
    assert_eq!(p["tasks"][0]["rejected"], 1);
    // The task is back, for someone who has not done it.
    let (_, again) = call(
        &server,
        "POST",
        "/campaign/lease",
        Some(json!({"name": "ana"})),
    )
    .await;
    assert_eq!(again["lease"], Value::Null, "ana did both");
    let (_, cy) = call(
        &server,
        "POST",
        "/campaign/lease",
        Some(json!({"name": "cy"})),
    )
    .await;
    assert_eq!(cy["task"]["id"], ids[0].as_str());
    server.stop().await.unwrap();
    let review = std::fs::read_to_string(dir.join(RECORDING_DIR).join("review.jsonl")).unwrap();
    let line: Value = serde_json::from_str(review.lines().next().unwrap()).unwrap();
    assert_eq!(line["reviewer"], "bo");
    assert_eq!(line["value"], "wrong");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn campaign_requests_are_checked() {
    let dir = campaign_dir("refusals", 1);
    let server = server(&dir).await;
    let (status, _) = call_with(&server, "GET", "/campaign", None, None).await;
    assert_eq!(status, 401, "the token guards the campaign");
    for name in ["", "ana bo", "\u{1b}]0;x\u{7}", &"n".repeat(65)] {
        let (status, reply) = call(
            &server,
            "POST",
            "/campaign/lease",
            Some(json!({"name": name})),
        )
        .await;
        assert_eq!(
            (status, reply["code"].clone()),
            (422, json!("INVALID_NAME")),
            "{name:?}"
        );
    }
    let (status, reply) = call(
        &server,
        "POST",
        "/campaign/lease",
        Some(json!({"who": "ana"})),
    )
    .await;
    assert_eq!(
        (status, reply["code"].clone()),
        (422, json!("INVALID_REQUEST"))
    );
    // A lease names its task: another task_id beside it is refused, as is a lease that is not.
    let ids = task_ids(&dir);
    let (ana, _) = lease(&server, "ana").await;
    let mut client = person(&server).await;
    let mut options = with_lease(&ana);
    options.insert("task_id".into(), json!(ids[1]));
    let err = client.reset_with(options).await.unwrap_err().to_string();
    assert!(err.contains("not"), "{err}");
    let err = client
        .reset_with(with_lease("lease-999"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no lease"), "{err}");
    // A campaign episode's id is new: not the client's own words, not one used before.
    let mut named = with_lease(&ana);
    named.insert("episode_id".into(), json!("../../\u{1b}[2J"));
    let err = client.reset_with(named).await.unwrap_err().to_string();
    assert!(err.contains("new UUID"), "{err}");
    let mut named = with_lease(&ana);
    let id = uuid::Uuid::new_v4().to_string();
    named.insert("episode_id".into(), json!(id));
    client.reset_with(named.clone()).await.unwrap();
    let err = client.reset_with(named).await.unwrap_err().to_string();
    assert!(err.contains("used already"), "{err}");
    // The lease is this session's: another one may not start it, and nobody but ana ends it.
    let mut other = person(&server).await;
    let err = other
        .reset_with(with_lease(&ana))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("another session"), "{err}");
    other.close().await.unwrap();
    client.step(BrowserAction::finish("")).await.unwrap();
    for (path, body) in [
        (
            "/campaign/complete",
            json!({"lease": ana, "name": "bo", "mark": "pass"}),
        ),
        (
            "/campaign/skip",
            json!({"lease": ana, "name": "bo", "reason": "mine now"}),
        ),
    ] {
        let (status, reply) = call(&server, "POST", path, Some(body)).await;
        assert_eq!(
            (status, reply["code"].clone()),
            (403, json!("NOT_YOUR_LEASE")),
            "{path}"
        );
    }
    // The other session's end did not end ana's lease; she saves her episode.
    let (status, saved) = call(
        &server,
        "POST",
        "/campaign/complete",
        Some(json!({"lease": ana, "name": "Ana", "mark": "pass"})),
    )
    .await;
    assert_eq!(
        (status, saved["person"].clone()),
        (200, json!("ana")),
        "{saved}"
    );
    client.close().await.unwrap();
    server.stop().await.unwrap();
    // A server without a campaign says so.
    let plain = start(
        FakeLauncher::new(FakeScript::default()),
        ServerConfig {
            warm_spare: false,
            ..ServerConfig::default()
        },
    )
    .await
    .unwrap();
    let (status, reply) = call_with(&plain, "GET", "/campaign", None, None).await;
    assert_eq!((status, reply["code"].clone()), (404, json!("NO_CAMPAIGN")));
    let mut client = Client::connect(&plain.base_url()).await.unwrap();
    let err = client
        .reset_with(with_lease("lease-1"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no campaign"), "{err}");
    client.close().await.unwrap();
    plain.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
