//! A host: one CDP connection to one Chromium (a process of ours, or a remote browser), on which
//! episodes open their private browser contexts. An episode's context is as private as a fresh
//! profile (cookies, storage, cache, service workers, permissions, HTTP auth), and opening one
//! takes milliseconds where launching a browser takes a second, so a host serves many episodes:
//! those of one session (`BROWSER_ISOLATION=process`) or of every session
//! (`BROWSER_ISOLATION=context`), until it has served `BROWSER_EPISODES_PER_BROWSER` of them or
//! it is gone.

use std::sync::atomic::{AtomicU32, AtomicUsize};

use crate::chromium::launch::process;
use crate::chromium::*;

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
pub(in crate::chromium) enum Endpoint {
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

pub(in crate::chromium) struct Host {
    pub(in crate::chromium) cdp: CdpBrowser,
    /// Set when the CDP connection ends (the browser died or the remote went away).
    pub(in crate::chromium) disconnected: Arc<AtomicBool>,
    /// Contexts opened on this host so far: the episodes it has served.
    opened: AtomicU32,
    /// Contexts created on this host and not yet disposed (`OwnedContext`).
    held: AtomicUsize,
    /// Episodes of more than one session open here (`BROWSER_ISOLATION=context`).
    pub(in crate::chromium) shared: AtomicBool,
    /// The episode whose archive work answers this browser's intercepted requests
    /// (`archive.rs`); 0: none.
    pub(in crate::chromium) interception: std::sync::atomic::AtomicU64,
    /// Held while an episode uses the browser's one clipboard (a paste, a cut: `clipboard.rs`).
    pub(in crate::chromium) clipboard: tokio::sync::Mutex<()>,
    /// The CDP connection's handler; ends with the host.
    _handler: Tasks,
    // Declared last: dropped after the CDP connection, a local process is killed and its profile
    // removed.
    endpoint: Endpoint,
}

impl Host {
    pub(in crate::chromium) async fn connect(
        endpoint: Endpoint,
        ignore_https_errors: bool,
    ) -> anyhow::Result<Arc<Host>> {
        let config = HandlerConfig {
            // We set the viewport ourselves: chromiumoxide's emulation also turns on touch emulation.
            viewport: None,
            request_timeout: CDP_COMMAND_TIMEOUT,
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
            held: AtomicUsize::new(0),
            shared: AtomicBool::new(false),
            interception: std::sync::atomic::AtomicU64::new(0),
            clipboard: tokio::sync::Mutex::new(()),
            _handler: handler,
            endpoint,
        }))
    }

    pub(in crate::chromium) fn is_alive(&self) -> bool {
        !self.disconnected.load(Ordering::SeqCst)
    }

    /// Whether another episode may open here: the connection stands and the host has served
    /// fewer than `limit` episodes (a long-lived browser accumulates memory and state of its own).
    pub(in crate::chromium) fn has_room(&self, limit: u32) -> bool {
        self.is_alive() && self.opened.load(Ordering::SeqCst) < limit
    }

    /// Count one more episode on this host.
    pub(in crate::chromium) fn count_episode(&self) {
        self.opened.fetch_add(1, Ordering::SeqCst);
    }

    /// Contexts created on this host and not yet disposed: the server's own count.
    pub(in crate::chromium) fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// The contexts on this browser as Chromium reports them (`Target.getBrowserContexts`: those
    /// created by `Target.createBrowserContext`, on a remote by any connection).
    pub(in crate::chromium) async fn browser_contexts(&self) -> anyhow::Result<Vec<String>> {
        let reply = self
            .cdp
            .execute(GetBrowserContextsParams::default())
            .await
            .context("cannot list the browser contexts")?;
        Ok(reply
            .result
            .browser_context_ids
            .iter()
            .map(|id| id.inner().clone())
            .collect())
    }

    /// A new browser context, owned by the caller: disposed when dropped (`OwnedContext`).
    ///
    /// The command runs in a task of its own, which the caller's cancellation does not stop: a
    /// reset dropped while `Target.createBrowserContext` is on its way (its client went away, its
    /// time ran out) would otherwise never learn the id of a context Chromium then creates, and
    /// the context would stay on the browser, with whatever it loads, until the browser goes. The
    /// task ends when Chromium answers (within `CDP_COMMAND_TIMEOUT`); a context nobody waits for
    /// any more is dropped there, and so disposed.
    pub(in crate::chromium) async fn create_context(
        self: &Arc<Self>,
        params: CreateBrowserContextParams,
    ) -> anyhow::Result<OwnedContext> {
        let host = self.clone();
        let creating = tokio::spawn(async move {
            let id = host.cdp.create_browser_context(params).await?;
            host.held.fetch_add(1, Ordering::SeqCst);
            Ok::<_, CdpError>(OwnedContext {
                host,
                id,
                disposed: false,
            })
        });
        Ok(creating.await.context("the context's creation ended")??)
    }

    /// Dispose a context of this host's, within `DISPOSE_TIMEOUT`.
    async fn dispose_context(&self, id: BrowserContextId) {
        // Counted off however this ends (a disposal dropped half-way went out all the same).
        let _counted = Uncount(&self.held);
        let dispose = self.cdp.dispose_browser_context(id);
        match tokio::time::timeout(DISPOSE_TIMEOUT, dispose).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!("cannot dispose the browser context: {err}"),
            Err(_) => tracing::warn!("the browser context was not disposed in time"),
        }
    }

    /// A browser this server launched for one session's episodes alone: what DevTools does
    /// browser-wide (an archive's request interception) touches no one else.
    pub(in crate::chromium) fn is_private(&self) -> bool {
        matches!(self.endpoint, Endpoint::Local(_)) && !self.shared.load(Ordering::SeqCst)
    }

    /// The browser's process id, when we launched it.
    pub(in crate::chromium) fn pid(&self) -> Option<u32> {
        match &self.endpoint {
            Endpoint::Local(process) => Some(process.pid()),
            Endpoint::Remote(_) => None,
        }
    }

    /// Why a renderer of this browser was killed for its memory, once.
    pub(in crate::chromium) fn take_memory_kill(&self) -> Option<String> {
        match &self.endpoint {
            Endpoint::Local(process) => process.take_memory_kill(),
            Endpoint::Remote(_) => None,
        }
    }
}

/// Takes one off a count when dropped.
struct Uncount<'a>(&'a AtomicUsize);

impl Drop for Uncount<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A browser context on a host, disposed when dropped unless `dispose` did so: whoever holds it
/// (an episode being opened, an open episode, a creation nobody waits for any more) leaves
/// nothing behind on a browser that goes on serving others, however it is dropped: a reset
/// cancelled half-way, a session dropped without `close`, a spare or successor nobody took.
pub(in crate::chromium) struct OwnedContext {
    host: Arc<Host>,
    id: BrowserContextId,
    /// Disposed already (or on its way): nothing is left to do when dropped.
    disposed: bool,
}

impl OwnedContext {
    pub(in crate::chromium) fn id(&self) -> &BrowserContextId {
        &self.id
    }

    /// Dispose the context now (its tabs, cookies, storage, cache, service workers).
    pub(in crate::chromium) async fn dispose(&mut self) {
        if !std::mem::replace(&mut self.disposed, true) {
            self.host.dispose_context(self.id.clone()).await;
        }
    }
}

impl Drop for OwnedContext {
    fn drop(&mut self) {
        if std::mem::replace(&mut self.disposed, true) {
            return;
        }
        // A host nobody else holds closes as this is dropped, its contexts with it (our process
        // killed, or our connection to a remote ended: the contexts are `dispose_on_detach`);
        // a browser that is gone has none left. So does a runtime that is gone.
        let closing = Arc::strong_count(&self.host) == 1 || !self.host.is_alive();
        match tokio::runtime::Handle::try_current() {
            // Drop cannot wait: the disposal is a task of its own, holding the host until it ends.
            Ok(runtime) if !closing => {
                let (host, id) = (self.host.clone(), self.id.clone());
                runtime.spawn(async move { host.dispose_context(id).await });
            }
            _ => {
                self.host.held.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}
