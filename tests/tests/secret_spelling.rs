//! A person's secret hidden however a text cuts or spells it, on real Chromium and real sockets:
//! a marked text area's lines (the text layer shows them apart, and draws the field as bullets);
//! what a sign-in page sends per keystroke (every start of the password), as JSON, in an
//! `Authorization: Basic` header, echoed back as HTML entities; and the session cookie the
//! sign-in set, stored replaced while the archive still replays (security round 4).

use axum::http::{header, HeaderMap};
use axum::response::Html;
use axum::routing::{get, post};
use browserenv_server::archive::ArchiveConfig;
use browserenv_server::ServerConfig;
use browserenv_tests::outlets::{person_does, recording_everything, scratch};
use browserenv_tests::{test_settings, Harness};
use serde_json::{json, Map, Value};

/// A marked text area with a line break: its lines were in the text layer (`read_page`, the
/// watchers' `/sessions/{id}/text`), the field's and the page's preview of it.
#[tokio::test]
async fn a_marked_text_area_s_lines_are_hidden_and_drawn_as_bullets() {
    let dir = scratch("secret-note");
    let harness = recording_everything(&dir).await;
    let page = harness.page("secretnote.html");
    let seen = person_does(
        harness,
        &dir,
        &page,
        &[
            (json!({"op": "click", "x": 300, "y": 140}), false),
            (
                json!({"op": "type", "text": "first  line here\nsecond line"}),
                true,
            ),
        ],
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        seen.leaks(&["first", "line here", "second line"]),
        Vec::<String>::new()
    );
    // The field itself is drawn as bullets.
    let layer = seen.layers().pop().expect("a text layer");
    let bullets: Vec<&Value> = layer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|run| run["kind"] == "password")
        .collect();
    assert_eq!(bullets.len(), 1, "{layer}");
    assert!(bullets[0]["text"]
        .as_str()
        .unwrap()
        .chars()
        .all(|c| c == '\u{2022}'));
    // Covered in the agent's picture: the field holding a secret, and the preview's two lines
    // showing it.
    let boxes = &seen.last.as_ref().unwrap().observation.metadata["password_boxes"];
    assert_eq!(boxes.as_array().map(Vec::len), Some(3), "{boxes}");
    assert_eq!(boxes[0], json!([100, 100, 406, 86]));
}

/// The secret of the sign-in tests: a quote and a hash, so every spelling differs.
const SECRET: &str = "Kx\"9q#2w";

/// A sign-in site as real ones are: it checks the password as it is typed (a request per
/// keystroke), signs in with a JSON body and `Authorization: Basic`, echoes the password back in
/// a field's value (HTML entities) and sets a session cookie; its account page says how long
/// the session cookie it is shown is.
async fn sign_in_site() -> String {
    let signin = || async {
        Html(
            "<!DOCTYPE html><title>Sign in</title><body style='margin:0'>\
             <input id=pw type=password style='position:absolute;left:100px;top:200px;width:300px;height:30px'>\
             <script>\
             const pw = document.getElementById('pw');\
             pw.addEventListener('input', () => fetch('/check?v=' + encodeURIComponent(pw.value)));\
             pw.addEventListener('keydown', async (e) => {\
               if (e.key !== 'Enter') return;\
               await fetch('/session', {method: 'POST', headers: {'Content-Type': 'application/json',\
                 'Authorization': 'Basic ' + btoa('ana:' + pw.value)}, body: JSON.stringify({user: 'ana', pw: pw.value})});\
               location.href = '/account';\
             });\
             </script>",
        )
    };
    let session = |body: String| async move {
        let sent: Value = serde_json::from_str(&body).unwrap_or_default();
        let echoed = sent["pw"]
            .as_str()
            .unwrap_or_default()
            .replace('&', "&amp;")
            .replace('"', "&quot;")
            .replace('#', "&#35;");
        (
            [
                (header::CONTENT_TYPE, "text/html".to_string()),
                (
                    header::SET_COOKIE,
                    "sid=5f1c9e0a7b3d42e8a6c1f0b9d2e7a4c3; Path=/".to_string(),
                ),
            ],
            format!("<input value=\"{echoed}\">"),
        )
    };
    let account = |headers: HeaderMap| async move {
        let signed_in = headers.get(header::COOKIE).is_some();
        Html(format!(
            "<!DOCTYPE html><title>Account</title><body><h1>{}</h1><p id=c></p><script>\
             document.getElementById('c').textContent = 'session cookie of ' + document.cookie.length + ' characters';\
             </script>",
            if signed_in { "Welcome back" } else { "Nobody" }
        ))
    };
    #[allow(clippy::disallowed_methods)] // a site of the test's, not the server's routes
    let app = axum::Router::new()
        .route("/signin", get(signin))
        .route(
            "/check",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    "{\"strong\":false}",
                )
            }),
        )
        .route("/session", post(session))
        .route("/account", get(account));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app.into_make_service()).await });
    url
}

/// What a sign-in page sends as the password is typed and sent: the archive kept every start
/// (`v=Kx%229q`), the JSON body, the base64 of `Authorization: Basic`, the echo in HTML entities
/// and the session cookie. Now none; and the archive still replays, the cookie's value replaced.
#[tokio::test]
async fn every_start_and_spelling_of_a_password_and_its_cookie_are_hidden_in_the_archive() {
    use base64::Engine;
    let site = sign_in_site().await;
    let dir = scratch("secret-spelling");
    let harness = recording_everything(&dir).await;
    let seen = person_does(
        harness,
        &dir,
        &format!("{site}/signin"),
        &[
            (json!({"op": "click", "x": 250, "y": 215}), false),
            (json!({"op": "type", "text": SECRET}), false),
            (json!({"op": "key", "text": "ENTER"}), false),
        ],
    )
    .await;
    assert!(
        seen.archive.contains("/check?v="),
        "per-keystroke requests were recorded"
    );
    assert!(
        seen.archive.contains("Welcome back"),
        "the account page was recorded"
    );
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("ana:{SECRET}"));
    let forms = [
        "Kx%229q%232w",
        "Kx%229q%232",
        "Kx%229q",
        "Kx%229",
        "Kx\\\"9q",
        "Kx&quot;9q",
        "9q&#35;2w",
        basic.as_str(),
        "5f1c9e0a7b3d42e8a6c1f0b9d2e7a4c3",
    ];
    assert_eq!(seen.leaks(&forms), Vec::<String>::new());
    assert!(
        seen.archive.contains("Authorization: Basic <redacted:"),
        "{}",
        seen.archive
    );
    assert!(seen.archive.contains("sid=<redacted:32 characters>"));

    // Replayed: the sign-in answers with the recorded cookie, its value replaced.
    // The archive itself, not its index beside it (`.warc.gz.cdxj`): the folder's order is the
    // file system's.
    let archive = std::fs::read_dir(dir.join("archives"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().to_string())
        .find(|name| name.ends_with(".warc.gz"))
        .unwrap();
    let replaying = Harness::start_with(ServerConfig {
        settings: test_settings(),
        archive: ArchiveConfig {
            dir: Some(dir.join("archives")),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut agent = replaying.client().await;
    let mut kwargs = Map::new();
    kwargs.insert("start_url".into(), json!(format!("{site}/signin")));
    kwargs.insert("archive".into(), json!(archive));
    agent.reset_with(kwargs).await.unwrap();
    for action in [
        browserenv::BrowserAction::click(250, 215),
        browserenv::BrowserAction::type_text("anything"),
        browserenv::BrowserAction::key(browserenv::Key::Enter),
        browserenv::BrowserAction::wait(),
    ] {
        agent.step(action).await.unwrap();
    }
    let text = replaying_text(&replaying).await;
    assert!(text.contains("Welcome back"), "{text}");
    assert!(
        text.contains(&format!(
            "session cookie of {} characters",
            "sid=<redacted:32 characters>".len()
        )),
        "{text}"
    );
    agent.close().await.unwrap();
    replaying.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The replaying session's page text, from its text layer.
async fn replaying_text(harness: &Harness) -> String {
    let id = browserenv_tests::watch::session_id(harness).await;
    let layer: Value = reqwest::get(format!("{}/sessions/{id}/text", harness.server.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    layer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["text"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join(" | ")
}
