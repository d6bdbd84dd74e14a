//! Demonstration trajectories, format v1: a folder with `steps.jsonl` (one line per step, appended,
//! flushed and fsynced as it happens), `episodes.jsonl` (one line per ended episode) and
//! `screenshots/<sha256>.png` (each distinct screenshot stored once).
//!
//! A step line pairs what the actor saw (`file_name`, `url`) with what it did (`action`, the wire
//! action) and what followed (`next_file_name`, `next_url`, `error`, `reward`, `done`). The files
//! load with Hugging Face `datasets` as plain JSON.
//!
//! A recording is untrusted input (downloaded, shared, hand-edited): readers take a frame only by
//! a name the writer could have made (`is_frame_name`) and follow no symlink (`read_frame`), so a
//! step cannot make them read outside the folder. One writer per folder (`LOCK_FILE`).

mod frames;
mod reader;
mod recorder;
mod records;
#[cfg(test)]
mod tests;
mod writer;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use frames::*;
pub use reader::*;
pub use recorder::*;
pub use records::*;
pub use writer::*;

/// The `schema` tag of every line of this version.
pub const SCHEMA: &str = "browserenv.trajectory.v1";
pub const STEPS_FILE: &str = "steps.jsonl";
pub const EPISODES_FILE: &str = "episodes.jsonl";
/// A review of the recording, kept beside it (the terminal UI's review mode writes it).
pub const REVIEW_FILE: &str = "review.jsonl";
/// The `schema` tag of every review line.
pub const REVIEW_SCHEMA: &str = "browserenv.review.v1";
pub const SCREENSHOTS_DIR: &str = "screenshots";
/// Locked (`flock`, exclusive) by the folder's writer for as long as it lives.
pub const LOCK_FILE: &str = ".recorder.lock";
