//! `--campaign DIR` (`BROWSER_CAMPAIGN`): the server hands a team's people their next task,
//! records what they demonstrate into the campaign's folder, and hands a second person each
//! demonstration to review. The rules (who gets what, when a lease ends, what counts) are
//! `browserenv::campaign`'s; this module is their place in the server: the routes, and what a
//! session tells the campaign (a lease's episode began, stepped, ended, or its session closed).
//!
//! A person's session is an ordinary session (`/ws`) whose `reset` names the lease
//! (`{"campaign_lease": "<lease id>"}`): the lease's task starts, its steps are recorded with
//! `actor: "human"` and the person's name into `DIR/recording`, and each step keeps the lease.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use browserenv::campaign::{Campaign, CampaignError, Demonstration, Lease, OwnMark};
use browserenv::tasks::Task;
use browserenv::trajectory::{
    read, read_frame, Actor, AppendLog, EpisodeRecord, RecordEvent, Recorder, RecorderHandle,
    StepRecord, TrajectoryWriter, REVIEW_FILE, REVIEW_SCHEMA,
};

use crate::api_error::{ApiError, ErrorBody};

/// The reset keyword that makes a session a person's work on a leased task.
pub const LEASE_KWARG: &str = "campaign_lease";

/// The most review lines one review may bring (a mark and a note per step of the longest episode
/// a task allows, and the episode's fields), and the most bytes of each and of all.
const MAX_REVIEW_EVENTS: usize = 1000;
const MAX_REVIEW_EVENT_BYTES: usize = 4096;
const MAX_REVIEW_BYTES: usize = 256 * 1024;

/// A running campaign: its state behind a lock (every operation is short: a lookup, or a line
/// appended), and the inbox of the recorder writing its demonstrations.
pub struct Hub {
    campaign: Mutex<Campaign>,
    recorder: std::sync::mpsc::Sender<RecordEvent>,
    /// Every episode id the campaign's recording holds or a session was given: a campaign
    /// episode's id is new, so no two episodes (and no two people) ever share one.
    episode_ids: Mutex<BTreeSet<String>>,
    /// One review written at a time: its lines go to the recording's review log outside the
    /// campaign's lock, and the verdict after them.
    reviews: tokio::sync::Mutex<()>,
}

/// What a session remembers of the lease it works under.
#[derive(Debug, Clone)]
pub struct Seat {
    pub lease: String,
    pub person: String,
    pub task: String,
}

/// A seat, and the reset's keywords that start its task.
pub type Seated = (Seat, Map<String, Value>);

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding it leaves a state whose log is still the truth: go on with it.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hub {
    /// Open the campaign in `dir` (its settings, tasks and log) and start the recorder of its
    /// demonstrations in `DIR/recording`.
    pub fn open(dir: &Path, redact: bool) -> anyhow::Result<(Hub, RecorderHandle)> {
        use anyhow::Context;
        let (campaign, problems) = Campaign::open(dir).map_err(anyhow::Error::msg)?;
        for problem in &problems {
            tracing::warn!("campaign log: {problem} (the line is skipped)");
        }
        let recording = campaign.recording_dir();
        let (writer, recovery) = TrajectoryWriter::open(&recording)
            .with_context(|| format!("cannot record into {}", recording.display()))?;
        if !recovery.incomplete.is_empty() {
            tracing::warn!(
                "{}: marked {} episode(s) left open by a stopped server as incomplete",
                recording.display(),
                recovery.incomplete.len()
            );
        }
        let recorded =
            read(&recording).with_context(|| format!("cannot read {}", recording.display()))?;
        let episode_ids = recorded
            .steps
            .iter()
            .map(|s| s.episode_id.clone())
            .chain(recorded.episodes.iter().map(|e| e.episode_id.clone()))
            .chain(
                campaign
                    .demonstrations()
                    .iter()
                    .map(|d| d.episode_id.clone()),
            )
            .collect();
        let recorder = Recorder::new(writer, Actor::Human).redacting(redact);
        let handle = RecorderHandle::spawn(recorder, |err| {
            tracing::error!("recording the campaign failed: {err}")
        })?;
        tracing::info!(
            "campaign {}: {} tasks, {} demonstrations so far",
            dir.display(),
            campaign.tasks.tasks.len(),
            campaign.demonstrations().len()
        );
        Ok((
            Hub {
                campaign: Mutex::new(campaign),
                recorder: handle.sender(),
                episode_ids: Mutex::new(episode_ids),
                reviews: tokio::sync::Mutex::new(()),
            },
            handle,
        ))
    }

    fn state(&self) -> MutexGuard<'_, Campaign> {
        locked(&self.campaign)
    }

    pub fn recorder(&self) -> std::sync::mpsc::Sender<RecordEvent> {
        self.recorder.clone()
    }

    /// A reset of `session` naming a lease: the seat it gives the session, and the reset's
    /// keywords with the lease's task (a `task_id` of its own must be the same task) and an
    /// episode id never used in this campaign (the client's, if it is a new UUID).
    pub fn seat(
        &self,
        kwargs: &Map<String, Value>,
        session: &str,
    ) -> Result<Option<Seated>, String> {
        let Some(value) = kwargs.get(LEASE_KWARG) else {
            return Ok(None);
        };
        let Some(id) = value.as_str() else {
            return Err(format!(
                "{LEASE_KWARG} is a string (a lease from POST /campaign/lease)"
            ));
        };
        let lease = self.state().lease(id).cloned();
        let Some(lease) = lease else {
            return Err(CampaignError::NoLease(id.to_string()).to_string());
        };
        if let Some(task) = kwargs.get("task_id").and_then(Value::as_str) {
            if task != lease.task {
                return Err(format!(
                    "{id} is a lease on task {:?}, not {task:?}",
                    lease.task
                ));
            }
        }
        let mut kwargs = kwargs.clone();
        kwargs.remove(LEASE_KWARG);
        kwargs.insert("task_id".into(), lease.task.clone().into());
        let episode = match kwargs.get("episode_id") {
            None | Some(Value::Null) => uuid::Uuid::new_v4().to_string(),
            Some(Value::String(asked)) if uuid::Uuid::parse_str(asked).is_ok() => asked.clone(),
            Some(_) => {
                return Err(
                    "a campaign episode's episode_id is a new UUID (or none: the \
                            server makes one)"
                        .into(),
                )
            }
        };
        if !locked(&self.episode_ids).insert(episode.clone()) {
            return Err(format!(
                "episode_id {episode} is used already: a campaign episode's id is new"
            ));
        }
        kwargs.insert("episode_id".into(), episode.into());
        let lease = self
            .state()
            .start(id, session, Instant::now())
            .map_err(|e| e.to_string())?;
        Ok(Some((
            Seat {
                lease: lease.id,
                person: lease.person,
                task: lease.task,
            },
            kwargs,
        )))
    }

    /// A step under the lease: the person is still at work. False when the lease has ended.
    pub fn stepped(&self, seat: &Seat, session: &str) -> bool {
        self.state()
            .touch(&seat.lease, session, Instant::now())
            .is_ok()
    }

    /// The seat's episode ended; it waits for the person's mark (`POST /campaign/complete`).
    pub fn episode_ended(&self, seat: &Seat, session: &str, episode_id: &str, check: Option<bool>) {
        if let Err(err) = self
            .state()
            .episode_ended(&seat.lease, session, episode_id, check)
        {
            tracing::info!("campaign: {}'s episode {episode_id}: {err}", seat.person);
        }
    }

    /// The seat's session closed, or started something else: an unsaved lease goes back.
    pub fn leave(&self, seat: &Seat, session: &str) {
        self.state().release(&seat.lease, session);
    }
}

/// The routes; without a campaign they answer 404 `NO_CAMPAIGN`.
pub fn routes<S: Clone + Send + Sync + 'static>(hub: Option<Arc<Hub>>) -> OpenApiRouter<S> {
    OpenApiRouter::new()
        .routes(routes!(progress))
        .routes(routes!(lease))
        .routes(routes!(skip))
        .routes(routes!(complete))
        .routes(routes!(next_review))
        .routes(routes!(review))
        .with_state(hub)
}

type HubState = State<Option<Arc<Hub>>>;

fn hub(state: &Option<Arc<Hub>>) -> Result<&Arc<Hub>, ApiError> {
    state.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NO_CAMPAIGN",
            "this server runs no campaign (start it with --campaign DIR)",
        )
    })
}

fn refused(err: CampaignError) -> ApiError {
    let (status, code) = match &err {
        CampaignError::NoLease(_) => (StatusCode::CONFLICT, "LEASE_ENDED"),
        CampaignError::NotEnded(_) => (StatusCode::CONFLICT, "EPISODE_NOT_ENDED"),
        CampaignError::NoDemonstration(_) => (StatusCode::NOT_FOUND, "DEMONSTRATION_NOT_FOUND"),
        CampaignError::OwnDemonstration(_) => (StatusCode::FORBIDDEN, "OWN_DEMONSTRATION"),
        CampaignError::BadName => (StatusCode::UNPROCESSABLE_ENTITY, "INVALID_NAME"),
        CampaignError::NotYours(_) => (StatusCode::FORBIDDEN, "NOT_YOUR_LEASE"),
        CampaignError::OtherSession(_) => (StatusCode::CONFLICT, "LEASE_IN_ANOTHER_SESSION"),
        CampaignError::NotInHand(_) => (StatusCode::CONFLICT, "NOT_IN_YOUR_HANDS"),
        CampaignError::Reviewed(_) => (StatusCode::CONFLICT, "REVIEWED_ALREADY"),
        CampaignError::Duplicate(_) => (StatusCode::CONFLICT, "DUPLICATE_EPISODE"),
        CampaignError::TooManyPeople => (StatusCode::CONFLICT, "TOO_MANY_PEOPLE"),
        CampaignError::Log(_) => (StatusCode::INTERNAL_SERVER_ERROR, "CAMPAIGN_LOG_FAILED"),
    };
    ApiError::new(status, code, err.to_string())
}

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_REQUEST", detail)
}

/// A JSON body of type `T`, or a 422 that says what is wrong with it.
fn body<T: serde::de::DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|err| invalid(format!("the body does not validate: {err}")))
}

#[utoipa::path(
    get,
    path = "/campaign",
    tag = "campaign",
    summary = "Where the campaign stands",
    description = "Per task: wanted, done (demonstrations nobody rejected), leased now, rejected, \
        skipped; per person: demonstrations, median seconds per demonstration, the share whose \
        task check passed, rejected, skips, reviews, the task in hand; and the totals (a task \
        that wants none is left out of them).",
    responses(
        (status = 200, description = "the progress", body = Object),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
    ),
)]
async fn progress(State(state): HubState) -> Result<Json<Value>, ApiError> {
    let progress = hub(&state)?.state().progress(Instant::now());
    Ok(Json(serde_json::to_value(progress).unwrap_or_default()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameRequest {
    name: String,
}

/// A lease and its task, as `POST /campaign/lease` answers.
#[derive(Serialize)]
struct LeaseReply<'a> {
    lease: Option<&'a Lease>,
    task: Option<&'a Task>,
}

#[utoipa::path(
    post,
    path = "/campaign/lease",
    tag = "campaign",
    summary = "The next task for a person",
    description = "`{\"name\": \"ana\"}` (names are compared without case): the first task, in \
        the task file's order, that still wants demonstrations and that this person has neither \
        demonstrated nor skipped, leased to them (the lease they already hold, if any). Start it \
        with `reset` and `{\"campaign_lease\": lease.id}`; the first session to do so holds it. \
        `{\"lease\": null, \"task\": null}` when nothing is left for them. A lease ends when its \
        demonstration is saved or skipped, when its session closes, when no session starts it \
        within 60 s, or when it sees no step for the campaign's `lease_idle_seconds`.",
    request_body(content = Object, example = json!({"name": "ana"})),
    responses(
        (status = 200, description = "`{\"lease\": {\"id\", \"task\", \"person\"}, \"task\": {...}}`", body = Object),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
        (status = 409, description = "`TOO_MANY_PEOPLE`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`, `INVALID_NAME`", body = ErrorBody),
    ),
)]
async fn lease(State(state): HubState, bytes: Bytes) -> Result<Json<Value>, ApiError> {
    let hub = hub(&state)?;
    let request: NameRequest = body(&bytes)?;
    let mut campaign = hub.state();
    let lease = campaign
        .next_task(&request.name, Instant::now())
        .map_err(refused)?;
    let task = lease.as_ref().and_then(|l| campaign.tasks.get(&l.task));
    let reply = LeaseReply {
        lease: lease.as_ref(),
        task,
    };
    Ok(Json(serde_json::to_value(reply).unwrap_or_default()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkipRequest {
    lease: String,
    name: String,
    reason: String,
}

#[utoipa::path(
    post,
    path = "/campaign/skip",
    tag = "campaign",
    summary = "A person will not do their leased task",
    description = "`{\"lease\", \"name\", \"reason\"}` (the lease's own person): the reason \
        (500 characters, control characters left out) is kept in the campaign's log; this person \
        is not handed the task again, others are.",
    request_body(content = Object, example = json!({"lease": "5c1e0d62-…", "name": "ana", "reason": "the page is down"})),
    responses(
        (status = 200, description = "`{\"skipped\": task}`", body = Object),
        (status = 403, description = "`NOT_YOUR_LEASE`", body = ErrorBody),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
        (status = 409, description = "`LEASE_ENDED`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`", body = ErrorBody),
    ),
)]
async fn skip(State(state): HubState, bytes: Bytes) -> Result<Json<Value>, ApiError> {
    let hub = hub(&state)?;
    let request: SkipRequest = body(&bytes)?;
    let task = hub
        .state()
        .skip(&request.lease, &request.name, &request.reason)
        .map_err(refused)?;
    Ok(Json(serde_json::json!({ "skipped": task })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompleteRequest {
    lease: String,
    name: String,
    mark: OwnMark,
}

#[utoipa::path(
    post,
    path = "/campaign/complete",
    tag = "campaign",
    summary = "Save a leased task's demonstration with the person's own mark",
    description = "`{\"lease\", \"name\", \"mark\": \"pass\" | \"fail\"}` (the lease's own \
        person) once the episode its session started last under the lease has ended: that episode \
        (already in the campaign's recording) counts for its task, with the task check's result \
        and the person's mark, and the lease ends.",
    request_body(content = Object, example = json!({"lease": "5c1e0d62-…", "name": "ana", "mark": "pass"})),
    responses(
        (status = 200, description = "the demonstration: episode_id, task, person, seconds, check, mark", body = Object),
        (status = 403, description = "`NOT_YOUR_LEASE`", body = ErrorBody),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
        (status = 409, description = "`LEASE_ENDED`, `EPISODE_NOT_ENDED`, `DUPLICATE_EPISODE`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`", body = ErrorBody),
    ),
)]
async fn complete(State(state): HubState, bytes: Bytes) -> Result<Json<Value>, ApiError> {
    let hub = hub(&state)?;
    let request: CompleteRequest = body(&bytes)?;
    let demonstration = hub
        .state()
        .complete(&request.lease, &request.name, request.mark, Instant::now())
        .map_err(refused)?;
    Ok(Json(
        serde_json::to_value(demonstration).unwrap_or_default(),
    ))
}

/// A demonstration to review, with everything the terminal UI's review mode shows.
#[derive(Serialize)]
struct ReviewItem {
    demonstration: Demonstration,
    task: Option<Task>,
    episode: Option<EpisodeRecord>,
    steps: Vec<StepRecord>,
    /// Each screenshot the steps name, base64 PNG, by its name in the recording.
    frames: BTreeMap<String, String>,
    /// What could not be read (a screenshot missing or refused): the rest is shown.
    problems: Vec<String>,
}

/// The episode of `demonstration` as the recording in `dir` holds it.
fn review_item(
    dir: &Path,
    demonstration: Demonstration,
    task: Option<Task>,
) -> std::io::Result<ReviewItem> {
    let recording = read(dir)?;
    let id = &demonstration.episode_id;
    let steps: Vec<StepRecord> = recording.episode_steps(id).into_iter().cloned().collect();
    let mut frames = BTreeMap::new();
    let mut problems = Vec::new();
    for step in &steps {
        for name in [&step.file_name, &step.next_file_name] {
            if name.is_empty() || frames.contains_key(name) {
                continue;
            }
            match read_frame(dir, name) {
                Ok(png) => {
                    let png = base64::engine::general_purpose::STANDARD.encode(png);
                    frames.insert(name.clone(), png);
                }
                Err(err) => problems.push(format!("step {}: {err}", step.step)),
            }
        }
    }
    Ok(ReviewItem {
        episode: recording
            .episodes
            .into_iter()
            .rev()
            .find(|e| &e.episode_id == id),
        demonstration,
        task,
        steps,
        frames,
        problems,
    })
}

#[utoipa::path(
    post,
    path = "/campaign/review/next",
    tag = "campaign",
    summary = "The next demonstration for a reviewer",
    description = "`{\"name\": \"bo\"}`: the oldest demonstration without a review that is not \
        this person's own and not in another reviewer's hands, now in theirs (the one they hold, if \
        any), with its task, its episode line, its steps, their screenshots and what of them could \
        not be read. `null` when none is waiting for them.",
    request_body(content = Object, example = json!({"name": "bo"})),
    responses(
        (status = 200, description = "`{demonstration, task, episode, steps, frames, problems}` or null", body = Object),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`, `INVALID_NAME`", body = ErrorBody),
    ),
)]
async fn next_review(State(state): HubState, bytes: Bytes) -> Result<Json<Value>, ApiError> {
    let hub = hub(&state)?.clone();
    let request: NameRequest = body(&bytes)?;
    let (demonstration, task, dir) = {
        let mut campaign = hub.state();
        let Some(demonstration) = campaign
            .next_review(&request.name, Instant::now())
            .map_err(refused)?
        else {
            return Ok(Json(Value::Null));
        };
        let task = campaign.tasks.get(&demonstration.task).cloned();
        (demonstration, task, campaign.recording_dir())
    };
    let episode = demonstration.episode_id.clone();
    // Reading the recording and its screenshots is disk work: off the async workers.
    let item = tokio::task::spawn_blocking(move || review_item(&dir, demonstration, task)).await;
    match item {
        Ok(Ok(item)) => Ok(Json(serde_json::to_value(item).unwrap_or_default())),
        failed => {
            // Not shown, so not in their hands: the next ask tries again, or someone else.
            hub.state().put_back(&episode, &request.name);
            let why = match failed {
                Ok(Err(err)) => err.to_string(),
                Err(err) => err.to_string(),
                Ok(Ok(_)) => unreachable!("handled above"),
            };
            Err(ApiError::execution(format!(
                "cannot read the recording: {why}"
            )))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviewRequest {
    episode_id: String,
    name: String,
    accepted: bool,
    #[serde(default)]
    note: String,
    /// The review's lines (`review.jsonl`, schema `browserenv.review.v1`): step marks, notes,
    /// the episode's outcome and quality, kept beside the recording.
    #[serde(default)]
    events: Vec<Map<String, Value>>,
}

/// The review's lines as they are kept: each of this episode and of the review schema, at most
/// `MAX_REVIEW_EVENT_BYTES` each and `MAX_REVIEW_BYTES` in all, signed with the reviewer's name.
fn review_lines(
    episode_id: &str,
    reviewer: &str,
    events: Vec<Map<String, Value>>,
) -> Result<Vec<Map<String, Value>>, ApiError> {
    if events.len() > MAX_REVIEW_EVENTS {
        return Err(invalid(format!("at most {MAX_REVIEW_EVENTS} review lines")));
    }
    let mut total = 0;
    let mut lines = Vec::with_capacity(events.len());
    for (index, mut event) in events.into_iter().enumerate() {
        let schema = event.get("schema").and_then(Value::as_str);
        let episode = event.get("episode_id").and_then(Value::as_str);
        if schema != Some(REVIEW_SCHEMA) || episode != Some(episode_id) {
            return Err(invalid(format!(
                "events[{index}]: a review line of schema {REVIEW_SCHEMA:?} about episode \
                 {episode_id:?}"
            )));
        }
        event.insert("reviewer".into(), reviewer.into());
        let size = Value::Object(event.clone()).to_string().len();
        total += size;
        if size > MAX_REVIEW_EVENT_BYTES || total > MAX_REVIEW_BYTES {
            return Err(invalid(format!(
                "events[{index}]: a review line is at most {MAX_REVIEW_EVENT_BYTES} bytes, a \
                 review {MAX_REVIEW_BYTES}"
            )));
        }
        lines.push(event);
    }
    Ok(lines)
}

#[utoipa::path(
    post,
    path = "/campaign/review",
    tag = "campaign",
    summary = "A reviewer's verdict on a demonstration in their hands",
    description = "`{\"episode_id\", \"name\", \"accepted\", \"note\", \"events\"}` for a \
        demonstration this person was handed by `/campaign/review/next`, once: the review's lines \
        go to the campaign recording's `review.jsonl` (each of schema `browserenv.review.v1` and \
        this episode, 4 KiB each and 256 KiB in all; the reviewer is this name), the verdict to \
        the campaign's log. A demonstration not accepted stops counting: its task wants one more. \
        Nobody reviews their own.",
    request_body(content = Object, example = json!({"episode_id": "e-1", "name": "bo", "accepted": false, "note": "wrong item", "events": []})),
    responses(
        (status = 200, description = "`{\"reviewed\": episode_id, \"accepted\"}`", body = Object),
        (status = 403, description = "`OWN_DEMONSTRATION`", body = ErrorBody),
        (status = 404, description = "`NO_CAMPAIGN`, `DEMONSTRATION_NOT_FOUND`", body = ErrorBody),
        (status = 409, description = "`NOT_IN_YOUR_HANDS`, `REVIEWED_ALREADY`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`, `INVALID_NAME`", body = ErrorBody),
    ),
)]
async fn review(State(state): HubState, bytes: Bytes) -> Result<Json<Value>, ApiError> {
    let hub = hub(&state)?.clone();
    let request: ReviewRequest = body(&bytes)?;
    let _one_at_a_time = hub.reviews.lock().await;
    let (reviewer, dir) = {
        let campaign = hub.state();
        let reviewer = campaign
            .may_review(&request.episode_id, &request.name)
            .map_err(refused)?;
        (reviewer, campaign.recording_dir())
    };
    let lines = review_lines(&request.episode_id, &reviewer, request.events)?;
    if !lines.is_empty() {
        // One write and one fsync, outside the campaign's lock: the team goes on meanwhile.
        let path = dir.join(REVIEW_FILE);
        tokio::task::spawn_blocking(move || {
            AppendLog::open(&path).and_then(|mut log| log.append_all(&lines))
        })
        .await
        .map_err(|err| ApiError::execution(err.to_string()))?
        .map_err(|err| refused(CampaignError::Log(err.to_string())))?;
    }
    hub.state()
        .review(
            &request.episode_id,
            &request.name,
            request.accepted,
            &request.note,
        )
        .map_err(refused)?;
    Ok(Json(
        serde_json::json!({ "reviewed": request.episode_id, "accepted": request.accepted }),
    ))
}
