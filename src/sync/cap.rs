//! The optional cap on pending timers (`max_pending`): one shared count of places.
//!
//! A lane takes a place when it admits a timer, and the schedule is refused with `Full` when
//! none is left. A place is released when the engine is done with the timer: when its callback
//! begins (so that a callback can schedule its successor at the cap); when it is handed back at shutdown or taken back by a schedule that raced
//! shutdown; or, once cancelled, when its shard drops its entry (on taking it off a queue if it
//! was cancelled while queued, on taking its unlink request if it was linked). A repeating
//! timer holds one place for its whole life. So the cap bounds the engine's timer memory even
//! while a shard or the callback pool is stalled. Engines without a cap have no count.

use super::{AtomicUsize, Ordering};

/// Counts timers pending against a limit. Only engines built with a cap have one, so engines
/// without a cap pay nothing for it.
pub(crate) struct Cap {
    limit: usize,
    used: AtomicUsize,
}

impl Cap {
    pub(crate) fn new(limit: usize) -> Self {
        Cap {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// Takes one place; false if the cap is reached.
    pub(crate) fn try_take(&self) -> bool {
        // Relaxed: the count orders nothing else; the RMW alone keeps it exact.
        let before = self.used.fetch_add(1, Ordering::Relaxed);
        if before >= self.limit {
            self.used.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Whether a place is free now (without taking it).
    pub(crate) fn has_room(&self) -> bool {
        self.used() < self.limit
    }

    /// How many places are taken.
    pub(crate) fn used(&self) -> usize {
        // Relaxed: a reading for the caller, ordered with nothing else.
        self.used.load(Ordering::Relaxed)
    }

    /// Releases `n` places (timers the engine is done with).
    pub(crate) fn release(&self, n: usize) {
        if n > 0 {
            // Relaxed: as above.
            self.used.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn takes_up_to_the_limit_and_frees_places_again() {
        let cap = Cap::new(2);
        assert!(cap.try_take());
        assert!(cap.try_take());
        assert!(!cap.try_take());
        cap.release(1);
        assert!(cap.try_take());
        assert!(!cap.try_take());
    }
}
