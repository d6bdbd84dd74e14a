//! Campaigns (`--campaign DIR`, `server/src/campaign/`) over real sockets on the fake browser:
//! a person's lease started with `reset` on a session of their own token, recorded under their
//! name, saved with their mark once on disk; a skip; a lease lost when its session closes; a
//! restart that loses nothing; a reviewer's "wrong" putting the task back; people who are their
//! tokens; nothing of a check's expectations handed out; and every refusal.

mod http;
#[path = "../../tests/src/socket.rs"]
mod socket;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use browserenv::{BrowserAction, Client};
use browserenv_collect::campaign::{People, CONFIG_FILE, RECORDING_DIR};
use browserenv_collect::tasks::TaskSet;
use browserenv_server::environment::TaskCatalog;
use browserenv_server::fake::{FakeLauncher, FakeScript};
use browserenv_server::{start, ServerConfig, ServerHandle};

const SITE: &str = "http://127.0.0.1:9/site/";
/// The server's own token: agents and the coordinator.
const TOKEN: &str = "c4mpaign";
/// The people of every test's campaign.
const PEOPLE: [&str; 4] = ["ana", "bo", "cy", "dee"];

/// Each person's own token, by name (`browserenv-server campaign add-person`).
type Tokens = BTreeMap<String, String>;

/// Two tasks of the demo set, in a campaign that wants `wanted` demonstrations of each, and its
/// people's tokens.
fn campaign_dir(name: &str, wanted: u32) -> (PathBuf, Tokens) {
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
    let tokens = PEOPLE
        .iter()
        .map(|name| People::add(&dir, name).unwrap())
        .collect();
    (dir, tokens)
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

/// A call with the server's own token.
async fn call(
    server: &ServerHandle,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    call_with(server, method, path, body, Some(TOKEN)).await
}

/// A call with `name`'s own token.
async fn call_as(
    server: &ServerHandle,
    tokens: &Tokens,
    name: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    call_with(server, method, path, body, Some(&tokens[name])).await
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

async fn lease(server: &ServerHandle, tokens: &Tokens, name: &str) -> (String, String) {
    let (status, reply) = call_as(server, tokens, name, "POST", "/campaign/lease", None).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["person"], name, "the token's person");
    (
        reply["lease"]["id"].as_str().expect("a lease").to_string(),
        reply["task"]["id"].as_str().unwrap().to_string(),
    )
}

/// A session of `name`'s, opened with their own token.
async fn person(server: &ServerHandle, tokens: &Tokens, name: &str) -> Client {
    Client::connect_with_token(&server.base_url(), Some(&tokens[name]))
        .await
        .unwrap()
}

fn with_lease(lease: &str) -> Map<String, Value> {
    Map::from_iter([("campaign_lease".to_string(), json!(lease))])
}

/// `lease`'s task, started, finished with `answer` and saved with `mark`, all by `name`.
async fn demonstrate(
    server: &ServerHandle,
    tokens: &Tokens,
    name: &str,
    lease: &str,
    answer: &str,
    mark: &str,
) -> Value {
    let mut client = person(server, tokens, name).await;
    let saved = demonstrate_in(server, tokens, &mut client, name, lease, answer, mark).await;
    client.close().await.unwrap();
    saved
}

/// The same, in `client`'s session.
async fn demonstrate_in(
    server: &ServerHandle,
    tokens: &Tokens,
    client: &mut Client,
    name: &str,
    lease: &str,
    answer: &str,
    mark: &str,
) -> Value {
    client.reset_with(with_lease(lease)).await.unwrap();
    let finished = client.step(BrowserAction::finish(answer)).await.unwrap();
    assert!(finished.done);
    let (status, saved) = call_as(
        server,
        tokens,
        name,
        "POST",
        "/campaign/complete",
        Some(json!({"lease": lease, "mark": mark})),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["recorded"], true, "{saved}");
    saved
}

async fn progress(server: &ServerHandle) -> Value {
    let (status, progress) = call(server, "GET", "/campaign", None).await;
    assert_eq!(status, 200, "{progress}");
    progress
}

#[tokio::test]
async fn a_team_fills_the_campaign_and_a_restart_loses_nothing() {
    let (dir, tokens) = campaign_dir("team", 2);
    let ids = task_ids(&dir);
    let server = server(&dir).await;
    let (ana, task) = lease(&server, &tokens, "ana").await;
    assert_eq!(task, ids[0]);
    let saved = demonstrate(&server, &tokens, "ana", &ana, "$129", "pass").await;
    assert_eq!(saved["person"], "ana");
    assert_eq!(saved["task"], ids[0]);
    assert_eq!(saved["check"], true, "the demo task's answer check passed");
    // Acknowledged means on disk: the episode and its last step are there already.
    let episode = saved["episode_id"].as_str().unwrap();
    let recording = browserenv_collect::trajectory::read(&dir.join(RECORDING_DIR)).unwrap();
    assert!(recording.episodes.iter().any(|e| e.episode_id == episode));
    assert!(recording
        .episode_steps(episode)
        .last()
        .is_some_and(|step| step.done));
    // bo gets the first task (it wants two); ana, who did it, the second.
    let (bo, task) = lease(&server, &tokens, "bo").await;
    assert_eq!(task, ids[0]);
    let (ana2, task) = lease(&server, &tokens, "ana").await;
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
    let saved = demonstrate(&server, &tokens, "bo", &bo, "no idea", "fail").await;
    assert_eq!(
        (saved["check"].clone(), saved["mark"].clone()),
        (json!(false), json!("fail"))
    );
    demonstrate(&server, &tokens, "ana", &ana2, "1968", "pass").await;
    server.stop().await.unwrap();

    // A new server on the same folder: the same progress, and the recording has each person.
    let server = self::server(&dir).await;
    let p = progress(&server).await;
    assert_eq!(
        (p["done"].clone(), p["wanted"].clone()),
        (json!(3), json!(4))
    );
    assert_eq!(p["pass_rate"], json!(2.0 / 3.0));
    let (cy, task) = lease(&server, &tokens, "cy").await;
    assert_eq!(task, ids[1]);
    demonstrate(&server, &tokens, "cy", &cy, "1968", "pass").await;
    let p = progress(&server).await;
    assert_eq!(p["tasks_complete"], 2);
    let (status, none) = call_as(&server, &tokens, "dee", "POST", "/campaign/lease", None).await;
    assert_eq!(
        (status, none),
        (200, json!({"person": "dee", "lease": null, "task": null}))
    );
    server.stop().await.unwrap();
    let recording = browserenv_collect::trajectory::read(&dir.join(RECORDING_DIR)).unwrap();
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
        .all(|s| s.actor == browserenv_collect::trajectory::Actor::Human));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_lease_goes_back_when_its_session_closes_or_it_is_skipped() {
    let (dir, tokens) = campaign_dir("leases", 1);
    let ids = task_ids(&dir);
    let server = server(&dir).await;
    let (ana, _) = lease(&server, &tokens, "ana").await;
    // ana starts, then drops mid-task: the lease ends with the session.
    let mut client = person(&server, &tokens, "ana").await;
    client.reset_with(with_lease(&ana)).await.unwrap();
    let (bo, task) = lease(&server, &tokens, "bo").await;
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
    let (status, ended) = call_as(
        &server,
        &tokens,
        "ana",
        "POST",
        "/campaign/complete",
        Some(json!({"lease": ana, "mark": "pass"})),
    )
    .await;
    assert_eq!((status, ended["code"].clone()), (409, json!("LEASE_ENDED")));
    let (cy, task) = lease(&server, &tokens, "cy").await;
    assert_eq!(task, ids[0]);
    // Saving before the episode ended is refused; a skip is kept with its reason.
    let (status, early) = call_as(
        &server,
        &tokens,
        "cy",
        "POST",
        "/campaign/complete",
        Some(json!({"lease": cy, "mark": "pass"})),
    )
    .await;
    assert_eq!(
        (status, early["code"].clone()),
        (409, json!("EPISODE_NOT_ENDED"))
    );
    let (status, _) = call_as(
        &server,
        &tokens,
        "bo",
        "POST",
        "/campaign/skip",
        Some(json!({"lease": bo, "reason": "the page would not load"})),
    )
    .await;
    assert_eq!(status, 200);
    let (_, bo_again) = call_as(&server, &tokens, "bo", "POST", "/campaign/lease", None).await;
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
    let (dir, tokens) = campaign_dir("review", 1);
    let ids = task_ids(&dir);
    let server = server(&dir).await;
    // ana does both tasks in one session: each episode is recorded whole.
    let mut client = person(&server, &tokens, "ana").await;
    for answer in ["$129", "1968"] {
        let (ana, _) = lease(&server, &tokens, "ana").await;
        demonstrate_in(&server, &tokens, &mut client, "ana", &ana, answer, "pass").await;
    }
    client.close().await.unwrap();
    // Nobody reviews their own; bo gets ana's with its steps and screenshots.
    let (status, own) = call_as(
        &server,
        &tokens,
        "ana",
        "POST",
        "/campaign/review/next",
        None,
    )
    .await;
    assert_eq!((status, own), (200, Value::Null));
    assert_eq!(progress(&server).await["done"], 2);
    let (status, item) = call_as(
        &server,
        &tokens,
        "bo",
        "POST",
        "/campaign/review/next",
        None,
    )
    .await;
    assert_eq!(status, 200, "{item}");
    assert_eq!(item["reviewer"], "bo");
    let episode = item["demonstration"]["episode_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Only what is in one's hands is reviewed: cy has not asked for it.
    let (status, refused) = call_as(
        &server,
        &tokens,
        "cy",
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "accepted": true})),
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
    let (_, other) = call_as(
        &server,
        &tokens,
        "cy",
        "POST",
        "/campaign/review/next",
        None,
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
    let (_, held) = call_as(
        &server,
        &tokens,
        "dee",
        "POST",
        "/campaign/review/next",
        None,
    )
    .await;
    assert_eq!(held, Value::Null, "both are in someone's hands");
    let (status, refused) = call_as(
        &server,
        &tokens,
        "ana",
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "accepted": true})),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (403, json!("OWN_DEMONSTRATION"))
    );
    let (status, refused) = call_as(
        &server,
        &tokens,
        "bo",
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "accepted": false,
                    "events": [{"schema": "browserenv.review.v1", "episode_id": "another"}]})),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (422, json!("INVALID_REQUEST"))
    );
    let huge = json!({"schema": "browserenv.review.v1", "episode_id": episode, "step": 1,
                      "field": "note", "value": "x".repeat(5000)});
    let (status, refused) = call_as(
        &server,
        &tokens,
        "bo",
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "accepted": true, "events": [huge]})),
    )
    .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (422, json!("INVALID_REQUEST")),
        "{refused}"
    );
    let mark = json!({"schema": "browserenv.review.v1", "time": "2026-12-03T00:00:00.000Z",
                      "episode_id": episode, "step": 1, "field": "mark", "value": "wrong"});
    let (status, reviewed) = call_as(
        &server,
        &tokens,
        "bo",
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "accepted": false,
                    "note": "answered without looking", "events": [mark]})),
    )
    .await;
    assert_eq!(status, 200, "{reviewed}");
    let (status, again) = call_as(
        &server,
        &tokens,
        "bo",
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "accepted": true})),
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
    let (_, again) = call_as(&server, &tokens, "ana", "POST", "/campaign/lease", None).await;
    assert_eq!(again["lease"], Value::Null, "ana did both");
    let (_, cy) = call_as(&server, &tokens, "cy", "POST", "/campaign/lease", None).await;
    assert_eq!(cy["task"]["id"], ids[0].as_str());
    server.stop().await.unwrap();
    let review = std::fs::read_to_string(dir.join(RECORDING_DIR).join("review.jsonl")).unwrap();
    let line: Value = serde_json::from_str(review.lines().next().unwrap()).unwrap();
    assert_eq!(line["reviewer"], "bo");
    assert_eq!(line["value"], "wrong");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A campaign's tasks are the server's task set: what its routes hand out of a task or of a
/// verdict says which parts a check has and which failed, never what they expect, or anyone
/// with a token could read the answer, `reset` to the task and `finish` with it for 1.0.
#[tokio::test]
async fn the_campaign_hands_out_no_answer() {
    let (dir, tokens) = campaign_dir("answers", 1);
    let ids = task_ids(&dir);
    let server = server(&dir).await;
    let expected = ["129", "1968"];
    let (status, leased) = call_as(&server, &tokens, "ana", "POST", "/campaign/lease", None).await;
    assert_eq!(status, 200, "{leased}");
    let task = &leased["task"];
    assert!(task.get("check").is_none(), "{task}");
    assert_eq!(task["id"], ids[0].as_str());
    assert!(task["instruction"].as_str().is_some_and(|i| !i.is_empty()));
    assert!(task["start_url"]
        .as_str()
        .is_some_and(|u| u.starts_with(SITE)));
    assert_eq!(task["checks"], json!(["answer"]), "the parts, by name");
    assert!(!task.to_string().contains(expected[0]), "{task}");
    let ana = leased["lease"]["id"].as_str().unwrap().to_string();
    demonstrate(&server, &tokens, "ana", &ana, "42", "fail").await;
    let (_, second) = call_as(&server, &tokens, "bo", "POST", "/campaign/lease", None).await;
    assert!(!second["task"].to_string().contains(expected[1]));
    // The reviewer sees the failed verdict as an observation shows it: the part that failed.
    let (status, item) = call_as(
        &server,
        &tokens,
        "bo",
        "POST",
        "/campaign/review/next",
        None,
    )
    .await;
    assert_eq!(status, 200, "{item}");
    assert!(item["task"].get("check").is_none(), "{}", item["task"]);
    let verdict = &item["episode"]["verdict"];
    assert_eq!(verdict["passed"], false, "{verdict}");
    assert_eq!(verdict["failed"], json!(["answer"]));
    assert_eq!(verdict["details"], json!([]), "{verdict}");
    for part in [&item["task"], &item["episode"], &item["demonstration"]] {
        assert!(!part.to_string().contains(expected[0]), "{part}");
    }
    // The recording keeps the whole verdict, for the coordinator.
    let recording = browserenv_collect::trajectory::read(&dir.join(RECORDING_DIR)).unwrap();
    let details = &recording.episodes[0].verdict.as_ref().unwrap().details;
    assert!(!details.is_empty());
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A person is who their token says: the name of every campaign action comes from the token; a
/// body naming someone else, the server's token, another person's lease, one's own work under
/// another name, a route that is not a person's, and a token removed are all refused.
#[tokio::test]
async fn people_are_who_their_tokens_say() {
    let (dir, tokens) = campaign_dir("people", 2);
    let server = server(&dir).await;
    // The server's token reads the progress and does no campaign work.
    assert_eq!(call(&server, "GET", "/campaign", None).await.0, 200);
    assert_eq!(
        call_as(&server, &tokens, "ana", "GET", "/campaign", None)
            .await
            .0,
        200
    );
    for (path, body) in [
        ("/campaign/lease", json!({"name": "ana"})),
        ("/campaign/skip", json!({"lease": "x", "reason": "r"})),
        ("/campaign/complete", json!({"lease": "x", "mark": "pass"})),
        ("/campaign/review/next", json!({})),
        (
            "/campaign/review",
            json!({"episode_id": "e", "accepted": true}),
        ),
    ] {
        let (status, reply) = call(&server, "POST", path, Some(body)).await;
        assert_eq!(
            (status, reply["code"].clone()),
            (403, json!("PERSON_REQUIRED")),
            "{path}"
        );
    }
    // A body naming someone else is refused; naming oneself (in any case) is only a check.
    let (status, reply) = call_as(
        &server,
        &tokens,
        "bo",
        "POST",
        "/campaign/lease",
        Some(json!({"name": "ana"})),
    )
    .await;
    assert_eq!(
        (status, reply["code"].clone()),
        (403, json!("NOT_YOUR_NAME"))
    );
    let (status, reply) = call_as(
        &server,
        &tokens,
        "ana",
        "POST",
        "/campaign/lease",
        Some(json!({"name": "ANA"})),
    )
    .await;
    assert_eq!((status, reply["person"].clone()), (200, json!("ana")));
    let ana = reply["lease"]["id"].as_str().unwrap().to_string();
    // Only ana's own session starts her lease: not bo's, not one of the server's token.
    let mut bo_session = person(&server, &tokens, "bo").await;
    let err = bo_session
        .reset_with(with_lease(&ana))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("someone else's"), "{err}");
    let err = bo_session
        .reset_with(Map::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("leased tasks only"), "{err}");
    bo_session.close().await.unwrap();
    let mut agent = Client::connect_with_token(&server.base_url(), Some(TOKEN))
        .await
        .unwrap();
    let err = agent
        .reset_with(with_lease(&ana))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("its person's own token"), "{err}");
    agent.close().await.unwrap();
    let mut client = person(&server, &tokens, "ana").await;
    client.reset_with(with_lease(&ana)).await.unwrap();
    client.step(BrowserAction::finish("$129")).await.unwrap();
    // Nobody but ana ends it.
    for (path, body) in [
        ("/campaign/complete", json!({"lease": ana, "mark": "pass"})),
        (
            "/campaign/skip",
            json!({"lease": ana, "reason": "mine now"}),
        ),
    ] {
        let (status, reply) = call_as(&server, &tokens, "bo", "POST", path, Some(body)).await;
        assert_eq!(
            (status, reply["code"].clone()),
            (403, json!("NOT_YOUR_LEASE")),
            "{path}"
        );
    }
    // A person's token reaches their own session's text and no other route.
    let (_, sessions) = call(&server, "GET", "/sessions", None).await;
    let own = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["person"] == "ana")
        .expect("ana's session says whose it is")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let text = format!("/sessions/{own}/text");
    let (status, _) = call_as(&server, &tokens, "ana", "GET", &text, None).await;
    assert_ne!(status, 403, "her own session's text");
    assert_ne!(status, 404, "her own session's text");
    let (status, reply) = call_as(&server, &tokens, "bo", "GET", &text, None).await;
    assert_eq!(
        (status, reply["code"].clone()),
        (404, json!("SESSION_NOT_FOUND"))
    );
    for path in ["/sessions", "/metadata", &format!("/sessions/{own}")] {
        let (status, reply) = call_as(&server, &tokens, "ana", "GET", path, None).await;
        assert_eq!(
            (status, reply["code"].clone()),
            (403, json!("PERSON_NOT_ALLOWED")),
            "{path}"
        );
    }
    let attach = format!("/ws?session_id={own}");
    let (status, _) = call_as(&server, &tokens, "bo", "GET", &attach, None).await;
    assert_eq!(status, 403, "a person's token attaches to no session");
    let (status, reply) = call_as(
        &server,
        &tokens,
        "ana",
        "POST",
        "/reset",
        Some(json!({"task_id": "info-drill-price"})),
    )
    .await;
    assert_eq!(
        (status, reply["code"].clone()),
        (403, json!("PERSON_NOT_ALLOWED"))
    );
    // ana saves it; under another name she still cannot review her own.
    let (status, saved) = call_as(
        &server,
        &tokens,
        "ana",
        "POST",
        "/campaign/complete",
        Some(json!({"lease": ana, "mark": "pass"})),
    )
    .await;
    assert_eq!(
        (status, saved["person"].clone()),
        (200, json!("ana")),
        "{saved}"
    );
    let episode = saved["episode_id"].as_str().unwrap();
    let (status, reply) = call_as(
        &server,
        &tokens,
        "ana",
        "POST",
        "/campaign/review/next",
        Some(json!({"name": "zed"})),
    )
    .await;
    assert_eq!(
        (status, reply["code"].clone()),
        (403, json!("NOT_YOUR_NAME"))
    );
    let (status, reply) = call_as(
        &server,
        &tokens,
        "ana",
        "POST",
        "/campaign/review",
        Some(json!({"episode_id": episode, "name": "zed", "accepted": true})),
    )
    .await;
    assert_eq!(
        (status, reply["code"].clone()),
        (403, json!("NOT_YOUR_NAME"))
    );
    // A token nobody has, and a person removed (by the command, while the server runs), are
    // refused at once; what the removed person held goes back.
    let (status, _) = call_with(&server, "GET", "/campaign", None, Some("guess")).await;
    assert_eq!(status, 401);
    let (cy_lease, cy_task) = lease(&server, &tokens, "cy").await;
    let leased = |p: &Value| {
        p["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["leased"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(leased(&progress(&server).await), 1, "{cy_task}");
    let removed = std::process::Command::new(env!("CARGO_BIN_EXE_browserenv-server"))
        .args(["campaign", "remove-person"])
        .arg(&dir)
        .arg("cy")
        .output()
        .unwrap();
    assert!(removed.status.success(), "{removed:?}");
    let (status, reply) = call_as(&server, &tokens, "cy", "POST", "/campaign/lease", None).await;
    assert_eq!(
        (status, reply["code"].clone()),
        (401, json!("UNAUTHORIZED"))
    );
    assert!(
        Client::connect_with_token(&server.base_url(), Some(&tokens["cy"]))
            .await
            .is_err()
    );
    assert_eq!(
        leased(&progress(&server).await),
        0,
        "cy's lease {cy_lease} is back"
    );
    // A person added while the server runs collects at once.
    let added = std::process::Command::new(env!("CARGO_BIN_EXE_browserenv-server"))
        .args(["campaign", "add-person"])
        .arg(&dir)
        .arg("eve")
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let eve = String::from_utf8(added.stdout).unwrap().trim().to_string();
    let (status, reply) = call_with(&server, "POST", "/campaign/lease", None, Some(&eve)).await;
    assert_eq!(
        (status, reply["person"].clone()),
        (200, json!("eve")),
        "{reply}"
    );
    client.close().await.unwrap();
    server.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn campaign_requests_are_checked() {
    let (dir, tokens) = campaign_dir("refusals", 1);
    let server = server(&dir).await;
    let (status, _) = call_with(&server, "GET", "/campaign", None, None).await;
    assert_eq!(status, 401, "the token guards the campaign");
    for name in ["", "ana bo", "\u{1b}]0;x\u{7}", &"n".repeat(65)] {
        let (status, reply) = call_as(
            &server,
            &tokens,
            "ana",
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
    let (status, reply) = call_as(
        &server,
        &tokens,
        "ana",
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
    let (ana, _) = lease(&server, &tokens, "ana").await;
    let mut client = person(&server, &tokens, "ana").await;
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
    // A campaign episode's id is new: not the client's own words, not one used before, in any
    // spelling; it is kept in one spelling.
    let mut named = with_lease(&ana);
    named.insert("episode_id".into(), json!("../../\u{1b}[2J"));
    let err = client.reset_with(named).await.unwrap_err().to_string();
    assert!(err.contains("new UUID"), "{err}");
    let mut named = with_lease(&ana);
    let id = uuid::Uuid::new_v4();
    named.insert("episode_id".into(), json!(id.to_string().to_uppercase()));
    client.reset_with(named.clone()).await.unwrap();
    assert_eq!(
        client.state().await.unwrap().episode_id.as_deref(),
        Some(id.to_string().as_str()),
        "lowercase, hyphenated"
    );
    for spelling in [id.to_string(), format!("{{{id}}}")] {
        let mut again = with_lease(&ana);
        again.insert("episode_id".into(), json!(spelling));
        let err = client.reset_with(again).await.unwrap_err().to_string();
        assert!(err.contains("used already"), "{spelling}: {err}");
    }
    // The lease is this session's: another one of ana's may not start it.
    let mut other = person(&server, &tokens, "ana").await;
    let err = other
        .reset_with(with_lease(&ana))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("another session"), "{err}");
    other.close().await.unwrap();
    client.step(BrowserAction::finish("")).await.unwrap();
    // The other session's end did not end ana's lease; she saves her episode.
    let (status, saved) = call_as(
        &server,
        &tokens,
        "ana",
        "POST",
        "/campaign/complete",
        Some(json!({"lease": ana, "mark": "pass"})),
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

/// A kept MCP session is its opener's: a person's token, on a `/ws` socket of their own, cannot
/// close (nor call) the server token's session by naming its id in an `"mcp"` frame.
#[tokio::test]
async fn a_person_cannot_close_or_call_another_s_kept_mcp_session() {
    let (dir, tokens) = campaign_dir("mcp-owner", 1);
    let server = server(&dir).await;
    let base = server.base_url();
    let created = socket::mcp_call(
        &base,
        Some(TOKEN),
        json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}),
    )
    .await;
    let kept = created["result"]["session_id"]
        .as_str()
        .expect("a kept session")
        .to_string();
    let url = format!("ws://{}/ws", server.addr);
    let mut ana = socket::connect_with_token(&url, &tokens["ana"]).await;
    for (method, params) in [
        ("openenv/session/close", json!({"session_id": kept})),
        (
            "tools/call",
            json!({"session_id": kept, "name": "wait", "arguments": {}}),
        ),
    ] {
        let answer = socket::request(
            &mut ana,
            json!({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}}),
        )
        .await;
        if method == "openenv/session/close" {
            assert_eq!(
                answer["data"]["error"]["message"],
                format!("Unknown session_id: {kept}"),
                "{answer}"
            );
        }
        assert!(answer["data"]["result"]["closed"].is_null(), "{answer}");
    }
    // Still there for its opener.
    let reset = socket::mcp_call(
        &base,
        Some(TOKEN),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "session_id": kept, "name": "reset", "arguments": {"start_url": "https://example.com/"}}}),
    )
    .await;
    assert!(reset["error"].is_null(), "{reset}");
    let closed = socket::mcp_call(
        &base,
        Some(TOKEN),
        json!({"jsonrpc": "2.0", "id": 4, "method": "openenv/session/close", "params": {"session_id": kept}}),
    )
    .await;
    assert_eq!(closed["result"]["closed"], true, "{closed}");
    server.stop().await.unwrap();
}
