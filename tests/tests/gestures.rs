//! The gestures a real page needs, on real Chromium over a real WebSocket (the Rust client):
//! dropdowns a person sees and chooses from, sliders, sortable lists, drag-and-drop boards,
//! hover menus, double and right clicks, SHIFT- and CTRL-clicks, text selected by a drag, inner
//! scrolling boxes, key chords, the clipboard, and the corners of the viewport. Each test asserts
//! what the page itself recorded (in its title, as JSON: `assets/pages/*.html`).

use browserenv::models::{Chord, Modifier, Modifiers, MouseButton};
use browserenv::{BrowserAction, Client, StepResult};
use browserenv_tests::{test_settings, title, Harness, Picture};
use serde_json::Value;

/// What the page recorded: its title, read as JSON.
fn page(result: &StepResult) -> Value {
    let shown = title(result);
    serde_json::from_str(&shown).unwrap_or_else(|_| panic!("the page's title is JSON: {shown}"))
}

/// The screenshot, also kept in the temporary folder to look at (`gestures-NAME.png`).
fn shot(result: &StepResult, name: &str) -> Picture {
    use base64::Engine;
    if let Ok(png) =
        base64::engine::general_purpose::STANDARD.decode(&result.observation.screenshot)
    {
        let _ = std::fs::write(
            std::env::temp_dir().join(format!("gestures-{name}.png")),
            png,
        );
    }
    Picture::from_base64(&result.observation.screenshot)
}

async fn step(client: &mut Client, action: BrowserAction) -> StepResult {
    let what = format!("{action:?}");
    let result = client.step(action).await.expect("the step is answered");
    assert_eq!(
        result.observation.error, "",
        "{what}: {:?}",
        result.observation.metadata
    );
    result
}

fn chord(name: &str) -> Chord {
    Chord::parse(name).unwrap()
}

/// How many pixels of a rectangle of the picture differ from those of another picture.
fn changed(a: &Picture, b: &Picture, (x0, y0, x1, y1): (u32, u32, u32, u32)) -> usize {
    let mut n = 0;
    for y in y0..y1 {
        for x in x0..x1 {
            n += usize::from(a.rgb(x, y) != b.rgb(x, y));
        }
    }
    n
}

#[tokio::test]
async fn a_clicked_dropdown_is_drawn_and_a_click_on_an_option_chooses_it() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, first) = harness.open("shop.html").await;
    let before = Picture::from_base64(&first.observation.screenshot);
    // The "sort by" select spans x 90..270, y 56..80; its popup opens below it.
    let opened = step(&mut client, BrowserAction::click(180, 68)).await;
    let shown = shot(&opened, "sort-open");
    let below = changed(&before, &shown, (90, 82, 270, 200));
    assert!(
        below > 2000,
        "the options are drawn below the select ({below} pixels changed)"
    );
    // The highlighted option (the chosen one, Relevance, the first row) is drawn in blue.
    let [r, g, b] = shown.rgb(260, 91);
    assert!(
        b > 150 && r < 80,
        "the first row is highlighted: {:?}",
        [r, g, b]
    );
    assert_eq!(
        page(&opened)["events"],
        serde_json::json!([]),
        "nothing chosen yet"
    );
    // Rows are 20 px tall from y=81: "Price: high to low" is the third.
    let chosen = step(&mut client, BrowserAction::click(150, 81 + 2 * 20 + 10)).await;
    let state = page(&chosen);
    assert_eq!(state["sort"], "price-desc");
    assert_eq!(
        state["events"],
        serde_json::json!(["input:price-desc:true", "change:price-desc:true"]),
        "a person's choice: trusted input and change"
    );
    assert_eq!(state["order"][0], "Cordless drill");
    let closed = Picture::from_base64(&chosen.observation.screenshot);
    assert!(
        changed(&before, &closed, (90, 140, 270, 200)) > 0,
        "the list below was sorted"
    );
    assert_eq!(
        changed(&shown, &closed, (280, 82, 300, 200)),
        0,
        "nothing drawn beside where the popup was"
    );
    harness.stop().await;
}

#[tokio::test]
async fn escape_or_a_click_elsewhere_closes_the_dropdown_and_keys_move_its_highlight() {
    keys_and_clicks_on_the_sort_by(Harness::start(test_settings()).await, "frame").await;
}

/// A redraw (`BROWSER_SCREENSHOTS=redraw`) also paints the headless shell's own popup, with rows
/// of another height than the drawn one's: a picture with the dropdown open is still a frame, the
/// rows where a click lands (the highlight of three DOWNs on the drawn 20-pixel row, the
/// popup's white, not the browser's grey).
#[tokio::test]
async fn a_redrawing_server_pictures_the_drawn_dropdown_not_the_browser_s_own() {
    use browserenv_server::chromium::{ChromiumConfig, Screenshots};
    let chromium = ChromiumConfig {
        screenshots: Screenshots::Redraw,
        ..browserenv_tests::test_chromium()
    };
    let config = browserenv_server::ServerConfig {
        settings: test_settings(),
        ..Default::default()
    };
    let harness = Harness::start_with_browser(chromium, config).await;
    keys_and_clicks_on_the_sort_by(harness, "redraw").await;
}

async fn keys_and_clicks_on_the_sort_by(harness: Harness, mode: &str) {
    let (mut client, first) = harness.open("shop.html").await;
    let before = Picture::from_base64(&first.observation.screenshot);
    step(&mut client, BrowserAction::click(180, 68)).await;
    let closed = step(&mut client, BrowserAction::press(chord("ESCAPE"))).await;
    let picture = Picture::from_base64(&closed.observation.screenshot);
    assert!(
        changed(&before, &picture, (90, 82, 270, 200)) < 50,
        "ESCAPE took it away"
    );
    assert_eq!(page(&closed)["sort"], "relevance");
    step(&mut client, BrowserAction::click(180, 68)).await;
    let elsewhere = step(&mut client, BrowserAction::click(700, 300)).await;
    let picture = Picture::from_base64(&elsewhere.observation.screenshot);
    assert!(
        changed(&before, &picture, (90, 82, 270, 200)) < 50,
        "a click elsewhere took it away"
    );
    // DOWN moves the highlight (skipping the disabled option), ENTER chooses; drawn meanwhile.
    step(&mut client, BrowserAction::click(180, 68)).await;
    let moved = step(&mut client, BrowserAction::press_repeat(chord("DOWN"), 3)).await;
    let highlight = shot(&moved, &format!("sort-down3-{mode}"));
    // Rows: Relevance, low-high, high-low, Newest (disabled), Rating (group), Best rated.
    let [r, _, b] = highlight.rgb(260, 81 + 5 * 20 + 10);
    assert!(
        b > 150 && r < 80,
        "{mode}: Best rated is highlighted after three DOWNs"
    );
    assert_eq!(
        highlight.rgb(200, 81 + 20 + 10),
        [255, 255, 255],
        "{mode}: the drawn popup's white row, not the browser's own grey one"
    );
    let chosen = step(&mut client, BrowserAction::press(chord("ENTER"))).await;
    assert_eq!(page(&chosen)["sort"], "rating");
    assert_eq!(page(&chosen)["order"][0], "Cordless drill");
    harness.stop().await;
}

#[tokio::test]
async fn a_dropdown_near_the_bottom_opens_upward() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, first) = harness.open("shop.html").await;
    let before = Picture::from_base64(&first.observation.screenshot);
    // "Per page" at y 560..584: no room below, so the popup is drawn above it.
    let opened = step(&mut client, BrowserAction::click(150, 572)).await;
    let shown = shot(&opened, "per-open");
    assert!(
        changed(&before, &shown, (90, 470, 210, 558)) > 1000,
        "drawn above"
    );
    // The third option from the top of the popup (4 rows of 20 px, 2 px of border).
    let chosen = step(
        &mut client,
        BrowserAction::click(150, 560 - 82 + 2 * 20 + 10),
    )
    .await;
    assert_eq!(page(&chosen)["per"], "50");
    harness.stop().await;
}

#[tokio::test]
async fn select_chooses_an_option_by_its_label_and_names_the_labels_when_none_matches() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("shop.html").await;
    let chosen = step(
        &mut client,
        BrowserAction::select(180, 68, "Price: low to high"),
    )
    .await;
    let state = page(&chosen);
    assert_eq!(state["sort"], "price-asc");
    assert_eq!(
        state["events"],
        serde_json::json!(["input:price-asc:true", "change:price-asc:true"])
    );
    assert_eq!(state["order"][0], "Tape measure");
    assert_eq!(chosen.observation.metadata["element"]["tag"], "select");
    // Inside an optgroup; by a label written with other case and spaces.
    let grouped = step(
        &mut client,
        BrowserAction::select(180, 68, "  most REVIEWS "),
    )
    .await;
    assert_eq!(page(&grouped)["sort"], "reviews");
    // No such label: an error that names the labels there are, and the session goes on.
    let missing = client
        .step(BrowserAction::select(180, 68, "Cheapest"))
        .await
        .unwrap();
    assert_eq!(missing.observation.error, "action_failed");
    let detail = missing.observation.metadata["error_detail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        detail.starts_with("text: no option labelled \"Cheapest\"")
            && detail.contains("\"Relevance\", \"Price: low to high\""),
        "{detail}"
    );
    let disabled = client
        .step(BrowserAction::select(180, 68, "Newest (soon)"))
        .await
        .unwrap();
    let detail = disabled.observation.metadata["error_detail"]
        .as_str()
        .unwrap_or_default();
    assert!(detail.contains("is disabled"), "{detail}");
    // No select there at all.
    let nowhere = client
        .step(BrowserAction::select(700, 400, "Relevance"))
        .await
        .unwrap();
    let detail = nowhere.observation.metadata["error_detail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        detail.starts_with("text: no <select> at (700, 400)"),
        "{detail}"
    );
    let still = step(&mut client, BrowserAction::select(150, 572, "100")).await;
    assert_eq!(page(&still)["per"], "100");
    assert_eq!(page(&still)["sort"], "reviews");
    harness.stop().await;
}

#[tokio::test]
async fn a_drag_moves_a_pointer_event_slider_and_a_range_input() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("shop.html").await;
    // The slider's thumb sits at x 620 (max $300): dragged left to 420 in five points.
    let path = [(620, 68), (580, 68), (530, 69), (480, 70), (420, 68)];
    let dragged = step(&mut client, BrowserAction::drag(path)).await;
    let state = page(&dragged);
    assert_eq!(state["max"], 100, "{state}");
    assert!(
        state["moves"].as_u64().unwrap_or(0) >= 4,
        "each point is a move: {state}"
    );
    assert_eq!(state["events"][0], "slider-down");
    assert_eq!(state["events"][1], "slider-up:100");
    assert_eq!(
        state["order"],
        serde_json::json!([
            "Claw hammer",
            "Hand saw",
            "Tape measure",
            "Stud finder",
            "Socket set"
        ])
    );
    assert_eq!(dragged.observation.metadata["element"]["tag"], "div");
    // The native range input's thumb (value 50 of 0..100, at x 470) dragged to its right end.
    let ranged = step(
        &mut client,
        BrowserAction::drag([(470, 108), (560, 108), (640, 108)]),
    )
    .await;
    assert_eq!(page(&ranged)["range"], 100);
    harness.stop().await;
}

#[tokio::test]
async fn a_drag_reorders_a_sortable_list_move_by_move() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("sortable.html").await;
    // "So What" (row 1, y 120..160) dragged down past two rows, to row 3.
    let path = [(200, 140), (200, 170), (200, 205), (200, 225), (200, 230)];
    let sorted = step(&mut client, BrowserAction::drag(path)).await;
    let state = page(&sorted);
    assert_eq!(
        state["order"],
        serde_json::json!([
            "Blue in Green",
            "Freddie Freeloader",
            "All Blues",
            "So What",
            "Flamenco Sketches"
        ])
    );
    assert_eq!(
        state["moves"], 4,
        "one pointer move per point after the press"
    );
    assert_eq!(state["dropped"], true);
    harness.stop().await;
}

#[tokio::test]
async fn a_drag_moves_a_card_between_columns_with_html5_drag_and_drop() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("board.html").await;
    // "Mow the lawn" (To do's second card, y 128..168) to the Done column.
    let path = [(100, 148), (120, 150), (300, 200), (500, 250), (640, 300)];
    let moved = step(&mut client, BrowserAction::drag(path)).await;
    let state = page(&moved);
    assert_eq!(state["todo"], serde_json::json!(["paint"]), "{state}");
    assert_eq!(state["done"], serde_json::json!(["mow"]), "{state}");
    let events: Vec<&str> = state["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        events,
        ["dragstart:mow:true", "drop:mow:done:true", "dragend:move"],
        "the browser's own drag events"
    );
    // The same drag in steps: a button held, moves, released.
    step(
        &mut client,
        BrowserAction::mouse_down(360, 100, MouseButton::Left),
    )
    .await;
    step(&mut client, BrowserAction::move_to(370, 110)).await;
    step(&mut client, BrowserAction::move_to(200, 300)).await;
    let dropped = step(
        &mut client,
        BrowserAction::mouse_up(120, 400, MouseButton::Left),
    )
    .await;
    let state = page(&dropped);
    assert_eq!(
        state["todo"],
        serde_json::json!(["paint", "shed"]),
        "{state}"
    );
    assert_eq!(state["doing"], serde_json::json!([]), "{state}");
    harness.stop().await;
}

/// A card dragged between two columns twenty times: ten as a button held, one move and the
/// release, each its own step, then ten as a `drag` of two points (the threshold crossed only at
/// the last). DevTools may report the drag the move started only after answering the move (seen
/// one time in three on an idle machine): the release must still be the drop, and each crossing
/// must move the card with the browser's own drag events.
#[tokio::test]
async fn a_drag_in_steps_or_of_two_points_drops_every_time() {
    let harness = Harness::start(browserenv_server::settings::EnvSettings {
        max_steps: 60,
        ..test_settings()
    })
    .await;
    let (mut client, _) = harness.open("board.html").await;
    // "Build the shed" is the first card of a column (y 80..122), between Doing and Done.
    let mut heard = 0;
    for crossing in 0..20 {
        let (from, to, column) = match crossing % 2 {
            0 => (400, 660, "done"),
            _ => (660, 400, "doing"),
        };
        let dropped = if crossing < 10 {
            step(
                &mut client,
                BrowserAction::mouse_down(from, 100, MouseButton::Left),
            )
            .await;
            step(&mut client, BrowserAction::move_to(to, 300)).await;
            step(
                &mut client,
                BrowserAction::mouse_up(to, 300, MouseButton::Left),
            )
            .await
        } else {
            step(&mut client, BrowserAction::drag([(from, 100), (to, 300)])).await
        };
        let state = page(&dropped);
        assert_eq!(
            state[column],
            serde_json::json!(["shed"]),
            "crossing {crossing}: {state}"
        );
        let events = state["events"].as_array().unwrap();
        assert_eq!(
            events[heard..],
            [
                "dragstart:shed:true",
                format!("drop:shed:{column}:true").as_str(),
                "dragend:move"
            ],
            "crossing {crossing}: {state}"
        );
        heard = events.len();
    }
    harness.stop().await;
}

#[tokio::test]
async fn hover_opens_a_mega_menu_and_double_and_right_clicks_do_what_they_do() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("menu.html").await;
    let hovered = step(&mut client, BrowserAction::move_to(70, 20)).await;
    assert_eq!(
        page(&hovered)["mega"],
        true,
        "hovering Products opens the menu"
    );
    assert_eq!(hovered.observation.metadata["element"]["text"], "Products");
    // Down into the menu, which stays open, then a click on one of its links.
    step(&mut client, BrowserAction::move_to(70, 60)).await;
    let picked = step(&mut client, BrowserAction::click(240, 72)).await;
    assert_eq!(page(&picked)["picked"], "Saws");
    let away = step(&mut client, BrowserAction::move_to(700, 500)).await;
    assert_eq!(page(&away)["mega"], false, "moving away closes it");
    // A double click turns the name into a field; typing and ENTER rename.
    let editing = step(&mut client, BrowserAction::double_click(60, 250)).await;
    let state = page(&editing);
    assert_eq!(state["editing"], true, "{state}");
    let seen: Vec<&str> = state["seen"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        seen.ends_with(&[
            "mousedown:0:1",
            "click:0:1",
            "mousedown:0:2",
            "click:0:2",
            "dblclick:0:2"
        ]),
        "{seen:?}"
    );
    step(&mut client, BrowserAction::type_text("Tool shed")).await;
    let renamed = step(&mut client, BrowserAction::press(chord("ENTER"))).await;
    assert_eq!(page(&renamed)["name"], "Tool shed");
    // The right button opens the page's own menu where it was pressed.
    let menu = step(
        &mut client,
        BrowserAction::click_with(100, 400, MouseButton::Right, 1, Modifiers::NONE),
    )
    .await;
    assert_eq!(page(&menu)["ctx"], serde_json::json!([100, 400]));
    let chose = step(&mut client, BrowserAction::click(130, 436)).await;
    assert_eq!(page(&chose)["chose"], "delete");
    // A middle click is an auxclick.
    let middle = step(
        &mut client,
        BrowserAction::click_with(600, 560, MouseButton::Middle, 1, Modifiers::NONE),
    )
    .await;
    let seen = page(&middle)["seen"].to_string();
    assert!(seen.contains("auxclick:1:1"), "{seen}");
    harness.stop().await;
}

#[tokio::test]
async fn shift_and_ctrl_clicks_select_ranges_and_rows() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("files.html").await;
    step(&mut client, BrowserAction::click(100, 60 + 30 + 15)).await;
    let shift = Modifiers::of(&[Modifier::Shift]);
    let ranged = step(
        &mut client,
        BrowserAction::click_with(100, 60 + 4 * 30 + 15, MouseButton::Left, 1, shift),
    )
    .await;
    let state = page(&ranged);
    assert_eq!(
        state["selected"],
        serde_json::json!([1, 2, 3, 4]),
        "{state}"
    );
    assert_eq!(state["last"]["shift"], true);
    let ctrl = Modifiers::of(&[Modifier::Ctrl]);
    let toggled = step(
        &mut client,
        BrowserAction::click_with(100, 60 + 8 * 30 + 15, MouseButton::Left, 1, ctrl),
    )
    .await;
    assert_eq!(
        page(&toggled)["selected"],
        serde_json::json!([1, 2, 3, 4, 8])
    );
    assert_eq!(page(&toggled)["last"]["ctrl"], true);
    harness.stop().await;
}

#[tokio::test]
async fn a_drag_selects_text_and_copy_and_paste_stay_in_the_page() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("editor.html").await;
    // 20 px monospace from x 20: "quick brown" is characters 4..15 (12 px each).
    let selected = step(
        &mut client,
        BrowserAction::drag([(20 + 4 * 12 + 1, 34), (120, 35), (20 + 15 * 12 - 1, 34)]),
    )
    .await;
    assert_eq!(page(&selected)["selection"], "quick brown");
    // CTRL+C in one field, CTRL+V in the other: the page's own copy and paste.
    step(&mut client, BrowserAction::click(100, 94)).await;
    step(&mut client, BrowserAction::key(browserenv::Key::CtrlA)).await;
    let copied = step(&mut client, BrowserAction::press(chord("CTRL+C"))).await;
    assert_eq!(page(&copied)["copied"], serde_json::json!([true]));
    step(&mut client, BrowserAction::click(340, 94)).await;
    let pasted = step(&mut client, BrowserAction::press(chord("CTRL+V"))).await;
    let state = page(&pasted);
    assert_eq!(state["to"], "copy me please", "{state}");
    assert_eq!(state["pasted"], serde_json::json!(["copy me please:true"]));
    // Twice more, SHIFT+INSERT: the same text.
    let again = step(
        &mut client,
        BrowserAction::press_repeat(chord("SHIFT+INSERT"), 2),
    )
    .await;
    assert_eq!(
        page(&again)["to"],
        "copy me pleasecopy me pleasecopy me please"
    );
    // A cut takes the text out and keeps it for the next paste.
    step(&mut client, BrowserAction::key(browserenv::Key::CtrlA)).await;
    let cut = step(&mut client, BrowserAction::press(chord("CTRL+X"))).await;
    assert_eq!(page(&cut)["to"], "");
    step(&mut client, BrowserAction::click(100, 154)).await;
    let pasted = step(&mut client, BrowserAction::press(chord("CTRL+V"))).await;
    assert_eq!(pasted.observation.metadata["element"]["tag"], "input");
    let state = page(&pasted);
    assert_eq!(state["pasted"].as_array().map(Vec::len), Some(4), "{state}");
    harness.stop().await;
}

#[tokio::test]
async fn chords_move_the_focus_and_the_page_and_the_wheel_scrolls_the_box_under_it() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("editor.html").await;
    step(&mut client, BrowserAction::click(560, 154)).await;
    let back = step(&mut client, BrowserAction::press(chord("SHIFT+TAB"))).await;
    assert_eq!(page(&back)["focus"], "b");
    let back = step(&mut client, BrowserAction::press(chord("shift+tab"))).await;
    assert_eq!(page(&back)["focus"], "a");
    // The wheel over the inner box scrolls the box alone.
    let boxed = step(&mut client, BrowserAction::scroll_at(600, 300, 0, 200)).await;
    let state = page(&boxed);
    assert_eq!(
        (state["box"].as_i64(), state["page"].as_i64()),
        (Some(200), Some(0)),
        "{state}"
    );
    // PAGE_DOWN (twice) scrolls the page, once the focus is out of the field.
    step(&mut client, BrowserAction::click(300, 500)).await;
    let paged = step(
        &mut client,
        BrowserAction::press_repeat(chord("PAGE_DOWN"), 2),
    )
    .await;
    let page_y = page(&paged)["page"].as_i64().unwrap_or(0);
    assert!(page_y > 600, "two pages down: {page_y}");
    let home = step(&mut client, BrowserAction::press(chord("CTRL+HOME"))).await;
    assert_eq!(page(&home)["page"], 0);
    harness.stop().await;
}

#[tokio::test]
async fn the_corners_of_the_viewport_are_pixels_like_any_other() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("edges.html").await;
    let seen = |result: &StepResult| -> Vec<String> {
        page(result)
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect()
    };
    let corner = step(&mut client, BrowserAction::click(0, 0)).await;
    assert!(
        seen(&corner).contains(&"pointerdown:0,0:1".to_string()),
        "{:?}",
        seen(&corner)
    );
    let corner = step(&mut client, BrowserAction::click(799, 599)).await;
    assert!(
        seen(&corner).contains(&"click:799,599:0".to_string()),
        "{:?}",
        seen(&corner)
    );
    let moved = step(&mut client, BrowserAction::move_to(799, 0)).await;
    assert_eq!(
        seen(&moved).last().map(String::as_str),
        Some("pointermove:799,0:0")
    );
    let dragged = step(
        &mut client,
        BrowserAction::drag([(0, 599), (400, 300), (799, 0)]),
    )
    .await;
    let events = seen(&dragged);
    let tail: Vec<&str> = events
        .iter()
        .rev()
        .take(5)
        .rev()
        .map(String::as_str)
        .collect();
    // Pressed and released over the same element (the page's body): a click, as a browser says.
    assert_eq!(
        tail,
        [
            "pointerdown:0,599:1",
            "pointermove:400,300:1",
            "pointermove:799,0:1",
            "pointerup:799,0:0",
            "click:799,0:0"
        ]
    );
    let right = step(
        &mut client,
        BrowserAction::click_with(0, 599, MouseButton::Right, 1, Modifiers::NONE),
    )
    .await;
    assert!(
        seen(&right).contains(&"contextmenu:0,599:2".to_string()),
        "{:?}",
        seen(&right)
    );
    let wheel = step(&mut client, BrowserAction::scroll_at(799, 599, 10, 10)).await;
    assert!(seen(&wheel)
        .last()
        .is_some_and(|e| e.starts_with("wheel:799,599")));
    // Past the edge: refused before the browser is asked, the session goes on.
    let refused = client
        .step(BrowserAction::drag([(0, 0), (800, 10)]))
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("path.1.0: Input should be less than 800"),
        "{refused}"
    );
    let long = client
        .step(BrowserAction::drag((0..65).map(|i| (i, i))))
        .await
        .unwrap_err();
    assert!(long.to_string().contains("at most 64 items"), "{long}");
    let chord = client
        .step(
            BrowserAction::press_named("CTRL+C")
                .map(|mut a| {
                    if let browserenv::Action::Press { repeat, .. } = &mut a.action {
                        *repeat = 0;
                    }
                    a
                })
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(chord.to_string().contains("repeat"), "{chord}");
    step(&mut client, BrowserAction::click(5, 5)).await;
    harness.stop().await;
}

#[tokio::test]
async fn date_and_time_fields_take_typing_and_a_colour_takes_select() {
    let harness = Harness::start(test_settings()).await;
    let (mut client, _) = harness.open("pickers.html").await;
    // A date field's parts (month, day, year in the en-US order), typed as a person types them.
    step(&mut client, BrowserAction::click(135, 55)).await;
    let dated = step(&mut client, BrowserAction::type_text("05172025")).await;
    assert_eq!(page(&dated)["date"], "2025-05-17", "{}", title(&dated));
    step(&mut client, BrowserAction::click(135, 115)).await;
    let timed = step(&mut client, BrowserAction::type_text("0930PM")).await;
    assert_eq!(page(&timed)["time"], "21:30", "{}", title(&timed));
    // The colour picker (never drawn by the headless shell) takes its value from `select`.
    let coloured = step(&mut client, BrowserAction::select(200, 175, "#3366cc")).await;
    assert_eq!(page(&coloured)["color"], "#3366cc");
    let bad = client
        .step(BrowserAction::select(200, 175, "blue"))
        .await
        .unwrap();
    let detail = bad.observation.metadata["error_detail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        detail.contains("is not a value of <input type=color>"),
        "{detail}"
    );
    harness.stop().await;
}
