//! The standard MCP face (rmcp): one `BrowserTools` per MCP session, over Streamable HTTP at
//! `/mcp` or over stdio. The session (`server/src/session/mod.rs`) is opened at `initialize`, so an MCP session
//! holds a capacity slot, is listed in `/sessions` and recorded like any other; it is closed when
//! the MCP session ends (the client's DELETE, its idle timeout, the end of stdin).

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::browser::Launcher;
use crate::operations::connection::Peer;
use crate::session::{Sessions, SharedSession, Transport};
use crate::transports::mcp::tools::{self, ToolFailure};

const INSTRUCTIONS: &str = "A real Chromium browser with an 800x600 viewport. Call reset with a \
    start_url (or a task_id) first. Every tool returns a PNG screenshot of the page and its URL, \
    title, error code and done flag. Coordinates are pixels of that screenshot: x from the left \
    (0-799), y from the top (0-599). Click a field before typing into it; finish ends the episode. \
    read_page gives the page's visible text, one line per line of text with its box in those \
    pixels, without acting; capture takes a fresh picture without acting, of the viewport or of a \
    region of it drawn at a higher scale (to read small print).";

pub struct BrowserTools<L: Launcher> {
    sessions: Arc<Sessions<L>>,
    /// Where the client connects from, when the transport knows (stdio says so itself).
    peer: Option<String>,
    /// Opened at `initialize`: rmcp also makes handlers it never initializes (for a version
    /// probe, say), and those must not take a slot.
    session: Mutex<Option<SharedSession<L>>>,
}

impl<L: Launcher> BrowserTools<L> {
    pub fn new(sessions: Arc<Sessions<L>>, peer: Option<String>) -> Self {
        BrowserTools {
            sessions,
            peer,
            session: Mutex::new(None),
        }
    }

    fn session(&self) -> Option<SharedSession<L>> {
        self.session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

impl<L: Launcher> Drop for BrowserTools<L> {
    fn drop(&mut self) {
        let session = self
            .session
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let (Some(session), Ok(runtime)) = (session, tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move { session.lock().await.close().await });
        }
    }
}

impl<L: Launcher> ServerHandler for BrowserTools<L> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("browserenv", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_instructions(INSTRUCTIONS)
    }

    /// Revisions with `initialize` only: the newest one has no sessions, so every request would
    /// get a handler (and a browser) of its own. A client that asks for it falls back.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        let peer = self.peer.clone().unwrap_or_else(|| {
            context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Peer>())
                .map_or_else(|| "unknown".to_string(), |peer| peer.0.clone())
        });
        let session = self
            .sessions
            .open(Transport::Mcp, peer)
            .map_err(|refused| {
                let frame = refused.frame();
                ErrorData::internal_error(frame.message, Some(Value::Object(frame.extra)))
            })?;
        *self
            .session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(session);
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::tools(
            self.sessions.settings().actions,
        )))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::tools(self.sessions.settings().actions)
            .into_iter()
            .find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(session) = self.session() else {
            return Err(ErrorData::invalid_request(
                "no session: initialize first",
                None,
            ));
        };
        match tools::call(&session, &request.name, request.arguments.as_ref()).await {
            Ok(outcome) => Ok(outcome.into_result().into()),
            Err(failure @ ToolFailure::Unknown(_)) => {
                Err(ErrorData::invalid_params(failure.message(), None))
            }
            Err(failure) => Ok(tools::failure_result(&failure).into()),
        }
    }
}
