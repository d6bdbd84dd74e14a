//! Driving a page: a tab made ready and its events (`page_events`, with the in-page probe
//! `probe.js`), commands and input events (`input`), the gestures beyond a click and their
//! isolated world (`gestures`, `gestures.js`), the open `<select>` drawn and chosen (`dropdown`),
//! the episode's clipboard (`clipboard`), history and loads (`navigation`), what settled means
//! (`settle`), following tabs (`tabs`), the picture (`capture`), what an episode asks of its pages
//! beyond that and the picture's pixels mapped to the page's (`page_setup`), the next episode's
//! page loaded ahead in its own fresh context (`prepared`), and the `Browser`
//! seam's operations built from them (`seam`).

pub mod capture;
pub(super) mod clipboard;
pub(super) mod dropdown;
pub(super) mod gestures;
pub(super) mod input;
pub(super) mod navigation;
pub(super) mod page_events;
pub(super) mod page_setup;
pub(super) mod prepared;
mod seam;
pub(super) mod settle;
pub(super) mod tabs;
