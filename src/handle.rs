//! The handle a caller keeps for each scheduled timer.

use std::fmt;
use std::time::Instant;

use crate::entry::EntryRef;
use crate::lane::Lane;
use crate::state::Lifecycle;
use crate::sync::Arc;

/// A scheduled timer. `Send + Sync`; cheap to keep around.
///
/// Dropping a handle neither cancels the timer nor leaks it: the timer still fires, and its
/// memory is freed when both the engine and the handle are done with it.
pub struct TimerHandle {
    pub(crate) entry: EntryRef,
    pub(crate) lane: Arc<Lane>,
}

impl TimerHandle {
    /// Stops the timer. Returns `true` only if this call stopped it from ever running: `false`
    /// if it already fired (or is firing), was cancelled before, or was handed back at shutdown.
    /// Safe to call from any thread, any number of times, after shutdown too.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let timer = engine.schedule(Duration::from_secs(60), || unreachable!()).unwrap();
    /// assert!(timer.cancel());
    /// assert!(!timer.cancel());
    /// assert_eq!(engine.pending(), 0);
    /// ```
    pub fn cancel(&self) -> bool {
        let Ok((before, callback)) = self.entry.cancel() else {
            return false;
        };
        drop(callback);
        self.lane.counts.add_cancelled();
        self.lane.shard.release_cap(1);
        if before.placement().is_some() {
            // The shard linked the entry into its wheel: ask it to unlink and free it.
            self.lane.changes.push(self.entry.clone());
            self.lane.shard.signal.notify();
        }
        true
    }

    /// Whether a `cancel` call stopped this timer.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let timer = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// assert!(!timer.is_cancelled());
    /// timer.cancel();
    /// assert!(timer.is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.entry.state().lifecycle() == Lifecycle::Cancelled
    }

    /// Whether the timer fired: its callback has been handed to the executor (it may still be
    /// running, or be about to).
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let timer = engine.schedule(Duration::from_millis(5), || {}).unwrap();
    /// assert!(!timer.is_expired());
    /// clock.advance(Duration::from_millis(5));
    /// assert!(timer.is_expired());
    /// ```
    pub fn is_expired(&self) -> bool {
        self.entry.state().lifecycle() == Lifecycle::Expired
    }

    /// Whether the timer is still waiting: not fired, not cancelled, not handed back.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let timer = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// assert!(timer.is_pending());
    /// engine.shutdown();
    /// assert!(!timer.is_pending());
    /// ```
    pub fn is_pending(&self) -> bool {
        self.entry.state().is_pending()
    }

    /// When the timer is due: the requested deadline rounded up to the engine's tick, the
    /// earliest instant it can fire.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let asked = Instant::now() + Duration::from_secs(60);
    /// let timer = engine.schedule_at(asked, || {}).unwrap();
    /// assert!(timer.deadline() >= asked);
    /// assert!(timer.deadline() - asked < Duration::from_millis(1));
    /// ```
    pub fn deadline(&self) -> Instant {
        let tick = self.entry.state().deadline();
        self.lane.shard.clock.instant_of(tick)
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("lifecycle", &self.entry.state().lifecycle())
            .field("deadline", &self.deadline())
            .finish()
    }
}
