//! The terminal UI: watch and drive a browserenv session, locally or over SSH.
//!
//! `app` is the model and its pure update; `view` draws it where `layout` puts things; `picture`
//! maps cells and pixels to page pixels and prepares screenshots; `graphics` asks the terminal what
//! it can show and encodes for it; `painter` keeps the picture on screen; `text_overlay` draws the
//! page's text over half-blocks; `event_loop` ties input, the server link and drawing together.
//!
//! How the UI fits with the server (embedded or remote) is in `docs/ARCHITECTURE.md`.

pub mod app;
pub mod asks;
pub mod campaign;
pub mod cli;
pub mod command;
pub mod connection;
pub mod embedded;
pub mod event_loop;
pub mod export;
pub mod graphics;
pub mod input;
pub mod layout;
pub mod output;
pub mod painter;
pub mod picture;
pub mod recording;
pub mod replay;
pub mod review;
pub mod sessions;
pub mod task_files;
pub mod terminal;
pub mod text_overlay;
pub mod view;
pub mod viewer;
pub mod watching;
