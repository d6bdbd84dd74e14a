//! Sessions against the fake browser: ids, recording, publishing, closing, hand-off.

use super::*;
use crate::fake::{FakeLauncher, FakeScript};
use serde_json::json;
use std::time::Duration;

fn sessions(
    max: usize,
) -> (
    Sessions<FakeLauncher>,
    std::sync::mpsc::Receiver<RecordEvent>,
) {
    let (events, recorded) = std::sync::mpsc::channel();
    let settings = EnvSettings {
        action_wait: Duration::from_millis(10),
        ..EnvSettings::default()
    };
    let pool = Arc::new(WarmPool::new(
        FakeLauncher::new(FakeScript::default()),
        false,
    ));
    let sessions = Sessions::new(pool, settings, None, max, Some(events));
    (sessions, recorded)
}

fn start(url: &str) -> Map<String, Value> {
    json!({"start_url": url}).as_object().unwrap().clone()
}

#[tokio::test]
async fn only_the_ids_sessions_get_are_session_ids() {
    let (sessions, _recorded) = sessions(3);
    for transport in Transport::ALL {
        let shared = sessions.open(transport, "peer".into()).unwrap();
        let id = shared.try_lock().unwrap().id().to_string();
        assert!(is_session_id(&id), "{id}");
    }
    let uuid = "67e55044-10b1-426f-9247-bb680e5fe0c8";
    for id in [
        "",
        ".",
        "..",
        "a/b",
        "mcp-",
        "mcp-..",
        "nobody",
        &format!("x-{uuid}"),
    ] {
        assert!(!is_session_id(id), "{id}");
    }
}

#[tokio::test]
async fn a_step_is_recorded_and_published_once_under_the_session_id() {
    let (sessions, recorded) = sessions(2);
    let shared = sessions.open(Transport::Http, "peer".into()).unwrap();
    let mut session = shared.lock().await;
    let id = session.id().to_string();
    assert!(id.starts_with("http-"));
    session.reset(&start("https://a.example/")).await.unwrap();
    let click = BrowserAction::click(10, 20);
    session.step(&click, Actor::Agent, false).await.unwrap();

    let listed = sessions.registry().get(&id).unwrap();
    assert_eq!((listed.transport, listed.step_count), ("http", 1));
    assert_eq!(listed.peer, "peer");
    let events: Vec<RecordEvent> = recorded.try_iter().collect();
    assert!(matches!(&events[..], [
        RecordEvent::Reset { session: a, .. },
        RecordEvent::Step { session: b, latency_ms, .. },
    ] if *a == id && *b == id && *latency_ms >= 0.0));
    let frame: Value = serde_json::from_str(&sessions.registry().latest(&id).unwrap()).unwrap();
    assert_eq!(frame["data"]["kind"], "step");
    assert_eq!(frame["data"]["action"]["x"], 10);
}

#[tokio::test]
async fn closing_releases_the_registry_entry_the_recording_and_the_slot() {
    let (sessions, recorded) = sessions(1);
    let first = sessions.open(Transport::WebSocket, "a".into()).unwrap();
    let refused = sessions.open(Transport::Mcp, "b".into()).err().unwrap();
    assert_eq!(
        refused,
        AtCapacity {
            active: 1,
            max: 1,
            draining: false
        }
    );

    let mut session = first.lock().await;
    session.reset(&start("https://a.example/")).await.unwrap();
    let id = session.id().to_string();
    session.close().await;
    assert!(sessions.registry().get(&id).is_none());
    assert_eq!(sessions.capacity().active(), 0);
    assert!(
        matches!(recorded.try_iter().last(), Some(RecordEvent::End { session }) if session == id)
    );
    let after = session
        .step(&BrowserAction::wait(), Actor::Agent, false)
        .await;
    assert_eq!(after.unwrap_err().to_string(), "the session is closed");
    session.close().await;
    drop(session);

    let next = sessions.open(Transport::Mcp, "b".into()).unwrap();
    assert!(next.lock().await.id().starts_with("mcp-"));
}

#[tokio::test]
async fn text_requests_are_answered_between_requests() {
    let (sessions, _recorded) = sessions(1);
    let shared = sessions.open(Transport::WebSocket, "a".into()).unwrap();
    let id = shared.lock().await.id().to_string();
    let ask = || {
        let (reply, answer) = tokio::sync::oneshot::channel();
        assert!(sessions
            .registry()
            .request_text(&id, reply)
            .unwrap()
            .is_ok());
        answer
    };
    let before = ask().await.unwrap();
    assert_eq!(before.unwrap_err(), "no page yet: reset first");

    // Asked while the transport holds the session (a step in flight): answered after it.
    let mut held = shared.lock().await;
    let mut answer = ask();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        answer.try_recv().is_err(),
        "answered while the transport held the session"
    );
    held.reset(&start("https://a.example/")).await.unwrap();
    drop(held);
    let layer = answer.await.unwrap().unwrap();
    assert_eq!(layer.session, id);
}

/// A WebSocket session an agent has reset, with this hand-off wait, and its id.
async fn an_agents_session(
    handoff_wait: Duration,
) -> (
    Sessions<FakeLauncher>,
    std::sync::mpsc::Receiver<RecordEvent>,
    SharedSession<FakeLauncher>,
    String,
) {
    let (sessions, recorded) = sessions(1);
    let sessions = sessions.with_handoff_wait(handoff_wait, Duration::from_secs(5));
    let shared = sessions.open(Transport::WebSocket, "a".into()).unwrap();
    let id = shared.lock().await.id().to_string();
    agent_reset(&shared, &start("https://a.example/"))
        .await
        .unwrap();
    (sessions, recorded, shared, id)
}

#[tokio::test]
async fn an_agent_waits_for_the_hand_back_and_hears_of_the_human_steps() {
    let (sessions, recorded, shared, id) = an_agents_session(Duration::from_secs(10)).await;
    let hold = sessions.registry().take_control(&id, "ana").unwrap();
    assert_eq!(
        sessions.registry().take_control(&id, "bo").err().unwrap(),
        "ana holds control of this session: one person at a time"
    );
    let listed = sessions.registry().get(&id).unwrap();
    assert_eq!(
        (listed.control, listed.human.as_deref()),
        ("human", Some("ana"))
    );

    let agent = tokio::spawn({
        let shared = shared.clone();
        async move { agent_step(&shared, &BrowserAction::scroll(100)).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !agent.is_finished(),
        "the agent's step ran while a person held control"
    );
    let controller = hold.controller.id.clone();
    for action in [BrowserAction::click(5, 6), BrowserAction::wait()] {
        shared
            .lock()
            .await
            .human_step(&controller, &action, false)
            .await
            .unwrap();
    }
    let refused = shared
        .lock()
        .await
        .human_step("other", &BrowserAction::wait(), false)
        .await;
    assert!(refused.unwrap_err().to_string().contains("take it first"));
    drop(hold);

    let result = agent.await.unwrap().unwrap();
    let metadata = &result.observation.metadata;
    assert_eq!(metadata["step"], 3);
    assert!(metadata.get("control").is_none());
    let steps = metadata["human_steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["step"], 1);
    assert_eq!(steps[0]["action"]["op"], "click");
    assert_eq!(steps[1]["step"], 2);
    assert_eq!(shared.lock().await.state().step_count, 3);
    let actors: Vec<Option<Actor>> = recorded
        .try_iter()
        .filter_map(|event| match event {
            RecordEvent::Step { actor, .. } => Some(actor),
            _ => None,
        })
        .collect();
    assert_eq!(
        actors,
        [Some(Actor::Human), Some(Actor::Human), Some(Actor::Agent)]
    );
    // Listed once: the next observation has none.
    let next = agent_step(&shared, &BrowserAction::wait()).await.unwrap();
    assert!(next.observation.metadata.get("human_steps").is_none());
}

#[tokio::test]
async fn an_agent_that_waits_too_long_gets_the_current_observation() {
    let (sessions, _recorded, shared, id) = an_agents_session(Duration::from_millis(100)).await;
    let hold = sessions.registry().take_control(&id, "ana").unwrap();
    let controller = hold.controller.id.clone();
    shared
        .lock()
        .await
        .human_step(&controller, &BrowserAction::click(1, 2), false)
        .await
        .unwrap();

    let result = agent_step(&shared, &BrowserAction::scroll(100))
        .await
        .unwrap();
    let metadata = &result.observation.metadata;
    assert_eq!(
        (&metadata["control"], &metadata["controller"]),
        (&json!("human"), &json!("ana"))
    );
    assert_eq!(metadata["step"], 1);
    assert_eq!(metadata["human_steps"].as_array().unwrap().len(), 1);
    assert_eq!(
        shared.lock().await.state().step_count,
        1,
        "the agent's action ran"
    );

    let reset = agent_reset(&shared, &start("https://b.example/")).await;
    assert!(reset
        .unwrap_err()
        .to_string()
        .starts_with("ana holds control of this session"));
    // A dropped hold (the watcher's connection ended) hands back.
    drop(hold);
    assert_eq!(sessions.registry().get(&id).unwrap().control, "agent");
    let result = agent_step(&shared, &BrowserAction::scroll(100))
        .await
        .unwrap();
    assert!(result.observation.metadata.get("control").is_none());
    assert_eq!(shared.lock().await.state().step_count, 2);
}

#[tokio::test]
async fn observed_text_is_off_by_default_and_hides_what_a_person_typed_as_a_secret() {
    let run = browserenv::text_layer::TextRun {
        text: "Signed in as hunter22".into(),
        x: 10,
        y: 20,
        width: 100,
        height: 18,
        size: 16.0,
        color: [0, 0, 0],
        bold: false,
        link: false,
        kind: browserenv::text_layer::RunKind::Text,
    };
    let script = FakeScript {
        text_runs: vec![run],
        ..FakeScript::default()
    };
    for observe_text in [false, true] {
        let settings = EnvSettings {
            action_wait: Duration::from_millis(10),
            observe_text,
            ..EnvSettings::default()
        };
        let pool = Arc::new(WarmPool::new(FakeLauncher::new(script.clone()), false));
        let sessions = Sessions::new(pool, settings, None, 1, None);
        let shared = sessions.open(Transport::WebSocket, "a".into()).unwrap();
        let mut session = shared.lock().await;
        let first = session.reset(&start("https://a.example/")).await.unwrap();
        let metadata = &first.observation.metadata;
        if !observe_text {
            assert!(metadata.get("text").is_none(), "the seed's metadata");
            assert!(metadata.get("text_truncated").is_none());
            assert!(metadata["timings_ms"].get("text").is_none());
            continue;
        }
        assert_eq!(metadata["text"], "10,20,100,18 Signed in as hunter22");
        assert_eq!(metadata["text_truncated"], false);
        assert!(metadata["timings_ms"]["text"].is_number());
        let typed = session
            .step(&BrowserAction::type_text("hunter22"), Actor::Human, true)
            .await
            .unwrap();
        assert_eq!(
            typed.observation.metadata["text"],
            format!(
                "10,20,100,18 Signed in as {}",
                browserenv::secrets::redacted("hunter22")
            )
        );
        assert_eq!(session.state().step_count, 1, "reading is not a step");
    }
}

/// An agent's `request_human` whose call is cancelled while it waits (a `/ws` socket closed, an
/// HTTP client gone: the call's future is dropped) closes the request: watchers are told, the
/// session no longer shows it, and the next `request_human` is taken.
#[tokio::test]
async fn a_cancelled_request_for_a_person_is_closed() {
    let (sessions, _recorded, shared, id) = an_agents_session(Duration::from_secs(10)).await;
    let (_, mut frames) = sessions.registry().watch(&id).unwrap();
    let asked = tokio::spawn({
        let shared = shared.clone();
        async move { ask_for_a_person(&shared, "please sign me in", Duration::from_secs(60)).await }
    });
    let asking = |sessions: &Sessions<FakeLauncher>| sessions.registry().get(&id).unwrap().asking;
    for _ in 0..100 {
        if asking(&sessions).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(asking(&sessions).unwrap().reason, "please sign me in");
    asked.abort();
    assert!(asked.await.unwrap_err().is_cancelled());
    assert_eq!(asking(&sessions), None);
    // The watchers' last word: the agent drives, and asks nobody.
    let mut last = None;
    while let Ok(frame) = frames.try_recv() {
        last = Some(frame);
    }
    let last: Value = serde_json::from_str(&last.expect("watchers were told")).unwrap();
    assert_eq!(last["data"]["control"], json!({"actor": "agent"}), "{last}");
    // Asked again, the session takes it (and nobody answers within its wait).
    let again = ask_for_a_person(&shared, "again", Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(
        again.to_string().contains("no person took control"),
        "{}",
        again.to_string()
    );
    assert_eq!(asking(&sessions), None);
}
