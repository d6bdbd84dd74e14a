//! Every error answer of the HTTP routes, in one shape: `{"detail": ..., "code": ...}` plus the
//! extra keys of the refusal (FastAPI's `{"detail": [...]}` for a body that does not validate).
//! Handlers return `ApiError`; none builds its own body, and every code is one of `Code`.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use browserenv::models::FieldError;
use browserenv::protocol::{ErrorCode, ErrorFrame};

/// Every code of an HTTP error answer (`code` of the body), each with its status: the one list
/// the routes answer from. docs/server.md's table ("HTTP error codes") lists the server's,
/// docs/campaigns.md's ("Error codes") the campaign's, in this order (the tests below). The
/// answers that carry a wire frame's code (`EXECUTION_ERROR`, `CAPACITY_REACHED`: `ErrorFrame`)
/// are the frames' list, `browserenv::protocol::ErrorCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Unauthorized,
    OriginNotAllowed,
    HostNotAllowed,
    PayloadTooLarge,
    PeerBusy,
    BodyTimeout,
    TooManyConnections,
    SessionNotFound,
    SessionBusy,
    UpgradeRequired,
    ReplicaUnreachable,
    ReplicaBusy,
    EnvironmentNotFound,
    SplitNotFound,
    InvalidTaskIndex,
    // The campaign's (docs/campaigns.md).
    NoCampaign,
    InvalidRequest,
    InvalidName,
    PersonRequired,
    NotYourName,
    PersonNotAllowed,
    NotYourLease,
    OwnDemonstration,
    DemonstrationNotFound,
    LeaseEnded,
    EpisodeNotEnded,
    NotInYourHands,
    ReviewedAlready,
    DuplicateEpisode,
    TooManyPeople,
    CampaignLogFailed,
}

impl Code {
    /// Every code: the server's, then the campaign's, each in the order of its table.
    pub const ALL: [Code; 31] = [
        Code::Unauthorized,
        Code::OriginNotAllowed,
        Code::HostNotAllowed,
        Code::PayloadTooLarge,
        Code::PeerBusy,
        Code::BodyTimeout,
        Code::TooManyConnections,
        Code::SessionNotFound,
        Code::SessionBusy,
        Code::UpgradeRequired,
        Code::ReplicaUnreachable,
        Code::ReplicaBusy,
        Code::EnvironmentNotFound,
        Code::SplitNotFound,
        Code::InvalidTaskIndex,
        Code::NoCampaign,
        Code::InvalidRequest,
        Code::InvalidName,
        Code::PersonRequired,
        Code::NotYourName,
        Code::PersonNotAllowed,
        Code::NotYourLease,
        Code::OwnDemonstration,
        Code::DemonstrationNotFound,
        Code::LeaseEnded,
        Code::EpisodeNotEnded,
        Code::NotInYourHands,
        Code::ReviewedAlready,
        Code::DuplicateEpisode,
        Code::TooManyPeople,
        Code::CampaignLogFailed,
    ];

    /// Its name on the wire (`code` of the error body).
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Unauthorized => "UNAUTHORIZED",
            Code::OriginNotAllowed => "ORIGIN_NOT_ALLOWED",
            Code::HostNotAllowed => "HOST_NOT_ALLOWED",
            Code::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Code::PeerBusy => "PEER_BUSY",
            Code::BodyTimeout => "BODY_TIMEOUT",
            Code::TooManyConnections => "TOO_MANY_CONNECTIONS",
            Code::SessionNotFound => "SESSION_NOT_FOUND",
            Code::SessionBusy => "SESSION_BUSY",
            Code::UpgradeRequired => "UPGRADE_REQUIRED",
            Code::ReplicaUnreachable => "REPLICA_UNREACHABLE",
            Code::ReplicaBusy => "REPLICA_BUSY",
            Code::EnvironmentNotFound => "ENVIRONMENT_NOT_FOUND",
            Code::SplitNotFound => "SPLIT_NOT_FOUND",
            Code::InvalidTaskIndex => "INVALID_TASK_INDEX",
            Code::NoCampaign => "NO_CAMPAIGN",
            Code::InvalidRequest => "INVALID_REQUEST",
            Code::InvalidName => "INVALID_NAME",
            Code::PersonRequired => "PERSON_REQUIRED",
            Code::NotYourName => "NOT_YOUR_NAME",
            Code::PersonNotAllowed => "PERSON_NOT_ALLOWED",
            Code::NotYourLease => "NOT_YOUR_LEASE",
            Code::OwnDemonstration => "OWN_DEMONSTRATION",
            Code::DemonstrationNotFound => "DEMONSTRATION_NOT_FOUND",
            Code::LeaseEnded => "LEASE_ENDED",
            Code::EpisodeNotEnded => "EPISODE_NOT_ENDED",
            Code::NotInYourHands => "NOT_IN_YOUR_HANDS",
            Code::ReviewedAlready => "REVIEWED_ALREADY",
            Code::DuplicateEpisode => "DUPLICATE_EPISODE",
            Code::TooManyPeople => "TOO_MANY_PEOPLE",
            Code::CampaignLogFailed => "CAMPAIGN_LOG_FAILED",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Code::InvalidTaskIndex => StatusCode::BAD_REQUEST,
            Code::Unauthorized => StatusCode::UNAUTHORIZED,
            Code::OriginNotAllowed
            | Code::HostNotAllowed
            | Code::PersonRequired
            | Code::NotYourName
            | Code::PersonNotAllowed
            | Code::NotYourLease
            | Code::OwnDemonstration => StatusCode::FORBIDDEN,
            Code::SessionNotFound
            | Code::EnvironmentNotFound
            | Code::SplitNotFound
            | Code::NoCampaign
            | Code::DemonstrationNotFound => StatusCode::NOT_FOUND,
            Code::LeaseEnded
            | Code::EpisodeNotEnded
            | Code::NotInYourHands
            | Code::ReviewedAlready
            | Code::DuplicateEpisode
            | Code::TooManyPeople => StatusCode::CONFLICT,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Code::InvalidRequest | Code::InvalidName => StatusCode::UNPROCESSABLE_ENTITY,
            Code::UpgradeRequired => StatusCode::UPGRADE_REQUIRED,
            Code::CampaignLogFailed => StatusCode::INTERNAL_SERVER_ERROR,
            Code::ReplicaUnreachable => StatusCode::BAD_GATEWAY,
            Code::PeerBusy | Code::TooManyConnections | Code::SessionBusy | Code::ReplicaBusy => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    /// A code of the campaign's routes (docs/campaigns.md's table).
    pub fn is_campaigns(self) -> bool {
        self as u8 >= Code::NoCampaign as u8
    }

    /// The error answer of this code.
    pub fn error(self, detail: impl Into<String>) -> ApiError {
        ApiError::new(self, detail)
    }
}

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
    /// An error answer with a code of this server's list.
    pub fn new(code: Code, detail: impl Into<String>) -> Self {
        Self::coded(code.status(), code.as_str(), detail)
    }

    /// An answer with `code` of another list (a wire frame's).
    fn coded(status: StatusCode, code: &str, detail: impl Into<String>) -> Self {
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
        Self::coded(
            StatusCode::BAD_REQUEST,
            ErrorCode::ExecutionError.as_str(),
            detail,
        )
    }

    /// A wire error frame as an HTTP answer: its message is the `detail`, its extra keys
    /// (`active_sessions`, ...) stay top-level, as on the WebSocket.
    pub fn from_frame(status: StatusCode, frame: &ErrorFrame) -> Self {
        let mut error = Self::coded(status, frame.code.as_str(), frame.message.clone());
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
        Self::new(Code::SessionNotFound, format!("no session {id:?}"))
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

#[cfg(test)]
#[path = "../../tests/src/doc_table.rs"]
mod doc_table;

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/server.md's table of HTTP error codes lists exactly the server's codes, and
    /// docs/campaigns.md's the campaign's: the same codes, in the same order, with their statuses.
    #[test]
    fn the_documented_tables_are_this_list() {
        let tables = [
            (
                include_str!("../../docs/server.md"),
                "## HTTP error codes",
                false,
            ),
            (
                include_str!("../../docs/campaigns.md"),
                "## Error codes",
                true,
            ),
        ];
        for (doc, heading, campaigns) in tables {
            let listed: Vec<(String, String)> = doc_table::rows(doc, heading)
                .into_iter()
                .map(|row| (row[0].clone(), row[1].clone()))
                .collect();
            let codes = Code::ALL
                .into_iter()
                .filter(|c| c.is_campaigns() == campaigns);
            let expected: Vec<(String, String)> = codes
                .map(|c| (c.as_str().to_string(), c.status().as_u16().to_string()))
                .collect();
            assert_eq!(
                listed, expected,
                "{heading}: same codes, same order, same statuses"
            );
        }
    }
}
