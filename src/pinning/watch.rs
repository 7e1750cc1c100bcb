//! Pinning a tick thread to its cpu, and unpinning it when its turns keep beginning late.
//!
//! A pinned thread sharing a cpu with a busy thread gets its share and no more, while other
//! cpus may idle. [`LagWatch`] compares each turn's start with the tick it meant to wake at;
//! after `STRIKES` turns in a row more than `LATE` (and two ticks) late it widens the affinity
//! to every cpu for good. Turns woken early count neither way; manual clocks are not watched.

use super::affinity;
use crate::sync::{AtomicUsize, Counter, Ordering};
use crate::time::Tick;

/// How late a turn may begin before it counts as late.
const LATE: std::time::Duration = std::time::Duration::from_millis(10);

/// Late turns in a row after which a pinned thread is unpinned.
const STRIKES: u32 = 3;

/// Where a shard's tick thread runs, as the statistics read it.
#[derive(Default)]
pub(crate) struct Pinning {
    /// 0 if the thread is not pinned, else the cpu plus one. Written by the thread alone.
    pinned: AtomicUsize,
    late_turns: Counter,
}

impl Pinning {
    /// The cpu the tick thread is pinned to, if it is.
    pub(crate) fn pinned_cpu(&self) -> Option<usize> {
        // Relaxed: a statistic, written by the tick thread alone.
        self.pinned.load(Ordering::Relaxed).checked_sub(1)
    }

    /// Turns that began late (see the module documentation).
    pub(crate) fn late_turns(&self) -> u64 {
        self.late_turns.get()
    }

    fn set_pinned(&self, cpu: Option<usize>) {
        // Relaxed: a statistic, written by the tick thread alone; `build` waits for the thread
        // to drop a channel's sender after pinning, ordering it before `build` returns.
        self.pinned
            .store(cpu.map_or(0, |cpu| cpu + 1), Ordering::Relaxed);
    }
}

/// Watches a tick thread's lateness; unpins it when its cpu cannot keep it on time.
pub(crate) struct LagWatch {
    /// Ticks a turn may begin after its intended tick before it counts as late.
    limit: u64,
    /// Late turns in a row so far.
    strikes: u32,
    /// The cpus to widen the affinity to, while the thread is pinned.
    unpin_to: Option<Vec<usize>>,
}

impl LagWatch {
    /// A watch for a shard whose tick lasts `tick_nanos` nanoseconds.
    pub(crate) fn new(tick_nanos: u64) -> Self {
        let late = u64::try_from(LATE.as_nanos()).unwrap_or(u64::MAX);
        LagWatch {
            limit: late.div_ceil(tick_nanos.max(1)).max(2),
            strikes: 0,
            unpin_to: None,
        }
    }

    /// Pins the calling thread to `cpu`, recording it in `pinning`; `all` are the cpus to
    /// widen to if it must be unpinned. A refusal leaves the thread unpinned.
    pub(crate) fn pin(&mut self, cpu: usize, all: Vec<usize>, pinning: &Pinning) {
        if affinity::set_current(&[cpu]) {
            pinning.set_pinned(Some(cpu));
            self.unpin_to = Some(all);
        } else {
            crate::trace::unpinned(cpu, false);
        }
    }

    /// A turn begins at tick `now`, meant for `meant` (`None`: slept until woken); unpins the
    /// thread after `STRIKES` late turns in a row.
    pub(crate) fn observe(&mut self, meant: Option<Tick>, now: Tick, pinning: &Pinning) {
        let Some(meant) = meant else {
            return;
        };
        if now < meant {
            return;
        }
        if now <= meant.saturating_add(self.limit) {
            self.strikes = 0;
            return;
        }
        pinning.late_turns.add(1);
        self.strikes = self.strikes.saturating_add(1);
        if self.strikes >= STRIKES {
            if let Some(all) = self.unpin_to.take() {
                if affinity::set_current(&all) {
                    if let Some(cpu) = pinning.pinned_cpu() {
                        crate::trace::unpinned(cpu, true);
                    }
                    pinning.set_pinned(None);
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::affinity::cpus;
    use super::*;

    #[test]
    fn a_late_turn_is_more_than_ten_milliseconds_and_two_ticks_late() {
        assert_eq!(LagWatch::new(1_000_000).limit, 10);
        assert_eq!(LagWatch::new(100_000).limit, 100);
        assert_eq!(LagWatch::new(1_000_000_000).limit, 2);
        let pinning = Pinning::default();
        let mut watch = LagWatch::new(1_000_000);
        watch.observe(Some(Tick::new(100)), Tick::new(110), &pinning);
        watch.observe(None, Tick::new(10_000), &pinning);
        assert_eq!(pinning.late_turns(), 0);
        watch.observe(Some(Tick::new(100)), Tick::new(111), &pinning);
        assert_eq!(pinning.late_turns(), 1);
    }

    #[test]
    fn three_late_turns_in_a_row_unpin_the_thread() {
        let pinning = Pinning::default();
        pinning.set_pinned(Some(0));
        let mut watch = LagWatch::new(1_000_000);
        // Not pinned through the watch: nothing to unpin.
        for _ in 0..3 {
            watch.observe(Some(Tick::new(0)), Tick::new(50), &pinning);
        }
        assert_eq!(pinning.pinned_cpu(), Some(0));
        let all = cpus();
        if all.is_empty() || !affinity::set_current(&all) {
            return; // no affinity on this system, or widening refused: nothing to test
        }
        watch.unpin_to = Some(all);
        // Woken early: neither late nor on time.
        watch.observe(Some(Tick::new(100)), Tick::new(50), &pinning);
        // An on-time turn breaks a run of late ones.
        watch.observe(Some(Tick::new(0)), Tick::new(0), &pinning);
        watch.observe(Some(Tick::new(0)), Tick::new(50), &pinning);
        watch.observe(Some(Tick::new(0)), Tick::new(50), &pinning);
        watch.observe(Some(Tick::new(0)), Tick::new(0), &pinning);
        watch.observe(Some(Tick::new(0)), Tick::new(50), &pinning);
        watch.observe(Some(Tick::new(0)), Tick::new(50), &pinning);
        assert_eq!(pinning.pinned_cpu(), Some(0));
        watch.observe(Some(Tick::new(0)), Tick::new(50), &pinning);
        assert_eq!(pinning.pinned_cpu(), None, "unpinned after three in a row");
        assert_eq!(pinning.late_turns(), 8);
        // An unpinned thread stays unpinned.
        pinning.set_pinned(Some(1));
        for _ in 0..3 {
            watch.observe(Some(Tick::new(0)), Tick::new(50), &pinning);
        }
        assert_eq!(pinning.pinned_cpu(), Some(1), "nothing left to unpin");
    }
}
