//! Repeating timers: a callback that says, after each run, when its next run is due.
//!
//! The shard fires a REPEATING entry with its callback; the run returns the tick of the next
//! run, and the runner stows the entry there and hands it back to its shard, which re-arms it
//! (see `entry::repeat`). At a fixed rate run `n` is due at `origin + n·period`, runs already
//! past are skipped (no catch-up burst); at a fixed delay each is due `period` after the last
//! returned. A cancel during a run (also from inside, through its handle or [`Repeat`]) makes
//! the stow fail. The timer holds one permit for life.

use std::time::{Duration, Instant};

use super::handle::{TimerHandle, TimerState};
use crate::entry::{unbox, Boxed, Callback, CallbackBox, Entry, EntryRef};
use crate::shard::{Lane, TimerKind};
use crate::sync::Arc;

/// How the runs of a repeating timer are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// Run `n` is due at `origin + n·period`, whatever the earlier runs cost.
    FixedRate,
    /// Each run is due `period` after the previous one returned.
    FixedDelay,
}

/// One run of a repeating timer, as a
/// [`schedule_with`](crate::engine::RepeatBuilder::schedule_with) callback sees it: when it
/// was due, and the means to stop the timer or change its period.
#[derive(Debug)]
pub struct Repeat {
    /// The timer; `None` for a run made by [`Unfired::run`](crate::engine::Unfired::run).
    timer: Option<TimerHandle>,
    due: Instant,
    period: Duration,
    /// Whether `set_period` was called in this run.
    changed: bool,
}

impl Repeat {
    /// When this run was due on the timer's schedule (before rounding up to the engine's tick).
    pub fn due(&self) -> Instant {
        self.due
    }

    /// The timer's period: the one the next run is spaced by.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Spaces the runs after this one by `period` (from this run's [`due`](Self::due) at a
    /// fixed rate, from its return at a fixed delay); zero is taken as one engine tick.
    pub fn set_period(&mut self, period: Duration) {
        self.period = period;
        self.changed = true;
    }

    /// Stops the timer after this run, as [`TimerHandle::cancel`]; `false` if already stopped
    /// (or this run was made after shutdown).
    pub fn cancel(&self) -> bool {
        self.timer.as_ref().is_some_and(TimerHandle::cancel)
    }

    /// Whether the timer has been cancelled (in this run, or from outside while it ran).
    pub fn is_cancelled(&self) -> bool {
        self.timer
            .as_ref()
            .is_some_and(|timer| timer.state() == TimerState::Cancelled)
    }
}

/// A repeating timer's callback, in either of its forms.
pub(crate) trait RepeatFn: Send + 'static {
    /// What a refusal hands back to the caller.
    type Value;
    fn run(&mut self, run: &mut Repeat);
    fn into_value(self) -> Self::Value;
}

/// A callback that takes no arguments (`RepeatBuilder::schedule`).
pub(crate) struct Plain<F>(pub(crate) F);

impl<F: FnMut() + Send + 'static> RepeatFn for Plain<F> {
    type Value = F;
    #[inline]
    fn run(&mut self, _: &mut Repeat) {
        (self.0)()
    }
    fn into_value(self) -> F {
        self.0
    }
}

/// A callback handed its [`Repeat`] (`RepeatBuilder::schedule_with`).
pub(crate) struct WithRepeat<F>(pub(crate) F);

impl<F: FnMut(&mut Repeat) + Send + 'static> RepeatFn for WithRepeat<F> {
    type Value = F;
    #[inline]
    fn run(&mut self, run: &mut Repeat) {
        (self.0)(run)
    }
    fn into_value(self) -> F {
        self.0
    }
}

/// A repeating timer as it is scheduled: its first run is due at `first`.
pub(crate) struct FirstRun<R> {
    pub(crate) run: R,
    pub(crate) first: Instant,
    pub(crate) period: Duration,
    pub(crate) pace: Pace,
}

impl<R: RepeatFn> TimerKind for FirstRun<R> {
    type Value = R::Value;

    /// A repeating entry, whose runs get their handles on `lane`.
    #[inline]
    fn entry(self, lane: &Arc<Lane>, tick: u64) -> Entry {
        let runner = Repeating {
            callback: self.run,
            rhythm: Rhythm {
                pace: self.pace,
                origin: self.first,
                period: self.period,
                next: 0,
                due: self.first,
            },
            lane: lane.clone(),
        };
        let mut entry = Entry::new_repeating(tick);
        entry.install(CallbackBox::new(runner));
        entry
    }

    #[inline]
    fn refused(self) -> R::Value {
        self.run.into_value()
    }

    fn taken_back(callback: CallbackBox) -> R::Value {
        unbox::<Repeating<R>>(callback).callback.into_value()
    }
}

pub(crate) struct Repeating<R> {
    callback: R,
    rhythm: Rhythm,
    lane: Arc<Lane>,
}

/// When a repeating timer's runs are due.
struct Rhythm {
    pace: Pace,
    /// At a fixed rate, run `n` is due at `origin + n·period`.
    origin: Instant,
    period: Duration,
    /// The number of the run that is due next, counted from `origin` (at a fixed rate).
    next: u64,
    /// When the run that is due next is due.
    due: Instant,
}

impl Rhythm {
    /// The next run as its callback sees it.
    fn run(&self, timer: Option<TimerHandle>) -> Repeat {
        Repeat {
            timer,
            due: self.due,
            period: self.period,
            changed: false,
        }
    }

    /// Moves past run `run`, returned at `now`: when the next is due, if an instant can say.
    fn after(&mut self, run: &Repeat, now: Instant) -> Option<Instant> {
        if run.changed {
            // A new period starts a new grid at the run just made.
            self.period = run.period;
            self.origin = self.due;
            self.next = 0;
        }
        let due = match self.pace {
            Pace::FixedRate => {
                let (next, due) = self.following(now);
                self.next = next;
                due
            }
            // A zero period repeats once a tick, as at a fixed rate.
            Pace::FixedDelay => now.checked_add(self.period.max(Duration::from_nanos(1))),
        }?;
        self.due = due;
        Some(due)
    }

    /// The first run after the one just made that is not yet due at `now`, and when it is due.
    fn following(&self, now: Instant) -> (u64, Option<Instant>) {
        let period = self.period.as_nanos().max(1);
        let elapsed = now.saturating_duration_since(self.origin).as_nanos();
        let first_not_due = u64::try_from(elapsed / period + 1).unwrap_or(u64::MAX);
        let next = first_not_due.max(self.next.saturating_add(1));
        let offset = u64::try_from(period.saturating_mul(u128::from(next))).ok();
        let due = offset.and_then(|nanos| self.origin.checked_add(Duration::from_nanos(nanos)));
        (next, due)
    }
}

impl<R: RepeatFn> Callback for Repeating<R> {
    fn call(mut self) {
        let mut run = self.rhythm.run(None);
        self.callback.run(&mut run)
    }

    /// Runs the callback with the timer's handle; `None` if the engine stopped or no tick can
    /// say when the next run is due.
    fn call_repeating(mut this: Boxed<Self>, entry: &EntryRef) -> Option<(Boxed<Self>, u64)> {
        let timer = TimerHandle::of(entry.clone(), this.lane.clone());
        let mut run = this.rhythm.run(Some(timer));
        this.callback.run(&mut run);
        let now = this.lane.shard().clock().now();
        let due = this.rhythm.after(&run, now);
        let shard = this.lane.shard();
        if shard.is_stopped() {
            return None;
        }
        let tick = due.and_then(|due| shard.clock().tick_at(due))?;
        Some((this, tick))
    }
}
