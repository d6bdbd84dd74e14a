//! Caller-side crate of the browser environment: the typed models of the OpenEnv wire contract, the
//! message envelopes, and an async client. Nothing here knows about Chromium or axum, so agents and
//! the terminal UI can depend on it without pulling in the server.
//!
//! The contract these types implement is `docs/wire.md`; `docs/ARCHITECTURE.md` describes the
//! whole system and defines the terms comments use, such as "the seed" (the original Python
//! environment this project reimplements).

pub mod campaign;
pub mod client;
pub mod models;
pub mod observation_error;
pub mod protocol;
pub mod secrets;
pub mod solutions;
pub mod tasks;
pub mod text_layer;
pub mod trajectory;

pub use client::{Client, ClientError, ResetOptions};
pub use models::{
    BrowserAction, BrowserObservation, BrowserState, FieldError, Key, Op, StepResult,
};
pub use observation_error::ObservationError;
