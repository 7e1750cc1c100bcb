//! Lanes: the inbound side of a shard.
//!
//! A shard has a lane for each thread that schedules into it (see `lanes`; past the lane
//! table's capacity threads share them). A lane carries the lock-free queues into the shard: `inserts` (new timers, an intrusive
//! queue through the entries themselves, see `queue::inbound`), `unlinks` (timers cancelled
//! after the shard placed them, which it must unlink, see `queue::unlink`) and `changes`
//! (timers reset to an earlier deadline, which it must move; crossbeam's `SegQueue`, since a
//! placed entry's links belong to the wheel and its callback is still in place).
//!
//! Lanes exist to keep the hot path uncontended: the queue tails and the counters are touched
//! mostly by one thread each, instead of by every producer of the shard. The first thread that
//! schedules through a lane becomes its *owner*, until it exits. The owner counts with a plain
//! load and store where every other thread needs a read-modify-write, queues new timers through
//! the lane's single-producer ring (see `queue::ring`), and alone reuses the lane's spare
//! entries (see `queue::recycle`) and carves new ones from the lane's chunks (see `slab`);
//! other threads' entries are blocks of their own. A timer handle keeps its lane alive, so a
//! cancel can reach the shard even after the engine is gone.
//!
//! Ownership is handed over when the owner thread exits: a thread-local record of the lanes a
//! thread owns releases them in its destructor (a Release store of `NO_OWNER`), and the next thread
//! to schedule through the lane claims it (an Acquire CAS) and takes over the owner's private state
//! (its counter cells, the ring's producer side, the spare stash, the chunks) as the previous owner
//! left it. Without the hand-over, a short-lived first thread (a set-up thread, or one criterion
//! sample's worker) would keep a lane for good, and the threads that do the work would all take the
//! shared paths.
//!
//! The lane is also where a timer is admitted and queued ([`Lane::admit`], [`Lane::enqueue`]):
//! the producer's half of the shutdown hand-off. Shutdown sets the shard's `stop` flag and
//! passes a SeqCst fence; a producer pushes, passes a SeqCst fence (inside `Signal::notify`)
//! and reads `stop` again. If it now sees shutdown, it tries
//! INIT→RETURNED itself and, if it wins, takes the callback back. A producer that did not see
//! `stop` pushed before shutdown emptied the queues, so every timer lands in exactly one place.
//!
//! The queues' consumer side (taking from them) is reachable only from this layer: the shard
//! thread's `worker`, and [`Lane::empty_after_stop`] for shutdown. The spare entries go the
//! other way, to the lane's owner ([`Lane::new_entry`]).

use std::marker::PhantomData;

use crossbeam_utils::CachePadded;

use std::ptr::NonNull;

use super::core::ShardCore;
use crate::entry::{CallbackBox, Entry, EntryRef};
use crate::queue::{Inbound, Pop, Recycler, Ring, Unlinks};
use crate::slab::Allocator;
use crate::sync::{fence, owner_slot, thread, Arc, AtomicU64, AtomicUsize, Ordering, Queue};

/// One lane of a shard: the queues from one producer thread (or several, see `lanes`) into it.
pub(crate) struct Lane {
    /// New timers from the lane's owner (see `queue::ring`).
    ring: Ring,
    /// New timers from every other thread, and from the owner when its ring is full.
    inserts: Inbound,
    unlinks: Unlinks,
    changes: Queue<EntryRef>,
    counts: LaneCounts,
    spares: Recycler,
    /// The chunks the owner's new entries are carved from (see `slab`): used by the owner,
    /// and given up after a spike (a trim) and when the engine or the lane is dropped.
    slab: Allocator<Entry>,
    shard: Arc<ShardCore>,
}

/// Why a timer was refused before it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Shutdown,
    TooLong,
    Full,
}

/// `owner` before any thread has claimed the lane.
const NO_OWNER: usize = usize::MAX;
/// `owner` once the engine is dropped and has freed the lane's spares: no thread claims it.
const CLOSED: usize = usize::MAX - 1;

/// Counters written by the threads that schedule and cancel through a lane, and the lane's
/// owner. The owner's counts go to `own`, which no other thread writes; everyone else's go to
/// `others`; a reader adds the two. Relaxed throughout: they are statistics, exact once the
/// threads that wrote them are quiet. Each part has a cache line of its own: `owner` is read
/// on every call and written once, `own` is written by the owner alone, `others` by any thread.
pub(crate) struct LaneCounts {
    /// The thread slot of the lane's owner, or `NO_OWNER`.
    owner: CachePadded<AtomicUsize>,
    own: CachePadded<Tally>,
    others: CachePadded<Tally>,
}

#[derive(Default)]
struct Tally {
    scheduled: AtomicU64,
    cancelled: AtomicU64,
    rejected: AtomicU64,
}

/// Which counter of a [`Tally`].
#[derive(Clone, Copy)]
enum Count {
    Scheduled,
    Cancelled,
    Rejected,
}

impl Tally {
    fn get(&self, count: Count) -> &AtomicU64 {
        match count {
            Count::Scheduled => &self.scheduled,
            Count::Cancelled => &self.cancelled,
            Count::Rejected => &self.rejected,
        }
    }
}

impl LaneCounts {
    pub(crate) fn new() -> Self {
        LaneCounts {
            owner: CachePadded::new(AtomicUsize::new(NO_OWNER)),
            own: CachePadded::new(Tally::default()),
            others: CachePadded::new(Tally::default()),
        }
    }

    /// Whether the calling thread owns the lane (without claiming it).
    #[inline]
    fn is_owner(&self) -> bool {
        // Relaxed: only the owner itself can match its own slot, and it wrote that value (or
        // acquired the lane when it claimed it, see `claim`).
        owner_slot().is_some_and(|me| self.owner.load(Ordering::Relaxed) == me)
    }

    /// Claims the lane for the thread in slot `me` if no thread owns it.
    pub(crate) fn claim(&self, me: usize) -> bool {
        // Acquire on success: pairs with the Release in `release`, so this thread sees the
        // previous owner's private state (counter cells, ring producer index, spare stash) as
        // it left it. Relaxed on failure: another thread owns the lane; nothing is read.
        self.owner
            .compare_exchange(NO_OWNER, me, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Gives up the lane, if the thread in slot `me` owns it.
    pub(crate) fn release(&self, me: usize) {
        // Release: publishes this owner's private state to the next owner's `claim`. Relaxed on
        // failure: another thread owns the lane, and nothing is read.
        let _ = self
            .owner
            .compare_exchange(me, NO_OWNER, Ordering::Release, Ordering::Relaxed);
    }

    /// Whether some thread owns the lane (and so may reuse its spare entries).
    pub(crate) fn has_owner(&self) -> bool {
        // Relaxed: a hint; a lane claimed just now merely misses a few spares.
        !matches!(self.owner.load(Ordering::Relaxed), NO_OWNER | CLOSED)
    }

    /// Closes the lane to owners if no thread but the caller (in slot `me`) owns it; false
    /// if another thread does.
    pub(crate) fn close(&self, me: Option<usize>) -> bool {
        // Acquire on success: pairs with the Release in `release` (or, for the caller's own
        // lane, program order), so the caller sees the last owner's private state.
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

    /// Counts a timer scheduled by the calling thread, `mine` telling whether it owns the
    /// lane (see [`Lane::ownership`]).
    pub(crate) fn add_scheduled(&self, mine: bool) {
        self.add_as(mine, Count::Scheduled, 1);
    }

    /// A schedule that raced shutdown and got its callback back: it counts as rejected.
    pub(super) fn unschedule(&self) {
        self.add(Count::Scheduled, u64::MAX);
        self.add_rejected();
    }

    pub(crate) fn add_cancelled(&self) {
        self.add(Count::Cancelled, 1);
    }

    pub(super) fn add_rejected(&self) {
        self.add(Count::Rejected, 1);
    }

    pub(crate) fn scheduled(&self) -> u64 {
        self.read(Count::Scheduled)
    }

    pub(crate) fn cancelled(&self) -> u64 {
        self.read(Count::Cancelled)
    }

    pub(crate) fn rejected(&self) -> u64 {
        self.read(Count::Rejected)
    }
}

impl Lane {
    pub(crate) fn new(shard: Arc<ShardCore>) -> Self {
        Lane {
            ring: Ring::new(),
            inserts: Inbound::new(),
            unlinks: Unlinks::new(),
            changes: Queue::new(),
            counts: LaneCounts::new(),
            spares: Recycler::new(),
            slab: Allocator::new(),
            shard,
        }
    }

    /// The shard this lane leads into.
    pub(crate) fn shard(&self) -> &ShardCore {
        &self.shard
    }

    pub(crate) fn counts(&self) -> &LaneCounts {
        &self.counts
    }

    /// Whether the engine caps its pending timers: a timer given up may then not be had
    /// again.
    pub(crate) fn is_capped(&self) -> bool {
        self.shard.has_cap()
    }

    /// The bytes of the chunks the lane carves its owner's entries from (a snapshot).
    pub(crate) fn entry_bytes(&self) -> usize {
        self.slab.bytes()
    }

    /// Checks that the shard takes a timer due at `tick` (`None`: too far away), and takes a
    /// place under the cap. A refusal is counted.
    #[inline]
    pub(crate) fn admit(&self, tick: Option<u64>) -> Result<u64, Refusal> {
        let refusal = if self.shard.is_stopped() {
            Refusal::Shutdown
        } else if let Some(tick) = tick {
            if self.shard.take_cap() {
                return Ok(tick);
            }
            Refusal::Full
        } else {
            Refusal::TooLong
        };
        self.counts.add_rejected();
        Err(refusal)
    }

    /// The refusal [`admit`](Self::admit) would give a timer in range now (shut down, or no
    /// place under the cap), without taking a place. A refusal is counted.
    pub(crate) fn refusal_now(&self) -> Option<Refusal> {
        let refusal = if self.shard.is_stopped() {
            Refusal::Shutdown
        } else if !self.shard.has_room() {
            Refusal::Full
        } else {
            return None;
        };
        self.counts.add_rejected();
        Some(refusal)
    }

    /// Queues `entry`, admitted by [`admit`](Self::admit), for the shard; `ownership` is the
    /// calling thread's for this lane. If shutdown raced the push and this call won the entry
    /// back (INIT→RETURNED), its callback comes back as the error (see the module docs).
    #[inline]
    pub(crate) fn enqueue(
        &self,
        ownership: Ownership,
        entry: &EntryRef,
    ) -> Result<(), CallbackBox> {
        let mine = ownership.mine();
        self.counts.add_scheduled(mine);
        if mine {
            // SAFETY: the calling thread owns the lane, so it is the ring's one producer.
            if let Err(full) = unsafe { self.ring.push(entry.clone()) } {
                self.inserts.push(full);
            }
        } else {
            self.inserts.push(entry.clone());
        }
        // `notify` passes a SeqCst fence before it reads the sleep word; the `stop` read
        // below is after that fence too, which is what the shutdown hand-off relies on.
        self.shard.signal().notify();
        if self.shard.stop_seen_after_fence() {
            fence(Ordering::SeqCst);
            if let Ok((_, callback)) = entry.give_back() {
                self.counts.unschedule();
                self.shard.release_cap(1);
                return Err(callback);
            }
            // Shutdown already handed it back, or the shard fired it: it is accounted for.
        }
        Ok(())
    }

    /// Asks the shard to unlink `entry`, whose cancel (by the caller) found it placed.
    ///
    /// # Safety
    /// As `Unlinks::push`: the caller won the cancel that emptied the callback cell, the
    /// cancel found the entry PLACED, and the entry has not been pushed before.
    pub(crate) unsafe fn request_unlink(&self, entry: &EntryRef) {
        // SAFETY: by this function's contract.
        unsafe { self.unlinks.push(entry) };
        self.shard.signal().notify();
    }

    /// Asks the shard to move `entry`, placed and reset to an earlier deadline.
    pub(crate) fn request_move(&self, entry: EntryRef) {
        self.changes.push(entry);
        self.shard.signal().notify();
    }

    /// Shard thread: takes the unlink requests (see `Unlinks::take_all`).
    pub(super) fn take_unlinks(&self, out: &mut Vec<NonNull<Entry>>) -> usize {
        self.unlinks.take_all(out)
    }

    /// Shard thread: the next entry reset to an earlier deadline.
    pub(super) fn take_change(&self) -> Option<EntryRef> {
        self.changes.pop()
    }

    /// Takes every entry on the owner's ring into `out`; returns how many.
    ///
    /// # Safety
    /// The caller is the lane's one consumer: its shard thread, or shutdown once that thread
    /// is gone.
    pub(super) unsafe fn take_from_ring(&self, out: &mut Vec<EntryRef>) -> usize {
        // SAFETY: by this function's contract.
        unsafe { self.ring.take(usize::MAX, out) }
    }

    /// Takes the oldest entry of the inbound queue.
    ///
    /// # Safety
    /// As [`take_from_ring`](Self::take_from_ring).
    pub(super) unsafe fn pop_insert(&self) -> Pop {
        // SAFETY: by this function's contract.
        unsafe { self.inserts.pop() }
    }

    /// Shard thread: gives dead entries back for the owner to reuse (see `Recycler::give`).
    pub(super) fn give_spares(&self, spares: &mut Vec<EntryRef>) -> bool {
        self.spares.give(spares)
    }

    /// Whether the owner has taken every spare given so far.
    pub(super) fn spares_drained(&self) -> bool {
        self.spares.is_drained()
    }

    /// Takes every entry still queued into `out`, releases the unlink requests, drops the
    /// changes and frees the spares given back, once the shard has stopped for good. Returns
    /// how many unlink requests it released: timers cancelled while placed, which the engine
    /// now drops.
    ///
    /// # Safety
    /// The shard thread has left its loop for good (this thread is the queues' only consumer),
    /// and the shard's wheel has been drained (so no wheel holds an entry with a request).
    pub(super) unsafe fn empty_after_stop(&self, out: &mut Vec<EntryRef>) -> usize {
        loop {
            // SAFETY: by this function's contract this thread is the only consumer.
            match unsafe { self.pop_insert() } {
                Pop::Entry(entry) => out.push(entry),
                Pop::Empty => break,
                // A producer is between its swap and its link. Entries pushed after it are
                // reachable only through it, and their producers may not have seen the stop
                // flag: wait for the link (a store away).
                Pop::Busy => thread::yield_now(),
            }
        }
        // SAFETY: as above.
        unsafe { self.take_from_ring(out) };
        // SAFETY: by this function's contract the wheel has been drained, which unlinked and
        // unmarked every entry.
        let released = unsafe { self.unlinks.release_all() };
        while self.changes.pop().is_some() {}
        // The shard gives no more spares: free them now rather than with the lane, which
        // handles may keep alive long after.
        self.spares.free_returned();
        released
    }

    /// When the engine is dropped: frees the owner's stash of spare entries and gives up the
    /// lane's chunks (each freed once its last timer is), rather than leaving both to the lane,
    /// which handles and sleeps may keep alive long after. Only if no other thread owns the
    /// lane, which then closes to owners; a lane another thread owns keeps both until it is
    /// dropped itself.
    pub(crate) fn free_spares(&self) {
        if self.counts.close(owner_slot()) {
            // SAFETY: the lane is closed, and was owned by no other thread: no thread is in
            // `new_entry` or will be, and the close acquired the last owner's state.
            unsafe {
                self.spares.free_stash();
                self.slab.give_up();
            }
        }
    }

    /// Whether an unlink request waits on the lane (for the models).
    #[cfg(all(test, loom))]
    pub(crate) fn has_unlink_request(&self) -> bool {
        !self.unlinks.is_empty()
    }

    pub(crate) fn has_work(&self) -> bool {
        !self.ring.is_empty()
            || !self.inserts.is_empty()
            || !self.unlinks.is_empty()
            || !self.changes.is_empty()
    }

    /// Whether the calling thread owns the lane; if no thread does, the caller claims it.
    #[inline]
    pub(crate) fn ownership(lane: &Arc<Self>) -> Ownership {
        let Some(me) = owner_slot() else {
            return Ownership::new(false);
        };
        // Relaxed: as in `LaneCounts::is_owner`.
        Ownership::new(match lane.counts.owner.load(Ordering::Relaxed) {
            owner if owner == me => true,
            NO_OWNER => Lane::claim(lane, me),
            _ => false,
        })
    }

    #[cold]
    fn claim(lane: &Arc<Self>, me: usize) -> bool {
        if !lane.counts.claim(me) {
            return false;
        }
        if held::record(lane, me) {
            return true;
        }
        // The thread is exiting and can no longer record what it owns: let the lane go.
        lane.counts.release(me);
        false
    }

    /// `entry`, in a spare entry reused or a slot of the lane's chunks if the calling thread
    /// owns the lane (as `ownership` says, taken by this thread for this lane), or in a block
    /// of its own if it does not.
    #[inline]
    pub(crate) fn new_entry(&self, ownership: Ownership, entry: Entry) -> EntryRef {
        if !ownership.mine() {
            return EntryRef::new(entry);
        }
        // SAFETY: the calling thread owns the lane, so `free_spares` does not run (it closes
        // only a lane no other thread owns).
        match unsafe { self.spares.take() } {
            Some(mut spare) => match EntryRef::get_mut(&mut spare) {
                Some(unshared) => {
                    *unshared = entry;
                    // SAFETY: as for the `alloc` below: the owner alone touches the lane's
                    // chunks, each earlier call on them before this one.
                    unsafe { self.slab.served_elsewhere() };
                    spare
                }
                None => unreachable!("a spare entry is held by its lane alone"),
            },
            // SAFETY: as above: the owner alone allocates from the lane's chunks, and each
            // earlier allocation happened before this one (on this thread, or on the previous
            // owner's before its Release hand-over, which this thread's claim acquired).
            None => unsafe { self.slab.alloc(entry) },
        }
    }
}

/// What [`Lane::ownership`] found for the calling thread, so that a call reads it once. Made
/// only there: a thread that holds `Ownership(true)` for a lane owns it until it exits, so the
/// value stays true for as long as the call that asked lasts.
/// Not `Send`: it speaks for the thread that asked. (It speaks for one lane too, which the
/// callers keep by passing it only with the lane it came from.)
#[derive(Clone, Copy)]
pub(crate) struct Ownership(bool, PhantomData<*const ()>);

impl Ownership {
    fn new(mine: bool) -> Self {
        Ownership(mine, PhantomData)
    }

    pub(crate) fn mine(self) -> bool {
        self.0
    }
}

/// The lanes the current thread owns, released when it exits.
#[cfg(not(loom))]
mod held {
    use std::cell::RefCell;

    use super::Lane;
    use crate::sync::{Arc, Weak};

    /// A thread's owned lanes; dropped (and so released) when the thread exits.
    struct Held {
        slot: usize,
        lanes: Vec<Weak<Lane>>,
    }

    impl Drop for Held {
        fn drop(&mut self) {
            for lane in self.lanes.drain(..) {
                if let Some(lane) = lane.upgrade() {
                    lane.counts.release(self.slot);
                }
            }
        }
    }

    thread_local! {
        static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
    }

    /// Records that the thread in slot `slot` (the calling thread) owns `lane`; false if the
    /// thread is exiting and its record is gone.
    pub(super) fn record(lane: &Arc<Lane>, slot: usize) -> bool {
        HELD.try_with(|held| {
            let mut held = held.borrow_mut();
            let held = held.get_or_insert_with(|| Held {
                slot,
                lanes: Vec::new(),
            });
            if held.lanes.len() == held.lanes.capacity() {
                // Forget lanes whose engines are gone before the list grows.
                held.lanes.retain(|lane| lane.strong_count() > 0);
            }
            held.lanes.push(Arc::downgrade(lane));
        })
        .is_ok()
    }
}

/// Under loom no thread owns a lane (see `sync::owner_slot`).
#[cfg(loom)]
mod held {
    use super::Lane;
    use crate::sync::Arc;

    pub(super) fn record(_: &Arc<Lane>, _: usize) -> bool {
        false
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn owner_and_other_threads_add_up() {
        let counts = Arc::new(LaneCounts::new());
        assert!(!counts.has_owner());
        let me = owner_slot().unwrap();
        assert!(counts.claim(me));
        counts.add_scheduled(counts.is_owner());
        assert!(counts.has_owner() && counts.is_owner());
        let other = counts.clone();
        std::thread::spawn(move || {
            assert!(!other.is_owner());
            assert!(!other.claim(owner_slot().unwrap()));
            for _ in 0..3 {
                other.add_scheduled(other.is_owner());
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
        assert_eq!(counts.rejected(), 2);
    }
}
