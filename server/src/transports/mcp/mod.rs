//! MCP (Model Context Protocol): a session's browser as tools, for agent frameworks and coding
//! assistants. `tools.rs` says what the tools are and runs them on a session (`server/src/session/mod.rs`),
//! `capture.rs` the one that takes a picture of the page;
//! `handler.rs` is the standard MCP server (rmcp) over Streamable HTTP at `/mcp` and over stdio;
//! `openenv.rs` is OpenEnv's own MCP dialect (`MCPToolClient`); `endpoint.rs` tells the two apart
//! on `/mcp`. docs/server.md, "MCP", has the client side.

pub mod capture;
pub mod endpoint;
pub mod handler;
pub mod openenv;
pub mod tools;

use std::sync::Arc;

use rmcp::ServiceExt;

use crate::browser::Launcher;
use crate::session::Sessions;

/// Serve one MCP session over stdin and stdout until stdin ends (`browserenv-server mcp`).
pub async fn serve_stdio<L: Launcher>(sessions: Arc<Sessions<L>>) -> anyhow::Result<()> {
    let tools = handler::BrowserTools::new(sessions, Some("stdio".into()));
    let running = tools.serve(rmcp::transport::stdio()).await?;
    let ended = running.waiting().await?;
    tracing::info!("MCP over stdio ended: {ended:?}");
    Ok(())
}
