//! Web archives of browser episodes: what a page loaded (every response with its request), kept
//! as WARC 1.1 (ISO 28500) so that standard tools (warcio, pywb) read it, and read back within
//! bounds so that an episode can be answered from it instead of the network.
//!
//! Rooms: `exchange` (one request and its response), `http` (the HTTP messages inside WARC
//! records), `write` (an archive file, one gzip member per record, and its index), `read`
//! (opening an archive: WARC, ARC or WACZ, by its index or by reading it once), `framing` (records
//! as they sit in a file), `scan` (reading one whole, every rule checked), `catalog` (what an
//! opened archive holds, its bodies read when asked), `cdxj` (indexes), `wacz` (the package read), `pack` (a package written),
//! `budget` (the decoded bytes an archive may cost), `matching` (which recorded response answers
//! a request), `cookies` (recorded `Set-Cookie` headers made fit to replay), `place` (where an
//! archive named by a task line or a reset may be).
//!
//! Nothing here knows Chromium or the server: the server's `archive` module drives the browser
//! and uses these rules.

mod budget;
mod catalog;
mod cdxj;
mod cookies;
mod exchange;
mod framing;
mod http;
mod matching;
mod pack;
mod place;
mod read;
mod scan;
mod wacz;
mod write;

pub use budget::Budget;
pub use catalog::{Catalog, Entry};
pub use cdxj::surt;
pub use cookies::replayed_set_cookie;
pub use exchange::{clean_header, is_transfer_header, Exchange, Header, Request, Response};
pub use matching::{is_cache_buster, ReplayIndex};
pub use pack::{write_wacz, WaczPage};
pub use place::{check_name, resolve_inside, ARCHIVES_DIR};
pub use read::{
    index_path, open, open_bytes, read, read_from, whole, Archive, ArchiveError, ReadLimits,
};
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
