//! Web archives (docs/archives.md) on the demo site: a reset and a scroll step live, recording
//! (`--archive`: every response paused for its body) and replaying (every request answered from
//! the archive), and the size of one episode's archive. On loopback the site answers in well
//! under a millisecond, so replaying is measured against the fastest live site there is.

use std::path::Path;

use browserenv_server::archive::ArchiveConfig;
use browserenv_server::site::serve_dir;
use browserenv_server::ServerConfig;
use browserenv_tests::{assets_dir, Harness};
use serde_json::{json, Map};

use crate::common::{long_episodes, print_measure_header, scrolls, timed, Series};
use crate::regressions::{cell, Better};

/// How a server treats archives in each series.
#[derive(Clone, Copy)]
enum Mode {
    Live,
    Recording,
    Replaying,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Live => "live",
            Mode::Recording => "recording (--archive)",
            Mode::Replaying => "replaying (archive)",
        }
    }
}

pub async fn run(rounds: usize) -> anyhow::Result<()> {
    let site = serve_dir(assets_dir().join("site")).await?;
    let start = site.url("index.html");
    let dir = std::env::temp_dir().join(format!("browserenv-bench-archive-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    print_measure_header();
    let mut archive = None;
    for mode in [Mode::Live, Mode::Recording, Mode::Replaying] {
        let harness = server(mode, &dir).await;
        let mut client = harness.client().await;
        let kwargs = |archive: &Option<String>| {
            let mut kwargs = Map::new();
            kwargs.insert("start_url".into(), json!(start));
            if let (Mode::Replaying, Some(name)) = (mode, archive) {
                kwargs.insert("archive".into(), json!(name));
            }
            kwargs
        };
        let mut resets = Series::new(&format!(
            "archive: reset, demo site home page, {}",
            mode.name()
        ));
        for _ in 0..rounds.min(10) {
            let first = timed(&mut resets, client.reset_with(kwargs(&archive))).await?;
            if let (Mode::Recording, None) = (mode, &archive) {
                archive = first.observation.metadata["archive"]["file"]
                    .as_str()
                    .map(str::to_string);
            }
        }
        println!("{}", resets.row());
        client.reset_with(kwargs(&archive)).await?;
        let name = format!("archive: step scroll, demo site, {}", mode.name());
        let (scroll, _) = scrolls(&mut client, rounds, &name).await?;
        println!("{}", scroll.row());
        client.close().await?;
        harness.stop().await;
    }
    let name = archive
        .clone()
        .ok_or_else(|| anyhow::anyhow!("the recording named no archive"))?;
    crate::archive_large::run(&dir, &name, &start, rounds).await?;
    println!();
    print_size(&dir, archive.as_deref())?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

async fn server(mode: Mode, dir: &Path) -> Harness {
    let archive = match mode {
        Mode::Live => ArchiveConfig::default(),
        Mode::Recording => ArchiveConfig {
            record_into: Some(dir.to_path_buf()),
            ..ArchiveConfig::default()
        },
        Mode::Replaying => ArchiveConfig {
            dir: Some(dir.to_path_buf()),
            ..ArchiveConfig::default()
        },
    };
    Harness::start_with(ServerConfig {
        settings: long_episodes(),
        record_dir: matches!(mode, Mode::Recording).then(|| dir.to_path_buf()),
        archive,
        ..ServerConfig::default()
    })
    .await
}

/// The first recorded episode's archive: a reset to the home page.
fn print_size(dir: &Path, name: Option<&str>) -> anyhow::Result<()> {
    let name = name.ok_or_else(|| anyhow::anyhow!("the recording named no archive"))?;
    let path = dir.join(name);
    let bytes = std::fs::metadata(&path)?.len();
    let held = browserenv_archive::read(&path, &Default::default())?;
    let unpacked: usize = held
        .exchanges
        .iter()
        .map(|e| e.response.body.len() + e.request.body.len())
        .sum();
    let kib = bytes as f64 / 1024.0;
    crate::regressions::record(
        "archive: size of one episode (demo site home page)",
        kib,
        "KiB",
        Better::Lower,
    );
    println!("| archive of one episode | responses | bodies KiB | file KiB (gzip per record) |");
    println!("|---|---|---|---|");
    println!(
        "| demo site home page | {} | {} | {} |",
        held.exchanges.len(),
        cell(unpacked as f64 / 1024.0, 1),
        cell(kib, 1)
    );
    Ok(())
}
