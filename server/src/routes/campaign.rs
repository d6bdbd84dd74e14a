//! The campaign's routes. Each acts for the person the request's token names (`caller.rs`); a
//! `name` in a body is only a check of that (another name is refused), never who acts. The
//! server's own token reads the progress only: campaign work is a person's.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use browserenv_collect::campaign::{person_name, CampaignError, Lease, OwnMark};
use browserenv_collect::tasks::ShownTask;
use browserenv_collect::trajectory::{AppendLog, REVIEW_FILE};

use crate::api_error::{ApiError, Code, ErrorBody};
use crate::campaign::review::{review_item, review_lines};
use crate::campaign::{refused, Hub};
use crate::operations::caller::Caller;

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

/// Who calls, as the token check found (`access::require_token`).
type Calling = Option<Extension<Caller>>;

fn hub(state: &Option<Arc<Hub>>) -> Result<&Arc<Hub>, ApiError> {
    state.as_ref().ok_or_else(|| {
        Code::NoCampaign.error("this server runs no campaign (start it with --campaign DIR)")
    })
}

/// The person a campaign request acts for: the one the token names. `named`, a body's `name`,
/// must be theirs.
fn acting_person(calling: &Calling, named: Option<&str>) -> Result<String, ApiError> {
    let Some(Extension(Caller::Person(person))) = calling else {
        return Err(Code::PersonRequired.error(
            "campaign work is a person's: send the token `browserenv-server campaign add-person` \
             made for you, not the server's",
        ));
    };
    if let Some(named) = named {
        let named = person_name(named).map_err(refused)?;
        if named != *person {
            return Err(Code::NotYourName.error(format!(
                "your token is {person}'s; a request cannot act as {named}"
            )));
        }
    }
    Ok(person.clone())
}

/// A JSON body of type `T` (none at all is `{}`), or a 422 that says what is wrong with it.
fn body<T: serde::de::DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    let bytes: &[u8] = if bytes.is_empty() { b"{}" } else { bytes };
    serde_json::from_slice(bytes)
        .map_err(|err| Code::InvalidRequest.error(format!("the body does not validate: {err}")))
}

/// A body that may name its person, who must be the token's.
trait Named {
    fn name(&self) -> Option<&str>;
}

/// A person's campaign request, as every route but the progress takes it, checked in this order:
/// the campaign (`NO_CAMPAIGN`), the body as a `T` (none is `{}`; `INVALID_REQUEST`), the person
/// the token names (`PERSON_REQUIRED`; the body's `name` must be theirs, `NOT_YOUR_NAME`).
struct PersonsRequest<T> {
    hub: Arc<Hub>,
    person: String,
    request: T,
}

impl<T: serde::de::DeserializeOwned + Named> FromRequest<Option<Arc<Hub>>> for PersonsRequest<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &Option<Arc<Hub>>) -> Result<Self, Response> {
        let calling: Calling = request.extensions().get::<Caller>().cloned().map(Extension);
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let checked = || {
            let hub = hub(state)?.clone();
            let request: T = body(&bytes)?;
            let person = acting_person(&calling, request.name())?;
            Ok::<_, ApiError>(PersonsRequest {
                hub,
                person,
                request,
            })
        };
        checked().map_err(IntoResponse::into_response)
    }
}

#[utoipa::path(
    get,
    path = "/campaign",
    tag = "campaign",
    summary = "Where the campaign stands",
    description = "Per task: wanted, done (demonstrations nobody rejected), leased now, rejected, \
        skipped; per person: demonstrations, median seconds per demonstration, the share whose \
        task check passed, rejected, skips, reviews, the task in hand; and the totals (a task \
        that wants none is left out of them). The server's token and every person's read it.",
    responses(
        (status = 200, description = "the progress", body = Object),
        (status = 401, description = "`UNAUTHORIZED`", body = ErrorBody),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
    ),
)]
async fn progress(State(state): HubState) -> Result<Json<Value>, ApiError> {
    let progress = hub(&state)?.with(|campaign| campaign.progress());
    Ok(Json(serde_json::to_value(progress).unwrap_or_default()))
}

/// A body that may name its person, as a check.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameRequest {
    #[serde(default)]
    name: Option<String>,
}

/// `POST /campaign/lease`'s answer.
#[derive(Serialize)]
struct LeaseReply {
    /// Whose token asked.
    person: String,
    lease: Option<Lease>,
    /// The task as it may leave the server: never what its check expects.
    task: Option<ShownTask>,
}

#[utoipa::path(
    post,
    path = "/campaign/lease",
    tag = "campaign",
    summary = "The next task for the person whose token asks",
    description = "With a person's token (a `{\"name\"}` in the body must be theirs): the first \
        task, in the task file's order, that still wants demonstrations and that this person has \
        neither demonstrated nor skipped, leased to them (the lease they already hold, if any), \
        with the task's id, category, instruction, start URL, step limit and the names of its \
        check's parts (never what they expect). Start it with `reset` and \
        `{\"campaign_lease\": lease.id}` on a `/ws` session opened with the same token; the first \
        such session holds it. `lease` and `task` are null when nothing is left for them. A lease \
        ends when its demonstration is saved or skipped, when its session closes, when no session \
        starts it within 60 s, or when it sees no step for the campaign's `lease_idle_seconds`.",
    request_body(content = Object, example = json!({})),
    responses(
        (status = 200, description = "`{\"person\", \"lease\": {\"id\", \"task\", \"person\"}, \"task\": {\"id\", \"category\", \"instruction\", \"start_url\", \"max_steps\", \"checks\"}}`", body = Object),
        (status = 401, description = "`UNAUTHORIZED`", body = ErrorBody),
        (status = 403, description = "`PERSON_REQUIRED`, `NOT_YOUR_NAME`", body = ErrorBody),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
        (status = 409, description = "`TOO_MANY_PEOPLE`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`, `INVALID_NAME`", body = ErrorBody),
    ),
)]
async fn lease(
    PersonsRequest { hub, person, .. }: PersonsRequest<NameRequest>,
) -> Result<Json<Value>, ApiError> {
    let (lease, task) = hub
        .with(|campaign| {
            let lease = campaign.next_task(&person)?;
            let task = lease
                .as_ref()
                .and_then(|l| campaign.tasks.get(&l.task))
                .map(|task| task.shown(hub.base_url.as_ref()));
            Ok::<_, CampaignError>((lease, task))
        })
        .map_err(refused)?;
    let reply = LeaseReply {
        person,
        lease,
        task,
    };
    Ok(Json(serde_json::to_value(reply).unwrap_or_default()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkipRequest {
    lease: String,
    #[serde(default)]
    name: Option<String>,
    reason: String,
}

#[utoipa::path(
    post,
    path = "/campaign/skip",
    tag = "campaign",
    summary = "The person whose token asks will not do their leased task",
    description = "`{\"lease\", \"reason\"}` with the lease's own person's token: the reason \
        (500 characters, control characters left out) is kept in the campaign's log; this person \
        is not handed the task again, others are.",
    request_body(content = Object, example = json!({"lease": "5c1e0d62-…", "reason": "the page is down"})),
    responses(
        (status = 200, description = "`{\"skipped\": task}`", body = Object),
        (status = 401, description = "`UNAUTHORIZED`", body = ErrorBody),
        (status = 403, description = "`PERSON_REQUIRED`, `NOT_YOUR_NAME`, `NOT_YOUR_LEASE`", body = ErrorBody),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
        (status = 409, description = "`LEASE_ENDED`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`, `INVALID_NAME`", body = ErrorBody),
        (status = 500, description = "`CAMPAIGN_LOG_FAILED`", body = ErrorBody),
    ),
)]
async fn skip(
    PersonsRequest {
        hub,
        person,
        request,
    }: PersonsRequest<SkipRequest>,
) -> Result<Json<Value>, ApiError> {
    let task = hub
        .with(|campaign| campaign.skip(&request.lease, &person, &request.reason))
        .map_err(refused)?;
    Ok(Json(json!({ "skipped": task })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompleteRequest {
    lease: String,
    #[serde(default)]
    name: Option<String>,
    mark: OwnMark,
}

#[utoipa::path(
    post,
    path = "/campaign/complete",
    tag = "campaign",
    summary = "Save a leased task's demonstration with the person's own mark",
    description = "`{\"lease\", \"mark\": \"pass\" | \"fail\"}` with the lease's own person's \
        token, once the episode its session started last under the lease has ended: that episode \
        counts for its task, with the task check's result (passed or not) and the person's mark, \
        and the lease ends. Answered once the recorder confirms the episode is on the campaign's \
        disk, its last step included (at most 10 s: `recorded` is false, and `warning` says so, \
        when it did not).",
    request_body(content = Object, example = json!({"lease": "5c1e0d62-…", "mark": "pass"})),
    responses(
        (status = 200, description = "the demonstration: episode_id, task, person, seconds, check, mark; and recorded", body = Object),
        (status = 401, description = "`UNAUTHORIZED`", body = ErrorBody),
        (status = 403, description = "`PERSON_REQUIRED`, `NOT_YOUR_NAME`, `NOT_YOUR_LEASE`", body = ErrorBody),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
        (status = 409, description = "`LEASE_ENDED`, `EPISODE_NOT_ENDED`, `DUPLICATE_EPISODE`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`, `INVALID_NAME`", body = ErrorBody),
        (status = 500, description = "`CAMPAIGN_LOG_FAILED`", body = ErrorBody),
    ),
)]
async fn complete(
    PersonsRequest {
        hub,
        person,
        request,
    }: PersonsRequest<CompleteRequest>,
) -> Result<Json<Value>, ApiError> {
    let saved = hub
        .complete(&request.lease, &person, request.mark)
        .await
        .map_err(refused)?;
    let mut reply = serde_json::to_value(saved.demonstration).unwrap_or_default();
    reply["recorded"] = saved.recorded.into();
    if !saved.recorded {
        reply["warning"] = "the recorder did not confirm within 10 s that the episode is on disk \
                            whole: its reviewer may find it incomplete"
            .into();
    }
    Ok(Json(reply))
}

#[utoipa::path(
    post,
    path = "/campaign/review/next",
    tag = "campaign",
    summary = "The next demonstration for the reviewer whose token asks",
    description = "With a person's token: the oldest demonstration without a review that is not \
        this person's own and not in another reviewer's hands, now in theirs (the one they hold, \
        if any): `reviewer`, the demonstration, its task (as the lease gives it: never what its \
        check expects), its episode line (its verdict says passed and which parts failed, without \
        the details), its steps, their screenshots and what of them could not be read. `null` \
        when none is waiting for them.",
    request_body(content = Object, example = json!({})),
    responses(
        (status = 200, description = "`{reviewer, demonstration, task, episode, steps, frames, problems}` or null", body = Object),
        (status = 400, description = "`EXECUTION_ERROR`: the recording could not be read", body = ErrorBody),
        (status = 401, description = "`UNAUTHORIZED`", body = ErrorBody),
        (status = 403, description = "`PERSON_REQUIRED`, `NOT_YOUR_NAME`", body = ErrorBody),
        (status = 404, description = "`NO_CAMPAIGN`", body = ErrorBody),
        (status = 409, description = "`TOO_MANY_PEOPLE`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`, `INVALID_NAME`", body = ErrorBody),
    ),
)]
async fn next_review(
    PersonsRequest { hub, person, .. }: PersonsRequest<NameRequest>,
) -> Result<Json<Value>, ApiError> {
    let next = hub
        .with(|campaign| {
            let Some(demonstration) = campaign.next_review(&person)? else {
                return Ok(None);
            };
            let task = campaign
                .tasks
                .get(&demonstration.task)
                .map(|task| task.shown(hub.base_url.as_ref()));
            Ok::<_, CampaignError>(Some((demonstration, task, campaign.recording_dir())))
        })
        .map_err(refused)?;
    let Some((demonstration, task, dir)) = next else {
        return Ok(Json(Value::Null));
    };
    let episode = demonstration.episode_id.clone();
    // Reading the recording and its screenshots is disk work: off the async workers.
    let reviewer = person.clone();
    let item =
        tokio::task::spawn_blocking(move || review_item(&dir, reviewer, demonstration, task)).await;
    match item {
        Ok(Ok(item)) => Ok(Json(serde_json::to_value(item).unwrap_or_default())),
        failed => {
            // Not shown, so not in their hands: the next ask tries again, or someone else.
            hub.with(|campaign| campaign.put_back(&episode, &person));
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
    #[serde(default)]
    name: Option<String>,
    accepted: bool,
    #[serde(default)]
    note: String,
    /// The review's lines (`review.jsonl`, schema `browserenv.review.v1`): step marks, notes,
    /// the episode's outcome and quality, kept beside the recording.
    #[serde(default)]
    events: Vec<Map<String, Value>>,
}

impl Named for NameRequest {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

impl Named for SkipRequest {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

impl Named for CompleteRequest {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

impl Named for ReviewRequest {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

#[utoipa::path(
    post,
    path = "/campaign/review",
    tag = "campaign",
    summary = "A reviewer's verdict on a demonstration in their hands",
    description = "`{\"episode_id\", \"accepted\", \"note\", \"events\"}` with the token of the \
        person `/campaign/review/next` handed it to, once: the review's lines go to the campaign \
        recording's `review.jsonl` (each of schema `browserenv.review.v1` and this episode, 4 KiB \
        each and 256 KiB in all; the reviewer is this person), the verdict to the campaign's log. \
        A demonstration not accepted stops counting: its task wants one more. Nobody reviews \
        their own: a person is their token, whatever name a body gives.",
    request_body(content = Object, example = json!({"episode_id": "e-1", "accepted": false, "note": "wrong item", "events": []})),
    responses(
        (status = 200, description = "`{\"reviewed\": episode_id, \"accepted\"}`", body = Object),
        (status = 401, description = "`UNAUTHORIZED`", body = ErrorBody),
        (status = 403, description = "`PERSON_REQUIRED`, `NOT_YOUR_NAME`, `OWN_DEMONSTRATION`", body = ErrorBody),
        (status = 404, description = "`NO_CAMPAIGN`, `DEMONSTRATION_NOT_FOUND`", body = ErrorBody),
        (status = 409, description = "`NOT_IN_YOUR_HANDS`, `REVIEWED_ALREADY`", body = ErrorBody),
        (status = 422, description = "`INVALID_REQUEST`, `INVALID_NAME`", body = ErrorBody),
        (status = 500, description = "`CAMPAIGN_LOG_FAILED`", body = ErrorBody),
    ),
)]
async fn review(
    PersonsRequest {
        hub,
        person,
        request,
    }: PersonsRequest<ReviewRequest>,
) -> Result<Json<Value>, ApiError> {
    let _one_at_a_time = hub.reviews.lock().await;
    let (reviewer, dir) = hub
        .with(|campaign| {
            let reviewer = campaign.may_review(&request.episode_id, &person)?;
            Ok::<_, CampaignError>((reviewer, campaign.recording_dir()))
        })
        .map_err(refused)?;
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
    hub.with(|campaign| {
        campaign.review(
            &request.episode_id,
            &person,
            request.accepted,
            &request.note,
        )
    })
    .map_err(refused)?;
    Ok(Json(
        json!({ "reviewed": request.episode_id, "accepted": request.accepted }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes an answer's description names: the words in backticks that are all capitals.
    fn named_codes(text: &str) -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .filter(|word| {
                word.len() > 2 && word.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
            .map(str::to_string)
            .collect()
    }

    /// The routes' OpenAPI answers name only codes of this list (or the server's own
    /// `UNAUTHORIZED` and `EXECUTION_ERROR`), each with its status, and every code is named by a
    /// route of the campaign's or refuses a person elsewhere.
    #[test]
    fn the_routes_answer_with_these_codes() {
        let (_, api) = super::routes::<()>(None).split_for_parts();
        let mut named = std::collections::BTreeSet::new();
        for (path, item) in &api.paths.paths {
            let operations = [&item.get, &item.post].into_iter().flatten();
            for operation in operations {
                for (status, response) in &operation.responses.responses {
                    let utoipa::openapi::RefOr::T(response) = response else {
                        continue;
                    };
                    for code in named_codes(&response.description) {
                        if ["UNAUTHORIZED", "EXECUTION_ERROR"].contains(&code.as_str()) {
                            continue;
                        }
                        let known = Code::ALL
                            .into_iter()
                            .find(|c| c.as_str() == code && c.is_campaigns());
                        let Some(known) = known else {
                            panic!("{path} answers {code}, which is not a campaign code");
                        };
                        assert_eq!(
                            status,
                            &known.status().as_u16().to_string(),
                            "{path}: {code}"
                        );
                        named.insert(code);
                    }
                }
            }
        }
        // Answered on the other routes, to a person's token (`caller.rs`).
        named.insert(Code::PersonNotAllowed.as_str().to_string());
        for code in Code::ALL.into_iter().filter(|c| c.is_campaigns()) {
            assert!(
                named.contains(code.as_str()),
                "no route says it answers {}",
                code.as_str()
            );
        }
    }
}
