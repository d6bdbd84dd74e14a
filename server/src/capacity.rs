//! How many sessions may be live at once (`max_sessions`, OpenEnv's `max_concurrent_envs`). Every
//! kind of session (WebSocket, the shared HTTP one, MCP) takes a slot here, and a refusal is
//! described here once; each transport only says it in its own way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use browserenv::protocol::{ErrorCode, ErrorFrame};

/// Counts live sessions against `max_sessions`.
pub struct Capacity {
    active: AtomicUsize,
    max: usize,
}

/// A held session slot; dropping it frees the slot.
pub struct Slot(Arc<Capacity>);

/// No slot was free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtCapacity {
    pub active: usize,
    pub max: usize,
}

impl Capacity {
    pub fn new(max: usize) -> Self {
        Capacity {
            active: AtomicUsize::new(0),
            max,
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
            })
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
    }
}

impl AtCapacity {
    /// The refusal as the wire says it (docs/wire.md §2.3): `CAPACITY_REACHED` with the counts.
    pub fn frame(&self) -> ErrorFrame {
        ErrorFrame::new(ErrorCode::CapacityReached, "Server at capacity")
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
        assert_eq!(refused, AtCapacity { active: 1, max: 1 });
        assert_eq!(refused.frame().extra["max_sessions"], json!(1));
        drop(slot);
        assert_eq!(capacity.active(), 0);
        assert!(capacity.try_acquire().is_ok());
    }
}
