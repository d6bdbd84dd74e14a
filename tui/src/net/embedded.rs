//! The embedded mode: a server in this process on a free loopback port, plus the bundled offline
//! demo site on a listener of its own (pages in the browser are untrusted; they never share the
//! API's listener).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use browserenv_collect::tasks::TaskSet;
use browserenv_server::chromium::{clean_leftovers, ChromiumConfig, ChromiumLauncher};
use browserenv_server::environment::TaskCatalog;
use browserenv_server::site::{serve_dir, SiteHandle};
use browserenv_server::{start, ServerConfig, ServerHandle};

pub struct Embedded {
    pub server: ServerHandle,
    pub site: SiteHandle,
}

/// The demo site: `--site`, else `assets/site` of this source tree, else `./assets/site`.
pub fn default_site_dir() -> PathBuf {
    let built_in = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/site");
    if built_in.is_dir() {
        built_in
    } else {
        PathBuf::from("assets/site")
    }
}

pub async fn start_embedded(
    site_dir: PathBuf,
    chromium: PathBuf,
    mut config: ServerConfig,
    tasks: Option<TaskSet>,
) -> anyhow::Result<Embedded> {
    if !site_dir.join("index.html").is_file() {
        anyhow::bail!(
            "the demo site is not at {} (pass --site DIR or --start-url URL)",
            site_dir.display()
        );
    }
    if !chromium.exists() {
        anyhow::bail!(
            "Chromium not found at {} (install it: `sudo apt-get install chromium-headless-shell`, or pass --chromium PATH)",
            chromium.display()
        );
    }
    let chromium = ChromiumConfig {
        executable: chromium,
        ..ChromiumConfig::default()
    };
    // Profiles an earlier UI could not remove in time (or a killed one left).
    let root = chromium.profile_root.clone();
    let _ = tokio::task::spawn_blocking(move || clean_leftovers(&root)).await;
    let launcher = ChromiumLauncher::new(chromium);
    // The site first: the tasks' relative start URLs resolve against it.
    let site = serve_dir(site_dir)
        .await
        .context("cannot serve the demo site")?;
    if let Some(tasks) = tasks {
        config.tasks = Some(std::sync::Arc::new(TaskCatalog {
            tasks,
            base_url: url::Url::parse(&site.url("")).ok(),
            folder: None,
        }));
    }
    let server = start(launcher, config)
        .await
        .context("cannot start the embedded server")?;
    tracing::info!(
        "embedded server at {} (a token of its own), demo site at {}",
        server.base_url(),
        site.url("")
    );
    Ok(Embedded { server, site })
}

/// The embedded server listens on loopback, where every local program and every web page the
/// person's browser (or ours) opens can reach it: a random token keeps them out of the session.
pub fn embedded_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The embedded server ends within the UI's one-second promise, also on a loaded machine: its
/// browsers are killed at once (nothing of theirs needs saving), then its sessions end and the
/// profiles are removed, each bounded. A profile left behind is removed by the next start.
pub async fn stop_embedded(embedded: Embedded) {
    use browserenv_server::chromium;
    let started = std::time::Instant::now();
    chromium::kill_all();
    if tokio::time::timeout(Duration::from_millis(300), embedded.server.stop())
        .await
        .is_err()
    {
        tracing::warn!("the embedded server did not stop within 300 ms");
    }
    let left = Duration::from_millis(700).saturating_sub(started.elapsed());
    // A thread of its own, not the blocking pool: the runtime would wait for it at exit.
    let (done, cleaned) = tokio::sync::oneshot::channel();
    let _ = std::thread::Builder::new()
        .name("profile-cleanup".into())
        .spawn(move || {
            chromium::shutdown_all();
            let _ = done.send(());
        });
    if tokio::time::timeout(left, cleaned).await.is_err() {
        tracing::warn!("browser profiles not all removed in time; the next start removes them");
    }
}
