//! Typed models of the browser environment, mirroring the Python pydantic models of OpenEnv.
//!
//! Actions arrive from an unmodified Python client, so [`BrowserAction::from_value`] validates
//! them the way pydantic v2 does in lax mode and reports failures in pydantic's error shape.

mod action;
mod fields;
#[cfg(test)]
mod gesture_tests;
mod keyboard;
mod observation;
mod schema;
#[cfg(test)]
mod tests;
mod tools;
mod validation;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

pub const VIEWPORT_WIDTH: i64 = 800;
pub const VIEWPORT_HEIGHT: i64 = 600;
/// Counted in chars (unicode scalar values), like Python's `len()`.
pub const MAX_TEXT_CHARS: usize = 2000;
pub const MAX_SCROLL: i64 = 1200;

pub use action::*;
pub use fields::{
    MAX_CLICK_COUNT, MAX_MODIFIERS, MAX_PATH_POINTS, MAX_REPEAT, MAX_URL_CHARS, MIN_PATH_POINTS,
};
pub use keyboard::*;
pub use observation::*;
pub use schema::*;
pub use tools::*;
pub use validation::{pydantic_int, FieldError};

// The validation helpers, for the rooms (`use super::*`).
use fields::*;
use validation::*;
