//! Reading an archive back. An archive is untrusted input (downloaded, shared, hand-made): the file
//! must be a regular file reached without a symlink at its end; it is read as a stream, never
//! more than `ReadLimits::archive_bytes` once unpacked (a gzip bomb stops there) and no body past
//! `ReadLimits::body_bytes`; every header read is checked; a record that breaks a rule refuses
//! the whole archive with an error naming the record, so a replay never runs on part of one.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::SystemTime;

use warc::{RawRecordHeader, WarcHeader, WarcReader};

use crate::http::{parse_request, parse_response};
use crate::{ArchiveInfo, Exchange, Request, Response};

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

/// A head (the HTTP status line and headers) may take this much beside its body.
const HEAD_BYTES: u64 = 256 << 10;
/// A `warcinfo` or request record's block is small; more is not read.
const SMALL_BLOCK: u64 = 1 << 20;

/// Read the archive at `path` (gzip or not; a plain file, no symlink at its end).
pub fn read(path: &Path, limits: &ReadLimits) -> Result<Archive, ArchiveError> {
    let name = path.display().to_string();
    let open = |source| ArchiveError::Open {
        name: name.clone(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(open)?;
    let metadata = file.metadata().map_err(open)?;
    if !metadata.is_file() {
        return Err(ArchiveError::Refused {
            name,
            why: "it is not a regular file".into(),
        });
    }
    read_from(file, &name, limits)
}

/// Read an archive from `source`, `name` being how errors call it.
pub fn read_from(
    source: impl Read,
    name: &str,
    limits: &ReadLimits,
) -> Result<Archive, ArchiveError> {
    let refused = |why: String| ArchiveError::Refused {
        name: name.to_string(),
        why,
    };
    let mut source = BufReader::new(source);
    let gzipped = source
        .fill_buf()
        .map_err(|err| refused(format!("it cannot be read ({err})")))?
        .starts_with(&[0x1f, 0x8b]);
    let unpacked: Box<dyn Read> = if gzipped {
        Box::new(flate2::read::MultiGzDecoder::new(source))
    } else {
        Box::new(source)
    };
    let mut stream = BufReader::new(Bounded {
        inner: unpacked,
        left: limits.archive_bytes,
        limit: limits.archive_bytes,
    });
    let mut records = Records::default();
    let mut number = 0;
    // The raw iterator: the crate's checked records unwrap header values as UTF-8 (a crafted
    // byte would panic); here every header is looked at as bytes first.
    for item in WarcReader::new(&mut stream).iter_raw_records() {
        number += 1;
        let at = |why: String| refused(format!("record {number}: {why}"));
        let (header, block) = item.map_err(|err| at(warc_error(&err)))?;
        records.take(&header, block, limits).map_err(at)?;
    }
    if number == 0 {
        return Err(refused("it holds no WARC record".into()));
    }
    Ok(records.into_archive())
}

/// The records read so far, paired up as the file goes.
#[derive(Default)]
struct Records {
    info: ArchiveInfo,
    /// Responses with their record ids, in file order.
    responses: Vec<(String, String, SystemTime, Response)>,
    /// Requests: by the response they were concurrent to, or by their target.
    requests_for: HashMap<String, Request>,
    loose_requests: HashMap<String, Vec<Request>>,
}

impl Records {
    fn take(
        &mut self,
        raw: &RawRecordHeader,
        block: Vec<u8>,
        limits: &ReadLimits,
    ) -> Result<(), String> {
        if !matches!(raw.version.as_str(), "1.0" | "1.1") {
            return Err(format!("WARC/{} is not a version this reads", raw.version));
        }
        let header = |name: WarcHeader| -> Result<Option<String>, String> {
            let Some(value) = raw.headers.get(&name) else {
                return Ok(None);
            };
            let value = std::str::from_utf8(value)
                .map_err(|_| format!("its {name} header is not UTF-8"))?;
            if value.chars().any(|c| c.is_control()) {
                return Err(format!("its {name} header has a control character"));
            }
            Ok(Some(value.trim().to_string()))
        };
        let kind = header(WarcHeader::WarcType)?.ok_or("it has no WARC-Type")?;
        let date = header(WarcHeader::Date)?.ok_or("it has no WARC-Date")?;
        let date = chrono::DateTime::parse_from_rfc3339(&date)
            .map_err(|_| format!("its WARC-Date {date:?} is not a date"))?;
        let date = SystemTime::from(date);
        let content_type = header(WarcHeader::ContentType)?.unwrap_or_default();
        let is_http = content_type.starts_with("application/http");
        let fits = |limit: u64| {
            let length = block.len() as u64;
            if length > limit {
                Err(format!(
                    "its block of {length} bytes is over the limit of {limit}"
                ))
            } else {
                Ok(())
            }
        };
        match kind.to_ascii_lowercase().as_str() {
            "warcinfo" => {
                fits(SMALL_BLOCK)?;
                self.info = info(&block, date);
            }
            "response" if is_http => {
                let target = target(header(WarcHeader::TargetURI)?)?;
                let id = header(WarcHeader::RecordID)?.unwrap_or_default();
                fits(limits.body_bytes + HEAD_BYTES)?;
                let mut response = parse_response(&block, limits.body_bytes)
                    .map_err(|why| format!("{why} (response for {target})"))?;
                response.body_left_out = header(WarcHeader::Truncated)?.is_some();
                self.responses.push((id, target, date, response));
            }
            "request" if is_http => {
                let target = target(header(WarcHeader::TargetURI)?)?;
                fits(limits.body_bytes + HEAD_BYTES)?;
                let (method, headers, body) = parse_request(&block, limits.body_bytes)
                    .map_err(|why| format!("{why} (request for {target})"))?;
                let request = Request {
                    method,
                    url: target.clone(),
                    headers,
                    body,
                };
                match header(WarcHeader::ConcurrentTo)? {
                    Some(response) => {
                        self.requests_for.insert(response, request);
                    }
                    None => self.loose_requests.entry(target).or_default().push(request),
                }
            }
            // Revisits, metadata, resources (a page's screenshot), conversions: nothing a page
            // asked for and got.
            _ => {}
        }
        Ok(())
    }

    fn into_archive(mut self) -> Archive {
        for loose in self.loose_requests.values_mut() {
            loose.reverse();
        }
        let exchanges = self
            .responses
            .into_iter()
            .map(|(id, target, date, response)| {
                let request = self
                    .requests_for
                    .remove(&id)
                    .or_else(|| self.loose_requests.get_mut(&target).and_then(Vec::pop))
                    // A response without its request (some tools write none): a GET of it.
                    .unwrap_or_else(|| Request {
                        method: "GET".into(),
                        url: target.clone(),
                        headers: Vec::new(),
                        body: Vec::new(),
                    });
                Exchange {
                    request: Request {
                        url: target,
                        ..request
                    },
                    response,
                    date,
                }
            })
            .collect();
        Archive {
            info: self.info,
            exchanges,
        }
    }
}

/// A record's target: an absolute http(s) URL, without its fragment.
fn target(value: Option<String>) -> Result<String, String> {
    let value = value.ok_or("it has no WARC-Target-URI")?;
    // Some tools write the URI in angle brackets (WARC 1.0's grammar).
    let value = value.trim_start_matches('<').trim_end_matches('>');
    let mut url = url::Url::parse(value)
        .map_err(|err| format!("its target {value:?} is not a URL ({err})"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("its target {value:?} is not an http(s) URL"));
    }
    url.set_fragment(None);
    Ok(url.to_string())
}

/// The `warcinfo` fields this project writes (`application/warc-fields`: `name: value` lines).
fn info(block: &[u8], date: SystemTime) -> ArchiveInfo {
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

fn warc_error(err: &warc::Error) -> String {
    match err {
        warc::Error::ReadData(io) => read_failure(io),
        warc::Error::UnexpectedEOB => {
            "the archive ends inside this record (a truncated file?)".into()
        }
        warc::Error::ParseHeaders(_) => {
            "its WARC header is malformed (a line that is not `Name: value`, a bad Content-Length)"
                .into()
        }
        warc::Error::MissingHeader(name) => format!("it has no {name} header"),
        warc::Error::MalformedHeader(name, why) => {
            format!("its {name} header is malformed ({why})")
        }
        warc::Error::ReadOverflow => "its block is longer than its Content-Length".into(),
    }
}

fn read_failure(err: &io::Error) -> String {
    if err.kind() == io::ErrorKind::FileTooLarge {
        return err.to_string();
    }
    match err.kind() {
        io::ErrorKind::UnexpectedEof => {
            "the archive ends inside this record (a truncated file?)".into()
        }
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => {
            format!("its gzip data is damaged ({err})")
        }
        _ => format!("it cannot be read ({err})"),
    }
}

/// A reader that fails past `limit` bytes: what an archive may hold once unpacked.
struct Bounded<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // One byte more than allowed tells a full archive from a larger one.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::new(
                    io::ErrorKind::FileTooLarge,
                    format!(
                        "the archive holds more than {} once unpacked (BROWSER_ARCHIVE_EPISODE_MB)",
                        size(self.limit)
                    ),
                )),
            };
        }
        let most = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let read = self.inner.read(&mut buf[..most])?;
        self.left -= read as u64;
        Ok(read)
    }
}

/// A size as people read it.
fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests;
