//! Web archives of browser episodes: what a page loaded (every response with its request), kept
//! as WARC 1.1 (ISO 28500) so that standard tools (warcio, pywb) read it, and read back within
//! bounds so that an episode can be answered from it instead of the network.
//!
//! Rooms: `exchange` (one request and its response), `http` (the HTTP messages inside WARC
//! records), `write` (an archive file, one gzip member per record), `read` (an archive file back,
//! every bound enforced: a crafted file is refused with a clear error), `matching` (which recorded
//! response answers a request), `cookies` (recorded `Set-Cookie` headers made fit to replay),
//! `place` (where an archive named by a task line or a reset may be).
//!
//! Nothing here knows Chromium or the server: the server's `archive` module drives the browser
//! and uses these rules.

mod cookies;
mod exchange;
mod http;
mod matching;
mod place;
mod read;
mod write;

pub use cookies::replayed_set_cookie;
pub use exchange::{clean_header, is_transfer_header, Exchange, Header, Request, Response};
pub use matching::{is_cache_buster, ReplayIndex};
pub use place::{check_name, resolve_inside, ARCHIVES_DIR};
pub use read::{read, read_from, Archive, ArchiveError, ReadLimits};
pub use write::{ArchiveInfo, ArchiveWriter};

/// `BROWSER_ARCHIVE_BODY_MB`'s default: the most of one response body an archive keeps, and reads.
/// Far above a page's documents, scripts and pictures; below DevTools' 32 MiB answer limit once
/// base64-encoded (the body reaches the server that way).
pub const DEFAULT_BODY_MB: u64 = 16;
/// The most `BROWSER_ARCHIVE_BODY_MB` may be: 24 MiB is 32 MiB in base64.
pub const MAX_BODY_MB: u64 = 24;
/// `BROWSER_ARCHIVE_EPISODE_MB`'s default: the most an episode's archive keeps, and the most an
/// archive may hold once unpacked when it is read.
pub const DEFAULT_EPISODE_MB: u64 = 256;
