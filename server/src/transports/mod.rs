//! How clients reach a session: the `/ws` WebSocket, the shared HTTP session, a session's watch socket, and MCP (Streamable HTTP, stdio, OpenEnv's JSON-RPC).

pub mod http_session;
pub mod mcp;
pub mod watcher;
pub mod websocket;
