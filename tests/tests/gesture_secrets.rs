//! The new gestures (issue 41) against the secret rule (issue 43), on real Chromium: what a
//! person chose or put into a field they keep secret must not come back through a gesture the
//! agent makes afterwards (a dropdown drawn open, a copy, a drag). Each test says, in its comment,
//! what leaked before.

use browserenv::BrowserAction;
use browserenv_tests::outlets::{episode, Seen};
use browserenv_tests::watch::{reply, send, session_id, until, watch};
use browserenv_tests::Picture;
use serde_json::json;

/// Pixels of `[x, y, width, height]` that are neither the page's white nor the cover's black: a
/// drawn row of text or a highlight.
fn drawn(picture: &Picture, [x, y, width, height]: [u32; 4]) -> usize {
    (y..y + height)
        .flat_map(|row| (x..x + width).map(move |column| (column, row)))
        .filter(|&(column, row)| {
            let rgb = picture.rgb(column, row);
            rgb != [0, 0, 0] && rgb != [255, 255, 255]
        })
        .count()
}

/// The area under shop.html's "sort by" select where its dropdown is drawn (the page is white
/// there: the products start lower).
const UNDER_SORT: [u32; 4] = [92, 84, 170, 50];

/// A person chooses "Most reviews" in the sort-by select, marked secret, then opens it (a click):
/// the drawn dropdown showed every option with the chosen one highlighted, in the agent's, the
/// watchers' and the recording's pictures, so the agent read the secret choice off the picture.
#[tokio::test]
async fn the_drawn_dropdown_of_a_secret_select_is_covered() {
    let steps = [
        (
            json!({"op": "select", "x": 180, "y": 68, "text": "Most reviews"}),
            true,
        ),
        (json!({"op": "click", "x": 180, "y": 68}), false),
    ];
    let seen: Seen = episode("secret-dropdown", "shop.html", &steps).await;
    // The archive holds the page as served, every option's label in it: the choice is the secret.
    let holding = seen.holding("Most reviews");
    assert_eq!(holding, ["archive"], "only the page's own HTML names it");
    let own = &seen.own.last().unwrap()["data"]["observation"]["screenshot"];
    let own = Picture::from_base64(own.as_str().unwrap());
    assert!(
        drawn(&own, UNDER_SORT) > 0,
        "the person sees the dropdown open"
    );
    assert_eq!(
        drawn(&seen.agent_picture(), UNDER_SORT),
        0,
        "the agent's picture"
    );
    let watched = seen.watcher_frames.last().expect("the watcher's pictures");
    assert_eq!(drawn(watched, UNDER_SORT), 0, "the watcher's picture");
    let recorded = seen.recorded_frames.last().expect("the recording's frames");
    assert_eq!(drawn(recorded, UNDER_SORT), 0, "the recording's picture");
}

/// A person types a password into a field, then the agent copies it out (CTRL+A, CTRL+C),
/// pastes it into a plain field, cuts its first character off (HOME, DELETE) and sends the form:
/// the rest of the password is no spelling or start of it, so it reached the agent's URL as it
/// is. For the password field switched to "show" (type text: the browser copies out of it) and
/// for a PIN drawn as discs by CSS.
async fn copied_out_and_cut_short(field: (i64, i64)) -> String {
    let press = |chord: &str| BrowserAction::press_named(chord).unwrap();
    let copy_paste = vec![
        press("CTRL+C"),
        BrowserAction::click(250, 318),
        press("CTRL+V"),
    ];
    moved_out_and_cut_short(field, copy_paste).await
}

/// The same, the secret moved by `moving` (after a click in the field and CTRL+A).
async fn moved_out_and_cut_short(field: (i64, i64), moving: Vec<BrowserAction>) -> String {
    let press = |chord: &str| BrowserAction::press_named(chord).unwrap();
    let actions = [
        vec![BrowserAction::click(field.0, field.1), press("CTRL+A")],
        moving,
        vec![
            BrowserAction::click(390, 318),
            press("HOME"),
            press("DELETE"),
            press("ENTER"),
        ],
    ];
    person_then_agent(field, actions.into_iter().flatten().collect()).await
}

/// A person types a password into the field at `field` of copypw.html (and clicks "show"),
/// hands back; the agent takes `actions`. The agent's last URL.
async fn person_then_agent(field: (i64, i64), actions: Vec<BrowserAction>) -> String {
    agent_after_person(field, actions).await.observation.url
}

/// The same, the agent's last observation.
async fn agent_after_person(
    field: (i64, i64),
    actions: Vec<BrowserAction>,
) -> browserenv::StepResult {
    let harness = browserenv_tests::Harness::start(browserenv_tests::test_settings()).await;
    let mut agent = harness.client().await;
    agent
        .reset(browserenv::ResetOptions::new(harness.page("copypw.html")))
        .await
        .unwrap();
    let id = session_id(&harness).await;
    let mut person = watch(&harness, &id, None).await.unwrap();
    send(
        &mut person,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    until(&mut person, reply).await;
    let steps = [
        json!({"op": "click", "x": field.0, "y": field.1}),
        json!({"op": "type", "text": "Hunter2pass"}),
        json!({"op": "click", "x": 460, "y": 118}),
    ];
    for action in steps {
        send(&mut person, json!({"type": "step", "data": action})).await;
        assert_eq!(until(&mut person, reply).await["type"], "observation");
    }
    send(&mut person, json!({"type": "release"})).await;
    until(&mut person, |f| f["type"] == "control").await;
    let mut last = None;
    for action in actions {
        last = Some(agent.step(action).await.unwrap());
    }
    agent.close().await.unwrap();
    harness.stop().await;
    last.unwrap()
}

#[tokio::test]
async fn a_password_shown_cannot_be_copied_out_by_the_agent() {
    let url = copied_out_and_cut_short((250, 118)).await;
    assert!(url.contains("note="), "the form was sent: {url}");
    assert!(!url.contains("unter2pass"), "{url}");
}

#[tokio::test]
async fn a_pin_drawn_as_discs_cannot_be_copied_out_by_the_agent() {
    let url = copied_out_and_cut_short((250, 218)).await;
    assert!(url.contains("note="), "the form was sent: {url}");
    assert!(!url.contains("unter2pass"), "{url}");
}

/// The selected text of a secret field dragged into the plain field (HTML5 drag-and-drop of
/// text, as a person drags a selection).
async fn dragged_out_and_cut_short(field: (i64, i64)) -> String {
    let drag = BrowserAction::drag([(150, field.1), (150, field.1 + 60), (150, 318)]);
    moved_out_and_cut_short(field, vec![drag]).await
}

#[tokio::test]
async fn a_password_shown_or_a_pin_cannot_be_dragged_out_by_the_agent() {
    for field in [(250, 118), (250, 218)] {
        let url = dragged_out_and_cut_short(field).await;
        assert!(url.contains("note="), "the form was sent: {url}");
        assert!(!url.contains("unter2pass"), "{url}");
    }
}

/// Part of the secret selected (END, SHIFT+HOME, SHIFT+RIGHT: all but its first character, a
/// text no rule knows) and dragged in steps: a button held, a move, the release over the plain
/// field, each its own step. The drag out of the secret field is cancelled whenever DevTools
/// reports it (on the move, or later: `gestures.rs`, `late_drag`); else the part would be dropped
/// into the note and sent.
#[tokio::test]
async fn part_of_a_secret_cannot_be_dragged_out_in_steps() {
    use browserenv::models::MouseButton;
    let press = |chord: &str| BrowserAction::press_named(chord).unwrap();
    for field in [(250, 118), (250, 218)] {
        let actions = vec![
            BrowserAction::click(field.0, field.1),
            press("END"),
            press("SHIFT+HOME"),
            press("SHIFT+RIGHT"),
            BrowserAction::mouse_down(150, field.1, MouseButton::Left),
            BrowserAction::move_to(150, field.1 + 60),
            BrowserAction::mouse_up(150, 318, MouseButton::Left),
            press("ENTER"),
        ];
        let url = person_then_agent(field, actions).await;
        assert!(url.contains("note="), "the form was sent: {url}");
        assert!(!url.contains("unter2pass"), "{url}");
    }
}

/// The PIN echoed by the page (covered in pictures, hidden in text): the agent selects the whole
/// page (CTRL+A, CTRL+C), pastes it into the plain field and takes the secret's first character
/// out from the end (END, LEFT 10 times: `human_steps` says it has 11 characters, BACKSPACE).
#[tokio::test]
async fn a_secret_the_page_echoes_cannot_be_copied_out_by_the_agent() {
    let press = |chord: &str| BrowserAction::press_named(chord).unwrap();
    let moving = vec![
        BrowserAction::click(600, 560),
        press("CTRL+A"),
        press("CTRL+C"),
        BrowserAction::click(250, 318),
        press("CTRL+V"),
        press("END"),
        BrowserAction::press_repeat(browserenv::models::Chord::parse("LEFT").unwrap(), 10),
        press("BACKSPACE"),
        press("ENTER"),
    ];
    let url = person_then_agent((250, 218), moving).await;
    assert!(url.contains("note=Send+Show"), "the page was pasted: {url}");
    assert!(!url.contains("unter2pass"), "{url}");
}

/// The echo selected (a double click) and dragged into the plain field (HTML5 drag-and-drop of
/// the selection's text), its first character taken out as above.
#[tokio::test]
async fn a_secret_the_page_echoes_cannot_be_dragged_out_by_the_agent() {
    let press = |chord: &str| BrowserAction::press_named(chord).unwrap();
    let moving = vec![
        BrowserAction::double_click(120, 509),
        BrowserAction::drag([(120, 509), (120, 450), (250, 318)]),
        BrowserAction::click(390, 318),
        press("END"),
        BrowserAction::press_repeat(browserenv::models::Chord::parse("LEFT").unwrap(), 10),
        press("BACKSPACE"),
        press("ENTER"),
    ];
    let url = person_then_agent((250, 218), moving).await;
    assert!(!url.ends_with("note="), "the echo was dropped: {url}");
    assert!(!url.contains("unter2pass"), "{url}");
}

/// A `select` where no select is names the element under the pointer in its error, its text or
/// value: over a PIN drawn as discs, its value was the person's secret.
#[tokio::test]
async fn a_select_over_a_secret_field_does_not_name_its_value() {
    let over = BrowserAction::select(250, 218, "x");
    let result = agent_after_person((250, 218), vec![over]).await;
    let shown = format!(
        "{} {:?}",
        result.observation.error, result.observation.metadata
    );
    assert!(shown.contains("no <select>"), "{shown}");
    assert!(!shown.contains("unter2"), "{shown}");
}

/// `goto` to the server's own routes (`/sessions` lists every session; its text layer another
/// session's page), however loopback is spelled, with credentials, or to a scheme other than
/// HTTP(S): refused before the browser goes anywhere, the agent's and a person's alike, the
/// session going on where it was.
#[tokio::test]
async fn goto_never_reaches_the_server_s_own_routes_or_a_refused_url() {
    let harness = browserenv_tests::Harness::start(browserenv_tests::test_settings()).await;
    let page = harness.page("copypw.html");
    let mut agent = harness.client().await;
    agent
        .reset(browserenv::ResetOptions::new(page.clone()))
        .await
        .unwrap();
    let port = url::Url::parse(&harness.server.base_url())
        .unwrap()
        .port()
        .unwrap();
    let refused = [
        format!("http://127.0.0.1:{port}/sessions"),
        format!("http://localhost:{port}/sessions"),
        format!("http://127.1:{port}/sessions"),
        format!("http://2130706433:{port}/sessions"),
        format!("http://[::1]:{port}/sessions"),
        format!("http://[::ffff:127.0.0.1]:{port}/sessions"),
        format!("http://0.0.0.0:{port}/sessions"),
        format!("http://app.localhost.:{port}/sessions"),
        "http://ana:Hunter2pass@127.0.0.1:9/".to_string(),
        "javascript:alert(document.cookie)".to_string(),
        "file:///etc/passwd".to_string(),
        "chrome://settings".to_string(),
        "data:text/html,<b>x</b>".to_string(),
        "view-source:http://127.0.0.1:9/".to_string(),
    ];
    for url in &refused {
        let error = agent
            .step(BrowserAction::goto(url.clone()))
            .await
            .expect_err(url);
        assert!(error.to_string().contains("url"), "{url}: {error}");
    }
    let id = session_id(&harness).await;
    let mut person = watch(&harness, &id, None).await.unwrap();
    send(
        &mut person,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    until(&mut person, reply).await;
    send(
        &mut person,
        json!({"type": "step", "data": {"op": "goto", "url": refused[0]}}),
    )
    .await;
    let answer = until(&mut person, reply).await;
    assert_eq!(answer["type"], "error", "{answer}");
    send(&mut person, json!({"type": "release"})).await;
    until(&mut person, |f| f["type"] == "control").await;
    let after = agent.step(BrowserAction::wait()).await.unwrap();
    assert_eq!(after.observation.url, page);
    agent.close().await.unwrap();
    harness.stop().await;
}

/// A security question a person chooses in a select, marked secret, then sent with the form: the
/// option's value (`firstpet`, not its label) is what the form sends, and what the agent's URL,
/// the watchers, the text layer, the recording and the archive would show of the choice.
#[tokio::test]
async fn a_marked_select_s_value_is_hidden_as_its_label() {
    let steps = [
        (
            json!({"op": "select", "x": 575, "y": 318, "text": "Name of your first pet"}),
            true,
        ),
        (json!({"op": "click", "x": 140, "y": 418}), false),
    ];
    let seen = episode("secret-question", "copypw.html", &steps).await;
    let url = &seen.last.as_ref().unwrap().observation.url;
    assert!(url.contains("question="), "the form was sent: {url}");
    assert_eq!(seen.leaks(&["question=firstpet"]), Vec::<String>::new());
    assert_eq!(
        seen.holding("Name of your first pet"),
        ["archive"],
        "the page as served"
    );
}

/// The element under the pointer is recorded for every pointer op (`metadata.element`, each
/// step of `steps.jsonl`): over the PIN, the password shown and the page's echo of the PIN, after
/// a person typed them, no outlet shows what they hold.
#[tokio::test]
async fn the_element_under_the_pointer_names_no_secret() {
    let steps = [
        (json!({"op": "click", "x": 250, "y": 218}), false),
        (json!({"op": "type", "text": "Hunter2pass"}), false),
        (json!({"op": "click", "x": 250, "y": 118}), false),
        (json!({"op": "type", "text": "Kx9q2wzz"}), false),
        (json!({"op": "click", "x": 460, "y": 118}), false),
        (json!({"op": "move", "x": 120, "y": 509}), false),
        (
            json!({"op": "click", "x": 250, "y": 118, "count": 2}),
            false,
        ),
        (json!({"op": "mouse_down", "x": 250, "y": 218}), false),
        (json!({"op": "mouse_up", "x": 120, "y": 509}), false),
        (
            json!({"op": "drag", "path": [[120, 509], [250, 218], [250, 118]]}),
            false,
        ),
        (
            json!({"op": "click", "x": 120, "y": 509, "button": "right"}),
            false,
        ),
    ];
    let seen = episode("secret-element", "copypw.html", &steps).await;
    let elements = seen
        .own
        .iter()
        .filter(|o| !o["data"]["observation"]["metadata"]["element"].is_null());
    assert!(elements.count() >= 8, "the pointer ops' elements were read");
    let forms = [
        "Hunter2pass",
        "unter2pass",
        "Hunter2",
        "Kx9q2wzz",
        "x9q2wzz",
    ];
    assert_eq!(seen.leaks(&forms), Vec::<String>::new());
}

/// Linux's primary selection: a middle click pastes what was selected last, without a copy.
/// The PIN selected (CTRL+A in it), then a middle click in the plain field, its first character
/// taken out.
#[tokio::test]
async fn a_middle_click_does_not_paste_a_selected_secret() {
    let middle = BrowserAction::click_with(
        250,
        318,
        browserenv::models::MouseButton::Middle,
        1,
        browserenv::models::Modifiers::default(),
    );
    for field in [(250, 118), (250, 218)] {
        let url = moved_out_and_cut_short(field, vec![middle.clone()]).await;
        assert!(url.contains("note="), "the form was sent: {url}");
        assert!(!url.contains("unter2pass"), "{url}");
    }
}

/// The choice of a marked select, hidden where it shows (`<redacted:22 characters>`), showed by
/// elimination: a `select`'s error ("its options: ...", in the recording) listed the other
/// options as they are and the chosen one hidden. No option of a secret select is told from the
/// others.
#[tokio::test]
async fn a_marked_select_s_choice_is_not_singled_out_among_its_options() {
    let steps = [
        (
            json!({"op": "select", "x": 575, "y": 318, "text": "Name of your first pet"}),
            true,
        ),
        (
            json!({"op": "select", "x": 575, "y": 318, "text": "no such question"}),
            false,
        ),
    ];
    let seen = episode("secret-options", "copypw.html", &steps).await;
    // After the choice: the agent's next observation (the page's text, `human_steps`) and the
    // recording (the page's text after each step) (the page as served, in the
    // archive, and the reset's observation name every option, before anything was secret).
    let last = seen.last.as_ref().unwrap();
    let after = format!("{} {:?}", last.observation.url, last.observation.metadata);
    assert!(after.contains("<redacted:22 characters>"), "{after}");
    for option in [
        "Choose a question",
        "Name of your first pet",
        "Street you grew up on",
    ] {
        assert!(!after.contains(option), "{option} in {after}");
        assert!(!seen.recording.contains(option), "{option} recorded");
    }
}
