//! [`ClockTimers`]: an engine's timers and sleeps on the other clocks, by deadline, and the
//! round that re-times them (see the module above).

use std::collections::BTreeMap;
use std::task::Waker;

use super::thread::{ClockThread, Round};
use crate::sync::{Arc, AtomicU64, Mutex, Ordering};
use crate::time::{Look, OtherClock, OtherDeadline, TickClock};
use crate::timer::TimerHandle;

/// A change of a clock's offset from the monotonic clock beyond this between two rounds (1 ms)
/// is a step or a suspend: every timer on it is re-timed. Less is drift, left to the runs.
const SLACK: i128 = 1_000_000;

/// Where a timer is kept: its deadline in its clock's nanoseconds, then a number of its own.
type Key = (u64, u64);

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

/// The maps, one per clock, and what the rounds remember.
#[derive(Default)]
struct Kept {
    maps: [BTreeMap<Key, Waiting>; 2],
    /// Each clock's offset from the monotonic clock at the last round.
    offsets: [Option<i128>; 2],
    /// The next deadline the clock thread waits for, per clock.
    armed: [Option<u64>; 2],
    /// How many were kept at the last sweep of the timers that can no longer run.
    kept: usize,
    stopped: bool,
}

impl Kept {
    /// Drops the timers that can no longer run once the maps have doubled since the last
    /// sweep: cancelled ones stay until then, and the maps stay within twice the live ones.
    fn sweep_if_due(&mut self) {
        let len = self.maps.iter().map(BTreeMap::len).sum::<usize>();
        if len <= 2 * self.kept + 64 {
            return;
        }
        for map in &mut self.maps {
            map.retain(|_, waiting| match waiting {
                Waiting::Timer(timer) => timer.may_run(),
                Waiting::Task(_) => true,
            });
        }
        self.kept = self.maps.iter().map(BTreeMap::len).sum();
    }
}

/// An engine's timers and sleeps on the other clocks (see the module above).
pub(crate) struct ClockTimers {
    clock: TickClock,
    kept: Mutex<Kept>,
    /// The next key's own number.
    next: AtomicU64,
    /// The clock thread, once started (system clocks only).
    thread: std::sync::Mutex<Option<ClockThread>>,
}

impl ClockTimers {
    pub(crate) fn new(clock: TickClock) -> Self {
        ClockTimers {
            clock,
            kept: Mutex::new(Kept::default()),
            next: AtomicU64::new(0),
            thread: std::sync::Mutex::new(None),
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

    /// Keeps `waiting` at `deadline` under `number`; wakes the clock thread (starting it) if the
    /// deadline comes before the one it waits for. Nothing after shutdown, nor for a timer that
    /// ended already (its run retires it before it forgets it).
    pub(crate) fn keep(this: &Arc<Self>, at: OtherDeadline, number: u64, waiting: Waiting) {
        let sooner = {
            let mut kept = this.kept.lock();
            let ended = matches!(&waiting, Waiting::Timer(timer) if !timer.may_run());
            if kept.stopped || ended {
                return;
            }
            kept.sweep_if_due();
            let i = at.clock.index();
            kept.maps[i].insert((at.nanos, number), waiting);
            kept.armed[i].is_none_or(|armed| at.nanos < armed)
        };
        if sooner && this.clock.manual().is_none() {
            ClockTimers::ring(this);
        }
    }

    /// Forgets what waits at `deadline` under `number`.
    pub(crate) fn forget(&self, at: OtherDeadline, number: u64) {
        let gone = self.kept.lock().maps[at.clock.index()].remove(&(at.nanos, number));
        drop(gone);
    }

    /// Re-times the timers: all of a clock that `told` names or whose offset moved, else only
    /// those whose deadline passed (see the module above).
    pub(crate) fn round(&self, told: [bool; 2]) -> Round {
        let (mut timers, mut tasks) = (Vec::new(), Vec::new());
        let mut round = Round::default();
        {
            let mut guard = self.kept.lock();
            let kept = &mut *guard;
            if kept.stopped {
                round.stopped = true;
                return round;
            }
            for clock in OtherClock::BOTH {
                let i = clock.index();
                let Some((now, offset)) = self.clock.offset(clock) else {
                    continue;
                };
                let last = kept.offsets[i].replace(offset);
                let moved = told[i] || last.is_some_and(|last| (offset - last).abs() > SLACK);
                let map = &mut kept.maps[i];
                let end = if moved { u64::MAX } else { now };
                let mut dead = Vec::new();
                for (&key, waiting) in map.range(..=(end, u64::MAX)) {
                    match waiting {
                        Waiting::Timer(timer) if !timer.may_run() => dead.push(key),
                        Waiting::Timer(timer) => timers.push((timer.clone(), clock, key.0)),
                        Waiting::Task(task) => tasks.push(task.clone()),
                    }
                }
                for key in dead {
                    map.remove(&key);
                }
                round.next[i] = map
                    .range((now.saturating_add(1), 0)..)
                    .next()
                    .map(|k| k.0 .0);
                round.keeping |= !map.is_empty();
                kept.armed[i] = round.next[i];
            }
        }
        for (timer, clock, nanos) in timers {
            let tick = match self.clock.look(OtherDeadline { clock, nanos }) {
                Look::Due => self.clock.tick_now(),
                Look::At(tick) => tick,
            };
            // One mid-run cannot move; its run may have read its clock before the change.
            round.retry |= !timer.move_to(Some(tick)) && timer.may_run();
        }
        for task in tasks {
            task.wake();
        }
        round
    }

    /// How many timers and sleeps are kept (for the tests).
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.kept.lock().maps.iter().map(BTreeMap::len).sum()
    }

    /// Shutdown: keeps nothing more and wakes the clock thread to end.
    pub(crate) fn stop(&self) {
        self.kept.lock().stopped = true;
        if let Some(thread) = &*self.lock_thread() {
            thread.ring();
        }
    }

    /// Shutdown, later: joins the clock thread and lets go of what was kept (the timers
    /// themselves are handed back with the rest).
    pub(crate) fn finish(&self) {
        self.stop();
        let thread = self.lock_thread().take();
        if let Some(thread) = thread {
            thread.join();
        }
        let maps = std::mem::take(&mut self.kept.lock().maps);
        drop(maps);
    }

    /// Wakes the clock thread, starting it if it is not running. A refused thread leaves the timers
    /// at their estimates, re-timed when the next one is kept.
    fn ring(this: &Arc<Self>) {
        let mut thread = this.lock_thread();
        if thread.is_none() {
            let timers = this.clone();
            *thread = ClockThread::start(move |told| timers.round(told)).ok();
        }
        if let Some(thread) = &*thread {
            thread.ring();
        }
    }

    fn lock_thread(&self) -> std::sync::MutexGuard<'_, Option<ClockThread>> {
        self.thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
