//! OpenEnv message envelopes: the frames of the `/ws` protocol and the error codes, shared by the
//! server (which parses client frames and writes server frames) and the client (the reverse).
//!
//! The exact shapes are those of `docs/wire.md` §2: a step's `data` is the bare action, `done` and
//! `reward` sit beside the observation, and error frames carry a stable code.

use serde_json::{json, Map, Value};

use crate::models::{
    ActionSet, BrowserAction, BrowserObservation, BrowserState, FieldError, StepResult,
};

/// Error codes of the wire contract. The first four leave the session usable; the rest close it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    InvalidJson,
    UnknownType,
    ValidationError,
    ExecutionError,
    CapacityReached,
    FactoryError,
    SessionError,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "INVALID_JSON",
            ErrorCode::UnknownType => "UNKNOWN_TYPE",
            ErrorCode::ValidationError => "VALIDATION_ERROR",
            ErrorCode::ExecutionError => "EXECUTION_ERROR",
            ErrorCode::CapacityReached => "CAPACITY_REACHED",
            ErrorCode::FactoryError => "FACTORY_ERROR",
            ErrorCode::SessionError => "SESSION_ERROR",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        [
            ErrorCode::InvalidJson,
            ErrorCode::UnknownType,
            ErrorCode::ValidationError,
            ErrorCode::ExecutionError,
            ErrorCode::CapacityReached,
            ErrorCode::FactoryError,
            ErrorCode::SessionError,
        ]
        .into_iter()
        .find(|code| code.as_str() == name)
    }

    /// After these the server closes the socket (code 1000) right after the error frame.
    pub fn closes_session(self) -> bool {
        matches!(
            self,
            ErrorCode::CapacityReached | ErrorCode::FactoryError | ErrorCode::SessionError
        )
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error frame's payload: `{"message", "code", "errors"?, ...extra}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorFrame {
    pub code: ErrorCode,
    pub message: String,
    /// Pydantic-shaped field errors, only for `VALIDATION_ERROR`.
    pub errors: Vec<FieldError>,
    /// Extra keys such as `active_sessions` / `max_sessions` for `CAPACITY_REACHED`.
    pub extra: Map<String, Value>,
}

impl ErrorFrame {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorFrame {
            code,
            message: message.into(),
            errors: Vec::new(),
            extra: Map::new(),
        }
    }

    pub fn validation(errors: Vec<FieldError>) -> Self {
        let summary = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        ErrorFrame {
            errors,
            ..ErrorFrame::new(
                ErrorCode::ValidationError,
                format!("Invalid message: {summary}"),
            )
        }
    }

    pub fn with_extra(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_string(), value);
        self
    }

    pub fn to_data(&self) -> Value {
        let mut data = Map::new();
        data.insert("message".into(), Value::String(self.message.clone()));
        data.insert("code".into(), Value::String(self.code.as_str().into()));
        if self.code == ErrorCode::ValidationError {
            data.insert("errors".into(), json!(self.errors));
        }
        for (key, value) in &self.extra {
            data.insert(key.clone(), value.clone());
        }
        Value::Object(data)
    }

    fn from_data(data: &Value) -> Self {
        let code = data
            .get("code")
            .and_then(Value::as_str)
            .and_then(ErrorCode::from_name)
            .unwrap_or(ErrorCode::ExecutionError);
        let message = data
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let errors = data
            .get("errors")
            .and_then(|e| serde_json::from_value(e.clone()).ok())
            .unwrap_or_default();
        let extra = data
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "code" | "message" | "errors"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        ErrorFrame {
            code,
            message,
            errors,
            extra,
        }
    }
}

impl std::fmt::Display for ErrorFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code: {})", self.message, self.code)
    }
}

/// A frame sent by a client.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMessage {
    /// Reset keyword arguments (`start_url`, `episode_id`, `seed`, ...); unknown ones are ignored.
    Reset(Map<String, Value>),
    Step(BrowserAction),
    State,
    Close,
    /// A JSON-RPC message for the session's MCP tools (OpenEnv's `"mcp"` frame), as sent.
    Mcp(Value),
}

impl ClientMessage {
    /// Parse a text frame, mapping each failure to the wire contract's error code; its action
    /// may be any op.
    pub fn parse(text: &str) -> Result<Self, ErrorFrame> {
        Self::parse_in(text, ActionSet::Full)
    }

    /// `parse`, for a server that takes the actions of `set`.
    pub fn parse_in(text: &str, set: ActionSet) -> Result<Self, ErrorFrame> {
        let value: Value = serde_json::from_str(text).map_err(|err| {
            ErrorFrame::new(ErrorCode::InvalidJson, format!("Invalid JSON: {err}"))
        })?;
        let Some(object) = value.as_object() else {
            return Err(ErrorFrame::validation(vec![FieldError::new(
                "model_type",
                vec![],
                "Input should be an object with a \"type\" key",
                value.clone(),
            )]));
        };
        let kind = match object.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(other) => {
                return Err(ErrorFrame::validation(vec![FieldError::new(
                    "string_type",
                    vec![json!("type")],
                    "Input should be a valid string",
                    other.clone(),
                )]))
            }
            None => {
                return Err(ErrorFrame::validation(vec![FieldError::new(
                    "missing",
                    vec![json!("type")],
                    "Field required",
                    value.clone(),
                )]))
            }
        };
        let extras = |allowed: &[&str]| -> Vec<FieldError> {
            object
                .iter()
                .filter(|(key, _)| !allowed.contains(&key.as_str()))
                .map(|(key, input)| {
                    FieldError::new(
                        "extra_forbidden",
                        vec![json!(key)],
                        "Extra inputs are not permitted",
                        input.clone(),
                    )
                })
                .collect()
        };
        match kind {
            "reset" => {
                check_no_extras(extras(&["type", "data"]))?;
                match object.get("data") {
                    None | Some(Value::Null) => Ok(ClientMessage::Reset(Map::new())),
                    Some(Value::Object(kwargs)) => Ok(ClientMessage::Reset(kwargs.clone())),
                    Some(other) => Err(ErrorFrame::validation(vec![FieldError::new(
                        "dict_type",
                        vec![json!("data")],
                        "Input should be a valid dictionary",
                        other.clone(),
                    )])),
                }
            }
            "step" => {
                check_no_extras(extras(&["type", "data"]))?;
                let data = object.get("data").cloned().unwrap_or(Value::Null);
                let action =
                    BrowserAction::from_value_in(&data, set).map_err(ErrorFrame::validation)?;
                Ok(ClientMessage::Step(action))
            }
            "state" => {
                check_no_extras(extras(&["type"]))?;
                Ok(ClientMessage::State)
            }
            "close" => Ok(ClientMessage::Close),
            "mcp" => {
                check_no_extras(extras(&["type", "data"]))?;
                Ok(ClientMessage::Mcp(
                    object.get("data").cloned().unwrap_or(Value::Null),
                ))
            }
            other => Err(ErrorFrame::new(
                ErrorCode::UnknownType,
                format!("Unknown message type: {other}"),
            )),
        }
    }

    /// The JSON text of this frame as a client sends it.
    pub fn to_text(&self) -> String {
        let value = match self {
            ClientMessage::Reset(kwargs) => json!({"type": "reset", "data": kwargs}),
            ClientMessage::Step(action) => json!({"type": "step", "data": action.to_value()}),
            ClientMessage::State => json!({"type": "state"}),
            ClientMessage::Close => json!({"type": "close"}),
            ClientMessage::Mcp(message) => json!({"type": "mcp", "data": message}),
        };
        value.to_string()
    }
}

fn check_no_extras(errors: Vec<FieldError>) -> Result<(), ErrorFrame> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ErrorFrame::validation(errors))
    }
}

/// A frame sent by the server.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMessage {
    Observation(StepResult),
    State(BrowserState),
    Error(ErrorFrame),
    /// The JSON-RPC answer to an `"mcp"` frame.
    Mcp(Value),
}

impl ServerMessage {
    pub fn to_text(&self) -> String {
        let value = match self {
            ServerMessage::Observation(result) => {
                json!({"type": "observation", "data": step_result_body(result)})
            }
            ServerMessage::State(state) => json!({"type": "state", "data": state}),
            ServerMessage::Error(error) => json!({"type": "error", "data": error.to_data()}),
            ServerMessage::Mcp(message) => json!({"type": "mcp", "data": message}),
        };
        value.to_string()
    }

    /// Parse a server frame (client side). Unknown frame types are reported as an error frame so a
    /// client never has to guess.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|err| format!("server sent invalid JSON: {err}"))?;
        let data = value.get("data").cloned().unwrap_or(Value::Null);
        match value.get("type").and_then(Value::as_str) {
            Some("observation") => parse_step_result(&data).map(ServerMessage::Observation),
            Some("state") => serde_json::from_value(data)
                .map(ServerMessage::State)
                .map_err(|err| format!("server sent a malformed state: {err}")),
            Some("error") => Ok(ServerMessage::Error(ErrorFrame::from_data(&data))),
            Some("mcp") => Ok(ServerMessage::Mcp(data)),
            other => Err(format!("server sent an unknown frame type {other:?}")),
        }
    }
}

/// `{"observation": {...}, "reward": r, "done": d, "metadata"?: {...}}`: the body of an observation
/// frame and of the HTTP `/reset` and `/step` replies.
pub fn step_result_body(result: &StepResult) -> Value {
    let mut body = json!({
        "observation": result.observation,
        "reward": result.reward,
        "done": result.done,
    });
    // The current Python server mirrors non-empty metadata beside the observation; older clients
    // ignore the key, newer ones may read it.
    if !result.observation.metadata.is_empty() {
        body["metadata"] = Value::Object(result.observation.metadata.clone());
    }
    body
}

pub fn parse_step_result(data: &Value) -> Result<StepResult, String> {
    let observation: BrowserObservation = data
        .get("observation")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|err| format!("server sent a malformed observation: {err}"))?
        .ok_or("server sent an observation frame without an observation")?;
    Ok(StepResult {
        observation,
        reward: data.get("reward").and_then(Value::as_f64),
        done: data.get("done").and_then(Value::as_bool).unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{action_from_tool_arguments, Op, MAX_TEXT_CHARS};

    /// The MCP tools' arguments (`models::tools`) that do not validate: their errors read as the
    /// wire's validation frame says them.
    #[test]
    fn bad_arguments_get_the_validation_words_under_the_tool_names() {
        let message = |op: Op, value: Value| {
            let errors = action_from_tool_arguments(op, value.as_object().unwrap()).unwrap_err();
            ErrorFrame::validation(errors).message
        };
        assert_eq!(
            message(Op::Click, json!({"x": 800, "y": 0})),
            "Invalid message: x: Input should be less than 800"
        );
        assert_eq!(
            message(Op::Click, json!({"x": 1})),
            "Invalid message: Value error, click needs both x and y"
        );
        assert!(message(Op::Key, json!({"key": "F13"})).contains("key must be one of ENTER, TAB"));
        let long = "a".repeat(MAX_TEXT_CHARS + 1);
        assert_eq!(
            message(Op::Finish, json!({"answer": long})),
            format!(
                "Invalid message: answer: String should have at most {MAX_TEXT_CHARS} characters"
            )
        );
        assert_eq!(
            message(Op::Scroll, json!({})),
            "Invalid message: dy: Field required"
        );
        assert_eq!(
            message(Op::Wait, json!({"op": "click"})),
            "Invalid message: op: Extra inputs are not permitted"
        );
        // The gestures' tools too.
        assert!(message(Op::Press, json!({"keys": "F13"})).contains("unknown key \"F13\""));
        assert_eq!(
            message(Op::Goto, json!({"url": "x", "text": "y"})),
            "Invalid message: text: Extra inputs are not permitted"
        );
    }

    #[test]
    fn parses_the_python_clients_step_frame() {
        let frame = r#"{"type":"step","data":{"metadata":{},"op":"scroll","x":null,"y":null,"text":"","dy":500}}"#;
        assert_eq!(
            ClientMessage::parse(frame).unwrap(),
            ClientMessage::Step(BrowserAction::scroll(500))
        );
    }

    #[test]
    fn maps_bad_frames_to_their_codes() {
        let code = |text: &str| ClientMessage::parse(text).unwrap_err().code;
        assert_eq!(code("{not json"), ErrorCode::InvalidJson);
        assert_eq!(code(r#"{"type":"dance"}"#), ErrorCode::UnknownType);
        assert_eq!(
            code(r#"{"type":"state","x":1}"#),
            ErrorCode::ValidationError
        );
        assert_eq!(
            code(r#"{"type":"step","data":{"op":"click","x":900,"y":1}}"#),
            ErrorCode::ValidationError
        );
        assert_eq!(code(r#"[1,2]"#), ErrorCode::ValidationError);
        let unknown = ClientMessage::parse(r#"{"type":"dance"}"#).unwrap_err();
        assert_eq!(unknown.message, "Unknown message type: dance");
    }

    #[test]
    fn reset_data_is_optional_and_kept_verbatim() {
        assert_eq!(
            ClientMessage::parse(r#"{"type":"reset"}"#).unwrap(),
            ClientMessage::Reset(Map::new())
        );
        let ClientMessage::Reset(kwargs) = ClientMessage::parse(
            r#"{"type":"reset","data":{"start_url":"https://a.example/","whatever":1}}"#,
        )
        .unwrap() else {
            panic!("not a reset")
        };
        assert_eq!(kwargs["whatever"], 1);
    }

    #[test]
    fn validation_frames_carry_pydantic_errors() {
        let err = ClientMessage::parse(r#"{"type":"step","data":{"op":"fly"}}"#).unwrap_err();
        let data = err.to_data();
        assert_eq!(data["code"], "VALIDATION_ERROR");
        assert_eq!(data["errors"][0]["loc"], json!(["op"]));
        assert!(data["errors"][0]["type"].is_string());
    }

    #[test]
    fn observation_frame_round_trips_and_lifts_done_and_reward() {
        let mut metadata = Map::new();
        metadata.insert("title".into(), json!("Example"));
        let result = StepResult {
            observation: BrowserObservation {
                metadata,
                screenshot: "iVBOR".into(),
                url: "https://example.com/".into(),
                error: String::new(),
            },
            reward: Some(0.0),
            done: false,
        };
        let text = ServerMessage::Observation(result.clone()).to_text();
        let value: Value = serde_json::from_str(&text).unwrap();
        let observation = value["data"]["observation"].as_object().unwrap();
        let mut keys: Vec<_> = observation.keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["error", "metadata", "screenshot", "url"]);
        assert_eq!(value["data"]["metadata"]["title"], "Example");
        assert_eq!(
            ServerMessage::parse(&text).unwrap(),
            ServerMessage::Observation(result)
        );
    }

    #[test]
    fn capacity_frame_has_its_extra_keys() {
        let frame = ErrorFrame::new(ErrorCode::CapacityReached, "Server at capacity")
            .with_extra("active_sessions", json!(2))
            .with_extra("max_sessions", json!(2));
        let text = ServerMessage::Error(frame.clone()).to_text();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["data"]["max_sessions"], 2);
        assert!(value["data"].get("errors").is_none());
        assert_eq!(
            ServerMessage::parse(&text).unwrap(),
            ServerMessage::Error(frame)
        );
        assert!(ErrorCode::CapacityReached.closes_session());
        assert!(!ErrorCode::ValidationError.closes_session());
    }
}
