//! Every op and every observation error code, against real Chromium over a real WebSocket.

use std::time::Duration;

use browserenv::models::Key;
use browserenv::protocol::ErrorCode;
use browserenv::{BrowserAction, ClientError, ResetOptions};
use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_settings, title, Harness, Picture};

#[tokio::test]
async fn first_observation_is_an_800x600_png_of_the_page() {
    let harness = Harness::start(test_settings()).await;
    let (client, first) = harness.open("canvas.html").await;
    let picture = Picture::from_base64(&first.observation.screenshot);
    assert_eq!((picture.width, picture.height), (800, 600));
    assert_eq!(first.observation.url, harness.page("canvas.html"));
    assert_eq!(first.observation.error, "");
    assert!(!first.done);
    assert_eq!(first.reward, Some(0.0));
    client.close().await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn click_lands_on_the_exact_canvas_pixel_as_a_trusted_event() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("canvas.html").await;
    let result = client.step(BrowserAction::click(123, 234)).await.unwrap();
    assert_eq!(title(&result), "clicked 123,234");
    let picture = Picture::from_base64(&result.observation.screenshot);
    assert_eq!(
        picture.rgb(123, 234),
        [255, 0, 0],
        "the square is drawn at the click"
    );
    assert_ne!(picture.rgb(300, 400), [255, 0, 0]);
    harness.stop().await;
}

#[tokio::test]
async fn type_then_enter_submits_the_form() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("form.html").await;
    client.step(BrowserAction::click(250, 115)).await.unwrap();
    let typed = client
        .step(BrowserAction::type_text("héllo wörld"))
        .await
        .unwrap();
    assert!(
        title(&typed).contains("q=[héllo wörld]"),
        "{}",
        title(&typed)
    );
    let submitted = client.step(BrowserAction::key(Key::Enter)).await.unwrap();
    assert!(
        submitted.observation.url.contains("result.html?q="),
        "{}",
        submitted.observation.url
    );
    assert_eq!(title(&submitted), "result: héllo wörld");
    harness.stop().await;
}

#[tokio::test]
async fn ctrl_a_then_backspace_clears_a_field() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("form.html").await;
    client.step(BrowserAction::click(250, 215)).await.unwrap();
    client.step(BrowserAction::key(Key::CtrlA)).await.unwrap();
    let cleared = client
        .step(BrowserAction::key(Key::Backspace))
        .await
        .unwrap();
    assert!(
        title(&cleared).contains("prefilled=[]"),
        "{}",
        title(&cleared)
    );
    harness.stop().await;
}

/// Each navigation key does what it does for a person (`assets/pages/keys.html` reports the text
/// area's caret, its value, the focused field and its modal dialog in the title): a key that did
/// not arrive leaves the title as it was.
#[tokio::test]
async fn tab_escape_and_arrows_are_delivered() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("keys.html").await;
    // Below the text area's three lines ("abc", "def", "ghi"): the caret goes to the end, 11.
    let clicked = client.step(BrowserAction::click(330, 200)).await.unwrap();
    let expect = |result: &browserenv::StepResult, wanted: &str, what: &str| {
        let shown = title(result);
        assert_eq!(result.observation.error, "", "{what}: {shown}");
        assert!(shown.contains(wanted), "{what}: wanted {wanted} in {shown}");
    };
    expect(&clicked, "caret=11 ", "the click");
    let steps: [(Option<Key>, &str, &str); 7] = [
        // UP: from the end of "ghi" to the end of "def".
        (Some(Key::Up), "caret=7 ", "UP"),
        // LEFT: one back, so typing lands before the last character of the line.
        (Some(Key::Left), "caret=6 ", "LEFT"),
        (None, "value=[abc|deXf|ghi]", "typing X after LEFT"),
        // RIGHT: past the "f", to the end of the line.
        (Some(Key::Right), "caret=8 ", "RIGHT"),
        // DOWN: to the shorter last line, at its end.
        (Some(Key::Down), "caret=12 ", "DOWN"),
        // TAB: focus moves to the next field.
        (Some(Key::Tab), "focus=next ", "TAB"),
        // ESCAPE: the modal dialog closes.
        (Some(Key::Escape), "dialog=closed ", "ESCAPE"),
    ];
    for (key, wanted, what) in steps {
        let action = match key {
            Some(key) => BrowserAction::key(key),
            None => BrowserAction::type_text("X"),
        };
        expect(&client.step(action).await.unwrap(), wanted, what);
    }
    harness.stop().await;
}

#[tokio::test]
async fn wheel_scrolls_the_inner_box_under_the_pointer() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("scrollbox.html").await;
    // No click yet: the wheel turns at the viewport centre, which is inside the box.
    let scrolled = client.step(BrowserAction::scroll(500)).await.unwrap();
    assert_eq!(title(&scrolled), "box scrollTop=500");
    let up = client.step(BrowserAction::scroll(-200)).await.unwrap();
    assert_eq!(title(&up), "box scrollTop=300");
    harness.stop().await;
}

#[tokio::test]
async fn scroll_moves_a_long_page() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, first) = harness.open("long.html").await;
    let scrolled = client.step(BrowserAction::scroll(1200)).await.unwrap();
    assert_eq!(title(&scrolled), "scrollY=1200");
    assert_ne!(
        first.observation.screenshot,
        scrolled.observation.screenshot
    );
    harness.stop().await;
}

#[tokio::test]
async fn back_returns_after_a_navigation() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("nav1.html").await;
    let there = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(there.observation.url, harness.page("nav2.html"));
    assert_eq!(title(&there), "Nav 2");
    let back = client.step(BrowserAction::back()).await.unwrap();
    assert_eq!(back.observation.url, harness.page("nav1.html"));
    // Nothing further back: the step still succeeds and stays put.
    let again = client.step(BrowserAction::back()).await.unwrap();
    assert_eq!(again.observation.error, "");
    harness.stop().await;
}

#[tokio::test]
async fn target_blank_link_and_window_open_are_followed() {
    let harness = Harness::start(test_settings()).await;
    for page in ["blank.html", "newwindow.html"] {
        let (mut client, _) = harness.open(page).await;
        let result = client.step(BrowserAction::click(200, 50)).await.unwrap();
        assert_eq!(
            result.observation.url,
            harness.page("newtab.html"),
            "{page}"
        );
        assert_eq!(title(&result), "New tab");
        assert_eq!(result.observation.metadata["tab_switches"], 1);
        // The new tab is the page now: actions reach it.
        let scrolled = client.step(BrowserAction::scroll(100)).await.unwrap();
        assert_eq!(scrolled.observation.url, harness.page("newtab.html"));
        client.close().await.unwrap();
    }
    harness.stop().await;
}

#[tokio::test]
async fn dialogs_are_answered_and_reported() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("alert.html").await;
    let alert = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(title(&alert), "after alert");
    assert_eq!(alert.observation.metadata["dialogs"][0]["type"], "alert");
    assert_eq!(
        alert.observation.metadata["dialogs"][0]["message"],
        "hello from alert"
    );
    let confirm = client.step(BrowserAction::click(200, 200)).await.unwrap();
    assert_eq!(title(&confirm), "confirm=true");
    let prompt = client.step(BrowserAction::click(200, 350)).await.unwrap();
    assert!(title(&prompt).starts_with("prompt="), "{}", title(&prompt));
    assert_eq!(prompt.observation.metadata["dialogs"][0]["type"], "prompt");
    assert!(!prompt.done);
    harness.stop().await;
}

#[tokio::test]
async fn downloads_are_denied() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("download.html").await;
    let result = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(result.observation.error, "download_blocked");
    assert_eq!(result.observation.url, harness.page("download.html"));
    let denied = result.observation.metadata["downloads_denied"][0]
        .as_str()
        .unwrap();
    assert!(denied.ends_with("download.bin"), "{denied}");
    assert!(!result.done);
    let (mut framed, _) = harness.open("downloadframe.html").await;
    let result = framed.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(result.observation.error, "download_blocked");
    harness.stop().await;
}

#[tokio::test]
async fn javascript_links_are_blocked() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("jslink.html").await;
    let result = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(result.observation.error, "navigation_blocked");
    assert_eq!(title(&result), "JS link", "the script did not run");
    assert!(result.observation.metadata["navigations_blocked"][0]
        .as_str()
        .unwrap()
        .starts_with("javascript:"));
    harness.stop().await;
}

#[tokio::test]
async fn step_limit_ends_the_episode_then_steps_are_refused() {
    let harness = Harness::start(EnvSettings {
        max_steps: 2,
        ..test_settings()
    })
    .await;
    let (mut client, _) = harness.open("long.html").await;
    assert!(!client.step(BrowserAction::scroll(100)).await.unwrap().done);
    assert!(client.step(BrowserAction::scroll(100)).await.unwrap().done);
    match client.step(BrowserAction::scroll(100)).await {
        Err(ClientError::Server(frame)) => {
            assert_eq!(frame.code, ErrorCode::ExecutionError);
            assert_eq!(frame.message, "reset before stepping");
        }
        other => panic!("expected an execution error, got {other:?}"),
    }
    // The session is still usable.
    assert_eq!(client.state().await.unwrap().step_count, 2);
    harness.stop().await;
}

#[tokio::test]
async fn wait_and_finish() {
    let settings = test_settings();
    let harness = Harness::start(settings.clone()).await;
    let (mut client, _) = harness.open("long.html").await;
    let waited = client.step(BrowserAction::wait()).await.unwrap();
    // `wait` is the explicit wait, all of it.
    let action_ms = waited.observation.metadata["timings_ms"]["action"]
        .as_f64()
        .unwrap();
    assert!(
        action_ms >= settings.explicit_wait.as_secs_f64() * 1000.0,
        "{action_ms} ms"
    );
    let finished = client.step(BrowserAction::finish("42")).await.unwrap();
    assert!(finished.done);
    assert_eq!(client.state().await.unwrap().step_count, 2);
    harness.stop().await;
}

#[tokio::test]
async fn bot_verification_page_ends_the_episode() {
    let harness = Harness::start(test_settings()).await;
    let (_client, first) = harness.open("cloudflare.html").await;
    assert!(first.done);
    assert_eq!(first.observation.error, "blocked_by_bot_verification");
    harness.stop().await;
}

#[tokio::test]
async fn navigation_failure_and_page_load_timeout_are_not_fatal() {
    let harness = Harness::start(test_settings()).await;
    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let mut client = harness.client().await;
    let failed = client.reset(ResetOptions::new(&closed_url)).await.unwrap();
    assert_eq!(failed.observation.error, "navigation_failed");
    assert!(failed.observation.metadata["error_detail"]
        .as_str()
        .unwrap()
        .contains("ERR_CONNECTION_REFUSED"));
    assert!(!failed.done);

    // A server that accepts and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}/", silent.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let slow = client.reset(ResetOptions::new(&silent_url)).await.unwrap();
    assert_eq!(slow.observation.error, "page_load_timeout");
    assert!(!slow.done);
    // The episode goes on.
    let next = client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await
        .unwrap();
    assert_eq!(next.observation.error, "");
    hold.abort();
    harness.stop().await;
}

#[tokio::test]
async fn a_busy_page_gives_action_timeout_and_goes_on() {
    let harness = Harness::start(EnvSettings {
        action_timeout: Duration::from_secs(1),
        screenshot_timeout: Duration::from_secs(10),
        ..test_settings()
    })
    .await;
    let (mut client, _) = harness.open("slow.html").await;
    let result = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(result.observation.error, "action_timeout");
    assert!(!result.done);
    let picture = Picture::from_base64(&result.observation.screenshot);
    assert_eq!(
        picture.rgb(600, 500),
        [0, 128, 0],
        "the late paint is visible"
    );
    harness.stop().await;
}

#[tokio::test]
async fn a_hung_page_ends_with_renderer_timeout_and_the_server_keeps_serving() {
    let harness = Harness::start(EnvSettings {
        action_timeout: Duration::from_secs(1),
        screenshot_timeout: Duration::from_secs(1),
        ..test_settings()
    })
    .await;
    let (mut client, _) = harness.open("hang.html").await;
    let result = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(result.observation.error, "renderer_timeout");
    assert!(result.done);
    assert_eq!(result.observation.screenshot, "");
    // Same session: a reset gets a fresh browser.
    let fresh = client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await
        .unwrap();
    assert_eq!(fresh.observation.error, "");
    // Another session at the same time works too.
    let (mut other, _) = harness.open("canvas.html").await;
    let clicked = other.step(BrowserAction::click(5, 5)).await.unwrap();
    assert_eq!(title(&clicked), "clicked 5,5");
    harness.stop().await;
}

#[tokio::test]
async fn reset_rejects_unsafe_urls_and_keeps_the_episode() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("long.html").await;
    for bad in [
        "file:///etc/passwd",
        "chrome://version",
        "https://u:p@example.com/",
        "data:text/html,x",
        // No host written: the URL parser would make `basic.html` the host; the reference refuses.
        "http:///basic.html",
        "http:/basic.html",
    ] {
        match client.reset(ResetOptions::new(bad)).await {
            Err(ClientError::Server(frame)) => {
                assert_eq!(frame.code, ErrorCode::ExecutionError);
                assert_eq!(frame.message, "expected an HTTP(S) URL without credentials");
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
    let still = client.step(BrowserAction::scroll(10)).await.unwrap();
    assert_eq!(still.observation.url, harness.page("long.html"));
    harness.stop().await;
}

#[tokio::test]
async fn capacity_is_enforced_per_session() {
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        max_sessions: 1,
        warm_spare: false,
        ..ServerConfig::default()
    })
    .await;
    let (first, _) = harness.open("long.html").await;
    let mut second = harness.client().await;
    match second.state().await {
        Err(ClientError::Server(frame)) => {
            assert_eq!(frame.code, ErrorCode::CapacityReached);
            assert_eq!(frame.extra["max_sessions"], 1);
        }
        other => panic!("expected CAPACITY_REACHED, got {other:?}"),
    }
    first.close().await.unwrap();
    // The slot is free again.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (mut third, _) = harness.open("long.html").await;
    assert_eq!(third.state().await.unwrap().step_count, 0);
    harness.stop().await;
}

#[tokio::test]
async fn a_tab_that_closes_itself_hands_back_to_the_previous_tab() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("newwindow.html").await;
    let opened = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(opened.observation.url, harness.page("newtab.html"));
    let closed = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(closed.observation.error, "");
    // The tab being closed never answers the settle probe; the step settles the tab it returns
    // to instead of running into the bound.
    assert_eq!(closed.observation.metadata["settle"], "quiet");
    assert_eq!(closed.observation.url, harness.page("newwindow.html"));
    assert_eq!(closed.observation.metadata["tab_switches"], 1);
    // And it is usable: the button opens the tab again.
    let again = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(again.observation.url, harness.page("newtab.html"));
    harness.stop().await;
}

#[tokio::test]
async fn a_tab_that_closes_on_mousedown_does_not_fail_the_rest_of_the_click() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("openpressclose.html").await;
    // The release goes to a tab that is already gone; which of the two events Chromium or
    // chromiumoxide reports first varies, so try it several times.
    for round in 0..4 {
        let opened = client.step(BrowserAction::click(200, 50)).await.unwrap();
        assert_eq!(opened.observation.url, harness.page("pressclose.html"));
        let closed = client.step(BrowserAction::click(200, 50)).await.unwrap();
        assert_eq!(closed.observation.error, "", "round {round}");
        assert!(!closed.done, "round {round}");
        assert_eq!(closed.observation.url, harness.page("openpressclose.html"));
    }
    harness.stop().await;
}

#[tokio::test]
async fn beforeunload_is_accepted_and_the_navigation_goes_on() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("beforeunload.html").await;
    let left = client.step(BrowserAction::click(200, 50)).await.unwrap();
    assert_eq!(left.observation.url, harness.page("nav2.html"));
    assert_eq!(
        left.observation.metadata["dialogs"][0]["type"],
        "beforeunload"
    );
    harness.stop().await;
}

#[tokio::test]
async fn links_to_local_and_internal_schemes_are_blocked() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("schemes.html").await;
    for (y, scheme) in [
        (40, "file:"),
        (140, "data:"),
        (240, "chrome:"),
        (340, "javascript:"),
    ] {
        let result = client.step(BrowserAction::click(200, y)).await.unwrap();
        assert_eq!(result.observation.error, "navigation_blocked", "{scheme}");
        assert_eq!(
            result.observation.url,
            harness.page("schemes.html"),
            "{scheme}"
        );
        assert_eq!(title(&result), "Schemes", "{scheme}");
        let blocked = result.observation.metadata["navigations_blocked"][0]
            .as_str()
            .unwrap();
        assert!(blocked.starts_with(scheme), "{blocked}");
    }
    harness.stop().await;
}

/// The longest `type` the contract allows (2,000 characters) types every one of them as key
/// events within the type's own limit (the action timeout and 10 ms a character, 23 s here) and
/// the step within the server's bound for it (`step_bound`). Key events are pipelined
/// (`send_keys`): about 1 ms a character alone (a debug build), against 2 before.
#[tokio::test]
async fn the_longest_type_action_types_every_character() {
    let settings = test_settings();
    let harness = Harness::start(settings.clone()).await;
    let (mut client, _) = harness.open("form.html").await;
    client.step(BrowserAction::click(250, 115)).await.unwrap();
    let text: String = "abcdefghij".repeat(200);
    let action = BrowserAction::type_text(text.clone());
    let bound = browserenv_server::environment::step_bound(&settings, &action);
    let started = std::time::Instant::now();
    let typed = client.step(action).await.unwrap();
    let took = started.elapsed();
    assert_eq!(
        typed.observation.error, "",
        "{:?}",
        typed.observation.metadata
    );
    // The bound is what the server enforces; a little is left for the frame's way here.
    assert!(
        took <= bound + Duration::from_millis(500),
        "the step took {took:?}, over its bound of {bound:?}"
    );
    let shown = title(&typed);
    assert!(
        shown.contains(&format!("q=[{text}]")),
        "{} chars in {shown:.80}",
        shown.len()
    );
    harness.stop().await;
}
