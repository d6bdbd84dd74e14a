//! Resets (`BENCH_ONLY=reset`): a new Chromium per episode with and without its spare, resets
//! back to back in each way of isolating episodes, and where a back-to-back reset's time goes on
//! the server.

use browserenv::ResetOptions;
use browserenv_server::chromium::{Isolation, DEFAULT_EPISODES_PER_BROWSER};
use browserenv_tests::test_settings;

use crate::common::{resets, server_with, timed, Series, SPARE_PAUSE};
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
    // The row's name, the chart's, and the server's isolation and episodes per browser.
    let modes = [
        (
            "reset back to back, new context per episode, no spare context (BROWSER_NO_WARM_SPARE)",
            "new context, no spare context",
            Isolation::Process,
            DEFAULT_EPISODES_PER_BROWSER,
        ),
        (
            "reset back to back, new Chromium per episode (BROWSER_EPISODES_PER_BROWSER=1)",
            "new Chromium per episode",
            Isolation::Process,
            1,
        ),
        (
            "reset back to back, new context per episode (BROWSER_ISOLATION=process, default)",
            "new context (process, default)",
            Isolation::Process,
            DEFAULT_EPISODES_PER_BROWSER,
        ),
        (
            "reset back to back, shared Chromium (BROWSER_ISOLATION=context)",
            "shared Chromium (context)",
            Isolation::Context,
            DEFAULT_EPISODES_PER_BROWSER,
        ),
    ];
    let mut measured = BackToBack {
        phase_rows: Vec::new(),
        figures: Vec::new(),
    };
    for (name, short, isolation, episodes) in modes {
        let harness = server_with(
            isolation,
            episodes,
            !name.contains("no spare context"),
            test_settings(),
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
        for _ in 0..rounds.clamp(10, 30) {
            let result = timed(
                &mut series,
                client.reset(ResetOptions::new(harness.page("long.html"))),
            )
            .await?;
            phases.push(result.observation.metadata["timings_ms"].clone());
        }
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
        let phases: Vec<f64> = ["browser", "action", "settle", "screenshot", "total"]
            .into_iter()
            .map(|phase| {
                let value = median(phase);
                record(&format!("{name}: {phase}"), value, "ms", Better::Lower);
                value
            })
            .collect();
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
        "| raw CDP (the floor): a context and tab, `Page.navigate` to the load event, a screencast's first frame | {} | {} | - | {} | {} |",
        cell(floors.context, 0),
        cell(floors.load, 0),
        cell(floors.screenshot, 0),
        cell(floors.reset_new_context, 0)
    ));
    Ok(measured)
}

/// Where a back-to-back reset's time goes on the server: `browser` is taking the episode's
/// context (or launching its browser), `action` the navigation to the start page and its load;
/// the rest of `total` is reading the page's facts.
pub fn print_phases(rows: &[String]) {
    println!();
    println!("| reset back to back, server phases (median ms) | context or browser | load | settle | screenshot | server total |");
    println!("|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}
