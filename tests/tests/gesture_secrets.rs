//! The new gestures (issue 41) against the secret rule (issue 43), on real Chromium: what a
//! person chose or put into a field they keep secret must not come back through a gesture the
//! agent makes afterwards (a dropdown drawn open, a copy, a drag). Each test says, in its comment,
//! what leaked before.

use browserenv_tests::outlets::{episode, Seen};
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
