//! Large archives open fast (docs/archives.md, "Large archives"): a reset from the demo site's
//! recorded home page, and from a 1 GB archive holding it among a thousand 1 MiB responses
//! (generated here, never kept), first (a fresh server: the archive opened) and later (opened
//! already). With its index beside it, the 1 GB archive's reset reads the index and the few
//! records the page asks for; without one, the first reset reads the whole file once.

use std::path::Path;
use std::time::{Duration, SystemTime};

use browserenv_archive::{ArchiveWriter, Exchange, Request, Response};
use browserenv_server::archive::{ArchiveConfig, ArchiveLimits};
use browserenv_server::ServerConfig;
use browserenv_tests::Harness;
use serde_json::{json, Map};

use crate::common::{long_episodes, timed, Series};

/// The large archive's size, and the body of each filler response.
const LARGE_BYTES: u64 = 1 << 30;
const FILLER_BYTES: usize = 1 << 20;

/// Reset rows for the archive `name` in `dir` (the small one recorded by `archive.rs`) and a
/// 1 GB one made from it.
pub async fn run(dir: &Path, name: &str, start: &str, rounds: usize) -> anyhow::Result<()> {
    let small = dir.join(name);
    let large_name = "large.warc.gz";
    let large = dir.join(large_name);
    let made = std::time::Instant::now();
    make_large(&small, &large)?;
    let size = std::fs::metadata(&large)?.len();
    eprintln!(
        "archive: made a {} MiB archive in {:.1} s",
        size >> 20,
        made.elapsed().as_secs_f64()
    );
    let default_limits = ArchiveLimits::default();
    for (label, archive, limits) in [
        ("small (demo site home page)", name, default_limits),
        ("1 GB, with its index", large_name, default_limits),
    ] {
        reset_rows(dir, label, archive, start, limits, rounds).await?;
    }
    // Without its index, the first reset reads the whole file (within a budget raised to hold it).
    std::fs::remove_file(browserenv_archive::index_path(&large))?;
    let whole = ArchiveLimits {
        episode_bytes: 2 << 30,
        ..default_limits
    };
    reset_rows(dir, "1 GB, no index", large_name, start, whole, 1).await?;
    std::fs::remove_file(&large)?;
    Ok(())
}

async fn reset_rows(
    dir: &Path,
    label: &str,
    archive: &str,
    start: &str,
    limits: ArchiveLimits,
    rounds: usize,
) -> anyhow::Result<()> {
    let kwargs = || {
        let mut kwargs = Map::new();
        kwargs.insert("start_url".into(), json!(start));
        kwargs.insert("archive".into(), json!(archive));
        kwargs
    };
    let mut first = Series::new(&format!("archive: first reset, {label}"));
    let mut later = Series::new(&format!("archive: later reset, {label}"));
    for round in 0..rounds.clamp(1, 5) {
        let harness = Harness::start_with(ServerConfig {
            settings: long_episodes(),
            archive: ArchiveConfig {
                dir: Some(dir.to_path_buf()),
                limits,
                ..ArchiveConfig::default()
            },
            ..ServerConfig::default()
        })
        .await;
        let mut client = harness.client().await;
        // A warm browser first, so the first reset from the archive pays for the archive only.
        let mut live = Map::new();
        live.insert("start_url".into(), json!(start));
        client.reset_with(live).await?;
        let result = timed(&mut first, client.reset_with(kwargs())).await?;
        anyhow::ensure!(
            result.observation.error.is_empty(),
            "{label}: {:?}",
            result.observation.metadata
        );
        if round == 0 {
            for _ in 0..rounds.min(10) {
                timed(&mut later, client.reset_with(kwargs())).await?;
            }
        }
        client.close().await?;
        harness.stop().await;
    }
    println!("{}", first.row());
    if !later.millis.is_empty() {
        println!("{}", later.row());
    }
    Ok(())
}

/// The small archive's exchanges, then 1 MiB responses that do not compress until the file
/// holds `LARGE_BYTES`; its index written beside it.
fn make_large(small: &Path, large: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(large);
    let _ = std::fs::remove_file(browserenv_archive::index_path(large));
    let held = browserenv_archive::read(small, &Default::default())?;
    let mut writer = ArchiveWriter::create(large, &held.info)?;
    for exchange in &held.exchanges {
        writer.append(exchange)?;
    }
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut body = vec![0u8; FILLER_BYTES];
    let mut number = 0;
    while writer.bytes() < LARGE_BYTES {
        for chunk in body.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
        }
        number += 1;
        writer.append(&Exchange {
            request: Request {
                method: "GET".into(),
                url: format!("http://filler.test/{number}.bin"),
                headers: Vec::new(),
                body: Vec::new(),
            },
            response: Response {
                status: 200,
                reason: String::new(),
                headers: vec![("Content-Type".into(), "application/octet-stream".into())],
                body: body.clone(),
                body_left_out: false,
            },
            date: SystemTime::now() + Duration::from_millis(number),
        })?;
    }
    writer.finish()?;
    Ok(())
}
