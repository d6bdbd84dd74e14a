//! What the bench's parts share: timed series and their rows, the servers they start, the
//! Chromium processes they read (memory and CPU time from `/proc`), and the machine they run on.

use std::time::{Duration, Instant};

use browserenv::{BrowserAction, Client, ResetOptions};
use browserenv_server::chromium::{ChromiumConfig, Isolation};
use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_chromium, test_settings, Harness};

use crate::regressions::{cell, Better};

/// Between timed resets with a spare, time for the spare to launch, as between a real agent's
/// episodes.
pub const SPARE_PAUSE: Duration = Duration::from_millis(1500);

/// Timings of one measure, in milliseconds.
pub struct Series {
    pub name: String,
    pub millis: Vec<f64>,
    /// The same on raw CDP (`floor.rs`), where there is one.
    pub floor: Option<f64>,
}

impl Series {
    pub fn new(name: &str) -> Self {
        Series {
            name: name.into(),
            millis: Vec::new(),
            floor: None,
        }
    }

    /// The series with its floor beside it.
    pub fn with_floor(mut self, floor: f64) -> Self {
        self.floor = Some(floor);
        self
    }

    /// The same timings under another name, beside another floor (a step against the floor
    /// that gives its picture's guarantee, `Floors::click_drawn`).
    pub fn against(&self, name: &str, floor: f64) -> Self {
        Series {
            name: name.into(),
            millis: self.millis.clone(),
            floor: Some(floor),
        }
    }

    pub fn add(&mut self, elapsed: Duration) {
        self.millis.push(elapsed.as_secs_f64() * 1000.0);
    }

    pub fn percentile(&self, p: f64) -> f64 {
        let mut sorted = self.millis.clone();
        sorted.sort_by(f64::total_cmp);
        if sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
        sorted[rank]
    }

    /// The series' row of a table that `print_measure_header` began; its median is recorded
    /// under its name (`regressions.rs`).
    pub fn row(&self) -> String {
        crate::regressions::record(&self.name, self.percentile(50.0), "ms", Better::Lower);
        let median = self.percentile(50.0);
        let (floor, times) = match self.floor {
            Some(floor) => (cell(floor, 0), format!("{}x", cell(median / floor, 1))),
            None => ("-".to_string(), "-".to_string()),
        };
        format!(
            "| {} | {} | {} | {} | {floor} | {times} |",
            self.name,
            self.millis.len(),
            cell(median, 0),
            cell(self.percentile(95.0), 0)
        )
    }
}

/// The header of the table of `Series::row`s.
pub fn print_measure_header() {
    println!("| measure | n | median ms | p95 ms | floor ms (raw CDP) | median / floor |");
    println!("|---|---|---|---|---|---|");
}

pub async fn timed<T>(series: &mut Series, future: impl std::future::Future<Output = T>) -> T {
    let started = Instant::now();
    let value = future.await;
    series.add(started.elapsed());
    value
}

/// The test settings with room for every series in one episode (at most 200 steps).
pub fn long_episodes() -> EnvSettings {
    EnvSettings {
        max_steps: 200,
        ..test_settings()
    }
}

/// A server on real Chromium with `isolation`, `episodes_per_browser` and the warm spare as given.
pub async fn server_with(
    isolation: Isolation,
    episodes_per_browser: u32,
    warm_spare: bool,
    settings: EnvSettings,
) -> Harness {
    let chromium = ChromiumConfig {
        isolation,
        episodes_per_browser,
        spare_contexts: warm_spare,
        ..test_chromium()
    };
    Harness::start_with_browser(
        chromium,
        ServerConfig {
            settings,
            warm_spare,
            max_sessions: 16,
            ..ServerConfig::default()
        },
    )
    .await
}

/// Open sessions on `harness`, each reset to the long test page, until there are `count`.
pub async fn open_sessions(
    harness: &Harness,
    clients: &mut Vec<Client>,
    count: usize,
) -> anyhow::Result<()> {
    while clients.len() < count {
        let mut client = harness.client().await;
        client
            .reset(ResetOptions::new(harness.page("long.html")))
            .await?;
        clients.push(client);
    }
    Ok(())
}

/// Timed scroll steps down and up a page, and their screenshots.
pub async fn scrolls(
    client: &mut Client,
    rounds: usize,
    name: &str,
) -> anyhow::Result<(Series, Vec<String>)> {
    let mut series = Series::new(name);
    let mut screenshots = Vec::new();
    for i in 0..rounds {
        let dy = if i % 2 == 0 { 600 } else { -600 };
        let result = timed(&mut series, client.step(BrowserAction::scroll(dy))).await?;
        screenshots.push(result.observation.screenshot);
    }
    Ok((series, screenshots))
}

/// Up to 10 timed resets to long.html, each after `pause` (and a scroll step first if
/// `step_first`).
pub async fn resets(
    client: &mut Client,
    harness: &Harness,
    rounds: usize,
    pause: Option<Duration>,
    step_first: bool,
    name: &str,
) -> anyhow::Result<Series> {
    let mut series = Series::new(name);
    for _ in 0..rounds.min(10) {
        if step_first {
            client.step(BrowserAction::scroll(300)).await?;
        }
        if let Some(pause) = pause {
            tokio::time::sleep(pause).await;
        }
        timed(
            &mut series,
            client.reset(ResetOptions::new(harness.page("long.html"))),
        )
        .await?;
    }
    Ok(series)
}

use crate::cpu::chromium_processes;

/// Proportional set size (KiB) of every Chromium process this benchmark launched.
pub fn chromium_pss_kib() -> u64 {
    chromium_processes()
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok())
        .filter_map(|rollup| {
            rollup
                .lines()
                .find(|l| l.starts_with("Pss:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum()
}

/// Cores, CPU model and Chromium version.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let chromium = std::process::Command::new(browserenv_tests::chromium_path())
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("{cores} cores, {cpu}; {chromium}")
}
