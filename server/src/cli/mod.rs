//! `browserenv-server`'s command line: its flags (`flags`; every setting also reads the
//! environment variable of the seed's name, so the same image runs under Docker, HF Sandbox and
//! plain shells), their check into the server's config (`config`), and running it: bind, announce,
//! serve until a signal.

use std::time::Duration;

use anyhow::Context;

use crate::chromium::{self, ChromiumLauncher};
use crate::environment::TaskCatalog;
use crate::operations::drain::Stop;

mod config;
mod flags;

pub use flags::{CampaignCommand, Cli, Command, Mode};

/// `browserenv-server campaign ...`: the people file of a campaign's folder.
fn campaign_command(action: &CampaignCommand) -> anyhow::Result<()> {
    use browserenv_collect::campaign::{People, CONFIG_FILE};
    let dir = match action {
        CampaignCommand::AddPerson { dir, .. }
        | CampaignCommand::RemovePerson { dir, .. }
        | CampaignCommand::People { dir } => dir,
    };
    // A typo must not start a people folder somewhere else.
    anyhow::ensure!(
        dir.join(CONFIG_FILE).is_file(),
        "{} is not a campaign's folder (it has no {CONFIG_FILE})",
        dir.display()
    );
    match action {
        CampaignCommand::AddPerson { name, .. } => {
            let (name, token) = People::add(dir, name).map_err(anyhow::Error::msg)?;
            eprintln!(
                "{name}'s token (shown this once: give it to {name} alone; browserenv-tui \
                 collect --server URL --token TOKEN):"
            );
            println!("{token}");
        }
        CampaignCommand::RemovePerson { name, .. } => {
            let name = People::remove(dir, name).map_err(anyhow::Error::msg)?;
            eprintln!("{name} is removed: their token is refused from now on");
        }
        CampaignCommand::People { .. } => {
            for name in People::load(dir).map_err(anyhow::Error::msg)?.names() {
                println!("{name}");
            }
        }
    }
    Ok(())
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// SIGTERM or Ctrl-C asks the server to drain (`drain.rs`); a second one to stop now. The
/// handlers are installed when this is called, not later: a launcher may send SIGTERM right after
/// the address line appears.
fn stop_requests() -> anyhow::Result<crate::StopRequests> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let (asked, requests) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        for request in [Stop::Drain, Stop::Now] {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            tracing::info!(
                "{}",
                match request {
                    Stop::Drain => "shutting down (a second signal stops at once)",
                    Stop::Now => "stopping now (a third signal exits without closing the browsers)",
                }
            );
            // The server may be gone already; a third signal must still be heard.
            let _ = asked.send(Some(request));
        }
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        // The browsers die with the server (their parent-death signal); the next start removes
        // their profiles.
        tracing::warn!("exiting at once");
        std::process::exit(1);
    });
    Ok(requests)
}

/// The address line comes first: scripts and tests read it to find the server.
fn announce(address: &str, site: Option<&crate::site::SiteHandle>) {
    println!("browserenv-server listening on {address}");
    if let Some(site) = site {
        println!("static pages at {}", site.url(""));
    }
}

/// Bind, announce the address on stdout (one line, for scripts and tests), serve until a signal.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(Command::Campaign { action }) = &cli.command {
        return campaign_command(action);
    }
    let config = cli.server_config().map_err(anyhow::Error::msg)?;
    let listens = cli.mode == Mode::Serve;
    if listens
        && config.token.is_none()
        && cli.unix_dir.is_none()
        && !cli.insecure
        && !is_loopback(&cli.host)
    {
        anyhow::bail!(
            "refusing to serve {} without a token: pages and sessions would be open to the network. \
             Set BROWSER_API_TOKEN (or --token), or pass --insecure",
            cli.host
        );
    }
    let sandbox = crate::chromium::launch::sandbox::for_this_process(cli.sandbox)
        .map_err(anyhow::Error::msg)?;
    let chromium_config = cli.chromium_config(sandbox.enabled);
    if chromium_config.remote.is_none() {
        if sandbox.enabled {
            tracing::info!("Chromium runs in its sandbox ({})", sandbox.reason);
        } else {
            tracing::warn!(
                "Chromium runs without its sandbox (--no-sandbox): {}",
                sandbox.reason
            );
        }
    }
    if cli.block_private_networks && chromium_config.remote.is_some() {
        anyhow::bail!(
            "BROWSER_BLOCK_PRIVATE_NETWORKS needs browsers of our own: a --browser-url browser's connections do not pass through this server"
        );
    }
    if let Some(url) = &chromium_config.remote {
        // The URL may carry a pool's token: it is shown as `token=***` everywhere.
        let shown = chromium::redacted_url(url);
        let version = chromium::remote_version(url, chromium_config.launch_timeout)
            .await
            .with_context(|| format!("--browser-url {shown}"))?;
        tracing::info!("sessions run on the remote browser at {shown} ({version})");
    } else if !chromium_config.executable.exists() {
        anyhow::bail!(
            "Chromium not found at {} (install it: `sudo apt-get install chromium-headless-shell`, or pass --chromium PATH)",
            chromium_config.executable.display()
        );
    }
    let cleaned = chromium::clean_leftovers(&chromium_config.profile_root);
    if cleaned > 0 {
        tracing::info!("removed {cleaned} browser profiles left by a server that was killed");
    }
    if chromium_config.ignore_https_errors {
        tracing::warn!(
            "BROWSER_IGNORE_HTTPS_ERRORS: pages with invalid certificates load as if they were \
             fine; an agent may type into a site pretending to be another"
        );
    }
    let mut chromium_config = chromium_config;
    let stop = stop_requests()?;
    let site = match &cli.site {
        Some(dir) => Some(
            crate::site::serve_dir(dir)
                .await
                .with_context(|| format!("cannot serve {}", dir.display()))?,
        ),
        None => None,
    };
    let miniwob = match &cli.miniwob {
        Some(dir) => {
            let miniwob = crate::miniwob::MiniWob::serve(dir)
                .await
                .map_err(anyhow::Error::msg)?;
            tracing::info!(
                "{} MiniWoB++ tasks from {} (pages at http://{})",
                miniwob.tasks().len(),
                dir.display(),
                miniwob.address()
            );
            Some(std::sync::Arc::new(miniwob))
        }
        None => None,
    };
    let task_base = match (&cli.task_base_url, &site) {
        (Some(base), _) => {
            Some(url::Url::parse(base).with_context(|| format!("--task-base-url {base}"))?)
        }
        (None, Some(site)) => url::Url::parse(&site.url("")).ok(),
        (None, None) => None,
    };
    if cli.block_private_networks {
        // The configured site (and the tasks' base) stay reachable, though they are on loopback.
        let mut allowed = cli.private_network_allow.clone();
        let own = [
            site.as_ref().and_then(|s| url::Url::parse(&s.url("")).ok()),
            task_base.clone(),
        ];
        for url in own.into_iter().flatten() {
            if let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) {
                allowed.push(format!("{host}:{port}"));
            }
        }
        if let Some(miniwob) = &miniwob {
            allowed.push(miniwob.address().to_string());
        }
        let policy = crate::chromium::intercept::egress::EgressPolicy::new(&allowed)
            .await
            .map_err(|err| anyhow::anyhow!("BROWSER_PRIVATE_NETWORK_ALLOW: {err}"))?;
        tracing::info!(
            "private networks are refused to the browsers (allowed: {})",
            if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            }
        );
        chromium_config.egress = Some(std::sync::Arc::new(policy));
    }
    let launcher = ChromiumLauncher::new(chromium_config);
    let mut config = config;
    config.miniwob = miniwob;
    // A campaign's tasks are the file its campaign.json names: sessions reset them by id.
    let task_file = match (&cli.tasks, &cli.campaign) {
        (Some(_), Some(_)) => anyhow::bail!(
            "--tasks and --campaign: a campaign's tasks are the file its campaign.json names"
        ),
        (Some(path), None) => Some(path.clone()),
        (None, Some(dir)) => Some(
            browserenv_collect::campaign::CampaignConfig::load(dir)
                .map_err(anyhow::Error::msg)?
                .task_file(dir),
        ),
        (None, None) => None,
    };
    if let Some(path) = &task_file {
        let catalog = TaskCatalog::load(path, task_base).map_err(anyhow::Error::msg)?;
        tracing::info!(
            "{} tasks from {}",
            catalog.tasks.tasks.len(),
            path.display()
        );
        config.tasks = Some(std::sync::Arc::new(catalog));
    }
    let result = match &cli.unix_dir {
        // stdout is the MCP channel: nothing else may be written there.
        _ if !listens => {
            if let Some(site) = &site {
                tracing::info!("static pages at {}", site.url(""));
            }
            let mut stop = stop;
            let signalled = async move {
                let _ = stop.wait_for(Option::is_some).await;
            };
            crate::serve_mcp_stdio(launcher, config, signalled).await
        }
        Some(dir) => {
            // Only what can open the socket file reaches the server (the HF Sandbox proxy): the
            // Host check is off, and the token is what it is.
            tracing::info!(
                "listening on a Unix socket: Host is not checked; {}",
                if config.token.is_some() {
                    "every route but /health and /ready needs the token"
                } else {
                    "no token (BROWSER_API_TOKEN): whoever can open the socket drives the server"
                }
            );
            let path = dir.join(format!("{}.sock", cli.port));
            let _ = std::fs::remove_file(&path);
            let listener = tokio::net::UnixListener::bind(&path)
                .with_context(|| format!("cannot listen on {}", path.display()))?;
            announce(&format!("unix:{}", path.display()), site.as_ref());
            crate::serve(listener, launcher, config, stop).await
        }
        None => {
            let listener = tokio::net::TcpListener::bind((cli.host.as_str(), cli.port))
                .await
                .with_context(|| format!("cannot listen on {}:{}", cli.host, cli.port))?;
            let address = listener.local_addr()?;
            announce(&format!("http://{address}"), site.as_ref());
            let mut config = config;
            config.settings.server_port = Some(address.port());
            crate::serve(listener, launcher, config, stop).await
        }
    };
    // Whatever is still alive (a session mid-close, the spare) goes now.
    tokio::task::spawn_blocking(chromium::shutdown_all).await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    result
}
