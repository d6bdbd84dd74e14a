//! The server: the session link over its WebSocket (`connection`), the read-only session routes
//! (`sessions`), a campaign's routes (`campaign`), and the server embedded in this process
//! (`embedded`).

pub mod campaign;
pub mod connection;
pub mod embedded;
pub mod sessions;
