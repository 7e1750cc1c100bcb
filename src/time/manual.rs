//! [`ManualClock`]: time that moves only when a test moves it.
//!
//! An engine built on a manual clock registers with it (weakly, through the [`CatchUp`] trait),
//! and `advance` asks each registered engine to catch up before it returns.

use std::fmt;
use std::sync::Weak;
use std::time::{Duration, Instant};

use super::tick::MAX_DELAY_NANOS;
use crate::sync::{Arc, AtomicU64, Mutex, Ordering, StdArc};

/// A clock that stands still until [`advance`](ManualClock::advance) moves it, for testing code
/// that uses shardwheel deterministically.
///
/// An engine built with `Builder::manual_clock` reads time only
/// from this clock. `advance` returns once every such engine has fired every timer due by the new
/// time and those callbacks have returned (callbacks handed to a spawner of the caller's, with
/// `Builder::spawn_callbacks`, are only handed over by then).
/// [`advance_to_next`](ManualClock::advance_to_next) jumps to the next timer due, so a test
/// need not guess how far to move.
///
/// Code under test must read the time from the engine ([`TimerEngine::now`]) or from this
/// clock, never from `Instant::now()`: the clock stands still while real time goes on, so the
/// two part at once, and a deadline computed from `Instant::now()` lies outside the clock's
/// time (in its future by however long the test has run).
///
/// [`TimerEngine::now`]: crate::TimerEngine::now
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
/// use shardwheel::{ManualClock, TimerEngine};
///
/// let clock = ManualClock::new();
/// let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
/// let fired = Arc::new(AtomicUsize::new(0));
/// let f = fired.clone();
/// engine.schedule(Duration::from_secs(30), move || { f.fetch_add(1, Ordering::SeqCst); }).unwrap();
/// clock.advance(Duration::from_secs(29));
/// assert_eq!(fired.load(Ordering::SeqCst), 0);
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(fired.load(Ordering::SeqCst), 1);
/// ```
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

struct ManualInner {
    base: Instant,
    nanos: AtomicU64,
    /// The engines on this clock, held weakly: a clock kept by a test does not keep an engine
    /// alive, and an engine that holds the clock forms no reference cycle with it.
    watchers: Mutex<Vec<(u64, Weak<dyn CatchUp>)>>,
    next_watcher: AtomicU64,
}

/// What a manual clock asks of an engine it drives: to bring its shards up to the clock's new
/// time. The engine implements it; the clock knows nothing else of the engine.
pub(crate) trait CatchUp: Send + Sync {
    /// Returns once every timer due by the clock's current time has fired and its callback
    /// has returned.
    fn catch_up(&self);

    /// Catches up, then returns the earliest deadline of a timer pending on the engine (the
    /// start of the tick it is due at).
    fn next_deadline(&self) -> Option<Instant>;
}

impl ManualClock {
    /// A new clock, standing at the instant it was made.
    ///
    /// ```
    /// let clock = shardwheel::ManualClock::new();
    /// assert_eq!(clock.elapsed(), std::time::Duration::ZERO);
    /// ```
    pub fn new() -> Self {
        ManualClock {
            inner: Arc::new(ManualInner {
                base: Instant::now(),
                nanos: AtomicU64::new(0),
                watchers: Mutex::new(Vec::new()),
                next_watcher: AtomicU64::new(0),
            }),
        }
    }

    /// The clock's current time.
    ///
    /// ```
    /// let clock = shardwheel::ManualClock::new();
    /// let before = clock.now();
    /// clock.advance(std::time::Duration::from_millis(5));
    /// assert_eq!(clock.now() - before, std::time::Duration::from_millis(5));
    /// ```
    pub fn now(&self) -> Instant {
        self.inner.base + self.elapsed()
    }

    /// How far the clock has been advanced in all.
    ///
    /// ```
    /// let clock = shardwheel::ManualClock::new();
    /// clock.advance(std::time::Duration::from_secs(2));
    /// assert_eq!(clock.elapsed(), std::time::Duration::from_secs(2));
    /// ```
    pub fn elapsed(&self) -> Duration {
        // Acquire: pairs with the Release in `advance`, so a shard that reads the new time also
        // sees every timer scheduled before the clock was moved to it.
        Duration::from_nanos(self.inner.nanos.load(Ordering::Acquire))
    }

    /// Moves the clock forward by `by`, then waits until every engine on this clock has fired
    /// the timers due by the new time and their callbacks have returned (or, with a spawner,
    /// been handed to it); again for the timers those callbacks schedule that are due already,
    /// up to 1,024 rounds (a timer that schedules itself again with a zero delay would never
    /// let it return: its later links fire as the shards go on turning). The clock stops at
    /// about 292 years after it was made (`advance(Duration::MAX)` goes there); timers due
    /// by then still fire. Must not be called from inside a
    /// timer callback of an engine on this clock (it would wait for itself).
    ///
    /// ```
    /// let clock = shardwheel::ManualClock::new();
    /// clock.advance(std::time::Duration::from_millis(1));
    /// assert_eq!(clock.elapsed().as_millis(), 1);
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // Release: see `elapsed`. A CAS loop rather than fetch_add so the clock stops at its
        // end instead of wrapping.
        let mut current = self.inner.nanos.load(Ordering::Relaxed);
        while let Err(actual) = self.inner.nanos.compare_exchange_weak(
            current,
            current.saturating_add(by).min(MAX_DELAY_NANOS),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            current = actual;
        }
        for watcher in self.watchers() {
            watcher.catch_up();
        }
    }

    /// The earliest deadline of a timer pending on any engine on this clock (the start of the
    /// tick it is due at), once every timer due by now has fired as `advance` fires them; a
    /// cancelled timer is never counted. `None` if no timer is pending.
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// assert_eq!(clock.next_deadline(), None);
    /// engine.schedule(Duration::from_secs(3), || {}).unwrap();
    /// assert_eq!(clock.next_deadline(), Some(clock.now() + Duration::from_secs(3)));
    /// ```
    pub fn next_deadline(&self) -> Option<Instant> {
        self.watchers()
            .iter()
            .filter_map(|watcher| watcher.next_deadline())
            .min()
    }

    /// Advances the clock exactly to [`next_deadline`](Self::next_deadline) and fires what is
    /// due then, as [`advance`](Self::advance) does; returns the new time. `None`, and the
    /// clock unchanged, if no timer is pending. Not from inside a callback (as `advance`).
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let start = clock.now();
    /// let timer = engine.schedule(Duration::from_secs(90), || {}).unwrap();
    /// assert_eq!(clock.advance_to_next(), Some(start + Duration::from_secs(90)));
    /// assert!(timer.is_fired());
    /// assert_eq!(clock.advance_to_next(), None);
    /// ```
    pub fn advance_to_next(&self) -> Option<Instant> {
        let next = self.next_deadline()?;
        self.advance(next.saturating_duration_since(self.now()));
        Some(self.now())
    }

    /// The engines on this clock that are still alive.
    fn watchers(&self) -> Vec<StdArc<dyn CatchUp>> {
        let mut watchers = self.inner.watchers.lock();
        // An engine dropped without unwatching (it never does) costs nothing but its entry.
        watchers.retain(|(_, watcher)| watcher.strong_count() > 0);
        watchers.iter().filter_map(|(_, w)| w.upgrade()).collect()
    }

    /// Registers an engine to catch up on every `advance`; returns the id to unwatch it by.
    pub(crate) fn watch(&self, watcher: Weak<dyn CatchUp>) -> u64 {
        // Relaxed: only hands out distinct ids.
        let id = self.inner.next_watcher.fetch_add(1, Ordering::Relaxed);
        self.inner.watchers.lock().push((id, watcher));
        id
    }

    pub(crate) fn unwatch(&self, id: u64) {
        self.inner
            .watchers
            .lock()
            .retain(|(watcher, _)| *watcher != id);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("elapsed", &self.elapsed())
            .finish()
    }
}
