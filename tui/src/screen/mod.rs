//! The app on the terminal: where things go (`layout`), drawing the model (`view`), the picture
//! kept on screen (`painter`), the page's text over half-blocks (`text_overlay`), the terminal's
//! modes and their restore (`terminal`), and keys and the mouse as messages (`input`).

pub mod input;
pub mod layout;
pub mod painter;
pub mod terminal;
pub mod text_overlay;
pub mod view;
