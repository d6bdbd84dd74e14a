//! The link to the server: one task owns the WebSocket client, takes requests in order and reports
//! what came back. The screenshot is decoded here, off the UI loop, once per observation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use browserenv::{Client, ClientError, ResetOptions, StepResult};
use browserenv_server::archive::TypedSecrets;
use image::DynamicImage;
use tokio::sync::mpsc;

use crate::app::{Msg, Observed, Request};
use crate::graphics::picture::decode_png;

/// What the link reports to the UI loop.
pub enum LinkEvent {
    /// A UI message (connected, observation facts, errors, lost).
    Msg(Msg),
    /// The decoded screenshot of the observation just reported (None if it had none), the PNG
    /// it came from, and the episode's step it shows (what its text layer must be read for).
    Picture {
        image: Option<Arc<DynamicImage>>,
        png: Option<Arc<Vec<u8>>>,
        step: u64,
    },
    /// A request and its whole reply, for the recorder (sent before the observation's `Msg`).
    Reply {
        request: Request,
        /// Who took the step, when the server says (a watched session's frames); else the UI's
        /// recorder decides.
        actor: Option<browserenv_collect::trajectory::Actor>,
        result: StepResult,
        latency_ms: f64,
        /// The episode id the UI chose for a reset.
        episode_id: Option<String>,
    },
}

/// What the person asks of a watched session's control (sent on a watch link's `control`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlWish {
    /// Take control, under this name.
    Take(String),
    /// Hand back, with the person's note for an agent that asked for one.
    Release(Option<String>),
}

pub struct Link {
    pub requests: mpsc::Sender<Request>,
    pub events: mpsc::Receiver<LinkEvent>,
    /// Watch links: take control of the watched session and hand it back.
    pub control: Option<mpsc::Sender<ControlWish>>,
}

/// Connect in the background; the first event is `Connected` or `Disconnected`. A secret the
/// person types is also told to `typed_secrets` (an embedded server's archives hide it).
pub fn connect(server: String, token: Option<String>, typed_secrets: Option<TypedSecrets>) -> Link {
    let (request_tx, requests) = mpsc::channel::<Request>(32);
    let (event_tx, events) = mpsc::channel::<LinkEvent>(32);
    tokio::spawn(serve(server, token, typed_secrets, requests, event_tx));
    Link {
        requests: request_tx,
        events,
        control: None,
    }
}

/// The link's task: connect, then carry out the UI's requests in order and report each reply,
/// until the UI or the server goes away.
async fn serve(
    server: String,
    token: Option<String>,
    typed_secrets: Option<TypedSecrets>,
    mut requests: mpsc::Receiver<Request>,
    events: mpsc::Sender<LinkEvent>,
) {
    let mut client = match Client::connect_with_token(&server, token.as_deref()).await {
        Ok(client) => client,
        Err(err) => {
            tell(&events, Msg::Disconnected(err.to_string())).await;
            return;
        }
    };
    if !tell(&events, Msg::Connected).await {
        return;
    }
    // Servers other than ours may not report the step in metadata: count it here too.
    let mut steps = 0u64;
    loop {
        // Between requests, notice a server that goes away instead of waiting for the next key.
        let request = tokio::select! {
            request = requests.recv() => match request {
                Some(request) => request,
                None => break,
            },
            lost = client.closed() => {
                tell(&events, Msg::Disconnected(lost.to_string())).await;
                return;
            }
        };
        let started = Instant::now();
        // The UI names its episodes, so its recordings carry the ids the server used.
        let episode_id = request.is_reset().then(|| uuid::Uuid::new_v4().to_string());
        let reply = perform(&mut client, &request, &episode_id, &typed_secrets).await;
        let latency = started.elapsed();
        let told = match reply {
            Ok(result) => {
                steps = if request.is_reset() { 0 } else { steps + 1 };
                let replied = Replied {
                    request,
                    result,
                    latency,
                    episode_id,
                };
                report(&events, replied, steps).await
            }
            Err(err) => report_error(&events, err).await,
        };
        if !told {
            return;
        }
    }
    // The UI is gone: end the session politely.
    let _ = tokio::time::timeout(Duration::from_secs(2), client.close()).await;
}

/// Send the UI a message; false once no one is listening.
async fn tell(events: &mpsc::Sender<LinkEvent>, msg: Msg) -> bool {
    events.send(LinkEvent::Msg(msg)).await.is_ok()
}

/// Carry out one request on the server (a reset under the episode id the UI chose).
async fn perform(
    client: &mut Client,
    request: &Request,
    episode_id: &Option<String>,
    typed_secrets: &Option<TypedSecrets>,
) -> Result<StepResult, ClientError> {
    match request {
        Request::Reset(url) => {
            let id = episode_id.clone().unwrap_or_default();
            client
                .reset(ResetOptions::new(url.clone()).episode_id(id))
                .await
        }
        Request::ResetTask(_) | Request::ResetLease { .. } => {
            let mut kwargs = serde_json::Map::new();
            match request {
                Request::ResetLease { lease, .. } => {
                    kwargs.insert("campaign_lease".into(), lease.clone().into())
                }
                Request::ResetTask(task) => kwargs.insert("task_id".into(), task.clone().into()),
                _ => unreachable!("a task reset"),
            };
            kwargs.insert(
                "episode_id".into(),
                episode_id.clone().unwrap_or_default().into(),
            );
            client.reset_with(kwargs).await
        }
        Request::Secret { action, .. } => {
            if let Some(secrets) = typed_secrets {
                if let Some(text) = browserenv::secrets::typed_text(&action.action) {
                    secrets.add(&text);
                }
            }
            client.step(action.clone()).await
        }
        Request::Step(action) => client.step(action.clone()).await,
    }
}

/// A request the server answered.
struct Replied {
    request: Request,
    result: StepResult,
    latency: Duration,
    episode_id: Option<String>,
}

/// Report a reply: the whole of it for the recorder, then the decoded screenshot, then the
/// observation's facts (`steps`: the step as counted here). False once no one is listening.
async fn report(events: &mpsc::Sender<LinkEvent>, replied: Replied, steps: u64) -> bool {
    let Replied {
        request,
        result,
        latency,
        episode_id,
    } = replied;
    let (image, png) = decode_off_loop(&result).await.unzip();
    let observed = observation(&result, steps, latency);
    let step = match &observed {
        Msg::Observation(observed) => observed.step,
        _ => steps,
    };
    let reply = LinkEvent::Reply {
        request,
        actor: None,
        result,
        latency_ms: latency.as_secs_f64() * 1000.0,
        episode_id,
    };
    events.send(reply).await.is_ok()
        && events
            .send(LinkEvent::Picture { image, png, step })
            .await
            .is_ok()
        && tell(events, observed).await
}

/// Report a request that failed: a refusal the session survives as a server error, anything
/// else as the end of the link. False when the link ends (or no one is listening).
async fn report_error(events: &mpsc::Sender<LinkEvent>, err: ClientError) -> bool {
    match err {
        ClientError::Server(frame) if !frame.code.closes_session() => {
            let msg = Msg::ServerError {
                code: frame.code.to_string(),
                message: frame.message,
            };
            tell(events, msg).await
        }
        ClientError::InvalidAction(errors) => {
            let message = errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            let msg = Msg::ServerError {
                code: "INVALID_ACTION".into(),
                message,
            };
            tell(events, msg).await
        }
        err => {
            tell(events, Msg::Disconnected(err.to_string())).await;
            false
        }
    }
}

async fn decode_off_loop(result: &StepResult) -> Option<(Arc<DynamicImage>, Arc<Vec<u8>>)> {
    if result.observation.screenshot.is_empty() {
        return None;
    }
    let screenshot = result.observation.screenshot.clone();
    match tokio::task::spawn_blocking(move || decode_png(&screenshot)).await {
        Ok(Ok((image, png))) => Some((Arc::new(image), Arc::new(png))),
        Ok(Err(err)) => {
            tracing::warn!("{err}");
            None
        }
        Err(_) => None,
    }
}

/// A `--tasks` task's verdict: passed, and which parts of its check failed.
fn task_verdict(metadata: &serde_json::Map<String, serde_json::Value>) -> Option<(bool, String)> {
    metadata.get("verdict").map(|verdict| {
        let passed = verdict
            .get("passed")
            .and_then(|p| p.as_bool())
            .unwrap_or(false);
        // The parts of the task's check that failed; what they expect is the server's secret
        // (in its log and its recording), as it is the agent's.
        let failed: Vec<&str> = verdict
            .get("failed")
            .and_then(|f| f.as_array())
            .map(|f| f.iter().filter_map(|part| part.as_str()).collect())
            .unwrap_or_default();
        let why = match failed.len() {
            0 => String::new(),
            1 => format!("the {} check failed", failed[0]),
            _ => format!("the {} checks failed", failed.join(", ")),
        };
        (passed, why)
    })
}

/// A MiniWoB++ task's verdict, its page's own once it says done: passed with a positive raw
/// reward (the observation's `reward`), and the page's reason, if any.
fn page_verdict(metadata: &serde_json::Map<String, serde_json::Value>) -> Option<(bool, String)> {
    let miniwob = metadata.get("miniwob")?;
    if miniwob.get("done").and_then(|done| done.as_bool()) != Some(true) {
        return None;
    }
    let raw = miniwob
        .get("raw_reward")
        .and_then(|r| r.as_f64())
        .unwrap_or(0.0);
    let reason = miniwob
        .get("reason")
        .and_then(|r| r.as_str())
        .unwrap_or_default();
    Some((raw > 0.0, reason.to_string()))
}

fn observation(result: &StepResult, counted: u64, latency: Duration) -> Msg {
    let metadata = &result.observation.metadata;
    let verdict = task_verdict(metadata).or_else(|| page_verdict(metadata));
    Msg::Observation(Observed {
        reward: result.reward,
        verdict,
        max_steps: metadata
            .get("task")
            .and_then(|task| task.get("max_steps"))
            .and_then(|m| m.as_u64()),
        url: result.observation.url.clone(),
        title: metadata
            .get("title")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_string(),
        error: result.observation.error.clone(),
        done: result.done,
        step: metadata
            .get("step")
            .and_then(|s| s.as_u64())
            .unwrap_or(counted),
        latency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use browserenv::models::BrowserObservation;

    fn finished(verdict: serde_json::Value) -> Option<(bool, String)> {
        let mut metadata = serde_json::Map::new();
        metadata.insert("verdict".into(), verdict);
        let result = StepResult {
            observation: BrowserObservation {
                metadata,
                screenshot: String::new(),
                url: "http://127.0.0.1:1/index.html".into(),
                error: String::new(),
            },
            reward: Some(0.0),
            done: true,
        };
        match observation(&result, 1, Duration::ZERO) {
            Msg::Observation(observed) => observed.verdict,
            _ => unreachable!("an observation"),
        }
    }

    #[test]
    fn a_miniwob_page_s_verdict_is_the_task_s_once_it_says_done() {
        let page = |miniwob: serde_json::Value| {
            let mut metadata = serde_json::Map::new();
            metadata.insert("miniwob".into(), miniwob);
            super::page_verdict(&metadata)
        };
        let done =
            serde_json::json!({"done": true, "raw_reward": 1.0, "reward": 0.98, "reason": null});
        assert_eq!(page(done), Some((true, String::new())));
        let wrong = serde_json::json!({"done": true, "raw_reward": -1.0, "reason": "wrong button"});
        assert_eq!(page(wrong), Some((false, "wrong button".into())));
        assert_eq!(page(serde_json::json!({"done": false})), None);
    }

    #[test]
    fn a_failed_verdict_names_the_checks_that_failed() {
        assert_eq!(
            finished(serde_json::json!({"passed": false, "failed": ["answer"]})),
            Some((false, "the answer check failed".into()))
        );
        assert_eq!(
            finished(serde_json::json!({"passed": false, "failed": ["url", "page_text_contains"]})),
            Some((false, "the url, page_text_contains checks failed".into()))
        );
        assert_eq!(
            finished(serde_json::json!({"passed": true, "failed": []})),
            Some((true, String::new()))
        );
    }
}
