//! The decoded-bytes budget (docs/archives.md, "Hostile archives"): a file of a few KiB whose
//! records' bodies are gzip-encoded inside them, each unpacking to just under the body limit,
//! once made the server hold 770 MB (each body decoded and kept on its own). It is refused,
//! naming the record past the budget, and the server's memory (this process: the server runs
//! in it) never rises more than 64 MiB above what it held idle.

use std::io::Write;

use browserenv_server::archive::ArchiveConfig;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_settings, Harness};
use serde_json::{json, Map};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// `records` responses, the file gzipped whole (one member: the repetition compresses away),
/// each body gzip-encoded and `body` bytes unpacked.
fn bomb(records: usize, body: usize) -> Vec<u8> {
    let encoded = gzip(&vec![0u8; body]);
    let mut http =
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Type: text/html\r\n\r\n".to_vec();
    http.extend_from_slice(&encoded);
    let mut file = Vec::new();
    for n in 0..records {
        let mut record = format!(
            "WARC/1.1\r\nWARC-Type: response\r\nWARC-Date: 2025-12-01T10:00:00Z\r\n\
             Content-Type: application/http; msgtype=response\r\n\
             WARC-Target-URI: http://bomb.test/{n}\r\nContent-Length: {}\r\n\r\n",
            http.len()
        )
        .into_bytes();
        record.extend_from_slice(&http);
        record.extend_from_slice(b"\r\n\r\n");
        file.extend(record);
    }
    gzip(&file)
}

/// A figure of this process's `/proc/self/status`, in bytes.
fn status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"));
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    kib << 10
}

#[tokio::test]
async fn a_few_kib_that_decode_to_gigabytes_are_refused_within_64_mib() {
    let dir = std::env::temp_dir().join(format!("browserenv-budget-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // 48 bodies of 16 MiB less a little (under the body limit each): 768 MiB decoded.
    let file = bomb(48, (16 << 20) - 4096);
    assert!(file.len() < 4 << 10, "{} bytes", file.len());
    std::fs::write(dir.join("bomb.warc.gz"), &file).unwrap();
    let good = bomb(1, 100);
    std::fs::write(dir.join("good.warc.gz"), &good).unwrap();
    let harness = Harness::start_with(ServerConfig {
        settings: test_settings(),
        archive: ArchiveConfig {
            dir: Some(dir.clone()),
            ..ArchiveConfig::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut client = harness.client().await;
    let reset = |archive: &str| {
        let mut kwargs = Map::new();
        kwargs.insert("start_url".into(), json!("http://bomb.test/0"));
        kwargs.insert("archive".into(), json!(archive));
        kwargs
    };
    // Idle: the server up, one replay done.
    client.reset_with(reset("good.warc.gz")).await.unwrap();
    let idle = status("VmRSS:");
    // The peak from here on.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let why = client
        .reset_with(reset("bomb.warc.gz"))
        .await
        .expect_err("refused")
        .to_string();
    let peak = status("VmHWM:");
    assert!(
        why.contains("the archive bomb.warc.gz is refused: record")
            && why.contains("once unpacked and decoded (BROWSER_ARCHIVE_EPISODE_MB)"),
        "{why}"
    );
    eprintln!(
        "a {}-byte archive refused: idle {} MiB, peak {} MiB ({why})",
        file.len(),
        idle >> 20,
        peak >> 20
    );
    assert!(
        peak < idle + (64 << 20),
        "the server's memory rose from {} to {} MiB",
        idle >> 20,
        peak >> 20
    );
    // The server goes on.
    let after = client.reset_with(reset("good.warc.gz")).await.unwrap();
    assert_eq!(after.observation.error, "");
    client.close().await.unwrap();
    harness.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
