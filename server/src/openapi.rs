//! `GET /openapi.json`: an OpenAPI 3.1 document generated from the routes themselves. Each handler
//! carries its `#[utoipa::path]`, and `app::router` registers it with `utoipa_axum::routes!`, which
//! takes the method and the path from that annotation: a route cannot be served without being
//! documented, nor documented without being served (`server/clippy.toml` forbids the plain
//! `.route(...)` that would get around it).
//!
//! The three models keep the hand-built pydantic shapes of `browserenv::models` (`action_schema`
//! etc.), which Python clients read: the routes refer to them through the stand-ins in [`raw`],
//! and [`document`] puts the real schemas in their place, byte for byte.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use browserenv::models::{action_schema, observation_schema, state_schema};

/// The document's frame: what is not said by a route.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "browserenv",
        description = "OpenEnv browser environment: a real headless Chromium per session. Agents \
            normally use the `/ws` WebSocket (one session per connection; the frames are in \
            docs/wire.md §2); the HTTP `/reset`, `/step` and `/state` routes drive one shared HTTP \
            session. Error answers are `{\"detail\": \"...\", \"code\": \"...\"}` (`ErrorBody`), \
            except FastAPI's 422 `{\"detail\": [...]}` (`HTTPValidationError`). When the server \
            has a token (`BROWSER_API_TOKEN`), every route but `/health` and `/ready` needs \
            `Authorization: Bearer <token>` (401 `UNAUTHORIZED` without it); every route checks \
            `Origin` and `Host` (403 `ORIGIN_NOT_ALLOWED`, `HOST_NOT_ALLOWED`)."
    ),
    modifiers(&BearerToken),
    // The token is optional: the empty requirement is "no token configured".
    security((), ("bearer" = [])),
    tags(
        (name = "openenv", description = "The OpenEnv wire contract (docs/wire.md §3)"),
        (name = "mcp", description = "MCP and OpenEnv's JSON-RPC (docs/wire.md §6)"),
        (name = "sessions", description = "Read-only session routes of the terminal UI, outside the wire contract"),
        (name = "deployment", description = "Probes for balancers and orchestrators, and the replicas behind one address (docs/deployment.md)"),
        (name = "campaign", description = "Demonstration campaigns (`--campaign DIR`): a team's next tasks, progress, reviews by a second person (docs/campaigns.md)"),
        (name = "Task API", description = "OpenEnv's optional Task API: the `--tasks` file as a split of the environment `browserenv`, side-effect free (docs/wire.md §3.1)"),
    )
)]
pub struct ApiDoc;

struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "`BROWSER_API_TOKEN`, when the server has one (`--token`); `/health` \
                         and `/ready` never need it",
                    ))
                    .build(),
            ),
        );
    }
}

/// The generated document as JSON, with the models' own schemas in `components.schemas`.
pub fn document(api: utoipa::openapi::OpenApi, actions: browserenv::ActionSet) -> Value {
    let mut doc = serde_json::to_value(api).expect("an OpenAPI document serializes");
    let schemas = doc["components"]["schemas"]
        .as_object_mut()
        .expect("the routes refer to component schemas");
    for (name, schema) in raw::schemas() {
        schemas.insert(name.into(), schema);
    }
    // The action the server takes: the seed's with `BROWSER_ACTIONS=seed`.
    schemas.insert(
        "BrowserAction".into(),
        browserenv::models::action_schema_in(actions),
    );
    doc
}

/// Stand-ins for the models, named as their components: the routes refer to
/// `#/components/schemas/BrowserAction` etc. through them, and [`document`] swaps the stand-in
/// (an empty object) for the hand-built schema.
pub mod raw {
    use std::borrow::Cow;

    use serde_json::Value;
    use utoipa::openapi::schema::{Object, Schema};
    use utoipa::openapi::RefOr;
    use utoipa::{PartialSchema, ToSchema};

    macro_rules! stand_in {
        ($($name:ident => $schema:path),* $(,)?) => {
            $(
                #[doc = concat!("`#/components/schemas/", stringify!($name), "`: `", stringify!($schema), "()`.")]
                pub struct $name;

                impl PartialSchema for $name {
                    fn schema() -> RefOr<Schema> {
                        Object::new().into()
                    }
                }

                impl ToSchema for $name {
                    fn name() -> Cow<'static, str> {
                        stringify!($name).into()
                    }
                }
            )*

            /// The schemas that replace the stand-ins, by component name.
            pub fn schemas() -> Vec<(&'static str, Value)> {
                vec![$((stringify!($name), $schema())),*]
            }
        };
    }

    stand_in! {
        BrowserAction => super::action_schema,
        BrowserObservation => super::observation_schema,
        BrowserState => super::state_schema,
    }
}

/// `POST /reset`: the reset keyword arguments at the top level, as OpenEnv sends them. An empty
/// body counts as `{}`; keys not listed here are accepted and ignored.
#[derive(ToSchema)]
pub struct ResetRequest {
    /// The page to open: an HTTP(S) URL without credentials. Required unless `task_id` names a
    /// task, whose own start page is then used (a missing or refused URL is a 400
    /// `EXECUTION_ERROR`).
    #[schema(example = "https://example.com")]
    pub start_url: Option<String>,
    /// The new episode's id (a fresh UUID when absent).
    pub episode_id: Option<String>,
    /// Accepted and unused: a live web page has no seed.
    pub seed: Option<i64>,
    /// A task of the server's `--tasks` file, checked at the episode's end.
    pub task_id: Option<String>,
}

/// `POST /step`: one action, wrapped (unlike on the WebSocket).
#[derive(ToSchema)]
pub struct StepRequest {
    pub action: raw::BrowserAction,
    /// Accepted and ignored: steps have their own deadlines.
    pub timeout_s: Option<f64>,
}

/// The answer of `/reset` and `/step`.
#[derive(ToSchema)]
pub struct StepReply {
    pub observation: raw::BrowserObservation,
    #[schema(required = true)]
    pub reward: Option<f64>,
    pub done: bool,
    /// The observation's metadata when it is non-empty, else null.
    #[schema(value_type = Option<Object>, required = true)]
    pub metadata: Option<Map<String, Value>>,
}

/// `GET /health`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    #[schema(example = "healthy")]
    pub status: &'static str,
}

/// `GET /ready`: whether this replica takes a new session now.
#[derive(Serialize, ToSchema)]
pub struct Readiness {
    /// `ready`; `at_capacity` while every `BROWSER_MAX_SESSIONS` slot is taken; `draining` once it
    /// is shutting down.
    #[schema(example = "ready")]
    pub status: &'static str,
}

/// `GET /metadata`: OpenEnv's environment metadata.
#[derive(Serialize, ToSchema)]
pub struct Metadata {
    pub name: &'static str,
    pub description: &'static str,
    /// This server's README.
    pub readme_content: &'static str,
    pub version: &'static str,
    pub author: &'static str,
    #[schema(required = true)]
    pub documentation_url: Option<&'static str>,
}

/// `GET /schema`: the JSON Schemas of the models, in pydantic's shapes.
#[derive(Serialize, ToSchema)]
pub struct Schemas {
    /// As `#/components/schemas/BrowserAction`.
    #[schema(value_type = Object)]
    pub action: Value,
    /// As `#/components/schemas/BrowserObservation`.
    #[schema(value_type = Object)]
    pub observation: Value,
    /// As `#/components/schemas/BrowserState`.
    #[schema(value_type = Object)]
    pub state: Value,
}

/// A JSON-RPC 2.0 request (`POST /mcp`).
#[derive(ToSchema)]
pub struct JsonRpcRequest {
    #[schema(example = "2.0")]
    pub jsonrpc: String,
    #[schema(value_type = Option<Object>)]
    pub id: Option<Value>,
    /// MCP's (`initialize`, `tools/list`, `tools/call`, ...) or OpenEnv's
    /// (`openenv/session/create`, `openenv/session/close`).
    #[schema(example = "tools/list")]
    pub method: String,
    #[schema(value_type = Option<Object>)]
    pub params: Option<Value>,
}
