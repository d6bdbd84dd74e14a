//! Reading an archive back. An archive is untrusted input (downloaded, shared, hand-made): the file
//! must be a regular file reached without a symlink at its end; it is read as a stream, never
//! more than `ReadLimits::archive_bytes` once unpacked (a gzip bomb stops there) and no body past
//! `ReadLimits::body_bytes`; every header read is checked; a record that breaks a rule refuses
//! the whole archive with an error naming the record, so a replay never runs on part of one.

use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::budget::Budget;
use crate::catalog::{Catalog, Storage, Stored};
use crate::place::open_file;
use crate::scan::{first_info, scan_stored};
use crate::{ArchiveInfo, Exchange, Request};

/// How much of an archive is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// The most one body may hold (`BROWSER_ARCHIVE_BODY_MB`).
    pub body_bytes: u64,
    /// The most the whole archive may hold once unpacked (`BROWSER_ARCHIVE_EPISODE_MB`).
    pub archive_bytes: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            body_bytes: crate::DEFAULT_BODY_MB << 20,
            archive_bytes: crate::DEFAULT_EPISODE_MB << 20,
        }
    }
}

/// What an archive holds: its `warcinfo` and its exchanges, in the order they were recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Archive {
    pub info: ArchiveInfo,
    pub exchanges: Vec<Exchange>,
}

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("cannot open the archive {name}: {source}")]
    Open { name: String, source: io::Error },
    #[error("the archive {name} is refused: {why}")]
    Refused { name: String, why: String },
}

/// Where an archive's index is kept beside it: `NAME.cdxj` for `NAME` (`x.warc.gz.cdxj`).
pub fn index_path(archive: &Path) -> PathBuf {
    let mut name = archive.file_name().unwrap_or_default().to_os_string();
    name.push(".cdxj");
    archive.with_file_name(name)
}

/// Open the archive at `path` (a WARC, gzipped or not, an ARC, or a WACZ; a regular file, no
/// symlink at its end), `name` being how every error calls it (the client's name for it, never
/// the server's path). Its index is used where it has one (a WACZ's, or a CDXJ file beside it
/// no older than it); else the whole file is read once, within the budget.
pub fn open(path: &Path, name: &str, limits: &ReadLimits) -> Result<Catalog, ArchiveError> {
    open_with(path, name, limits, true)
}

fn open_with(
    path: &Path,
    name: &str,
    limits: &ReadLimits,
    use_index: bool,
) -> Result<Catalog, ArchiveError> {
    let refused = |why: String| ArchiveError::Refused {
        name: name.to_string(),
        why,
    };
    let (file, metadata) = open_file(path).map_err(|source| ArchiveError::Open {
        name: name.to_string(),
        source,
    })?;
    if !metadata.is_file() {
        return Err(refused("it is not a regular file".into()));
    }
    let budget = Budget::new(limits.archive_bytes);
    let mut magic = [0u8; 4];
    let got = file.read_at(&mut magic, 0).unwrap_or(0);
    let file = Arc::new(file);
    if name.ends_with(".wacz") || (got == 4 && &magic == b"PK\x03\x04") {
        return crate::wacz::open(file, metadata.len(), name, limits, &budget).map_err(refused);
    }
    let stored = Stored {
        storage: Storage::File(file.clone()),
        base: 0,
        len: metadata.len(),
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        arc: false,
    };
    let index = use_index
        .then(|| index_beside(path, &metadata, limits))
        .flatten();
    if let Some(index) = index {
        return match crate::cdxj::read_index(&index, &budget, |_| Some(0)) {
            Ok(entries) => {
                let info = first_info(&stored, &budget).unwrap_or_default();
                Ok(Catalog::new(name, info, entries, vec![stored], *limits))
            }
            Err(why) => Err(refused(format!("its index {name}.cdxj: {why}"))),
        };
    }
    scan_stored(stored, &mut (&*file), name, limits, &budget).map_err(refused)
}

/// Open an archive held in memory (tests, fuzzing): the same rules as a file's.
pub fn open_bytes(bytes: &[u8], name: &str, limits: &ReadLimits) -> Result<Catalog, ArchiveError> {
    let budget = Budget::new(limits.archive_bytes);
    let stored = Stored {
        storage: Storage::Memory(Arc::from(bytes)),
        base: 0,
        len: bytes.len() as u64,
        name: name.to_string(),
        arc: false,
    };
    scan_stored(stored, &mut &bytes[..], name, limits, &budget).map_err(|why| {
        ArchiveError::Refused {
            name: name.to_string(),
            why,
        }
    })
}

/// The index beside `archive`, when it may be used: a regular file (no symlink), no older than
/// the archive, no longer than the budget.
fn index_beside(
    archive: &Path,
    metadata: &std::fs::Metadata,
    limits: &ReadLimits,
) -> Option<PathBuf> {
    let index = index_path(archive);
    let found = std::fs::symlink_metadata(&index).ok()?;
    let fresh = match (found.modified(), metadata.modified()) {
        (Ok(index_time), Ok(archive_time)) => index_time >= archive_time,
        _ => false,
    };
    (found.is_file() && fresh && found.len() <= limits.archive_bytes).then_some(index)
}

/// Read the archive at `path` whole: every response with its request, bodies in memory (tests,
/// tools; a replay uses `open`, which reads bodies as pages ask).
pub fn read(path: &Path, limits: &ReadLimits) -> Result<Archive, ArchiveError> {
    let name = path.display().to_string();
    // Read whole, its requests too (an index keeps only how each was asked).
    let catalog = open_with(path, &name, limits, false)?;
    whole(&catalog, limits)
}

/// Read an archive from `source` whole, `name` being how errors call it.
pub fn read_from(
    source: impl Read,
    name: &str,
    limits: &ReadLimits,
) -> Result<Archive, ArchiveError> {
    let mut bytes = Vec::new();
    source
        .take(limits.archive_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| ArchiveError::Open {
            name: name.to_string(),
            source,
        })?;
    let catalog = open_bytes(&bytes, name, limits)?;
    whole(&catalog, limits)
}

/// Every entry of `catalog` loaded, within a budget of its own.
pub fn whole(catalog: &Catalog, limits: &ReadLimits) -> Result<Archive, ArchiveError> {
    let budget = Budget::new(limits.archive_bytes);
    let refused = |why: String| ArchiveError::Refused {
        name: catalog.name().to_string(),
        why,
    };
    let mut exchanges = Vec::with_capacity(catalog.entries.len());
    for (index, entry) in catalog.entries.iter().enumerate() {
        let response = catalog.load(index, &budget).map_err(refused)?;
        let request = catalog
            .load_request(index, &budget)
            .map_err(refused)?
            .unwrap_or_else(|| Request {
                method: entry.method.clone(),
                url: entry.url.clone(),
                headers: Vec::new(),
                body: Vec::new(),
            });
        exchanges.push(Exchange {
            request: Request {
                url: entry.url.clone(),
                ..request
            },
            response,
            date: entry.date,
        });
    }
    Ok(Archive {
        info: catalog.info.clone(),
        exchanges,
    })
}

#[cfg(test)]
mod tests;
