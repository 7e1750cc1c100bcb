//! Pinning a tick thread to its core, and letting go of the core when it is too busy to keep
//! the shard on time.
//!
//! A pinned tick thread cannot move away from a core that another busy process shares: the
//! scheduler gives it its share of that core and no more, and its turns begin late while the
//! other cores may be idle. So the thread watches how late its turns begin against the tick
//! it meant to wake at (a manual clock's jumps are not watched; a turn woken early by new work
//! counts neither way). When `STRIKES` turns in a row begin more than `LATE` (and at least two
//! ticks) late, it widens its affinity to every core the engine was built to use, and the
//! scheduler moves it where there is room. It stays unpinned from then on; the stats say so,
//! and no neighbour moves it again (see `moving`; one whose widening is refused stays where it
//! is, and is not moved either).
//! The time a turn itself takes counts (a thread preempted mid-turn is starved too), so turns
//! long on their own (slow inline callbacks) can also let go of an idle core: harmless beyond
//! the pinning lost.

use core_affinity::CoreId;

use super::core::ShardCore;

/// How late a turn may begin before it counts as late.
const LATE: std::time::Duration = std::time::Duration::from_millis(10);

/// Late turns in a row after which a pinned thread lets go of its core.
const STRIKES: u32 = 3;

/// Watches a tick thread's lateness; unpins it when its core cannot keep it on time.
pub(super) struct LagWatch {
    /// Ticks a turn may begin after its intended tick before it counts as late.
    limit: u64,
    /// Late turns in a row so far.
    strikes: u32,
    /// The cores to widen the affinity to, while the thread is pinned.
    unpin_to: Option<Vec<CoreId>>,
}

impl LagWatch {
    /// A watch for a shard whose tick lasts `tick` nanoseconds.
    pub(super) fn new(tick_nanos: u64) -> Self {
        let late = u64::try_from(LATE.as_nanos()).unwrap_or(u64::MAX);
        LagWatch {
            limit: late.div_ceil(tick_nanos.max(1)).max(2),
            strikes: 0,
            unpin_to: None,
        }
    }

    /// The thread was pinned; `all` are the cores to widen to if it must let go.
    pub(super) fn pinned(&mut self, all: Vec<CoreId>) {
        self.unpin_to = Some(all);
    }

    /// A turn begins at tick `now`, having meant to begin at tick `meant` (`None`: it slept
    /// until woken, so it meant nothing). Counts a late turn, and lets go of the core after
    /// too many in a row. A turn that begins before it meant to (woken early by new work)
    /// says nothing either way.
    pub(super) fn observe(&mut self, meant: Option<u64>, now: u64, core: &ShardCore) {
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
        core.counts().add_late_turn();
        self.strikes = self.strikes.saturating_add(1);
        if self.strikes >= STRIKES {
            if let Some(all) = self.unpin_to.take() {
                // Not moved again from here on: a neighbour's move (see `moving`) landing
                // after the widening would pin the thread away from its home for good.
                core.whereabouts().stay_put(|| {
                    if widen_affinity(&all) {
                        if let Some(id) = core.pinned_core() {
                            crate::trace::unpinned(id, true);
                        }
                        core.set_unpinned();
                    }
                });
            }
        }
    }
}

/// Lets the calling thread run on any of `cores`.
#[cfg(target_os = "linux")]
fn widen_affinity(cores: &[CoreId]) -> bool {
    // SAFETY: an all-zero `cpu_set_t` is a valid empty set; `CPU_SET` writes bits inside it
    // for ids below `CPU_SETSIZE` (checked); `sched_setaffinity` only reads the set, for the
    // calling thread (pid 0), with its true size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for core in cores {
            if core.id < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(core.id, &mut set);
            }
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Elsewhere a pinned thread stays pinned.
#[cfg(not(target_os = "linux"))]
fn widen_affinity(_: &[CoreId]) -> bool {
    false
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::time::TickClock;

    fn shard_core() -> ShardCore {
        let tick = std::time::Duration::from_millis(1);
        ShardCore::new(1, TickClock::new(tick, 1 << 36, u64::MAX, None), None, 0)
    }

    #[test]
    fn a_late_turn_is_more_than_ten_milliseconds_and_two_ticks_late() {
        assert_eq!(LagWatch::new(1_000_000).limit, 10);
        assert_eq!(LagWatch::new(100_000).limit, 100);
        assert_eq!(LagWatch::new(1_000_000_000).limit, 2);
        let core = shard_core();
        let mut watch = LagWatch::new(1_000_000);
        watch.observe(Some(100), 110, &core);
        watch.observe(None, 10_000, &core);
        assert_eq!(core.counts().late_turns(), 0);
        watch.observe(Some(100), 111, &core);
        assert_eq!(core.counts().late_turns(), 1);
    }

    #[test]
    fn three_late_turns_in_a_row_let_go_of_the_core() {
        let core = shard_core();
        core.set_pinned(0);
        let mut watch = LagWatch::new(1_000_000);
        // Not pinned through the watch: nothing to let go of.
        for _ in 0..3 {
            watch.observe(Some(0), 50, &core);
        }
        assert_eq!(core.pinned_core(), Some(0));
        // Pinned; an on-time turn breaks a run of late ones.
        let all = core_affinity::get_core_ids().unwrap_or_default();
        if all.is_empty() || !widen_affinity(&all) {
            return; // no affinity on this system, or widening refused: nothing to test
        }
        watch.pinned(all);
        // Woken early: neither late nor on time.
        watch.observe(Some(100), 50, &core);
        watch.observe(Some(0), 0, &core);
        watch.observe(Some(0), 50, &core);
        watch.observe(Some(0), 50, &core);
        watch.observe(Some(0), 0, &core);
        watch.observe(Some(0), 50, &core);
        watch.observe(Some(0), 50, &core);
        assert_eq!(core.pinned_core(), Some(0));
        watch.observe(Some(0), 50, &core);
        assert_eq!(
            core.pinned_core(),
            None,
            "let go after three late turns in a row"
        );
        assert_eq!(core.counts().late_turns(), 8);
        // A thread that let go stays unpinned.
        core.set_pinned(1);
        for _ in 0..3 {
            watch.observe(Some(0), 50, &core);
        }
        assert_eq!(core.pinned_core(), Some(1), "nothing left to let go of");
    }
}
