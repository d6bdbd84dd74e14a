//! MiniWoB++ (`BENCH_ONLY=miniwob`): what an RL trainer's loop costs, short episodes and many
//! resets. A reset of `miniwob.click-test` (load the task, seed its page, start it, the first
//! screenshot), a step on it that ends nothing (a click on the task's empty area: the click, the
//! settle, the page's verdict, the screenshot), and whole episodes per second with 1, 4 and 8
//! sessions at once, each a reset with a new seed and the click on the button the observation's
//! text shows (`BROWSER_OBSERVE_TEXT`), which the page scores 1.0. The pages are the `miniwob`
//! package's (`miniwob_dir`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use browserenv::{BrowserAction, Client, StepResult};
use browserenv_server::chromium::{Isolation, DEFAULT_EPISODES_PER_BROWSER};
use browserenv_server::miniwob::MiniWob;
use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;
use browserenv_tests::{miniwob_dir, test_chromium, Harness};
use serde_json::{json, Map, Value};

use crate::common::{long_episodes, print_measure_header, timed, Series};
use crate::regressions::{cell, record, Better};

const TASK: &str = "miniwob.click-test";
/// Sessions running episodes at once.
const SESSIONS: [usize; 3] = [1, 4, 8];
/// How long each episodes-per-second measurement runs.
const WINDOW: Duration = Duration::from_secs(10);

fn reset_args(seed: u64) -> Map<String, Value> {
    let mut kwargs = Map::new();
    kwargs.insert("task_id".into(), json!(TASK));
    kwargs.insert("seed".into(), json!(seed));
    kwargs
}

async fn server(settings: EnvSettings) -> anyhow::Result<Harness> {
    let dir = miniwob_dir().ok_or_else(|| {
        anyhow::anyhow!(
            "no MiniWoB++ pages: `make venv` (the miniwob package), or BROWSER_MINIWOB_DIR"
        )
    })?;
    let miniwob = MiniWob::serve(&dir).await.map_err(anyhow::Error::msg)?;
    let chromium = browserenv_server::chromium::ChromiumConfig {
        isolation: Isolation::Process,
        episodes_per_browser: DEFAULT_EPISODES_PER_BROWSER,
        ..test_chromium()
    };
    Ok(Harness::start_with_browser(
        chromium,
        ServerConfig {
            settings,
            max_sessions: 16,
            miniwob: Some(Arc::new(miniwob)),
            ..ServerConfig::default()
        },
    )
    .await)
}

/// The centre of the "Click" button in an observation's text (`x,y,w,h [button] Click`).
fn button(result: &StepResult) -> Option<(i64, i64)> {
    let text = result.observation.metadata["text"].as_str()?;
    let line = text.lines().find(|line| line.contains("[button] Click"))?;
    let numbers: Vec<i64> = line
        .split(' ')
        .next()?
        .split(',')
        .filter_map(|n| n.parse().ok())
        .collect();
    Some((numbers[0] + numbers[2] / 2, numbers[1] + numbers[3] / 2))
}

pub async fn run(rounds: usize) -> anyhow::Result<()> {
    print_measure_header();
    let harness = server(long_episodes()).await?;
    let mut client = harness.client().await;
    let mut resets = Series::new("MiniWoB++ reset (click-test, a new seed)");
    for seed in 0..rounds.min(20) as u64 {
        timed(&mut resets, client.reset_with(reset_args(seed))).await?;
        // As between a trainer's episodes: the next context opens meanwhile.
        tokio::time::sleep(crate::common::SPARE_PAUSE).await;
    }
    println!("{}", resets.row());
    client.reset_with(reset_args(1)).await?;
    let mut steps = Series::new("MiniWoB++ step (a click that ends nothing)");
    for _ in 0..rounds {
        let result = timed(&mut steps, client.step(BrowserAction::click(350, 500))).await?;
        anyhow::ensure!(!result.done, "a click on the empty area ended the episode");
    }
    println!("{}", steps.row());
    client.close().await?;
    harness.stop().await;
    println!();
    episodes_per_second().await
}

/// Episodes per second with N sessions, each resetting and solving click-test in a loop.
async fn episodes_per_second() -> anyhow::Result<()> {
    println!(
        "| sessions | episodes | episodes/s | reward 1.0 | median reset ms | median step ms |"
    );
    println!("|---|---|---|---|---|---|");
    for sessions in SESSIONS {
        let harness = server(EnvSettings {
            observe_text: true,
            ..long_episodes()
        })
        .await?;
        let mut clients: Vec<Client> = Vec::new();
        for _ in 0..sessions {
            clients.push(harness.client().await);
        }
        let started = Instant::now();
        let mut tasks = Vec::new();
        for (index, mut client) in clients.into_iter().enumerate() {
            tasks.push(tokio::spawn(async move {
                let (mut resets, mut steps, mut solved) = (Vec::new(), Vec::new(), 0usize);
                let mut seed = index as u64 * 100_000;
                while started.elapsed() < WINDOW {
                    seed += 1;
                    let at = Instant::now();
                    let first = client.reset_with(reset_args(seed)).await?;
                    resets.push(at.elapsed().as_secs_f64() * 1000.0);
                    let (x, y) = button(&first)
                        .ok_or_else(|| anyhow::anyhow!("no button in the reset's text"))?;
                    let at = Instant::now();
                    let last = client.step(BrowserAction::click(x, y)).await?;
                    steps.push(at.elapsed().as_secs_f64() * 1000.0);
                    solved += usize::from(last.done && last.reward == Some(1.0));
                }
                client.close().await?;
                anyhow::Ok((resets, steps, solved))
            }));
        }
        let (mut resets, mut steps, mut solved) = (Vec::new(), Vec::new(), 0);
        for task in tasks {
            let (mut r, mut s, n) = task.await??;
            resets.append(&mut r);
            steps.append(&mut s);
            solved += n;
        }
        let elapsed = started.elapsed().as_secs_f64();
        let episodes = resets.len();
        let median = |times: &mut Vec<f64>| {
            times.sort_by(f64::total_cmp);
            times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let per_second = episodes as f64 / elapsed;
        record(
            &format!("MiniWoB++ episodes, {sessions} sessions: episodes/s"),
            per_second,
            "episodes/s",
            Better::Higher,
        );
        println!(
            "| {sessions} | {episodes} | {} | {solved} | {} | {} |",
            cell(per_second, 1),
            cell(median(&mut resets), 0),
            cell(median(&mut steps), 0)
        );
        harness.stop().await;
    }
    Ok(())
}
