//! Writing an archive: a `warcinfo` record, then per exchange a `response` record and the
//! `request` record that asked for it (`WARC-Concurrent-To`), each record a gzip member of its
//! own (so readers can seek to a record, and a file cut short keeps every whole record before the
//! cut), with SHA-256 digests that `warcio check` verifies; and, once finished, its CDXJ index
//! beside it (`index_path`), so that opening it later reads the index, not the whole file.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use warc::{RawRecordHeader, WarcHeader, WarcWriter};

use crate::catalog::Entry;
use crate::framing::At;
use crate::http::{request_block, response_block};
use crate::read::index_path;
use crate::Exchange;

/// What the `warcinfo` record says about the archive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveInfo {
    /// The program that wrote it (`software`).
    pub software: String,
    /// Where the episode started (`browserenv-start-url`): a reset from the archive starts there
    /// when it names no start URL.
    pub start_url: Option<String>,
    /// The episode it holds (`browserenv-episode`).
    pub episode: Option<String>,
    /// When recording began (the record's `WARC-Date`): a replay's clock starts there.
    pub recorded: Option<SystemTime>,
}

/// An archive being written. Each `append` is whole records, flushed: a crash loses at most the
/// exchange in flight, and the file it leaves reads up to there.
pub struct ArchiveWriter {
    file: File,
    path: PathBuf,
    bytes: u64,
    /// Each response written, and where: the index written at `finish`.
    entries: Vec<Entry>,
}

impl ArchiveWriter {
    /// Create `path` (a new file, readable by its owner only, never through a symlink) and write
    /// its `warcinfo` record.
    pub fn create(path: &Path, info: &ArchiveInfo) -> io::Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        let mut writer = ArchiveWriter {
            file,
            path: path.to_path_buf(),
            bytes: 0,
            entries: Vec::new(),
        };
        let mut fields = format!(
            "software: {}\r\nformat: WARC File Format 1.1\r\nconformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n",
            one_line(&info.software)
        );
        if let Some(url) = &info.start_url {
            fields.push_str(&format!("browserenv-start-url: {}\r\n", one_line(url)));
        }
        if let Some(episode) = &info.episode {
            fields.push_str(&format!("browserenv-episode: {}\r\n", one_line(episode)));
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut headers = record_headers("warcinfo", info.recorded.unwrap_or_else(SystemTime::now));
        headers.insert(WarcHeader::Filename, one_line(&name).into_bytes());
        headers.insert(WarcHeader::ContentType, b"application/warc-fields".to_vec());
        let member = member(headers, fields.as_bytes(), None)?;
        writer.write_members(&[member])?;
        Ok(writer)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written so far (compressed).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Append one exchange: its response record, then its request record.
    pub fn append(&mut self, exchange: &Exchange) -> io::Result<()> {
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        let target = one_line(&exchange.request.url);
        let mut response = record_headers("response", exchange.date);
        let response_id = response[&WarcHeader::RecordID].clone();
        response.insert(WarcHeader::TargetURI, target.clone().into_bytes());
        response.insert(
            WarcHeader::ContentType,
            b"application/http; msgtype=response".to_vec(),
        );
        if exchange.response.body_left_out {
            response.insert(WarcHeader::Truncated, b"length".to_vec());
        }
        let body = &exchange.response.body;
        let response_member = member(response, &response_block(&exchange.response), Some(body))?;
        let mut request = record_headers("request", exchange.date);
        request.insert(WarcHeader::TargetURI, target.into_bytes());
        request.insert(WarcHeader::ConcurrentTo, response_id);
        request.insert(
            WarcHeader::ContentType,
            b"application/http; msgtype=request".to_vec(),
        );
        let request_member = member(
            request,
            &request_block(&exchange.request).map_err(invalid)?,
            None,
        )?;
        let request = &exchange.request;
        let at = At {
            offset: self.bytes,
            length: response_member.len() as u64,
            skip: 0,
        };
        let entry = Entry {
            url: exchange.request.url.clone(),
            method: request.method.to_ascii_uppercase(),
            request_digest: (!request.body.is_empty())
                .then(|| Sha256::digest(&request.body).into()),
            date: exchange.date,
            revisit: false,
            status: exchange.response.status,
            mime: exchange
                .response
                .header("content-type")
                .unwrap_or_default()
                .to_string(),
            digest: Some(digest(body)),
            file: 0,
            at,
            request: Some(At {
                offset: at.offset + at.length,
                length: request_member.len() as u64,
                skip: 0,
            }),
        };
        self.write_members(&[response_member, request_member])?;
        self.entries.push(entry);
        Ok(())
    }

    /// Make what was written durable, then write its index beside it (a new file put in place
    /// whole: a reader never finds half an index).
    pub fn finish(self) -> io::Result<()> {
        self.file.sync_all()?;
        let index = index_path(&self.path);
        let mut partial = index.clone().into_os_string();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let _ = std::fs::remove_file(&partial);
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&partial)?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let lines: Vec<(&Entry, &str)> = self.entries.iter().map(|e| (e, name.as_str())).collect();
        crate::cdxj::write(&mut out, &lines)?;
        out.sync_all()?;
        std::fs::rename(&partial, &index)
    }

    fn write_members(&mut self, members: &[Vec<u8>]) -> io::Result<()> {
        // One write per exchange: the response never reaches the disk without its request.
        let whole: Vec<u8> = members.concat();
        self.file.write_all(&whole)?;
        self.bytes += whole.len() as u64;
        Ok(())
    }
}

/// The headers every record has: its type, a fresh id, its date.
fn record_headers(kind: &str, date: SystemTime) -> HashMap<WarcHeader, Vec<u8>> {
    let date = chrono::DateTime::<chrono::Utc>::from(date)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    HashMap::from([
        (WarcHeader::WarcType, kind.as_bytes().to_vec()),
        (
            WarcHeader::RecordID,
            format!("<urn:uuid:{}>", uuid::Uuid::new_v4()).into_bytes(),
        ),
        (WarcHeader::Date, date.into_bytes()),
    ])
}

/// One record as a gzip member of its own, with its block's digest (and the payload's, the body
/// inside an HTTP message, when given).
fn member(
    mut headers: HashMap<WarcHeader, Vec<u8>>,
    block: &[u8],
    payload: Option<&[u8]>,
) -> io::Result<Vec<u8>> {
    headers.insert(WarcHeader::BlockDigest, digest(block).into_bytes());
    if let Some(payload) = payload {
        headers.insert(WarcHeader::PayloadDigest, digest(payload).into_bytes());
    }
    headers.insert(
        WarcHeader::ContentLength,
        block.len().to_string().into_bytes(),
    );
    let header = RawRecordHeader {
        version: "1.1".into(),
        headers,
    };
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    WarcWriter::new(WholeWrites(&mut gzip)).write_raw(header, &block)?;
    gzip.finish()
}

/// The warc crate writes a record with `write`, not `write_all`, and a gzip encoder takes only
/// what fills its output buffer per call (about 32 KiB compressed): the rest of a body that does
/// not compress well (a picture) would be lost, the record cut short. Every write here is whole.
struct WholeWrites<W>(W);

impl<W: Write> Write for WholeWrites<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// `sha256:` and the digest in base32, as WARC tools write it.
fn digest(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        data_encoding::BASE32.encode(&Sha256::digest(bytes))
    )
}

/// A value for a header line: line breaks and other control characters become spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
