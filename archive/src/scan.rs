//! Opening an archive that has no index: every record read once, in order, and checked as a
//! replay would read it (heads, targets, every body decoded within the body limit and the
//! archive's budget), the bodies then dropped: what is kept is where each record is. A record that
//! breaks a rule refuses the archive, so a replay never runs on part of one.
//!
//! What real tools write, as warcio reads it: `response`, `resource` and `revisit` records
//! answer; `request` records say how (paired by `WARC-Concurrent-To` either way, else by URL in
//! order); `warcinfo` says where this project's episodes started; `metadata`, `conversion` and
//! the like are passed by; ARC files read as warcio reads them.

use std::collections::HashMap;
use std::io::Read;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::budget::{Budget, Charged};
use crate::catalog::{Catalog, Entry, Stored, MAX_ENTRIES};
use crate::framing::{record_at, scan, target, At, Head, Visitor};
use crate::http::{parse_request, parse_response, response_head, HEAD_BYTES};
use crate::{ArchiveInfo, ReadLimits};

/// A request record, until it is paired with its response.
struct Asked {
    id: Option<String>,
    concurrent: Vec<String>,
    url: String,
    method: String,
    digest: Option<[u8; 32]>,
    at: At,
}

/// A response (or resource, or revisit) record, with the ids that pair it.
struct Answered {
    id: Option<String>,
    concurrent: Vec<String>,
    entry: Entry,
}

/// The scan's visitor: records kept as entries of file `file`.
pub(crate) struct Builder<'a> {
    limits: &'a ReadLimits,
    budget: &'a Budget,
    file: usize,
    info: Option<ArchiveInfo>,
    answers: Vec<Answered>,
    asks: Vec<Asked>,
    /// Records of the gzip member being read, whose place is known once it ends.
    open: Vec<(bool, usize)>,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(limits: &'a ReadLimits, budget: &'a Budget, file: usize) -> Self {
        Builder {
            limits,
            budget,
            file,
            info: None,
            answers: Vec::new(),
            asks: Vec::new(),
            open: Vec::new(),
        }
    }

    fn kind(head: &Head) -> Result<(String, bool), String> {
        if !matches!(
            head.version.as_str(),
            "1.0" | "1.1" | "0.17" | "0.18" | "ARC"
        ) {
            return Err(format!("WARC/{} is not a version this reads", head.version));
        }
        let kind = head
            .get("WARC-Type")?
            .ok_or("it has no WARC-Type")?
            .to_ascii_lowercase();
        let content_type = head.get("Content-Type")?.unwrap_or_default();
        let is_http = content_type
            .to_ascii_lowercase()
            .starts_with("application/http");
        Ok((kind, is_http))
    }

    /// The entries, each response paired with its request.
    pub(crate) fn finish(self) -> (Option<ArchiveInfo>, Vec<Entry>) {
        let Builder {
            info,
            mut answers,
            asks,
            ..
        } = self;
        let answer_by_id: HashMap<&str, usize> = answers
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.id.as_deref().map(|id| (id, i)))
            .collect();
        let ask_by_id: HashMap<&str, usize> = asks
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.id.as_deref().map(|id| (id, i)))
            .collect();
        let mut ask_of: HashMap<usize, usize> = HashMap::new();
        let mut paired = vec![false; asks.len()];
        for (q, ask) in asks.iter().enumerate() {
            if let Some(&a) = ask
                .concurrent
                .iter()
                .find_map(|c| answer_by_id.get(c.as_str()))
            {
                if let std::collections::hash_map::Entry::Vacant(slot) = ask_of.entry(a) {
                    slot.insert(q);
                    paired[q] = true;
                }
            }
        }
        for (a, answer) in answers.iter().enumerate() {
            if ask_of.contains_key(&a) {
                continue;
            }
            if let Some(&q) = answer
                .concurrent
                .iter()
                .find_map(|c| ask_by_id.get(c.as_str()))
            {
                if !paired[q] {
                    ask_of.insert(a, q);
                    paired[q] = true;
                }
            }
        }
        // The rest by URL, in order.
        let mut loose: HashMap<&str, std::collections::VecDeque<usize>> = HashMap::new();
        for (q, ask) in asks.iter().enumerate().filter(|(q, _)| !paired[*q]) {
            loose.entry(ask.url.as_str()).or_default().push_back(q);
        }
        let mut by_url: Vec<(usize, usize)> = Vec::new();
        for (a, answer) in answers.iter().enumerate() {
            if ask_of.contains_key(&a) {
                continue;
            }
            if let Some(q) = loose
                .get_mut(answer.entry.url.as_str())
                .and_then(|queue| queue.pop_front())
            {
                by_url.push((a, q));
            }
        }
        ask_of.extend(by_url);
        for (a, q) in ask_of {
            let (ask, entry) = (&asks[q], &mut answers[a].entry);
            entry.method = ask.method.clone();
            entry.request_digest = ask.digest;
            entry.request = Some(ask.at);
        }
        (info, answers.into_iter().map(|a| a.entry).collect())
    }

    fn count(&self) -> Result<(), String> {
        if self.answers.len() + self.asks.len() >= MAX_ENTRIES {
            return Err(format!("the archive holds more than {MAX_ENTRIES} records"));
        }
        Ok(())
    }
}

impl Visitor for Builder<'_> {
    fn wants(&mut self, head: &Head) -> Result<Option<u64>, String> {
        let (kind, is_http) = Self::kind(head)?;
        let block = self.limits.body_bytes + HEAD_BYTES;
        Ok(match kind.as_str() {
            "warcinfo" if head.length <= SMALL_BLOCK && self.info.is_none() => Some(SMALL_BLOCK),
            "response" | "request" | "revisit" if is_http => Some(block),
            "resource" => Some(self.limits.body_bytes),
            // Metadata, conversions, segments, DNS answers: nothing a page asked for and got.
            _ => None,
        })
    }

    fn take(&mut self, head: Head, block: Vec<u8>, at: At) -> Result<(), String> {
        let (kind, _) = Self::kind(&head)?;
        let date = date_of(&head)?;
        if kind == "warcinfo" {
            self.info = Some(info(&block, date));
            return Ok(());
        }
        // A target that is not http(s) (`dns:`, `urn:`, a screenshot's name) is no answer to a
        // page's request; one that is malformed or has control characters refuses the archive.
        let target = match head.get("WARC-Target-URI")? {
            Some(uri) if is_web(&uri) => target(Some(uri))?,
            Some(_) => return Ok(()),
            None => return Err("it has no WARC-Target-URI".into()),
        };
        self.count()?;
        let id = head.get("WARC-Record-ID")?;
        let concurrent = head.all("WARC-Concurrent-To");
        let named = |why: String| format!("{why} ({kind} for {target})");
        let mut entry = Entry {
            url: target.clone(),
            method: "GET".into(),
            request_digest: None,
            date,
            revisit: false,
            status: 0,
            mime: String::new(),
            digest: head.get("WARC-Payload-Digest")?,
            file: self.file,
            at,
            request: None,
        };
        match kind.as_str() {
            "response" => {
                let truncated = head.get("WARC-Truncated")?.is_some();
                let response =
                    match parse_response(&block, self.limits.body_bytes, self.budget, false) {
                        Ok(response) => response,
                        Err(_) if truncated => response_head(&block).map_err(named)?,
                        Err(why) => return Err(named(why)),
                    };
                entry.status = response.status;
                entry.mime = response
                    .header("content-type")
                    .unwrap_or_default()
                    .to_string();
            }
            "revisit" => {
                entry.revisit = true;
                if !block.is_empty() {
                    let response = response_head(&block).map_err(named)?;
                    entry.status = response.status;
                    entry.mime = response
                        .header("content-type")
                        .unwrap_or_default()
                        .to_string();
                }
            }
            "resource" => {
                entry.status = 200;
                entry.mime = head.get("Content-Type")?.unwrap_or_default();
            }
            "request" => {
                let mut hasher = Sha256::new();
                let (method, _) =
                    parse_request(&block, self.limits.body_bytes, self.budget, &mut hasher)
                        .map_err(named)?;
                let has_body = entry_has_body(&block);
                self.open.push((false, self.asks.len()));
                self.asks.push(Asked {
                    id,
                    concurrent,
                    url: target,
                    method: method.to_ascii_uppercase(),
                    digest: has_body.then(|| hasher.finalize().into()),
                    at,
                });
                return Ok(());
            }
            _ => return Ok(()),
        }
        self.open.push((true, self.answers.len()));
        self.answers.push(Answered {
            id,
            concurrent,
            entry,
        });
        Ok(())
    }

    fn member_ended(&mut self, offset: u64, length: u64) {
        for (answer, index) in self.open.drain(..) {
            let at = if answer {
                &mut self.answers[index].entry.at
            } else {
                &mut self.asks[index].at
            };
            if at.offset == offset {
                at.length = length;
            }
        }
    }
}

/// Whether a request's block has a body after its head.
fn entry_has_body(block: &[u8]) -> bool {
    block
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .is_some_and(|end| end + 4 < block.len())
}

fn is_web(uri: &str) -> bool {
    let uri = uri.trim_start_matches('<').to_ascii_lowercase();
    uri.starts_with("http:") || uri.starts_with("https:")
}

/// A record's `WARC-Date`.
pub(crate) fn date_of(head: &Head) -> Result<SystemTime, String> {
    let date = head.get("WARC-Date")?.ok_or("it has no WARC-Date")?;
    let parsed = chrono::DateTime::parse_from_rfc3339(&date)
        .map_err(|_| format!("its WARC-Date {date:?} is not a date"))?;
    Ok(SystemTime::from(parsed))
}

/// A `warcinfo` or request record's block is small; more is not read.
pub(crate) const SMALL_BLOCK: u64 = 1 << 20;

/// Read the file once: every record checked, each response's place kept.
pub(crate) fn scan_stored(
    mut stored: Stored,
    source: &mut dyn Read,
    name: &str,
    limits: &ReadLimits,
    budget: &Budget,
) -> Result<Catalog, String> {
    let mut builder = Builder::new(limits, budget, 0);
    let records = scan(source, budget, &mut builder)?;
    if records == 0 {
        return Err("it holds no WARC record".into());
    }
    let (info, entries) = builder.finish();
    stored.arc = is_arc(&stored);
    Ok(Catalog::new(
        name,
        info.unwrap_or_default(),
        entries,
        vec![stored],
        *limits,
    ))
}

/// An ARC file: its first record is a `filedesc://` one.
pub(crate) fn is_arc(stored: &Stored) -> bool {
    let at = At {
        offset: 0,
        length: stored.len.min(64 << 10),
        skip: 0,
    };
    let Ok(bytes) = stored.read_prefix(&at) else {
        return false;
    };
    let mut first = [0u8; 11];
    let found = if bytes.starts_with(&[0x1f, 0x8b]) {
        let budget = Budget::new(1 << 20);
        let mut stream = Charged::new(flate2::read::MultiGzDecoder::new(&bytes[..]), &budget);
        stream.read_exact(&mut first).is_ok()
    } else {
        bytes.get(..11).map(|b| first.copy_from_slice(b)).is_some()
    };
    found && &first == b"filedesc://"
}

/// The `warcinfo` at the start of an indexed file (the index leaves it out).
pub(crate) fn first_info(stored: &Stored, budget: &Budget) -> Option<ArchiveInfo> {
    let at = At {
        offset: 0,
        length: stored.len.min(SMALL_BLOCK + (64 << 10)),
        skip: 0,
    };
    let bytes = stored.read_prefix(&at).ok()?;
    let (head, block) = record_at(&bytes, 0, false, budget, SMALL_BLOCK).ok()?;
    if !head
        .get("WARC-Type")
        .ok()??
        .eq_ignore_ascii_case("warcinfo")
    {
        return None;
    }
    Some(info(&block, date_of(&head).ok()?))
}

/// The `warcinfo` fields this project writes (`application/warc-fields`: `name: value` lines).
pub(crate) fn info(block: &[u8], date: SystemTime) -> ArchiveInfo {
    let text = String::from_utf8_lossy(block);
    let field = |name: &str| {
        text.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim().eq_ignore_ascii_case(name)).then(|| value.trim().to_string())
        })
    };
    ArchiveInfo {
        software: field("software").unwrap_or_default(),
        start_url: field("browserenv-start-url").filter(|url| target(Some(url.clone())).is_ok()),
        episode: field("browserenv-episode"),
        recorded: Some(date),
    }
}
