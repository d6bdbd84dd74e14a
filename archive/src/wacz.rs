//! WACZ (Webrecorder's package, <https://specs.webrecorder.net/wacz/1.1.1/>): a zip of WARC files
//! (`archive/`), their CDXJ index (`indexes/`), the pages a person may open (`pages/pages.jsonl`)
//! and `datapackage.json` with every file's SHA-256. Read: the WARC files are read in place, at
//! the offsets the index gives (they are stored in the zip as they are, as the spec asks), so a
//! reset reads the index only. Written by `pack`.
//!
//! A WACZ is untrusted like any archive: an entry whose name climbs out of its folder refuses it
//! (nothing here is ever extracted, but such a zip is made to harm); what is unpacked (the
//! index, the pages) counts against the archive's budget, so a zip bomb stops there.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;
use std::time::SystemTime;

use zip::{CompressionMethod, ZipArchive};

use crate::budget::{Budget, Charged};
use crate::catalog::{Catalog, Entry, Storage, Stored};
use crate::scan::{first_info, scan_stored};
use crate::{ArchiveInfo, ReadLimits};

/// Entries one WACZ may have.
const MAX_ZIP_ENTRIES: usize = 100_000;
/// The most of `pages.jsonl` read (its first page is what is used).
const PAGES_BYTES: u64 = 1 << 20;

/// Open the WACZ in `file` (`len` bytes), `name` being how errors call it.
pub(crate) fn open(
    file: Arc<File>,
    len: u64,
    name: &str,
    limits: &ReadLimits,
    budget: &Budget,
) -> Result<Catalog, String> {
    let mut zip =
        ZipArchive::new(&*file).map_err(|err| format!("it is not a readable zip ({err})"))?;
    if zip.len() > MAX_ZIP_ENTRIES {
        return Err(format!("it has more than {MAX_ZIP_ENTRIES} entries"));
    }
    let mut warcs: Vec<Stored> = Vec::new();
    let mut indexes = Vec::new();
    let mut pages = None;
    for number in 0..zip.len() {
        let entry = zip
            .by_index_raw(number)
            .map_err(|err| format!("its entry {number} cannot be read ({err})"))?;
        let entry_name = entry
            .name()
            .map_err(|err| format!("its entry {number} has a bad name ({err})"))?
            .to_string();
        if climbs_out(&entry_name) || entry.enclosed_name().is_none() {
            return Err(format!("its entry {entry_name:?} climbs out of its folder"));
        }
        if entry.is_dir() {
            continue;
        }
        if let Some(file_name) = entry_name.strip_prefix("archive/") {
            if !is_records_file(file_name) {
                continue;
            }
            if entry.compression() != CompressionMethod::Stored {
                return Err(format!(
                    "its {entry_name} is compressed inside the zip (a WACZ stores its WARC files as they are)"
                ));
            }
            let base = entry
                .data_start()
                .ok_or_else(|| format!("its {entry_name} has no data"))?;
            let size = entry.size();
            if base.checked_add(size).is_none_or(|end| end > len) {
                return Err(format!("its {entry_name} is longer than the file"));
            }
            warcs.push(Stored {
                storage: Storage::File(file.clone()),
                base,
                len: size,
                name: file_name.to_string(),
                arc: file_name.contains(".arc"),
            });
        } else if entry_name.starts_with("indexes/")
            && [".cdxj", ".cdx", ".cdx.gz", ".cdxj.gz"]
                .iter()
                .any(|end| entry_name.ends_with(end))
        {
            indexes.push(number);
        } else if entry_name == "pages/pages.jsonl" {
            pages = Some(number);
        }
    }
    if warcs.is_empty() {
        return Err("it holds no WARC file (archive/*.warc.gz)".into());
    }
    let only = (warcs.len() == 1).then_some(0);
    let file_of = |filename: Option<&str>| match filename {
        Some(f) => warcs.iter().position(|w| w.name == f),
        None => only,
    };
    let mut entries: Vec<Entry> = Vec::new();
    for number in &indexes {
        let index = zip
            .by_index(*number)
            .map_err(|err| format!("its index cannot be read ({err})"))?;
        let index_name = index.name().unwrap_or_default().to_string();
        let found = crate::cdxj::parse(index, budget, file_of)
            .map_err(|why| format!("its index {index_name}: {why}"))?;
        entries.extend(found);
    }
    let mut info = match pages {
        Some(number) => {
            let pages = zip
                .by_index(number)
                .map_err(|err| format!("its pages cannot be read ({err})"))?;
            first_page(pages, budget)?
        }
        None => ArchiveInfo::default(),
    };
    if let Some(first) = first_info(&warcs[0], budget) {
        info.software = first.software;
        info.episode = first.episode;
        info.start_url = info.start_url.or(first.start_url);
        info.recorded = info.recorded.or(first.recorded);
    }
    if indexes.is_empty() {
        return scan_all(warcs, name, info, limits, budget);
    }
    Ok(Catalog::new(name, info, entries, warcs, *limits))
}

/// A WACZ without an index: each WARC read once.
fn scan_all(
    warcs: Vec<Stored>,
    name: &str,
    info: ArchiveInfo,
    limits: &ReadLimits,
    budget: &Budget,
) -> Result<Catalog, String> {
    let mut entries = Vec::new();
    for (number, stored) in warcs.iter().enumerate() {
        let mut reader = stored.reader();
        let catalog = scan_stored(stored.clone(), &mut reader, name, limits, budget)
            .map_err(|why| format!("{}: {why}", stored.name))?;
        entries.extend(catalog.entries.into_iter().map(|mut entry| {
            entry.file = number;
            entry
        }));
    }
    Ok(Catalog::new(name, info, entries, warcs, *limits))
}

/// A name with `..`, a root, a drive or a backslash: meant to land outside its folder.
fn climbs_out(name: &str) -> bool {
    name.starts_with('/')
        || name.contains('\\')
        || name.contains(':')
        || name.split('/').any(|part| part == ".." || part == ".")
}

pub(crate) fn is_records_file(name: &str) -> bool {
    !name.contains('/')
        && [".warc.gz", ".warc", ".arc.gz", ".arc"]
            .iter()
            .any(|end| name.ends_with(end))
}

/// The first page of `pages.jsonl`: where a reset that names none starts, and when.
fn first_page(pages: impl Read, budget: &Budget) -> Result<ArchiveInfo, String> {
    let reader = BufReader::new(Charged::new(pages.take(PAGES_BYTES), budget));
    let mut info = ArchiveInfo::default();
    for line in reader.lines() {
        let line = line.map_err(|err| format!("its pages cannot be read ({err})"))?;
        let Ok(page) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(url) = page.get("url").and_then(|u| u.as_str()) else {
            continue;
        };
        info.start_url = crate::framing::target(Some(url.to_string())).ok();
        info.recorded = page
            .get("ts")
            .and_then(|t| t.as_str())
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(SystemTime::from);
        break;
    }
    Ok(info)
}

/// A stored file read from its start, in order (a WACZ's WARC without an index).
pub(crate) struct StoredReader {
    stored: Stored,
    position: u64,
}

impl Stored {
    pub(crate) fn reader(&self) -> StoredReader {
        StoredReader {
            stored: self.clone(),
            position: 0,
        }
    }
}

impl Read for StoredReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.stored.len - self.position;
        let want = (buf.len() as u64).min(left).min(1 << 20);
        if want == 0 {
            return Ok(0);
        }
        let at = crate::framing::At {
            offset: self.position,
            length: want,
            skip: 0,
        };
        let bytes = self.stored.read_prefix(&at).map_err(io::Error::other)?;
        buf[..bytes.len()].copy_from_slice(&bytes);
        self.position += bytes.len() as u64;
        Ok(bytes.len())
    }
}
