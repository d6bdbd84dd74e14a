//! CDXJ indexes (as pywb's `cdxj-indexer`, py-wacz and ReplayWeb.page write and read them): one
//! line per record, `SURT-key timestamp {json}`, the JSON saying the record's `url`, `mime`,
//! `status`, payload `digest`, and where it is (`filename`, `offset`, `length`). This project
//! adds `method` (as pywb does for a POST), `requestDigest` (the SHA-256 of a request's body, for
//! the replay's matching) and `skip` (a record inside a gzip member of several). An index is
//! untrusted like the archive: read within the budget, every line checked, every record read
//! through it checked against it.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::budget::{Budget, Charged};
use crate::catalog::{Entry, MAX_ENTRIES};
use crate::framing::target;
use crate::framing::At;
use crate::place::open_file;

/// The longest line of an index.
const LINE_BYTES: u64 = 64 << 10;
/// Blank lines and comments an index may have.
const BLANK_LINES: usize = 4096;

/// The index at `path`: its entries, `file_of` telling which of the archive's files a line's
/// `filename` names (`None`: the line names a file the archive lacks).
pub(crate) fn read_index(
    path: &Path,
    budget: &Budget,
    file_of: impl Fn(Option<&str>) -> Option<usize>,
) -> Result<Vec<Entry>, String> {
    let (file, _) = open_file(path).map_err(|err| format!("it cannot be opened ({err})"))?;
    parse(file, budget, file_of)
}

/// An index's lines from `source` (plain, or gzip: a WACZ's `index.cdx.gz`).
pub(crate) fn parse(
    source: impl Read,
    budget: &Budget,
    file_of: impl Fn(Option<&str>) -> Option<usize>,
) -> Result<Vec<Entry>, String> {
    let mut source = BufReader::new(source);
    let gzipped = source
        .fill_buf()
        .map_err(|err| format!("it cannot be read ({err})"))?
        .starts_with(&[0x1f, 0x8b]);
    let unpacked: Box<dyn Read> = if gzipped {
        Box::new(flate2::bufread::MultiGzDecoder::new(source))
    } else {
        Box::new(source)
    };
    let mut lines = BufReader::new(Charged::new(unpacked, budget));
    let mut entries = Vec::new();
    let mut number = 0;
    let mut blank = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut lines)
            .take(LINE_BYTES + 1)
            .read_until(b'\n', &mut line)
            .map_err(|err| format!("line {}: {err}", number + 1))?;
        if read == 0 {
            break;
        }
        number += 1;
        if read as u64 > LINE_BYTES {
            return Err(format!("line {number} is too long"));
        }
        let text = std::str::from_utf8(&line)
            .map_err(|_| format!("line {number} is not UTF-8"))?
            .trim();
        if text.is_empty() || text.starts_with('!') {
            blank += 1;
            if blank > BLANK_LINES {
                return Err(format!(
                    "it has more than {BLANK_LINES} lines without an entry"
                ));
            }
            continue;
        }
        if let Some(entry) = entry(text, &file_of).map_err(|why| format!("line {number}: {why}"))? {
            if entries.len() >= MAX_ENTRIES {
                return Err(format!("it has more than {MAX_ENTRIES} entries"));
            }
            entries.push(entry);
        }
    }
    Ok(entries)
}

/// One line's entry; `None` for lines that are no answer (requests, pages' own records, other
/// schemes).
fn entry(
    line: &str,
    file_of: &impl Fn(Option<&str>) -> Option<usize>,
) -> Result<Option<Entry>, String> {
    let json_at = line.find('{').ok_or("it has no JSON part")?;
    let mut fields = line[..json_at].split_whitespace();
    let (_key, timestamp) = (fields.next(), fields.next().unwrap_or(""));
    let json: Map<String, Value> =
        serde_json::from_str(&line[json_at..]).map_err(|err| format!("its JSON: {err}"))?;
    let text = |name: &str| -> Option<String> {
        match json.get(name)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let number = |name: &str| -> Result<u64, String> {
        let value = text(name).ok_or(format!("it has no {name}"))?;
        value
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("its {name} {value:?} is not a number"))
    };
    let mime = text("mime").unwrap_or_default();
    if mime == "warc/request" {
        return Ok(None);
    }
    let Some(url) = text("url") else {
        return Err("it has no url".into());
    };
    let lowered = url.to_ascii_lowercase();
    if !(lowered.starts_with("http:") || lowered.starts_with("https:")) {
        return Ok(None);
    }
    let url = target(Some(url))?;
    let filename = text("filename");
    let file = file_of(filename.as_deref()).ok_or_else(|| {
        format!(
            "its filename {:?} is not a file of the archive",
            filename.unwrap_or_default()
        )
    })?;
    let at = At {
        offset: number("offset")?,
        length: number("length")?,
        skip: json.get("skip").map_or(Ok(0), |_| number("skip"))?,
    };
    let status = text("status")
        .and_then(|s| s.trim().parse::<u16>().ok())
        .unwrap_or(0);
    let request_digest = text("requestDigest")
        .and_then(|d| d.strip_prefix("sha256:").map(str::to_string))
        .and_then(|d| data_encoding::BASE32.decode(d.as_bytes()).ok())
        .and_then(|d| <[u8; 32]>::try_from(d).ok());
    Ok(Some(Entry {
        url,
        method: text("method")
            .map(|m| m.to_ascii_uppercase())
            .filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_alphabetic()))
            .unwrap_or_else(|| "GET".into()),
        request_digest,
        date: timestamp_date(timestamp).unwrap_or(UNIX_EPOCH),
        revisit: mime == "warc/revisit",
        status,
        mime,
        digest: text("digest"),
        file,
        at,
        request: None,
    }))
}

/// `YYYYMMDDhhmmss` (shorter is padded as CDX readers do) as a time.
fn timestamp_date(stamp: &str) -> Option<SystemTime> {
    if stamp.is_empty() || stamp.len() > 17 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut full = stamp[..stamp.len().min(14)].to_string();
    let pad = "00000101000000";
    full.push_str(&pad[full.len()..]);
    let parsed = chrono::NaiveDateTime::parse_from_str(&full, "%Y%m%d%H%M%S").ok()?;
    let seconds = parsed.and_utc().timestamp();
    u64::try_from(seconds)
        .ok()
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
}

/// A URL's SURT key as ReplayWeb.page computes it: scheme and `www.` dropped, lowercase, the
/// host's labels reversed and joined by commas, the port kept, `)` then the path and the query
/// with its parameters sorted.
pub fn surt(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(&url.to_ascii_lowercase()) else {
        return url.to_string();
    };
    let host = parsed.host_str().unwrap_or_default();
    let host = strip_www(host);
    let mut key: String = host.split('.').rev().collect::<Vec<_>>().join(",");
    if let Some(port) = parsed.port() {
        key.push_str(&format!(":{port}"));
    }
    key.push(')');
    key.push_str(parsed.path());
    if let Some(query) = parsed.query().filter(|q| !q.is_empty()) {
        let mut pairs: Vec<&str> = query.split('&').collect();
        pairs.sort();
        key.push('?');
        key.push_str(&pairs.join("&"));
    }
    key
}

fn strip_www(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix("www") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if rest[digits..].starts_with('.') && rest.len() > digits + 1 {
            return &rest[digits + 1..];
        }
    }
    host
}

/// An entry's line, `filename` the file it is in as the index names it.
pub(crate) fn line(entry: &Entry, filename: &str) -> String {
    let stamp = chrono::DateTime::<chrono::Utc>::from(entry.date).format("%Y%m%d%H%M%S");
    let mut json = json!({
        "url": entry.url,
        "mime": if entry.revisit { "warc/revisit" } else { entry.mime.as_str() },
        "offset": entry.at.offset.to_string(),
        "length": entry.at.length.to_string(),
        "filename": filename,
    });
    if entry.status != 0 {
        json["status"] = json!(entry.status.to_string());
    }
    if let Some(digest) = &entry.digest {
        json["digest"] = json!(digest);
    }
    if entry.method != "GET" {
        json["method"] = json!(entry.method);
    }
    if let Some(digest) = entry.request_digest {
        json["requestDigest"] = json!(format!("sha256:{}", data_encoding::BASE32.encode(&digest)));
    }
    if entry.at.skip != 0 {
        json["skip"] = json!(entry.at.skip.to_string());
    }
    format!("{} {stamp} {json}", surt(&entry.url))
}

/// Entries as a sorted CDXJ index (what binary searches over it expect).
pub(crate) fn write(out: &mut impl Write, entries: &[(&Entry, &str)]) -> std::io::Result<()> {
    let mut lines: Vec<String> = entries.iter().map(|(e, f)| line(e, f)).collect();
    lines.sort();
    for line in lines {
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surt_keys_are_as_replayweb_page_makes_them() {
        assert_eq!(
            surt("http://www.Example.com/a/b?z=1&a=2"),
            "com,example)/a/b?a=2&z=1"
        );
        assert_eq!(
            surt("https://127.0.0.1:8080/x.html"),
            "1,0,0,127:8080)/x.html"
        );
        assert_eq!(surt("http://www2.iana.org/"), "org,iana)/");
    }

    #[test]
    fn lines_written_are_read_back_and_bad_lines_refused() {
        let entry = Entry {
            url: "http://a.test/p?x=1".into(),
            method: "POST".into(),
            request_digest: Some([7; 32]),
            date: UNIX_EPOCH + Duration::from_secs(1_764_583_200),
            revisit: false,
            status: 200,
            mime: "text/html".into(),
            digest: Some("sha256:AAAA".into()),
            file: 0,
            at: At {
                offset: 10,
                length: 20,
                skip: 0,
            },
            request: None,
        };
        let mut out = Vec::new();
        write(&mut out, &[(&entry, "a.warc.gz")]).unwrap();
        let budget = Budget::new(1 << 20);
        let back = parse(&out[..], &budget, |f| (f == Some("a.warc.gz")).then_some(0)).unwrap();
        assert_eq!(back, vec![entry]);
        for bad in [
            "k 2020 {\"url\": \"http://a/\"}",
            "k 2020 {\"url\": \"http://a/\", \"offset\": \"x\", \"length\": 1}",
            "k 2020 not json",
            "k 2020 {\"url\": \"http://a/\", \"offset\": 1, \"length\": 1, \"filename\": \"../../etc/passwd\"}",
        ] {
            let found = parse(bad.as_bytes(), &budget, |f| f.is_none().then_some(0));
            assert!(found.is_err(), "{bad}");
        }
    }
}
