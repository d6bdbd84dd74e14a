//! Watch mode: follow a session an agent drives through the server's `/sessions/{id}/watch`
//! stream. The same picture, grid and status as control mode; the last action is drawn on the
//! frame.
//!
//! Hand-off: on the same socket the person may take control of the session (`c`), drive it with
//! the usual keys, and hand it back (`c` again, or by leaving: the server hands back when the
//! socket goes). Without a session to follow the link waits for one, and when the watched session
//! ends it keeps the last frame and follows the next session that appears.
//!
//! Agents asking for a person (`request_human`): the watched session's frames carry its ask, and
//! the list of sessions, asked every `ASKS_INTERVAL`, everyone's (`crate::asks`). Sessions are
//! offered asking ones first.

use std::sync::Arc;
use std::time::Duration;

use browserenv::models::{BrowserAction, StepResult};
use browserenv::protocol::parse_step_result;
use browserenv_collect::trajectory::Actor;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use crate::app::{Msg, Observed, Request};
use crate::asks::{asks, ordered, Ask};
// Watch links carry control wishes (`Link::control`); sent from here as the watch socket's frames.
use crate::graphics::picture::decode_png;
use crate::net::connection::{ControlWish, Link, LinkEvent};
use crate::net::sessions::Sessions;

/// How long the watch stream's WebSocket handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the list of sessions is asked while waiting for one.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How often the list of sessions is asked for who asks for a person, all the time watch mode
/// runs: a person hears of an ask elsewhere within this (the watched session's own ask comes with
/// its frames, at once).
const ASKS_INTERVAL: Duration = Duration::from_secs(1);

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Follow `session`, or the first live session (waiting for one) when None; then, when it ends,
/// the next one. Events arrive like a controlled session's replies.
pub fn watch(server: String, token: Option<String>, session: Option<String>) -> Link {
    let (requests, mut request_rx) = mpsc::channel::<Request>(32);
    let (control, mut control_rx) = mpsc::channel::<ControlWish>(4);
    let (event_tx, events) = mpsc::channel::<LinkEvent>(32);
    tokio::spawn(async move {
        let send = |event: LinkEvent| {
            let event_tx = event_tx.clone();
            async move { event_tx.send(event).await.is_ok() }
        };
        let sessions = match Sessions::new(&server, token.clone()) {
            Ok(sessions) => sessions,
            Err(err) => {
                send(LinkEvent::Msg(Msg::Disconnected(err.to_string()))).await;
                return;
            }
        };
        tokio::spawn(poll_asks(sessions.clone(), event_tx.clone()));
        let mut target = session;
        let mut ended: Option<String> = None;
        loop {
            let id = match target.take() {
                Some(id) => id,
                None => {
                    if !send(LinkEvent::Msg(Msg::WaitingForSession(server.clone()))).await {
                        return;
                    }
                    match next_live_session(&sessions, ended.as_deref(), &event_tx).await {
                        Some(id) => id,
                        None => return,
                    }
                }
            };
            if !send(LinkEvent::Msg(Msg::Following(id.clone()))).await {
                return;
            }
            let mut socket = match open(&server, token.as_deref(), &id).await {
                Ok(socket) => socket,
                Err(reason) => {
                    send(LinkEvent::Msg(Msg::Disconnected(reason))).await;
                    return;
                }
            };
            if !send(LinkEvent::Msg(Msg::Connected)).await {
                return;
            }
            match follow(&mut socket, &event_tx, &mut request_rx, &mut control_rx).await {
                Followed::SessionEnded => {
                    if !send(LinkEvent::Msg(Msg::WatchedEnded(id.clone()))).await {
                        return;
                    }
                    ended = Some(id);
                }
                Followed::Failed(reason) => {
                    send(LinkEvent::Msg(Msg::Disconnected(reason))).await;
                    return;
                }
                Followed::UiGone => return,
            }
        }
    });
    Link {
        requests,
        events,
        control: Some(control),
    }
}

/// Tell the UI who asks for a person, each time that changes, until the UI goes away. A server
/// that does not answer (or has no `/sessions`) is asked again later: the asks are a help, the
/// watching goes on without them.
async fn poll_asks(sessions: Sessions, events: mpsc::Sender<LinkEvent>) {
    let mut told: Option<Vec<Ask>> = None;
    while !events.is_closed() {
        if let Ok(listed) = sessions.list().await {
            let now = asks(&listed);
            if told.as_ref() != Some(&now) {
                told = Some(now.clone());
                if events.send(LinkEvent::Msg(Msg::Asks(now))).await.is_err() {
                    return;
                }
            }
        }
        tokio::time::sleep(ASKS_INTERVAL).await;
    }
}

/// The first live session other than `ended`, one asking for a person first (`asks::ordered`),
/// asked for every `POLL_INTERVAL` (None: the UI went away). A server that does not answer is
/// asked again: it may be starting.
async fn next_live_session(
    sessions: &Sessions,
    ended: Option<&str>,
    events: &mpsc::Sender<LinkEvent>,
) -> Option<String> {
    loop {
        if events.is_closed() {
            return None;
        }
        if let Ok(list) = sessions.list().await {
            let next = ordered(&list)
                .into_iter()
                .find(|id| Some(id.as_str()) != ended);
            if next.is_some() {
                return next;
            }
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

async fn open(server: &str, token: Option<&str>, session: &str) -> Result<Socket, String> {
    let url = format!(
        "{}/sessions/{session}/watch",
        server.trim_end_matches('/').replacen("http", "ws", 1)
    );
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|err| err.to_string())?;
    if let Some(value) = token.and_then(|t| format!("Bearer {t}").parse().ok()) {
        request.headers_mut().insert("authorization", value);
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(100 << 20))
        .max_frame_size(Some(100 << 20));
    // A server that accepts the connection and then says nothing must not hold the UI.
    let connect = tokio_tungstenite::connect_async_with_config(request, Some(config), false);
    match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err(format!("{url}: no answer within {CONNECT_TIMEOUT:?}")),
    }
}

enum Followed {
    SessionEnded,
    Failed(String),
    UiGone,
}

/// Relay one session's stream to the UI, and the person's control wishes and steps to the server.
async fn follow(
    socket: &mut Socket,
    events: &mpsc::Sender<LinkEvent>,
    requests: &mut mpsc::Receiver<Request>,
    control: &mut mpsc::Receiver<ControlWish>,
) -> Followed {
    let send = |event: LinkEvent| async move { events.send(event).await.is_ok() };
    // The name of the secret the person just sent, until the event of its step comes back.
    let mut secret: Option<String> = None;
    loop {
        let outgoing = tokio::select! {
            message = socket.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None => return Followed::SessionEnded,
                    Some(Err(err)) => return Followed::Failed(err.to_string()),
                    Some(Ok(_)) => continue,
                };
                let Ok(frame) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if !relay(&frame, &send, &mut secret).await {
                    return Followed::UiGone;
                }
                if frame["type"] == "error" && frame["data"]["code"] == "SESSION_ERROR" {
                    let message = frame["data"]["message"].as_str().unwrap_or("error");
                    return Followed::Failed(message.to_string());
                }
                continue;
            }
            wish = control.recv() => match wish {
                Some(ControlWish::Take(name)) => json!({"type": "take", "data": {"name": name}}),
                Some(ControlWish::Release(None)) => json!({"type": "release"}),
                // The answer to the agent's `request_human`; the server keeps it to one line.
                Some(ControlWish::Release(Some(note))) => {
                    json!({"type": "release", "data": {"note": note}})
                }
                None => return Followed::UiGone,
            },
            request = requests.recv() => match request {
                Some(Request::Step(action)) => {
                    json!({"type": "step", "data": action.to_value()})
                }
                // The server shows and records it redacted; the person's own recording keeps
                // `<secret:NAME>` (the echo of this step is recorded as the secret it was).
                Some(Request::Secret { name, action }) => {
                    secret = Some(name);
                    json!({"type": "step", "data": action.to_value(), "secret": true})
                }
                // The app never sends a reset on a watch link (the episode is the agent's).
                Some(_) => continue,
                None => return Followed::UiGone,
            },
        };
        if let Err(err) = socket
            .send(Message::Text(outgoing.to_string().into()))
            .await
        {
            return Followed::Failed(err.to_string());
        }
    }
}

/// Turn one frame of the watch stream into what the UI gets (false: the UI is gone). `secret`:
/// the name of the secret the person just typed, until its step's event comes.
async fn relay<F, Fut>(frame: &Value, send: &F, secret: &mut Option<String>) -> bool
where
    F: Fn(LinkEvent) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let data = &frame["data"];
    match frame["type"].as_str() {
        Some("error") => {
            let code = data["code"].as_str().unwrap_or("ERROR").to_string();
            let message = data["message"].as_str().unwrap_or("error").to_string();
            send(LinkEvent::Msg(Msg::ServerError { code, message })).await
        }
        // The answer to the person's own step: its frame comes as an event like any other.
        Some("observation") => send(LinkEvent::Msg(Msg::Stepped)).await,
        Some("control") => {
            let yours = data["yours"].as_bool().unwrap_or(false);
            let holder = data["name"].as_str().map(str::to_string);
            send(LinkEvent::Msg(Msg::Control {
                holder,
                yours: Some(yours),
            }))
            .await
        }
        Some("event") if data["kind"] == "control" => {
            let holder = (data["control"]["actor"] == "human").then(|| {
                data["control"]["name"]
                    .as_str()
                    .unwrap_or("a person")
                    .to_string()
            });
            send(LinkEvent::Msg(Msg::Control {
                holder,
                yours: None,
            }))
            .await
                && send(LinkEvent::Msg(Msg::Asking(asking(data)))).await
        }
        Some("event") => event(data, send, secret).await,
        _ => true,
    }
}

/// A reset or step of the watched session, by whichever actor.
async fn event<F, Fut>(data: &Value, send: &F, secret: &mut Option<String>) -> bool
where
    F: Fn(LinkEvent) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let Ok(result) = parse_step_result(&data["result"]) else {
        return true;
    };
    let action = BrowserAction::from_value(&data["action"]).ok();
    let latency_ms = data["latency_ms"].as_f64().unwrap_or_default();
    let step = data["step"].as_u64().unwrap_or_default();
    let actor = serde_json::from_value::<Actor>(data["actor"].clone()).ok();
    let ours = actor == Some(Actor::Human) && data["kind"] == "step";
    let request = match &action {
        Some(action) if ours && secret.is_some() => Request::Secret {
            name: secret.take().unwrap_or_default(),
            action: action.clone(),
        },
        Some(action) => Request::Step(action.clone()),
        None => Request::Reset(result.observation.url.clone()),
    };
    let holder = (data["control"]["actor"] == "human").then(|| {
        data["control"]["name"]
            .as_str()
            .unwrap_or("a person")
            .to_string()
    });
    let picture = picture(&result, action.as_ref()).await;
    let observed = Msg::Observation(Observed {
        url: result.observation.url.clone(),
        title: result
            .observation
            .metadata
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        error: result.observation.error.clone(),
        done: result.done,
        step,
        latency: Duration::from_secs_f64(latency_ms / 1000.0),
        reward: result.reward,
        verdict: None,
        max_steps: None,
    });
    let reply = LinkEvent::Reply {
        request,
        actor,
        result,
        latency_ms,
        episode_id: data["episode_id"].as_str().map(str::to_string),
    };
    send(reply).await
        && send(LinkEvent::Picture {
            image: picture.as_ref().map(|(image, _)| image.clone()),
            png: picture.and_then(|(_, png)| png),
            step,
        })
        .await
        && send(LinkEvent::Msg(observed)).await
        && send(LinkEvent::Msg(Msg::Control {
            holder,
            yours: None,
        }))
        .await
        && send(LinkEvent::Msg(Msg::Asking(asking(data)))).await
}

/// The ask of the watched session in an event's control view (None: its agent asks nothing).
fn asking(data: &Value) -> Option<Ask> {
    Ask::of(
        data["session"].as_str().unwrap_or_default(),
        &data["control"],
    )
}

/// The frame with the action drawn on it; the PNG too when nothing was drawn.
async fn picture(
    result: &StepResult,
    action: Option<&BrowserAction>,
) -> Option<(Arc<image::DynamicImage>, Option<Arc<Vec<u8>>>)> {
    if result.observation.screenshot.is_empty() {
        return None;
    }
    let screenshot = result.observation.screenshot.clone();
    let action = action.map(BrowserAction::to_value);
    tokio::task::spawn_blocking(move || {
        let (frame, png) = decode_png(&screenshot).ok()?;
        Some(match action {
            Some(action) => (
                Arc::new(crate::offline::viewer::mark(&frame, &action)),
                None,
            ),
            None => (Arc::new(frame), Some(Arc::new(png))),
        })
    })
    .await
    .ok()
    .flatten()
}
