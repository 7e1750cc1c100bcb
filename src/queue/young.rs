//! A lane's young timers: new timers its owner keeps in the lane until they have lived long enough
//! to matter, so that one cancelled young never reaches the shard.
//!
//! The owner pushes each new timer, with the time it was made, onto a bounded FIFO of cells.
//! While it schedules, it looks at the front: a cancelled timer it takes back at once (its
//! memory stays in the owner's cache for the next schedule), a live one it sends to the shard
//! once it is old or the queue long (see `shard::lane::young`). A thread that stops scheduling
//! leaves its young timers to the shard, which takes them all once the oldest has waited a
//! horizon.
//!
//! # Who moves `head`
//!
//! The owner (sweeping) and the shard or shutdown (taking) both move `head`, never at once:
//!
//! - The owner marks a schedule `busy` ([`Young::enter`]), pushes, passes a SeqCst fence
//!   ([`Fenced`]) and sweeps ([`Busy::sweep`]) only if no one is `taking` (Acquire). The shard sets `taking`,
//!   passes a SeqCst fence, and takes only if the owner is not `busy` (Acquire). A Dekker
//!   pair: at most one of them goes on, and each sees what the other left (`busy` and
//!   `taking` are cleared Release).
//! - Shutdown sets its stop flag and passes a SeqCst fence, then waits out `busy`; an owner
//!   that entered later sees the flag after its own fence, and neither sweeps nor sends.
//!
//! So the owner reads its front entries knowing no one takes them meanwhile. A push never races
//! a take: a take stops at the `tail` it read, a push writes only past it.
//!
//! # Waking the shard
//!
//! `oldest` is the time the front timer was made, stored by the owner when the front changes.
//! A shard going to sleep reads it after its announcement's fence and sleeps no longer than
//! `oldest` plus the horizon; an owner whose push the shard may have missed reads the sleep
//! word after its fence and wakes the shard (with [`hurry`](Young::hurry), to take at once)
//! only if the shard sleeps past its timer's horizon. See `shard::signal`.

use std::ptr;

use crossbeam_utils::CachePadded;

use crate::entry::{Entry, EntryRef};
use crate::sync::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Fenced, Ordering, UnsafeCell};
use crate::time::Nanos;

/// Cells of a young queue: a power of two. A handful under loom, so models reach a full queue.
#[cfg(not(loom))]
pub(crate) const YOUNG_CELLS: usize = 2048;
#[cfg(loom)]
pub(crate) const YOUNG_CELLS: usize = 2;

/// One young timer: its entry (one strong count) and when it was made.
struct Cell {
    entry: AtomicPtr<Entry>,
    /// When the timer was made; the owner's alone.
    born: UnsafeCell<Nanos>,
}

/// What the owner writes on every schedule, on one cache line.
struct OwnerLine {
    /// The next cell the owner fills.
    tail: AtomicUsize,
    /// The next cell to sweep or take.
    head: AtomicUsize,
    /// Set while a [`Busy`] lives: the owner is in a schedule on this lane.
    busy: AtomicBool,
    /// When the front timer was made: a [`Nanos`], as a `u64` for the atomic.
    oldest: AtomicU64,
}

/// What others write, read by the owner on every schedule.
struct OthersLine {
    /// Set while the shard takes (see the module documentation).
    taking: AtomicBool,
    /// Set by a thread that needs the young timers taken at once.
    hurry: AtomicBool,
}

/// A lane's young timers.
pub(crate) struct Young {
    cells: Box<[Cell; YOUNG_CELLS]>,
    owner: CachePadded<OwnerLine>,
    others: CachePadded<OthersLine>,
}

// SAFETY: the cells' pointers carry counts of `Send + Sync` entries; `born` is touched only by
// the owner, under the rules of the module documentation; the rest is atomic.
unsafe impl Send for Young {}
// SAFETY: as above.
unsafe impl Sync for Young {}

/// What [`Young::take`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    /// Nothing is young.
    Empty,
    /// Took every young timer.
    Took,
    /// Too young to take: the front timer was made at this time.
    Young(Nanos),
    /// The owner is scheduling: take later.
    Busy,
}

/// When the young timers are to be taken, as [`Young::since`] tells: the variants order
/// `Hurry` first, so the least over lanes is the soonest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Since {
    /// A thread asked for them to be taken at once (see [`Young::hurry`]).
    Hurry,
    /// Once the horizon passes the oldest, made at this time.
    Born(Nanos),
}

/// The owner in a schedule on the lane: `busy` is set until it drops. Made by
/// [`Young::enter`]; the owner pushes, passes a SeqCst fence, then may sweep.
pub(crate) struct Busy<'a>(&'a Young);

/// The owner sweeping the front, having passed its fence and seen no one taking.
pub(crate) struct Sweep<'a>(&'a Young);

impl Drop for Busy<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: the owner's sweep (cells read, `head` moved) happens before a taker or
        // shutdown that sees the flag clear.
        self.0.owner.busy.store(false, Ordering::Release);
    }
}

impl Busy<'_> {
    /// Appends `entry`, made at `born`; hands it back if the queue is full.
    #[inline]
    pub(crate) fn push(&self, entry: EntryRef, born: Nanos) -> Result<(), EntryRef> {
        let young = self.0;
        // Relaxed: only the owner writes `tail`.
        let tail = young.owner.tail.load(Ordering::Relaxed);
        // Acquire: pairs with a taker's Release store; the cells it took are free to reuse.
        let head = young.owner.head.load(Ordering::Acquire);
        if tail.wrapping_sub(head) >= YOUNG_CELLS {
            return Err(entry);
        }
        let cell = young.cell(tail);
        // SAFETY: the owner alone touches `born` (a `Busy` is the owner's).
        cell.born.with_mut(|at| unsafe { *at = born });
        if tail == head {
            // Relaxed: published with the cell by the Release store of `tail` below.
            young.owner.oldest.store(born.get(), Ordering::Relaxed);
        }
        // Relaxed: published by the Release store of `tail` below.
        cell.entry
            .store(EntryRef::into_raw(entry).cast_mut(), Ordering::Relaxed);
        // Release: a taker that reads this `tail` sees the cell and the entry whole.
        young
            .owner
            .tail
            .store(tail.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// After the owner's push and `fenced`: the front to sweep, unless the shard is taking.
    #[inline]
    pub(crate) fn sweep(&self, _: &Fenced) -> Option<Sweep<'_>> {
        // Acquire: pairs with a taker's Release clear; a clear flag shows its `head`.
        (!self.0.others.taking.load(Ordering::Acquire)).then_some(Sweep(self.0))
    }
}

impl Sweep<'_> {
    /// The front entry, when it was made, and how many are young.
    #[inline]
    pub(crate) fn front(&self) -> Option<(&Entry, Nanos, usize)> {
        let young = self.0;
        // Relaxed: the owner's own writes, or a taker's seen through `taking`.
        let head = young.owner.head.load(Ordering::Relaxed);
        let count = young.owner.tail.load(Ordering::Relaxed).wrapping_sub(head);
        if count == 0 {
            return None;
        }
        let cell = young.cell(head);
        // Relaxed: the owner wrote it.
        let entry = cell.entry.load(Ordering::Relaxed);
        // SAFETY: the cell's count keeps the entry live, and no one takes it while the owner
        // sweeps (see the module documentation); the owner alone touches `born`.
        unsafe { Some((&*entry, cell.born.with_mut(|at| *at), count)) }
    }

    /// Takes the front entry; `None` if none is young.
    #[inline]
    pub(crate) fn pop_front(&self) -> Option<EntryRef> {
        let young = self.0;
        // Relaxed: as in `front`.
        let head = young.owner.head.load(Ordering::Relaxed);
        if young.owner.tail.load(Ordering::Relaxed) == head {
            return None;
        }
        // Relaxed: the owner wrote it.
        let entry = young.cell(head).entry.load(Ordering::Relaxed);
        // Release: a later taker (after `busy` clears) starts here.
        young
            .owner
            .head
            .store(head.wrapping_add(1), Ordering::Release);
        // SAFETY: the cell carried one count, now the caller's.
        Some(unsafe { EntryRef::from_raw(entry) })
    }

    /// Records `born`, when the front timer was made.
    #[inline]
    pub(crate) fn mark_oldest(&self, born: Nanos) {
        // Relaxed: a shard reading an older value takes sooner, which is harmless.
        self.0.owner.oldest.store(born.get(), Ordering::Relaxed);
    }
}

impl Young {
    pub(crate) fn new() -> Self {
        let cells: Box<[Cell]> = (0..YOUNG_CELLS)
            .map(|_| Cell {
                entry: AtomicPtr::new(ptr::null_mut()),
                born: UnsafeCell::new(Nanos::ORIGIN),
            })
            .collect();
        let Ok(cells) = cells.try_into() else {
            unreachable!("made with `YOUNG_CELLS` cells")
        };
        Young {
            cells,
            owner: CachePadded::new(OwnerLine {
                tail: AtomicUsize::new(0),
                head: AtomicUsize::new(0),
                busy: AtomicBool::new(false),
                oldest: AtomicU64::new(0),
            }),
            others: CachePadded::new(OthersLine {
                taking: AtomicBool::new(false),
                hurry: AtomicBool::new(false),
            }),
        }
    }

    #[inline]
    fn cell(&self, index: usize) -> &Cell {
        &self.cells[index % YOUNG_CELLS]
    }

    /// Owner: marks a schedule in progress until the [`Busy`] drops.
    ///
    /// # Safety
    /// The caller is the lane's owner thread.
    #[inline]
    pub(crate) unsafe fn enter(&self) -> Busy<'_> {
        // Relaxed: ordered before the caller's later reads by the fence it passes.
        self.owner.busy.store(true, Ordering::Relaxed);
        Busy(self)
    }

    /// Whether no timer is young. Any thread.
    pub(crate) fn is_empty(&self) -> bool {
        // Acquire: pairs with the Release stores of `tail` and `head`.
        self.owner.tail.load(Ordering::Acquire) == self.owner.head.load(Ordering::Acquire)
    }

    /// When the oldest young timer was made, or [`Since::Hurry`] if a thread asked for them to
    /// be taken at once; `None` if none is young. Any thread.
    pub(crate) fn since(&self) -> Option<Since> {
        if self.is_empty() {
            return None;
        }
        // Acquire: pairs with `hurry`.
        if self.others.hurry.load(Ordering::Acquire) {
            return Some(Since::Hurry);
        }
        // Acquire: the push that stored it is seen with it.
        let oldest = self.owner.oldest.load(Ordering::Acquire);
        Some(Since::Born(Nanos::new(oldest)))
    }

    /// Asks the shard to take the young timers on its next turn, whatever their age.
    pub(crate) fn hurry(&self) {
        // Release: the caller's push is seen by the shard that reads the flag.
        self.others.hurry.store(true, Ordering::Release);
    }

    /// Shard: takes every young timer into `out` if the oldest was made by `by`, or a thread
    /// asked to hurry, or `all`.
    ///
    /// # Safety
    /// One taker at a time: the lane's shard thread.
    pub(crate) unsafe fn take(&self, by: Nanos, all: bool, out: &mut Vec<EntryRef>) -> Take {
        if self.is_empty() {
            return Take::Empty;
        }
        // Acquire: the push that stored it is seen with it. Read before `head` in `take_now`,
        // so a front that moved on since shows a younger `oldest` or none at all.
        let oldest = Nanos::new(self.owner.oldest.load(Ordering::Acquire));
        // Acquire: pairs with `hurry`.
        if oldest > by && !all && !self.others.hurry.load(Ordering::Acquire) {
            return Take::Young(oldest);
        }
        // Relaxed: ordered before the read of `busy` by the fence below.
        self.others.taking.store(true, Ordering::Relaxed);
        // The taker's half of the Dekker pair with the owner's `busy`.
        let fenced = Fenced::now();
        let taken = if self.owner_busy(&fenced) {
            Take::Busy
        } else {
            self.others.hurry.store(false, Ordering::Relaxed);
            // SAFETY: the owner is not sweeping (Dekker pair) and this is the one taker.
            unsafe { self.take_now(out) };
            Take::Took
        };
        // Release: an owner seeing the flag clear sees the new `head`.
        self.others.taking.store(false, Ordering::Release);
        taken
    }

    /// Whether the owner is in a schedule, read after the taker's `taking` and fence.
    #[inline]
    fn owner_busy(&self, _: &Fenced) -> bool {
        // Acquire: pairs with `Busy::drop`; the owner's sweep is seen done.
        self.owner.busy.load(Ordering::Acquire)
    }

    /// Takes every timer between `head` and `tail` into `out`.
    ///
    /// # Safety
    /// The caller alone moves `head` now (see the module documentation).
    unsafe fn take_now(&self, out: &mut Vec<EntryRef>) {
        // Acquire: the owner's last sweep, seen through `busy` or by being that thread.
        let head = self.owner.head.load(Ordering::Acquire);
        // Acquire: pairs with the owner's Release store of `tail`.
        let tail = self.owner.tail.load(Ordering::Acquire);
        for index in head..tail {
            // Relaxed: ordered by the Acquire load of `tail`.
            let entry = self.cell(index).entry.load(Ordering::Relaxed);
            // SAFETY: each cell between `head` and `tail` carries one count, now the caller's.
            out.push(unsafe { EntryRef::from_raw(entry) });
        }
        // Release: the owner's next push sees these cells free.
        self.owner.head.store(tail, Ordering::Release);
    }

    /// Shutdown, once the stop flag is set and a SeqCst fence passed: waits for a schedule in
    /// progress, then takes every young timer into `out`.
    ///
    /// # Safety
    /// The shard thread that takes has left its loop for good.
    pub(crate) unsafe fn take_after_stop(&self, out: &mut Vec<EntryRef>) {
        // Acquire: pairs with `Busy::drop`; a schedule that missed the stop flag is done.
        while self.owner.busy.load(Ordering::Acquire) {
            crate::sync::thread::yield_now();
        }
        // SAFETY: an owner entering now sees the stop flag and does not sweep; the shard is
        // gone; so this call alone moves `head`.
        unsafe { self.take_now(out) };
    }
}

impl Drop for Young {
    fn drop(&mut self) {
        let mut rest = Vec::new();
        // SAFETY: `&mut self`: no owner or taker is left.
        unsafe { self.take_now(&mut rest) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::queue::tests::entry;

    #[test]
    fn the_owner_sweeps_from_the_front_and_a_shard_takes_the_rest() {
        let young = Young::new();
        let mut out = Vec::new();
        // SAFETY: the test thread is the owner and the only taker.
        unsafe {
            let busy = young.enter();
            for deadline in 0..3 {
                busy.push(entry(deadline), Nanos::new(100 + deadline))
                    .unwrap();
            }
            let sweep = busy.sweep(&Fenced::now()).unwrap();
            let (front, born, count) = sweep.front().unwrap();
            assert_eq!(
                (front.state().deadline(), born, count),
                (0, Nanos::new(100), 3)
            );
            assert_eq!(sweep.pop_front().unwrap().state().deadline(), 0);
            let at = Nanos::new;
            sweep.mark_oldest(at(101));
            assert_eq!(young.take(at(1_000), false, &mut out), Take::Busy);
            drop(busy);
            assert_eq!(young.take(at(100), false, &mut out), Take::Young(at(101)));
            assert_eq!(young.take(at(101), false, &mut out), Take::Took);
            let taken: Vec<u64> = out.iter().map(|e| e.state().deadline()).collect();
            assert_eq!(taken, [1, 2]);
            assert!(out.iter().all(|e| EntryRef::strong_count(e) == 1));
            assert_eq!(young.take(at(u64::MAX), true, &mut out), Take::Empty);
        }
    }

    #[test]
    fn a_full_queue_hands_the_entry_back_and_a_hurry_takes_at_once() {
        let young = Young::new();
        let mut out = Vec::new();
        // SAFETY: the test thread is the owner and the only taker.
        unsafe {
            let busy = young.enter();
            for deadline in 0..YOUNG_CELLS as u64 {
                busy.push(entry(deadline), Nanos::new(5)).unwrap();
            }
            let back = busy.push(entry(9), Nanos::new(5)).unwrap_err();
            assert_eq!(EntryRef::strong_count(&back), 1, "handed back whole");
            drop(busy);
            young.hurry();
            assert_eq!(young.since(), Some(Since::Hurry));
            assert_eq!(young.take(Nanos::ORIGIN, false, &mut out), Take::Took);
            assert_eq!(out.len(), YOUNG_CELLS);
            assert!(young.is_empty());
            young.enter().push(entry(1), Nanos::new(7)).unwrap();
        }
        // The drop releases the one left.
    }
}
