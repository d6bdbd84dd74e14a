//! The seed's reference beside our throughput: four servers of the seed's design
//! (`tests/python/seed_standin.py`: OpenEnv's Python `create_app`, one session each, Helium and
//! Selenium driving the full Chromium through chromedriver on an Xvfb display of its own),
//! stepping as fast as their clients can on the same cores, as our sessions do in
//! `throughput.rs`. The seed's own code is not here, only its description
//! (its "Helium Browser Environment" design, kept outside this repository); the stand-in is
//! built from it.
//!
//! Its Python needs Selenium and Helium (tests/python/requirements.txt) and `chromedriver`
//! (Debian's `chromium-driver`); `BENCH_SEED_PYTHON` names another Python than the workspace's
//! `.venv`. Without them the row says why it was not measured.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browserenv::{BrowserAction, Client, ResetOptions};
use browserenv_tests::assets_dir;

use crate::regressions::{cell, record, Better};

/// Seed servers, one session each (the seed serves one at a time).
pub const SERVERS: usize = 4;

/// How long the clients step for: at the seed's default wait a step takes over 1.5 s.
const WINDOW: Duration = Duration::from_secs(10);

/// One stand-in server on a display of its own: its process group ends with it.
struct SeedServer {
    child: Child,
    url: String,
}

impl Drop for SeedServer {
    fn drop(&mut self) {
        // The whole group: xvfb-run, Xvfb, Python, chromedriver, Chromium.
        // SAFETY: kill only signals the group this child leads.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

fn python() -> std::path::PathBuf {
    std::env::var_os("BENCH_SEED_PYTHON")
        .map(Into::into)
        .unwrap_or_else(|| assets_dir().join("../.venv/bin/python"))
}

/// Why the stand-in cannot run here, if it cannot.
fn missing() -> Option<String> {
    let python = python();
    let imports = Command::new(&python)
        .args(["-c", "import selenium, helium, openenv"])
        .output();
    match imports {
        Ok(out) if out.status.success() => {}
        Ok(_) => return Some(format!("{} lacks selenium or helium", python.display())),
        Err(err) => return Some(format!("{}: {err}", python.display())),
    }
    for tool in ["xvfb-run", "chromedriver", "xdotool"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|out| out.status.success());
        if !found {
            return Some(format!("no {tool}"));
        }
    }
    None
}

impl SeedServer {
    fn start(action_wait: &str) -> anyhow::Result<SeedServer> {
        let script = assets_dir().join("../tests/python/seed_standin.py");
        let mut command = Command::new("xvfb-run");
        command
            .args(["-a", "-s", "-screen 0 1024x768x24"])
            .arg(python())
            .arg(script)
            .args(["--port", "0"])
            .env("BROWSER_ACTION_WAIT_SECONDS", action_wait)
            .env("BROWSER_MAX_STEPS", "200")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = command.spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let mut server = SeedServer {
            child,
            url: String::new(),
        };
        for line in BufReader::new(stdout).lines() {
            if let Some(url) = line?.strip_prefix("browserenv-server listening on ") {
                server.url = url.trim().to_string();
                return Ok(server);
            }
        }
        anyhow::bail!("the seed stand-in ended before it listened")
    }

    /// CPU milliseconds its processes (the display, Python, chromedriver, Chromium) used.
    fn cpu_ms(&self) -> f64 {
        crate::cpu::tree_cpu_ms(self.child.id() as i32)
    }
}

/// The rows of the seed's reference, for a throughput table already begun: with no wait
/// (`BROWSER_ACTION_WAIT_SECONDS=0`) and with the seed's default 1.5 s.
pub async fn reference(page: &str) -> anyhow::Result<()> {
    let label = "seed stand-in (Python, Helium and Selenium, full Chromium on Xvfb; 4 servers of one session)";
    if let Some(why) = missing() {
        println!("| {label} | {SERVERS} | - | not measured: {why} | - | - | - | - | - |");
        return Ok(());
    }
    for (settle, wait) in [
        ("none (BROWSER_ACTION_WAIT_SECONDS=0)", "0"),
        ("fixed 1.5 s (the seed's default)", "1.5"),
    ] {
        let mut servers = Vec::new();
        for _ in 0..SERVERS {
            servers.push(tokio::task::spawn_blocking(move || SeedServer::start(wait)).await??);
        }
        let mut clients = Vec::new();
        for server in &servers {
            let mut client = Client::connect(&server.url).await?;
            client.reset(ResetOptions::new(page)).await?;
            clients.push(client);
        }
        let cpu_before: f64 = servers.iter().map(SeedServer::cpu_ms).sum();
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
                anyhow::Ok(times)
            }));
        }
        let mut times = Vec::new();
        for task in tasks {
            times.extend(task.await??);
        }
        let elapsed = started.elapsed().as_secs_f64();
        let cpu_ms: f64 = servers.iter().map(SeedServer::cpu_ms).sum::<f64>() - cpu_before;
        let steps = times.len();
        times.sort_by(f64::total_cmp);
        let median = times.get(steps / 2).copied().unwrap_or(f64::NAN);
        let per_second = steps as f64 / elapsed;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        record(
            &format!("seed stand-in, {settle}, {SERVERS} servers: steps/s"),
            per_second,
            "steps/s",
            Better::Higher,
        );
        println!(
            "| {label}, {settle} | {SERVERS} | {steps} | {} | {} | {} | - | all its processes: {} ms per step | - |",
            cell(per_second, 1),
            cell(per_second / cores, 1),
            cell(median, 0),
            cell(cpu_ms / steps.max(1) as f64, 1),
        );
        drop(servers);
    }
    Ok(())
}
