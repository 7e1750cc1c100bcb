//! [`OnClock`]: a timer on the boot or wall clock. Its entry is a repeating one, so its
//! handle stays the same through its re-arms; each run looks at its deadline, kept in
//! [`ClockTimers`], and either retires the timer and runs the callback, or re-arms it at the
//! new estimate (see the module above).

use super::timers::{ClockTimers, Ran};
use crate::entry::{unbox, Boxed, Callback, CallbackBox, Entry, EntryRef};
use crate::shard::{Lane, TimerKind};
use crate::sync::{Arc, StdArc};
use crate::time::OtherDeadline;

/// A callback due at a deadline on another clock, kept in `timers`.
pub(crate) struct OnClock<F> {
    callback: F,
    /// The deadline it was made with, for a run before it is kept (one due at once).
    made: OtherDeadline,
    timers: StdArc<ClockTimers>,
}

impl<F> OnClock<F> {
    pub(crate) fn new(callback: F, made: OtherDeadline, timers: &StdArc<ClockTimers>) -> Self {
        OnClock {
            callback,
            made,
            timers: timers.clone(),
        }
    }
}

impl<F: FnOnce() + Send + 'static> TimerKind for OnClock<F> {
    type Value = F;

    fn entry(self, _: &Arc<Lane>, tick: u64) -> Entry {
        let mut entry = Entry::new_repeating(tick);
        entry.install(CallbackBox::new(self));
        entry
    }

    fn refused(self) -> F {
        self.callback
    }

    fn taken_back(callback: CallbackBox) -> F {
        unbox::<OnClock<F>>(callback).callback
    }
}

impl<F: FnOnce() + Send + 'static> Callback for OnClock<F> {
    /// As shutdown's `Unfired::run`: runs the callback now.
    fn call(self) {
        (self.callback)()
    }

    /// Runs the callback if its deadline has passed on its clock and no cancel came first,
    /// ending the timer; else re-arms it at the deadline's new estimate.
    fn call_repeating(this: Boxed<Self>, entry: &EntryRef) -> Option<(Boxed<Self>, u64)> {
        match this.timers.run(entry, this.made) {
            Ran::Again(tick) => Some((this, tick)),
            Ran::Due(won) => {
                if won {
                    (this.into_inner().callback)();
                }
                None
            }
        }
    }
}
