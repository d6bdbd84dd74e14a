//! Every error answer of the HTTP routes, in one shape: `{"detail": ..., "code": ...}` plus the
//! extra keys of the refusal (FastAPI's `{"detail": [...]}` for a body that does not validate).
//! Handlers return `ApiError`; none builds its own body.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use browserenv::models::FieldError;
use browserenv::protocol::ErrorFrame;

/// An error answer: what failed, and this server's code for it. A refusal may add keys of its own
/// (`CAPACITY_REACHED` adds `active_sessions` and `max_sessions`).
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    #[schema(example = "reset before stepping")]
    pub detail: String,
    /// `EXECUTION_ERROR`, `CAPACITY_REACHED`, `SESSION_NOT_FOUND`, `UNAUTHORIZED`, ...
    #[schema(example = "EXECUTION_ERROR")]
    pub code: String,
}

/// A 422, in FastAPI's shape: one entry per field that does not validate.
#[derive(Serialize, ToSchema)]
#[schema(as = HTTPValidationError)]
pub struct ValidationErrors {
    #[schema(value_type = Vec<ValidationError>)]
    pub detail: Vec<FieldError>,
}

/// One field error of a 422 (`browserenv::models::FieldError`), with FastAPI's locations:
/// `["body", "action", "x"]`, or `["body", column]` for a body that is not JSON.
#[derive(ToSchema)]
pub struct ValidationError {
    /// `missing`, `value_error`, `json_invalid`, `dict_type`, ...
    #[schema(rename = "type")]
    pub kind: String,
    /// Strings and integers.
    pub loc: Vec<Value>,
    pub msg: String,
    pub input: Value,
}

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: Value,
    /// `WWW-Authenticate: Bearer` goes with a 401.
    bearer_challenge: bool,
}

impl ApiError {
    /// An error answer with a code of this server's (`SESSION_NOT_FOUND`, `HOST_NOT_ALLOWED`, ...).
    pub fn new(status: StatusCode, code: &str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            body: body(&ErrorBody {
                detail: detail.into(),
                code: code.into(),
            }),
            bearer_challenge: status == StatusCode::UNAUTHORIZED,
        }
    }

    /// 422, FastAPI's shape: the field errors are the `detail`.
    pub fn unprocessable(errors: Vec<FieldError>) -> Self {
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            body: body(&ValidationErrors { detail: errors }),
            bearer_challenge: false,
        }
    }

    /// 400 `EXECUTION_ERROR`: the environment failed (not the page).
    pub fn execution(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "EXECUTION_ERROR", detail)
    }

    /// A wire error frame as an HTTP answer: its message is the `detail`, its extra keys
    /// (`active_sessions`, ...) stay top-level, as on the WebSocket.
    pub fn from_frame(status: StatusCode, frame: &ErrorFrame) -> Self {
        let mut error = Self::new(status, frame.code.as_str(), frame.message.clone());
        for (key, value) in &frame.extra {
            error.body[key.as_str()] = value.clone();
        }
        error
    }

    /// The same answer with one more key beside `detail` and `code`.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.body[key] = value.into();
        self
    }

    pub fn unknown_session(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "SESSION_NOT_FOUND",
            format!("no session {id:?}"),
        )
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON body (also written by hand where no HTTP stack answers, `connection.rs`).
    pub fn body(&self) -> &Value {
        &self.body
    }
}

fn body(body: &impl Serialize) -> Value {
    serde_json::to_value(body).expect("error bodies serialize")
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body)).into_response();
        if self.bearer_challenge {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}
