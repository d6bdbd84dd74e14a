//! What the pages' requests meet on their way: an episode's archive work by DevTools request
//! interception (`archive`), the request log a task's check reads (`requests`), and the
//! private-network egress proxy (`egress`).

pub(super) mod archive;
pub mod egress;
pub(super) mod requests;
