//! A live session on the screen: its start and end from the command line (`start`: the server,
//! the terminal, the recorder), the event loop that ties input, the server link and drawing
//! together (`event_loop`), each frame it draws and reports (`frame`), watch mode (`watching`),
//! and the UI's side of recording (`recording`).

pub mod event_loop;
pub mod frame;
pub mod recording;
pub mod start;
pub mod watching;
