//! Moving a pinned tick thread off a core that does not run it, and back.
//!
//! A tick thread is pinned to its core. When something else holds that core (a thread the
//! kernel will not preempt for it, a kernel thread that does not yield, a burst of another
//! program), the tick thread waits, runnable, while other cores may be idle: the kernel
//! never runs a pinned thread elsewhere. Its timers fire as late as the wait is long, a few
//! milliseconds at a time on a two-core machine (see BENCHMARKS.md).
//!
//! So a shard looks after a neighbour (the next shard, in a ring): at each of its own turns
//! it reads where the neighbour is in its loop (its sleep word and the tick its last turn
//! began at), and if the neighbour should have begun a turn [`Spans::behind`] ticks ago (a
//! millisecond, or a tick if that is longer) and has not, and was already seen so that long
//! ago ([`Watch`]), it moves the neighbour's thread to the engine's other cores
//! (`sched_setaffinity` on the neighbour's thread id). The kernel moves a thread that waits to
//! run at once when its own core leaves its set, and runs it where there is room. The second
//! look keeps a thread that a producer has just woken from a long sleep (its last turn is from
//! before the sleep) from counting as behind at once.
//!
//! [`AWAY`] later, at one of its own turns, the same shard sends the thread home (its set is
//! its own core again), and moves it again if it is behind there again. The thread takes no
//! part: a thread that went home by itself would wait for its busy core inside that system
//! call, and the neighbour could do nothing meanwhile. When a neighbour is behind for the
//! third time in a row within [`AWAY`] of being sent home, its core stays busy: the shard
//! lets it go of that core for good instead (its set is every core, and the stats say it is
//! unpinned), as its own watch does (see `pinning`) when its turns begin late, which a thread
//! that its core never runs cannot see. A shard looks only while it turns: a sleeping shard
//! looks at nothing and costs nothing, and a thread it moved stays away until it turns
//! again. A turn long on its own
//! (slow inline callbacks) looks the same from outside as a thread that does not run, and may
//! be moved too: harmless beyond the pinning lost for a while.
//!
//! The state of a move is one word, `away`: `HOME`; `MOVING` while the neighbour makes its
//! system call; `STAYING` once the thread is not to be moved again (it, or the neighbour, let
//! go of its core for good, or it leaves its loop); else the tick of the move plus `AWAY_BASE`. The neighbour claims
//! the word by a compare-and-swap to `MOVING` (from `HOME` to move, from a tick to send home),
//! makes its call, and only then stores the outcome (the tick, `HOME`, or what was there if
//! the call failed). The thread stays put by waiting out a claim (a system call long) and then
//! swapping in `STAYING` for good. So a thread that is gone is never moved (its id could
//! belong to another thread by then), and no move or return lands after a thread widened its
//! affinity: were a move published before it was made, or a return's `HOME` stored before
//! its call, the widening could land between the two and be undone (loom model 16). Each
//! outcome is stored with Release and each claim takes it with Acquire, so that a widening
//! comes after the neighbour's call it follows (the same model, with Relaxed stores, finds the
//! two calls unordered).

use crate::sync::{AtomicU64, Ordering};

/// The least a neighbour must be behind before it is moved, in time: less is the ordinary
/// jitter of a wake-up.
pub(super) const LEAST_BEHIND: std::time::Duration = std::time::Duration::from_millis(1);

/// How long a moved thread stays away before it is sent home.
pub(super) const AWAY: std::time::Duration = std::time::Duration::from_millis(50);

/// Times in a row a thread is found behind, each within [`AWAY`] of being sent home, at which
/// it is let go of its core instead of moved.
const BEHIND_IN_A_ROW: u32 = 3;

/// [`LEAST_BEHIND`] and [`AWAY`] in ticks of the engine's clock (at least one each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Spans {
    /// How many ticks behind a thread must be to be moved.
    pub(super) behind: u64,
    /// How many ticks a moved thread stays away.
    pub(super) away: u64,
}

impl Spans {
    /// The spans at a tick of `tick_nanos` nanoseconds.
    pub(super) fn new(tick_nanos: u64) -> Self {
        let ticks = |span: std::time::Duration| {
            u64::try_from(span.as_nanos())
                .unwrap_or(u64::MAX)
                .div_ceil(tick_nanos.max(1))
                .max(1)
        };
        Spans {
            behind: ticks(LEAST_BEHIND),
            away: ticks(AWAY),
        }
    }
}

/// `away` while the thread is at home.
const HOME: u64 = 0;
/// `away` while the neighbour makes its system call: it holds the word until it stores the
/// outcome.
const MOVING: u64 = 1;
/// `away` once the thread is not to be moved again: it let go of its core for good, or left
/// its loop (so that its id is never used after the thread is gone).
const STAYING: u64 = 2;
/// `away` is the tick of the move plus this, once the move is done.
const AWAY_BASE: u64 = 3;

/// Where a shard thread is in its loop, and whether it is moved, for the neighbour that looks
/// after it.
pub(crate) struct Whereabouts {
    /// The thread's id in the operating system (0 until the thread records it).
    tid: AtomicU64,
    /// The tick the thread's last turn began at.
    began: AtomicU64,
    /// `HOME`, `MOVING`, `STAYING`, or the tick of the move plus `AWAY_BASE` (see the module
    /// documentation).
    away: AtomicU64,
}

/// What a shard's sleep word says (see `signal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sleeping {
    /// Polling, or woken: it turns again within a tick.
    No,
    /// Until this tick.
    Until(u64),
    /// Until woken.
    Forever,
}

impl Whereabouts {
    pub(crate) fn new() -> Self {
        Whereabouts {
            tid: AtomicU64::new(0),
            began: AtomicU64::new(0),
            away: AtomicU64::new(HOME),
        }
    }

    /// Records the calling thread, `tid`, as the shard's.
    pub(crate) fn record_thread(&self, tid: u64) {
        // Relaxed: a neighbour that reads 0 moves nothing; the id is read under a claim,
        // which `stay_put` waits out before the thread goes.
        self.tid.store(tid, Ordering::Relaxed);
    }

    /// The shard thread begins a turn at tick `now`.
    pub(crate) fn begin_turn(&self, now: u64) {
        // Relaxed: a stale value only delays or brings forward a move by a turn.
        self.began.store(now, Ordering::Relaxed);
    }

    /// The tick the thread's last turn began at.
    pub(crate) fn began(&self) -> u64 {
        // Relaxed: see `begin_turn`.
        self.began.load(Ordering::Relaxed)
    }

    /// Neighbour's side, at tick `now`, for a thread found behind (see [`Watch`]): if it is at
    /// home, moves it with `move_off` (given its id; true if it moved). Returns whether it was
    /// moved.
    pub(crate) fn try_move(&self, now: u64, move_off: impl FnOnce(u64) -> bool) -> bool {
        self.claimed(HOME, |tid| {
            move_off(tid).then(|| now.saturating_add(AWAY_BASE))
        })
    }

    /// Neighbour's side, at tick `now`: if the thread was moved `away` ticks ago or more, sends
    /// it home with `move_home` (given its id; true if it went). Returns whether it went.
    pub(crate) fn return_if_due(
        &self,
        now: u64,
        away: u64,
        move_home: impl FnOnce(u64) -> bool,
    ) -> bool {
        // Relaxed: the claim reads the word again.
        let word = self.away.load(Ordering::Relaxed);
        word >= AWAY_BASE
            && now >= (word - AWAY_BASE).saturating_add(away)
            && self.claimed(word, |tid| move_home(tid).then_some(HOME))
    }

    /// Neighbour's side, for a thread whose core stays busy: lets it go of its core for good
    /// with `widen` (given its id; true if done), unless it stays put already. Returns whether
    /// it was let go.
    pub(crate) fn let_go(&self, widen: impl FnOnce(u64) -> bool) -> bool {
        // Relaxed: the claim reads the word again.
        let word = self.away.load(Ordering::Relaxed);
        (word == HOME || word >= AWAY_BASE)
            && self.claimed(word, |tid| widen(tid).then_some(STAYING))
    }

    /// Claims the word from `from`, runs `call` with the thread's id (none recorded: nothing
    /// is done), and stores what it returns (`None`: it failed, and `from` is stored back).
    /// Returns whether the call was made and succeeded.
    fn claimed(&self, from: u64, call: impl FnOnce(u64) -> Option<u64>) -> bool {
        // Acquire: pairs with the Release store of the outcome before, so this call comes
        // after the one before it. Relaxed on failure: nothing is done.
        if self
            .away
            .compare_exchange(from, MOVING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        // Relaxed: read under the claim (see `record_thread`).
        let tid = self.tid.load(Ordering::Relaxed);
        let outcome = if tid == 0 { None } else { call(tid) };
        // Release: the call happens before whatever takes the word next (a claim, or a stay).
        self.away.store(outcome.unwrap_or(from), Ordering::Release);
        outcome.is_some()
    }

    /// The thread's side: it is not to be moved again (it lets go of its core for good, or
    /// leaves its loop). Waits out a call in flight, then runs `settle` (which widens the
    /// thread's affinity past any move, or does nothing).
    pub(crate) fn stay_put(&self, settle: impl FnOnce()) {
        loop {
            // Relaxed load: the swap below reads the word again.
            let word = self.away.load(Ordering::Relaxed);
            // Acquire: pairs with the Release store of a call's outcome, so `settle` comes
            // after it.
            if word != MOVING
                && self
                    .away
                    .compare_exchange(word, STAYING, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                break;
            }
            // The neighbour is in the middle of its call: a system call away from done.
            crate::sync::thread::yield_now();
        }
        settle();
    }
}

/// What a shard last saw of the neighbour it looks after: the neighbour's sleep word and the
/// tick its last turn began at, since when it has seen them unchanged, and how its moves went.
#[derive(Default)]
pub(super) struct Watch {
    /// The sleep word and last turn seen, and the tick they were first seen at.
    seen: Option<(Sleeping, u64, u64)>,
    /// The tick of the last look.
    looked: u64,
    /// The tick the neighbour was last sent home at.
    sent_home: Option<u64>,
    /// Moves in a row, each within `away` of the thread being sent home.
    in_a_row: u32,
}

impl Watch {
    /// At tick `now`, the neighbour `sleeping`, its last turn begun at `began`: whether it
    /// is `spans.behind` ticks or more behind a turn it was due to begin, was already seen so
    /// (unchanged) that long ago. A look more than `spans.behind`
    /// ticks after the last one (this shard slept, or turned long) starts over: what it saw
    /// then says nothing of now.
    pub(super) fn behind(
        &mut self,
        sleeping: Sleeping,
        began: u64,
        now: u64,
        spans: Spans,
    ) -> bool {
        let limit = spans.behind;
        if now > self.looked.saturating_add(limit) {
            self.seen = None;
        }
        self.looked = now;
        let due = match sleeping {
            Sleeping::No => began.saturating_add(1),
            Sleeping::Until(until) if began < until => until,
            // Turned since its sleep ended, or sleeps until woken: not behind anything.
            Sleeping::Until(_) | Sleeping::Forever => {
                self.seen = None;
                return false;
            }
        };
        let since = match self.seen {
            Some((seen, seen_began, since)) if (seen, seen_began) == (sleeping, began) => since,
            _ => {
                self.seen = Some((sleeping, began, now));
                now
            }
        };
        now >= due.saturating_add(limit) && now >= since.saturating_add(limit)
    }

    /// Whether the neighbour, found behind at tick `now`, is to be let go of its core rather
    /// than moved: the last of [`BEHIND_IN_A_ROW`] times, each soon after it was sent home.
    pub(super) fn last_straw(&self, now: u64, spans: Spans) -> bool {
        self.soon(now, spans) && self.in_a_row + 1 >= BEHIND_IN_A_ROW
    }

    /// The neighbour was moved at tick `now`.
    pub(super) fn moved(&mut self, now: u64, spans: Spans) {
        self.in_a_row = if self.soon(now, spans) {
            self.in_a_row.saturating_add(1)
        } else {
            1
        };
        self.seen = None;
    }

    /// Whether tick `now` is within `away` of the neighbour's last return.
    fn soon(&self, now: u64, spans: Spans) -> bool {
        self.sent_home
            .is_some_and(|home| now <= home.saturating_add(spans.away))
    }

    /// The neighbour was sent home at tick `now`.
    pub(super) fn sent_home(&mut self, now: u64) {
        self.sent_home = Some(now);
        self.seen = None;
    }
}

/// The calling thread's id in the operating system (`None` where there is none to use).
#[cfg(all(target_os = "linux", not(miri), not(loom)))]
pub(super) fn current_tid() -> Option<u64> {
    // SAFETY: `gettid` takes no arguments and cannot fail.
    let tid = unsafe { libc::gettid() };
    u64::try_from(tid).ok().filter(|&tid| tid != 0)
}

#[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
pub(super) fn current_tid() -> Option<u64> {
    None
}

/// Lets thread `tid` run on the cores `cores` only (false if there are none, or the system
/// refuses). The kernel moves it at once if it runs, or waits to run, elsewhere.
#[cfg(all(target_os = "linux", not(miri)))]
pub(super) fn set_affinity(tid: u64, cores: impl IntoIterator<Item = usize>) -> bool {
    let Ok(tid) = libc::pid_t::try_from(tid) else {
        return false;
    };
    // SAFETY: an all-zero `cpu_set_t` is a valid empty set; `CPU_SET` writes bits inside it
    // for ids below `CPU_SETSIZE` (checked); `sched_setaffinity` only reads the set, with its
    // true size. `tid` is a thread of this process that has not left its loop (a claim of its
    // move word, which `Whereabouts::stay_put` waits out before the thread goes, holds it).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let mut any = false;
        for core in cores {
            if core < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(core, &mut set);
                any = true;
            }
        }
        any && libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(not(all(target_os = "linux", not(miri))))]
pub(super) fn set_affinity(_: u64, _: impl IntoIterator<Item = usize>) -> bool {
    false
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Spans of one tick behind and 50 away: a one-millisecond tick.
    const MS: Spans = Spans {
        behind: 1,
        away: 50,
    };

    #[test]
    fn the_spans_are_whole_ticks_and_at_least_one() {
        assert_eq!(Spans::new(1_000_000), MS);
        assert_eq!(
            Spans::new(100_000),
            Spans {
                behind: 10,
                away: 500
            }
        );
        assert_eq!(Spans::new(60_000_000_000), Spans { behind: 1, away: 1 });
    }

    #[test]
    fn a_thread_is_behind_once_it_misses_a_turn_by_the_limit_and_was_seen_so() {
        let mut watch = Watch::default();
        // Polling, last turn at 10: due at 11, behind from 12, but first seen at 11.
        assert!(!watch.behind(Sleeping::No, 10, 11, MS));
        assert!(watch.behind(Sleeping::No, 10, 12, MS), "seen at 11 already");
        let mut watch = Watch::default();
        assert!(!watch.behind(Sleeping::No, 10, 12, MS), "first seen now");
        assert!(watch.behind(Sleeping::No, 10, 13, MS));
        // A turn since starts the look over.
        assert!(!watch.behind(Sleeping::No, 13, 14, MS));
        assert!(watch.behind(Sleeping::No, 13, 15, MS));
        let mut watch = Watch::default();
        assert!(!watch.behind(Sleeping::Until(20), 10, 20, MS), "due at 20");
        assert!(watch.behind(Sleeping::Until(20), 10, 21, MS));
        assert!(
            !watch.behind(Sleeping::Until(20), 20, 22, MS),
            "it turned since"
        );
        assert!(!watch.behind(Sleeping::Forever, 0, u64::MAX, MS));
        // A thread just woken from a long sleep: due long ago, but seen so only now.
        let mut watch = Watch::default();
        let spans = Spans { behind: 10, ..MS };
        assert!(!watch.behind(Sleeping::Forever, 5, 500, spans));
        assert!(!watch.behind(Sleeping::No, 5, 501, spans));
        assert!(!watch.behind(Sleeping::No, 5, 510, spans));
        assert!(watch.behind(Sleeping::No, 5, 511, spans));
    }

    #[test]
    fn a_look_long_after_the_last_starts_over() {
        // Seen mid-turn at 10 (last turn at 10); the looker then sleeps, and both are woken
        // at 500, the neighbour's word saying awake before it has run.
        let mut watch = Watch::default();
        assert!(!watch.behind(Sleeping::No, 10, 10, MS));
        assert!(
            !watch.behind(Sleeping::No, 10, 500, MS),
            "what it saw at 10 is stale"
        );
        assert!(watch.behind(Sleeping::No, 10, 501, MS));
    }

    #[test]
    fn a_thread_behind_again_soon_after_going_home_the_third_time_is_let_go() {
        let mut watch = Watch::default();
        assert!(!watch.last_straw(100, MS));
        watch.moved(100, MS);
        watch.sent_home(150);
        assert!(!watch.last_straw(160, MS));
        watch.moved(160, MS);
        watch.sent_home(210);
        assert!(
            watch.last_straw(220, MS),
            "the third time, each within 50 of going home"
        );
        assert!(!watch.last_straw(261, MS), "not soon after going home");
        // A move long after going home starts the count again.
        watch.moved(400, MS);
        watch.sent_home(450);
        assert!(!watch.last_straw(460, MS));
    }

    #[test]
    fn a_thread_let_go_is_not_moved_or_sent_home_again() {
        let place = Whereabouts::new();
        place.record_thread(7);
        assert!(place.try_move(10, |_| true));
        assert!(!place.let_go(|_| false), "refused");
        assert!(place.let_go(|tid| tid == 7));
        assert!(!place.return_if_due(1_000, 1, |_| panic!("sent home")));
        assert!(!place.try_move(1_000, |_| panic!("moved")));
        assert!(!place.let_go(|_| panic!("let go twice")));
        place.stay_put(|| {});
    }

    #[test]
    fn a_thread_is_moved_once_and_sent_home_after_its_time_away() {
        let place = Whereabouts::new();
        let moves = std::cell::Cell::new(0);
        let mover = |tid: u64| {
            assert_eq!(tid, 7);
            moves.set(moves.get() + 1);
            true
        };
        assert!(!place.try_move(100, mover), "no thread yet");
        place.record_thread(7);
        assert!(place.try_move(101, mover));
        assert!(!place.try_move(102, mover), "away already");
        assert_eq!(moves.get(), 1);
        let homes = std::cell::Cell::new(0);
        let go_home = |tid: u64| {
            assert_eq!(tid, 7);
            homes.set(homes.get() + 1);
            true
        };
        assert!(!place.return_if_due(150, 50, go_home));
        assert!(!place.return_if_due(151, 50, |_| false), "refused");
        assert!(place.return_if_due(152, 50, go_home), "tried again");
        assert!(!place.return_if_due(153, 50, go_home));
        assert_eq!(homes.get(), 1);
        // A refused move leaves the thread at home, to be tried again.
        assert!(!place.try_move(160, |_| false));
        assert!(place.try_move(161, mover));
        assert_eq!(moves.get(), 2);
    }

    #[test]
    fn a_thread_that_stays_put_is_not_moved_or_sent_home_again() {
        let place = Whereabouts::new();
        place.record_thread(7);
        assert!(place.try_move(10, |_| true));
        let settled = std::cell::Cell::new(false);
        place.stay_put(|| settled.set(true));
        assert!(settled.get());
        assert!(!place.return_if_due(1_000, 1, |_| panic!("sent home")));
        assert!(!place.try_move(1_000, |_| panic!("moved")));
        // Staying again (the loop's exit after a let-go) is fine.
        place.stay_put(|| {});
        assert!(!place.try_move(2_000, |_| panic!("moved")));
    }
}
