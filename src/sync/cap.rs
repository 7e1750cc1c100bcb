//! The optional cap on pending timers (`max_pending`): a count of permits.
//!
//! A timer holds a [`Permit`] from admission until the engine is done with it (a one-shot's
//! callback begins, it is handed back, the engine lets go of its cancelled entry, or a
//! repeating timer stops), so the cap bounds timer memory even while a shard or the pool
//! stalls; the transition that ends the hold gives it back (see `entry::permit`), and its
//! drop, alone or in [`Permits`], releases it. No cap: no count, no cost, no permit.
//!
//! A sleep refused a permit leaves its waker here; every release wakes all of them. The
//! waiter stores `waiting` then reads `used`; the releaser subtracts from `used` then reads
//! `waiting`; each passes a SeqCst fence between its write and its read (a Dekker pair):
//! either the releaser sees the waker or the waiter sees the room.

use std::task::Waker;

use super::{AtomicUsize, Fenced, Mutex, Ordering};

/// Counts the permits timers hold against a limit.
pub(crate) struct Cap {
    limit: usize,
    used: AtomicUsize,
    /// How many wakers `waiters` holds, read by every release.
    waiting: AtomicUsize,
    /// The tasks waiting for a permit, each once.
    waiters: Mutex<Vec<Waker>>,
}

/// One permit of a cap, released when dropped.
#[must_use]
pub(crate) struct Permit<'a> {
    cap: &'a Cap,
}

/// Permits let go of together (a turn's, a sweep's, shutdown's), released in one subtraction
/// when dropped; made only of [`Permit`]s.
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
            waiting: AtomicUsize::new(0),
            waiters: Mutex::new(Vec::new()),
        }
    }

    /// Leaves `waker` for the next release; returns whether a permit is free now (then the
    /// caller retries).
    pub(crate) fn wait_for_room(&self, waker: &Waker) -> bool {
        {
            let mut waiters = self.waiters.lock();
            if !waiters.iter().any(|left| left.will_wake(waker)) {
                waiters.push(waker.clone());
            }
            // Relaxed: ordered by the fence below (and the lock, for other waiters).
            self.waiting.store(waiters.len(), Ordering::Relaxed);
        }
        // The waiter's half of the Dekker pair in the module documentation.
        self.room_after(&Fenced::now())
    }

    /// Whether a permit is free, read after the caller's fence.
    fn room_after(&self, _: &Fenced) -> bool {
        // Relaxed: ordered by the fence.
        self.used.load(Ordering::Relaxed) < self.limit
    }

    /// Whether a task waits for a permit, read after the caller's fence.
    fn waiters_after(&self, _: &Fenced) -> bool {
        // Relaxed: ordered by the fence.
        self.waiting.load(Ordering::Relaxed) > 0
    }

    /// Wakes every task waiting for a permit (one was released, or the engine shut down).
    pub(crate) fn wake_waiters(&self) {
        let waiters = {
            let mut waiters = self.waiters.lock();
            // Relaxed: under the lock, which every waiter takes to leave its waker.
            self.waiting.store(0, Ordering::Relaxed);
            std::mem::take(&mut *waiters)
        };
        waiters.into_iter().for_each(Waker::wake);
    }

    /// Releases `count` permits: the one place it is done (see the module documentation).
    fn release(&self, count: usize) {
        // Relaxed: the count orders nothing else; the fence below orders it before the read.
        self.used.fetch_sub(count, Ordering::Relaxed);
        // The releaser's half of the Dekker pair in the module documentation.
        if self.waiters_after(&Fenced::now()) {
            self.wake_waiters();
        }
    }

    /// Takes one permit for a new timer; `None` if the cap is reached.
    pub(crate) fn take(&self) -> Option<Permit<'_>> {
        // Relaxed: the count orders nothing else; the RMW alone keeps it exact.
        let before = self.used.fetch_add(1, Ordering::Relaxed);
        if before >= self.limit {
            // Relaxed: a permit never held is no room given, so no waiter needs waking.
            self.used.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(Permit { cap: self })
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

impl<'a> Permit<'a> {
    /// Leaves `permit` (none: the engine has no cap) with the timer just queued: its count
    /// stays taken until the transition that ends the timer's hold gives it back.
    #[inline]
    pub(crate) fn hold(permit: Option<Self>) {
        std::mem::forget(permit);
    }

    /// The permit a timer held, given back by the one transition that ended its hold: made
    /// here for `entry::permit` alone.
    #[inline]
    pub(crate) fn given_back(cap: &'a Cap) -> Self {
        Permit { cap }
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.cap.release(1);
    }
}

impl<'a> Permits<'a> {
    /// No permits yet, of `cap` (none: the engine has no cap).
    #[inline]
    pub(crate) fn new(cap: Option<&'a Cap>) -> Self {
        Permits { cap, count: 0 }
    }

    /// The cap they go back to.
    #[inline]
    pub(crate) fn cap(&self) -> Option<&'a Cap> {
        self.cap
    }

    /// Adds `permit` (none: nothing) to those released together.
    #[inline]
    pub(crate) fn add(&mut self, permit: Option<Permit<'a>>) {
        if let Some(permit) = permit {
            debug_assert!(self.cap.is_some_and(|cap| std::ptr::eq(cap, permit.cap)));
            std::mem::forget(permit);
            self.count += 1;
        }
    }
}

impl Drop for Permits<'_> {
    #[inline]
    fn drop(&mut self) {
        if let (Some(cap), 1..) = (self.cap, self.count) {
            cap.release(self.count);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn permits_are_taken_up_to_the_limit_and_released_on_drop() {
        let cap = Cap::new(3);
        let first = cap.take().expect("room for one");
        Permit::hold(cap.take());
        let third = cap.take().expect("room for three");
        assert!(cap.take().is_none());
        assert_eq!(cap.used(), 3);
        drop(first);
        assert_eq!(cap.used(), 2);
        let mut together = Permits::new(Some(&cap));
        together.add(Some(third));
        together.add(Some(Permit::given_back(&cap)));
        together.add(None);
        assert_eq!(cap.used(), 2, "released when dropped");
        drop(together);
        assert_eq!(cap.used(), 0);
    }

    #[test]
    fn a_release_wakes_the_tasks_waiting_for_a_permit() {
        use std::sync::atomic::AtomicUsize as Count;
        struct Counting(Count);
        impl std::task::Wake for Counting {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let cap = Cap::new(1);
        let held = cap.take().expect("room for one");
        let counter = std::sync::Arc::new(Counting(Count::new(0)));
        let waker = Waker::from(counter.clone());
        assert!(!cap.wait_for_room(&waker));
        assert!(!cap.wait_for_room(&waker));
        drop(held);
        // Once where `will_wake` knows the waker again; Miri gives each use of a vtable its
        // own address, so there it is left, and woken, twice.
        let woken = counter.0.load(Ordering::SeqCst);
        assert!((1..=2).contains(&woken), "woken {woken} times");
        assert!(cap.wait_for_room(&waker), "a permit is free");
    }
}
