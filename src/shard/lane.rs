//! Lanes: the inbound side of a shard, and the one path by which a timer gets onto it.
//!
//! A shard has a lane per scheduling thread (see `lanes`; past the table's capacity threads
//! share), so queue tails and counters are mostly one thread's. A lane carries its owner's
//! young timers (`queue::young`), the owner's ring and `inserts` (new timers), `unlinks`
//! (cancelled after linking) and `changes` (reset earlier; a `SegQueue`, since a linked
//! entry's links are the wheel's). A handle keeps its lane alive.
//!
//! The owner keeps a new timer due well past the horizon (see `shared::Horizon`) young, in its
//! lane, and sweeps it from there (see `young`). Who owns the lane, and what only its owner or
//! only the shard's taker may do (each with its token), is `roles`. On an engine that tracks
//! sites, a lane also keeps the origin of each timer scheduled through it (see `origins`).
//!
//! # Shutdown hand-off
//!
//! [`Lane::schedule`] admits (takes a permit), builds the entry per [`Memory`] and queues it.
//! Shutdown sets `stop` and passes a SeqCst fence; a producer pushes, passes a SeqCst fence
//! ([`Fenced`]) and reads `stop` again ([`ShardShared::stop_seen`]): if set, it tries
//! PENDING→HANDED_BACK and, winning, takes the callback back. A producer that missed `stop`
//! pushed before shutdown emptied the queues, so every timer is fired, cancelled, handed back
//! or refused, once.

use super::shared::ShardShared;
use crate::entry::{unbox, Callback, CallbackBox, Entry, EntryRef, StateWord, UnlinkRef};
use crate::queue::{Inbound, Pop, Recycler, Ring, Unlinks, Young};
use crate::slab::Allocator;
use crate::sync::{owner_number, thread, Arc, Fenced, Permit, Permits, SegQueue};
use crate::time::{Nanos, Tick};

mod held;
mod origins;
mod roles;
mod young;

pub(crate) use origins::Origin;
use origins::Origins;
pub(crate) use roles::{Access, LaneCounts, Owner, Taker};

/// Why a timer was refused before it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Shutdown,
    TooLong,
    Full,
}

/// What a timer runs: [`Lane::schedule`] builds its entry once admitted, or hands it back.
pub(crate) trait TimerKind {
    /// What a refusal hands back to the caller.
    type Value;
    /// The entry of a timer admitted at `tick` on `lane`.
    fn entry(self, lane: &Arc<Lane>, tick: u64) -> Entry;
    /// The value of a timer refused at admission.
    fn refused(self) -> Self::Value;
    /// The value of a timer whose queued callback a racing shutdown gave back.
    fn taken_back(callback: CallbackBox) -> Self::Value;
}

/// A callback run once.
pub(crate) struct OneShot<F>(pub(crate) F);

impl<F: Callback> TimerKind for OneShot<F> {
    type Value = F;
    #[inline]
    fn entry(self, _: &Arc<Lane>, tick: u64) -> Entry {
        Entry::new(tick, CallbackBox::new(self.0))
    }
    #[inline]
    fn refused(self) -> F {
        self.0
    }
    fn taken_back(callback: CallbackBox) -> F {
        unbox(callback)
    }
}

/// Where a new timer's entry lives.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Memory {
    /// The lane's spares and chunks when the calling thread owns the lane, or its young queue;
    /// `born`: when the timer was made (see `time::Due`).
    Lane { born: Nanos },
    /// A block of its own: for a timer that may outlive the engine (a repeating one).
    Own,
}

/// One lane of a shard: the queues from one producer thread (or several, see `lanes`) into it.
pub(crate) struct Lane {
    /// New timers the owner keeps in the lane for now (see `queue::young`).
    young: Young,
    /// New timers from the lane's owner (see `queue::ring`).
    ring: Ring,
    /// New timers from every other thread, and from the owner when its ring is full.
    inserts: Inbound,
    unlinks: Unlinks,
    changes: SegQueue<EntryRef>,
    counts: LaneCounts,
    spares: Recycler,
    /// The chunks the owner's entries are carved from (see `slab`); given up after a spike
    /// and when the engine or lane is dropped.
    slab: Allocator<Entry>,
    shard: Arc<ShardShared>,
    /// Each timer's origin, on an engine that tracks them.
    origins: Origins,
}

impl Lane {
    pub(crate) fn new(shard: Arc<ShardShared>) -> Self {
        Lane {
            young: Young::new(),
            ring: Ring::new(),
            inserts: Inbound::new(),
            unlinks: Unlinks::new(),
            changes: SegQueue::new(),
            counts: LaneCounts::new(),
            spares: Recycler::new(),
            slab: Allocator::new(),
            shard,
            origins: Origins::default(),
        }
    }

    /// Keeps the origin `origin` makes for `entry`'s timer, just scheduled through this lane,
    /// if the engine tracks origins (see `origins`).
    #[inline]
    pub(crate) fn note(&self, entry: &EntryRef, origin: impl FnOnce() -> Origin) {
        if self.shard.tracks() {
            self.origins.keep(entry.clone(), origin());
        }
    }

    /// Calls `f` on the origin, state word and entry address of each timer of the lane not
    /// ended yet.
    pub(crate) fn each_origin(&self, f: impl FnMut(&Origin, StateWord, usize)) {
        self.origins.visit(f);
    }

    /// The shard this lane leads into.
    pub(crate) fn shard(&self) -> &ShardShared {
        &self.shard
    }

    pub(crate) fn counts(&self) -> &LaneCounts {
        &self.counts
    }

    /// Whether the engine caps its pending timers.
    pub(crate) fn is_capped(&self) -> bool {
        self.shard.has_cap()
    }

    /// The bytes of the chunks the lane carves its owner's entries from (a snapshot).
    pub(crate) fn entry_bytes(&self) -> usize {
        self.slab.bytes()
    }

    /// Admits a timer due at `tick` (`None`: beyond range), builds its entry from `kind` in
    /// `memory` and queues it. A refusal (at admission or by a racing shutdown) hands the value
    /// back with its reason.
    #[inline]
    pub(crate) fn schedule<K: TimerKind>(
        lane: &Arc<Self>,
        tick: Option<Tick>,
        kind: K,
        memory: Memory,
    ) -> Result<EntryRef, (Refusal, K::Value)> {
        Lane::schedule_as(Access::of(lane), tick, kind, memory)
    }

    /// As [`schedule`](Self::schedule), through the calling thread's `access` to the lane.
    #[inline]
    pub(crate) fn schedule_as<K: TimerKind>(
        access: Access<'_>,
        tick: Option<Tick>,
        kind: K,
        memory: Memory,
    ) -> Result<EntryRef, (Refusal, K::Value)> {
        let lane = access.lane();
        let (tick, permit) = match lane.admit(tick) {
            Ok(admitted) => admitted,
            Err(refusal) => return Err((refusal, kind.refused())),
        };
        let entry = kind.entry(lane, tick.get());
        let entry = match (&access, memory) {
            (Access::Owner(owner), Memory::Lane { .. }) => owner.new_entry(entry),
            _ => EntryRef::new(entry),
        };
        // SAFETY: the entry was just made or reused: no other reference exists.
        let queued = unsafe { EntryRef::share_unshared(&entry) };
        let done = match (access, memory) {
            (Access::Owner(owner), Memory::Lane { born })
                if lane.shard.horizon().keeps(tick, born) =>
            {
                owner.enqueue_young(&entry, queued, born, permit)
            }
            (access, _) => lane.enqueue(&access, &entry, queued, permit),
        };
        match done {
            Ok(()) => Ok(entry),
            Err(callback) => Err((Refusal::Shutdown, K::taken_back(callback))),
        }
    }

    /// Checks that the shard takes a timer due at `tick` (`None`: too far) and takes a
    /// permit; a refusal is counted.
    #[inline]
    fn admit(&self, tick: Option<Tick>) -> Result<(Tick, Option<Permit<'_>>), Refusal> {
        let refusal = if self.shard.is_stopped() {
            Refusal::Shutdown
        } else if let Some(tick) = tick {
            if let Ok(permit) = self.shard.take_permit() {
                return Ok((tick, permit));
            }
            Refusal::Full
        } else {
            Refusal::TooLong
        };
        self.counts.add_rejected(refusal);
        Err(refusal)
    }

    /// The refusal [`admit`](Self::admit) would give now, without taking a permit (counted).
    pub(crate) fn refusal_now(&self) -> Option<Refusal> {
        let refusal = if self.shard.is_stopped() {
            Refusal::Shutdown
        } else if !self.shard.has_room() {
            Refusal::Full
        } else {
            return None;
        };
        self.counts.add_rejected(refusal);
        Some(refusal)
    }

    /// Queues `entry` (`queued`: the queue's reference to it), admitted with `permit`, which
    /// the timer holds from then on, through the calling thread's `access`. A shutdown racing
    /// the push that this call wins back returns the callback as the error (see the module's
    /// shutdown hand-off).
    #[inline]
    fn enqueue(
        &self,
        access: &Access<'_>,
        entry: &EntryRef,
        queued: EntryRef,
        permit: Option<Permit<'_>>,
    ) -> Result<(), CallbackBox> {
        self.counts.add_scheduled(access);
        match access {
            Access::Owner(owner) => owner.send(queued),
            Access::Other(_) => self.inserts.push(queued),
        }
        // One fence for the sleep word's Dekker pair and the shutdown hand-off.
        let fenced = Fenced::now();
        self.shard.signal().notify(&fenced);
        Permit::hold(permit);
        if self.shard.stop_seen(&fenced) {
            return self.take_back(entry);
        }
        Ok(())
    }

    /// A schedule that found the stop flag set after its push: hands its own timer back, if
    /// shutdown did not (see the module's shutdown hand-off), releasing its permit then.
    /// The hand-back races shutdown's on the entry's state word alone, whose CAS decides.
    pub(super) fn take_back(&self, entry: &EntryRef) -> Result<(), CallbackBox> {
        match entry.hand_back(self.shard.cap()) {
            Ok(back) => {
                self.counts.unschedule();
                drop(back.permit);
                Err(back.callback)
            }
            // Shutdown already handed it back, or the shard fired it: it is accounted for.
            Err(_) => Ok(()),
        }
    }

    /// Asks the shard to unlink the entry of `request`, whose cancel (by the caller) found it
    /// linked.
    pub(crate) fn request_unlink(&self, request: UnlinkRef) {
        self.unlinks.push(request);
        self.shard.signal().notify(&Fenced::now());
    }

    /// Asks the shard to move `entry`, linked and reset to an earlier deadline.
    pub(crate) fn request_move(&self, entry: EntryRef) {
        self.changes.push(entry);
        self.shard.signal().notify(&Fenced::now());
    }

    /// Shard thread: takes the unlink requests (see `Unlinks::take_all`; any thread may).
    pub(super) fn take_unlinks(&self, out: &mut Vec<UnlinkRef>) -> usize {
        self.unlinks.take_all(out)
    }

    /// Shard thread: the next entry reset to an earlier deadline.
    pub(super) fn take_change(&self) -> Option<EntryRef> {
        self.changes.pop()
    }

    /// Takes every entry on the owner's ring into `out`; returns how many.
    pub(super) fn take_from_ring(&self, taker: &Taker, out: &mut Vec<EntryRef>) -> usize {
        taker.check(self);
        // SAFETY: `taker` is its shard's one taker, and this lane leads into that shard: the
        // ring's one consumer.
        unsafe { self.ring.take(usize::MAX, out) }
    }

    /// Takes the oldest entry of the inbound queue.
    pub(super) fn pop_insert(&self, taker: &Taker) -> Pop {
        taker.check(self);
        // SAFETY: as in `take_from_ring`: the queue's one consumer.
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

    /// Once the shard stopped for good: takes every queued entry into `out`, lets go of the
    /// unlink requests (their permits into `released`), drops the changes and frees the spares.
    ///
    /// # Safety
    /// The shard thread has left its loop for good (`taker` came back from it) and its wheel
    /// has been drained.
    pub(super) unsafe fn empty_after_stop(
        &self,
        taker: &Taker,
        out: &mut Vec<EntryRef>,
        released: &mut Permits<'_>,
    ) {
        taker.check(self);
        // First, as a schedule in progress may still send young timers to the other queues.
        // SAFETY: shutdown set the stop flag and passed a SeqCst fence before joining the
        // shard thread; `taker` is the one taker.
        unsafe { self.young.take_after_stop(out) };
        loop {
            match self.pop_insert(taker) {
                Pop::Entry(entry) => out.push(entry),
                Pop::Empty => break,
                // A producer is mid-push; entries after it are reachable only through it,
                // and may have missed `stop`: wait for the link.
                Pop::MidPush => thread::yield_now(),
            }
        }
        self.take_from_ring(taker, out);
        // The wheel was drained, which unmarked every entry: each request's count is freed.
        let mut requests = Vec::new();
        self.unlinks.take_all(&mut requests);
        requests
            .iter()
            .for_each(|request| request.end_cancelled_hold(released));
        drop(requests);
        while self.changes.pop().is_some() {}
        // Free the spares now, not with the lane, which handles may keep alive.
        self.spares.free_returned();
        self.origins.clear();
    }

    /// The owner thread numbered `me` exits: frees the lane's spare entries and gives up its
    /// chunks, each freed once its last live block is, so that what a spike took does not wait
    /// for the lane's next owner; then gives up the lane.
    ///
    /// # Safety
    /// `me` is the calling thread's number (`sync::owner_number`).
    // Under loom no thread owns a lane (see `sync::owner_number`); the models drive
    // `LaneCounts::leave` directly.
    #[cfg(not(loom))]
    pub(super) unsafe fn leave(&self, me: usize) {
        let free_owned = || {
            self.spares.free_returned();
            // SAFETY: `leave` runs this only if thread `me`, the calling thread, owns the
            // lane, so no other thread takes from its stash or carves its chunks until `leave`
            // gives the lane up, after this.
            unsafe {
                self.spares.free_stash();
                self.slab.give_up();
            }
        };
        // SAFETY: by this function's contract.
        unsafe { self.counts.leave(me, free_owned) };
    }

    /// When the engine is dropped: frees the owner's stash and gives up the lane's chunks,
    /// if no other thread owns the lane (which then closes to owners).
    pub(crate) fn free_spares(&self) {
        // SAFETY: the number is the calling thread's.
        if unsafe { self.counts.close(owner_number()) } {
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

    /// Whether the lane has work for the shard, young timers included.
    pub(crate) fn has_work(&self) -> bool {
        self.queued() || self.has_young()
    }

    /// Whether the lane has work for the shard, young timers aside: the shard's look after
    /// it announced a sleep and passed the fence.
    pub(super) fn has_queued(&self, _: &Fenced) -> bool {
        self.queued()
    }

    fn queued(&self) -> bool {
        !self.ring.is_empty()
            || !self.inserts.is_empty()
            || !self.unlinks.is_empty()
            || !self.changes.is_empty()
    }
}

impl Lane {
    /// Whether the calling thread owns `lane`, claiming it if no thread does (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn owned_by_caller(lane: &Arc<Self>) -> bool {
        Owner::check(lane).is_some()
    }

    /// As `owned_by_caller`, and if so counts a schedule as the owner's (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn count_a_schedule_as_owner(lane: &Arc<Self>) -> bool {
        let owner = Owner::check(lane);
        if let Some(owner) = &owner {
            owner.count_scheduled();
        }
        owner.is_some()
    }
}

impl Owner<'_> {
    /// `entry` in a spare or a block of the lane's chunks.
    // Always: a call passes the entry through memory the callee reads back wider than it
    // was written, which stalled each schedule (measured in BENCHMARKS.md).
    #[inline(always)]
    fn new_entry(&self, entry: Entry) -> EntryRef {
        let lane = self.lane();
        // SAFETY: `self` proves the calling thread owns the lane, so `free_spares` does not
        // run (it closes only a lane no other thread owns).
        match unsafe { lane.spares.take() } {
            Some(mut spare) => match EntryRef::get_mut(&mut spare) {
                Some(unshared) => {
                    *unshared = entry;
                    // SAFETY: as for the `alloc` below: the owner alone touches the lane's
                    // chunks, each earlier call on them before this one.
                    unsafe { lane.slab.served_elsewhere() };
                    spare
                }
                None => unreachable!("a spare entry is held by its lane alone"),
            },
            // SAFETY: as above: the owner alone allocates here, each earlier allocation before
            // this one (this thread's, or the previous owner's Release hand-over, acquired by
            // this thread's claim).
            None => unsafe { lane.slab.alloc(entry) },
        }
    }
}
