//! Records as they sit in a file: a WARC record's head (`WARC/1.1`, `Name: value` lines, a blank
//! line) and its block of `Content-Length` bytes, or an ARC record's one-line head; a file of
//! gzip members (most often one per record, so a record can be read alone at its member's
//! offset) or plain. Every length is the file's word, checked before anything is read on it;
//! every byte unpacked is charged to the archive's budget.

use std::io::{self, BufRead, BufReader, Read};

use crate::budget::{Budget, Charged, Counting};

/// The longest line of a record's head.
const LINE_BYTES: usize = 64 << 10;
/// The most a record's head may hold.
const HEAD_BYTES: usize = 256 << 10;
/// Blank lines taken between records (writers leave one or two; more is not an archive).
const BLANK_LINES: usize = 64;

/// Where a record is: the offset and length of the bytes to read (its gzip member, or the
/// record itself in a plain file), and how many unpacked bytes before it in that member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct At {
    pub offset: u64,
    pub length: u64,
    pub skip: u64,
}

/// A record's head: its version line and its fields, as bytes until asked for.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    /// `1.0`, `1.1`, ... for WARC; `ARC` for an ARC record.
    pub version: String,
    fields: Vec<(String, Vec<u8>)>,
    /// The block's length (`Content-Length`, or an ARC head's last field).
    pub length: u64,
}

impl Head {
    /// A field as text: UTF-8 without control characters, trimmed. Absent is `None`.
    pub fn get(&self, name: &str) -> Result<Option<String>, String> {
        let Some((_, value)) = self
            .fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        else {
            return Ok(None);
        };
        let value =
            std::str::from_utf8(value).map_err(|_| format!("its {name} header is not UTF-8"))?;
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(format!("its {name} header has a control character"));
        }
        Ok(Some(value.trim().to_string()))
    }

    /// Every value of a field that may repeat (`WARC-Concurrent-To`).
    pub fn all(&self, name: &str) -> Vec<String> {
        self.fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
            .filter(|v| !v.chars().any(char::is_control))
            .map(|v| v.trim().to_string())
            .collect()
    }

    pub fn is_arc(&self) -> bool {
        self.version == "ARC"
    }
}

/// One line, at most `LINE_BYTES`, without its line break; `None` at the end of the stream.
fn read_line(stream: &mut impl BufRead) -> Result<Option<Vec<u8>>, String> {
    let mut line = Vec::new();
    loop {
        let available = stream.fill_buf().map_err(|err| read_failure(&err))?;
        if available.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let (taken, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (available.len(), false),
        };
        if line.len() + taken > LINE_BYTES {
            return Err("a line of its head is too long (not a WARC record?)".into());
        }
        line.extend_from_slice(&available[..taken]);
        stream.consume(taken);
        if done {
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            return Ok(Some(line));
        }
    }
}

/// Blank lines before a record (CR LF, LF, CR CR LF...), skipped: whether anything follows.
pub(crate) fn skip_blank_lines(stream: &mut impl BufRead) -> Result<bool, String> {
    for _ in 0..BLANK_LINES {
        let available = stream.fill_buf().map_err(|err| read_failure(&err))?;
        if available.is_empty() {
            return Ok(false);
        }
        let returns = available.iter().take_while(|&&b| b == b'\r').count();
        match available.get(returns) {
            Some(b'\n') => stream.consume(returns + 1),
            // Carriage returns at the very end of the stream.
            None if returns == available.len() && returns < 8 => stream.consume(returns),
            _ => return Ok(true),
        }
    }
    Err("too many blank lines between records".into())
}

/// What a writer left after a record's block when its Content-Length was a little short (a
/// line that is neither blank nor the next record's first): passed by, as warcio does.
fn skip_remainder(stream: &mut impl BufRead) -> Result<(), String> {
    let available = stream.fill_buf().map_err(|err| read_failure(&err))?;
    let Some(end) = available.iter().take(256).position(|&b| b == b'\n') else {
        return Ok(());
    };
    let line = &available[..end];
    let blank = line.iter().all(|&b| b == b'\r');
    if !blank && !line.starts_with(b"WARC/") {
        stream.consume(end + 1);
    }
    Ok(())
}

/// The head of the record the stream is at (blank lines skipped before), or `None` at its end.
pub(crate) fn read_head(stream: &mut impl BufRead, arc: bool) -> Result<Option<Head>, String> {
    if !skip_blank_lines(stream)? {
        return Ok(None);
    }
    let first = read_line(stream)?.unwrap_or_default();
    if let Some(version) = first.strip_prefix(b"WARC/") {
        let version = String::from_utf8_lossy(version).trim().to_string();
        return warc_head(stream, version).map(Some);
    }
    if arc || first.starts_with(b"filedesc://") {
        return arc_head(&first).map(Some);
    }
    Err("it does not start with `WARC/` (not a WARC record, or the file is damaged)".into())
}

fn warc_head(stream: &mut impl BufRead, version: String) -> Result<Head, String> {
    let mut fields: Vec<(String, Vec<u8>)> = Vec::new();
    let mut bytes = 0;
    loop {
        let line = read_line(stream)?
            .ok_or("the archive ends inside this record's head (a truncated file?)")?;
        if line.is_empty() {
            break;
        }
        bytes += line.len();
        if bytes > HEAD_BYTES {
            return Err("its WARC head is too long".into());
        }
        if matches!(line[0], b' ' | b'\t') {
            // A folded line continues the field before it.
            let (_, value) = fields
                .last_mut()
                .ok_or("its WARC head starts with a folded line")?;
            value.push(b' ');
            value.extend_from_slice(line.trim_ascii());
            continue;
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or("its WARC head is malformed (a line that is not `Name: value`)".to_string())?;
        let name = std::str::from_utf8(&line[..colon])
            .ok()
            .map(str::trim)
            .filter(|name| {
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':')
            })
            .ok_or("its WARC head has a field whose name is not a token")?;
        fields.push((name.to_string(), line[colon + 1..].trim_ascii().to_vec()));
    }
    let head = Head {
        version,
        fields,
        length: 0,
    };
    let length = head
        .get("Content-Length")?
        .ok_or("it has no Content-Length")?;
    let length = length
        .parse::<u64>()
        .map_err(|_| format!("its Content-Length {length:?} is not a length"))?;
    Ok(Head { length, ..head })
}

/// An ARC record's head line: `URL IP date mime length` (version 1) or longer (version 2, the
/// length last), made into the fields of the WARC record warcio would read it as.
fn arc_head(line: &[u8]) -> Result<Head, String> {
    let text = std::str::from_utf8(line).map_err(|_| "its ARC head is not UTF-8".to_string())?;
    if text.chars().any(char::is_control) {
        return Err("its ARC head has a control character".into());
    }
    let parts: Vec<&str> = text.split(' ').filter(|p| !p.is_empty()).collect();
    if parts.len() < 5 {
        return Err("its ARC head is malformed (fewer than five fields)".into());
    }
    let length = parts[parts.len() - 1]
        .parse::<u64>()
        .map_err(|_| "its ARC head's length is not a number".to_string())?;
    let (url, date, mime) = (parts[0], parts[2], parts[3]);
    if date.len() < 14 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("its ARC date {date:?} is not a date"));
    }
    let date = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &date[0..4],
        &date[4..6],
        &date[6..8],
        &date[8..10],
        &date[10..12],
        &date[12..14]
    );
    let kind = if url.starts_with("filedesc:") {
        "warcinfo"
    } else {
        "response"
    };
    let content_type = if url.starts_with("http:") || url.starts_with("https:") {
        "application/http; msgtype=response"
    } else {
        mime
    };
    let field = |name: &str, value: &str| (name.to_string(), value.as_bytes().to_vec());
    Ok(Head {
        version: "ARC".into(),
        fields: vec![
            field("WARC-Type", kind),
            field("WARC-Target-URI", url),
            field("WARC-Date", &date),
            field("Content-Type", content_type),
        ],
        length,
    })
}

/// What a scan does with each record.
pub(crate) trait Visitor {
    /// How much of this record's block may be read into memory, or `None` to pass it by (read
    /// and charged all the same).
    fn wants(&mut self, head: &Head) -> Result<Option<u64>, String>;
    /// A record wanted, its block read whole.
    fn take(&mut self, head: Head, block: Vec<u8>, at: At) -> Result<(), String>;
    /// The gzip member at `offset` ended, `length` bytes long: the records found in it are
    /// read from there.
    fn member_ended(&mut self, _offset: u64, _length: u64) {}
}

/// Read every record of `file` (gzip members or plain), each given to `visitor`. An error is
/// `record N: why`.
pub(crate) fn scan(
    file: impl Read,
    budget: &Budget,
    visitor: &mut impl Visitor,
) -> Result<u64, String> {
    let mut file = Counting::new(BufReader::with_capacity(64 << 10, file));
    let gzipped = file
        .fill_buf()
        .map_err(|err| format!("it cannot be read ({err})"))?
        .starts_with(&[0x1f, 0x8b]);
    let mut state = State::default();
    if !gzipped {
        let mut stream = Counting::new(BufReader::new(Charged::new(&mut file, budget)));
        records(&mut stream, None, &mut state, visitor)?;
        return Ok(state.number);
    }
    loop {
        let more = file
            .fill_buf()
            .map_err(|err| state.at(read_failure(&err)))?;
        if more.is_empty() {
            break;
        }
        let start = file.consumed;
        let member = flate2::bufread::GzDecoder::new(&mut file);
        let mut stream = Counting::new(BufReader::new(Charged::new(member, budget)));
        records(&mut stream, Some(start), &mut state, visitor)?;
        drop(stream);
        visitor.member_ended(start, file.consumed - start);
    }
    Ok(state.number)
}

#[derive(Default)]
struct State {
    number: u64,
    arc: bool,
}

impl State {
    fn at(&self, why: String) -> String {
        format!("record {}: {why}", self.number.max(1))
    }
}

/// The records of one stream (a gzip member's, or a plain file's).
fn records(
    stream: &mut Counting<impl BufRead>,
    member: Option<u64>,
    state: &mut State,
    visitor: &mut impl Visitor,
) -> Result<(), String> {
    loop {
        let more = skip_blank_lines(stream).map_err(|why| state.at(why))?;
        if !more {
            return Ok(());
        }
        let start = stream.consumed;
        state.number += 1;
        let head = read_head(stream, state.arc).map_err(|why| state.at(why))?;
        let Some(head) = head else {
            return Ok(());
        };
        if state.number == 1 && head.is_arc() {
            state.arc = true;
        }
        let wanted = visitor.wants(&head).map_err(|why| state.at(why))?;
        let block = match wanted {
            Some(limit) if head.length > limit => {
                return Err(state.at(format!(
                    "its block of {} bytes is over the limit of {limit}",
                    head.length
                )))
            }
            Some(_) => {
                let mut block = Vec::with_capacity(head.length.min(1 << 20) as usize);
                (&mut *stream)
                    .take(head.length)
                    .read_to_end(&mut block)
                    .map_err(|err| state.at(read_failure(&err)))?;
                Some(block)
            }
            None => {
                let passed = io::copy(&mut (&mut *stream).take(head.length), &mut io::sink())
                    .map_err(|err| state.at(read_failure(&err)))?;
                if passed < head.length {
                    return Err(
                        state.at("the archive ends inside this record (a truncated file?)".into())
                    );
                }
                None
            }
        };
        if let Some(block) = &block {
            if (block.len() as u64) < head.length {
                return Err(
                    state.at("the archive ends inside this record (a truncated file?)".into())
                );
            }
        }
        let at = match member {
            Some(offset) => At {
                offset,
                length: 0,
                skip: start,
            },
            None => At {
                offset: start,
                length: stream.consumed - start,
                skip: 0,
            },
        };
        if let Some(block) = block {
            visitor.take(head, block, at).map_err(|why| state.at(why))?;
        }
        if !state.arc {
            skip_remainder(stream).map_err(|why| state.at(why))?;
        }
    }
}

/// A reading failure in words: the budget's own message, a cut file, damaged gzip.
pub(crate) fn read_failure(err: &io::Error) -> String {
    match err.kind() {
        io::ErrorKind::FileTooLarge => err.to_string(),
        io::ErrorKind::UnexpectedEof => {
            "the archive ends inside this record (a truncated file?)".into()
        }
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => {
            format!("its gzip data is damaged ({err})")
        }
        _ => format!("it cannot be read ({err})"),
    }
}

/// One record read alone from `bytes` (a gzip member or the record itself), `skip` unpacked
/// bytes in: its head and its block (at most `limit` bytes).
pub(crate) fn record_at(
    bytes: &[u8],
    skip: u64,
    arc: bool,
    budget: &Budget,
    limit: u64,
) -> Result<(Head, Vec<u8>), String> {
    let gzipped = bytes.starts_with(&[0x1f, 0x8b]);
    let unpacked: Box<dyn Read + '_> = if gzipped {
        Box::new(flate2::read::MultiGzDecoder::new(bytes))
    } else {
        Box::new(bytes)
    };
    let mut stream = BufReader::new(Charged::new(unpacked, budget));
    io::copy(&mut (&mut stream).take(skip), &mut io::sink()).map_err(|err| read_failure(&err))?;
    let head = read_head(&mut stream, arc)?.ok_or("no record is there")?;
    if head.length > limit {
        return Err(format!(
            "its block of {} bytes is over the limit of {limit}",
            head.length
        ));
    }
    let mut block = Vec::with_capacity(head.length.min(1 << 20) as usize);
    (&mut stream)
        .take(head.length)
        .read_to_end(&mut block)
        .map_err(|err| read_failure(&err))?;
    if (block.len() as u64) < head.length {
        return Err("the archive ends inside this record (a truncated file?)".into());
    }
    Ok((head, block))
}

/// A record's target: an absolute http(s) URL, without its fragment.
pub(crate) fn target(value: Option<String>) -> Result<String, String> {
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
