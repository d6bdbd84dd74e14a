//! A stand-in browser on the DevTools pipe's far ends (`browserenv_server::chromium::pipe`), for
//! measuring the transport alone: no Chromium, no page, the same bytes every time.

use std::io::{BufRead, BufReader, Write};

use browserenv_server::chromium::launch::pipe::BrowserEnds;

/// For each command, a screencast frame event of `frame_bytes` and the command's answer, written
/// back to back, as Chromium answers a screenshot's acknowledgement. Runs on a thread of its own
/// until the server's ends close.
pub fn answer_with_frames(ends: BrowserEnds, frame_bytes: usize) {
    let (commands, answers) = ends.into_fds();
    std::thread::spawn(move || {
        let mut commands = BufReader::new(std::fs::File::from(commands));
        let mut answers = std::fs::File::from(answers);
        let data = "A".repeat(frame_bytes);
        loop {
            let mut command = Vec::new();
            match commands.read_until(0, &mut command) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            command.pop();
            let Ok(command) = serde_json::from_slice::<serde_json::Value>(&command) else {
                return;
            };
            let event = serde_json::json!({
                "method": "Page.screencastFrame",
                "params": {
                    "data": data,
                    "metadata": {"offsetTop": 0, "pageScaleFactor": 1, "deviceWidth": 800,
                        "deviceHeight": 600, "scrollOffsetX": 0, "scrollOffsetY": 0},
                    "sessionId": 1,
                },
            });
            let answer = serde_json::json!({"id": command["id"], "result": {}});
            // Two writes, as Chromium makes them: one message, then the next.
            let sent = answers
                .write_all(format!("{event}\0").as_bytes())
                .and_then(|()| answers.write_all(format!("{answer}\0").as_bytes()));
            if sent.is_err() {
                return;
            }
        }
    });
}

/// A screenshot frame's size: 36-60 KiB of base64 for the test pages, less than one loopback
/// segment (the case Nagle's algorithm stalls).
pub const FRAME_BYTES: usize = 48 * 1024;
