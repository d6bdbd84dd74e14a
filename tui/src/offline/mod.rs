//! Subcommands on files, with no live session on the screen: `view` (`viewer`), `export`, `replay`,
//! `tasks` (`task_files`), and `review` (`campaign_review`: a campaign's demonstrations fetched
//! one by one into the viewer).

pub mod campaign_review;
pub mod export;
pub mod replay;
pub mod task_files;
pub mod viewer;
