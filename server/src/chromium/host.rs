//! A host: one CDP connection to one Chromium (a process of ours, or a remote browser), on which
//! episodes open their private browser contexts. An episode's context is as private as a fresh
//! profile (cookies, storage, cache, service workers, permissions, HTTP auth), and opening one
//! takes milliseconds where launching a browser takes a second, so a host serves many episodes:
//! those of one session (`BROWSER_ISOLATION=process`) or of every session
//! (`BROWSER_ISOLATION=context`), until it has served `BROWSER_EPISODES_PER_BROWSER` of them or
//! it is gone.

use std::sync::atomic::AtomicU32;

use super::*;

/// How sessions are kept apart from each other (`BROWSER_ISOLATION`). Episodes are always kept
/// apart by a context of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Isolation {
    /// Each session has a Chromium of its own: a crash or a memory-hungry page in one session
    /// never touches another.
    #[default]
    Process,
    /// Sessions are contexts of one shared Chromium: about a third of the memory per session, at
    /// the price of a shared browser process (a browser crash ends every session on it).
    Context,
}

/// Where a host's browser lives, and what closing it means.
pub(super) enum Endpoint {
    /// Our own process: closing kills it and removes its profile.
    Local(process::ChromiumProcess),
    /// A remote Chromium: closing drops our connection, the browser stays.
    Remote(String),
}

impl Endpoint {
    fn websocket_url(&self) -> &str {
        match self {
            Endpoint::Local(process) => &process.websocket_url,
            Endpoint::Remote(url) => url,
        }
    }
}

pub(super) struct Host {
    pub(super) cdp: CdpBrowser,
    /// Set when the CDP connection ends (the browser died or the remote went away).
    pub(super) disconnected: Arc<AtomicBool>,
    /// Contexts opened on this host so far: the episodes it has served.
    opened: AtomicU32,
    /// The CDP connection's handler; ends with the host.
    _handler: Tasks,
    // Declared last: dropped after the CDP connection, a local process is killed and its profile
    // removed.
    endpoint: Endpoint,
}

impl Host {
    pub(super) async fn connect(
        endpoint: Endpoint,
        ignore_https_errors: bool,
    ) -> anyhow::Result<Arc<Host>> {
        let config = HandlerConfig {
            // We set the viewport ourselves: chromiumoxide's emulation also turns on touch emulation.
            viewport: None,
            request_timeout: Duration::from_secs(30),
            // chromiumoxide's default tells every page to ignore certificate errors.
            ignore_https_errors,
            ..HandlerConfig::default()
        };
        let (cdp, mut handler) = CdpBrowser::connect_with_config(endpoint.websocket_url(), config)
            .await
            .context("cannot connect to chromium's DevTools endpoint")?;
        let disconnected = Arc::new(AtomicBool::new(false));
        let gone = disconnected.clone();
        // From here on, failing (or being cancelled by the launch timeout) drops the handler,
        // which closes the CDP socket: nothing is left connected.
        let handler = Tasks(vec![tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                match event {
                    // The socket is gone (the browser died): stop, so pending commands fail now
                    // instead of at their timeout.
                    Err(CdpError::Ws(err)) => {
                        tracing::debug!("cdp connection lost: {err}");
                        break;
                    }
                    // Single messages chromiumoxide could not decode (Chromium 156 renamed a
                    // Network field); the connection goes on.
                    Err(err) => tracing::trace!("cdp handler: {err}"),
                    Ok(()) => {}
                }
            }
            gone.store(true, Ordering::SeqCst);
        })]);
        Ok(Arc::new(Host {
            cdp,
            disconnected,
            opened: AtomicU32::new(0),
            _handler: handler,
            endpoint,
        }))
    }

    pub(super) fn is_alive(&self) -> bool {
        !self.disconnected.load(Ordering::SeqCst)
    }

    /// Whether another episode may open here: the connection stands and the host has served
    /// fewer than `limit` episodes (a long-lived browser accumulates memory and state of its own).
    pub(super) fn has_room(&self, limit: u32) -> bool {
        self.is_alive() && self.opened.load(Ordering::SeqCst) < limit
    }

    /// Count one more episode on this host.
    pub(super) fn count_episode(&self) {
        self.opened.fetch_add(1, Ordering::SeqCst);
    }

    /// The browser's process id, when we launched it.
    pub(super) fn pid(&self) -> Option<u32> {
        match &self.endpoint {
            Endpoint::Local(process) => Some(process.pid()),
            Endpoint::Remote(_) => None,
        }
    }

    /// Why a renderer of this browser was killed for its memory, once.
    pub(super) fn take_memory_kill(&self) -> Option<String> {
        match &self.endpoint {
            Endpoint::Local(process) => process.take_memory_kill(),
            Endpoint::Remote(_) => None,
        }
    }
}
