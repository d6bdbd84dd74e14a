//! The terminal UI: watch and drive a browserenv session, locally or over SSH.
//!
//! Rooms by job: `app` is the model and its pure update; `graphics` asks the terminal what it can
//! show, encodes for it and maps cells and pixels to page pixels (`picture`); `screen` draws the
//! model on the terminal; `live` is a session on the screen (the event loop, watch mode); `net`
//! reaches the server (or embeds one); `offline` holds the subcommands on files (view, export,
//! replay, tasks). `cli` parses the command line and hands each subcommand to its room.
//!
//! How the UI fits with the server (embedded or remote) is in `docs/ARCHITECTURE.md`.

pub mod app;
pub mod asks;
pub mod cli;
pub mod command;
pub mod graphics;
pub mod live;
pub mod net;
pub mod offline;
pub mod output;
pub mod review;
pub mod screen;
