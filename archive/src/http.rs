//! The HTTP messages inside WARC records (`application/http; msgtype=...`): written as HTTP/1.1
//! with the body decoded and whole, read back with httparse. Archives from other tools keep bodies
//! as they travelled (chunked, gzip): those are decoded on reading, never past the body limit.

use std::borrow::Cow;
use std::io::{self, Read, Write};

use crate::budget::{Budget, Charged};
use crate::exchange::{clean_header, is_transfer_header, Header};
use crate::{Request, Response};

/// A head (the HTTP status line and headers) may take this much beside its body.
pub(crate) const HEAD_BYTES: u64 = 256 << 10;

/// Headers one HTTP message may have in an archive; more is refused (a page's responses carry a
/// few dozen).
const MAX_HEADERS: usize = 256;

/// The response as an HTTP/1.1 message. The transfer headers are replaced by the body's length.
pub(crate) fn response_block(response: &Response) -> Vec<u8> {
    let reason = response.reason_phrase();
    let mut block = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason.replace(['\r', '\n'], " ")
    );
    push_headers(&mut block, &response.headers, &[]);
    block.push_str(&format!("Content-Length: {}\r\n\r\n", response.body.len()));
    let mut bytes = block.into_bytes();
    bytes.extend_from_slice(&response.body);
    bytes
}

/// The request as an HTTP/1.1 message: the path as its target, the URL's host as `Host`.
pub(crate) fn request_block(request: &Request) -> Result<Vec<u8>, String> {
    let url = url::Url::parse(&request.url).map_err(|err| format!("{}: {err}", request.url))?;
    let host = url
        .host_str()
        .ok_or_else(|| format!("{}: no host", request.url))?;
    let host = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    let method =
        if request.method.bytes().all(|b| b.is_ascii_alphabetic()) && !request.method.is_empty() {
            request.method.as_str()
        } else {
            return Err(format!(
                "{}: the method {:?} is not a token",
                request.url, request.method
            ));
        };
    let mut block = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\n");
    push_headers(&mut block, &request.headers, &["host"]);
    if !request.body.is_empty() {
        block.push_str(&format!("Content-Length: {}\r\n", request.body.len()));
    }
    block.push_str("\r\n");
    let mut bytes = block.into_bytes();
    bytes.extend_from_slice(&request.body);
    Ok(bytes)
}

fn push_headers(block: &mut String, headers: &[Header], also_skipped: &[&str]) {
    for (name, value) in headers {
        if is_transfer_header(name) || also_skipped.iter().any(|s| name.eq_ignore_ascii_case(s)) {
            continue;
        }
        if let Some((name, value)) = clean_header(name, value) {
            block.push_str(&format!("{name}: {value}\r\n"));
        }
    }
}

/// A response message, its body decoded (chunks joined, gzip, deflate or brotli unpacked)
/// within `body_limit` bytes, every decoded byte charged to `budget`. With `keep` false the body
/// is decoded to check it and count it, then dropped (an archive being opened keeps none).
pub(crate) fn parse_response(
    block: &[u8],
    body_limit: u64,
    budget: &Budget,
    keep: bool,
) -> Result<Response, String> {
    let (head, body_at) = split_head(block, true)?;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut headers);
    parsed
        .parse(&head)
        .map_err(|err| format!("the HTTP response's head is malformed ({err})"))?;
    let status = parsed.code.ok_or("the HTTP response has no status")?;
    let reason = parsed.reason.unwrap_or_default().to_string();
    let headers = message_headers(parsed.headers)?;
    let mut body = Vec::new();
    let mut sink: Box<dyn Write> = if keep {
        Box::new(&mut body)
    } else {
        Box::new(io::sink())
    };
    decode_body(&headers, &block[body_at..], body_limit, budget, &mut sink)?;
    drop(sink);
    Ok(Response {
        status,
        reason,
        headers: headers
            .into_iter()
            .filter(|(n, _)| !is_transfer_header(n))
            .collect(),
        body,
        body_left_out: false,
    })
}

/// A response's status and headers alone (a revisit's, a truncated record's): the body, if
/// any, is not looked at.
pub(crate) fn response_head(block: &[u8]) -> Result<Response, String> {
    let head = match block.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) => block[..end + 4].to_vec(),
        None if block.ends_with(b"\n") => [block, b"\r\n"].concat(),
        None => [block, b"\r\n\r\n"].concat(),
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut headers);
    match parsed.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err("the HTTP response ends inside its head".into())
        }
        Err(err) => return Err(format!("the HTTP response's head is malformed ({err})")),
    }
    Ok(Response {
        status: parsed.code.ok_or("the HTTP response has no status")?,
        reason: parsed.reason.unwrap_or_default().to_string(),
        headers: message_headers(parsed.headers)?
            .into_iter()
            .filter(|(n, _)| !is_transfer_header(n))
            .collect(),
        body: Vec::new(),
        body_left_out: false,
    })
}

/// A request message: its method, headers and decoded body (into `body`).
pub(crate) fn parse_request(
    block: &[u8],
    body_limit: u64,
    budget: &Budget,
    body: &mut dyn Write,
) -> Result<(String, Vec<Header>), String> {
    let (head, body_at) = split_head(block, false)?;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    parsed
        .parse(&head)
        .map_err(|err| format!("the HTTP request's head is malformed ({err})"))?;
    let method = parsed
        .method
        .ok_or("the HTTP request has no method")?
        .to_string();
    let headers = message_headers(parsed.headers)?;
    decode_body(&headers, &block[body_at..], body_limit, budget, body)?;
    let headers = headers
        .into_iter()
        .filter(|(n, _)| !is_transfer_header(n))
        .collect();
    Ok((method, headers))
}

/// An HTTP message's head (ending in its blank line) and where its body starts. Strictly
/// parsed where it can be; else as warcio reads what real tools wrote: lines ending in LF or
/// CR CR LF, a head without its final blank line (pywb's sample requests, wget 1.14), a first
/// line whose protocol is not `HTTP/1.x`.
fn split_head(block: &[u8], response: bool) -> Result<(Cow<'_, [u8]>, usize), String> {
    let what = if response { "response" } else { "request" };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let strict = if response {
        httparse::Response::new(&mut headers).parse(block)
    } else {
        httparse::Request::new(&mut headers).parse(block)
    };
    let failure = match strict {
        Ok(httparse::Status::Complete(end)) => return Ok((Cow::Borrowed(&block[..end]), end)),
        Ok(httparse::Status::Partial) => format!("the HTTP {what} ends inside its head"),
        Err(err) => format!("the HTTP {what}'s head is malformed ({err})"),
    };
    let (head, body_at) = lenient_head(block, response).ok_or_else(|| failure.clone())?;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let parsed = if response {
        httparse::Response::new(&mut headers).parse(&head)
    } else {
        httparse::Request::new(&mut headers).parse(&head)
    };
    match parsed {
        Ok(httparse::Status::Complete(_)) => Ok((Cow::Owned(head), body_at)),
        _ => Err(failure),
    }
}

/// The head rebuilt line by line (see `split_head`), and where the body starts.
fn lenient_head(block: &[u8], response: bool) -> Option<(Vec<u8>, usize)> {
    let mut head = Vec::new();
    let mut at = 0;
    while at < block.len() {
        let rest = &block[at..];
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(end) => (&rest[..end], at + end + 1),
            None => (rest, block.len()),
        };
        at = next;
        let line = line.trim_ascii_end();
        if line.is_empty() {
            break;
        }
        if head.is_empty() {
            head.extend_from_slice(&first_line(line, response)?);
        } else {
            head.extend_from_slice(line);
        }
        head.extend_from_slice(b"\r\n");
        if head.len() as u64 > HEAD_BYTES {
            return None;
        }
    }
    head.extend_from_slice(b"\r\n");
    Some((head, at))
}

/// A first line with its protocol made `HTTP/1.1` (`HTTPX/1.1 200 OK`, `HTTP/1.0 302 `).
fn first_line(line: &[u8], response: bool) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(line).ok()?;
    if response {
        let (_, rest) = text.split_once(' ')?;
        let rest = rest.trim_start();
        rest.get(..3)?.bytes().all(|b| b.is_ascii_digit()).then(|| {
            let reason = rest[3..].trim();
            format!("HTTP/1.1 {} {reason}", &rest[..3]).into_bytes()
        })
    } else {
        let mut parts = text.split_whitespace();
        let (method, target) = (parts.next()?, parts.next()?);
        Some(format!("{method} {target} HTTP/1.1").into_bytes())
    }
}

fn message_headers(raw: &[httparse::Header]) -> Result<Vec<Header>, String> {
    raw.iter()
        .map(|header| {
            let value = String::from_utf8_lossy(header.value);
            clean_header(header.name, &value)
                .ok_or_else(|| format!("the header {:?} has a control character", header.name))
        })
        .collect()
}

/// The body as the page saw it, written to `out`: chunks joined, then gzip, deflate or brotli
/// unpacked, never more than `limit` bytes, every decoded byte charged to `budget` (an archive is
/// untrusted: a small gzip can unpack to gigabytes, and many of them add up).
fn decode_body(
    headers: &[Header],
    raw: &[u8],
    limit: u64,
    budget: &Budget,
    out: &mut dyn Write,
) -> Result<u64, String> {
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let chunked = find("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let mut reader: Box<dyn Read + '_> = if chunked && looks_chunked(raw) {
        Box::new(Charged::new(Dechunk::new(raw, limit), budget))
    } else {
        // Declared chunked over a body the writer already joined (warcprox, some crawlers): the
        // body as it is, as warcio reads it.
        let declared = (!chunked)
            .then(|| find("content-length"))
            .flatten()
            .and_then(|v| v.trim().parse::<u64>().ok());
        let end = declared.map_or(raw.len(), |d| d.min(raw.len() as u64) as usize);
        Box::new(&raw[..end])
    };
    let encodings = find("content-encoding").unwrap_or_default();
    // Applied in the order listed: undone from the last.
    for encoding in encodings.split(',').map(str::trim).rev() {
        reader = match encoding {
            "" | "identity" => reader,
            "gzip" | "x-gzip" => Box::new(Charged::new(
                flate2::read::MultiGzDecoder::new(reader),
                budget,
            )),
            "deflate" => Box::new(Charged::new(Inflate::new(reader), budget)),
            "br" => Box::new(Charged::new(
                brotli_decompressor::Decompressor::new(reader, 4096),
                budget,
            )),
            other => return Err(format!("a body in the {other:?} encoding cannot be read")),
        };
    }
    let copied = io::copy(&mut reader.take(limit.saturating_add(1)), out).map_err(|err| {
        if err.kind() == io::ErrorKind::FileTooLarge || err.kind() == io::ErrorKind::Other {
            err.to_string()
        } else {
            format!("a body cannot be decoded ({err})")
        }
    })?;
    if copied > limit {
        return Err(format!(
            "a body decodes to more than the limit of {limit} bytes"
        ));
    }
    Ok(copied)
}

/// Whether a body starts as chunked data does: a hexadecimal size, maybe extensions, a line break.
fn looks_chunked(raw: &[u8]) -> bool {
    let Some(end) = raw.iter().take(1024).position(|&b| b == b'\n') else {
        return false;
    };
    let line = std::str::from_utf8(&raw[..end]).unwrap_or("");
    let size = line
        .trim_end_matches('\r')
        .split(';')
        .next()
        .unwrap_or("")
        .trim();
    !size.is_empty() && size.len() <= 16 && size.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `Transfer-Encoding: chunked` undone as it is read: sizes in hex (extensions ignored), each
/// chunk followed by a line break, a 0 at the end. A body cut at a chunk's end is taken as it is
/// (as warcio does); a cut inside a chunk, a size that is not hex or past `limit`, is an error.
struct Dechunk<'a> {
    raw: &'a [u8],
    /// What is left of the chunk being read.
    left: usize,
    done: bool,
    limit: u64,
    read: u64,
}

impl<'a> Dechunk<'a> {
    fn new(raw: &'a [u8], limit: u64) -> Self {
        Dechunk {
            raw,
            left: 0,
            done: false,
            limit,
            read: 0,
        }
    }

    fn malformed(why: &str) -> io::Error {
        io::Error::other(format!("a chunked body is malformed ({why})"))
    }

    /// The next chunk's size, its line taken.
    fn next_size(&mut self) -> io::Result<Option<u64>> {
        if self.raw.is_empty() {
            return Ok(None);
        }
        let end = self
            .raw
            .iter()
            .take(4096)
            .position(|&b| b == b'\n')
            .ok_or_else(|| Self::malformed("a size line without its end"))?;
        let line = std::str::from_utf8(&self.raw[..end])
            .map_err(|_| Self::malformed("a size that is not text"))?;
        let size = line
            .trim_end_matches('\r')
            .split(';')
            .next()
            .unwrap_or("")
            .trim();
        if size.is_empty() || size.len() > 16 {
            return Err(Self::malformed("a size that is not a hexadecimal number"));
        }
        let size = u64::from_str_radix(size, 16)
            .map_err(|_| Self::malformed("a size that is not a hexadecimal number"))?;
        self.raw = &self.raw[end + 1..];
        Ok(Some(size))
    }
}

impl Read for Dechunk<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.left == 0 {
            if self.done {
                return Ok(0);
            }
            let Some(size) = self.next_size()? else {
                self.done = true;
                return Ok(0);
            };
            if size == 0 {
                self.done = true;
                return Ok(0);
            }
            // The size is the archive's: any u64, so no sum with it may overflow.
            if size > self.limit.saturating_sub(self.read) {
                return Err(io::Error::other(format!(
                    "a chunked body is over the limit of {} bytes",
                    self.limit
                )));
            }
            let size = usize::try_from(size).map_err(|_| Self::malformed("a size too large"))?;
            if self.raw.len() < size {
                return Err(Self::malformed("a chunk cut short"));
            }
            self.left = size;
        }
        let n = self.left.min(buf.len());
        buf[..n].copy_from_slice(&self.raw[..n]);
        self.raw = &self.raw[n..];
        self.left -= n;
        self.read += n as u64;
        if self.left == 0 {
            // The line break after a chunk (CRLF, or a bare LF).
            if self.raw.starts_with(b"\r\n") {
                self.raw = &self.raw[2..];
            } else if self.raw.starts_with(b"\n") {
                self.raw = &self.raw[1..];
            } else if !self.raw.is_empty() {
                return Err(Self::malformed("a chunk not followed by a line break"));
            }
        }
        Ok(n)
    }
}

/// `Content-Encoding: deflate` as servers send it: zlib-wrapped (the standard) or raw deflate
/// (what some servers send instead), told apart by the zlib header.
enum Inflate<R: Read> {
    Zlib(flate2::read::ZlibDecoder<io::Chain<io::Cursor<Vec<u8>>, R>>),
    Raw(flate2::read::DeflateDecoder<io::Chain<io::Cursor<Vec<u8>>, R>>),
    Start(Option<R>),
}

impl<R: Read> Inflate<R> {
    fn new(inner: R) -> Self {
        Inflate::Start(Some(inner))
    }
}

impl<R: Read> Read for Inflate<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Inflate::Start(inner) = self {
            let mut inner = inner.take().expect("started once");
            let mut first = [0u8; 2];
            let mut got = 0;
            while got < 2 {
                let n = inner.read(&mut first[got..])?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            let zlib = got == 2
                && first[0] & 0x0f == 8
                && (u16::from(first[0]) << 8 | u16::from(first[1])) % 31 == 0;
            let replay = io::Cursor::new(first[..got].to_vec()).chain(inner);
            *self = if zlib {
                Inflate::Zlib(flate2::read::ZlibDecoder::new(replay))
            } else {
                Inflate::Raw(flate2::read::DeflateDecoder::new(replay))
            };
        }
        match self {
            Inflate::Zlib(decoder) => decoder.read(buf),
            Inflate::Raw(decoder) => decoder.read(buf),
            Inflate::Start(_) => unreachable!("started above"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_response(block: &[u8], limit: u64) -> Result<Response, String> {
        super::parse_response(block, limit, &Budget::new(u64::MAX), true)
    }

    fn parse_request(block: &[u8], limit: u64) -> Result<(String, Vec<Header>, Vec<u8>), String> {
        let mut body = Vec::new();
        let (method, headers) =
            super::parse_request(block, limit, &Budget::new(u64::MAX), &mut body)?;
        Ok((method, headers, body))
    }

    #[test]
    fn a_response_is_written_decoded_and_read_back_the_same() {
        let response = Response {
            status: 200,
            reason: String::new(),
            headers: vec![
                ("content-type".into(), "text/html".into()),
                ("content-encoding".into(), "br".into()),
                ("content-length".into(), "9".into()),
                ("set-cookie".into(), "a=1; Path=/".into()),
                ("x-evil".into(), "1\r\nInjected: yes".into()),
            ],
            body: b"<p>hi</p>".to_vec(),
            body_left_out: false,
        };
        let block = response_block(&response);
        let text = String::from_utf8_lossy(&block);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(
            !text.to_ascii_lowercase().contains("content-encoding"),
            "{text}"
        );
        assert!(!text.contains("Injected"), "{text}");
        let back = parse_response(&block, 100).unwrap();
        assert_eq!(back.status, 200);
        assert_eq!(back.body, response.body);
        assert_eq!(back.header("set-cookie"), Some("a=1; Path=/"));
        assert_eq!(
            back.header("content-length"),
            None,
            "transfer headers are not kept"
        );
    }

    #[test]
    fn a_request_carries_its_path_host_and_body() {
        let request = Request {
            method: "POST".into(),
            url: "http://127.0.0.1:8080/thanks.html?x=1".into(),
            headers: vec![(
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            )],
            body: b"name=Ada".to_vec(),
        };
        let block = request_block(&request).unwrap();
        let text = String::from_utf8_lossy(&block);
        assert!(
            text.starts_with("POST /thanks.html?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
            "{text}"
        );
        let (method, headers, body) = parse_request(&block, 100).unwrap();
        assert_eq!(
            (method.as_str(), body.as_slice()),
            ("POST", &b"name=Ada"[..])
        );
        assert!(headers.iter().any(|(n, _)| n == "Host"));
        let bad = Request {
            method: "GE T".into(),
            ..request
        };
        assert!(request_block(&bad).is_err());
    }

    #[test]
    fn bodies_as_other_tools_keep_them_are_decoded_within_the_limit() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"hello hello").unwrap();
        let gz = gz.finish().unwrap();
        let mut chunked = format!("{:x}\r\n", gz.len()).into_bytes();
        chunked.extend_from_slice(&gz);
        chunked.extend_from_slice(b"\r\n0\r\n\r\n");
        let mut block =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
                .to_vec();
        block.extend_from_slice(&chunked);
        let response = parse_response(&block, 100).unwrap();
        assert_eq!(response.body, b"hello hello");
        assert!(response.headers.is_empty());

        // A bomb: 10 MB of zeros in a few KB of gzip, read with a limit of 1 MB.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![0u8; 10 << 20]).unwrap();
        let gz = gz.finish().unwrap();
        assert!(gz.len() < 64 << 10);
        let mut block = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n".to_vec();
        block.extend_from_slice(&gz);
        let why = parse_response(&block, 1 << 20).unwrap_err();
        assert!(why.contains("more than the limit"), "{why}");

        // Declared chunked over a body already joined (warcprox, some crawlers): read as it is.
        let joined = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n<p>zz</p>\r\n",
            100,
        )
        .unwrap();
        assert_eq!(joined.body, b"<p>zz</p>\r\n");
        for bad in [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n\x1f\x8b\x08\x00",
            b"HTTP/1.1 200 OK\r\nX-A: \x01\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Encoding: zstd\r\n\r\nxx",
        ] {
            assert!(
                parse_response(bad, 100).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let big = b"HTTP/1.1 200 OK\r\n\r\n0123456789".to_vec();
        assert!(parse_response(&big, 5)
            .unwrap_err()
            .contains("more than the limit"));
    }

    #[test]
    fn a_chunk_size_near_u64_max_is_refused_not_an_overflow() {
        // A chunk size near u64::MAX after a first chunk: refused, not an overflow (a panic in a
        // debug build, a wrapped sum and a panic slicing in a release one).
        for size in ["fffffffffffffffe", "ffffffffffffffff"] {
            let block = format!(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n{size}\r\nxyz\r\n0\r\n\r\n"
            );
            for limit in [100, u64::MAX] {
                let why = parse_response(block.as_bytes(), limit).unwrap_err();
                assert!(why.contains("chunked"), "{size}, {limit}: {why}");
            }
        }
    }
}
