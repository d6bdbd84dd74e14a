//! Collecting demonstrations: the trajectory format (records, frames, the writer, the recorder
//! and the reader), task sets and their checks, reference solutions, and demonstration
//! campaigns' rules. The server, the terminal UI and pipelines that read recordings use it; an
//! agent that only drives the environment needs `browserenv` (the wire models and the client)
//! alone, without these.

pub mod campaign;
pub mod solutions;
pub mod tasks;
pub mod trajectory;
