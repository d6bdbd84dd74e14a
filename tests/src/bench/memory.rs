//! Chromium's memory by sessions: the PSS of every Chromium process of the server with 1, 4 and
//! 8 sessions on a page each, for each isolation mode, as the server runs by default (warm spare
//! and spare contexts on) and with both off.

use std::time::Duration;

use browserenv_server::chromium::{Isolation, DEFAULT_EPISODES_PER_BROWSER};
use browserenv_tests::test_settings;

use crate::common::{chromium_pss_kib, open_sessions, server_with};
use crate::sessions_chart::MemoryFigure;

/// The memory table; its figures for the chart.
pub async fn run() -> anyhow::Result<Vec<MemoryFigure>> {
    println!("| isolation | sessions | Chromium PSS MiB | MiB per additional session |");
    println!("|---|---|---|---|");
    let mut figures = Vec::new();
    for (name, isolation, spares) in [
        ("process", Isolation::Process, true),
        ("process, BROWSER_NO_WARM_SPARE", Isolation::Process, false),
        ("context", Isolation::Context, true),
        ("context, BROWSER_NO_WARM_SPARE", Isolation::Context, false),
    ] {
        let harness = server_with(
            isolation,
            DEFAULT_EPISODES_PER_BROWSER,
            spares,
            test_settings(),
        )
        .await;
        let mut clients = Vec::new();
        let mut first = None;
        for target in [1usize, 4, 8] {
            open_sessions(&harness, &mut clients, target).await?;
            // Spares finish opening, pages finish painting.
            tokio::time::sleep(Duration::from_secs(3)).await;
            let mib = chromium_pss_kib() as f64 / 1024.0;
            let base = *first.get_or_insert(mib);
            let per = if target > 1 {
                format!("{:.0}", (mib - base) / (target - 1) as f64)
            } else {
                String::new()
            };
            println!("| {name} | {target} | {mib:.0} | {per} |");
            figures.push(MemoryFigure {
                mode: name,
                sessions: target,
                mib,
            });
        }
        for client in clients {
            client.close().await?;
        }
        harness.stop().await;
    }
    Ok(figures)
}
