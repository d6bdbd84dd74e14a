//! Hostile archives and names (docs/archives.md, docs/security.md): each refused or contained with
//! a clear error, nothing read outside the archive folder, the server up after every one of them.

use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use browserenv::{BrowserAction, Client};
use browserenv_archive::{ArchiveInfo, ArchiveWriter, Exchange, Request, Response};
use browserenv_server::archive::ArchiveConfig;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_settings, Harness};
use serde_json::{json, Map, Value};

fn kwargs(start_url: &str, archive: Value) -> Map<String, Value> {
    let mut kwargs = Map::new();
    kwargs.insert("start_url".into(), json!(start_url));
    kwargs.insert("archive".into(), archive);
    kwargs
}

fn exchange(url: &str, status: u16, headers: &[(&str, &str)], body: &str) -> Exchange {
    Exchange {
        request: Request {
            method: "GET".into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        },
        response: Response {
            status,
            reason: String::new(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: body.as_bytes().to_vec(),
            body_left_out: false,
        },
        date: SystemTime::now(),
    }
}

fn write(path: &Path, exchanges: &[Exchange]) {
    let mut writer = ArchiveWriter::create(path, &ArchiveInfo::default()).unwrap();
    for exchange in exchanges {
        writer.append(exchange).unwrap();
    }
    writer.finish().unwrap();
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// A WACZ holding a good WARC and `name` with `bytes` (deflated).
fn wacz(path: &Path, name: &str, bytes: &[u8]) {
    use zip::write::SimpleFileOptions;
    let http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hi</p>";
    let warc = gzip(&record("http://crafted.test/", http, http.len()));
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("archive/data.warc.gz", stored).unwrap();
    zip.write_all(&warc).unwrap();
    let deflated = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(bytes.len() as u64 >= u64::from(u32::MAX));
    zip.start_file(name, deflated).unwrap();
    zip.write_all(bytes).unwrap();
    zip.finish().unwrap();
}

/// A WARC response record for `url` around `http`, claiming `length` bytes.
fn record(url: &str, http: &[u8], length: usize) -> Vec<u8> {
    let mut raw = format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:1>\r\n\
         WARC-Date: 2025-12-01T10:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n\
         WARC-Target-URI: {url}\r\nContent-Length: {length}\r\n\r\n"
    )
    .into_bytes();
    raw.extend_from_slice(http);
    raw.extend_from_slice(b"\r\n\r\n");
    raw
}

async fn error_of(client: &mut Client, kwargs: Map<String, Value>) -> String {
    client
        .reset_with(kwargs)
        .await
        .expect_err("refused")
        .to_string()
}

/// The page's text as the text layer reads it.
async fn page_text(harness: &Harness) -> String {
    let base = harness.server.base_url();
    let sessions: Vec<Value> = reqwest::get(format!("{base}/sessions"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = sessions[0]["id"].as_str().unwrap();
    let layer: Value = reqwest::get(format!("{base}/sessions/{id}/text"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    layer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["text"].as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[tokio::test]
async fn hostile_archives_and_names_are_refused_or_contained_and_the_server_stays_up() {
    let base = std::env::temp_dir().join(format!(
        "browserenv-hostile-archives-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&base);
    let dir = base.join("archives");
    std::fs::create_dir_all(&dir).unwrap();
    // Outside the folder: a real archive a name must not reach.
    write(
        &base.join("outside.warc.gz"),
        &[exchange("http://a.test/", 200, &[], "outside")],
    );
    std::os::unix::fs::symlink(base.join("outside.warc.gz"), dir.join("link.warc.gz")).unwrap();
    let page = "<p id=cookies>waiting</p><script>setTimeout(() => \
                { document.getElementById('cookies').textContent = 'cookies: ' + document.cookie; }, 300);</script>";
    write(
        &dir.join("good.warc.gz"),
        &[exchange(
            "http://good.test/",
            200,
            &[("Content-Type", "text/html")],
            "<h1>Good page</h1>",
        )],
    );
    // Cookies: its own, one for another site, one from a tracker's picture (the tracker's own).
    write(
        &dir.join("cookies.warc.gz"),
        &[
            exchange(
                "http://site-a.test/",
                200,
                &[
                    ("Content-Type", "text/html"),
                    ("Set-Cookie", "own=1; Path=/"),
                    ("Set-Cookie", "evil=1; Domain=bank.test; Path=/"),
                ],
                &format!("{page}<img src='http://tracker.test/p.svg'>"),
            ),
            exchange(
                "http://tracker.test/p.svg",
                200,
                &[
                    ("Content-Type", "image/svg+xml"),
                    ("Set-Cookie", "track=1; Path=/"),
                ],
                "<svg xmlns='http://www.w3.org/2000/svg'/>",
            ),
            exchange(
                "http://bank.test/",
                200,
                &[("Content-Type", "text/html")],
                page,
            ),
        ],
    );
    write(
        &dir.join("loop.warc.gz"),
        &[
            exchange("http://loop.test/a", 302, &[("Location", "/b")], ""),
            exchange("http://loop.test/b", 302, &[("Location", "/a")], ""),
        ],
    );
    let http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hi</p>";
    let whole = gzip(&record("http://crafted.test/", http, http.len()));
    std::fs::write(dir.join("truncated.warc.gz"), &whole[..whole.len() - 10]).unwrap();
    std::fs::write(
        dir.join("control.warc.gz"),
        gzip(&record("http://crafted.test/\u{1b}[2J", http, http.len())),
    )
    .unwrap();
    std::fs::write(
        dir.join("claims-gigabytes.warc.gz"),
        gzip(&record("http://crafted.test/", http, 5_000_000_000)),
    )
    .unwrap();
    let mut big = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    big.resize(20 << 20, b'x');
    std::fs::write(
        dir.join("big-body.warc.gz"),
        gzip(&record("http://crafted.test/", &big, big.len())),
    )
    .unwrap();
    // A record passed by (metadata) is unpacked all the same: counted against the budget.
    let mut bomb = format!(
        "WARC/1.1\r\nWARC-Type: metadata\r\nWARC-Date: 2025-12-01T10:00:00Z\r\nContent-Length: {}\r\n\r\n",
        300u64 << 20
    )
    .into_bytes();
    bomb.resize(bomb.len() + (300 << 20), 0);
    std::fs::write(dir.join("bomb.warc.gz"), gzip(&bomb)).unwrap();
    // A chunk whose size is near u64::MAX: once an overflow that panicked the reading.
    let chunks = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                   2\r\nab\r\nfffffffffffffffe\r\nxyz\r\n0\r\n\r\n";
    std::fs::write(
        dir.join("chunk-overflow.warc.gz"),
        gzip(&record("http://crafted.test/", chunks, chunks.len())),
    )
    .unwrap();

    // A Content-Length near u64::MAX (once a panic inside the warc crate), a gzip body cut
    // short, a chunk size that is negative (read as the body itself, as warcio does).
    let mut raw = format!(
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Date: 2025-12-01T10:00:00Z\r\n\
         Content-Type: application/http; msgtype=response\r\nWARC-Target-URI: http://crafted.test/\r\n\
         Content-Length: {}\r\n\r\n",
        u64::MAX
    )
    .into_bytes();
    raw.extend_from_slice(http);
    std::fs::write(dir.join("length-max.warc.gz"), gzip(&raw)).unwrap();
    let mut cut = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n".to_vec();
    cut.extend_from_slice(&gzip(&[b'z'; 4096])[..20]);
    std::fs::write(
        dir.join("cut-gzip-body.warc.gz"),
        gzip(&record("http://crafted.test/", &cut, cut.len())),
    )
    .unwrap();
    let negative = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/html\r\n\r\n-5\r\nabcde\r\n0\r\n\r\n";
    std::fs::write(
        dir.join("negative-chunk.warc.gz"),
        gzip(&record("http://crafted.test/", negative, negative.len())),
    )
    .unwrap();
    // WACZ: an entry that climbs out of its folder; an index that unpacks to gigabytes.
    wacz(&dir.join("climbs.wacz"), "archive/../../evil.warc.gz", &[]);
    wacz(
        &dir.join("zip-bomb.wacz"),
        "indexes/index.cdxj",
        &vec![b'\n'; 300 << 20],
    );

    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        archive: ArchiveConfig {
            dir: Some(dir.clone()),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    // The server's own address, as a recorded redirect's target.
    let own = format!("http://127.0.0.1:{}/sessions", harness.server.addr.port());
    write(
        &dir.join("to-the-server.warc.gz"),
        &[exchange(
            "http://evil.test/",
            302,
            &[("Location", own.as_str())],
            "",
        )],
    );
    let mut client = harness.client().await;
    let good = || kwargs("http://good.test/", json!("good.warc.gz"));

    for (name, expected) in [
        (json!("../outside.warc.gz"), "no `..`"),
        (json!("/etc/hostname.warc.gz"), "no leading `/`"),
        (json!("sub/../../outside.warc.gz"), "no `..`"),
        (json!("link.warc.gz"), "leads outside"),
        (json!("missing.warc.gz"), "no archive"),
        (json!("notes.txt"), "ends in .warc.gz"),
        (json!(42), "must be a string"),
        (json!("truncated.warc.gz"), "truncated"),
        (json!("control.warc.gz"), "control character"),
        (json!("claims-gigabytes.warc.gz"), "over the limit"),
        (json!("length-max.warc.gz"), "over the limit"),
        (json!("cut-gzip-body.warc.gz"), "cannot be decoded"),
        (json!("climbs.wacz"), "climbs out of its folder"),
        (
            json!("zip-bomb.wacz"),
            "its index indexes/index.cdxj: it has more than",
        ),
        (json!("big-body.warc.gz"), "over the limit"),
        (json!("bomb.warc.gz"), "once unpacked"),
        (
            json!("chunk-overflow.warc.gz"),
            "a chunked body is over the limit",
        ),
    ] {
        let why = error_of(&mut client, kwargs("http://crafted.test/", name.clone())).await;
        assert!(why.contains(expected), "{name}: {why}");
        // The archive as the client named it, never where the server keeps it.
        assert!(!why.contains(&*base.to_string_lossy()), "{name}: {why}");
        if let Some(asked) = name.as_str() {
            assert!(why.contains(asked), "{name}: {why}");
        }
        // Still serving, and the good archive still replays.
        let result = client.reset_with(good()).await.unwrap();
        assert_eq!(result.observation.metadata["title"], "", "{name}");
        assert_eq!(result.observation.error, "", "{name}");
    }

    // Read as warcio reads it: the chunked header over a body that is not chunked.
    let negative = client
        .reset_with(kwargs(
            "http://crafted.test/",
            json!("negative-chunk.warc.gz"),
        ))
        .await
        .unwrap();
    assert_eq!(negative.observation.error, "");

    // Cookies: the page's own only; the other site's never set; the tracker's its own.
    client
        .reset_with(kwargs("http://site-a.test/", json!("cookies.warc.gz")))
        .await
        .unwrap();
    client.step(BrowserAction::wait()).await.unwrap();
    client.step(BrowserAction::wait()).await.unwrap();
    let text = page_text(&harness).await;
    assert!(
        text.contains("cookies: own=1") && !text.contains("evil") && !text.contains("track"),
        "{text}"
    );
    client
        .reset_with(kwargs("http://bank.test/", json!("cookies.warc.gz")))
        .await
        .unwrap();
    client.step(BrowserAction::wait()).await.unwrap();
    client.step(BrowserAction::wait()).await.unwrap();
    let text = page_text(&harness).await;
    assert!(
        text.contains("cookies:") && !text.contains("evil"),
        "{text}"
    );

    // A redirect loop ends as the browser ends one; the server goes on.
    let looped = client
        .reset_with(kwargs("http://loop.test/a", json!("loop.warc.gz")))
        .await
        .unwrap();
    assert_eq!(
        looped.observation.error, "navigation_failed",
        "{:?}",
        looped.observation.metadata
    );
    // A recorded redirect to the server itself is not followed.
    let evil = client
        .reset_with(kwargs("http://evil.test/", json!("to-the-server.warc.gz")))
        .await
        .unwrap();
    assert_eq!(
        evil.observation.metadata["archive_misses"],
        json!(["http://evil.test/"])
    );
    assert!(
        !evil.observation.url.contains("/sessions"),
        "{}",
        evil.observation.url
    );
    let result = client.reset_with(good()).await.unwrap();
    assert_eq!(result.observation.error, "");

    // Without --archive-dir, a reset cannot name an archive at all.
    client.close().await.unwrap();
    harness.stop().await;
    let plain = Harness::start(test_settings()).await;
    let mut client = plain.client().await;
    let why = error_of(&mut client, good()).await;
    assert!(why.contains("--archive-dir"), "{why}");
    client.close().await.unwrap();
    plain.stop().await;
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_task_file_s_archives_stay_inside_its_folder() {
    let base = std::env::temp_dir().join(format!("browserenv-hostile-pack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let pack = base.join("pack");
    std::fs::create_dir_all(pack.join("archives")).unwrap();
    std::fs::write(base.join("secret.warc.gz"), b"x").unwrap();
    std::fs::write(pack.join("archives/ok.warc.gz"), b"x").unwrap();
    std::os::unix::fs::symlink(
        base.join("secret.warc.gz"),
        pack.join("archives/out.warc.gz"),
    )
    .unwrap();
    let task = |id: &str, archive: &str| {
        format!(
            r#"{{"id":"{id}","category":"information","instruction":"Read","start_url":"http://a.test/","check":{{"answer":{{"match":"exact","value":"x"}}}},"archive":"{archive}"}}"#
        )
    };
    let file = pack.join("tasks.jsonl");
    std::fs::write(
        &file,
        [
            task("ok", "archives/ok.warc.gz"),
            task("up", "../secret.warc.gz"),
            task("link", "archives/out.warc.gz"),
            task("abs", "/etc/passwd"),
        ]
        .join("\n"),
    )
    .unwrap();
    let why = browserenv_tui::offline::task_files::check(&file).unwrap_err();
    for (id, reason) in [
        ("up", "no `..`"),
        ("link", "leads outside"),
        ("abs", "ends in .warc.gz"),
    ] {
        assert!(
            why.lines()
                .any(|l| l.contains(&format!("task {id}:")) && l.contains(reason)),
            "{id}: {why}"
        );
    }
    assert!(!why.contains("task ok:"), "{why}");
    std::fs::remove_dir_all(&base).unwrap();
}
