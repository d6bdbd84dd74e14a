//! The clipboard is the episode's: what a page copies (a person's CTRL+C, its own "Copy" button)
//! is pasted in the same episode and nowhere else, neither in the next episode nor in another
//! session, on a browser of the session's own or one shared by all sessions (real Chromium, the
//! Rust client over WebSockets).

use browserenv::models::Chord;
use browserenv::{BrowserAction, Client, Key, ResetOptions, StepResult};
use browserenv_server::chromium::{ChromiumConfig, Isolation};
use browserenv_server::ServerConfig;
use browserenv_tests::{test_chromium, test_settings, title, Harness};
use serde_json::Value;

fn page(result: &StepResult) -> Value {
    serde_json::from_str(&title(result)).expect("the page's title is JSON")
}

async fn step(client: &mut Client, action: BrowserAction) -> StepResult {
    let result = client.step(action).await.expect("answered");
    assert_eq!(
        result.observation.error, "",
        "{:?}",
        result.observation.metadata
    );
    result
}

fn press(name: &str) -> BrowserAction {
    BrowserAction::press(Chord::parse(name).unwrap())
}

/// Copy the "from" field's text (`editor.html`).
async fn copy_from_field(client: &mut Client) {
    step(client, BrowserAction::click(100, 94)).await;
    step(client, BrowserAction::key(Key::CtrlA)).await;
    step(client, press("CTRL+C")).await;
}

/// Paste into the empty "to" field; what the page then holds there, and its paste events.
async fn paste_into_to(client: &mut Client) -> Value {
    step(client, BrowserAction::click(340, 94)).await;
    let pasted = step(client, press("CTRL+V")).await;
    page(&pasted)
}

async fn harness(isolation: Isolation) -> Harness {
    let chromium = ChromiumConfig {
        isolation,
        ..test_chromium()
    };
    let config = ServerConfig {
        settings: test_settings(),
        ..ServerConfig::default()
    };
    Harness::start_with_browser(chromium, config).await
}

#[tokio::test]
async fn a_copy_never_reaches_another_session_on_a_shared_browser() {
    let harness = harness(Isolation::Context).await;
    let (mut a, _) = harness.open("editor.html").await;
    let (mut b, _) = harness.open("editor.html").await;
    copy_from_field(&mut a).await;
    let in_b = paste_into_to(&mut b).await;
    assert_eq!(in_b["to"], "", "B pasted nothing of A's: {in_b}");
    assert_eq!(
        in_b["pasted"],
        serde_json::json!([":true"]),
        "a paste, empty"
    );
    let in_a = paste_into_to(&mut a).await;
    assert_eq!(in_a["to"], "copy me please", "A pastes its own");
    // B's own copy, a page's "Copy code" button: B's, and still not A's.
    step(&mut b, BrowserAction::click(80, 215)).await;
    let in_b = step(&mut b, press("CTRL+V")).await;
    assert_eq!(page(&in_b)["to"], "CODE-1234");
    let in_a = step(&mut a, press("CTRL+V")).await;
    assert_eq!(page(&in_a)["to"], "copy me pleasecopy me please");
    a.close().await.unwrap();
    b.close().await.unwrap();
    harness.stop().await;
}

#[tokio::test]
async fn the_next_episode_starts_with_an_empty_clipboard() {
    for isolation in [Isolation::Process, Isolation::Context] {
        let harness = harness(isolation).await;
        let (mut client, _) = harness.open("editor.html").await;
        copy_from_field(&mut client).await;
        assert_eq!(paste_into_to(&mut client).await["to"], "copy me please");
        client
            .reset(ResetOptions::new(harness.page("editor.html")))
            .await
            .unwrap();
        let next = paste_into_to(&mut client).await;
        assert_eq!(next["to"], "", "{isolation:?}: {next}");
        harness.stop().await;
    }
}

#[tokio::test]
async fn a_copy_outlives_the_page_it_was_made_on() {
    let harness = harness(Isolation::Process).await;
    let (mut client, _) = harness.open("editor.html").await;
    copy_from_field(&mut client).await;
    // Another page of the episode, then back: the copy is still the episode's.
    step(
        &mut client,
        BrowserAction::goto(harness.page("pickers.html")),
    )
    .await;
    step(&mut client, BrowserAction::back()).await;
    assert_eq!(paste_into_to(&mut client).await["to"], "copy me please");
    harness.stop().await;
}

/// A middle click pastes Linux's primary selection, which the whole browser shares: A's text
/// selected (no copy) was pasted by B's middle click. No middle click pastes, in B or in A.
#[tokio::test]
async fn a_middle_click_pastes_no_selection_of_another_session() {
    let harness = harness(Isolation::Context).await;
    let (mut a, _) = harness.open("editor.html").await;
    let (mut b, _) = harness.open("editor.html").await;
    step(&mut a, BrowserAction::click(100, 94)).await;
    step(&mut a, BrowserAction::key(Key::CtrlA)).await;
    let middle = |client_x, client_y| {
        BrowserAction::click_with(
            client_x,
            client_y,
            browserenv::models::MouseButton::Middle,
            1,
            browserenv::models::Modifiers::default(),
        )
    };
    let in_b = page(&step(&mut b, middle(340, 94)).await);
    assert_eq!(in_b["to"], "", "B pasted nothing of A's: {in_b}");
    let in_a = page(&step(&mut a, middle(340, 94)).await);
    assert_eq!(in_a["to"], "", "nor A its own selection: {in_a}");
    a.close().await.unwrap();
    b.close().await.unwrap();
    harness.stop().await;
}
