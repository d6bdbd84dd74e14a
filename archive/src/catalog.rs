//! An archive opened: what it holds (`Entry`: a response's URL, its request's method and body
//! digest, where its record is) without the bodies, which are read when a page asks for them
//! (`Catalog::load`). Built by reading the whole file once (`scan`), or from an index (a CDXJ
//! file beside the archive, a WACZ's own), so a reset on a 1 GB archive reads only its index.
//! Every record read back is checked again: an index may lie, and the file may have changed.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::SystemTime;

use crate::budget::Budget;
use crate::framing::target;
use crate::framing::{record_at, At, Head};
use crate::http::HEAD_BYTES;
use crate::http::{parse_request, parse_response, response_head};
use crate::{ArchiveInfo, ReadLimits, Request, Response};

/// Entries one archive may have: its index in memory stays within a few hundred MB.
pub(crate) const MAX_ENTRIES: usize = 1_000_000;

/// One response (or resource, or revisit) an archive holds, and how it was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Absolute http(s), without its fragment.
    pub url: String,
    /// The request's method (`GET` when the archive has no request for it).
    pub method: String,
    /// SHA-256 of the request's body, when it had one.
    pub request_digest: Option<[u8; 32]>,
    /// When it was recorded.
    pub date: SystemTime,
    /// A `revisit` record: its body is another record's (`WARC-Payload-Digest`, or the URL
    /// it refers to).
    pub revisit: bool,
    /// The HTTP status, 0 when the index does not say.
    pub status: u16,
    /// The body's type, as far as known.
    pub mime: String,
    /// `WARC-Payload-Digest`, as written.
    pub digest: Option<String>,
    /// Which of the archive's files (a WACZ has several).
    pub(crate) file: usize,
    pub(crate) at: At,
    /// Where its request record is, when a scan found it.
    pub(crate) request: Option<At>,
}

/// Bytes of an archive's file: on disk (read at offsets), or in memory (tests, fuzzing).
#[derive(Clone)]
pub(crate) enum Storage {
    File(Arc<File>),
    Memory(Arc<[u8]>),
}

/// One file of records: where its bytes begin in the storage (a WACZ's stored entry) and how
/// many there are.
#[derive(Clone)]
pub(crate) struct Stored {
    pub storage: Storage,
    pub base: u64,
    pub len: u64,
    /// Its name, as an index's `filename` says it.
    pub name: String,
    /// An ARC file: records have one-line heads.
    pub arc: bool,
}

impl Stored {
    /// The bytes at `at` (within the file), however many.
    pub(crate) fn read_prefix(&self, at: &At) -> Result<Vec<u8>, String> {
        self.read_at(at, u64::MAX)
    }

    fn read_at(&self, at: &At, most: u64) -> Result<Vec<u8>, String> {
        let end = at
            .offset
            .checked_add(at.length)
            .filter(|end| *end <= self.len);
        if end.is_none() {
            return Err(format!(
                "its place (offset {}, {} bytes) is outside the file",
                at.offset, at.length
            ));
        }
        if at.length > most {
            return Err(format!(
                "its record of {} bytes is over the limit of {most}",
                at.length
            ));
        }
        let mut bytes = vec![0u8; at.length as usize];
        let offset = self.base + at.offset;
        match &self.storage {
            Storage::File(file) => file
                .read_exact_at(&mut bytes, offset)
                .map_err(|err| format!("it cannot be read ({err})"))?,
            Storage::Memory(memory) => {
                let start = offset as usize;
                bytes.copy_from_slice(&memory[start..start + at.length as usize]);
            }
        }
        Ok(bytes)
    }
}

/// An archive opened, ready to answer.
pub struct Catalog {
    /// The archive as the client named it: every error says this, never the server's path.
    name: String,
    pub info: ArchiveInfo,
    pub entries: Vec<Entry>,
    files: Vec<Stored>,
    limits: ReadLimits,
    /// Entries that hold a body (not revisits), by payload digest: what revisits point to.
    by_digest: HashMap<String, Vec<usize>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("name", &self.name)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl Catalog {
    pub(crate) fn new(
        name: &str,
        mut info: ArchiveInfo,
        entries: Vec<Entry>,
        files: Vec<Stored>,
        limits: ReadLimits,
    ) -> Catalog {
        let mut entries = entries;
        // In the order they were recorded (an index is sorted by URL): a URL asked again gets
        // its responses in turn. A file's order is its records'; several files interleave by
        // date.
        if files.len() > 1 {
            entries.sort_by_key(|e| (e.date, e.file, e.at.offset, e.at.skip));
        } else {
            entries.sort_by_key(|e| (e.at.offset, e.at.skip));
        }
        let mut by_digest: HashMap<String, Vec<usize>> = HashMap::new();
        for (index, entry) in entries.iter().enumerate() {
            if let (false, Some(digest)) = (entry.revisit, &entry.digest) {
                by_digest.entry(digest.clone()).or_default().push(index);
            }
        }
        if info.recorded.is_none() {
            info.recorded = entries.iter().map(|e| e.date).min();
        }
        // Where to start when neither the archive nor the reset says: its first page.
        if info.start_url.is_none() {
            info.start_url = entries
                .iter()
                .find(|e| {
                    e.method == "GET"
                        && (200..300).contains(&e.status)
                        && e.mime.to_ascii_lowercase().contains("html")
                })
                .map(|e| e.url.clone());
        }
        Catalog {
            name: name.to_string(),
            info,
            entries,
            files,
            limits,
            by_digest,
        }
    }

    /// The archive as the client named it.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn limits(&self) -> &ReadLimits {
        &self.limits
    }

    /// The response of entry `index`, read from its record (a revisit's body from the record it
    /// revisits), every decoded byte charged to `budget`.
    pub fn load(&self, index: usize, budget: &Budget) -> Result<Response, String> {
        let entry = self.entries.get(index).ok_or("no such entry")?;
        let named = |why: String| {
            format!(
                "{why} (the record of {} at offset {})",
                entry.url, entry.at.offset
            )
        };
        let (head, block) = self.record(entry.file, &entry.at, budget).map_err(named)?;
        self.check_target(&head, entry).map_err(named)?;
        let kind = head.get("WARC-Type").map_err(named)?.unwrap_or_default();
        let truncated = head.get("WARC-Truncated").map_err(named)?.is_some();
        let body_limit = self.limits.body_bytes;
        match kind.to_ascii_lowercase().as_str() {
            "response" => match parse_response(&block, body_limit, budget, true) {
                Ok(response) => Ok(Response {
                    body_left_out: truncated,
                    ..response
                }),
                // A body the recording cut short: the response without it.
                Err(_) if truncated => response_head(&block)
                    .map(|response| Response {
                        body_left_out: true,
                        ..response
                    })
                    .map_err(named),
                Err(why) => Err(named(why)),
            },
            "resource" => {
                let mime = head.get("Content-Type").map_err(named)?.unwrap_or_default();
                let mut headers = Vec::new();
                if !mime.is_empty() {
                    headers.push(("Content-Type".to_string(), mime));
                }
                Ok(Response {
                    status: 200,
                    reason: "OK".into(),
                    headers,
                    body: block,
                    body_left_out: truncated,
                })
            }
            "revisit" => self.revisit(index, &head, &block, budget).map_err(named),
            other => Err(named(format!(
                "the record there is a {other:?} record, not a response"
            ))),
        }
    }

    /// The request of entry `index`, when the archive kept one.
    pub fn load_request(&self, index: usize, budget: &Budget) -> Result<Option<Request>, String> {
        let entry = self.entries.get(index).ok_or("no such entry")?;
        let Some(at) = &entry.request else {
            return Ok(None);
        };
        let (_, block) = self.record(entry.file, at, budget)?;
        let mut body = Vec::new();
        let (method, headers) = parse_request(&block, self.limits.body_bytes, budget, &mut body)
            .map_err(|why| format!("{why} (the request for {})", entry.url))?;
        Ok(Some(Request {
            method,
            url: entry.url.clone(),
            headers,
            body,
        }))
    }

    /// A revisit: its own status and headers where it kept them, the body of the record it
    /// revisits, found by payload digest, else by the URL (and date) it refers to, else by
    /// its own URL.
    fn revisit(
        &self,
        index: usize,
        head: &Head,
        block: &[u8],
        budget: &Budget,
    ) -> Result<Response, String> {
        let entry = &self.entries[index];
        let own = (!block.is_empty())
            .then(|| response_head(block).ok())
            .flatten();
        let digest = head
            .get("WARC-Payload-Digest")?
            .or_else(|| entry.digest.clone());
        let refers = match head.get("WARC-Refers-To-Target-URI")? {
            Some(uri) => target(Some(uri)).ok(),
            None => None,
        };
        let by_digest = digest
            .and_then(|d| self.by_digest.get(&d))
            .and_then(|found| {
                found
                    .iter()
                    .find(|&&i| self.entries[i].url == entry.url)
                    .or_else(|| found.first())
                    .copied()
            });
        let by_url = |url: &str| {
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, e)| !e.revisit && e.url == url)
                .min_by_key(|(_, e)| {
                    e.date
                        .duration_since(entry.date)
                        .or_else(|_| entry.date.duration_since(e.date))
                        .unwrap_or_default()
                })
                .map(|(i, _)| i)
        };
        let original = by_digest
            .or_else(|| refers.as_deref().and_then(by_url))
            .or_else(|| by_url(&entry.url))
            .ok_or("a revisit whose original the archive does not hold")?;
        let original = self.load(original, budget)?;
        Ok(match own {
            Some(own) if own.status != 304 => Response {
                body: original.body,
                body_left_out: original.body_left_out,
                ..own
            },
            _ => original,
        })
    }

    fn record(&self, file: usize, at: &At, budget: &Budget) -> Result<(Head, Vec<u8>), String> {
        let stored = self
            .files
            .get(file)
            .ok_or("its file is not in the archive")?;
        let block_limit = self.limits.body_bytes + HEAD_BYTES;
        // A member holds one record (at most a few, at the start of a file gzipped whole).
        let most = block_limit.saturating_mul(2) + (4 << 20);
        let bytes = stored.read_at(at, most.max(at.skip.saturating_add(block_limit)))?;
        record_at(&bytes, at.skip, stored.arc, budget, block_limit)
    }

    fn check_target(&self, head: &Head, entry: &Entry) -> Result<(), String> {
        let found = target(head.get("WARC-Target-URI")?)?;
        if found != entry.url {
            return Err(format!(
                "the index says {} but the record there is for {found}",
                entry.url
            ));
        }
        Ok(())
    }
}
