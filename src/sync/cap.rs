//! The optional cap on pending timers (`max_pending`): one shared count of places.
//!
//! A lane takes a place when it admits a timer, and the schedule is refused with `Full` when
//! none is left. A place is released when the engine is done with the timer: when its callback
//! begins (so that a callback can schedule its successor at the cap); when it is handed back at shutdown or taken back by a schedule that raced
//! shutdown; or, once cancelled, when its shard drops its entry (on taking it off a queue if it
//! was cancelled while queued, on taking its unlink request if it was linked). A repeating
//! timer holds one place for its whole life. So the cap bounds the engine's timer memory even
//! while a shard or the callback pool is stalled. Engines without a cap have no count.
//!
//! A sleep refused a place waits for one: it leaves its waker here, and every release wakes
//! all the wakers left (they race for the places freed; the losers leave theirs again).

use std::task::Waker;

use super::{AtomicUsize, Mutex, Ordering};

/// Counts timers pending against a limit. Only engines built with a cap have one, so engines
/// without a cap pay nothing for it.
pub(crate) struct Cap {
    limit: usize,
    used: AtomicUsize,
    /// How many wakers `waiters` holds, read by every release.
    waiting: AtomicUsize,
    /// The tasks waiting for a place, each once.
    waiters: Mutex<Vec<Waker>>,
}

impl Cap {
    pub(crate) fn new(limit: usize) -> Self {
        Cap {
            limit,
            used: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            waiters: Mutex::new(Vec::new()),
        }
    }

    /// Leaves `waker` to be woken by the next release; returns whether a place is free now
    /// (then the caller tries again rather than wait).
    pub(crate) fn wait_for_room(&self, waker: &Waker) -> bool {
        {
            let mut waiters = self.waiters.lock();
            if !waiters.iter().any(|left| left.will_wake(waker)) {
                waiters.push(waker.clone());
            }
            // SeqCst: with the load below, and `release`'s two: either the release sees this
            // waker or this call sees the place it freed.
            self.waiting.store(waiters.len(), Ordering::SeqCst);
        }
        // SeqCst: as above.
        self.used.load(Ordering::SeqCst) < self.limit
    }

    /// Wakes every task waiting for a place (a place was freed, or the engine shut down).
    pub(crate) fn wake_waiters(&self) {
        let waiters = {
            let mut waiters = self.waiters.lock();
            // SeqCst: as in `wait_for_room`.
            self.waiting.store(0, Ordering::SeqCst);
            std::mem::take(&mut *waiters)
        };
        waiters.into_iter().for_each(Waker::wake);
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
            // SeqCst: see `wait_for_room`.
            self.used.fetch_sub(n, Ordering::SeqCst);
            // SeqCst: as above.
            if self.waiting.load(Ordering::SeqCst) > 0 {
                self.wake_waiters();
            }
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

    #[test]
    fn a_release_wakes_the_tasks_waiting_for_a_place() {
        use std::sync::atomic::AtomicUsize as Count;
        struct Counting(Count);
        impl std::task::Wake for Counting {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let cap = Cap::new(1);
        assert!(cap.try_take());
        let counter = std::sync::Arc::new(Counting(Count::new(0)));
        let waker = Waker::from(counter.clone());
        assert!(!cap.wait_for_room(&waker));
        assert!(!cap.wait_for_room(&waker), "left once");
        cap.release(1);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(cap.wait_for_room(&waker), "a place is free");
    }
}
