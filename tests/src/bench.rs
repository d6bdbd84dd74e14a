//! `browserenv-bench`: latency, size and memory figures of the server on real Chromium, printed
//! as Markdown tables for docs/benchmark.md, and a chart of steps, resets and memory by sessions
//! (`docs/images/bench.svg`). Client-measured round trips over a real WebSocket on 127.0.0.1,
//! against the local test pages.
//!
//! `BENCH_ROUNDS=N` sets the sample size (30; 2 to 90). `BENCH_ONLY=reset` (a part's name: see
//! `Part`) runs one part, several separated by commas run in that order; unset, every part.
//! At the end, every figure is compared with the one recorded last (`regressions.rs`).

// Each part lives in `bench/` (the binary's root is this file, so the path is said).
#[path = "bench/archive.rs"]
mod archive;
#[path = "bench/archive_large.rs"]
mod archive_large;
#[path = "bench/chart.rs"]
mod chart;
#[path = "bench/common.rs"]
mod common;
#[path = "bench/concurrent.rs"]
mod concurrent;
#[path = "bench/cpu.rs"]
mod cpu;
#[path = "bench/floor.rs"]
mod floor;
#[path = "bench/frames.rs"]
mod frames;
#[path = "bench/gestures.rs"]
mod gestures;
#[path = "bench/memory.rs"]
mod memory;
#[path = "bench/miniwob.rs"]
mod miniwob;
#[path = "bench/recording.rs"]
mod recording;
#[path = "bench/regressions.rs"]
mod regressions;
#[path = "bench/remote.rs"]
mod remote;
#[path = "bench/replicas.rs"]
mod replicas;
#[path = "bench/resets.rs"]
mod resets;
#[path = "bench/seed.rs"]
mod seed;
#[path = "bench/sessions_chart.rs"]
mod sessions_chart;
#[path = "bench/steps.rs"]
mod steps;
#[path = "bench/throughput.rs"]
mod throughput;
#[path = "bench/transport.rs"]
mod transport;
#[path = "bench/tui.rs"]
mod tui;
#[path = "bench/watchers.rs"]
mod watchers;

use common::print_measure_header;
use sessions_chart::Figures;

/// A part of the bench: one table (or a few about one thing) each. `BENCH_ONLY` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// Raw CDP on the same Chromium: the floor under the reset and step rows.
    Floor,
    /// The DevTools bridge's cost per command, beside the pipe read directly.
    Transport,
    /// Resets in each isolation mode, with their floors, and where a reset's time goes.
    Reset,
    /// Each kind of step alone, recording on, a remote browser, watchers; the PNG's size.
    Steps,
    /// The scroll step alone (a quick check of the step path).
    Scroll,
    /// The gestures (hover, drag, press, select) beside a click.
    Gestures,
    /// Where a scroll step's time goes.
    Frames,
    /// 8 sessions stepping at once, Chromium CPU per step, and memory by sessions.
    Sessions,
    /// N sessions stepping as fast as they can: steps per second, per core, CPU per step.
    Throughput,
    /// The terminal UI's frames on real screenshots.
    Tui,
    /// Replicas behind the balancer, and the image's cold start.
    Replicas,
    /// Web archives: a reset and a scroll step live, recording and replaying; resets from a small
    /// and a 1 GB archive, first and later; an archive's size.
    Archive,
    /// MiniWoB++: a reset, a step, episodes per second with 1, 4 and 8 sessions.
    MiniWob,
}

impl Part {
    /// Every part, in the order a full run takes them (`scroll` is in `steps`).
    const ALL: [Part; 12] = [
        Part::Floor,
        Part::Transport,
        Part::Reset,
        Part::Steps,
        Part::Gestures,
        Part::Frames,
        Part::Sessions,
        Part::Throughput,
        Part::Tui,
        Part::Replicas,
        Part::Archive,
        Part::MiniWob,
    ];

    fn name(self) -> &'static str {
        match self {
            Part::Floor => "floor",
            Part::Transport => "transport",
            Part::Reset => "reset",
            Part::Steps => "steps",
            Part::Scroll => "scroll",
            Part::Gestures => "gestures",
            Part::Frames => "frames",
            Part::Sessions => "sessions",
            Part::Throughput => "throughput",
            Part::Tui => "tui",
            Part::Replicas => "replicas",
            Part::Archive => "archive",
            Part::MiniWob => "miniwob",
        }
    }

    fn named(name: &str) -> Option<Part> {
        Part::ALL
            .into_iter()
            .chain([Part::Scroll])
            .find(|part| part.name() == name)
    }

    async fn run(self, rounds: usize, figures: &mut Figures) -> anyhow::Result<()> {
        match self {
            Part::Floor => floor::run(rounds).await,
            Part::Transport => transport::run(rounds).await,
            Part::Reset => {
                print_measure_header();
                resets::new_chromium_per_episode(rounds).await?;
                let back_to_back = resets::back_to_back(rounds).await?;
                let note = resets::after_short_episodes(rounds).await?;
                resets::print_phases(&back_to_back.phase_rows);
                println!();
                println!("{note}");
                figures.resets = back_to_back.figures;
                Ok(())
            }
            Part::Steps => {
                print_measure_header();
                let png_sizes = steps::run(rounds).await?;
                recording::run(rounds).await?;
                remote::run(rounds).await?;
                for watchers in [1, 8] {
                    watchers::run(rounds, watchers).await?;
                }
                println!();
                png_sizes.print();
                Ok(())
            }
            Part::Scroll => steps::scroll_only(rounds).await,
            Part::Gestures => {
                print_measure_header();
                gestures::run(rounds).await
            }
            Part::Frames => frames::run(rounds).await,
            Part::Sessions => {
                print_measure_header();
                figures.steps = concurrent::run(rounds).await?;
                println!();
                figures.memory = memory::run().await?;
                Ok(())
            }
            Part::Throughput => throughput::run(rounds).await,
            Part::Tui => {
                print_measure_header();
                let frames = tui::catalog_frames(rounds).await?;
                println!();
                tui::frames(&frames)
            }
            Part::Replicas => replicas::run(rounds).await,
            Part::Archive => archive::run(rounds).await,
            Part::MiniWob => miniwob::run(rounds).await,
        }
    }
}

/// `BENCH_ONLY`'s parts (a name that is no part is an error), or every part.
fn parts() -> anyhow::Result<Vec<Part>> {
    let Ok(names) = std::env::var("BENCH_ONLY") else {
        return Ok(Part::ALL.to_vec());
    };
    names
        .split(',')
        .map(|name| {
            Part::named(name.trim()).ok_or_else(|| {
                let known: Vec<&str> = Part::ALL
                    .into_iter()
                    .chain([Part::Scroll])
                    .map(Part::name)
                    .collect();
                anyhow::anyhow!("BENCH_ONLY: no part {name:?} (parts: {})", known.join(", "))
            })
        })
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
    let parts = parts()?;
    let machine = common::machine();
    println!("Machine: {machine}");
    let mut figures = Figures::default();
    for part in parts {
        println!();
        println!("### {}", part.name());
        println!();
        part.run(rounds, &mut figures).await?;
        figures.write_when_complete(&machine, rounds)?;
    }
    regressions::finish(&machine)?;
    Ok(())
}
