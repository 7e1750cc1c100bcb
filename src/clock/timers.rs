//! [`ClockTimers`]: an engine's timers and sleeps on the other clocks, by deadline, and the
//! round that re-times them (see the module above).
//!
//! A timer's deadline on its clock is kept here alone, by its entry's address, and read and
//! moved under the one lock: its run looks at it ([`ClockTimers::run`]), a reset moves it and
//! the entry together ([`ClockTimers::reset_timer`]), so a run sees either the deadline from
//! before a reset and the entry as it was, or both moved. A reset that finds the timer in a
//! run (or ended) moves nothing and answers `false`.

use std::collections::{BTreeMap, HashMap};
use std::task::Waker;

use super::thread::{ClockThread, Round};
use crate::entry::EntryRef;
use crate::shard::{Reset, Retime};
use crate::sync::{Arc, AtomicU64, Mutex, Ordering, StdArc};
use crate::time::{Look, OtherClock, OtherDeadline, PerClock, TickClock};
use crate::timer::TimerHandle;

/// A change of a clock's offset from the monotonic clock beyond this between two rounds (1 ms)
/// is a step or a suspend: every timer on it is re-timed. Less is drift, left to the runs.
const SLACK: i128 = 1_000_000;

/// Where a timer is kept: its deadline in its clock's nanoseconds, then a number of its own.
type Place = (u64, u64);

/// What waits at a deadline.
pub(crate) enum Waiting {
    /// A scheduled timer: a round moves it.
    Timer(TimerHandle),
    /// A sleep's task: a round wakes it.
    Task(Arc<TaskWaker>),
}

/// The waker of the task a sleep last told, for a round to wake.
pub(crate) struct TaskWaker(Mutex<Option<Waker>>);

impl TaskWaker {
    pub(crate) fn new() -> Self {
        TaskWaker(Mutex::new(None))
    }

    /// Keeps `waker`, unless it wakes the same task as the one kept.
    pub(crate) fn set(&self, waker: &Waker) {
        let mut kept = self.0.lock();
        if !kept.as_ref().is_some_and(|kept| kept.will_wake(waker)) {
            *kept = Some(waker.clone());
        }
    }

    fn wake(&self) {
        let waker = self.0.lock().clone();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// What a timer's run found ([`ClockTimers::run`]).
pub(super) enum Ran {
    /// Its deadline is ahead: run again at this tick.
    Again(u64),
    /// Its deadline has passed and the timer has ended: the callback runs if this is `true`
    /// (no cancel came first).
    Due(bool),
}

/// What is kept for one clock.
#[derive(Default)]
struct ForClock {
    /// Its timers and sleeps by deadline.
    map: BTreeMap<Place, Waiting>,
    /// The clock's offset from the monotonic clock at the last round.
    offset: Option<i128>,
    /// The next deadline the clock thread waits for.
    armed: Option<u64>,
}

/// What the lock guards: each clock's, and each timer's deadline.
#[derive(Default)]
struct Deadlines {
    each: PerClock<ForClock>,
    /// Each timer's deadline and number, by its entry's address.
    timers: HashMap<usize, (OtherDeadline, u64)>,
    /// How many were kept at the last sweep of the timers that can no longer run.
    kept: usize,
    stopped: bool,
}

impl Deadlines {
    fn of(&mut self, clock: OtherClock) -> &mut ForClock {
        self.each.of_mut(clock)
    }

    fn len(&self) -> usize {
        self.each.boot.map.len() + self.each.wall.map.len()
    }

    /// Forgets what waits at `at` under `number`, and a timer's deadline with it.
    fn remove(&mut self, at: OtherDeadline, number: u64) -> Option<Waiting> {
        let gone = self.of(at.clock).map.remove(&(at.nanos, number));
        if let Some(Waiting::Timer(timer)) = &gone {
            self.timers.remove(&timer.address());
        }
        gone
    }

    /// Drops the timers that can no longer run once the maps have doubled since the last
    /// sweep: cancelled ones stay until then, and the maps stay within twice the live ones.
    fn sweep_if_due(&mut self) {
        if self.len() <= 2 * self.kept + 64 {
            return;
        }
        let timers = &mut self.timers;
        for map in [&mut self.each.boot.map, &mut self.each.wall.map] {
            map.retain(|_, waiting| match waiting {
                Waiting::Timer(timer) if !timer.may_run() => {
                    timers.remove(&timer.address());
                    false
                }
                _ => true,
            });
        }
        self.kept = self.len();
    }
}

/// An engine's timers and sleeps on the other clocks (see the module above).
pub(crate) struct ClockTimers {
    clock: TickClock,
    kept: Mutex<Deadlines>,
    /// The next key's own number.
    next: AtomicU64,
    /// The clock thread, once started (system clocks only).
    thread: Mutex<Option<ClockThread>>,
}

/// Where `entry` is, which names its timer here.
fn address_of(entry: &EntryRef) -> usize {
    EntryRef::as_ptr(entry) as usize
}

impl ClockTimers {
    pub(crate) fn new(clock: TickClock) -> Self {
        ClockTimers {
            clock,
            kept: Mutex::new(Deadlines::default()),
            next: AtomicU64::new(0),
            thread: Mutex::new(None),
        }
    }

    pub(crate) fn clock(&self) -> &TickClock {
        &self.clock
    }

    /// A number for a new key.
    pub(crate) fn number(&self) -> u64 {
        // Relaxed: only hands out distinct numbers.
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps `waiting` at `at` under `number`; wakes the clock thread (starting it) if the
    /// deadline comes before the one it waits for. Nothing after shutdown, nor for a timer that
    /// ended already (its run retires it before it forgets it).
    pub(crate) fn keep(this: &StdArc<Self>, at: OtherDeadline, number: u64, waiting: Waiting) {
        let sooner = {
            let mut kept = this.kept.lock();
            let ended = matches!(&waiting, Waiting::Timer(timer) if !timer.may_run());
            if kept.stopped || ended {
                return;
            }
            kept.sweep_if_due();
            if let Waiting::Timer(timer) = &waiting {
                kept.timers.insert(timer.address(), (at, number));
            }
            let clock = kept.of(at.clock);
            clock.map.insert((at.nanos, number), waiting);
            clock.armed.is_none_or(|armed| at.nanos < armed)
        };
        if sooner {
            ClockTimers::ring(this);
        }
    }

    /// Forgets what waits at `deadline` under `number`.
    pub(crate) fn forget(&self, at: OtherDeadline, number: u64) {
        let gone = self.kept.lock().remove(at, number);
        drop(gone);
    }

    /// A timer's run: looks at its deadline (the one it was `made` with, until it is kept),
    /// and, if it has passed, ends the timer and forgets it.
    pub(super) fn run(&self, entry: &EntryRef, made: OtherDeadline) -> Ran {
        let mut kept = self.kept.lock();
        let (at, number) = kept
            .timers
            .get(&address_of(entry))
            .copied()
            .map_or((made, None), |(at, number)| (at, Some(number)));
        if let Look::At(tick) = self.clock.look(at) {
            return Ran::Again(tick);
        }
        // Retired before it is forgotten: a cancel after this answers false, as for a one-shot
        // fired; a `keep` after this finds it retired and keeps nothing.
        let won = entry.retire();
        let gone = number.and_then(|number| kept.remove(at, number));
        drop(kept);
        drop(gone);
        Ran::Due(won)
    }

    /// Moves the timer of `entry`, if it is kept here, to `to` on its own clock; `None` for
    /// any other timer. `false` if it had ended or is in a run.
    fn reset_timer(&self, entry: &EntryRef, to: Reset) -> Option<bool> {
        let address = address_of(entry);
        let sooner = {
            let mut kept = self.kept.lock();
            let &(at, number) = kept.timers.get(&address)?;
            let delay = match to {
                Reset::After(delay) => delay,
                Reset::At(deadline) => deadline.saturating_duration_since(self.clock.now()),
            };
            let now = self.clock.other_now(at.clock)?;
            let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
            let new = OtherDeadline {
                clock: at.clock,
                nanos: now.saturating_add(nanos),
            };
            let clock = kept.of(at.clock);
            let Some(Waiting::Timer(timer)) = clock.map.get(&(at.nanos, number)) else {
                return Some(false);
            };
            // The entry first: one in a run, or ended, does not move, and nor does its deadline.
            if !timer.move_to(Some(self.clock.estimate(new))) {
                return Some(false);
            }
            let waiting = clock.map.remove(&(at.nanos, number));
            clock
                .map
                .extend(waiting.map(|waiting| ((new.nanos, number), waiting)));
            let sooner = clock.armed.is_none_or(|armed| new.nanos < armed);
            kept.timers.insert(address, (new, number));
            sooner
        };
        // A timer was kept before, so the clock thread runs (or the clock is manual).
        if sooner {
            if let Some(thread) = &*self.thread.lock() {
                thread.ring();
            }
        }
        Some(true)
    }

    /// Each timer's deadline on its clock, by its entry's address (for a snapshot).
    pub(crate) fn deadlines(&self) -> HashMap<usize, OtherDeadline> {
        let kept = self.kept.lock();
        let each = kept.timers.iter();
        each.map(|(&address, &(at, _))| (address, at)).collect()
    }

    /// Re-times the timers: all of a clock that `stepped` names or whose offset moved, else only
    /// those whose deadline passed (see the module above).
    pub(crate) fn round(&self, stepped: PerClock<bool>) -> Round {
        let mut tasks = Vec::new();
        let mut round = Round::default();
        {
            let mut kept = self.kept.lock();
            if kept.stopped {
                round.stopped = true;
                return round;
            }
            for clock in OtherClock::BOTH {
                let Some((now, offset)) = self.clock.offset(clock) else {
                    continue;
                };
                let one = kept.of(clock);
                let last = one.offset.replace(offset);
                let moved =
                    *stepped.of(clock) || last.is_some_and(|last| (offset - last).abs() > SLACK);
                let end = if moved { u64::MAX } else { now };
                let mut dead = Vec::new();
                for (&(nanos, number), waiting) in one.map.range(..=(end, u64::MAX)) {
                    let at = OtherDeadline { clock, nanos };
                    match waiting {
                        Waiting::Timer(timer) if !timer.may_run() => dead.push((at, number)),
                        // Moved under the lock: a reset between this look and the move would
                        // be undone. One mid-run cannot move; its run may have read its clock
                        // before the change.
                        Waiting::Timer(timer) => {
                            let moved = timer.move_to(Some(self.clock.estimate(at)));
                            round.retry |= !moved && timer.may_run();
                        }
                        Waiting::Task(task) => tasks.push(task.clone()),
                    }
                }
                for (at, number) in dead {
                    kept.remove(at, number);
                }
                let one = kept.of(clock);
                let next = one.map.range((now.saturating_add(1), 0)..).next();
                one.armed = next.map(|(place, _)| place.0);
                *round.next.of_mut(clock) = one.armed;
                round.keeping |= !one.map.is_empty();
            }
        }
        for task in tasks {
            task.wake();
        }
        round
    }

    /// How many timers and sleeps are kept (for the tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn kept(&self) -> usize {
        self.kept.lock().len()
    }

    /// Shutdown: keeps nothing more and wakes the clock thread to end.
    pub(crate) fn stop(&self) {
        self.kept.lock().stopped = true;
        if let Some(thread) = &*self.thread.lock() {
            thread.ring();
        }
    }

    /// Shutdown, later: joins the clock thread and lets go of what was kept (the timers
    /// themselves are handed back with the rest).
    pub(crate) fn finish(&self) {
        self.stop();
        let thread = self.thread.lock().take();
        if let Some(thread) = thread {
            thread.join();
        }
        let stopped = Deadlines {
            stopped: true,
            ..Deadlines::default()
        };
        let kept = std::mem::replace(&mut *self.kept.lock(), stopped);
        drop(kept);
    }

    /// Wakes the clock thread, starting it if it is not running (a manual clock's engine has
    /// none: its rounds run as the clock moves). A refused thread leaves the timers at their
    /// estimates, re-timed when the next one is kept.
    fn ring(this: &StdArc<Self>) {
        if this.clock.manual().is_some() {
            return;
        }
        let mut thread = this.thread.lock();
        if thread.is_none() {
            let timers = this.clone();
            *thread = ClockThread::start(move |stepped| timers.round(stepped)).ok();
        }
        if let Some(thread) = &*thread {
            thread.ring();
        }
    }
}

impl Retime for ClockTimers {
    fn reset(&self, entry: &EntryRef, to: Reset) -> Option<bool> {
        self.reset_timer(entry, to)
    }
}
