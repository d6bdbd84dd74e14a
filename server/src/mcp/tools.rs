//! The tools an MCP client sees, and what a call does to its session: `reset` plus one tool per
//! action (their schemas and argument checks are the action model's, `browserenv::models::tools`).
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

use crate::browser::Launcher;
use crate::session::SharedSession;

/// Arguments `reset` takes; the environment checks their values.
const RESET_ARGUMENTS: [&str; 3] = ["start_url", "task_id", "episode_id"];

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

fn tool(name: &str, description: String, schema: Value, read_only: bool) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("tool schemas are objects")
    };
    let mut tool = Tool::new(name.to_string(), description, Arc::new(schema))
        .with_raw_output_schema(Arc::new(output_schema()));
    // Hints for clients that ask before acting: only `wait` leaves the page as it is.
    let mut annotations = rmcp::model::ToolAnnotations::default();
    annotations.read_only_hint = Some(read_only);
    annotations.open_world_hint = Some(true);
    tool.annotations = Some(annotations);
    tool
}

/// Every tool, `reset` first.
pub fn tools() -> Vec<Tool> {
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
                "task_id": {"type": "string", "description": "A task of the server's task set, instead of start_url"},
                "episode_id": {"type": "string", "description": "An id for the episode (the server makes one up otherwise)"},
            },
            "additionalProperties": false,
        }),
        false,
    );
    std::iter::once(reset)
        .chain(Op::ALL.into_iter().map(|op| {
            tool(
                op.name(),
                action_tool_description(op),
                action_tool_schema(op),
                op == Op::Wait,
            )
        }))
        .collect()
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
) -> Result<Outcome, ToolFailure> {
    let empty = Map::new();
    let arguments = arguments.unwrap_or(&empty);
    let shared = session;
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
        let op = Op::from_name(name).ok_or_else(|| ToolFailure::Unknown(name.to_string()))?;
        let action = action_from_tool_arguments(op, arguments)
            .map_err(|errors| ToolFailure::Invalid(ErrorFrame::validation(errors).message))?;
        crate::session::agent_step(shared, &action).await
    };
    let result = result.map_err(|err| ToolFailure::Environment(err.0))?;
    Ok(Outcome {
        result,
        state: shared.lock().await.state(),
    })
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
        let names: Vec<String> = tools().iter().map(|t| t.name.to_string()).collect();
        assert_eq!(
            names,
            ["reset", "click", "type", "key", "scroll", "back", "wait", "finish"]
        );
        for tool in tools() {
            assert!(tool.output_schema.is_some(), "{}", tool.name);
            assert_eq!(tool.input_schema["type"], "object");
        }
    }
}
