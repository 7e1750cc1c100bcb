//! Sleeps whose engine has shut down. No shard times them any more, yet a service draining
//! its requests after the engine stopped must not hang on them: each waits here for its
//! deadline instead, woken by one thread of the process (started when first needed), or on
//! a manual clock as the clock moves. Coarse, never early: the sleep itself looks at the
//! clock when woken.
//!
//! What waits here is behind std locks, outside every model: loom never sees a shut-down
//! engine's sleep polled. Under loom a waiting sleep stays pending.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::Waker;
use std::time::Instant;

use super::TickClock;

/// Wakers waiting for their instants.
#[derive(Default)]
pub(super) struct Wakers(Mutex<Vec<(Instant, Waker)>>);

impl Wakers {
    fn lock(&self) -> MutexGuard<'_, Vec<(Instant, Waker)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `waker` until `at`, or the earlier instant a waker of the same task is kept
    /// until (a task may wait on two sleeps); `true` if that is the earliest kept now.
    pub(super) fn keep(&self, at: Instant, waker: &Waker) -> bool {
        let mut kept = self.lock();
        let at = match kept.iter().position(|(_, kept)| kept.will_wake(waker)) {
            Some(i) => at.min(kept.swap_remove(i).0),
            None => at,
        };
        kept.push((at, waker.clone()));
        kept.iter().all(|&(other, _)| at <= other)
    }

    /// The earliest instant kept.
    pub(super) fn earliest(&self) -> Option<Instant> {
        self.lock().iter().map(|&(at, _)| at).min()
    }

    /// Wakes those due by `now`; returns the earliest left.
    pub(super) fn wake_due(&self, now: Instant) -> Option<Instant> {
        let mut due = Vec::new();
        let earliest = {
            let mut kept = self.lock();
            let mut i = 0;
            while i < kept.len() {
                if kept[i].0 <= now {
                    due.push(kept.swap_remove(i).1);
                } else {
                    i += 1;
                }
            }
            kept.iter().map(|&(at, _)| at).min()
        };
        // Outside the lock: a waker may poll at once, and wait here again.
        due.into_iter().for_each(Waker::wake);
        earliest
    }
}

/// The process's thread for sleeps on the system clock, and what it waits on.
struct Fallback {
    waiting: Wakers,
    bell: Condvar,
    rung: Mutex<bool>,
}

static FALLBACK: OnceLock<Option<&'static Fallback>> = OnceLock::new();

/// The fallback thread, started on first use (`None` if the system refused a thread).
fn fallback() -> Option<&'static Fallback> {
    *FALLBACK.get_or_init(|| {
        let fallback: &'static Fallback = Box::leak(Box::new(Fallback {
            waiting: Wakers::default(),
            bell: Condvar::new(),
            rung: Mutex::new(false),
        }));
        std::thread::Builder::new()
            .name("sw-after-stop".into())
            .spawn(move || fallback.run())
            .ok()
            .map(|_| fallback)
    })
}

impl Fallback {
    fn run(&self) {
        loop {
            let next = self.waiting.wake_due(Instant::now());
            let mut rung = self.rung.lock().unwrap_or_else(PoisonError::into_inner);
            while !*rung {
                let now = Instant::now();
                rung = match next {
                    Some(at) if at <= now => break,
                    Some(at) => {
                        let waited = self.bell.wait_timeout(rung, at - now);
                        waited.unwrap_or_else(PoisonError::into_inner).0
                    }
                    None => self.bell.wait(rung).unwrap_or_else(PoisonError::into_inner),
                };
            }
            *rung = false;
        }
    }
}

/// Wakes `waker` at `at` on `clock` (at the earliest; a spurious wake is possible): for a
/// sleep whose engine has shut down.
pub(crate) fn wake_at(clock: &TickClock, at: Instant, waker: &Waker) {
    if cfg!(loom) {
        return;
    }
    if let Some(manual) = clock.manual() {
        manual.wake_at(at, waker);
    } else if let Some(fallback) = fallback() {
        if fallback.waiting.keep(at, waker) {
            *fallback.rung.lock().unwrap_or_else(PoisonError::into_inner) = true;
            fallback.bell.notify_one();
        }
    }
}

impl super::ManualClock {
    /// Wakes `waker` once the clock reaches `at` (see the module above).
    fn wake_at(&self, at: Instant, waker: &Waker) {
        self.waiting().keep(at, waker);
        // After keeping it: an advance that moved the clock past `at` meanwhile has woken
        // what it found, or left it for this look.
        let now = self.now();
        if now >= at {
            self.waiting().wake_due(now);
        }
    }
}
