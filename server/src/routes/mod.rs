//! Routes beside the transports that serve no session of their own: a demonstration campaign's
//! (`campaign`, over the hub in `crate::campaign`) and OpenEnv's Task API (`task_api`).

pub mod campaign;
pub mod task_api;
