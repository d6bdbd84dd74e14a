//! The page's text as an agent reads it, on real Chromium: the MCP tool `read_page` (over
//! OpenEnv's JSON-RPC on `/mcp`, the same call as the standard MCP face) and `metadata.text` with
//! `BROWSER_OBSERVE_TEXT`. One line per run, `x,y,w,h [marker] text`, boxes in screenshot pixels
//! whose centres can be clicked; what a person cannot see is not there, and a frame of another
//! origin is a marked box, not silently missing.

use browserenv::text_layer::TRUNCATED_LINE;
use browserenv::{BrowserAction, ResetOptions};
use browserenv_tests::{test_settings, Harness};
use serde_json::{json, Value};

/// One line of the compact form.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    x: i32,
    y: i32,
    width: i32,
    height: i32,
    marker: Option<String>,
    text: String,
}

impl Line {
    fn centre(&self) -> (i64, i64) {
        (
            i64::from(self.x + self.width / 2),
            i64::from(self.y + self.height / 2),
        )
    }
}

/// Read the compact form back: a box, then a marker when the rest starts with `[`, then text.
fn parse(text: &str) -> Vec<Line> {
    text.lines()
        .filter(|line| *line != TRUNCATED_LINE)
        .map(|line| {
            let (quad, rest) = line.split_once(' ').unwrap_or((line, ""));
            let numbers: Vec<i32> = quad
                .split(',')
                .map(|n| n.parse().unwrap_or_else(|_| panic!("a box in {line:?}")))
                .collect();
            let [x, y, width, height] = numbers[..] else {
                panic!("four numbers in {line:?}")
            };
            let (marker, text) = match rest.strip_prefix('[') {
                Some(marked) => {
                    let (marker, text) = marked.split_once(']').expect("a closed marker");
                    (Some(marker.to_string()), text.trim_start().to_string())
                }
                None => (None, rest.to_string()),
            };
            Line {
                x,
                y,
                width,
                height,
                marker,
                text,
            }
        })
        .collect()
}

fn line<'a>(lines: &'a [Line], text: &str) -> &'a Line {
    lines
        .iter()
        .find(|l| l.text == text)
        .unwrap_or_else(|| panic!("no line {text:?} in {lines:#?}"))
}

/// One OpenEnv JSON-RPC call on `/mcp`; its `result`.
async fn rpc(http: &reqwest::Client, base: &str, method: &str, params: Value) -> Value {
    let reply: Value = http
        .post(format!("{base}/mcp"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(reply.get("error").is_none(), "{method}: {reply}");
    reply["result"].clone()
}

#[tokio::test]
async fn read_page_and_observed_text_show_what_a_person_sees_and_mark_other_origins() {
    let harness = Harness::start(browserenv_server::settings::EnvSettings {
        observe_text: true,
        ..test_settings()
    })
    .await;
    let page = harness.page("readpage.html");

    // OpenEnv's client over /ws: the text comes with every observation.
    let mut client = harness.client().await;
    let first = client
        .reset(ResetOptions::new(&page).episode_id("read-1"))
        .await
        .unwrap();
    let metadata = &first.observation.metadata;
    let observed = metadata["text"]
        .as_str()
        .expect("metadata.text")
        .to_string();
    assert_eq!(metadata["text_truncated"], false, "{observed}");
    assert!(metadata["timings_ms"]["text"].as_f64().is_some());
    let lines = parse(&observed);

    let heading = line(&lines, "Read me first");
    assert_eq!(
        (heading.marker.as_deref(), heading.x),
        (None, 20),
        "{heading:?}"
    );
    let link = line(&lines, "A link to follow");
    assert_eq!(link.marker.as_deref(), Some("link"));
    assert_eq!(
        line(&lines, "Press this button").marker.as_deref(),
        Some("button")
    );
    assert_eq!(line(&lines, "Send it").marker.as_deref(), Some("button"));
    assert_eq!(
        line(&lines, "Grace Hopper").marker.as_deref(),
        Some("field")
    );
    assert_eq!(
        line(&lines, "Type a city").marker.as_deref(),
        Some("empty field")
    );
    assert_eq!(line(&lines, "••••••••").marker.as_deref(), Some("password"));
    assert_eq!(
        line(&lines, "[1] starts with a bracket").marker.as_deref(),
        Some("text")
    );
    line(&lines, "same origin frame text");
    // The other origin's page did load (it said so): its text is still not read.
    line(&lines, "the other frame loaded");
    for unseen in [
        "hidden words",
        "gone words",
        "clear words",
        "left of the screen",
        "below the fold",
        "covered words",
        "hunter22",
        "words of another origin",
        "a button of another origin",
    ] {
        assert!(
            !observed.contains(unseen),
            "{unseen:?} is not visible:\n{observed}"
        );
    }
    // Only the frame a person sees is marked: not the one not displayed, the 1x1 one, the covered
    // one or the one below the fold.
    let frames: Vec<&Line> = lines
        .iter()
        .filter(|l| l.marker.as_deref() == Some("frame: other origin, not readable"))
        .collect();
    assert_eq!(frames.len(), 1, "{observed}");
    assert_eq!(
        (
            frames[0].x,
            frames[0].y,
            frames[0].width,
            frames[0].height,
            frames[0].text.as_str()
        ),
        (400, 300, 300, 120, ""),
        "{observed}"
    );
    for l in &lines {
        assert!(
            l.x >= 0 && l.y >= 0 && l.x + l.width <= 800 && l.y + l.height <= 600,
            "{l:?}"
        );
    }

    // A step reads the page again: the link's centre, found by its text, is clicked.
    let (x, y) = link.centre();
    let clicked = client.step(BrowserAction::click(x, y)).await.unwrap();
    assert!(
        clicked.observation.url.ends_with("#next"),
        "{}",
        clicked.observation.url
    );
    assert!(clicked.observation.metadata["text"]
        .as_str()
        .unwrap()
        .contains("[link] A link to follow"));
    client.close().await.unwrap();

    // read_page over OpenEnv's JSON-RPC: the same text, without a step.
    let http = reqwest::Client::new();
    let base = harness.server.base_url();
    let session = rpc(&http, &base, "openenv/session/create", json!({})).await["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let call = |name: &'static str, arguments: Value| {
        let (http, base, session) = (http.clone(), base.clone(), session.clone());
        async move {
            rpc(
                &http,
                &base,
                "tools/call",
                json!({"name": name, "arguments": arguments, "session_id": session}),
            )
            .await
        }
    };
    let tools = rpc(&http, &base, "tools/list", json!({})).await;
    let read_page = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_page")
        .expect("read_page is listed")
        .clone();
    assert_eq!(read_page["annotations"]["readOnlyHint"], true);

    let reset = call("reset", json!({"start_url": page})).await;
    let read = call("read_page", json!({})).await;
    let facts = &read["data"];
    assert_eq!(facts["step"], 0);
    assert_eq!(facts["truncated"], false);
    assert_eq!(
        facts["text"], reset["data"]["metadata"]["text"],
        "the same read"
    );
    assert_eq!(read["content"][0]["text"], facts["text"]);
    assert!(facts.get("screenshot").is_none());
    // Bounded: whole lines, the mark last.
    let short = call("read_page", json!({"max_chars": 120})).await;
    let text = short["data"]["text"].as_str().unwrap();
    assert_eq!(short["data"]["truncated"], true);
    assert!(text.chars().count() <= 120, "{text}");
    assert!(text.ends_with(TRUNCATED_LINE), "{text}");
    assert!(observed.starts_with(text.trim_end_matches(TRUNCATED_LINE)));
    // Reading never stepped the episode.
    let wait = call("wait", json!({})).await;
    assert_eq!(wait["data"]["step"], 1);
    rpc(
        &http,
        &base,
        "openenv/session/close",
        json!({"session_id": session}),
    )
    .await;
    harness.stop().await;
}
