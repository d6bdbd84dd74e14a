//! The tools an MCP client sees, and what a call does to its session: `reset` plus one tool per
//! action (their schemas and argument checks are the action model's, `browserenv::models::tools`),
//! and `read_page`, which reads the page's text without acting. `tools()` is the one list of them.
//! Both MCP faces (`handler.rs` for MCP clients, `openenv.rs` for OpenEnv's `MCPToolClient`) call
//! `call` and only say the outcome in their own shape.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{json, Map, Value};

use browserenv::models::{
    action_from_tool_arguments, action_tool_description, action_tool_schema, BrowserState, Op,
    StepResult,
};
use browserenv::protocol::ErrorFrame;
use browserenv::text_layer::{DEFAULT_COMPACT_CHARS, MAX_COMPACT_CHARS, MIN_COMPACT_CHARS};

use crate::browser::Launcher;
use crate::session::SharedSession;

/// Arguments `reset` takes; the environment checks their values.
const RESET_ARGUMENTS: [&str; 5] = ["start_url", "task_id", "episode_id", "archive", "seed"];

/// The tool that reads the page's visible text: it neither steps the episode nor touches the page.
pub const READ_PAGE: &str = "read_page";

/// The tool an agent asks a person with (`session::ask_for_a_person`).
pub const REQUEST_HUMAN: &str = "request_human";

/// The most characters of a `request_human` reason (it is shown in a status bar and the log).
const REASON_CHARS: usize = 500;

/// What an MCP text block says for a page with no visible text.
const NO_TEXT: &str = "[no visible text]";

/// Why a call has no observation to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolFailure {
    /// No tool of that name.
    Unknown(String),
    /// The arguments do not validate; the message is a `VALIDATION_ERROR`'s.
    Invalid(String),
    /// The environment refused (no episode yet, a bad start URL, an unknown task, ...).
    Environment(String),
}

impl ToolFailure {
    pub fn message(&self) -> String {
        match self {
            ToolFailure::Unknown(name) => format!("Unknown tool: {name:?}"),
            ToolFailure::Invalid(message) | ToolFailure::Environment(message) => message.clone(),
        }
    }
}

/// What a call led to: the observation, and the episode it belongs to.
pub struct Outcome {
    pub result: StepResult,
    pub state: BrowserState,
}

/// What `read_page` read: the page's text in the compact form, and where and when it was read.
pub struct PageRead {
    /// `{"url", "episode_id", "step", "text", "truncated"}`.
    pub facts: Value,
}

/// What a tool call gave: an observation (`reset` and the actions), or the page's text.
pub enum Called {
    Observation(Outcome),
    Text(PageRead),
}

fn tool(name: &str, description: String, schema: Value, read_only: bool) -> Tool {
    tool_with_output(name, description, schema, read_only, output_schema())
}

fn tool_with_output(
    name: &str,
    description: String,
    schema: Value,
    read_only: bool,
    output: Map<String, Value>,
) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("tool schemas are objects")
    };
    let mut tool = Tool::new(name.to_string(), description, Arc::new(schema))
        .with_raw_output_schema(Arc::new(output));
    // Hints for clients that ask before acting: only `wait` and `read_page` leave the page as it
    // is.
    let mut annotations = rmcp::model::ToolAnnotations::default();
    annotations.read_only_hint = Some(read_only);
    annotations.open_world_hint = Some(true);
    tool.annotations = Some(annotations);
    tool
}

/// Every tool of a server that takes the actions of `set`, `reset` first.
pub fn tools(set: browserenv::ActionSet) -> Vec<Tool> {
    let reset = tool(
        "reset",
        "Start a new episode in a fresh browser: open start_url (an http or https URL), or the \
         task named by task_id (the server's task set). Call it first. Returns the first page: an \
         800x600 PNG screenshot, its URL and title, an error code (empty when all went well) and \
         whether the episode is done."
            .into(),
        json!({
            "type": "object",
            "properties": {
                "start_url": {"type": "string", "description": "The page to start on (http or https)"},
                "task_id": {"type": "string", "description": "A task of the server's task set (or with --miniwob a MiniWoB++ task, miniwob.click-test), instead of start_url"},
                "episode_id": {"type": "string", "description": "An id for the episode (the server makes one up otherwise)"},
                "archive": {"type": "string", "description": "A web archive in the server's --archive-dir to answer the episode from, with no network (docs/archives.md)"},
                "seed": {"type": "integer", "description": "With an archive or a MiniWoB++ task: fixes the page's clock and Math.random"},
            },
            "additionalProperties": false,
        }),
        false,
    );
    let read_page = tool_with_output(
        READ_PAGE,
        format!(
            "Read the current page's visible text without acting: it neither steps the episode \
             nor changes the page. One line per line of text, in reading order: `x,y,w,h \
             [marker] text`, where x,y,w,h is its box in pixels of the 800x600 screenshot, so \
             (x+w/2, y+h/2) is a point to click it. Markers: [link], [button], [field] (a form \
             field and its value), [empty field] (an empty field and its placeholder), \
             [password] (bullets, never the value), [frame: other origin, not readable] (a \
             frame whose text cannot be read); [text] marks plain text that itself starts with \
             '['. Only what a person sees is listed: nothing hidden, covered or scrolled out of \
             view (scroll to read more). At most max_chars characters (default \
             {DEFAULT_COMPACT_CHARS}), whole lines; when lines are left out the last line is \
             [truncated]."
        ),
        json!({
            "type": "object",
            "properties": {
                "max_chars": {
                    "type": "integer",
                    "minimum": MIN_COMPACT_CHARS,
                    "maximum": MAX_COMPACT_CHARS,
                    "default": DEFAULT_COMPACT_CHARS,
                    "description": "The most characters of text to return (whole lines)",
                },
            },
            "additionalProperties": false,
        }),
        true,
        read_page_output_schema(),
    );
    let request_human = tool(
        REQUEST_HUMAN,
        "Ask a person for help when stuck (a login, a captcha, a page you cannot get past): the \
         people watching the session are told why, one of them takes control, acts, and hands \
         back with an optional note. The call waits until then (at most wait_seconds, and at \
         most the server's BROWSER_ASK_WAIT_SECONDS) and returns the page as the person left \
         it: its screenshot and facts, with metadata.human (who), metadata.human_note (what they \
         said) and metadata.human_steps (what they did). An error when nobody answered in time."
            .into(),
        json!({
            "type": "object",
            "properties": {
                "reason": {"type": "string", "minLength": 1, "maxLength": REASON_CHARS,
                    "description": "What the person should do, in a sentence"},
                "wait_seconds": {"type": "integer", "minimum": 1, "maximum": 3600,
                    "description": "How long to wait for a person (the server's bound applies)"},
            },
            "required": ["reason"],
            "additionalProperties": false,
        }),
        false,
    );
    std::iter::once(reset)
        .chain(set.ops().iter().map(|&op| {
            tool(
                op.name(),
                action_tool_description(op),
                action_tool_schema(op),
                op == Op::Wait,
            )
        }))
        .chain([read_page, request_human])
        .collect()
}

/// `request_human`'s reason (one line of printable text) and wait, checked like an action's
/// fields.
fn ask_arguments(
    arguments: &Map<String, Value>,
) -> Result<(String, std::time::Duration), ToolFailure> {
    let invalid = |message: String| ToolFailure::Invalid(format!("Invalid message: {message}"));
    if let Some(extra) = arguments
        .keys()
        .find(|key| !["reason", "wait_seconds"].contains(&key.as_str()))
    {
        return Err(invalid(format!("{extra}: Extra inputs are not permitted")));
    }
    let reason = match arguments.get("reason") {
        Some(Value::String(reason)) if !reason.trim().is_empty() => reason,
        Some(Value::String(_)) => return Err(invalid("reason: should not be empty".into())),
        Some(_) => return Err(invalid("reason: Input should be a valid string".into())),
        None => return Err(invalid("reason: Field required".into())),
    };
    if reason.chars().count() > REASON_CHARS {
        return Err(invalid(format!(
            "reason: String should have at most {REASON_CHARS} characters"
        )));
    }
    // Shown to watchers, in `/sessions`, the recording and the log: cleaned as every such text.
    let reason = browserenv::text_layer::printable(reason, REASON_CHARS);
    let wait = match arguments.get("wait_seconds") {
        None | Some(Value::Null) => 3600,
        Some(value) => match value.as_u64() {
            Some(seconds @ 1..=3600) => seconds,
            _ => {
                return Err(invalid(
                    "wait_seconds: Input should be a whole number from 1 to 3600".into(),
                ))
            }
        },
    };
    Ok((reason, std::time::Duration::from_secs(wait)))
}

/// What `read_page`'s structured content holds.
fn read_page_output_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "episode_id": {"type": ["string", "null"]},
            "step": {"type": "integer", "description": "The episode's step count when the page was read"},
            "text": {"type": "string", "description": "One line per line of text: `x,y,w,h [marker] text`"},
            "truncated": {"type": "boolean", "description": "Lines were left out; the text ends with [truncated]"},
        },
        "required": ["url", "step", "text", "truncated"],
    });
    let Value::Object(schema) = schema else {
        unreachable!()
    };
    schema
}

/// `read_page`'s `max_chars`, checked like an action's field (the message a `VALIDATION_ERROR`
/// would carry).
fn max_chars(arguments: &Map<String, Value>) -> Result<usize, ToolFailure> {
    if let Some(extra) = arguments.keys().find(|key| *key != "max_chars") {
        return Err(ToolFailure::Invalid(format!(
            "Invalid message: {extra}: Extra inputs are not permitted"
        )));
    }
    let invalid = |why: String| ToolFailure::Invalid(format!("Invalid message: max_chars: {why}"));
    match arguments.get("max_chars") {
        None | Some(Value::Null) => Ok(DEFAULT_COMPACT_CHARS),
        Some(value) => {
            let number = value
                .as_u64()
                .or_else(|| value.as_i64().map(|_| 0))
                .ok_or_else(|| invalid("Input should be a valid integer".into()))?;
            let number = usize::try_from(number).unwrap_or(usize::MAX);
            if number < MIN_COMPACT_CHARS {
                Err(invalid(format!(
                    "Input should be greater than or equal to {MIN_COMPACT_CHARS}"
                )))
            } else if number > MAX_COMPACT_CHARS {
                Err(invalid(format!(
                    "Input should be less than or equal to {MAX_COMPACT_CHARS}"
                )))
            } else {
                Ok(number)
            }
        }
    }
}

/// What every call's structured content holds.
fn output_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "title": {"type": "string"},
            "error": {"type": "string", "description": "The observation's error code; empty when all went well"},
            "error_detail": {"type": ["string", "null"]},
            "done": {"type": "boolean"},
            "reward": {"type": ["number", "null"]},
            "episode_id": {"type": ["string", "null"]},
            "step": {"type": "integer"},
            "metadata": {"type": "object"},
        },
        "required": ["url", "title", "error", "done", "step"],
    });
    let Value::Object(schema) = schema else {
        unreachable!()
    };
    schema
}

/// Run the named tool on the session.
pub async fn call<L: Launcher>(
    session: &SharedSession<L>,
    name: &str,
    arguments: Option<&Map<String, Value>>,
) -> Result<Called, ToolFailure> {
    let empty = Map::new();
    let arguments = arguments.unwrap_or(&empty);
    let shared = session;
    if name == READ_PAGE {
        let max_chars = max_chars(arguments)?;
        // The same read as `GET /sessions/{id}/text`, secrets hidden; between the session's
        // steps, never waiting for a person in control to hand back (it changes nothing).
        let layer = shared
            .lock()
            .await
            .visible_text()
            .await
            .map_err(|err| ToolFailure::Environment(err.to_string()))?;
        let compact = layer.compact(max_chars);
        return Ok(Called::Text(PageRead {
            facts: json!({
                "url": layer.url,
                "episode_id": layer.episode_id,
                "step": layer.step,
                "text": compact.text,
                "truncated": compact.truncated,
            }),
        }));
    }
    if name == REQUEST_HUMAN {
        let (reason, wait) = ask_arguments(arguments)?;
        let result = crate::session::ask_for_a_person(shared, &reason, wait)
            .await
            .map_err(|err| ToolFailure::Environment(err.to_string()))?;
        return Ok(Called::Observation(Outcome {
            result,
            state: shared.lock().await.state(),
        }));
    }
    let result = if name == "reset" {
        if let Some(extra) = arguments
            .keys()
            .find(|key| !RESET_ARGUMENTS.contains(&key.as_str()))
        {
            return Err(ToolFailure::Invalid(format!(
                "Invalid message: {extra}: Extra inputs are not permitted"
            )));
        }
        crate::session::agent_reset(shared, arguments).await
    } else {
        let set = shared.lock().await.actions();
        let op = Op::from_name(name)
            .filter(|op| set.ops().contains(op))
            .ok_or_else(|| ToolFailure::Unknown(name.to_string()))?;
        let action = action_from_tool_arguments(op, arguments)
            .map_err(|errors| ToolFailure::Invalid(ErrorFrame::validation(errors).message))?;
        crate::session::agent_step(shared, &action).await
    };
    let result = result.map_err(|err| ToolFailure::Environment(err.to_string()))?;
    Ok(Called::Observation(Outcome {
        result,
        state: shared.lock().await.state(),
    }))
}

impl Called {
    /// The structured content: an observation's facts, or what `read_page` read.
    pub fn facts(&self) -> Value {
        match self {
            Called::Observation(outcome) => outcome.facts(),
            Called::Text(read) => read.facts.clone(),
        }
    }

    /// OpenEnv's `data` (what `MCPToolClient.call_tool` returns): the facts, and an
    /// observation's screenshot.
    pub fn data(&self) -> Value {
        let mut data = self.facts();
        if let Called::Observation(outcome) = self {
            data["screenshot"] = json!(outcome.result.observation.screenshot);
        }
        data
    }

    /// The MCP result.
    pub fn into_result(self) -> CallToolResult {
        match self {
            Called::Observation(outcome) => outcome.into_result(),
            Called::Text(read) => {
                let text = read.facts["text"].as_str().unwrap_or_default();
                let shown = if text.is_empty() { NO_TEXT } else { text };
                let mut result = CallToolResult::success(vec![ContentBlock::text(shown)]);
                result.structured_content = Some(read.facts);
                result
            }
        }
    }
}

impl Outcome {
    /// The facts of the observation, without the screenshot.
    pub fn facts(&self) -> Value {
        let observation = &self.result.observation;
        let text = |key: &str| observation.metadata.get(key).and_then(Value::as_str);
        json!({
            "url": observation.url,
            "title": text("title").unwrap_or(""),
            "error": observation.error,
            "error_detail": text("error_detail"),
            "done": self.result.done,
            "reward": self.result.reward,
            "episode_id": self.state.episode_id,
            "step": self.state.step_count,
            "metadata": observation.metadata,
        })
    }

    /// The MCP result: the screenshot as an image, the facts as text and as structured content.
    pub fn into_result(self) -> CallToolResult {
        let facts = self.facts();
        let content = vec![
            ContentBlock::image(self.result.observation.screenshot, "image/png"),
            ContentBlock::text(facts.to_string()),
        ];
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(facts);
        result
    }
}

/// A failure the model should read and act on (a tool error, `isError`), not a protocol error.
pub fn failure_result(failure: &ToolFailure) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(failure.message())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_and_every_action_are_tools() {
        let names = |set: browserenv::ActionSet| -> Vec<String> {
            tools(set).iter().map(|t| t.name.to_string()).collect()
        };
        let seed = ["click", "type", "key", "scroll", "back", "wait", "finish"];
        let added = [
            "move",
            "drag",
            "mouse_down",
            "mouse_up",
            "press",
            "select",
            "forward",
            "goto",
        ];
        let expected = |ops: &[&str]| -> Vec<String> {
            std::iter::once("reset")
                .chain(ops.iter().copied())
                .chain(["read_page", "request_human"])
                .map(String::from)
                .collect()
        };
        assert_eq!(names(browserenv::ActionSet::Seed), expected(&seed));
        assert_eq!(
            names(browserenv::ActionSet::Full),
            expected(&[&seed[..], &added[..]].concat())
        );
        for tool in tools(browserenv::ActionSet::Full) {
            assert!(tool.output_schema.is_some(), "{}", tool.name);
            assert_eq!(tool.input_schema["type"], "object");
            let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
            let expected = matches!(tool.name.as_ref(), "wait" | "read_page");
            assert_eq!(read_only, Some(expected), "{}", tool.name);
        }
    }

    #[test]
    fn read_page_checks_its_bound_like_an_action_field() {
        let args = |value: Value| value.as_object().unwrap().clone();
        assert_eq!(max_chars(&args(json!({}))), Ok(DEFAULT_COMPACT_CHARS));
        assert_eq!(
            max_chars(&args(json!({"max_chars": null}))),
            Ok(DEFAULT_COMPACT_CHARS)
        );
        assert_eq!(max_chars(&args(json!({"max_chars": 500}))), Ok(500));
        let message = |value: Value| max_chars(&args(value)).unwrap_err().message();
        assert_eq!(
            message(json!({"max_chars": 99})),
            "Invalid message: max_chars: Input should be greater than or equal to 100"
        );
        assert_eq!(
            message(json!({"max_chars": -5})),
            "Invalid message: max_chars: Input should be greater than or equal to 100"
        );
        assert_eq!(
            message(json!({"max_chars": 100001})),
            "Invalid message: max_chars: Input should be less than or equal to 100000"
        );
        assert_eq!(
            message(json!({"max_chars": "a lot"})),
            "Invalid message: max_chars: Input should be a valid integer"
        );
        assert_eq!(
            message(json!({"chars": 5})),
            "Invalid message: chars: Extra inputs are not permitted"
        );
    }

    /// The reason is shown to people: one line, no control characters, nothing that reorders it
    /// (a right-to-left override would show `gpj.exe` as `exe.jpg`).
    #[test]
    fn a_reason_is_cleaned_as_every_text_shown_to_people() {
        let args = json!({"reason": "open\u{202e}gpj.exe\u{2066}\nplease\u{1b}[2J"});
        let (reason, _) = ask_arguments(args.as_object().unwrap()).unwrap();
        assert_eq!(reason, "opengpj.exe please[2J");
    }
}
