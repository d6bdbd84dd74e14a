//! A warm spare browser: one browser is always being launched in the background (on a shared
//! Chromium, a context opened), so a `reset` takes it instead of paying the start-up cost on the
//! caller's clock.

use std::sync::Arc;

use tokio::sync::{Mutex, Notify};
use tokio::task::JoinHandle;

use crate::browser::{Browser, Launcher};

pub struct WarmPool<L: Launcher> {
    inner: Arc<L>,
    spare: Mutex<Option<Spare<L::Browser>>>,
    enabled: bool,
}

/// A spare's launch, held until `start`: until the browser just handed out has its first
/// picture, or until someone needs the spare, whichever comes first. On a small machine the
/// launch would otherwise take the CPU from the reset that used the last spare.
struct Spare<B> {
    launch: JoinHandle<anyhow::Result<B>>,
    start: Arc<Notify>,
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
                let first = self.spawn_spare();
                first.start.notify_one();
                *spare = Some(first);
            }
        }
    }

    fn spawn_spare(&self) -> Spare<L::Browser> {
        let inner = self.inner.clone();
        let start = Arc::new(Notify::new());
        let go = start.clone();
        let launch = tokio::spawn(async move {
            go.notified().await;
            inner.launch().await
        });
        Spare { launch, start }
    }

    /// Close the spare. A launch in progress is awaited, not aborted: an aborted task would leave
    /// a half-launched browser (and its profile) behind.
    pub async fn drain(&self) {
        let spare = self.spare.lock().await.take();
        if let Some(spare) = spare {
            spare.start.notify_one();
            if let Ok(Ok(browser)) = spare.launch.await {
                browser.close().await;
            }
        }
        self.inner.shutdown().await;
    }

    /// A spare from the pool, else a launch of the caller's own.
    async fn take(&self, taken: Option<Spare<L::Browser>>) -> anyhow::Result<L::Browser> {
        let Some(spare) = taken else {
            return self.inner.launch().await;
        };
        spare.start.notify_one();
        match spare.launch.await {
            Ok(Ok(browser)) if browser.is_alive() => Ok(browser),
            Ok(Ok(dead)) => {
                tracing::warn!("the warm spare browser lost its connection; launching directly");
                dead.close().await;
                self.inner.launch().await
            }
            // A spare that failed (or was cancelled) is not the caller's problem: try once more.
            Ok(Err(err)) => {
                tracing::warn!("warm spare browser failed: {err:#}; launching directly");
                self.inner.launch().await
            }
            Err(_) => self.inner.launch().await,
        }
    }
}

impl<L: Launcher> Launcher for WarmPool<L> {
    type Browser = L::Browser;

    async fn launch(&self) -> anyhow::Result<L::Browser> {
        if !self.enabled {
            return self.inner.launch().await;
        }
        let (taken, next) = {
            let mut spare = self.spare.lock().await;
            let taken = spare.take();
            let next = self.spawn_spare();
            let start = next.start.clone();
            *spare = Some(next);
            (taken, start)
        };
        let browser = self.take(taken).await;
        match &browser {
            Ok(browser) => {
                let pictured = browser.pictured();
                tokio::spawn(async move {
                    pictured.await;
                    next.notify_one();
                });
            }
            Err(_) => next.notify_one(),
        }
        browser
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
        let mut second = pool.launch().await.unwrap();
        second.screenshot().await.unwrap();
        // Two handed out, one spare in flight or ready.
        tokio::time::sleep(SETTLE).await;
        assert_eq!(pool.inner().launched(), 3);
        pool.drain().await;
    }

    /// Time for spawned launches to run (the fake's launch is immediate).
    const SETTLE: std::time::Duration = std::time::Duration::from_millis(20);

    #[tokio::test]
    async fn the_next_spare_waits_for_the_first_picture_or_for_a_taker() {
        let pool = WarmPool::new(FakeLauncher::new(FakeScript::default()), true);
        pool.warm_up().await;
        let mut first = pool.launch().await.unwrap();
        tokio::time::sleep(SETTLE).await;
        assert_eq!(
            pool.inner().launched(),
            1,
            "the next spare waits for a picture"
        );
        first.screenshot().await.unwrap();
        tokio::time::sleep(SETTLE).await;
        assert_eq!(pool.inner().launched(), 2, "the picture starts it");
        // The second browser shows nothing yet; a third reset does not wait for it.
        let _second = pool.launch().await.unwrap();
        tokio::time::sleep(SETTLE).await;
        assert_eq!(pool.inner().launched(), 2);
        let _third = pool.launch().await.unwrap();
        assert_eq!(pool.inner().launched(), 3, "a taker starts a waiting spare");
        pool.drain().await;
        assert_eq!(
            pool.inner().launched(),
            4,
            "drain starts and closes the last one"
        );
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
