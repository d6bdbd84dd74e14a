//! A live session on the screen: the event loop that ties input, the server link and drawing
//! together (`event_loop`), watch mode (`watching`), and the UI's side of recording
//! (`recording`).

pub mod event_loop;
pub mod recording;
pub mod watching;
