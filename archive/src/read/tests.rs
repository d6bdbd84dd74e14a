//! Archives written and read back, and crafted ones refused.

use std::io::Write;
use std::time::{Duration, SystemTime};

use super::*;
use crate::{ArchiveInfo, ArchiveWriter, Exchange, Request, Response};

fn temp(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("browserenv-archive-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn exchange(url: &str, body: &[u8]) -> Exchange {
    Exchange {
        request: Request {
            method: "GET".into(),
            url: url.into(),
            headers: vec![("Accept".into(), "*/*".into())],
            body: Vec::new(),
        },
        response: Response {
            status: 200,
            reason: "OK".into(),
            headers: vec![
                ("Content-Type".into(), "text/html".into()),
                ("Content-Encoding".into(), "gzip".into()),
            ],
            body: body.to_vec(),
            body_left_out: false,
        },
        date: SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_583_200),
    }
}

fn small() -> ReadLimits {
    ReadLimits {
        body_bytes: 1 << 20,
        archive_bytes: 4 << 20,
    }
}

/// One WARC record, gzipped as a member of its own.
fn record(headers: &str, block: &[u8]) -> Vec<u8> {
    let mut raw = format!(
        "WARC/1.1\r\n{headers}Content-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    raw.extend_from_slice(block);
    raw.extend_from_slice(b"\r\n\r\n");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).unwrap();
    gz.finish().unwrap()
}

const RESPONSE_HEADERS: &str = "WARC-Type: response\r\nWARC-Record-ID: <urn:uuid:1>\r\nWARC-Date: 2025-12-01T10:00:00Z\r\nContent-Type: application/http; msgtype=response\r\nWARC-Target-URI: http://a.example/\r\n";

fn refusal(bytes: &[u8], limits: &ReadLimits) -> String {
    read_from(bytes, "crafted.warc.gz", limits)
        .unwrap_err()
        .to_string()
}

/// A body that does not compress (a picture) and is larger than a gzip encoder's buffer is
/// written whole: the warc crate writes it with one `write`, which an encoder takes in part.
#[test]
fn a_body_that_does_not_compress_is_written_whole() {
    let dir = temp("incompressible");
    let path = dir.join("a.warc.gz");
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let body: Vec<u8> = (0..300_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let mut writer = ArchiveWriter::create(&path, &ArchiveInfo::default()).unwrap();
    writer
        .append(&exchange("http://a.example/picture", &body))
        .unwrap();
    writer.finish().unwrap();
    let archive = read(&path, &small()).unwrap();
    assert_eq!(archive.exchanges.len(), 1);
    assert!(
        archive.exchanges[0].response.body == body,
        "the body came back cut"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn what_is_written_is_read_back() {
    let dir = temp("roundtrip");
    let path = dir.join("episode.warc.gz");
    let info = ArchiveInfo {
        software: "browserenv-server test".into(),
        start_url: Some("http://a.example/".into()),
        episode: Some("ep-1".into()),
        recorded: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_583_200)),
    };
    let mut writer = ArchiveWriter::create(&path, &info).unwrap();
    let first = exchange("http://a.example/", b"<p>home</p>");
    let mut post = exchange("http://a.example/form?x=1", b"thanks");
    post.request.method = "POST".into();
    post.request.body = b"name=Ada".to_vec();
    let mut big = exchange("http://a.example/video", b"");
    big.response.body_left_out = true;
    for e in [&first, &post, &big] {
        writer.append(e).unwrap();
    }
    writer.finish().unwrap();
    // A second writer never writes over it, nor through a symlink.
    assert!(ArchiveWriter::create(&path, &info).is_err());

    let archive = read(&path, &small()).unwrap();
    assert_eq!(archive.info, info);
    assert_eq!(archive.exchanges.len(), 3);
    let back = &archive.exchanges[1];
    assert_eq!(
        (back.request.method.as_str(), back.request.body.as_slice()),
        ("POST", &b"name=Ada"[..])
    );
    assert_eq!(back.response.body, b"thanks");
    assert_eq!(
        back.response.header("content-encoding"),
        None,
        "bodies are kept decoded"
    );
    assert_eq!(back.date, first.date);
    assert!(archive.exchanges[2].response.body_left_out);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn crafted_archives_are_refused_with_the_record_and_the_reason() {
    let http = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello";
    assert!(read_from(&record(RESPONSE_HEADERS, http)[..], "ok", &small()).is_ok());

    // A record that says it holds gigabytes, in a file of a few bytes; one that does hold
    // 64 MiB (of zeros: a few KB of gzip), read no further than the archive's limit.
    let mut raw =
        format!("WARC/1.1\r\n{RESPONSE_HEADERS}Content-Length: 5000000000\r\n\r\n").into_bytes();
    raw.extend_from_slice(b"tiny");
    let why = refusal(&raw, &small());
    assert!(
        why.contains("record 1") && why.contains("over the limit"),
        "{why}"
    );
    let mut huge = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    huge.resize(64 << 20, 0);
    let wide = ReadLimits {
        body_bytes: 100 << 20,
        ..small()
    };
    let why = refusal(&record(RESPONSE_HEADERS, &huge), &wide);
    assert!(
        why.contains("record 1") && why.contains("more than 4 MiB"),
        "{why}"
    );

    // A body over the body limit.
    let mut body = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    body.extend(std::iter::repeat_n(b'x', 2 << 20));
    let why = refusal(&record(RESPONSE_HEADERS, &body), &small());
    assert!(why.contains("over the limit"), "{why}");

    // A decompression bomb: a few KB of gzip that unpack to 64 MiB (a record passed by is read
    // all the same), and a stream that is no WARC at all.
    let bomb = record(
        "WARC-Type: metadata\r\nWARC-Date: 2025-12-01T10:00:00Z\r\n",
        &vec![b'a'; 64 << 20],
    );
    assert!(bomb.len() < 1 << 20);
    let why = refusal(&bomb, &small());
    assert!(why.contains("more than 4 MiB once unpacked"), "{why}");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![b'a'; 64 << 20]).unwrap();
    let why = refusal(&gz.finish().unwrap(), &small());
    assert!(
        why.contains("record 1: a line of its head is too long"),
        "{why}"
    );

    // Truncated gzip: the record is cut in the middle.
    let whole = record(RESPONSE_HEADERS, http);
    let why = refusal(&whole[..whole.len() - 9], &small());
    assert!(
        why.contains("truncated") || why.contains("damaged"),
        "{why}"
    );

    // Control characters and bytes that are not UTF-8 in headers.
    let why = refusal(
        &record(
            &RESPONSE_HEADERS.replace("http://a.example/", "http://a.example/\u{1b}[2J"),
            http,
        ),
        &small(),
    );
    assert!(why.contains("control character"), "{why}");
    let mut raw = b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:1>\r\nWARC-Date: 2025-12-01T10:00:00Z\r\nContent-Type: application/http\r\nWARC-Target-URI: http://a.example/\xff\r\n".to_vec();
    raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", http.len()).as_bytes());
    raw.extend_from_slice(http);
    raw.extend_from_slice(b"\r\n\r\n");
    assert!(refusal(&raw, &small()).contains("not UTF-8"));
    let why = refusal(
        &record(RESPONSE_HEADERS, b"HTTP/1.1 200 OK\r\nX-A: a\x07b\r\n\r\nx"),
        &small(),
    );
    assert!(
        why.contains("malformed") || why.contains("control"),
        "{why}"
    );

    // Targets that are not web pages are no answer to a page (passed by, as `dns:` records of
    // crawlers are); records without a date, garbage are refused.
    let other = read_from(
        &record(
            &RESPONSE_HEADERS.replace("http://a.example/", "file:///etc/passwd"),
            http,
        )[..],
        "other",
        &small(),
    )
    .unwrap();
    assert!(other.exchanges.is_empty());
    let why = refusal(
        &record(
            &RESPONSE_HEADERS.replace("http://a.example/", "http://"),
            http,
        ),
        &small(),
    );
    assert!(why.contains("not a URL"), "{why}");
    let why = refusal(
        &record(
            &RESPONSE_HEADERS.replace("WARC-Date: 2025-12-01T10:00:00Z\r\n", ""),
            http,
        ),
        &small(),
    );
    assert!(why.contains("no WARC-Date"), "{why}");
    assert!(refusal(b"not a warc at all\r\n\r\n", &small()).contains("record 1"));
    assert!(refusal(b"", &small()).contains("no WARC record"));
}

#[test]
fn responses_of_other_tools_pair_with_their_requests() {
    // warcio's order: the request first, no WARC-Concurrent-To; and a revisit, which is skipped.
    let request = b"GET /a HTTP/1.1\r\nHost: a.example\r\n\r\n";
    let mut file = record(
        "WARC-Type: request\r\nWARC-Record-ID: <urn:uuid:0>\r\nWARC-Date: 2025-12-01T10:00:00Z\r\nContent-Type: application/http; msgtype=request\r\nWARC-Target-URI: <http://a.example/a>\r\n",
        request,
    );
    file.extend(record(
        &RESPONSE_HEADERS.replace("http://a.example/", "http://a.example/a"),
        b"HTTP/1.1 200 OK\r\n\r\nbody",
    ));
    file.extend(record(
        "WARC-Type: revisit\r\nWARC-Record-ID: <urn:uuid:2>\r\nWARC-Date: 2025-12-01T10:00:00Z\r\nWARC-Target-URI: http://a.example/a\r\n",
        b"",
    ));
    let archive = read_from(&file[..], "tool", &small()).unwrap();
    assert_eq!(archive.exchanges.len(), 1);
    assert_eq!(archive.exchanges[0].request.url, "http://a.example/a");
    assert_eq!(archive.exchanges[0].response.body, b"body");
}

#[test]
fn a_path_to_something_else_than_a_file_is_refused() {
    let dir = temp("kinds");
    let why = read(&dir, &small()).unwrap_err().to_string();
    assert!(why.contains("not a regular file"), "{why}");
    std::os::unix::fs::symlink("/etc/hostname", dir.join("link.warc.gz")).unwrap();
    let why = read(&dir.join("link.warc.gz"), &small())
        .unwrap_err()
        .to_string();
    assert!(why.contains("cannot open"), "{why}");
    std::fs::remove_dir_all(&dir).unwrap();
}
