//! `BENCH_ONLY=replicas`: the server as it is deployed. Twelve sessions stepping at once on one
//! replica and on three replicas of four behind the balancer (Debian's HAProxy with
//! `deploy/haproxy/haproxy.cfg`), what the balancer adds to one session's step, and the image's
//! cold start to its first observation (`deploy/docker/cold-start.py`, when Docker and the image
//! are there).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use browserenv::{BrowserAction, Client, ResetOptions};
use browserenv_server::chromium::ChromiumLauncher;
use browserenv_server::replicas::PeerEntry;
use browserenv_server::settings::EnvSettings;
use browserenv_server::site::{serve_dir, SiteHandle};
use browserenv_server::{start_on, ServerConfig, ServerHandle};
use browserenv_tests::{assets_dir, test_chromium, test_settings};

use crate::common::{scrolls, Series};

const SESSIONS: usize = 12;

/// The balancer as shipped, its server lines pointed at `ports` on loopback, listening on a
/// free loopback port of its own.
struct Balancer {
    process: Child,
    url: String,
    _config: tempfile_path::TempPath,
}

mod tempfile_path {
    /// A file removed when dropped.
    pub struct TempPath(pub std::path::PathBuf);
    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

impl Balancer {
    fn start(ports: &[u16]) -> anyhow::Result<Balancer> {
        let shipped = std::fs::read_to_string(assets_dir().join("../deploy/haproxy/haproxy.cfg"))?;
        let servers: String = ports
            .iter()
            .enumerate()
            .map(|(n, port)| format!("    server replica{n} 127.0.0.1:{port}\n"))
            .collect();
        let config = browserenv_tests::with_servers(&shipped, &servers)?;
        let path =
            std::env::temp_dir().join(format!("browserenv-bench-{}.cfg", std::process::id()));
        std::fs::write(&path, config)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let process = Command::new("haproxy")
            .args(["-db", "-f"])
            .arg(&path)
            .env("BALANCER_BIND", format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| anyhow::anyhow!("haproxy: {err} (install Debian's haproxy)"))?;
        Ok(Balancer {
            process,
            url: format!("http://127.0.0.1:{port}"),
            _config: tempfile_path::TempPath(path),
        })
    }

    /// Wait until the balancer sees every replica ready.
    async fn ready(&self, replicas: usize) -> anyhow::Result<()> {
        for _ in 0..200 {
            let listed = reqwest::get(format!("{}/replicas", self.url)).await;
            if let Ok(response) = listed {
                if let Ok(serde_json::Value::Array(all)) = response.json().await {
                    if all.iter().filter(|r| r["status"] == "ready").count() == replicas {
                        // One more check interval, so every replica is up in the balancer too.
                        tokio::time::sleep(Duration::from_millis(1500)).await;
                        return Ok(());
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        anyhow::bail!("the balancer never saw {replicas} ready replicas")
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// `count` replicas of `sessions` slots each that know each other, on real Chromium.
async fn replicas(count: usize, sessions: usize) -> anyhow::Result<Vec<ServerHandle>> {
    let mut listeners = Vec::new();
    for _ in 0..count {
        listeners.push(tokio::net::TcpListener::bind("127.0.0.1:0").await?);
    }
    let peers: Vec<PeerEntry> = listeners
        .iter()
        .map(|l| PeerEntry::parse(&format!("http://{}", l.local_addr().unwrap())))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    let settings = EnvSettings {
        max_steps: 200,
        ..test_settings()
    };
    listeners
        .into_iter()
        .map(|listener| {
            let config = ServerConfig {
                settings: settings.clone(),
                max_sessions: sessions,
                peers: if count > 1 { peers.clone() } else { Vec::new() },
                ..ServerConfig::default()
            };
            start_on(listener, ChromiumLauncher::new(test_chromium()), config)
        })
        .collect()
}

/// `SESSIONS` clients through `url`, each on the long test page.
async fn open(url: &str, pages: &SiteHandle) -> anyhow::Result<Vec<Client>> {
    let mut clients = Vec::new();
    for _ in 0..SESSIONS {
        let mut client = Client::connect(url).await?;
        client
            .reset(ResetOptions::new(pages.url("long.html")))
            .await?;
        clients.push(client);
    }
    Ok(clients)
}

/// Every client scrolls `rounds` times, all at once.
async fn all_at_once(clients: Vec<Client>, rounds: usize, name: &str) -> anyhow::Result<Series> {
    let mut tasks = Vec::new();
    for mut client in clients {
        tasks.push(tokio::spawn(async move {
            let series = scrolls(&mut client, rounds, "").await.map(|(s, _)| s);
            let _ = client.close().await;
            series
        }));
    }
    let mut together = Series::new(name);
    for task in tasks {
        together.millis.extend(task.await??.millis);
    }
    Ok(together)
}

pub async fn run(rounds: usize) -> anyhow::Result<()> {
    let pages = serve_dir(assets_dir().join("pages")).await?;
    println!("| measure | n | median ms | p95 ms | floor ms (raw CDP) | median / floor |");
    println!("|---|---|---|---|---|---|");

    // One session, straight to its replica and through the balancer.
    let single = replicas(1, SESSIONS).await?;
    let balancer = Balancer::start(&[single[0].addr.port()])?;
    balancer.ready(1).await?;
    let mut round_trips = Vec::new();
    for (name, url) in [
        (
            "step scroll, 1 session, straight to the replica",
            single[0].base_url(),
        ),
        (
            "step scroll, 1 session, through the balancer",
            balancer.url.clone(),
        ),
    ] {
        let mut client = Client::connect(&url).await?;
        client
            .reset(ResetOptions::new(pages.url("long.html")))
            .await?;
        // Warm up: the first steps of a page pay for its first frames.
        for _ in 0..3 {
            client.step(BrowserAction::scroll(100)).await?;
        }
        let (series, _) = scrolls(&mut client, rounds, name).await?;
        println!("{}", series.row());
        // The balancer's own part is below a step's millisecond: a `state` round trip (no
        // browser) shows it.
        let mut state = Series::new("");
        for _ in 0..rounds * 10 {
            let started = std::time::Instant::now();
            client.state().await?;
            state.add(started.elapsed());
        }
        round_trips.push(state.percentile(50.0));
        client.close().await?;
    }
    println!();
    println!(
        "The balancer adds {:.2} ms to a round trip (median `state` round trip, {} each: {:.2} ms \
         straight to the replica, {:.2} ms through the balancer).",
        round_trips[1] - round_trips[0],
        rounds * 10,
        round_trips[0],
        round_trips[1]
    );
    println!();
    println!("| measure | n | median ms | p95 ms | floor ms (raw CDP) | median / floor |");
    println!("|---|---|---|---|---|---|");

    // Twelve sessions at once: one replica of twelve, then three of four behind the balancer.
    let clients = open(&single[0].base_url(), &pages).await?;
    let one = all_at_once(
        clients,
        rounds,
        "step scroll, 12 sessions at once: 1 replica x 12",
    )
    .await?;
    println!("{}", one.row());
    drop(balancer);
    for server in single {
        server.stop().await?;
    }
    let three = replicas(3, SESSIONS / 3).await?;
    let ports: Vec<u16> = three.iter().map(|s| s.addr.port()).collect();
    let balancer = Balancer::start(&ports)?;
    balancer.ready(3).await?;
    let clients = open(&balancer.url, &pages).await?;
    let spread = all_at_once(
        clients,
        rounds,
        "step scroll, 12 sessions at once: 3 replicas x 4, through the balancer",
    )
    .await?;
    println!("{}", spread.row());
    drop(balancer);
    for server in three {
        server.stop().await?;
    }
    println!();
    cold_start()
}

/// The image's cold start, measured by the script the image tests share.
fn cold_start() -> anyhow::Result<()> {
    let script = assets_dir().join("../deploy/docker/cold-start.py");
    let python = assets_dir().join("../.venv/bin/python");
    let measured = Command::new(&python).arg(&script).output();
    match measured {
        Ok(output) if output.status.success() => {
            print!("{}", String::from_utf8_lossy(&output.stdout));
            Ok(())
        }
        Ok(output) => {
            println!(
                "Image cold start: not measured ({}).",
                String::from_utf8_lossy(&output.stderr)
                    .lines()
                    .last()
                    .unwrap_or("failed")
            );
            Ok(())
        }
        Err(err) => {
            println!(
                "Image cold start: not measured ({}: {err}).",
                python.display()
            );
            Ok(())
        }
    }
}
