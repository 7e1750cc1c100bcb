//! A mutex and a condition variable whose lock never reports poisoning.
//!
//! The engine's critical sections only move a value in or out (a waker, a thread handle, a
//! counter, a list of watchers) and never leave it half-written, so a panic elsewhere while
//! the lock was held leaves nothing to repair: every lock here takes the value as it is. This
//! is written once, here, instead of `unwrap_or_else(PoisonError::into_inner)` at each lock.

#[cfg(loom)]
use loom::sync as inner;
#[cfg(not(loom))]
use std::sync as inner;

pub(crate) use inner::MutexGuard;

/// A mutex (std's, or loom's under loom) whose `lock` ignores poisoning.
pub(crate) struct Mutex<T>(inner::Mutex<T>);

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex(inner::Mutex::new(value))
    }

    /// Locks the mutex, whether or not a thread panicked while holding it.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A condition variable for [`Mutex`], ignoring poisoning as it does.
pub(crate) struct Condvar(inner::Condvar);

impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar(inner::Condvar::new())
    }

    /// Waits for a notification, releasing `guard` meanwhile. May wake spuriously.
    pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.0
            .wait(guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// As [`wait`](Self::wait), for at most `timeout`; says whether it timed out. Under loom,
    /// which has no time, it waits until notified (a model treats a timed wait as "until
    /// woken", as `thread::park_timeout` does).
    pub(crate) fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: std::time::Duration,
    ) -> (MutexGuard<'a, T>, bool) {
        #[cfg(not(loom))]
        {
            let (guard, result) = self
                .0
                .wait_timeout(guard, timeout)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            (guard, result.timed_out())
        }
        #[cfg(loom)]
        {
            let _ = timeout;
            (self.wait(guard), false)
        }
    }

    pub(crate) fn notify_one(&self) {
        self.0.notify_one();
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}
