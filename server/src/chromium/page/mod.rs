//! Driving a page: a tab made ready and its events (`page_events`, with the in-page probe
//! `probe.js`), commands and input events (`input`), history and loads (`navigation`), what
//! settled means (`settle`), following tabs (`tabs`), the picture (`capture`), what an episode
//! asks of its pages beyond that and the picture's pixels mapped to the page's (`page_setup`), and
//! the `Browser` seam's operations built from them (`seam`).

pub mod capture;
pub(super) mod input;
pub(super) mod navigation;
pub(super) mod page_events;
pub(super) mod page_setup;
mod seam;
pub(super) mod settle;
pub(super) mod tabs;
