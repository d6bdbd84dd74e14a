//! WACZ (Webrecorder's package, <https://specs.webrecorder.net/wacz/1.1.1/>): a zip of WARC files
//! (`archive/`), their CDXJ index (`indexes/`), the pages a person may open (`pages/pages.jsonl`)
//! and `datapackage.json` with every file's SHA-256. Read: the WARC files are read in place, at
//! the offsets the index gives (they are stored in the zip as they are, as the spec asks), so a
//! reset reads the index only. Written: what `wacz validate` accepts and ReplayWeb.page opens.
//!
//! A WACZ is untrusted like any archive: an entry whose name climbs out of its folder refuses it
//! (nothing here is ever extracted, but such a zip is made to harm); what is unpacked (the
//! index, the pages) counts against the archive's budget, so a zip bomb stops there.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use crate::budget::{Budget, Charged};
use crate::catalog::{Catalog, Entry, Storage, Stored};
use crate::read::{first_info, scan_stored};
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

fn is_records_file(name: &str) -> bool {
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
        info.start_url = crate::read::target(Some(url.to_string())).ok();
        info.recorded = page
            .get("ts")
            .and_then(|t| t.as_str())
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(SystemTime::from);
        break;
    }
    Ok(info)
}

/// A page of a WACZ: one a person may open in a viewer (ReplayWeb.page lists them).
#[derive(Debug, Clone, PartialEq)]
pub struct WaczPage {
    pub url: String,
    pub title: String,
    pub date: SystemTime,
}

/// Write a WACZ at `out` (a new file) holding the archives `warcs` (each a name for it in the
/// package and its path), their index, `pages` and the package's description.
pub fn write_wacz(
    out: &Path,
    title: &str,
    warcs: &[(String, PathBuf)],
    pages: &[WaczPage],
    limits: &ReadLimits,
) -> Result<(), String> {
    let failed = |err: &dyn std::fmt::Display| format!("cannot write {}: {err}", out.display());
    let mut names: Vec<&str> = warcs.iter().map(|(name, _)| name.as_str()).collect();
    names.sort();
    names.dedup();
    if names.len() != warcs.len() || names.iter().any(|n| !is_records_file(n)) {
        return Err("the archives' names in a WACZ are plain, distinct file names".into());
    }
    let mut catalogs = Vec::new();
    for (name, path) in warcs {
        let catalog = crate::read::open(path, name, limits).map_err(|err| err.to_string())?;
        catalogs.push(catalog);
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .map_err(|err| failed(&err))?;
    let mut zip = ZipWriter::new(file);
    let mut resources = Vec::new();
    for (name, path) in warcs {
        let size = std::fs::metadata(path).map_err(|err| failed(&err))?.len();
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .large_file(size >= u64::from(u32::MAX));
        let path_in = format!("archive/{name}");
        zip.start_file(&path_in, options)
            .map_err(|err| failed(&err))?;
        let mut source = File::open(path).map_err(|err| failed(&err))?;
        let (hash, bytes) = copy_hashed(&mut source, &mut zip).map_err(|err| failed(&err))?;
        resources.push(resource(&path_in, &hash, bytes));
    }
    let mut index = Vec::new();
    let lines: Vec<(&Entry, &str)> = catalogs
        .iter()
        .zip(warcs)
        .flat_map(|(catalog, (name, _))| catalog.entries.iter().map(move |e| (e, name.as_str())))
        .collect();
    crate::cdxj::write(&mut index, &lines).map_err(|err| failed(&err))?;
    let created = now_text(SystemTime::now());
    let mut pages_text =
        serde_json::json!({"format": "json-pages-1.0", "id": "pages", "title": "All Pages"})
            .to_string();
    pages_text.push('\n');
    for (number, page) in pages.iter().enumerate() {
        let line = serde_json::json!({
            "id": format!("page-{number}"),
            "url": page.url,
            "ts": now_text(page.date),
            "title": page.title,
        });
        pages_text.push_str(&line.to_string());
        pages_text.push('\n');
    }
    let deflated = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    for (path_in, bytes) in [
        ("indexes/index.cdxj", index),
        ("pages/pages.jsonl", pages_text.into_bytes()),
    ] {
        zip.start_file(path_in, deflated)
            .map_err(|err| failed(&err))?;
        zip.write_all(&bytes).map_err(|err| failed(&err))?;
        resources.push(resource(
            path_in,
            &hex(&Sha256::digest(&bytes)),
            bytes.len() as u64,
        ));
    }
    let mut package = serde_json::json!({
        "profile": "data-package",
        "wacz_version": "1.1.1",
        "title": title,
        "software": format!("browserenv {}", env!("CARGO_PKG_VERSION")),
        "created": created,
        "resources": resources,
    });
    if let Some(first) = pages.first() {
        package["mainPageUrl"] = serde_json::json!(first.url);
        package["mainPageDate"] = serde_json::json!(now_text(first.date));
    }
    let package = serde_json::to_vec_pretty(&package).map_err(|err| failed(&err))?;
    let digest = serde_json::json!({
        "path": "datapackage.json",
        "hash": format!("sha256:{}", hex(&Sha256::digest(&package))),
    });
    for (path_in, bytes) in [
        ("datapackage.json", package),
        (
            "datapackage-digest.json",
            serde_json::to_vec_pretty(&digest).unwrap_or_default(),
        ),
    ] {
        zip.start_file(path_in, deflated)
            .map_err(|err| failed(&err))?;
        zip.write_all(&bytes).map_err(|err| failed(&err))?;
    }
    let file = zip.finish().map_err(|err| failed(&err))?;
    file.sync_all().map_err(|err| failed(&err))
}

fn resource(path: &str, hash: &str, bytes: u64) -> serde_json::Value {
    let name = path.rsplit('/').next().unwrap_or(path);
    serde_json::json!({"name": name, "path": path, "hash": format!("sha256:{hash}"), "bytes": bytes})
}

fn copy_hashed(source: &mut impl Read, out: &mut impl Write) -> io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let read = source.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        out.write_all(&buffer[..read])?;
        total += read as u64;
    }
    Ok((hex(&hasher.finalize()), total))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_text(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
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
