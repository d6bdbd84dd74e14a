//! How many sessions may be live at once (`max_sessions`, OpenEnv's `max_concurrent_envs`). Every
//! kind of session (WebSocket, the shared HTTP one, MCP) takes a slot here, and a refusal is
//! described here once (also the refusal of a draining server, `drain.rs`); each transport only
//! says it in its own way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tokio::sync::Notify;

use browserenv::protocol::{ErrorCode, ErrorFrame};

/// Counts live sessions against `max_sessions`.
pub struct Capacity {
    active: AtomicUsize,
    max: usize,
    /// Told whenever a slot is given back (a draining server waits for the last one).
    freed: Notify,
}

/// A held session slot; dropping it frees the slot.
pub struct Slot(Arc<Capacity>);

/// No slot was free, or the server is draining and takes no new session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtCapacity {
    pub active: usize,
    pub max: usize,
    pub draining: bool,
}

impl Capacity {
    pub fn new(max: usize) -> Self {
        Capacity {
            active: AtomicUsize::new(0),
            max,
            freed: Notify::new(),
        }
    }

    pub fn try_acquire(self: &Arc<Self>) -> Result<Slot, AtCapacity> {
        self.active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max).then_some(n + 1)
            })
            .map(|_| Slot(self.clone()))
            .map_err(|active| AtCapacity {
                active,
                max: self.max,
                draining: false,
            })
    }

    /// The refusal of a server that is draining, with the counts as they are.
    pub fn draining(&self) -> AtCapacity {
        AtCapacity {
            active: self.active(),
            max: self.max,
            draining: true,
        }
    }

    /// Resolves once no slot is held.
    pub async fn all_free(&self) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Registered before the count is read, so a slot given back in between is not missed.
            freed.as_mut().enable();
            if self.active() == 0 {
                return;
            }
            freed.await;
        }
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    pub fn max(&self) -> usize {
        self.max
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        self.0.freed.notify_waiters();
    }
}

impl AtCapacity {
    /// The refusal as the wire says it (docs/wire.md §2.3): `CAPACITY_REACHED` with the counts;
    /// a draining server says so, with `reason: "DRAINING"`, so a client knows that connecting
    /// again (through a balancer) reaches another replica.
    pub fn frame(&self) -> ErrorFrame {
        let frame = if self.draining {
            ErrorFrame::new(
                ErrorCode::CapacityReached,
                crate::operations::drain::DRAINING_MESSAGE,
            )
            .with_extra("reason", json!("DRAINING"))
        } else {
            ErrorFrame::new(ErrorCode::CapacityReached, "Server at capacity")
        };
        frame
            .with_extra("active_sessions", json!(self.active))
            .with_extra("max_sessions", json!(self.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_given_back_when_dropped() {
        let capacity = Arc::new(Capacity::new(1));
        let slot = capacity.try_acquire().unwrap();
        let refused = capacity.try_acquire().err().unwrap();
        assert_eq!(
            refused,
            AtCapacity {
                active: 1,
                max: 1,
                draining: false
            }
        );
        assert_eq!(refused.frame().extra["max_sessions"], json!(1));
        assert!(refused.frame().extra.get("reason").is_none());
        drop(slot);
        assert_eq!(capacity.active(), 0);
        assert!(capacity.try_acquire().is_ok());
    }

    #[tokio::test]
    async fn a_drain_waits_for_the_last_slot() {
        let capacity = Arc::new(Capacity::new(2));
        let (a, b) = (
            capacity.try_acquire().unwrap(),
            capacity.try_acquire().unwrap(),
        );
        let waiting = tokio::spawn({
            let capacity = capacity.clone();
            async move { capacity.all_free().await }
        });
        drop(a);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one slot is still held");
        drop(b);
        waiting.await.unwrap();
        let refusal = capacity.draining().frame();
        assert_eq!(refusal.extra["reason"], json!("DRAINING"));
        assert!(refusal.message.contains("draining"));
    }
}
