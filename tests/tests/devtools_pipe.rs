//! The DevTools bridge between chromiumoxide and Chromium's pipe
//! (`server/src/chromium/launch/pipe.rs`), through its real sockets, with a stand-in browser.

use std::time::{Duration, Instant};

use browserenv_server::chromium::launch::pipe::pipes;
use browserenv_tests::stand_in_browser::{answer_with_frames, FRAME_BYTES};
use futures_util::StreamExt;

/// The bridge adds no TCP delay: a command whose answer comes right after a large event (a
/// screenshot's frame) gets it at once. With Nagle's algorithm on the bridge's socket, the small
/// answer waits for chromiumoxide's delayed ACK, 40 ms on Linux: a bound from TCP, not from how
/// busy the machine is (with Nagle on, the median was 44 ms; without, under 1 ms).
#[tokio::test]
async fn an_answer_right_after_a_large_event_is_not_held_back() {
    use chromiumoxide::cdp::CdpEventMessage;
    use chromiumoxide::types::Message as CdpMessage;
    let (server, browser) = pipes().unwrap();
    let url = server.serve().await.unwrap();
    answer_with_frames(browser, FRAME_BYTES);
    // chromiumoxide's own connection, as the server's handler uses it.
    let mut connection = chromiumoxide::Connection::<CdpEventMessage>::connect(&url)
        .await
        .unwrap();
    let mut round_trips = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        let id = connection
            .submit_command(
                "Page.screencastFrameAck".into(),
                None,
                serde_json::json!({}),
            )
            .unwrap();
        loop {
            let message = tokio::time::timeout(Duration::from_secs(5), connection.next())
                .await
                .expect("an answer within 5 s")
                .expect("the bridge open")
                .expect("a message chromiumoxide reads");
            if matches!(message, CdpMessage::Response(response) if response.id == id) {
                break;
            }
        }
        round_trips.push(started.elapsed());
    }
    round_trips.sort();
    let median = round_trips[round_trips.len() / 2];
    assert!(
        median < Duration::from_millis(15),
        "median round trip {median:?} (all: {round_trips:?}): the answer waits for a delayed ACK"
    );
}
