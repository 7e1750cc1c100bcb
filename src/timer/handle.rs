//! The handle a caller keeps for each scheduled timer.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use crate::entry::{CallbackBox, Entry, EntryRef, Lifecycle};
use crate::shard::{Lane, Origin, Reset};
use crate::sync::Arc;

/// A scheduled timer. `Send + Sync`; a clone refers to the same timer, and handles are equal
/// (and hash alike) when they do, so a timer handed back at shutdown can be matched to its
/// handle ([`Unfired::timer`]). Dropping a handle neither cancels the timer nor leaks it.
///
/// [`Unfired::timer`]: crate::engine::Unfired::timer
#[derive(Clone)]
pub struct TimerHandle {
    entry: EntryRef,
    lane: Arc<Lane>,
}

/// Where a timer is in its life, as [`TimerHandle::state`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimerState {
    /// Scheduled, and neither fired, cancelled nor handed back yet.
    Pending,
    /// Its callback was handed to the executor (a repeating timer: stopped for good, or
    /// running).
    Fired,
    /// Stopped by a `cancel` that returned `true`.
    Cancelled,
    /// Handed back by [`TimerEngine::shutdown`](crate::TimerEngine::shutdown).
    HandedBack,
}

/// What [`TimerHandle::withdraw`] did.
pub(super) enum Withdrawn {
    /// The timer had fired, was cancelled or was handed back already.
    Lost,
    /// A repeating timer's run is under way; no run after it happens.
    Running,
    /// The timer is cancelled, and this is its callback, not run.
    Callback(CallbackBox),
}

impl TimerHandle {
    /// The handle of a timer whose entry came back at shutdown through one of `lane`'s shard's
    /// queues or its wheel.
    pub(crate) fn of(entry: EntryRef, lane: Arc<Lane>) -> Self {
        TimerHandle { entry, lane }
    }

    /// Keeps the timer's origin, made by `origin`, if its engine tracks origins.
    pub(crate) fn note_origin(&self, origin: impl FnOnce() -> Origin) {
        self.lane.note(&self.entry, origin);
    }

    /// The timer's entry and lane, borrowed, for the operations below.
    fn timer(&self) -> Timer<'_> {
        Timer::new(&self.entry, &self.lane)
    }

    /// The timer's entry (for the models).
    #[cfg(all(test, loom))]
    pub(crate) fn entry(&self) -> &EntryRef {
        &self.entry
    }

    /// The lane the timer was queued through (for the models).
    #[cfg(all(test, loom))]
    pub(crate) fn lane(&self) -> &Arc<Lane> {
        &self.lane
    }

    /// Stops the timer: `true` only if this call stopped it from ever running (for a repeating
    /// timer, every run after the current one; callable from its own callback). Safe from any
    /// thread, any number of times, after shutdown too.
    pub fn cancel(&self) -> bool {
        match self.withdraw() {
            Withdrawn::Lost => false,
            Withdrawn::Running => true,
            // Last: dropping the callback runs the caller's `Drop`, which may panic.
            Withdrawn::Callback(callback) => {
                drop(callback);
                true
            }
        }
    }

    /// As [`cancel`](Self::cancel), but hands over the callback this call won.
    pub(super) fn withdraw(&self) -> Withdrawn {
        self.timer().withdraw()
    }

    /// Moves a pending timer to be due `delay` from now, without allocating; `false` if it
    /// fired, was cancelled or handed back, or the deadline is beyond
    /// [`max_delay`](crate::TimerEngine::max_delay). A `true` reset never fires at the old
    /// deadline; a repeating timer's next run moves, later runs keep the rhythm. A boot or
    /// wall timer's deadline becomes `delay` from now on its own clock (any delay is taken);
    /// while a run of it looks at its clock, it is running, and the reset answers `false`.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let closed = Arc::new(AtomicBool::new(false));
    /// let c = closed.clone();
    /// let idle = engine.schedule(Duration::from_secs(30), move || c.store(true, Ordering::SeqCst)).unwrap();
    /// clock.advance(Duration::from_secs(20));
    /// assert!(idle.reset(Duration::from_secs(30))); // a read: 30 s more
    /// clock.advance(Duration::from_secs(20));
    /// assert!(!closed.load(Ordering::SeqCst));
    /// clock.advance(Duration::from_secs(10));
    /// assert!(closed.load(Ordering::SeqCst));
    /// assert!(!idle.reset(Duration::from_secs(30))); // fired already
    /// ```
    pub fn reset(&self, delay: Duration) -> bool {
        let shard = self.lane.shard();
        (shard.retime(&self.entry, Reset::After(delay)))
            .unwrap_or_else(|| self.move_to(shard.clock().tick_after(delay)))
    }

    /// As [`reset`](Self::reset), to an absolute deadline; a boot or wall timer's is a delay
    /// of `deadline` less now.
    pub fn reset_at(&self, deadline: Instant) -> bool {
        let shard = self.lane.shard();
        (shard.retime(&self.entry, Reset::At(deadline)))
            .unwrap_or_else(|| self.move_to(shard.clock().tick_at(deadline)))
    }

    /// Where the timer's entry is: what names it among the timers on the other clocks.
    pub(crate) fn address(&self) -> usize {
        EntryRef::as_ptr(&self.entry) as usize
    }

    /// Moves the timer to `tick` (`None`: beyond the engine's range, refused), as `reset`.
    pub(crate) fn move_to(&self, tick: Option<u64>) -> bool {
        self.timer().move_to(tick)
    }

    /// Whether the timer may still run: pending, stowed, or in a repeating run.
    pub(crate) fn may_run(&self) -> bool {
        let word = self.entry.state();
        word.is_armed() || word.is_running()
    }

    /// Where the timer is in its life: pending, fired, cancelled or handed back.
    pub fn state(&self) -> TimerState {
        let word = self.entry.state();
        match word.lifecycle() {
            // A repeating timer back from its run, waiting for its shard to re-arm it.
            Lifecycle::Fired if word.is_stowed() => TimerState::Pending,
            Lifecycle::Pending => TimerState::Pending,
            Lifecycle::Fired => TimerState::Fired,
            Lifecycle::Cancelled => TimerState::Cancelled,
            Lifecycle::HandedBack => TimerState::HandedBack,
        }
    }

    /// When the timer is due: the deadline rounded up to the engine's tick (for a zero or past
    /// deadline, the start of the tick it was scheduled in).
    pub fn deadline(&self) -> Instant {
        let tick = self.entry.state().deadline();
        self.lane.shard().clock().instant_of(tick)
    }
}

/// A timer's entry and lane, borrowed: what cancelling and moving take, for a holder that
/// keeps the lane apart (a sleep).
pub(super) struct Timer<'a> {
    entry: &'a EntryRef,
    lane: &'a Arc<Lane>,
}

impl<'a> Timer<'a> {
    pub(super) fn new(entry: &'a EntryRef, lane: &'a Arc<Lane>) -> Self {
        Timer { entry, lane }
    }

    /// As [`TimerHandle::withdraw`].
    pub(super) fn withdraw(&self) -> Withdrawn {
        let Ok(won) = Entry::cancel(self.entry) else {
            return Withdrawn::Lost;
        };
        let Some(callback) = won.callback else {
            // A repeating timer's run is under way; its runner finds it cancelled at re-arm.
            return Withdrawn::Running;
        };
        // The permit is released when the shard lets go of the entry (see `shard::worker`).
        self.lane.counts().add_cancelled();
        if let Some(request) = won.unlink {
            self.lane.request_unlink(request);
        }
        Withdrawn::Callback(callback)
    }

    /// As [`TimerHandle::move_to`].
    pub(super) fn move_to(&self, tick: Option<u64>) -> bool {
        let Some(tick) = tick else {
            return false;
        };
        match self.entry.reset(tick) {
            Ok(before) if tick < before.deadline() => {
                if before.linked_at().is_some() {
                    // Its slot may come due after the new deadline: the shard must move it.
                    self.lane.request_move(self.entry.clone());
                } else {
                    // It may be young, kept by its owner past the new deadline's horizon: the
                    // shard takes the lane's young timers now (see `queue::young`).
                    self.lane.hurry_young();
                }
                true
            }
            Ok(_) => true,
            Err(_) => false,
        }
    }
}

impl PartialEq for TimerHandle {
    fn eq(&self, other: &Self) -> bool {
        EntryRef::ptr_eq(&self.entry, &other.entry)
    }
}

impl Eq for TimerHandle {}

impl Hash for TimerHandle {
    fn hash<H: Hasher>(&self, state: &mut H) {
        EntryRef::as_ptr(&self.entry).hash(state);
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
