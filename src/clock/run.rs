//! [`OnClock`]: a timer on the boot or wall clock. Its entry is a repeating one, so its
//! handle stays the same through its re-arms; each run reads its clock and either retires the
//! timer and runs the callback, or re-arms it at the new estimate (see the module above).

use super::timers::ClockTimers;
use crate::entry::{unbox, Boxed, Callback, CallbackBox, Entry, EntryRef};
use crate::shard::{Lane, TimerKind};
use crate::sync::Arc;
use crate::time::{Look, OtherDeadline};

/// A callback due at `deadline` on its clock, kept under `number`.
pub(crate) struct OnClock<F> {
    callback: F,
    deadline: OtherDeadline,
    number: u64,
    timers: Arc<ClockTimers>,
}

impl<F> OnClock<F> {
    pub(crate) fn new(
        callback: F,
        deadline: OtherDeadline,
        number: u64,
        timers: &Arc<ClockTimers>,
    ) -> Self {
        OnClock {
            callback,
            deadline,
            number,
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
        if let Look::At(tick) = this.timers.clock().look(this.deadline) {
            return Some((this, tick));
        }
        let OnClock {
            callback,
            deadline,
            number,
            timers,
        } = this.into_inner();
        // Retired before it runs: a cancel after this answers false, as for a one-shot fired.
        // Then forgotten: a `keep` after this finds it retired and keeps nothing.
        let won = entry.retire();
        timers.forget(deadline, number);
        if won {
            callback();
        }
        None
    }
}
