//! A mutex and a condition variable whose lock never reports poisoning: the engine's critical
//! sections only move a value in or out, so a panic leaves nothing half-written to repair.

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
    /// until notified.
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
