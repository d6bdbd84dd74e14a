//! Resets (`BENCH_ONLY=reset`): a new Chromium per episode with and without its spare, resets
//! back to back in each way of isolating episodes, and where a back-to-back reset's time goes on
//! the server.

use browserenv::ResetOptions;
use browserenv_server::chromium::{Isolation, DEFAULT_EPISODES_PER_BROWSER};
use browserenv_tests::test_settings;

use std::time::Duration;

use browserenv::BrowserAction;
use browserenv_server::settings::EnvSettings;

use crate::common::{resets, server_with, timed, Series, SPARE_PAUSE};
use crate::cpu::CpuReading;
use crate::floor::floors;
use crate::regressions::{cell, record, Better};
use crate::sessions_chart::ResetFigure;

/// A new Chromium per episode, as before contexts: cold (every reset launches), and with the
/// spare given time to launch between resets. Rows of a table already begun.
pub async fn new_chromium_per_episode(rounds: usize) -> anyhow::Result<()> {
    let floors = floors(rounds).await?;
    for warm_spare in [false, true] {
        let harness = server_with(Isolation::Process, 1, warm_spare, test_settings()).await;
        let mut client = harness.client().await;
        let (name, pause) = if warm_spare {
            (
                "reset, new Chromium per episode, spare ready (1.5 s between resets)",
                Some(SPARE_PAUSE),
            )
        } else {
            (
                "reset, new Chromium per episode, no spare (launch + load + PNG)",
                None,
            )
        };
        let floor = if warm_spare {
            floors.reset_ready
        } else {
            floors.cold_reset
        };
        println!(
            "{}",
            resets(&mut client, &harness, rounds, pause, false, name)
                .await?
                .with_floor(floor)
                .row()
        );
        client.close().await?;
        harness.stop().await;
    }
    Ok(())
}

/// What `back_to_back` measured: the rows of `print_phases`, and each mode's times for the chart.
pub struct BackToBack {
    pub phase_rows: Vec<String>,
    pub figures: Vec<ResetFigure>,
}

/// Resets one right after the other, as an agent that trains runs its episodes: with a new
/// Chromium per episode (the spare is used up by the first), with a context per episode on the
/// session's Chromium, and with sessions sharing one Chromium. Rows of a table already begun.
pub async fn back_to_back(rounds: usize) -> anyhow::Result<BackToBack> {
    let floors = floors(rounds).await?;
    // The row's name, the chart's, the server's isolation and episodes per browser, and whether
    // the next episode's page is loaded ahead (`BROWSER_NO_PREPARED_RESETS` off).
    let modes = [
        (
            "reset back to back, new context per episode, no spare context (BROWSER_NO_WARM_SPARE)",
            "new context, no spare context",
            Isolation::Process,
            DEFAULT_EPISODES_PER_BROWSER,
            true,
        ),
        (
            "reset back to back, new Chromium per episode (BROWSER_EPISODES_PER_BROWSER=1)",
            "new Chromium per episode",
            Isolation::Process,
            1,
            true,
        ),
        (
            "reset back to back, new context per episode (BROWSER_ISOLATION=process, default)",
            "new context (process, default)",
            Isolation::Process,
            DEFAULT_EPISODES_PER_BROWSER,
            true,
        ),
        (
            "reset back to back, new context per episode, no page prepared (BROWSER_NO_PREPARED_RESETS)",
            "new context, no page prepared",
            Isolation::Process,
            DEFAULT_EPISODES_PER_BROWSER,
            false,
        ),
        (
            "reset back to back, shared Chromium (BROWSER_ISOLATION=context)",
            "shared Chromium (context)",
            Isolation::Context,
            DEFAULT_EPISODES_PER_BROWSER,
            true,
        ),
    ];
    let mut measured = BackToBack {
        phase_rows: Vec::new(),
        figures: Vec::new(),
    };
    for (name, short, isolation, episodes, prepared) in modes {
        let settings = EnvSettings {
            prepared_resets: prepared,
            ..test_settings()
        };
        let harness = server_with(
            isolation,
            episodes,
            !name.contains("no spare context"),
            settings,
        )
        .await;
        let mut client = harness.client().await;
        // The session's first reset (its browser's launch, or the shared one's) is not timed.
        client
            .reset(ResetOptions::new(harness.page("long.html")))
            .await?;
        tokio::time::sleep(SPARE_PAUSE).await;
        let spare = !name.contains("no spare context");
        let floor = match (episodes, spare) {
            (1, _) => floors.cold_reset,
            (_, false) => floors.reset_new_context,
            (_, true) => floors.reset_ready,
        };
        let mut series = Series::new(name).with_floor(floor);
        let mut phases: Vec<serde_json::Value> = Vec::new();
        let count = rounds.clamp(10, 30);
        let cpu_before = CpuReading::now();
        for _ in 0..count {
            let result = timed(
                &mut series,
                client.reset(ResetOptions::new(harness.page("long.html"))),
            )
            .await?;
            phases.push(result.observation.metadata["timings_ms"].clone());
        }
        // The last disposal's work, done off the reset's clock, is the last reset's.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let cpu = cpu_before
            .spent_since()
            .map_or(f64::NAN, |spent| spent.total() / count as f64);
        println!("{}", series.row());
        measured.figures.push(ResetFigure {
            mode: short,
            median: series.percentile(50.0),
            p95: series.percentile(95.0),
        });
        if episodes > 1 {
            let name = format!("{name}, after a step and a pause");
            let series = resets(
                &mut client,
                &harness,
                rounds,
                Some(SPARE_PAUSE),
                true,
                &name,
            )
            .await?
            .with_floor(floor);
            println!("{}", series.row());
        }
        let median = |phase: &str| {
            let mut series = Series::new(phase);
            series.millis = phases
                .iter()
                .filter_map(|timings| timings[phase].as_f64())
                .collect();
            series.percentile(50.0)
        };
        let mut phases: Vec<f64> = ["browser", "action", "settle", "screenshot", "total"]
            .into_iter()
            .map(|phase| {
                let value = median(phase);
                record(&format!("{name}: {phase}"), value, "ms", Better::Lower);
                value
            })
            .collect();
        record(
            &format!("{name}: Chromium CPU ms per reset"),
            cpu,
            "ms",
            Better::Lower,
        );
        phases.push(cpu);
        measured.phase_rows.push(format!(
            "| {name} | {} |",
            phases
                .iter()
                .map(|v| cell(*v, 0))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        client.close().await?;
        harness.stop().await;
    }
    measured.phase_rows.push(format!(
        "| raw CDP (the floor): a context and tab, `Page.navigate` to the load event, a screencast's first frame | {} | {} | - | {} | {} | {} |",
        cell(floors.context, 0),
        cell(floors.load, 0),
        cell(floors.screenshot, 0),
        cell(floors.reset_new_context, 0),
        cell(floors.reset_cpu, 0),
    ));
    Ok(measured)
}

/// Where a back-to-back reset's time goes on the server: `browser` is taking the episode's
/// context (or launching its browser), `action` the navigation to the start page and its load;
/// the rest of `total` is reading the page's facts.
pub fn print_phases(rows: &[String]) {
    println!();
    println!("| reset back to back, server phases (median ms) | context or browser | load | settle | screenshot | server total | Chromium CPU ms per reset |");
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}

/// Episodes as a trainer runs them on one task (MiniWoB's are 3 to 10 steps): a reset to the same
/// page after three steps, the next episode's page loaded ahead while they ran. Rows of a table
/// already begun; the note of how many of the resets took a prepared page, for after the table.
pub async fn after_short_episodes(rounds: usize) -> anyhow::Result<String> {
    let floors = floors(rounds).await?;
    let mut note = String::new();
    for (name, prepared) in [
        (
            "reset after an episode of 3 steps, same start (default: its page prepared)",
            true,
        ),
        (
            "reset after an episode of 3 steps, same start, no page prepared (BROWSER_NO_PREPARED_RESETS)",
            false,
        ),
    ] {
        let settings = EnvSettings {
            prepared_resets: prepared,
            max_steps: 200,
            ..test_settings()
        };
        let harness = server_with(Isolation::Process, DEFAULT_EPISODES_PER_BROWSER, true, settings).await;
        let mut client = harness.client().await;
        let page = harness.page("long.html");
        client.reset(ResetOptions::new(&page)).await?;
        tokio::time::sleep(SPARE_PAUSE).await;
        let mut series = Series::new(name).with_floor(floors.reset_ready);
        let mut taken = 0;
        let count = rounds.clamp(10, 30);
        for _ in 0..count {
            for dy in [300, 300, -600] {
                client.step(BrowserAction::scroll(dy)).await?;
            }
            let result = timed(&mut series, client.reset(ResetOptions::new(&page))).await?;
            taken += usize::from(result.observation.metadata.get("prepared").is_some());
        }
        println!("{}", series.row());
        if prepared {
            record(
                &format!("{name}: resets that took a prepared page"),
                taken as f64,
                "resets",
                Better::Higher,
            );
            note = format!(
                "After an episode of 3 steps, {taken} of {count} resets took the page prepared."
            );
        }
        client.close().await?;
        harness.stop().await;
    }
    Ok(note)
}
