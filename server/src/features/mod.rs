//! What the server offers beyond the environment itself: demonstration campaigns, OpenEnv's Task API, web archives, recording episodes and MiniWoB++.

pub mod archive;
pub mod campaign;
pub mod miniwob;
pub mod recording;
pub mod task_api;
