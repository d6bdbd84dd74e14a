//! The HTTP messages inside WARC records (`application/http; msgtype=...`): written as HTTP/1.1
//! with the body decoded and whole, read back with httparse. Archives from other tools keep bodies
//! as they travelled (chunked, gzip): those are decoded on reading, never past the body limit.

use std::io::Read;

use crate::exchange::{clean_header, is_transfer_header, Header};
use crate::{Request, Response};

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

/// A response message, its body decoded (chunks joined, gzip or deflate unpacked) within
/// `body_limit` bytes.
pub(crate) fn parse_response(block: &[u8], body_limit: u64) -> Result<Response, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut headers);
    let head = match parsed.parse(block) {
        Ok(httparse::Status::Complete(head)) => head,
        Ok(httparse::Status::Partial) => {
            return Err("the HTTP response ends inside its head".into())
        }
        Err(err) => return Err(format!("the HTTP response's head is malformed ({err})")),
    };
    let status = parsed.code.ok_or("the HTTP response has no status")?;
    let reason = parsed.reason.unwrap_or_default().to_string();
    let headers = message_headers(parsed.headers)?;
    let body = decode_body(&headers, &block[head..], body_limit)?;
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

/// A request message: its method, headers and decoded body.
pub(crate) fn parse_request(
    block: &[u8],
    body_limit: u64,
) -> Result<(String, Vec<Header>, Vec<u8>), String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    let head = match parsed.parse(block) {
        Ok(httparse::Status::Complete(head)) => head,
        Ok(httparse::Status::Partial) => return Err("the HTTP request ends inside its head".into()),
        Err(err) => return Err(format!("the HTTP request's head is malformed ({err})")),
    };
    let method = parsed
        .method
        .ok_or("the HTTP request has no method")?
        .to_string();
    let headers = message_headers(parsed.headers)?;
    let body = decode_body(&headers, &block[head..], body_limit)?;
    let headers = headers
        .into_iter()
        .filter(|(n, _)| !is_transfer_header(n))
        .collect();
    Ok((method, headers, body))
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

/// The body as the page saw it: chunks joined, then gzip or deflate unpacked, never more than
/// `limit` bytes (an archive is untrusted: a small gzip can unpack to gigabytes).
fn decode_body(headers: &[Header], raw: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let mut body = if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        join_chunks(raw, limit)?
    } else {
        let declared = find("content-length").and_then(|v| v.trim().parse::<usize>().ok());
        raw[..declared.unwrap_or(raw.len()).min(raw.len())].to_vec()
    };
    let encoding = find("content-encoding").unwrap_or_default();
    let encoding = encoding.trim();
    if matches!(encoding, "gzip" | "x-gzip") {
        body = unpack(flate2::read::MultiGzDecoder::new(&body[..]), limit)?;
    } else if encoding == "deflate" {
        body = unpack(flate2::read::ZlibDecoder::new(&body[..]), limit)?;
    } else if !encoding.is_empty() && encoding != "identity" {
        return Err(format!(
            "a body in the {encoding:?} encoding cannot be read"
        ));
    }
    if body.len() as u64 > limit {
        return Err(format!(
            "a body of {} bytes is over the limit of {limit}",
            body.len()
        ));
    }
    Ok(body)
}

fn unpack(decoder: impl Read, limit: u64) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    decoder
        .take(limit + 1)
        .read_to_end(&mut body)
        .map_err(|err| format!("a compressed body cannot be unpacked ({err})"))?;
    if body.len() as u64 > limit {
        return Err(format!(
            "a compressed body unpacks to more than the limit of {limit} bytes"
        ));
    }
    Ok(body)
}

/// `Transfer-Encoding: chunked` undone: sizes in hex, each chunk followed by CRLF, a 0 at the end.
fn join_chunks(mut raw: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let malformed = || "a chunked body is malformed".to_string();
    let mut body = Vec::new();
    loop {
        let line_end = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(malformed)?;
        let line = std::str::from_utf8(&raw[..line_end]).map_err(|_| malformed())?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = u64::from_str_radix(size_text, 16).map_err(|_| malformed())?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        // The size is the archive's: any u64, so no sum with it may overflow.
        let remaining = limit.saturating_sub(body.len() as u64);
        if size > remaining {
            return Err(format!("a chunked body is over the limit of {limit} bytes"));
        }
        let size = usize::try_from(size).map_err(|_| malformed())?;
        let end = size.checked_add(2).ok_or_else(malformed)?;
        if raw.len() < end || &raw[size..end] != b"\r\n" {
            return Err(malformed());
        }
        body.extend_from_slice(&raw[..size]);
        raw = &raw[end..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

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

        for bad in [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            b"HTTP/1.1 200 OK\r\nX-A: \x01\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Encoding: zstd\r\n\r\nxx",
            b"HTTP/1.1 200 OK\r\n",
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
            .contains("over the limit"));
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
