//! Caller-side crate of the browser environment: the typed models of the OpenEnv wire contract, the
//! message envelopes, an async client, and the one rule for a person's secrets. What collecting
//! demonstrations needs beyond that (trajectories, task sets, campaigns) is `browserenv-collect`. Nothing here knows about Chromium or axum, so agents and
//! the terminal UI can depend on it without pulling in the server.
//!
//! The contract these types implement is `docs/wire.md`; `docs/ARCHITECTURE.md` describes the
//! whole system and defines the terms comments use, such as "the seed" (the original Python
//! environment this project reimplements).

pub mod client;
pub mod models;
pub mod observation_error;
pub mod protocol;
pub mod secrets;
pub mod text_layer;

pub use client::{Client, ClientError, ResetOptions};
pub use models::{
    Action, ActionSet, BrowserAction, BrowserObservation, BrowserState, Chord, FieldError, Key,
    KeyName, Modifier, Modifiers, MouseButton, Op, Point, StepResult,
};
pub use observation_error::ObservationError;
