//! A warm spare browser: one browser is always being launched in the background (on a shared
//! Chromium, a context opened), so a `reset` takes it instead of paying the start-up cost on the
//! caller's clock.

use std::sync::Arc;

use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::browser::{Browser, Launcher};

pub struct WarmPool<L: Launcher> {
    inner: Arc<L>,
    spare: Mutex<Option<JoinHandle<anyhow::Result<L::Browser>>>>,
    enabled: bool,
}

impl<L: Launcher> WarmPool<L> {
    /// With `enabled` false every launch is a cold launch (for measuring, or on tiny machines).
    pub fn new(inner: L, enabled: bool) -> Self {
        WarmPool {
            inner: Arc::new(inner),
            spare: Mutex::new(None),
            enabled,
        }
    }

    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// Start the first spare now instead of on the first reset.
    pub async fn warm_up(&self) {
        if self.enabled {
            let mut spare = self.spare.lock().await;
            if spare.is_none() {
                *spare = Some(self.spawn_spare());
            }
        }
    }

    fn spawn_spare(&self) -> JoinHandle<anyhow::Result<L::Browser>> {
        let inner = self.inner.clone();
        tokio::spawn(async move { inner.launch().await })
    }

    /// Close the spare. A launch in progress is awaited, not aborted: an aborted task would leave
    /// a half-launched browser (and its profile) behind.
    pub async fn drain(&self) {
        let spare = self.spare.lock().await.take();
        if let Some(handle) = spare {
            if let Ok(Ok(browser)) = handle.await {
                browser.close().await;
            }
        }
        self.inner.shutdown().await;
    }
}

impl<L: Launcher> Launcher for WarmPool<L> {
    type Browser = L::Browser;

    async fn launch(&self) -> anyhow::Result<L::Browser> {
        if !self.enabled {
            return self.inner.launch().await;
        }
        let taken = {
            let mut spare = self.spare.lock().await;
            let taken = spare.take();
            *spare = Some(self.spawn_spare());
            taken
        };
        match taken {
            Some(handle) => match handle.await {
                Ok(Ok(browser)) if browser.is_alive() => Ok(browser),
                Ok(Ok(dead)) => {
                    tracing::warn!(
                        "the warm spare browser lost its connection; launching directly"
                    );
                    dead.close().await;
                    self.inner.launch().await
                }
                // A spare that failed (or was cancelled) is not the caller's problem: try once more.
                Ok(Err(err)) => {
                    tracing::warn!("warm spare browser failed: {err:#}; launching directly");
                    self.inner.launch().await
                }
                Err(_) => self.inner.launch().await,
            },
            None => self.inner.launch().await,
        }
    }

    /// Renewing is the inner launcher's; when it cannot, the spare serves the next episode.
    async fn renew(&self, previous: L::Browser) -> Option<L::Browser> {
        self.inner.renew(previous).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeLauncher, FakeScript};

    #[tokio::test]
    async fn keeps_one_spare_ahead() {
        let pool = WarmPool::new(FakeLauncher::new(FakeScript::default()), true);
        pool.warm_up().await;
        let _first = pool.launch().await.unwrap();
        let _second = pool.launch().await.unwrap();
        tokio::task::yield_now().await;
        // Two handed out, one spare in flight or ready.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        assert_eq!(pool.inner().launched(), 3);
        pool.drain().await;
    }

    #[tokio::test]
    async fn a_spare_that_lost_its_browser_is_replaced() {
        let script = FakeScript {
            first_browser_dead: true,
            ..FakeScript::default()
        };
        let pool = WarmPool::new(FakeLauncher::new(script), true);
        pool.warm_up().await;
        let browser = pool.launch().await.unwrap();
        assert!(browser.is_alive());
        assert_eq!(pool.inner().calls(), vec!["close"]);
        pool.drain().await;
    }

    #[tokio::test]
    async fn disabled_pool_launches_on_demand() {
        let pool = WarmPool::new(FakeLauncher::new(FakeScript::default()), false);
        pool.warm_up().await;
        assert_eq!(pool.inner().launched(), 0);
        let _browser = pool.launch().await.unwrap();
        assert_eq!(pool.inner().launched(), 1);
    }
}
