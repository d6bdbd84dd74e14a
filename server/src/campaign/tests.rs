//! The hub between sessions, routes and the campaign's rules: whose token starts a lease, one
//! spelling per episode id, and a save that waits for the recorder.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};

use browserenv_collect::campaign::{CONFIG_FILE, RECORDING_DIR};
use serde_json::json;

use super::*;

/// A campaign folder of this test's own, removed when dropped.
struct Folder(PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A hub on a campaign of two tasks, its recorder's inbox in the test's hands.
fn hub(name: &str) -> (Hub, Receiver<RecordEvent>, Folder) {
    let dir = std::env::temp_dir().join(format!("browserenv-hub-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(RECORDING_DIR)).unwrap();
    let tasks = [
        json!({"id": "a", "category": "information", "instruction": "A", "start_url": "/",
               "check": {"answer": {"match": "normalized", "value": "x"}}}),
        json!({"id": "b", "category": "information", "instruction": "B", "start_url": "/",
               "check": {"answer": {"match": "normalized", "value": "y"}}}),
    ];
    let lines: String = tasks.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(dir.join("tasks.jsonl"), lines).unwrap();
    std::fs::write(
        dir.join(CONFIG_FILE),
        r#"{"tasks": "tasks.jsonl", "demos_wanted": 2}"#,
    )
    .unwrap();
    drop(TrajectoryWriter::open(dir.join(RECORDING_DIR)).unwrap());
    let (campaign, _) = Campaign::open(&dir).unwrap();
    let roster = Roster::open(&dir).unwrap();
    let (recorder, inbox) = std::sync::mpsc::channel();
    let hub = Hub::new(campaign, roster, recorder, None).unwrap();
    (hub, inbox, Folder(dir))
}

fn person(name: &str) -> Caller {
    Caller::Person(name.into())
}

fn lease_kwargs(lease: &str) -> Map<String, Value> {
    Map::from_iter([(LEASE_KWARG.to_string(), json!(lease))])
}

fn next_lease(hub: &Hub, name: &str) -> String {
    hub.with(|campaign| campaign.next_task(name))
        .unwrap()
        .expect("a task")
        .id
}

#[test]
fn a_lease_is_started_by_its_own_person_s_session_only() {
    let (hub, _inbox, _dir) = hub("seat");
    let ana = next_lease(&hub, "ana");
    let refused = |caller: &Caller, kwargs: &Map<String, Value>| {
        hub.seat(kwargs, "s1", caller).err().unwrap_or_default()
    };
    assert!(
        refused(&Caller::Shared, &lease_kwargs(&ana)).contains("its person's own token"),
        "the server's token starts no lease"
    );
    assert!(
        refused(&person("bo"), &lease_kwargs(&ana)).contains("someone else's"),
        "bo cannot start ana's lease"
    );
    assert!(
        refused(&person("ana"), &Map::new()).contains("leased tasks only"),
        "a person's session starts nothing but their leases"
    );
    assert!(matches!(
        hub.seat(&Map::new(), "s1", &Caller::Shared),
        Ok(None)
    ));
    let (seat, kwargs) = hub
        .seat(&lease_kwargs(&ana), "s1", &person("ana"))
        .unwrap()
        .unwrap();
    assert_eq!((seat.person.as_str(), seat.task.as_str()), ("ana", "a"));
    assert_eq!(kwargs["task_id"], "a");
}

/// A campaign episode's id is kept in one spelling: another spelling of an id used already is
/// that id, and is refused as used.
#[test]
fn an_episode_id_has_one_spelling() {
    let (hub, _inbox, _dir) = hub("ids");
    let ana = next_lease(&hub, "ana");
    let id = uuid::Uuid::new_v4();
    let mut kwargs = lease_kwargs(&ana);
    kwargs.insert(
        "episode_id".into(),
        json!(id.hyphenated().to_string().to_uppercase()),
    );
    let (_, started) = hub.seat(&kwargs, "s1", &person("ana")).unwrap().unwrap();
    assert_eq!(
        started["episode_id"],
        id.hyphenated().to_string(),
        "stored lowercase and hyphenated"
    );
    for spelling in [
        id.hyphenated().to_string(),
        format!("{{{id}}}"),
        id.simple().to_string().to_uppercase(),
        id.urn().to_string(),
    ] {
        let mut again = lease_kwargs(&ana);
        again.insert("episode_id".into(), json!(spelling));
        let err = hub.seat(&again, "s1", &person("ana")).err().unwrap();
        assert!(err.contains("used already"), "{spelling}: {err}");
    }
    for bad in [json!("e-1"), json!(12), json!("../x")] {
        let mut asked = lease_kwargs(&ana);
        asked.insert("episode_id".into(), bad.clone());
        let err = hub.seat(&asked, "s1", &person("ana")).err().unwrap();
        assert!(err.contains("UUID"), "{bad}: {err}");
    }
}

/// `complete` answers once the recorder has confirmed the episode on disk, and says so when it
/// did not in time.
#[tokio::test]
async fn a_save_waits_for_the_recorder() {
    let (mut hub, inbox, _dir) = hub("confirm");
    hub.confirm_wait = Duration::from_millis(300);
    let hub = Arc::new(hub);
    let ended = |name: &str, session: &str| {
        let lease = next_lease(&hub, name);
        let (seat, kwargs) = hub
            .seat(&lease_kwargs(&lease), session, &person(name))
            .unwrap()
            .unwrap();
        let episode = kwargs["episode_id"].as_str().unwrap().to_string();
        hub.episode_ended(&seat, session, &episode, Some(true));
        (lease, episode)
    };
    let (lease, episode) = ended("ana", "s1");
    let saving = tokio::spawn({
        let hub = hub.clone();
        async move { hub.complete(&lease, "ana", OwnMark::Pass).await }
    });
    let asked = tokio::task::spawn_blocking(move || {
        let asked = inbox.recv_timeout(Duration::from_secs(5));
        (asked, inbox)
    })
    .await
    .unwrap();
    let (asked, inbox) = asked;
    let Ok(RecordEvent::Confirm { episode_id, reply }) = asked else {
        panic!("the save asked the recorder nothing: {asked:?}");
    };
    assert_eq!(episode_id, episode);
    assert!(!saving.is_finished(), "answered before the recorder did");
    reply.send(true).unwrap();
    let saved = saving.await.unwrap().unwrap();
    assert!(saved.recorded);
    assert_eq!(saved.demonstration.episode_id, episode);
    // A recorder that does not answer in time: saved, and said so.
    let (lease, _) = ended("bo", "s2");
    let saved = hub.complete(&lease, "bo", OwnMark::Pass).await.unwrap();
    assert!(!saved.recorded);
    assert!(matches!(
        inbox.recv_timeout(Duration::ZERO),
        Ok(RecordEvent::Confirm { .. })
    ));
    assert_eq!(
        inbox.recv_timeout(Duration::ZERO).err(),
        Some(RecvTimeoutError::Timeout)
    );
}
