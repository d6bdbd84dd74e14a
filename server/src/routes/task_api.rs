//! OpenEnv's optional Task API, shaped as OpenEnv 0.10.0's own server shapes it
//! (`openenv.core.env_server.http_server`, the routes tagged "Task API"): a trainer discovers the
//! task sets a server offers and picks tasks by split and index, without opening a session.
//!
//! The environment is [`ENV_NAME`] (the name of `/metadata` and `openenv.yaml`, what OpenEnv's
//! server would be given as `env_name`); each task file the server loaded (`--tasks`) is a split
//! named after the file's stem (`TaskSet::name`), its tasks in file order. A task carries what a
//! trainer needs to run it, the reset arguments included, and nothing of what its check expects
//! (docs/tasks.md: no wire says that). Every route only reads the loaded tasks: no session,
//! no capacity slot, no browser.
//!
//! As in OpenEnv: the body is validated first (FastAPI's 422), then the environment's name (404,
//! compared ignoring case), then the index (400 `Invalid task index`). What OpenEnv leaves to the
//! environment is decided here: an empty split names the first one (as OpenEnv's Harbor provider
//! does), an unknown one is a 404, and a range is `[start, stop)` with `stop` cut to the end of
//! the split (OpenEnv's own client asks for `0..20` by default) but never negative, reversed, or
//! starting past the end (400). The contract: docs/wire.md §3.1.

use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use browserenv::models::{pydantic_int, FieldError};
use browserenv_collect::tasks::{Category, CheckPart, Task};

use crate::api_error::{ApiError, Code, ErrorBody, ValidationErrors};
use crate::environment::TaskCatalog;

/// The environment's name on the Task API: `/list_environments` lists it, and it is the first
/// segment of the other routes.
pub const ENV_NAME: &str = "browserenv";

/// The split a task set without a name (one built in code) is served as.
const UNNAMED_SPLIT: &str = "tasks";

/// What the Task API serves: the loaded task sets, each as a split, its tasks ready to send.
#[derive(Debug, Default)]
pub struct TaskApi {
    splits: Vec<Split>,
}

#[derive(Debug)]
struct Split {
    name: String,
    tasks: Vec<TaskRef>,
}

impl TaskApi {
    /// The splits of a server started with these tasks (none without `--tasks`).
    pub fn new(catalog: Option<&TaskCatalog>) -> Self {
        let splits = catalog
            .map(|catalog| {
                let name = match catalog.tasks.name.as_str() {
                    "" => UNNAMED_SPLIT.to_string(),
                    name => name.to_string(),
                };
                let tasks = catalog
                    .tasks
                    .tasks
                    .iter()
                    .enumerate()
                    .map(|(index, task)| TaskRef::new(index, task, &name, catalog))
                    .collect();
                Split { name, tasks }
            })
            .into_iter()
            .collect();
        TaskApi { splits }
    }

    /// Also serve these splits (MiniWoB++'s `train` and `test`), after the task file's; a name
    /// served already is refused.
    pub fn with_splits(mut self, splits: Vec<(String, Vec<TaskRef>)>) -> Result<Self, String> {
        for (name, tasks) in splits {
            if self.splits.iter().any(|split| split.name == name) {
                return Err(format!(
                    "two task sets make a split named {name:?} on the Task API"
                ));
            }
            self.splits.push(Split { name, tasks });
        }
        Ok(self)
    }

    /// The split a request names: `""` is the first.
    fn split(&self, name: &str) -> Result<&Split, ApiError> {
        let found = match name {
            "" => self.splits.first(),
            name => self.splits.iter().find(|split| split.name == name),
        };
        found.ok_or_else(|| {
            let detail = if self.splits.is_empty() {
                format!(
                    "unknown split {}: this server has no task sets (start it with --tasks FILE)",
                    py_repr(name)
                )
            } else {
                let names: Vec<String> = self.splits.iter().map(|s| py_repr(&s.name)).collect();
                format!(
                    "unknown split {}; served splits are [{}]",
                    py_repr(name),
                    names.join(", ")
                )
            };
            ApiError::new(Code::SplitNotFound, detail)
        })
    }
}

/// A request of the routes with a body, as they all take it: the task sets, the path's
/// `env_name`, and the body as an object whose fields the route reads (FastAPI's 422 for none, or
/// one that is not JSON or not an object).
struct Asked {
    api: Arc<TaskApi>,
    env_name: String,
    fields: Fields,
}

impl FromRequest<Arc<TaskApi>> for Asked {
    type Rejection = Response;

    async fn from_request(request: Request, api: &Arc<TaskApi>) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let Path(EnvName { env_name }) = Path::<EnvName>::from_request_parts(&mut parts, api)
            .await
            .map_err(IntoResponse::into_response)?;
        let body = Bytes::from_request(Request::from_parts(parts, body), api)
            .await
            .map_err(IntoResponse::into_response)?;
        let fields = Fields::parse(&body).map_err(IntoResponse::into_response)?;
        Ok(Asked {
            api: api.clone(),
            env_name,
            fields,
        })
    }
}

impl Asked {
    /// The split the body names (`split`, read already), once the route has read its fields
    /// (`model`: every field of its request model), checked in OpenEnv's order: the body, then
    /// the environment's name, then the split.
    fn split(&mut self, split: Option<String>, model: &[&str]) -> Result<&Split, ApiError> {
        self.fields.finish(model)?;
        check_env_name(&self.env_name)?;
        self.api.split(&split.unwrap_or_default())
    }

    /// The split a body of `{"split"}` alone names.
    fn split_alone(&mut self) -> Result<&Split, ApiError> {
        let split = self.fields.string("split");
        self.split(split, &["split"])
    }
}

/// The Task API's routes.
pub fn routes<S: Clone + Send + Sync + 'static>(api: Arc<TaskApi>) -> OpenApiRouter<S> {
    OpenApiRouter::new()
        .routes(routes!(list_environments))
        .routes(routes!(list_splits))
        .routes(routes!(list_tasks))
        .routes(routes!(num_tasks))
        .routes(routes!(get_task))
        .routes(routes!(get_task_range))
        .with_state(api)
}

/// One split, as `/{env_name}/splits` lists it: OpenEnv's `{"name", "type"}` (`type` is the
/// name when that is `train`, `validation` or `test`, else `validation`, as OpenEnv's server
/// says of a split given by name) and Harbor's `num_tasks`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SplitInfo {
    #[schema(example = "demo")]
    pub name: String,
    #[serde(rename = "type")]
    #[schema(example = "validation")]
    pub kind: &'static str,
    #[schema(example = 17)]
    pub num_tasks: usize,
}

/// One task, as the Task API hands it out: the fields of OpenEnv's `HarborTaskRef` (`index`,
/// `task_id`, `task_name`, `dataset`, `instruction`), then what a trainer needs to run it. What
/// the check expects is never sent.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TaskRef {
    /// Its position in the split, from 0.
    pub index: usize,
    /// The task's `id` in its file: what `reset(task_id=...)` takes.
    #[schema(example = "nav-store-map")]
    pub task_id: String,
    /// The same `id`.
    pub task_name: String,
    /// The split (task file) it belongs to.
    #[schema(example = "demo")]
    pub dataset: String,
    /// What the actor is asked to do.
    pub instruction: String,
    /// `information`, `navigation` or `interaction`.
    #[schema(value_type = String, example = "navigation")]
    pub category: Category,
    /// The page the episode starts on: resolved against the demo site or `--task-base-url` when
    /// the file gives a relative one (as written when there is nothing to resolve it against).
    pub start_url: String,
    /// The episode's step limit.
    pub max_steps: u64,
    /// The parts of the check that decide the reward at `finish` (`answer`, `url`, `element`,
    /// `all_of`, ...: `CheckPart::ALL`), by name only: `answer` means the `finish` text is judged.
    #[schema(value_type = Vec<String>, example = json!(["url"]))]
    pub checks: Vec<CheckPart>,
    /// The keyword arguments of the `reset` that starts this task, on any wire.
    pub reset: ResetArgs,
}

/// `reset(**reset)`: the task by its id (its start page comes with it).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResetArgs {
    #[schema(example = "nav-store-map")]
    pub task_id: String,
}

impl TaskRef {
    /// From the task as it may leave the server (`Task::shown`).
    fn new(index: usize, task: &Task, split: &str, catalog: &TaskCatalog) -> Self {
        let shown = task.shown(catalog.base_url.as_ref());
        TaskRef {
            index,
            task_id: shown.id.clone(),
            task_name: shown.id.clone(),
            dataset: split.to_string(),
            instruction: shown.instruction,
            category: shown.category,
            start_url: shown.start_url,
            max_steps: shown.max_steps,
            checks: shown.checks,
            reset: ResetArgs { task_id: shown.id },
        }
    }
}

/// `POST /{env_name}/tasks` and `/num_tasks` (OpenEnv's `ListTasksRequest`, `NumTasksRequest`).
#[derive(ToSchema)]
pub struct SplitRequest {
    /// A split of `/{env_name}/splits`; `""` is the first.
    #[schema(example = "demo")]
    pub split: String,
}

/// `POST /{env_name}/task` (OpenEnv's `GetTaskRequest`).
#[derive(ToSchema)]
pub struct TaskRequest {
    #[schema(example = "demo")]
    pub split: String,
    /// From 0.
    pub index: i64,
}

/// `POST /{env_name}/task_range` (OpenEnv's `GetTaskRangeRequest`).
#[derive(ToSchema)]
pub struct TaskRangeRequest {
    #[schema(example = "demo")]
    pub split: String,
    /// Inclusive, default 0.
    pub start: Option<i64>,
    /// Exclusive, default (and at most) the split's end.
    pub stop: Option<i64>,
}

/// `/{env_name}/tasks`.
#[derive(Serialize, ToSchema)]
pub struct TasksReply {
    pub tasks: Vec<TaskRef>,
    #[schema(example = "browserenv")]
    pub env_name: &'static str,
}

/// `/{env_name}/num_tasks`.
#[derive(Serialize, ToSchema)]
pub struct NumTasksReply {
    #[schema(example = 17)]
    pub num_tasks: usize,
}

/// `/{env_name}/task`.
#[derive(Serialize, ToSchema)]
pub struct TaskReply {
    pub task: TaskRef,
}

/// `/{env_name}/task_range`.
#[derive(Serialize, ToSchema)]
pub struct TaskRangeReply {
    pub tasks: Vec<TaskRef>,
}

#[utoipa::path(
    get,
    path = "/list_environments",
    tag = "Task API",
    summary = "The environments whose tasks this server serves",
    responses((status = 200, description = "`[\"browserenv\"]`", body = Vec<String>)),
)]
async fn list_environments() -> Json<[&'static str; 1]> {
    Json([ENV_NAME])
}

#[utoipa::path(
    get,
    path = "/{env_name}/splits",
    tag = "Task API",
    summary = "The task sets, one split per `--tasks` file",
    description = "`[]` for a server started without tasks.",
    params(EnvName),
    responses(
        (status = 200, description = "the splits", body = Vec<SplitInfo>),
        (status = 404, description = "`ENVIRONMENT_NOT_FOUND`", body = ErrorBody),
    ),
)]
async fn list_splits(
    State(api): State<Arc<TaskApi>>,
    Path(EnvName { env_name }): Path<EnvName>,
) -> Result<Json<Vec<SplitInfo>>, ApiError> {
    check_env_name(&env_name)?;
    Ok(Json(
        api.splits
            .iter()
            .map(|split| SplitInfo {
                name: split.name.clone(),
                kind: match split.name.as_str() {
                    "train" => "train",
                    "test" => "test",
                    _ => "validation",
                },
                num_tasks: split.tasks.len(),
            })
            .collect(),
    ))
}

#[utoipa::path(
    post,
    path = "/{env_name}/tasks",
    tag = "Task API",
    summary = "Every task of a split",
    params(EnvName),
    request_body(content = SplitRequest, example = json!({"split": "demo"})),
    responses(
        (status = 200, description = "the tasks, in file order", body = TasksReply),
        (status = 404, description = "`ENVIRONMENT_NOT_FOUND`, `SPLIT_NOT_FOUND`", body = ErrorBody),
        (status = 422, description = "the body does not validate", body = ValidationErrors),
    ),
)]
async fn list_tasks(mut asked: Asked) -> Result<Json<TasksReply>, ApiError> {
    let split = asked.split_alone()?;
    Ok(Json(TasksReply {
        tasks: split.tasks.clone(),
        env_name: ENV_NAME,
    }))
}

#[utoipa::path(
    post,
    path = "/{env_name}/num_tasks",
    tag = "Task API",
    summary = "How many tasks a split has",
    params(EnvName),
    request_body(content = SplitRequest, example = json!({"split": "demo"})),
    responses(
        (status = 200, description = "the count", body = NumTasksReply),
        (status = 404, description = "`ENVIRONMENT_NOT_FOUND`, `SPLIT_NOT_FOUND`", body = ErrorBody),
        (status = 422, description = "the body does not validate", body = ValidationErrors),
    ),
)]
async fn num_tasks(mut asked: Asked) -> Result<Json<NumTasksReply>, ApiError> {
    let split = asked.split_alone()?;
    Ok(Json(NumTasksReply {
        num_tasks: split.tasks.len(),
    }))
}

#[utoipa::path(
    post,
    path = "/{env_name}/task",
    tag = "Task API",
    summary = "One task of a split, by index",
    params(EnvName),
    request_body(content = TaskRequest, example = json!({"split": "demo", "index": 0})),
    responses(
        (status = 200, description = "the task", body = TaskReply),
        (status = 400, description = "`INVALID_TASK_INDEX` (`Invalid task index`): not in \
            `0..num_tasks`; `reason` says why", body = ErrorBody),
        (status = 404, description = "`ENVIRONMENT_NOT_FOUND`, `SPLIT_NOT_FOUND`", body = ErrorBody),
        (status = 422, description = "the body does not validate", body = ValidationErrors),
    ),
)]
async fn get_task(mut asked: Asked) -> Result<Json<TaskReply>, ApiError> {
    let split = asked.fields.string("split");
    let index = asked.fields.int("index");
    let split = asked.split(split, &["split", "index"])?;
    let index = index.unwrap_or_default();
    let task = usize::try_from(index)
        .ok()
        .and_then(|at| split.tasks.get(at))
        .ok_or_else(|| {
            invalid_index(format!(
                "index {index} is not in 0..{} (split {})",
                split.tasks.len(),
                py_repr(&split.name)
            ))
        })?;
    Ok(Json(TaskReply { task: task.clone() }))
}

#[utoipa::path(
    post,
    path = "/{env_name}/task_range",
    tag = "Task API",
    summary = "The tasks of a split from `start` (inclusive) to `stop` (exclusive)",
    description = "`start` defaults to 0 and `stop` to the split's end; a `stop` past the end \
        stops there.",
    params(EnvName),
    request_body(content = TaskRangeRequest, example = json!({"split": "demo", "start": 0, "stop": 5})),
    responses(
        (status = 200, description = "the tasks", body = TaskRangeReply),
        (status = 400, description = "`INVALID_TASK_INDEX` (`Invalid task index`): a negative \
            bound, `stop` before `start`, or `start` past the split's end; `reason` says which", body = ErrorBody),
        (status = 404, description = "`ENVIRONMENT_NOT_FOUND`, `SPLIT_NOT_FOUND`", body = ErrorBody),
        (status = 422, description = "the body does not validate", body = ValidationErrors),
    ),
)]
async fn get_task_range(mut asked: Asked) -> Result<Json<TaskRangeReply>, ApiError> {
    let split = asked.fields.string("split");
    let start = asked.fields.optional_int("start");
    let stop = asked.fields.optional_int("stop");
    let split = asked.split(split, &["split", "start", "stop"])?;
    let range = window(split, start.flatten(), stop.flatten()).map_err(invalid_index)?;
    Ok(Json(TaskRangeReply {
        tasks: split.tasks[range].to_vec(),
    }))
}

/// The `env_name` path parameter.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
struct EnvName {
    /// `browserenv` (any case), as `/list_environments` lists it.
    env_name: String,
}

/// OpenEnv compares the names ignoring case.
fn check_env_name(env_name: &str) -> Result<(), ApiError> {
    if env_name.to_lowercase() == ENV_NAME.to_lowercase() {
        return Ok(());
    }
    Err(ApiError::new(
        Code::EnvironmentNotFound,
        format!("unknown environment {}", py_repr(env_name)),
    ))
}

/// OpenEnv's 400 (its server's answer to the environment's `IndexError`), and here why.
fn invalid_index(reason: String) -> ApiError {
    ApiError::new(Code::InvalidTaskIndex, "Invalid task index").with("reason", reason)
}

/// The tasks `[start, stop)` of a split: `stop` is cut to the end; a negative bound, `stop` before
/// `start` or `start` past the end is refused, saying which.
fn window(split: &Split, start: Option<i128>, stop: Option<i128>) -> Result<Range<usize>, String> {
    let len = split.tasks.len();
    let end = i128::try_from(len).unwrap_or(i128::MAX);
    let (start, stop) = (start.unwrap_or(0), stop.unwrap_or(end));
    if start < 0 {
        return Err(format!("start {start} is negative"));
    }
    if stop < 0 {
        return Err(format!("stop {stop} is negative"));
    }
    if start > end {
        return Err(format!(
            "start {start} is past the end of split {} ({len} tasks)",
            py_repr(&split.name)
        ));
    }
    if stop < start {
        return Err(format!("stop {stop} is before start {start}"));
    }
    // Both are now in 0..=len.
    let cut = |n: i128| usize::try_from(n.min(end)).unwrap_or(len);
    Ok(cut(start)..cut(stop))
}

/// A request body as FastAPI validates it against one of OpenEnv's request models (pydantic,
/// `extra="forbid"`): every failure at once, fields in their declared order, then the extra keys.
struct Fields {
    body: Map<String, Value>,
    errors: Vec<FieldError>,
}

impl Fields {
    /// The body as an object; FastAPI's 422 for no body, one that is not JSON, or not an object.
    fn parse(body: &Bytes) -> Result<Self, ApiError> {
        if body.is_empty() {
            return Err(ApiError::unprocessable(vec![FieldError::new(
                "missing",
                vec![json!("body")],
                "Field required",
                Value::Null,
            )]));
        }
        match crate::transports::http_session::json_body(body, false)? {
            Value::Object(body) => Ok(Fields {
                body,
                errors: Vec::new(),
            }),
            other => Err(ApiError::unprocessable(vec![FieldError::new(
                "model_attributes_type",
                vec![json!("body")],
                "Input should be a valid dictionary or object to extract fields from",
                other,
            )])),
        }
    }

    fn loc(field: &str) -> Vec<Value> {
        vec![json!("body"), json!(field)]
    }

    /// A required `str`.
    fn string(&mut self, field: &str) -> Option<String> {
        match self.body.get(field) {
            Some(Value::String(value)) => return Some(value.clone()),
            None => {
                let whole = Value::Object(self.body.clone());
                self.errors.push(FieldError::new(
                    "missing",
                    Self::loc(field),
                    "Field required",
                    whole,
                ));
            }
            Some(other) => self.errors.push(FieldError::new(
                "string_type",
                Self::loc(field),
                "Input should be a valid string",
                other.clone(),
            )),
        }
        None
    }

    /// A required `int`.
    fn int(&mut self, field: &str) -> Option<i128> {
        let Some(value) = self.body.get(field) else {
            let whole = Value::Object(self.body.clone());
            self.errors.push(FieldError::new(
                "missing",
                Self::loc(field),
                "Field required",
                whole,
            ));
            return None;
        };
        pydantic_int(value, Self::loc(field))
            .map_err(|error| self.errors.push(error))
            .ok()
    }

    /// An `Optional[int] = None`: absent and `null` are `None`.
    fn optional_int(&mut self, field: &str) -> Option<Option<i128>> {
        match self.body.get(field) {
            None | Some(Value::Null) => Some(None),
            Some(value) => pydantic_int(value, Self::loc(field))
                .map_err(|error| self.errors.push(error))
                .ok()
                .map(Some),
        }
    }

    /// The errors so far, and one per key the model does not have.
    fn finish(&mut self, known: &[&str]) -> Result<(), ApiError> {
        for (key, value) in &self.body {
            if !known.contains(&key.as_str()) {
                self.errors.push(FieldError::new(
                    "extra_forbidden",
                    Self::loc(key),
                    "Extra inputs are not permitted",
                    value.clone(),
                ));
            }
        }
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::unprocessable(std::mem::take(&mut self.errors)))
        }
    }
}

/// Python's `repr` of a string, as OpenEnv's messages quote a name: `'demo'`, `"o'k"`.
fn py_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c < ' ' || ('\u{7f}'..'\u{a0}').contains(&c) => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_as_python_quotes_them() {
        assert_eq!(py_repr("demo"), "'demo'");
        assert_eq!(py_repr("o'k"), "\"o'k\"");
        assert_eq!(py_repr("a\"b'c"), "'a\"b\\'c'");
        assert_eq!(py_repr("a\\b\n\u{1}"), "'a\\\\b\\n\\x01'");
    }

    #[test]
    fn a_window_is_cut_at_the_end_and_never_negative_reversed_or_past_it() {
        let task: Task = serde_json::from_value(json!({"id": "t", "category": "information",
            "instruction": "Do it", "start_url": "index.html", "check": {"url": "x"}}))
        .unwrap();
        let catalog = TaskCatalog::default();
        let demo = Split {
            name: "demo".into(),
            tasks: (0..17)
                .map(|index| TaskRef::new(index, &task, "demo", &catalog))
                .collect(),
        };
        let window = |start, stop| window(&demo, start, stop);
        assert_eq!(window(None, None), Ok(0..17));
        assert_eq!(window(Some(0), Some(20)), Ok(0..17));
        assert_eq!(window(Some(3), Some(5)), Ok(3..5));
        assert_eq!(window(Some(17), None), Ok(17..17));
        assert_eq!(window(Some(4), Some(4)), Ok(4..4));
        assert_eq!(window(Some(-1), None), Err("start -1 is negative".into()));
        assert_eq!(window(None, Some(-2)), Err("stop -2 is negative".into()));
        assert_eq!(
            window(Some(5), Some(2)),
            Err("stop 2 is before start 5".into())
        );
        assert_eq!(
            window(Some(18), None),
            Err("start 18 is past the end of split 'demo' (17 tasks)".into())
        );
        assert!(window(Some(i128::MAX), None).is_err());
        assert_eq!(window(None, Some(i128::MAX)), Ok(0..17));
    }
}
