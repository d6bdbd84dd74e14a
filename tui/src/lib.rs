//! The terminal UI: watch and drive a browserenv session, locally or over SSH.
//!
//! `app` is the model and its pure update; `view` draws it; `picture` maps cells to page pixels
//! and prepares screenshots for the terminal; `event_loop` ties input, the server link and
//! drawing together.

pub mod app;
pub mod cli;
pub mod command;
pub mod connection;
pub mod embedded;
pub mod event_loop;
pub mod export;
pub mod input;
pub mod picture;
pub mod replay;
pub mod terminal;
pub mod view;
pub mod viewer;
pub mod watching;
