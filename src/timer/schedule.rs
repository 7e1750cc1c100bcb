//! The one path by which every timer gets onto a shard: admit it under the cap, build its
//! entry, queue it on the lane, and on a refusal hand the caller's value back.
//!
//! What differs between timers is a [`Job`]: a one-shot callback ([`OneShot`]: the engine's
//! `schedule`, a sleep's wake-up, a delay queue's record) or a repeating one
//! (`repeating::FirstRun`). Where the entry lives is the caller's choice: a block of its own
//! ([`fresh`]) or, for a thread that owns the lane, the lane's spares and chunks (`Lane::new_entry`).

use super::handle::TimerHandle;
use crate::entry::{unbox, Callback, CallbackBox, Entry, EntryRef};
use crate::shard::{Lane, Ownership, Refusal};
use crate::sync::Arc;

/// What a timer runs, as [`schedule`] builds its entry from it.
pub(crate) trait Job {
    /// What a refusal hands back to the caller.
    type Value;

    /// The entry of a timer admitted at `tick` on `lane`.
    fn entry(self, lane: &Arc<Lane>, tick: u64) -> Entry;

    /// The value of a job refused at admission.
    fn refused(self) -> Self::Value;

    /// The value of a job whose queued callback a racing shutdown gave back.
    fn taken_back(callback: CallbackBox) -> Self::Value;
}

/// A callback run once.
pub(crate) struct OneShot<F>(pub(crate) F);

impl<F: Callback> Job for OneShot<F> {
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

/// An entry in a block of its own: the allocation for calls that may outlive the engine.
#[inline]
pub(crate) fn fresh(_: Ownership, entry: Entry) -> EntryRef {
    EntryRef::new(entry)
}

/// Admits `job` due at `tick` (`None`: beyond the wheel's range) on `lane`, puts its entry
/// where `place` says, queues it and hands out its handle. A refusal, at admission or by a
/// shutdown racing the queueing, hands the job's value back with its reason.
#[inline]
pub(crate) fn schedule<J: Job>(
    lane: &Arc<Lane>,
    tick: Option<u64>,
    job: J,
    place: impl FnOnce(Ownership, Entry) -> EntryRef,
) -> Result<TimerHandle, (Refusal, J::Value)> {
    let entry = queue(lane, tick, job, place)?;
    Ok(TimerHandle::of(entry, lane.clone()))
}

/// As [`schedule`], handing out the queued entry alone: for a holder that keeps the lane
/// itself (a sleep), which so takes no second reference to it.
#[inline]
pub(crate) fn queue<J: Job>(
    lane: &Arc<Lane>,
    tick: Option<u64>,
    job: J,
    place: impl FnOnce(Ownership, Entry) -> EntryRef,
) -> Result<EntryRef, (Refusal, J::Value)> {
    let tick = match lane.admit(tick) {
        Ok(tick) => tick,
        Err(refusal) => return Err((refusal, job.refused())),
    };
    let entry = job.entry(lane, tick);
    let ownership = Lane::ownership(lane);
    let entry = place(ownership, entry);
    match lane.enqueue(ownership, &entry) {
        Ok(()) => Ok(entry),
        Err(callback) => Err((Refusal::Shutdown, J::taken_back(callback))),
    }
}
