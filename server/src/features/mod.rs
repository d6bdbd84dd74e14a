//! What the server offers beyond the environment itself: demonstration campaigns, OpenEnv's Task API, web archives and recording episodes.

pub mod archive;
pub mod campaign;
pub mod recording;
pub mod task_api;
