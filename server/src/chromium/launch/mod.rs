//! Launching and reaching a browser: our own Chromium processes and their profiles (`process`),
//! the DevTools pipe (`pipe`), the sandbox (`sandbox`), the renderer memory limit (`memory`), a
//! browser already running (`remote`), a host and its contexts (`host`), and the CDP connection
//! with its browser-level watchers (`connect`). Imported by the adapter's `mod.rs` and the other
//! rooms; it imports neither `page` nor `intercept`.

pub(super) mod connect;
pub(super) mod host;
pub(super) mod memory;
/// Public for the tests and the bench's `transport` part, which measure the bridge.
pub mod pipe;
pub(super) mod process;
pub(super) mod remote;
pub mod sandbox;
