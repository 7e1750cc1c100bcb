//! Who may do what on a lane. The first thread to schedule through a lane owns it until it
//! exits (or its engine is dropped); at exit a thread-local record (`held`) gives its lanes up
//! (Release store of `NO_OWNER`), and the next scheduler claims one (Acquire CAS), taking over
//! the private state. [`LaneCounts`] keeps the owner's word beside the lane's counters, which
//! the owner adds to with a plain load and store.
//!
//! The two one-thread roles are tokens: the lane's [`Owner`], which pushes onto its ring and
//! young queue, reuses its spares and carves its chunks; and its shard's [`Taker`], the one
//! thread that takes from its ring, inbound queue and young queue. Each token is made here
//! only, after its check, and is neither `Copy` nor `Send`; the queues' one-thread `unsafe`
//! functions are called only by methods that hold one, which is their proof.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;

use crossbeam_utils::CachePadded;

use super::{held, Lane, Refusal};
use crate::shard::shared::ShardShared;
use crate::slab::DiscardLater;
use crate::sync::{owner_number, Arc, AtomicU64, AtomicUsize, Ordering};

/// Proof that the calling thread owns `lane`: an owner owns until it exits, or until its
/// engine is dropped, so the token borrows the lane and stays on the thread.
pub(crate) struct Owner<'a> {
    lane: &'a Arc<Lane>,
    _thread: PhantomData<*const ()>,
}

impl<'a> Owner<'a> {
    /// The calling thread's token for `lane`, claiming the lane if no thread owns it; `None`
    /// if another thread owns it (or the calling thread is exiting).
    #[inline]
    pub(super) fn check(lane: &'a Arc<Lane>) -> Option<Self> {
        lane.counts
            .ownership(|me| held::record(lane, me))
            .then_some(Owner {
                lane,
                _thread: PhantomData,
            })
    }

    /// The token a loom model gives the one thread it says owns `lane` (no thread owns a
    /// lane under loom: see `sync::owner_number`).
    #[cfg(all(test, loom))]
    pub(crate) fn for_model(lane: &'a Arc<Lane>) -> Self {
        Owner {
            lane,
            _thread: PhantomData,
        }
    }

    /// The lane this token owns.
    #[inline]
    pub(crate) fn lane(&self) -> &'a Arc<Lane> {
        self.lane
    }

    /// Counts a timer scheduled by the owner, into its own cells.
    #[inline]
    pub(super) fn count_scheduled(&self) {
        self.lane.counts.add_as(true, Count::Scheduled, 1);
    }
}

/// Proof that the calling thread is the one taker of a shard's lanes: its shard thread, then
/// the shutdown that stops it. Made once per shard; a lane checks that it leads into the
/// token's shard.
/// It moves with the shard it drives (builder, shard thread, shutdown) but is never shared.
pub(crate) struct Taker {
    shard: Arc<ShardShared>,
    _unshared: PhantomData<Cell<()>>,
}

impl Taker {
    /// The one taker of `shard`'s lanes; `None` if it was made already.
    pub(crate) fn of(shard: &Arc<ShardShared>) -> Option<Self> {
        shard.claim_taker().then(|| Taker {
            shard: shard.clone(),
            _unshared: PhantomData,
        })
    }

    /// Until the guard drops, the chunks the calling thread (the taker's) frees wait for a
    /// calm turn of the shard's engine (see `slab::discard`).
    pub(crate) fn discard_later(&self) -> DiscardLater {
        self.shard.discards().later()
    }

    /// Panics unless `lane` leads into this taker's shard (an engine bug): a pointer compare
    /// before each take, once per lane and turn.
    #[inline]
    pub(super) fn check(&self, lane: &Lane) {
        assert!(
            ptr::eq(&*self.shard, &*lane.shard),
            "a taker takes only from its own shard's lanes"
        );
    }
}

/// A lane as the calling thread reaches it: as its owner, or as any other thread.
pub(crate) enum Access<'a> {
    Owner(Owner<'a>),
    Other(&'a Arc<Lane>),
}

impl<'a> Access<'a> {
    /// The calling thread's access to `lane`, claiming it if no thread owns it.
    #[inline]
    pub(crate) fn of(lane: &'a Arc<Lane>) -> Self {
        match Owner::check(lane) {
            Some(owner) => Access::Owner(owner),
            None => Access::Other(lane),
        }
    }

    /// The lane reached.
    #[inline]
    pub(crate) fn lane(&self) -> &'a Arc<Lane> {
        match self {
            Access::Owner(owner) => owner.lane(),
            Access::Other(lane) => lane,
        }
    }

    /// Whether the calling thread owns the lane.
    #[inline]
    pub(crate) fn is_owner(&self) -> bool {
        matches!(self, Access::Owner(_))
    }
}

/// `owner` before any thread has claimed the lane.
const NO_OWNER: usize = usize::MAX;
/// `owner` once the engine is dropped and has freed the lane's spares: no thread claims it.
const CLOSED: usize = usize::MAX - 1;

/// Counters of a lane: the owner's go to `own`, others' to `others`; a reader adds the two.
/// Relaxed throughout (statistics, exact once quiet). Each part has its own cache line.
pub(crate) struct LaneCounts {
    /// The thread number of the lane's owner, or `NO_OWNER`.
    owner: CachePadded<AtomicUsize>,
    own: CachePadded<Counters>,
    others: CachePadded<Counters>,
}

#[derive(Default)]
struct Counters {
    scheduled: AtomicU64,
    cancelled: AtomicU64,
    /// Rejected, by [`Refusal`].
    full: AtomicU64,
    too_long: AtomicU64,
    shutdown: AtomicU64,
}

/// Which counter of a [`Counters`].
#[derive(Clone, Copy)]
enum Count {
    Scheduled,
    Cancelled,
    Rejected(Refusal),
}

impl Counters {
    fn get(&self, count: Count) -> &AtomicU64 {
        match count {
            Count::Scheduled => &self.scheduled,
            Count::Cancelled => &self.cancelled,
            Count::Rejected(Refusal::Full) => &self.full,
            Count::Rejected(Refusal::TooLong) => &self.too_long,
            Count::Rejected(Refusal::Shutdown) => &self.shutdown,
        }
    }
}

impl LaneCounts {
    pub(crate) fn new() -> Self {
        LaneCounts {
            owner: CachePadded::new(AtomicUsize::new(NO_OWNER)),
            own: CachePadded::new(Counters::default()),
            others: CachePadded::new(Counters::default()),
        }
    }

    /// Whether the calling thread owns the lane (without claiming it).
    #[inline]
    fn is_owner(&self) -> bool {
        // Relaxed: only the owner can match its own number, which it wrote (or acquired in
        // `claim`).
        owner_number().is_some_and(|me| self.owner.load(Ordering::Relaxed) == me)
    }

    /// Whether the calling thread owns the lane; if none does, claims it and `record`s the
    /// claim (false: the thread is exiting, claim undone). The check behind [`Owner::check`].
    #[inline]
    fn ownership(&self, record: impl FnOnce(usize) -> bool) -> bool {
        let Some(me) = owner_number() else {
            return false;
        };
        // Relaxed: as in `is_owner`.
        match self.owner.load(Ordering::Relaxed) {
            owner if owner == me => true,
            NO_OWNER => self.claim_and_record(me, record),
            _ => false,
        }
    }

    #[cold]
    fn claim_and_record(&self, me: usize, record: impl FnOnce(usize) -> bool) -> bool {
        // SAFETY (both): `me` is the calling thread's number, read by `ownership`.
        if !unsafe { self.claim(me) } {
            return false;
        }
        if record(me) {
            return true;
        }
        unsafe { self.give_up(me) };
        false
    }

    /// Claims the lane for the thread numbered `me` if no thread owns it.
    ///
    /// # Safety
    /// `me` is the calling thread's number (`sync::owner_number`), or, in a loom model, the
    /// number of the thread the model lets act as owner, whose accesses come after this call:
    /// a claim lets that thread touch what the owner alone does.
    pub(crate) unsafe fn claim(&self, me: usize) -> bool {
        // Acquire on success: pairs with `give_up`'s Release; the previous owner's private
        // state is seen as left. Relaxed on failure: nothing is read.
        self.owner
            .compare_exchange(NO_OWNER, me, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The thread numbered `me` exits: if it owns the lane, `free_owned` frees what the owner
    /// alone touches, and only then is the lane given up, so the next owner's claim acquires
    /// the frees (see `Lane::leave`).
    ///
    /// # Safety
    /// As [`claim`](Self::claim)'s.
    #[cfg(any(not(loom), test))]
    pub(crate) unsafe fn leave(&self, me: usize, free_owned: impl FnOnce()) {
        // Relaxed: only the owner can match its own number, which it wrote (or acquired in
        // `claim`).
        if self.owner.load(Ordering::Relaxed) == me {
            free_owned();
        }
        // SAFETY: by this function's contract.
        unsafe { self.give_up(me) };
    }

    /// Gives up the lane, if the thread numbered `me` owns it.
    ///
    /// # Safety
    /// As [`claim`](Self::claim)'s: a give-up publishes the owner's state as left.
    pub(crate) unsafe fn give_up(&self, me: usize) {
        // Release: publishes this owner's private state to the next `claim`. Relaxed on
        // failure: nothing is read.
        let _ = self
            .owner
            .compare_exchange(me, NO_OWNER, Ordering::Release, Ordering::Relaxed);
    }

    /// Whether some thread owns the lane (and so may reuse its spare entries).
    pub(crate) fn has_owner(&self) -> bool {
        // Relaxed: a hint; a lane claimed just now merely misses a few spares.
        !matches!(self.owner.load(Ordering::Relaxed), NO_OWNER | CLOSED)
    }

    /// Closes the lane to owners unless another thread than `me` owns it (then false).
    ///
    /// # Safety
    /// `me` is the calling thread's number, if it has one: a true close lets the caller touch
    /// what the owner alone does.
    pub(crate) unsafe fn close(&self, me: Option<usize>) -> bool {
        // Acquire on success: pairs with `give_up`'s Release (or program order for the caller's
        // own lane).
        let mut owner = self.owner.load(Ordering::Acquire);
        loop {
            if owner != NO_OWNER && Some(owner) != me {
                return owner == CLOSED;
            }
            match self.owner.compare_exchange_weak(
                owner,
                CLOSED,
                Ordering::Acquire,
                // Relaxed: the loop reads again before deciding anything.
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => owner = now,
            }
        }
    }

    #[inline]
    fn add(&self, count: Count, delta: u64) {
        self.add_as(self.is_owner(), count, delta);
    }

    /// Adds `delta` to `count`, into the owner's cells if `mine`.
    #[inline]
    fn add_as(&self, mine: bool, count: Count, delta: u64) {
        if mine {
            let cell = self.own.get(count);
            // Relaxed load and store: only the owner writes `own`, so no update is lost.
            cell.store(
                cell.load(Ordering::Relaxed).wrapping_add(delta),
                Ordering::Relaxed,
            );
        } else {
            self.others.get(count).fetch_add(delta, Ordering::Relaxed);
        }
    }

    fn read(&self, count: Count) -> u64 {
        let own = self.own.get(count).load(Ordering::Relaxed);
        own.wrapping_add(self.others.get(count).load(Ordering::Relaxed))
    }

    /// Counts a timer scheduled through `access`.
    #[inline]
    pub(super) fn add_scheduled(&self, access: &Access<'_>) {
        self.add_as(access.is_owner(), Count::Scheduled, 1);
    }

    /// Counts a timer scheduled by a thread a loom model says does (`mine`) or does not own
    /// the lane (no thread owns one under loom: see `sync::owner_number`).
    #[cfg(all(test, loom))]
    pub(crate) fn add_scheduled_in_model(&self, mine: bool) {
        self.add_as(mine, Count::Scheduled, 1);
    }

    /// A schedule that raced shutdown and got its callback back: it counts as rejected.
    pub(super) fn unschedule(&self) {
        self.add(Count::Scheduled, u64::MAX);
        self.add_rejected(Refusal::Shutdown);
    }

    #[inline]
    pub(crate) fn add_cancelled(&self) {
        self.add(Count::Cancelled, 1);
    }

    pub(super) fn add_rejected(&self, refusal: Refusal) {
        self.add(Count::Rejected(refusal), 1);
    }

    pub(crate) fn scheduled(&self) -> u64 {
        self.read(Count::Scheduled)
    }

    pub(crate) fn cancelled(&self) -> u64 {
        self.read(Count::Cancelled)
    }

    pub(crate) fn rejected_for(&self, refusal: Refusal) -> u64 {
        self.read(Count::Rejected(refusal))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn owner_and_other_threads_add_up() {
        let counts = Arc::new(LaneCounts::new());
        assert!(!counts.has_owner());
        let me = owner_number().unwrap();
        // SAFETY: `me` is this thread's number.
        assert!(unsafe { counts.claim(me) });
        counts.add_as(counts.is_owner(), Count::Scheduled, 1);
        assert!(counts.has_owner() && counts.is_owner());
        let other = counts.clone();
        std::thread::spawn(move || {
            assert!(!other.is_owner());
            // SAFETY: the number is this thread's.
            assert!(!unsafe { other.claim(owner_number().unwrap()) });
            for _ in 0..3 {
                other.add_as(other.is_owner(), Count::Scheduled, 1);
            }
            other.add_cancelled();
            other.unschedule();
        })
        .join()
        .unwrap();
        counts.add_cancelled();
        counts.unschedule();
        assert_eq!(counts.scheduled(), 2);
        assert_eq!(counts.cancelled(), 2);
        assert_eq!(counts.rejected_for(Refusal::Shutdown), 2);
        counts.add_rejected(Refusal::Full);
        assert_eq!(counts.rejected_for(Refusal::Full), 1);
        assert_eq!(counts.rejected_for(Refusal::TooLong), 0);
    }
}
