//! Sessions stepping at once: the scroll step with 8 sessions stepping together against one
//! session alone (the other 7 open), per isolation mode. Then the CPU time Chromium spent per
//! step, alone and together: 8 steps at once on this machine's cores cannot take less than 8
//! times that, divided by the cores.

use std::time::Duration;

use browserenv_server::chromium::{Isolation, DEFAULT_EPISODES_PER_BROWSER};

use crate::common::{long_episodes, open_sessions, scrolls, server_with, Series};
use crate::cpu::CpuReading;
use crate::regressions::{cell, record, Better};
use crate::sessions_chart::StepFigure;

/// Sessions open, and stepping at once in the together series.
const SESSIONS: usize = 8;

/// The step rows (of a table already begun), then the CPU table; the steps' times for the chart.
pub async fn run(rounds: usize) -> anyhow::Result<Vec<StepFigure>> {
    let mut cpu_rows = Vec::new();
    let mut figures = Vec::new();
    for (name, short, isolation) in [
        ("BROWSER_ISOLATION=process", "process", Isolation::Process),
        ("BROWSER_ISOLATION=context", "context", Isolation::Context),
    ] {
        let harness = server_with(
            isolation,
            DEFAULT_EPISODES_PER_BROWSER,
            true,
            long_episodes(),
        )
        .await;
        let mut clients = Vec::new();
        open_sessions(&harness, &mut clients, SESSIONS).await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let alone_name = format!("step scroll, 1 session alone ({name})");
        let cpu_before = CpuReading::now();
        let (alone, _) = scrolls(&mut clients[0], rounds, &alone_name).await?;
        let alone_cpu = cpu_before
            .cpu_ms_since()
            .map_or(f64::NAN, |ms| ms / rounds as f64);
        println!("{}", alone.row());
        let cpu_before = CpuReading::now();
        let mut tasks = Vec::new();
        for mut client in clients {
            tasks.push(tokio::spawn(async move {
                let series = scrolls(&mut client, rounds, "").await.map(|(s, _)| s);
                (client, series)
            }));
        }
        let mut together = Series::new(&format!(
            "step scroll, {SESSIONS} sessions at once ({name})"
        ));
        let mut clients = Vec::new();
        for task in tasks {
            let (client, series) = task.await?;
            together.millis.extend(series?.millis);
            clients.push(client);
        }
        // Before the sessions close: a closed context's renderer takes its CPU time with it.
        let together_cpu = cpu_before
            .cpu_ms_since()
            .map_or(f64::NAN, |ms| ms / together.millis.len() as f64);
        println!("{}", together.row());
        for (count, cpu) in [(1, alone_cpu), (SESSIONS, together_cpu)] {
            record(
                &format!("Chromium CPU ms per scroll step, {count} session(s), {name}"),
                cpu,
                "ms",
                Better::Lower,
            );
        }
        cpu_rows.push(format!(
            "| {name} | {} | {} |",
            cell(alone_cpu, 1),
            cell(together_cpu, 1)
        ));
        for (stepping, series) in [(1, &alone), (SESSIONS, &together)] {
            figures.push(StepFigure {
                isolation: short,
                sessions: stepping,
                median: series.percentile(50.0),
                p95: series.percentile(95.0),
            });
        }
        for client in clients {
            client.close().await?;
        }
        harness.stop().await;
    }
    println!();
    println!("| Chromium CPU ms per scroll step | 1 session alone | {SESSIONS} sessions at once |");
    println!("|---|---|---|");
    for row in cpu_rows {
        println!("{row}");
    }
    Ok(figures)
}
