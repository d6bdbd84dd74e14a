//! What trainers run (`BENCH_ONLY=throughput`): N sessions stepping as fast as they can, each
//! sending its next step the moment the last one is answered, for N = 1, 4, 8 and 12, with no
//! settle at all (`BROWSER_ACTION_WAIT_SECONDS=0`) and with the defaults (the adaptive settle).
//! Aggregate steps per second, per core, and the CPU time Chromium spent per step. The steps are
//! scrolls of the long test page; every session has a Chromium of its own (the default).

use std::time::{Duration, Instant};

use browserenv::BrowserAction;
use browserenv_server::chromium::{Isolation, DEFAULT_EPISODES_PER_BROWSER};
use browserenv_server::settings::EnvSettings;

use crate::common::{long_episodes, open_sessions, server_with};
use browserenv_server::site::serve_dir;
use browserenv_tests::assets_dir;

use crate::cpu::{own_cpu_ms, CpuReading};
use crate::regressions::{cell, record, Better};

/// Sessions stepping at once.
const SESSIONS: [usize; 4] = [1, 4, 8, 12];

/// How long each measurement steps for.
const WINDOW: Duration = Duration::from_secs(6);

pub async fn run(_rounds: usize) -> anyhow::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!(
        "| settle | sessions | steps | steps/s | steps/s per core | median step ms | Chromium CPU ms per step | by process | server and clients CPU ms per step |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (label, wait) in [
        ("none (BROWSER_ACTION_WAIT_SECONDS=0)", Some(Duration::ZERO)),
        ("adaptive (default)", None),
    ] {
        for sessions in SESSIONS {
            let settings = EnvSettings {
                action_wait: wait.unwrap_or(EnvSettings::default().action_wait),
                ..long_episodes()
            };
            let harness = server_with(
                Isolation::Process,
                DEFAULT_EPISODES_PER_BROWSER,
                true,
                EnvSettings {
                    max_steps: 100_000,
                    ..settings
                },
            )
            .await;
            let mut clients = Vec::new();
            open_sessions(&harness, &mut clients, sessions).await?;
            tokio::time::sleep(Duration::from_secs(2)).await;
            let cpu_before = CpuReading::now();
            let own_before = own_cpu_ms();
            let started = Instant::now();
            let mut tasks = Vec::new();
            for mut client in clients {
                tasks.push(tokio::spawn(async move {
                    let mut times = Vec::new();
                    let mut i = 0;
                    while started.elapsed() < WINDOW {
                        let dy = if i % 2 == 0 { 600 } else { -600 };
                        let step = Instant::now();
                        client.step(BrowserAction::scroll(dy)).await?;
                        times.push(step.elapsed().as_secs_f64() * 1000.0);
                        i += 1;
                    }
                    anyhow::Ok((client, times))
                }));
            }
            let mut times = Vec::new();
            let mut clients = Vec::new();
            for task in tasks {
                let (client, mut taken) = task.await??;
                times.append(&mut taken);
                clients.push(client);
            }
            let elapsed = started.elapsed().as_secs_f64();
            let spent = cpu_before.spent_since();
            let own_ms = own_cpu_ms() - own_before;
            let steps = times.len();
            times.sort_by(f64::total_cmp);
            let median = times.get(steps / 2).copied().unwrap_or(f64::NAN);
            let per_second = steps as f64 / elapsed;
            let per_step = spent.map(|spent| spent.per(steps));
            let cpu_per_step = per_step.as_ref().map_or(f64::NAN, |spent| spent.total());
            let by_process = per_step.map_or("unknown".into(), |spent| spent.breakdown());
            let own_per_step = own_ms / steps.max(1) as f64;
            let name = format!("throughput, settle {label}, {sessions} sessions");
            record(
                &format!("{name}: steps/s"),
                per_second,
                "steps/s",
                Better::Higher,
            );
            record(
                &format!("{name}: Chromium CPU ms per step"),
                cpu_per_step,
                "ms",
                Better::Lower,
            );
            record(
                &format!("{name}: server and clients CPU ms per step"),
                own_per_step,
                "ms",
                Better::Lower,
            );
            println!(
                "| {label} | {sessions} | {steps} | {} | {} | {} | {} | {by_process} | {} |",
                cell(per_second, 1),
                cell(per_second / cores, 1),
                cell(median, 0),
                cell(cpu_per_step, 1),
                cell(own_per_step, 1),
            );
            for client in clients {
                client.close().await?;
            }
            harness.stop().await;
        }
    }
    // The seed's reference, on the same page and cores.
    let pages = serve_dir(assets_dir().join("pages")).await?;
    crate::seed::reference(&pages.url("long.html")).await?;
    Ok(())
}
