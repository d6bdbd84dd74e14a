//! Subcommands on files, with no live session on the screen: `view` (`viewer`), `export`, `replay`
//! and `tasks` (`task_files`).

pub mod export;
pub mod replay;
pub mod task_files;
pub mod viewer;
