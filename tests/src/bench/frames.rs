//! Where a scroll step's time goes (`BENCH_ONLY=frames`): the server's own phases (from
//! `metadata.timings_ms`; the rest of `total` is reading the page's facts) beside the client's
//! round trip, with no settle and with the default adaptive settle, for each way of taking the
//! screenshot.

use std::time::Duration;

use browserenv::{BrowserAction, ResetOptions};
use browserenv_server::chromium::{ChromiumConfig, Screenshots};
use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_chromium, Harness};

use crate::common::{long_episodes, timed, Series};

/// The table of the phases.
pub async fn run(rounds: usize) -> anyhow::Result<()> {
    println!(
        "| scroll step | n | round trip | server total | action | settle | screenshot | PNG KiB |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let adaptive = EnvSettings::default().action_wait;
    for (label, wait, screenshots) in [
        (
            "BROWSER_ACTION_WAIT_SECONDS=0 (BROWSER_SCREENSHOTS=frame, default)",
            Duration::ZERO,
            Screenshots::Frame,
        ),
        (
            "BROWSER_ACTION_WAIT_SECONDS=0, BROWSER_SCREENSHOTS=redraw",
            Duration::ZERO,
            Screenshots::Redraw,
        ),
        ("adaptive settle (default)", adaptive, Screenshots::Frame),
        (
            "adaptive settle, BROWSER_SCREENSHOTS=redraw",
            adaptive,
            Screenshots::Redraw,
        ),
    ] {
        let settings = EnvSettings {
            action_wait: wait,
            ..long_episodes()
        };
        let chromium = ChromiumConfig {
            screenshots,
            ..test_chromium()
        };
        let config = ServerConfig {
            settings,
            ..ServerConfig::default()
        };
        let harness = Harness::start_with_browser(chromium, config).await;
        let mut client = harness.client().await;
        client
            .reset(ResetOptions::new(harness.page("long.html")))
            .await?;
        let mut round_trip = Series::new(label);
        let phases = ["total", "action", "settle", "screenshot"];
        let mut server: Vec<Series> = phases.iter().map(|phase| Series::new(phase)).collect();
        let mut bytes = Vec::new();
        for i in 0..rounds {
            let dy = if i % 2 == 0 { 600 } else { -600 };
            let result = timed(&mut round_trip, client.step(BrowserAction::scroll(dy))).await?;
            let timings = &result.observation.metadata["timings_ms"];
            for (series, phase) in server.iter_mut().zip(phases) {
                series
                    .millis
                    .push(timings[phase].as_f64().unwrap_or(f64::NAN));
            }
            bytes.push(result.observation.screenshot.len() * 3 / 4);
        }
        bytes.sort_unstable();
        let medians: Vec<String> = server
            .iter()
            .map(|series| format!("{:.0}", series.percentile(50.0)))
            .collect();
        println!(
            "| {label} | {} | {:.0} (p95 {:.0}) | {} | {} KiB |",
            rounds,
            round_trip.percentile(50.0),
            round_trip.percentile(95.0),
            medians.join(" | "),
            bytes[bytes.len() / 2] / 1024
        );
        client.close().await?;
        harness.stop().await;
    }
    Ok(())
}
