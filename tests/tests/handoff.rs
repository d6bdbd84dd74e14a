//! Hand-off on real Chromium: a person watching a session takes control on the watch socket,
//! acts, and hands back, while the agent's client stays connected and waits.

use std::time::Duration;

use browserenv::{BrowserAction, ResetOptions};
use browserenv_collect::trajectory::{read, Actor};
use browserenv_server::settings::PeerTimeouts;
use browserenv_server::ServerConfig;
use browserenv_tests::watch::{reply, send, session_id, until, watch};
use browserenv_tests::{test_settings, title, Harness};
use futures_util::StreamExt;
use serde_json::{json, Value};

#[tokio::test]
async fn a_person_takes_over_acts_twice_and_hands_back() {
    let dir = std::env::temp_dir().join(format!("browserenv-handoff-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mut agent = harness.client().await;
    agent
        .reset(ResetOptions::new(harness.page("canvas.html")).episode_id("handoff-1"))
        .await
        .unwrap();
    let id = session_id(&harness).await;
    let mut person = watch(&harness, &id, None).await.unwrap();
    let mut other = watch(&harness, &id, None).await.unwrap();
    until(&mut other, |f| f["data"]["kind"] == "reset").await;

    // A step before taking control is refused; then control is the person's, one at a time.
    send(&mut person, json!({"type": "step", "data": {"op": "wait"}})).await;
    let refused = until(&mut person, reply).await;
    assert!(refused["data"]["message"]
        .as_str()
        .unwrap()
        .contains("take control first"));
    send(
        &mut person,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    let taken = until(&mut person, reply).await;
    assert_eq!(
        taken["data"],
        json!({"control": "human", "name": "ana", "yours": true})
    );
    let mut bo = watch(&harness, &id, None).await.unwrap();
    send(&mut bo, json!({"type": "take", "data": {"name": "bo"}})).await;
    let second = until(&mut bo, reply).await;
    assert_eq!(second["data"]["reason"], "CONTROL_HELD", "{second}");
    assert!(second["data"]["message"]
        .as_str()
        .unwrap()
        .contains("ana holds control"));

    // The agent's step waits while the person acts twice, its client connected.
    let waiting = tokio::spawn(async move {
        let result = agent.step(BrowserAction::click(30, 40)).await.unwrap();
        (agent, result)
    });
    for (x, y) in [(100, 110), (200, 210)] {
        send(
            &mut person,
            json!({"type": "step", "data": {"op": "click", "x": x, "y": y}}),
        )
        .await;
        let answer = until(&mut person, reply).await;
        assert_eq!(answer["type"], "observation", "{answer}");
        assert_eq!(
            answer["data"]["observation"]["metadata"]["title"],
            format!("clicked {x},{y}")
        );
    }
    assert!(
        !waiting.is_finished(),
        "the agent stepped while the person held control"
    );
    send(&mut person, json!({"type": "release"})).await;
    assert_eq!(until(&mut person, reply).await["data"]["control"], "agent");

    let (mut agent, result) = waiting.await.unwrap();
    assert_eq!(title(&result), "clicked 30,40");
    let metadata = &result.observation.metadata;
    assert_eq!(metadata["step"], 3);
    let human: Vec<(u64, i64)> = metadata["human_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step"].as_u64().unwrap(),
                s["action"]["x"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(human, [(1, 100), (2, 200)]);
    assert_eq!(agent.state().await.unwrap().step_count, 3);

    // The other watcher saw who was in control, and each step's actor.
    let mut seen = Vec::new();
    while seen.last().map(String::as_str) != Some("step agent") {
        let frame = until(&mut other, |f| f["type"] == "event").await;
        let data = &frame["data"];
        seen.push(match data["kind"].as_str().unwrap() {
            "control" => format!("control {}", data["control"]["actor"].as_str().unwrap()),
            kind => format!("{kind} {}", data["actor"].as_str().unwrap()),
        });
        if data["kind"] == "step" && data["actor"] == "human" {
            assert_eq!(data["control"], json!({"actor": "human", "name": "ana"}));
        }
    }
    assert_eq!(
        seen,
        [
            "control human",
            "step human",
            "step human",
            "control agent",
            "step agent"
        ]
    );

    agent.close().await.unwrap();
    harness.stop().await;
    let recording = read(&dir).unwrap();
    assert_eq!(recording.problems, vec![]);
    let steps = recording.episode_steps("handoff-1");
    let actors: Vec<Actor> = steps.iter().map(|s| s.actor).collect();
    assert_eq!(actors, [Actor::Human, Actor::Human, Actor::Agent]);
    assert_eq!(steps.iter().map(|s| s.step).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(recording.episodes.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_agent_waits_in_vain_then_a_dropped_or_silent_controller_hands_back() {
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        token: Some("sesame".into()),
        timeouts: PeerTimeouts {
            handoff_wait: Duration::from_secs(1),
            ping_interval: Duration::from_secs(1),
            ping_timeout: Duration::from_secs(1),
            ..PeerTimeouts::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut agent =
        browserenv::Client::connect_with_token(&harness.server.base_url(), Some("sesame"))
            .await
            .unwrap();
    agent
        .reset(ResetOptions::new(harness.page("canvas.html")))
        .await
        .unwrap();
    let sessions: Value = reqwest::Client::new()
        .get(format!("{}/sessions", harness.server.base_url()))
        .bearer_auth("sesame")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = sessions[0]["id"].as_str().unwrap().to_string();

    // Taking control needs the server's token: the watch socket itself does.
    let refused = watch(&harness, &id, None).await.unwrap_err();
    assert!(refused.contains("401"), "{refused}");
    let mut person = watch(&harness, &id, Some("sesame")).await.unwrap();
    send(
        &mut person,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    until(&mut person, reply).await;
    send(
        &mut person,
        json!({"type": "step", "data": {"op": "click", "x": 50, "y": 60}}),
    )
    .await;
    assert_eq!(until(&mut person, reply).await["type"], "observation");

    // Past BROWSER_HANDOFF_WAIT_SECONDS: the current page, nothing done, control "human".
    let started = std::time::Instant::now();
    let result = agent.step(BrowserAction::click(300, 300)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
    let metadata = &result.observation.metadata;
    assert_eq!(
        (&metadata["control"], &metadata["controller"]),
        (&json!("human"), &json!("ana"))
    );
    assert_eq!(title(&result), "clicked 50,60");
    assert_eq!(metadata["human_steps"].as_array().unwrap().len(), 1);
    assert_eq!(agent.state().await.unwrap().step_count, 1);

    // The person's socket closes: control is the agent's again at once.
    drop(person);
    let result = agent.step(BrowserAction::click(70, 80)).await.unwrap();
    assert_eq!(title(&result), "clicked 70,80");
    assert!(result.observation.metadata.get("control").is_none());

    // A controller that stops answering pings is let go after the ping timeout.
    let mut silent = watch(&harness, &id, Some("sesame")).await.unwrap();
    send(&mut silent, json!({"type": "take", "data": {"name": "cy"}})).await;
    until(&mut silent, reply).await;
    // Not reading: no pong goes back. The agent keeps talking (its own socket is pinged as
    // often, and a client reads, so answers, only while it waits for a reply).
    for _ in 0..10 {
        agent.state().await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let result = agent.step(BrowserAction::click(90, 100)).await.unwrap();
    assert_eq!(title(&result), "clicked 90,100");
    assert!(result.observation.metadata.get("control").is_none());
    drop(silent);
    agent.close().await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn what_a_person_types_as_a_secret_or_into_a_secret_field_stays_theirs() {
    let dir = std::env::temp_dir().join(format!("browserenv-secret-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mut agent = harness.client().await;
    agent
        .reset(ResetOptions::new(harness.page("login.html")).episode_id("secret-1"))
        .await
        .unwrap();
    let id = session_id(&harness).await;
    let mut person = watch(&harness, &id, None).await.unwrap();
    let mut other = watch(&harness, &id, None).await.unwrap();
    until(&mut other, |f| f["data"]["kind"] == "reset").await;
    send(
        &mut person,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    assert_eq!(until(&mut person, reply).await["type"], "control");

    // A secret marked so (into a plain field), a password, a one-time code: three kinds of typing
    // that must not leave the person.
    let typed = [
        ((200, 115), "ana-s3cret-name", true),
        ((200, 215), "hunter2-pass", false),
        ((200, 315), "918273", false),
    ];
    for ((x, y), text, secret) in typed {
        send(
            &mut person,
            json!({"type": "step", "data": {"op": "click", "x": x, "y": y}}),
        )
        .await;
        assert_eq!(until(&mut person, reply).await["type"], "observation");
        send(
            &mut person,
            json!({"type": "step", "data": {"op": "type", "text": text}, "secret": secret}),
        )
        .await;
        assert_eq!(until(&mut person, reply).await["type"], "observation");
    }
    // A bad mark is refused, not ignored.
    send(
        &mut person,
        json!({"type": "step", "data": {"op": "type", "text": "x"}, "secret": "yes"}),
    )
    .await;
    assert_eq!(
        until(&mut person, reply).await["data"]["code"],
        "EXECUTION_ERROR"
    );
    send(&mut person, json!({"type": "release"})).await;
    until(&mut person, |f| f["type"] == "control").await;

    // The agent hears that the person typed, and how much: never what.
    let after = agent.step(BrowserAction::wait()).await.unwrap();
    let human: Vec<String> = after.observation.metadata["human_steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["action"]["op"] == "type")
        .map(|s| s["action"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        human,
        [
            "<redacted:15 characters>",
            "<redacted:12 characters>",
            "<redacted:6 characters>"
        ]
    );
    // What the agent types into a password field is not shown raw to watchers either.
    agent.step(BrowserAction::click(200, 215)).await.unwrap();
    agent
        .step(BrowserAction::type_text("agent-pass-1"))
        .await
        .unwrap();

    // Every frame the other watcher got, and a late watcher's first one.
    let mut frames = Vec::new();
    loop {
        let frame = until(&mut other, |f| f["type"] == "event").await;
        let last = frame["data"]["actor"] == "agent" && frame["data"]["action"]["op"] == "type";
        frames.push(frame.to_string());
        if last {
            break;
        }
    }
    let mut late = watch(&harness, &id, None).await.unwrap();
    frames.push(until(&mut late, |f| f["type"] == "event").await.to_string());
    let text: Value = reqwest::get(format!("{}/sessions/{id}/text", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    agent.close().await.unwrap();
    harness.stop().await;

    let recording = read(&dir).unwrap();
    let recorded: Vec<String> = recording
        .episode_steps("secret-1")
        .iter()
        .filter(|s| s.action["op"] == "type")
        .map(|s| s.action["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(recorded.len(), 4, "{recorded:?}");
    assert!(
        recorded.iter().all(|t| t.starts_with("<redacted:")),
        "{recorded:?}"
    );
    let mut on_disk = String::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        on_disk.push_str(&String::from_utf8_lossy(
            &std::fs::read(entry.path()).unwrap_or_default(),
        ));
    }
    for secret in ["ana-s3cret-name", "hunter2-pass", "918273", "agent-pass-1"] {
        for (i, frame) in frames.iter().enumerate() {
            assert!(
                !frame.contains(secret),
                "watch frame {i} shows {secret}: {frame}"
            );
        }
        assert!(!on_disk.contains(secret), "the recording holds {secret}");
        assert!(!serde_json::to_string(&after.observation.metadata)
            .unwrap()
            .contains(secret));
    }
    // The page shows a one-time code as a secret in the text layer too (the plain field, which
    // the page draws as it is, is the page's own business: docs/security.md).
    assert!(!text.to_string().contains("918273"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A page can carry what a person typed as a secret into its URL (a form sent with GET) and its
/// title: the agent, watchers, the session list and the recording get it hidden there too.
#[tokio::test]
async fn a_secret_the_page_moves_into_its_url_stays_hidden() {
    let dir = std::env::temp_dir().join(format!("browserenv-secret-url-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mut agent = harness.client().await;
    agent
        .reset(ResetOptions::new(harness.page("getform.html")).episode_id("secret-url"))
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
    let secret = "p@ss word+42";
    for (step, mark) in [
        (json!({"op": "click", "x": 200, "y": 115}), false),
        (json!({"op": "type", "text": secret}), true),
        (json!({"op": "key", "text": "ENTER"}), false),
    ] {
        send(
            &mut person,
            json!({"type": "step", "data": step, "secret": mark}),
        )
        .await;
        let answer = until(&mut person, reply).await;
        assert_eq!(answer["type"], "observation", "{step}: {answer}");
    }
    let listed: Value = reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    send(&mut person, json!({"type": "release"})).await;
    until(&mut person, |f| f["type"] == "control").await;
    let after = agent.step(BrowserAction::wait()).await.unwrap();
    // The page did carry it: the URL went to the results, hidden.
    assert!(
        after.observation.url.contains("q="),
        "{}",
        after.observation.url
    );
    let mut frames = Vec::new();
    while let Ok(Some(Ok(frame))) =
        tokio::time::timeout(Duration::from_millis(200), other.next()).await
    {
        frames.push(frame.to_string());
    }
    agent.close().await.unwrap();
    harness.stop().await;
    let mut on_disk = String::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        on_disk.push_str(&String::from_utf8_lossy(
            &std::fs::read(entry.path()).unwrap_or_default(),
        ));
    }
    let shown = serde_json::to_string(&after.observation.metadata).unwrap();
    for form in [
        secret,
        "p%40ss",
        "p@ss+word",
        "p@ss%20word",
        "word+42",
        "word%2B42",
    ] {
        assert!(
            !after.observation.url.contains(form),
            "url: {}",
            after.observation.url
        );
        assert!(!shown.contains(form), "metadata shows {form}: {shown}");
        assert!(
            !listed.to_string().contains(form),
            "/sessions shows {form}: {listed}"
        );
        assert!(!on_disk.contains(form), "the recording holds {form}");
        for frame in &frames {
            assert!(!frame.contains(form), "a watcher got {form}: {frame}");
        }
    }
    assert!(
        after.observation.url.contains("<redacted:12 characters>"),
        "{}",
        after.observation.url
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An agent asks for a person (`request_human`, as OpenEnv's MCP client calls it): watchers and
/// `/sessions` show who asks and why, the call waits while a person takes control, acts and
/// hands back with a note, then returns the note, who it was and what they did; the recording
/// notes both.
#[tokio::test]
async fn an_agent_asks_for_a_person_and_gets_their_note_and_steps() {
    let dir = std::env::temp_dir().join(format!("browserenv-ask-{}", std::process::id()));
    let harness = Harness::recording(&dir, test_settings()).await;
    let mcp = |body: Value| {
        let url = format!("{}/mcp", harness.server.base_url());
        async move {
            reqwest::Client::new()
                .post(url)
                .header("accept", "*/*")
                .json(&body)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let created = mcp(json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"})).await;
    let id = created["result"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let call = |name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"session_id": id, "name": name, "arguments": arguments}})
    };
    let reset = mcp(call(
        "reset",
        json!({"start_url": harness.page("form.html")}),
    ))
    .await;
    assert!(reset["error"].is_null(), "{reset}");
    let mut person = watch(&harness, &id, None).await.unwrap();
    let asked = tokio::spawn(mcp(call(
        "request_human",
        // A right-to-left override and an isolate, which would reorder what watchers read.
        json!({"reason": "please sign\u{202e} me\u{2066} in", "wait_seconds": 60}),
    )));
    let asking = until(&mut person, |f| !f["data"]["control"]["asking"].is_null()).await;
    assert_eq!(
        asking["data"]["control"]["asking"]["reason"],
        "please sign me in"
    );
    let listed: Value = reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        listed[0]["asking"]["reason"], "please sign me in",
        "{listed}"
    );
    send(
        &mut person,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    assert_eq!(until(&mut person, reply).await["type"], "control");
    send(
        &mut person,
        json!({"type": "step", "data": {"op": "click", "x": 250, "y": 115}}),
    )
    .await;
    assert_eq!(until(&mut person, reply).await["type"], "observation");
    send(
        &mut person,
        json!({"type": "release", "data": {"note": "signed in\nas ana"}}),
    )
    .await;
    until(&mut person, |f| f["type"] == "control").await;
    let answer = asked.await.unwrap();
    let metadata = &answer["result"]["data"]["metadata"];
    assert_eq!(metadata["human"], "ana", "{answer}");
    assert_eq!(metadata["human_note"], "signed in as ana");
    assert_eq!(metadata["human_steps"][0]["action"]["op"], "click");
    assert!(
        answer["result"]["data"]["screenshot"]
            .as_str()
            .unwrap()
            .len()
            > 100
    );
    // The request is over: no longer listed as asking.
    let listed: Value = reqwest::get(format!("{}/sessions", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(listed[0]["asking"].is_null(), "{listed}");
    // Nobody answers the next one: the call says so when its wait is over.
    let unanswered = mcp(call(
        "request_human",
        json!({"reason": "again", "wait_seconds": 1}),
    ))
    .await;
    assert!(
        unanswered.to_string().contains("no person took control"),
        "{unanswered}"
    );
    drop(person);
    let _ = mcp(
        json!({"jsonrpc": "2.0", "id": 3, "method": "openenv/session/close",
                       "params": {"session_id": id}}),
    )
    .await;
    harness.stop().await;
    let notes: Vec<String> = read(&dir)
        .unwrap()
        .steps
        .iter()
        .filter_map(|step| step.note.clone())
        .flat_map(|note| note.lines().map(str::to_string).collect::<Vec<_>>())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("asked for a person: please sign me in")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n == "ana answered: signed in as ana"),
        "{notes:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
