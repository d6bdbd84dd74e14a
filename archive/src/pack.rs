//! A WACZ written (Webrecorder's package, <https://specs.webrecorder.net/wacz/1.1.1/>, read in
//! `wacz`): the episodes' WARC files stored as they are, their CDXJ index, the pages a person may
//! open and `datapackage.json` with every file's SHA-256; what `wacz validate` accepts and
//! ReplayWeb.page opens. Above `read`: each archive is opened (and so checked) before it is packed.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::catalog::Entry;
use crate::wacz::is_records_file;
use crate::ReadLimits;

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
