//! Every place a person's secret could leave a server, gathered as text for the secret tests:
//! the agent's observations (URL, metadata, `human_steps`), another watcher's stream, the text
//! layer (`/sessions/{id}/text`, the agent's `metadata.text`), the recording (`steps.jsonl`, the
//! episode lines) and the episode's web archive (`--archive`), with the frames kept for their
//! pixels. A person takes control of an agent's session and acts; the agent then steps once more.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use browserenv::{BrowserAction, ResetOptions, StepResult};
use browserenv_server::archive::ArchiveConfig;
use browserenv_server::ServerConfig;
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::watch::{reply, send, session_id, until, watch, Socket};
use crate::{test_settings, Harness, Picture};

/// A server on real Chromium recording every episode, its frames and its web archive into
/// `dir`, and giving the agent the page's text (`BROWSER_OBSERVE_TEXT`).
pub async fn recording_everything(dir: &Path) -> Harness {
    let _ = std::fs::remove_dir_all(dir);
    Harness::start_with(ServerConfig {
        settings: browserenv_server::settings::EnvSettings {
            observe_text: true,
            ..test_settings()
        },
        record_dir: Some(dir.to_path_buf()),
        archive: ArchiveConfig {
            record_into: Some(dir.to_path_buf()),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await
}

/// A person's click, typing (marked secret or not) and key, as watch `step` frames.
pub fn click(x: i64, y: i64) -> (Value, bool) {
    (json!({"op": "click", "x": x, "y": y}), false)
}

pub fn typing(text: &str) -> (Value, bool) {
    (json!({"op": "type", "text": text}), false)
}

pub fn typing_secret(text: &str) -> (Value, bool) {
    (json!({"op": "type", "text": text}), true)
}

pub fn key(name: &str) -> (Value, bool) {
    (json!({"op": "key", "text": name}), false)
}

/// `steps` of a person on the test page `page`, on a server recording everything.
pub async fn episode(name: &str, page: &str, steps: &[(Value, bool)]) -> Seen {
    let dir = scratch(name);
    let harness = recording_everything(&dir).await;
    let url = harness.page(page);
    let seen = person_does(harness, &dir, &url, steps).await;
    let _ = std::fs::remove_dir_all(&dir);
    seen
}

/// A scratch folder of a test's own.
pub fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("browserenv-{name}-{}", std::process::id()))
}

/// What each outlet was handed during an episode, as text.
#[derive(Default)]
pub struct Seen {
    /// The agent's observations (URL and metadata, `human_steps` and `text` included).
    pub agent: String,
    /// Another watcher's frames, screenshots left out.
    pub watcher: String,
    /// `/sessions/{id}/text` after each of the person's steps.
    pub text_layers: String,
    /// Every file of the recording but the frames and the archives.
    pub recording: String,
    /// The episode's archive, unpacked.
    pub archive: String,
    /// The person's own observations (their view: their page, uncovered).
    pub own: Vec<Value>,
    /// The agent's last observation.
    pub last: Option<StepResult>,
    /// The frames the watcher was shown, for their pixels.
    pub watcher_frames: Vec<Picture>,
    /// The recording's frames after each step, in order.
    pub recorded_frames: Vec<Picture>,
}

impl Seen {
    /// The text layers the watchers were given, in order.
    pub fn layers(&self) -> Vec<Value> {
        serde_json::Deserializer::from_str(&self.text_layers)
            .into_iter::<Value>()
            .map(Result::unwrap)
            .collect()
    }

    /// The person's `type` steps as the agent's `human_steps` show them.
    pub fn typed_shown(&self) -> Vec<String> {
        let last = self.last.as_ref().expect("the agent stepped");
        last.observation.metadata["human_steps"]
            .as_array()
            .expect("the person's steps")
            .iter()
            .filter(|step| step["action"]["op"] == "type")
            .map(|step| {
                step["action"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }

    /// The agent's last picture.
    pub fn agent_picture(&self) -> Picture {
        let last = self.last.as_ref().expect("the agent stepped");
        Picture::from_base64(&last.observation.screenshot)
    }

    /// Each outlet that holds `text`, by name.
    pub fn holding(&self, text: &str) -> Vec<&'static str> {
        [
            ("agent", &self.agent),
            ("watcher", &self.watcher),
            ("text layer", &self.text_layers),
            ("recording", &self.recording),
            ("archive", &self.archive),
        ]
        .into_iter()
        .filter(|(_, seen)| seen.contains(text))
        .map(|(name, _)| name)
        .collect()
    }

    /// Every outlet that holds any of `forms`, with the form: empty when none does.
    pub fn leaks(&self, forms: &[&str]) -> Vec<String> {
        forms
            .iter()
            .flat_map(|form| {
                self.holding(form)
                    .into_iter()
                    .map(move |outlet| format!("{outlet} holds {form:?}"))
            })
            .collect()
    }
}

/// How many pixels of `[x, y, width, height]` in `picture` are not black (not covered).
pub fn uncovered(picture: &Picture, [x, y, width, height]: [u32; 4]) -> usize {
    let mut shown = 0;
    for row in y..y + height {
        for column in x..x + width {
            if picture.rgb(column, row) != [0, 0, 0] {
                shown += 1;
            }
        }
    }
    shown
}

/// A JSON value without its screenshots (base64 PNG holds every short string somewhere).
fn without_pictures(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(fields) => {
                fields.remove("screenshot");
                fields.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

fn shown(result: &StepResult) -> String {
    format!(
        "{} {}",
        result.observation.url,
        Value::Object(result.observation.metadata.clone())
    )
}

/// An episode on `page`: the agent resets, a person takes control and takes `steps` (each an
/// action and whether the person marks it secret), with another watcher looking on; the person
/// hands back, the agent waits once. The server is stopped at the end (the recording and the
/// archive are then on disk) and everything gathered.
pub async fn person_does(
    harness: Harness,
    dir: &Path,
    page: &str,
    steps: &[(Value, bool)],
) -> Seen {
    let mut seen = Seen::default();
    let mut agent = harness.client().await;
    let first = agent
        .reset(ResetOptions::new(page.to_string()))
        .await
        .expect("reset");
    seen.agent.push_str(&shown(&first));
    let id = session_id(&harness).await;
    let mut person = watch(&harness, &id, None).await.unwrap();
    let mut observer = watch(&harness, &id, None).await.unwrap();
    send(
        &mut person,
        json!({"type": "take", "data": {"name": "ana"}}),
    )
    .await;
    assert_eq!(until(&mut person, reply).await["type"], "control");
    let text_url = format!("{}/sessions/{id}/text", harness.server.base_url());
    for (action, secret) in steps {
        send(
            &mut person,
            json!({"type": "step", "data": action, "secret": secret}),
        )
        .await;
        let answer = until(&mut person, reply).await;
        assert_eq!(answer["type"], "observation", "{action}: {answer}");
        seen.own.push(answer);
        let layer = reqwest::get(&text_url).await.unwrap().text().await.unwrap();
        seen.text_layers.push_str(&layer);
    }
    send(&mut person, json!({"type": "release"})).await;
    until(&mut person, |f| f["type"] == "control").await;
    let after = agent
        .step(BrowserAction::wait())
        .await
        .expect("the agent steps");
    seen.agent.push_str(&shown(&after));
    seen.last = Some(after);
    agent.close().await.unwrap();
    drop(person);
    gather_watcher(&mut observer, &mut seen).await;
    harness.stop().await;
    gather_recording(dir, &mut seen);
    seen
}

/// The watcher's frames until the session ends (the agent closed it).
async fn gather_watcher(observer: &mut Socket, seen: &mut Seen) {
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(message)) = observer.next().await {
            let Message::Text(text) = message else {
                continue;
            };
            let Ok(frame) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let screenshot = frame["data"]["result"]["observation"]["screenshot"].as_str();
            if let Some(png) = screenshot.filter(|s| !s.is_empty()) {
                seen.watcher_frames.push(Picture::from_base64(png));
            }
            seen.watcher.push_str(&without_pictures(frame).to_string());
        }
    })
    .await;
}

/// Every file under `dir`: text as it is, archives unpacked, and the frame after each step, in
/// the order of the steps.
fn gather_recording(dir: &Path, seen: &mut Seen) {
    gather_files(dir, seen);
    let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap_or_default();
    for line in steps.lines() {
        let step: Value = serde_json::from_str(line).unwrap();
        let Some(frame) = step["next_file_name"].as_str().filter(|f| !f.is_empty()) else {
            continue;
        };
        let png = std::fs::read(dir.join(frame)).unwrap();
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(png);
        seen.recorded_frames.push(Picture::from_base64(&encoded));
    }
}

fn gather_files(dir: &Path, seen: &mut Seen) {
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = path.to_string_lossy().to_string();
            if path.is_dir() {
                folders.push(path);
            } else if name.ends_with(".warc.gz") {
                let mut text = Vec::new();
                let file = std::fs::File::open(&path).unwrap();
                let _ = flate2::read::MultiGzDecoder::new(file).read_to_end(&mut text);
                seen.archive.push_str(&String::from_utf8_lossy(&text));
            } else if name.ends_with(".png") {
                // Read in the order of the steps, below.
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                seen.recording.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
}
