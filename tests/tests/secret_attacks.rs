//! The secret rule attacked with pages written to break it (security round 4's review), on real
//! Chromium: a password field switched to "show" and one swapped for a plain field, a page that
//! echoes the password, closed shadow roots (made by a script and by the parser), frames of the
//! page's own origin and of another, editable elements drawn as discs or marked by the person,
//! and a plain field the page masks with its own script. Each says what leaked before, in its
//! comment; the pictures are read back pixel by pixel.

use browserenv_tests::outlets::{click, episode, key, typing, typing_secret, uncovered, Seen};

/// The boxes of the text layer's runs that showed a secret (hidden now), from the last layer
/// the watchers were given.
fn hidden_runs(seen: &Seen) -> Vec<[u32; 4]> {
    let layer = seen.layers().pop().expect("a text layer");
    layer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|run| run["text"].as_str().unwrap().contains("<redacted:"))
        .map(|run| {
            let n = |key: &str| run[key].as_u64().unwrap() as u32;
            [n("x"), n("y"), n("width"), n("height")]
        })
        .collect()
}

/// Every outlet is clean of `forms`, and the person's typing reached `human_steps` redacted.
fn hidden_everywhere(seen: &Seen, forms: &[&str]) {
    assert_eq!(seen.leaks(forms), Vec::<String>::new());
    let typed = seen.typed_shown();
    assert!(!typed.is_empty());
    for shown in typed {
        assert!(
            shown.starts_with("<redacted:"),
            "human_steps shows {shown:?}"
        );
    }
}

/// Part 3 of the round: a password field switched to "show" (type password to text) was drawn
/// uncovered in the agent's, the watchers' and the recording's pictures. It stays covered while
/// it holds a value.
#[tokio::test]
async fn a_password_field_switched_to_text_stays_covered() {
    let seen = episode(
        "show-pw",
        "showpw.html",
        &[click(250, 218), typing("Hunter2pass"), click(460, 218)],
    )
    .await;
    hidden_everywhere(&seen, &["Hunter2pass", "Hunter2"]);
    let field = [101, 201, 298, 34];
    let own = &seen.own.last().unwrap()["data"]["observation"]["screenshot"];
    let own = browserenv_tests::Picture::from_base64(own.as_str().unwrap());
    assert!(uncovered(&own, field) > 0, "the person sees their own page");
    assert_eq!(
        uncovered(&seen.agent_picture(), field),
        0,
        "the agent's picture"
    );
    let watched = seen.watcher_frames.last().expect("the watcher's pictures");
    assert_eq!(uncovered(watched, field), 0, "the watcher's picture");
    // After the typing, the "show" and the agent's wait.
    let recorded = &seen.recorded_frames;
    assert_eq!(recorded.len(), 4, "a frame after each step");
    for (step, picture) in recorded.iter().enumerate().skip(1) {
        assert_eq!(
            uncovered(picture, field),
            0,
            "the recording's frame of step {}",
            step + 1
        );
    }
}

/// A "show password" that swaps the field for a new plain one holding its value, and a strength
/// meter echoing the password: neither element was ever a secret field, so both drew the
/// password in the agent's picture. Now every line of text showing a secret is covered.
#[tokio::test]
async fn a_field_swapped_for_a_plain_one_and_an_echo_are_covered() {
    let seen = episode(
        "swap-pw",
        "swapfield.html",
        &[click(250, 218), typing("Hunter2pass"), click(460, 218)],
    )
    .await;
    hidden_everywhere(&seen, &["Hunter2pass", "Hunter2"]);
    let runs = hidden_runs(&seen);
    assert_eq!(runs.len(), 2, "the swapped field and the echo: {runs:?}");
    let picture = seen.agent_picture();
    for run in runs {
        assert_eq!(
            uncovered(&picture, run),
            0,
            "{run:?} shows in the agent's picture"
        );
    }
}

/// Password fields in closed shadow roots: the page's document cannot see them, so typing into
/// them reached `human_steps` as typed and their pixels were not covered. One a script made is
/// seen now (the probe notes closed roots as they are made): typing hidden, field covered. One
/// the parser made is not seen, but input that reaches where the probe cannot look counts as a
/// secret: typing hidden (its pixels are not covered: docs/security.md).
#[tokio::test]
async fn password_fields_in_closed_shadow_roots_are_secret_fields() {
    let seen = episode(
        "shadow-pw",
        "shadowpw.html",
        &[
            click(250, 118),
            typing("Hunter2pass"),
            click(250, 218),
            typing("Kx9q2wzz"),
        ],
    )
    .await;
    hidden_everywhere(&seen, &["Hunter2pass", "Hunter2", "Kx9q2wzz"]);
    assert_eq!(
        uncovered(&seen.agent_picture(), [101, 101, 298, 34]),
        0,
        "the scripted root's field"
    );
}

/// The sign-in of security round 4 inside a frame of the page's origin and one of another: the
/// frames' own requests (`pwretry.html?user=ana&pw=...`) reach the archive.
#[tokio::test]
async fn a_sign_in_inside_frames_is_hidden_everywhere() {
    let seen = episode(
        "frame-pw",
        "framepw.html",
        &[
            click(250, 218),
            typing("Hunter2pass\n"),
            click(250, 518),
            typing("Kx9q2wzz\n"),
        ],
    )
    .await;
    assert!(
        seen.archive.matches("pwretry.html?user=ana&pw=").count() >= 2,
        "both frames sent their forms"
    );
    hidden_everywhere(&seen, &["Hunter2pass", "Hunter2", "Kx9q2wzz", "Kx9q2"]);
}

/// Editable elements: one drawn as discs by CSS (a password "field" without an input) was not a
/// secret field, so typing into it showed; one the person marks is hidden and covered.
#[tokio::test]
async fn editable_elements_drawn_as_discs_or_marked_are_secret() {
    let seen = episode(
        "editable-pw",
        "editable.html",
        &[
            click(250, 118),
            typing("Hunter2pass"),
            click(250, 218),
            typing_secret("Kx9q2wzz"),
        ],
    )
    .await;
    hidden_everywhere(&seen, &["Hunter2pass", "Hunter2", "Kx9q2wzz"]);
    let picture = seen.agent_picture();
    assert_eq!(uncovered(&picture, [101, 101, 298, 34]), 0, "the discs");
    assert_eq!(
        uncovered(&picture, [101, 201, 298, 34]),
        0,
        "the marked one"
    );
}

/// A plain field the page masks with its own script (it keeps each character and shows a
/// bullet): read before the step it was empty, so not a secret field, and the password went to
/// the URL. Input that leaves a field showing only bullets reached a secret field.
#[tokio::test]
async fn a_field_masked_by_the_page_s_own_script_is_secret() {
    let seen = episode(
        "masked-pw",
        "maskedpw.html",
        &[click(250, 218), typing("Hunter2pass"), key("ENTER")],
    )
    .await;
    let url = &seen.last.as_ref().unwrap().observation.url;
    assert!(url.contains("pw="), "sent: {url}");
    hidden_everywhere(&seen, &["Hunter2pass", "Hunter2"]);
}
