//! [`ManualClock`]: time that moves only when a test moves it. Engines on it register weakly
//! ([`CatchUp`]); `advance` has each catch up before it returns. Its boot clock is its time
//! plus the suspends it was told of, and its wall clock moves with both and with each step.

use std::fmt;
use std::sync::Weak;
use std::time::{Duration, Instant, SystemTime};

use super::fallback::Wakers;
use super::tick::MAX_DELAY_NANOS;
use crate::sync::{Arc, AtomicU64, Mutex, Ordering, StdArc};

/// A clock that stands still until [`advance`](ManualClock::advance) moves it, for
/// deterministic tests. An engine built with `Builder::manual_clock` reads time only from it.
///
/// Code under test must read time from the engine ([`TimerEngine::now`]) or this clock, never
/// `Instant::now()`, which runs on while the clock stands still.
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
    /// How long the simulated machine slept in all, in nanoseconds.
    slept: AtomicU64,
    /// The wall clock: what it read when the boot clock read the nanoseconds beside it.
    wall: Mutex<(SystemTime, u64)>,
    /// The engines on this clock, held weakly: no keep-alive, no reference cycle.
    watchers: Mutex<Vec<(u64, Weak<dyn CatchUp>)>>,
    next_watcher: AtomicU64,
    /// The sleeps of engines shut down, woken as the clock reaches them (see `fallback`).
    waiting: Wakers,
}

/// What a manual clock asks of an engine on it: to bring its shards up to the clock's time.
pub(crate) trait CatchUp: Send + Sync {
    /// Returns once every timer due by now has fired and its callback returned.
    fn catch_up(&self);

    /// The boot or wall clock moved apart from the monotonic one: re-times their timers, then
    /// catches up.
    fn clocks_moved(&self);

    /// Catches up, then returns the earliest pending deadline (the start of its tick).
    fn next_deadline(&self) -> Option<Instant>;
}

/// The wall time a new clock stands at: now; under Miri, which keeps a program from the
/// system's wall clock, a fixed instant.
fn wall_start() -> SystemTime {
    #[cfg(not(miri))]
    return SystemTime::now();
    #[cfg(miri)]
    return SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
}

impl ManualClock {
    /// A new clock, standing at the instant it was made.
    pub fn new() -> Self {
        ManualClock {
            inner: Arc::new(ManualInner {
                base: Instant::now(),
                nanos: AtomicU64::new(0),
                slept: AtomicU64::new(0),
                wall: Mutex::new((wall_start(), 0)),
                watchers: Mutex::new(Vec::new()),
                next_watcher: AtomicU64::new(0),
                waiting: Wakers::default(),
            }),
        }
    }

    /// Whether `other` is this clock (a clone of it).
    pub(crate) fn same(&self, other: &ManualClock) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The clock's current time.
    pub fn now(&self) -> Instant {
        self.inner.base + self.elapsed()
    }

    /// How far the clock has been advanced in all.
    pub fn elapsed(&self) -> Duration {
        // Acquire: pairs with `advance`'s Release; a shard reading the new time sees every
        // timer scheduled before it.
        Duration::from_nanos(self.inner.nanos.load(Ordering::Acquire))
    }

    /// Moves the clock forward by `by`, then waits until every engine on it has fired the
    /// timers due and their callbacks returned (or were handed to a spawner), repeating for
    /// timers those schedule due already, up to 1,024 rounds. The clock stops at its end
    /// (`Duration::MAX`). Must not be called from a callback of an engine on this clock.
    pub fn advance(&self, by: Duration) {
        add_capped(&self.inner.nanos, by);
        for watcher in self.watchers() {
            watcher.catch_up();
        }
        self.inner.waiting.wake_due(self.now());
    }

    /// The sleeps of engines shut down that wait for this clock (see `fallback`).
    pub(super) fn waiting(&self) -> &Wakers {
        &self.inner.waiting
    }

    /// Simulates a suspend of `slept`: the boot and wall clocks move on, the monotonic clock
    /// does not. Returns once every engine on the clock has run its boot and wall timers
    /// due by then, as [`advance`](Self::advance) does.
    pub fn suspend(&self, slept: Duration) {
        // Capped as the monotonic time is, so that their sum fits.
        add_capped(&self.inner.slept, slept);
        self.clocks_moved();
    }

    /// Steps the wall clock to `to`, forward or back, as an operator or NTP would; then as
    /// [`suspend`](Self::suspend) returns.
    pub fn set_wall(&self, to: SystemTime) {
        *self.inner.wall.lock() = (to, self.boot_nanos());
        self.clocks_moved();
    }

    /// The wall clock: the `SystemTime` at the clock's making, moved by each advance, suspend
    /// and step since.
    pub fn wall(&self) -> SystemTime {
        let (at, boot) = *self.inner.wall.lock();
        let since = Duration::from_nanos(self.boot_nanos().saturating_sub(boot));
        at.checked_add(since).unwrap_or(at)
    }

    /// The boot clock: the clock's time plus every suspend, in nanoseconds.
    pub(crate) fn boot_nanos(&self) -> u64 {
        // Acquire: as `elapsed`'s. Each part is at most `MAX_DELAY_NANOS`: the sum fits.
        let slept = self.inner.slept.load(Ordering::Acquire);
        self.inner.nanos.load(Ordering::Acquire) + slept
    }

    /// Has every engine on the clock re-time its boot and wall timers.
    fn clocks_moved(&self) {
        for watcher in self.watchers() {
            watcher.clocks_moved();
        }
    }

    /// The earliest deadline pending on any engine on this clock (start of its tick), once
    /// what is due has fired, or of a sleep waiting after its engine shut down; cancelled
    /// timers never count. `None` if none is pending.
    pub fn next_deadline(&self) -> Option<Instant> {
        let engines = self
            .watchers()
            .into_iter()
            .filter_map(|w| w.next_deadline());
        // And the sleeps of engines shut down, which wait for the clock (see `fallback`).
        engines.chain(self.inner.waiting.earliest()).min()
    }

    /// Advances exactly to [`next_deadline`](Self::next_deadline), firing as
    /// [`advance`](Self::advance) does, and returns the new time; `None` (unchanged) if no timer
    /// is pending.
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let start = clock.now();
    /// let timer = engine.schedule(Duration::from_secs(90), || {}).unwrap();
    /// assert_eq!(clock.advance_to_next(), Some(start + Duration::from_secs(90)));
    /// assert_eq!(timer.state(), shardwheel::TimerState::Fired);
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

/// Adds `by` to `word`, stopping at `MAX_DELAY_NANOS` rather than wrapping. Release: see
/// `ManualClock::elapsed`.
fn add_capped(word: &AtomicU64, by: Duration) {
    let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
    let add = |nanos: u64| Some(nanos.saturating_add(by).min(MAX_DELAY_NANOS));
    // Relaxed on failure: the retry recomputes from the value it read, and publishes nothing.
    let _ = word.fetch_update(Ordering::Release, Ordering::Relaxed, add);
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
