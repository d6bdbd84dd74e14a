//! `browserenv-bench`: latency, size and memory figures of the server on real Chromium, printed
//! as a Markdown table for the README. Client-measured round trips over a real WebSocket on
//! 127.0.0.1, against the local test pages.

use std::time::{Duration, Instant};

use base64::Engine;
use browserenv::models::Key;
use browserenv::{BrowserAction, Client, ResetOptions};
use browserenv_server::chromium::{
    ChromiumConfig, Isolation, Screenshots, DEFAULT_EPISODES_PER_BROWSER,
};
use browserenv_server::settings::EnvSettings;
use browserenv_server::ServerConfig;
use browserenv_tests::{test_chromium, test_settings, Harness, RemoteChromium};

// Each bench part of its own lives in `bench/` (the binary's root is this file, so the path is said).
#[path = "bench/replicas.rs"]
mod replicas;

struct Series {
    name: String,
    millis: Vec<f64>,
}

impl Series {
    fn new(name: &str) -> Self {
        Series {
            name: name.into(),
            millis: Vec::new(),
        }
    }

    fn add(&mut self, elapsed: Duration) {
        self.millis.push(elapsed.as_secs_f64() * 1000.0);
    }

    fn percentile(&self, p: f64) -> f64 {
        let mut sorted = self.millis.clone();
        sorted.sort_by(f64::total_cmp);
        if sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
        sorted[rank]
    }

    fn row(&self) -> String {
        format!(
            "| {} | {} | {:.0} | {:.0} |",
            self.name,
            self.millis.len(),
            self.percentile(50.0),
            self.percentile(95.0)
        )
    }
}

async fn timed<T>(series: &mut Series, future: impl std::future::Future<Output = T>) -> T {
    let started = Instant::now();
    let value = future.await;
    series.add(started.elapsed());
    value
}

/// Every Chromium process this benchmark launched: each browser (its profile names this process)
/// and everything in its process group (renderers, GPU, network and storage services).
fn chromium_processes() -> Vec<i32> {
    let marker = format!("browserenv-{}-", std::process::id());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let processes: Vec<(i32, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_string_lossy().parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            Some((pid, String::from_utf8_lossy(&cmdline).to_string()))
        })
        .collect();
    let browsers: std::collections::HashSet<i32> = processes
        .iter()
        .filter(|(_, cmdline)| cmdline.contains(&marker) && !cmdline.contains("--type="))
        .map(|(pid, _)| *pid)
        .collect();
    processes
        .into_iter()
        // SAFETY: getpgid on an arbitrary pid only reads.
        .filter(|(pid, _)| browsers.contains(&unsafe { libc::getpgid(*pid) }))
        .map(|(pid, _)| pid)
        .collect()
}

/// Proportional set size (KiB) of every Chromium process this benchmark launched.
fn chromium_pss_kib() -> u64 {
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

/// CPU time (user and system, milliseconds) used so far by the Chromium processes running now.
fn chromium_cpu_ms() -> f64 {
    // SAFETY: sysconf only reads a constant.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let ticks: u64 = chromium_processes()
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|stat| {
            // Fields after the command (which may hold spaces): utime and stime are the 12th
            // and 13th.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
        })
        .sum();
    ticks as f64 * 1000.0 / ticks_per_second
}

/// Open sessions on `harness`, each reset to the long test page, until there are `count`.
async fn open_sessions(
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

/// Chromium's memory with 1, 4 and 8 sessions on a page each, for each isolation mode, as the
/// server runs by default (warm spare and spare contexts on) and with both off.
async fn memory_by_sessions() -> anyhow::Result<()> {
    println!("| isolation | sessions | Chromium PSS MiB | MiB per additional session |");
    println!("|---|---|---|---|");
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
        }
        for client in clients {
            client.close().await?;
        }
        harness.stop().await;
    }
    Ok(())
}

/// The scroll step with 8 sessions stepping at once against one session alone, per isolation mode.
/// Then the CPU time Chromium spent per step, alone and together: 8 steps at once on this
/// machine's cores cannot take less than 8 times that, divided by the cores.
async fn concurrent_steps(rounds: usize) -> anyhow::Result<()> {
    let mut cpu_rows = Vec::new();
    for (name, isolation) in [
        ("BROWSER_ISOLATION=process", Isolation::Process),
        ("BROWSER_ISOLATION=context", Isolation::Context),
    ] {
        let settings = EnvSettings {
            max_steps: 200,
            ..test_settings()
        };
        let harness = server_with(isolation, DEFAULT_EPISODES_PER_BROWSER, true, settings).await;
        let mut clients = Vec::new();
        open_sessions(&harness, &mut clients, 8).await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let alone_name = format!("step scroll, 1 session alone ({name})");
        let cpu_before = chromium_cpu_ms();
        let (alone, _) = scrolls(&mut clients[0], rounds, &alone_name).await?;
        let alone_cpu = (chromium_cpu_ms() - cpu_before) / rounds as f64;
        println!("{}", alone.row());
        let cpu_before = chromium_cpu_ms();
        let mut tasks = Vec::new();
        for mut client in clients {
            tasks.push(tokio::spawn(async move {
                let series = scrolls(&mut client, rounds, "").await.map(|(s, _)| s);
                (client, series)
            }));
        }
        let mut together = Series::new(&format!("step scroll, 8 sessions at once ({name})"));
        let mut clients = Vec::new();
        for task in tasks {
            let (client, series) = task.await?;
            together.millis.extend(series?.millis);
            clients.push(client);
        }
        // Before the sessions close: a closed context's renderer takes its CPU time with it.
        let together_cpu = (chromium_cpu_ms() - cpu_before) / together.millis.len() as f64;
        println!("{}", together.row());
        cpu_rows.push(format!("| {name} | {alone_cpu:.1} | {together_cpu:.1} |"));
        for client in clients {
            client.close().await?;
        }
        harness.stop().await;
    }
    println!();
    println!("| Chromium CPU ms per scroll step | 1 session alone | 8 sessions at once |");
    println!("|---|---|---|");
    for row in cpu_rows {
        println!("{row}");
    }
    Ok(())
}

fn machine() -> String {
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Each series stays within one episode (at most 200 steps).
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30)
        .clamp(2, 90);
    println!("Machine: {}", machine());
    println!();
    // BENCH_ONLY=scroll: the scroll step alone (a quick check of the step path).
    if std::env::var("BENCH_ONLY").as_deref() == Ok("scroll") {
        let harness = Harness::start(EnvSettings {
            max_steps: 200,
            ..test_settings()
        })
        .await;
        let mut client = harness.client().await;
        client
            .reset(ResetOptions::new(harness.page("long.html")))
            .await?;
        let (scroll, _) = scrolls(&mut client, rounds, "step scroll (static page)").await?;
        println!("| measure | n | median ms | p95 ms |");
        println!("|---|---|---|---|");
        println!("{}", scroll.row());
        client.close().await?;
        harness.stop().await;
        return Ok(());
    }
    // BENCH_ONLY=reset: the reset rows of each isolation mode, and where a step's time goes.
    if std::env::var("BENCH_ONLY").as_deref() == Ok("reset") {
        println!("| measure | n | median ms | p95 ms |");
        println!("|---|---|---|---|");
        let phases = back_to_back_resets(rounds).await?;
        print_phases(&phases);
        return Ok(());
    }
    // BENCH_ONLY=sessions: memory by sessions and 8 sessions stepping at once.
    if std::env::var("BENCH_ONLY").as_deref() == Ok("sessions") {
        println!("| measure | n | median ms | p95 ms |");
        println!("|---|---|---|---|");
        concurrent_steps(rounds).await?;
        println!();
        return memory_by_sessions().await;
    }
    // BENCH_ONLY=replicas: replicas behind the balancer, and the image's cold start.
    if std::env::var("BENCH_ONLY").as_deref() == Ok("replicas") {
        return replicas::run(rounds).await;
    }
    if std::env::var("BENCH_ONLY").as_deref() == Ok("frames") {
        frame_phases(rounds).await?;
        return Ok(());
    }
    // BENCH_ONLY=tui: just the terminal UI's rows (its frames on real screenshots).
    if std::env::var("BENCH_ONLY").as_deref() == Ok("tui") {
        println!("| measure | n | median ms | p95 ms |");
        println!("|---|---|---|---|");
        let frames = catalog_frames(rounds).await?;
        println!();
        return tui_frames(&frames);
    }
    println!("| measure | n | median ms | p95 ms |");
    println!("|---|---|---|---|");

    // A new Chromium per episode, as before contexts: cold (every reset launches), and with the
    // spare given time to launch between resets.
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
        println!(
            "{}",
            resets(&mut client, &harness, rounds, pause, false, name)
                .await?
                .row()
        );
        client.close().await?;
        harness.stop().await;
    }
    let reset_phases = back_to_back_resets(rounds).await?;

    // Everything else as the server runs by default.
    let harness = Harness::start(EnvSettings {
        max_steps: 200,
        ..test_settings()
    })
    .await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await?;
    let (scroll, screenshots) = scrolls(&mut client, rounds, "step scroll (static page)").await?;
    println!("{}", scroll.row());
    let mut png_bytes = Vec::new();
    for screenshot in &screenshots {
        png_bytes.push(
            base64::engine::general_purpose::STANDARD
                .decode(screenshot)?
                .len(),
        );
    }

    let mut click = Series::new("step click (static page, no navigation)");
    client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await?;
    for _ in 0..rounds {
        timed(&mut click, client.step(BrowserAction::click(700, 500))).await?;
    }
    println!("{}", click.row());

    client
        .reset(ResetOptions::new(harness.page("form.html")))
        .await?;
    client.step(BrowserAction::click(250, 115)).await?;
    let mut typing = Series::new("step type (10 chars)");
    let mut key = Series::new("step key (BACKSPACE)");
    for _ in 0..rounds {
        timed(
            &mut typing,
            client.step(BrowserAction::type_text("0123456789")),
        )
        .await?;
        timed(&mut key, client.step(BrowserAction::key(Key::Backspace))).await?;
    }
    println!("{}", typing.row());
    println!("{}", key.row());

    let mut navigate = Series::new("step click that navigates");
    let mut back = Series::new("step back (history)");
    client
        .reset(ResetOptions::new(harness.page("nav1.html")))
        .await?;
    for _ in 0..rounds.min(20) {
        timed(&mut navigate, client.step(BrowserAction::click(200, 50))).await?;
        timed(&mut back, client.step(BrowserAction::back())).await?;
    }
    println!("{}", navigate.row());
    println!("{}", back.row());
    recording_overhead(rounds).await?;
    remote_browser(rounds).await?;

    png_bytes.sort_unstable();
    drop(client);
    harness.stop().await;
    for watchers in [1, 8] {
        watcher_delay(rounds, watchers).await?;
    }
    concurrent_steps(rounds).await?;
    print_phases(&reset_phases);
    println!();
    println!(
        "Screenshot (800x600 PNG, long text page): median {} KiB, max {} KiB.",
        png_bytes[png_bytes.len() / 2] / 1024,
        png_bytes.last().copied().unwrap_or(0) / 1024
    );
    println!();
    frame_phases(rounds).await?;
    println!();
    memory_by_sessions().await?;
    println!();
    let frames = catalog_frames(rounds).await?;
    println!();
    tui_frames(&frames)?;
    println!();
    replicas::run(rounds).await
}

/// How long after the controller's reply each of `count` watchers sees the step's frame.
async fn watcher_delay(rounds: usize, count: usize) -> anyhow::Result<()> {
    use futures_util::StreamExt;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    let settings = EnvSettings {
        max_steps: 200,
        ..test_settings()
    };
    let harness = Harness::start(settings).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await?;
    let url = format!("{}/sessions", harness.server.base_url());
    let sessions: serde_json::Value = reqwest::get(&url).await?.error_for_status()?.json().await?;
    let id = sessions[0]["id"].as_str().unwrap_or_default().to_string();
    let seen: Arc<Mutex<HashMap<(usize, u64), Instant>>> = Arc::default();
    let mut tasks = Vec::new();
    for watcher in 0..count {
        let ws = format!("ws://{}/sessions/{id}/watch", harness.server.addr);
        let (mut socket, _) = tokio_tungstenite::connect_async(ws).await?;
        let seen = seen.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(Ok(message)) = socket.next().await {
                let Ok(text) = message.into_text() else {
                    continue;
                };
                let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                if let Some(step) = value["data"]["step"].as_u64() {
                    if let Ok(mut seen) = seen.lock() {
                        seen.entry((watcher, step)).or_insert_with(Instant::now);
                    }
                }
            }
        }));
    }
    let mut replies = Vec::new();
    for i in 0..rounds {
        let dy = if i % 2 == 0 { 600 } else { -600 };
        client.step(BrowserAction::scroll(dy)).await?;
        replies.push(Instant::now());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut delay = Series::new(&format!(
        "watcher sees the step, after the reply ({count} watcher{})",
        if count == 1 { "" } else { "s" }
    ));
    if let Ok(seen) = seen.lock() {
        for (i, reply) in replies.iter().enumerate() {
            for watcher in 0..count {
                if let Some(at) = seen.get(&(watcher, i as u64 + 1)) {
                    delay.add(at.saturating_duration_since(*reply));
                }
            }
        }
    }
    anyhow::ensure!(!delay.millis.is_empty(), "no watcher saw a step");
    println!("{}", delay.row());
    for task in tasks {
        task.abort();
    }
    client.close().await?;
    harness.stop().await;
    Ok(())
}

/// Between timed resets with a spare, time for the spare to launch, as between a real agent's
/// episodes.
const SPARE_PAUSE: Duration = Duration::from_millis(1500);

/// Up to 10 timed resets to long.html, each after `pause`.
async fn resets(
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

/// A server on real Chromium with `isolation`, `episodes_per_browser` and the warm spare as given.
async fn server_with(
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
            max_sessions: 10,
            ..ServerConfig::default()
        },
    )
    .await
}

/// Resets one right after the other, as an agent that trains runs its episodes: with a new
/// Chromium per episode (the spare is used up by the first), with a context per episode on the
/// session's Chromium, and with sessions sharing one Chromium.
async fn back_to_back_resets(rounds: usize) -> anyhow::Result<Vec<String>> {
    let modes = [
        (
            "reset back to back, new context per episode, no spare context (BROWSER_NO_WARM_SPARE)",
            Isolation::Process,
            DEFAULT_EPISODES_PER_BROWSER,
        ),
        (
            "reset back to back, new Chromium per episode (BROWSER_EPISODES_PER_BROWSER=1)",
            Isolation::Process,
            1,
        ),
        (
            "reset back to back, new context per episode (BROWSER_ISOLATION=process, default)",
            Isolation::Process,
            DEFAULT_EPISODES_PER_BROWSER,
        ),
        (
            "reset back to back, shared Chromium (BROWSER_ISOLATION=context)",
            Isolation::Context,
            DEFAULT_EPISODES_PER_BROWSER,
        ),
    ];
    let mut phase_rows = Vec::new();
    for (name, isolation, episodes) in modes {
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
        let mut series = Series::new(name);
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
            .await?;
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
        phase_rows.push(format!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
            median("browser"),
            median("action"),
            median("settle"),
            median("screenshot"),
            median("total")
        ));
        client.close().await?;
        harness.stop().await;
    }
    Ok(phase_rows)
}

/// Where a back-to-back reset's time goes on the server: `browser` is taking the episode's
/// context (or launching its browser), `action` the navigation to the start page and its load;
/// the rest of `total` is reading the page's facts.
fn print_phases(rows: &[String]) {
    println!();
    println!("| reset back to back, server phases (median ms) | context or browser | load | settle | screenshot | server total |");
    println!("|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}

/// Where a scroll step's time goes: the server's own phases (from `metadata.timings_ms`; the
/// rest of `total` is reading the page's facts) beside the client's round trip, with no settle
/// and with the default adaptive settle, for each way of taking the screenshot.
async fn frame_phases(rounds: usize) -> anyhow::Result<()> {
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
            max_steps: 200,
            action_wait: wait,
            ..test_settings()
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

/// Timed scroll steps down and up a page, and their screenshots.
async fn scrolls(
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

/// Sessions on a Chromium that is already running (`--browser-url`): a reset opens a DevTools
/// connection, a browser context and a tab there instead of launching a process.
async fn remote_browser(rounds: usize) -> anyhow::Result<()> {
    let remote = RemoteChromium::start();
    for warm_spare in [false, true] {
        let harness = Harness::start_on(
            Some(remote.url()),
            ServerConfig {
                settings: EnvSettings {
                    max_steps: 200,
                    ..test_settings()
                },
                warm_spare,
                ..ServerConfig::default()
            },
        )
        .await;
        let mut client = harness.client().await;
        let pause = warm_spare.then_some(SPARE_PAUSE);
        let name = if warm_spare {
            "reset, remote browser (--browser-url), spare context ready"
        } else {
            "reset, remote browser (--browser-url), no spare"
        };
        let reset = resets(&mut client, &harness, rounds, pause, false, name).await?;
        println!("{}", reset.row());
        if warm_spare {
            let (scroll, _) = scrolls(&mut client, rounds, "step scroll, remote browser").await?;
            println!("{}", scroll.row());
        }
        client.close().await?;
        harness.stop().await;
    }
    Ok(())
}

/// The same scroll steps with `--record-dir` on: the recorder runs on its own thread, so the
/// step path should not change.
async fn recording_overhead(rounds: usize) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("browserenv-bench-record-{}", std::process::id()));
    let settings = EnvSettings {
        max_steps: 200,
        ..test_settings()
    };
    let harness = Harness::recording(&dir, settings, false).await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(harness.page("long.html")))
        .await?;
    let name = "step scroll, server recording on (--record-dir)";
    let (scroll, _) = scrolls(&mut client, rounds, name).await?;
    println!("{}", scroll.row());
    client.close().await?;
    harness.stop().await;
    let recorded = browserenv::trajectory::read(&dir)?.steps.len();
    anyhow::ensure!(recorded == rounds, "recorded {recorded} of {rounds} steps");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// The demo site's catalog, scrolled a screen at a time: screenshots with their text layers,
/// what the terminal UI shows. Also times the text layer route.
async fn catalog_frames(
    rounds: usize,
) -> anyhow::Result<Vec<(String, browserenv::text_layer::TextLayer)>> {
    let site = browserenv_server::site::serve_dir(browserenv_tests::assets_dir().join("site"))
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let harness = Harness::start(EnvSettings {
        max_steps: 200,
        ..test_settings()
    })
    .await;
    let mut client = harness.client().await;
    client
        .reset(ResetOptions::new(site.url("catalog.html")).episode_id("bench-text"))
        .await?;
    let base = harness.server.base_url();
    let sessions: Vec<serde_json::Value> = reqwest::get(format!("{base}/sessions"))
        .await?
        .json()
        .await?;
    let id = sessions
        .iter()
        .find(|s| s["episode_id"] == "bench-text")
        .and_then(|s| s["id"].as_str())
        .ok_or_else(|| anyhow::anyhow!("the session is not listed"))?
        .to_string();
    let mut route = Series::new("text layer: GET /sessions/{id}/text (catalog page)");
    let mut frames = Vec::new();
    for round in 0..rounds {
        let dy = if round % 6 < 3 { 300 } else { -300 };
        let step = client.step(BrowserAction::scroll(dy)).await?;
        let started = Instant::now();
        let layer: browserenv::text_layer::TextLayer =
            reqwest::get(format!("{base}/sessions/{id}/text"))
                .await?
                .json()
                .await?;
        route.add(started.elapsed());
        frames.push((step.observation.screenshot, layer));
    }
    println!("{}", route.row());
    client.close().await?;
    harness.stop().await;
    Ok(frames)
}

/// From an observation's PNG arriving to its frame written out, per protocol and terminal size:
/// decode, crop and scale, encode (half-blocks with and without the text layer, sixel, kitty,
/// iTerm2), draw, and the bytes a real terminal would receive (counted here).
fn tui_frames(frames: &[(String, browserenv::text_layer::TextLayer)]) -> anyhow::Result<()> {
    use browserenv_tui::app::{App, Msg};
    use browserenv_tui::event_loop::render;
    use browserenv_tui::graphics::{Graphics, Protocol};
    use browserenv_tui::painter::Painter;
    use browserenv_tui::picture::decode_png;
    use ratatui::backend::CrosstermBackend;
    use ratatui::layout::Size;

    /// A common cell size for the pixel protocols (kitty in Debian 12 reports 9x20, xterm 6x13).
    const CELL: (u16, u16) = (8, 16);
    println!("| measure | n | median ms | p95 ms | median KB per frame |");
    println!("|---|---|---|---|---|");
    let kinds: [(&str, Graphics, bool); 5] = [
        ("kitty", Graphics::pixels(Protocol::Kitty, CELL), false),
        ("sixel", Graphics::pixels(Protocol::Sixel, CELL), false),
        ("iTerm2", Graphics::pixels(Protocol::Iterm2, CELL), false),
        ("half-blocks", Graphics::halfblocks(), false),
        ("half-blocks + text", Graphics::halfblocks(), true),
    ];
    for (width, height) in [(120u16, 40u16), (200, 60)] {
        for (name, graphics, text) in &kinds {
            let written = std::rc::Rc::new(std::cell::Cell::new(0usize));
            let mut terminal = ratatui::Terminal::with_options(
                CrosstermBackend::new(CountingWriter(written.clone())),
                ratatui::TerminalOptions {
                    viewport: ratatui::Viewport::Fixed(ratatui::layout::Rect::new(
                        0, 0, width, height,
                    )),
                },
            )?;
            let mut raw = CountingWriter(written.clone());
            let mut app = App::new("http://127.0.0.1/".into(), "bench".into());
            app.update(Msg::Connected);
            app.text_picture = graphics.is_text();
            app.text_layer = *text;
            let mut painter = Painter::new(graphics.clone());
            let mut series = Series::new(&format!("TUI frame {width}x{height}: {name}"));
            let mut bytes = Vec::new();
            for (index, (screenshot, layer)) in frames.iter().enumerate() {
                let started = Instant::now();
                let (image, png) = decode_png(screenshot).map_err(anyhow::Error::msg)?;
                painter.slot.set_picture(
                    Some(std::sync::Arc::new(image)),
                    Some(std::sync::Arc::new(png)),
                );
                if *text {
                    painter
                        .slot
                        .set_text(Some(std::sync::Arc::new(layer.clone())));
                }
                painter.encode_now(&app, Size::new(width, height));
                written.set(0);
                render(&mut terminal, &mut app, &mut painter, Some(&mut raw))?;
                // The first frame paints the whole screen; the rest are changed frames.
                if index > 0 {
                    series.add(started.elapsed());
                    bytes.push(written.get());
                }
            }
            bytes.sort_unstable();
            println!(
                "{} {:.0} |",
                series.row(),
                bytes[bytes.len() / 2] as f64 / 1000.0
            );
        }
    }
    println!();
    let shown = |width: u16, height: u16| {
        let area = ratatui::layout::Rect::new(0, 0, width, height);
        let graphics = Graphics::pixels(Protocol::Kitty, CELL);
        browserenv_tui::view::layout(
            area,
            &graphics,
            false,
            browserenv_tui::picture::Region::PAGE,
        )
        .picture
        .map_or((0, 0), |view| view.pixels)
    };
    let (small, large) = (shown(120, 40), shown(200, 60));
    println!(
        "Pixel protocols at a {}x{} px cell: the page at 1:1, {}x{} px at 120x40 (the rows past \
         the pane cut) and {}x{} px at 200x60. Frames are the demo catalog scrolled 300 px at a time.",
        CELL.0, CELL.1, small.0, small.1, large.0, large.1
    );
    Ok(())
}

/// Counts what a terminal would receive.
struct CountingWriter(std::rc::Rc<std::cell::Cell<usize>>);

impl std::io::Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.set(self.0.get() + buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
