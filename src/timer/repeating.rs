//! Repeating timers: a callback that re-arms its own entry after each run, at a fixed rate.
//!
//! The entry carries the REPEATING bit. When the shard fires it, it hands the runner the entry
//! along with the callback; after the user's `FnMut` returns, the runner works out the next
//! run, re-arms the entry (EXPIRED→INIT with the new deadline, see `Entry::rearm`) and queues
//! it to its shard again, like a new timer. Run `n` is due at `start + n·period`; runs whose
//! time has already come when the previous one finishes are skipped, so a slow callback or a
//! busy engine never causes a burst of catch-up runs. A cancel while the callback runs
//! (EXPIRED→CANCELLED, also from inside the callback) makes the re-arm fail, and the timer
//! stops. A repeating timer holds one place under the engine's cap for its whole life, so a
//! full engine cannot stop it between two runs.

use std::time::{Duration, Instant};

use super::schedule::Job;
use crate::entry::{unbox, Boxed, Callback, CallbackBox, Entry, EntryRef};
use crate::shard::Lane;
use crate::sync::Arc;

/// A repeating timer as it is scheduled: its first run is due at `start + period`.
pub(crate) struct FirstRun<F> {
    pub(crate) run: F,
    pub(crate) start: Instant,
    pub(crate) period: Duration,
}

impl<F: FnMut() + Send + 'static> Job for FirstRun<F> {
    type Value = F;

    /// A repeating entry whose runner re-arms it on `lane` after each run.
    #[inline]
    fn entry(self, lane: &Arc<Lane>, tick: u64) -> Entry {
        let runner = Repeating::new(self.run, self.start, self.period, lane.clone());
        let mut entry = Entry::new_repeating(tick);
        entry.install(CallbackBox::new(runner));
        entry
    }

    #[inline]
    fn refused(self) -> F {
        self.run
    }

    fn taken_back(callback: CallbackBox) -> F {
        unbox::<Repeating<F>>(callback).into_inner()
    }
}

pub(crate) struct Repeating<F> {
    run: F,
    /// When the timer was scheduled: run `n` is due at `start + n·period`.
    start: Instant,
    period: Duration,
    /// The number of the run that is due next.
    next: u64,
    lane: Arc<Lane>,
}

impl<F> Repeating<F> {
    fn new(run: F, start: Instant, period: Duration, lane: Arc<Lane>) -> Self {
        Repeating {
            run,
            start,
            period,
            next: 1,
            lane,
        }
    }

    fn into_inner(self) -> F {
        self.run
    }

    /// The first run after the one just made that is not yet due at `now`, and when it is due.
    fn following(&self, now: Instant) -> (u64, Option<Instant>) {
        let period = self.period.as_nanos().max(1);
        let elapsed = now.saturating_duration_since(self.start).as_nanos();
        let first_not_due = u64::try_from(elapsed / period + 1).unwrap_or(u64::MAX);
        let next = first_not_due.max(self.next.saturating_add(1));
        let offset = u64::try_from(period.saturating_mul(u128::from(next))).ok();
        let due = offset.and_then(|nanos| self.start.checked_add(Duration::from_nanos(nanos)));
        (next, due)
    }
}

/// Ends a repeating timer that will not run again: retires its entry (unless it was
/// cancelled) and releases the cap place it held for its whole life.
struct Ending<'a> {
    entry: &'a EntryRef,
    lane: &'a Lane,
    rearmed: bool,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        if !self.rearmed {
            self.entry.retire();
            self.lane.shard().release_cap(1);
        }
    }
}

impl<F: FnMut() + Send + 'static> Callback for Repeating<F> {
    fn call(mut self) {
        (self.run)()
    }

    fn call_repeating(mut this: Boxed<Self>, entry: EntryRef) {
        let lane = this.lane.clone();
        // Unless the timer is re-armed, this ends it when dropped: also if the callback panics.
        let mut ending = Ending {
            entry: &entry,
            lane: &lane,
            rearmed: false,
        };
        (this.run)();
        let clock = lane.shard().clock();
        let (next, due) = this.following(clock.now());
        this.next = next;
        if lane.shard().is_stopped() {
            return;
        }
        let Some(tick) = due.and_then(|due| clock.tick_at(due)) else {
            return;
        };
        // Cancelled while it ran: the re-arm fails and hands the callback back to drop.
        if let Ok(()) = entry.rearm(tick, this.erase()) {
            ending.rearmed = true;
            // If shutdown raced the re-arm and this call took the timer back, it stops there
            // (`enqueue` gave its cap place back).
            drop(lane.enqueue(Lane::ownership(&lane), &entry));
        }
    }
}
