//! `browserenv-bench`: latency, size and memory figures of the server on real Chromium, printed
//! as Markdown tables for docs/benchmark.md, and a chart of steps, resets and memory by sessions
//! (`docs/images/bench.svg`). Client-measured round trips over a real WebSocket on 127.0.0.1,
//! against the local test pages.
//!
//! `BENCH_ROUNDS=N` sets the sample size (30; 2 to 90). `BENCH_ONLY=scroll`, `reset`, `sessions`,
//! `frames`, `tui` or `replicas` runs one part, several separated by commas run in that order;
//! unset (or a name that is no part) runs everything.

// Each part lives in `bench/` (the binary's root is this file, so the path is said).
#[path = "bench/chart.rs"]
mod chart;
#[path = "bench/common.rs"]
mod common;
#[path = "bench/concurrent.rs"]
mod concurrent;
#[path = "bench/frames.rs"]
mod frames;
#[path = "bench/memory.rs"]
mod memory;
#[path = "bench/recording.rs"]
mod recording;
#[path = "bench/remote.rs"]
mod remote;
#[path = "bench/replicas.rs"]
mod replicas;
#[path = "bench/resets.rs"]
mod resets;
#[path = "bench/sessions_chart.rs"]
mod sessions_chart;
#[path = "bench/steps.rs"]
mod steps;
#[path = "bench/tui.rs"]
mod tui;
#[path = "bench/watchers.rs"]
mod watchers;

use common::print_measure_header;
use sessions_chart::Figures;

/// A part `BENCH_ONLY` names.
#[derive(Clone, Copy)]
enum Part {
    /// The scroll step alone (a quick check of the step path).
    Scroll,
    /// The reset rows of each isolation mode, and where a reset's time goes.
    Reset,
    /// 8 sessions stepping at once, and memory by sessions.
    Sessions,
    /// Where a scroll step's time goes.
    Frames,
    /// The terminal UI's frames on real screenshots.
    Tui,
    /// Replicas behind the balancer, and the image's cold start.
    Replicas,
}

impl Part {
    fn named(name: &str) -> Option<Part> {
        Some(match name {
            "scroll" => Part::Scroll,
            "reset" => Part::Reset,
            "sessions" => Part::Sessions,
            "frames" => Part::Frames,
            "tui" => Part::Tui,
            "replicas" => Part::Replicas,
            _ => return None,
        })
    }

    async fn run(self, rounds: usize, figures: &mut Figures) -> anyhow::Result<()> {
        match self {
            Part::Scroll => steps::scroll_only(rounds).await,
            Part::Reset => {
                print_measure_header();
                let back_to_back = resets::back_to_back(rounds).await?;
                resets::print_phases(&back_to_back.phase_rows);
                figures.resets = back_to_back.figures;
                Ok(())
            }
            Part::Sessions => {
                print_measure_header();
                figures.steps = concurrent::run(rounds).await?;
                println!();
                figures.memory = memory::run().await?;
                Ok(())
            }
            Part::Frames => frames::run(rounds).await,
            Part::Tui => {
                print_measure_header();
                let frames = tui::catalog_frames(rounds).await?;
                println!();
                tui::frames(&frames)
            }
            Part::Replicas => replicas::run(rounds).await,
        }
    }
}

/// `BENCH_ONLY`'s parts, or None to run everything.
fn only() -> Option<Vec<Part>> {
    let names = std::env::var("BENCH_ONLY").ok()?;
    names
        .split(',')
        .map(|name| Part::named(name.trim()))
        .collect()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Each series stays within one episode (at most 200 steps).
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30)
        .clamp(2, 90);
    let machine = common::machine();
    println!("Machine: {machine}");
    println!();
    let Some(parts) = only() else {
        return everything(rounds, &machine).await;
    };
    let mut figures = Figures::default();
    for (index, part) in parts.into_iter().enumerate() {
        if index > 0 {
            println!();
        }
        part.run(rounds, &mut figures).await?;
        figures.write_when_complete(&machine, rounds)?;
    }
    Ok(())
}

/// Every part, the one-line measures in one table first.
async fn everything(rounds: usize, machine: &str) -> anyhow::Result<()> {
    let mut figures = Figures::default();
    print_measure_header();
    resets::new_chromium_per_episode(rounds).await?;
    let back_to_back = resets::back_to_back(rounds).await?;
    figures.resets = back_to_back.figures;
    let png_sizes = steps::run(rounds).await?;
    recording::run(rounds).await?;
    remote::run(rounds).await?;
    for watchers in [1, 8] {
        watchers::run(rounds, watchers).await?;
    }
    figures.steps = concurrent::run(rounds).await?;
    resets::print_phases(&back_to_back.phase_rows);
    println!();
    png_sizes.print();
    println!();
    frames::run(rounds).await?;
    println!();
    figures.memory = memory::run().await?;
    figures.write_when_complete(machine, rounds)?;
    println!();
    let frames = tui::catalog_frames(rounds).await?;
    println!();
    tui::frames(&frames)?;
    println!();
    replicas::run(rounds).await
}
