//! The optional cap on pending timers (`max_pending`): a count of permits.
//!
//! A timer takes a permit at admission and holds it until the engine is done with it: when
//! its callback begins (a one-shot timer, so that the callback can schedule its successor at
//! the cap), when it is handed back, when its shard drops its cancelled entry, or when a
//! repeating timer stops. Every permit comes back through the drop of [`Permits`], and
//! nowhere else. So the cap bounds the engine's timer memory even while a shard or the
//! callback pool is stalled. Engines without a cap have no count and pay nothing.

use super::{AtomicUsize, Ordering};

/// Counts the permits timers hold against a limit.
pub(crate) struct Cap {
    limit: usize,
    used: AtomicUsize,
}

/// Permits of an engine's cap (none if it has no cap), given back when dropped unless a timer
/// [holds](Permits::hold) them.
#[must_use]
pub(crate) struct Permits<'a> {
    cap: Option<&'a Cap>,
    count: usize,
}

impl Cap {
    pub(crate) fn new(limit: usize) -> Self {
        Cap {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// Takes one permit; `None` if the cap is reached.
    fn take(&self) -> Option<Permits<'_>> {
        // Relaxed: the count orders nothing else; the RMW alone keeps it exact.
        let before = self.used.fetch_add(1, Ordering::Relaxed);
        let taken = Permits {
            cap: Some(self),
            count: 1,
        };
        if before >= self.limit {
            drop(taken);
            return None;
        }
        Some(taken)
    }

    /// Whether a permit is free now (without taking it).
    pub(crate) fn has_room(&self) -> bool {
        self.used() < self.limit
    }

    /// How many permits timers hold.
    pub(crate) fn used(&self) -> usize {
        // Relaxed: a reading for the caller, ordered with nothing else.
        self.used.load(Ordering::Relaxed)
    }
}

impl<'a> Permits<'a> {
    /// One permit of `cap` for a new timer: `None` if the cap is reached.
    pub(crate) fn take(cap: Option<&'a Cap>) -> Option<Self> {
        match cap {
            Some(cap) => cap.take(),
            None => Some(Permits {
                cap: None,
                count: 0,
            }),
        }
    }

    /// The permits `count` admitted timers hold, taken back: given back on drop, unless held
    /// again (a repeating timer's, re-armed).
    pub(crate) fn reclaim(cap: Option<&'a Cap>, count: usize) -> Self {
        Permits { cap, count }
    }

    /// Leaves the permits with the timers admitted, until `reclaim` takes them back.
    pub(crate) fn hold(self) {
        std::mem::forget(self);
    }
}

impl Drop for Permits<'_> {
    fn drop(&mut self) {
        if let (Some(cap), 1..) = (self.cap, self.count) {
            // Relaxed: as in `take`.
            cap.used.fetch_sub(self.count, Ordering::Relaxed);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn permits_are_taken_up_to_the_limit_and_come_back_on_drop() {
        let cap = Cap::new(2);
        let first = Permits::take(Some(&cap)).expect("room for one");
        Permits::take(Some(&cap)).expect("room for two").hold();
        assert!(Permits::take(Some(&cap)).is_none());
        assert_eq!(cap.used(), 2);
        drop(first);
        assert_eq!(cap.used(), 1);
        drop(Permits::reclaim(Some(&cap), 1));
        assert_eq!(cap.used(), 0);
    }
}
