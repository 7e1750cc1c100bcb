//! The wheel itself: levels of slots, linking, unlinking, advancing, draining.

use std::ptr::NonNull;

use crate::entry::{Entry, EntryRef, Fired, Lifecycle, SlotId, UnlinkRef};
use crate::slab::Frees;
use crate::sync::prefetch;

use super::level::{level_for, slot_of, Expiration, Heads, Level, LEVELS, SLOTS};
use super::survey::{Cursor, Repeats};

/// Entries of a due slot detached at a time and then settled, while they are still in cache.
const DETACH_BATCH: usize = 64;

/// Ticks the wheel spans: farther deadlines are clamped into the top level (see the module).
pub(crate) const SPAN: u64 = 1 << 36;

/// An entry the wheel holds out of any list (detached, or from a queue, being settled): a
/// pointer carrying the wheel's count, as a list's does. Once a cancel found the entry LINKED,
/// the count is its unlink request's instead, which keeps the entry live until the wheel
/// unmarks it (see `entry::unlink_ref`); the wheel then lets go of the pointer alone.
struct Listed(*mut Entry);

impl Listed {
    /// # Safety
    /// The wheel has not unmarked a cancelled entry that this pointer leaves to its request.
    unsafe fn entry(&self) -> &Entry {
        // SAFETY: by this function's contract the entry is live (see the type's docs).
        unsafe { &*self.0 }
    }

    /// The wheel's count as a reference.
    ///
    /// # Safety
    /// The count is the wheel's: no cancel found the entry LINKED.
    unsafe fn into_ref(self) -> EntryRef {
        // SAFETY: by this function's contract; the pointer came from `into_raw`.
        unsafe { EntryRef::from_raw(self.0) }
    }
}

/// What became of an entry handed to [`Wheel::settle`].
pub(crate) enum Settled {
    /// Linked into a slot.
    Linked,
    /// Due already: the shard won PENDING→FIRED and owns the callback; with its deadline tick.
    Fired(Fired, u64),
    /// Resolved elsewhere; the wheel unlinked it and hands back its reference.
    Dropped(EntryRef),
    /// Cancelled while linked: unmarked, its count left to the unlink request
    /// (see `queue::unlink`).
    LeftToUnlink,
}

pub(crate) struct Wheel {
    /// The tick up to which every due entry has been handled.
    elapsed: u64,
    levels: Box<[Level]>,
    /// Entries linked into slots (including cancelled ones not yet unlinked).
    len: usize,
    /// Reused buffer for the entries of a slot being processed.
    scratch: Vec<Listed>,
    /// The fired one-shots' blocks, freed together at the end of each `advance`.
    frees: Frees<Entry>,
    /// A survey under way, if any (see `survey`).
    survey: Option<Cursor>,
    /// The address of an entry being linked again that the survey may have met.
    relinking: Option<usize>,
}

const _: () = {
    const fn is_send<T: Send>() {}
    is_send::<Frees<Entry>>();
};

// SAFETY: each slot-list pointer (and `Listed`) stands for a strong count of an `EntryRef`
// (`Send`); moving the wheel moves those counts and the sole right to the entries' links.
// `frees` is `Send`.
unsafe impl Send for Wheel {}

impl Wheel {
    pub(crate) fn new() -> Self {
        Wheel {
            elapsed: 0,
            levels: (0..LEVELS).map(Level::new).collect(),
            len: 0,
            scratch: Vec::new(),
            frees: Frees::new(),
            survey: None,
            relinking: None,
        }
    }

    /// Starts a survey of the linked entries (see `survey`), dropping one under way.
    pub(crate) fn begin_survey(&mut self) {
        self.survey = Some(Cursor::new());
    }

    /// Visits up to about `budget` more linked entries of the survey under way with `visit`.
    /// Once every level is walked, ends it: `Some` of the entries it may have met twice;
    /// `None` while entries are left, or with no survey under way.
    pub(crate) fn survey(&mut self, budget: usize, visit: impl FnMut(&Entry)) -> Option<Repeats> {
        let cursor = self.survey.as_mut()?;
        // SAFETY: the wheel is not `Sync`: the holder of `&mut self` owns its entries' links,
        // and `unlink`, `take_slot` and `drain` kept the cursor valid.
        if unsafe { cursor.walk(&self.levels, budget, visit) } {
            return self.survey.take().map(Cursor::into_repeats);
        }
        None
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Entries linked into the wheel.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Where an entry due at `when` goes; `None` if it is due already.
    fn slot_for(&self, when: u64) -> Option<SlotId> {
        if when <= self.elapsed {
            return None;
        }
        // Beyond the span: clamped into the top level, which acts as a ring.
        let level = level_for(self.elapsed, when).min(LEVELS - 1);
        Some(SlotId {
            level,
            slot: slot_of(when, level),
        })
    }

    /// The tick the next occupied slot comes due, if any slot is occupied.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.next_expiration().map(|expiration| expiration.deadline)
    }

    /// The earliest pending deadline linked in the wheel. Reads every entry: for a manual
    /// clock's look-ahead, not the tick loop.
    pub(crate) fn earliest_pending(&self) -> Option<u64> {
        let mut earliest = None;
        for level in self.levels.iter() {
            // SAFETY: the wheel is not `Sync`: the holder of `&self` owns it and its entries'
            // links (rule 4 of `entry`).
            unsafe {
                level.visit(|entry| {
                    let word = entry.state();
                    // Cancelled entries are not counted; reset ones at their new deadline.
                    if word.is_pending() {
                        let deadline = word.deadline();
                        earliest = Some(earliest.map_or(deadline, |e: u64| e.min(deadline)));
                    }
                })
            };
        }
        earliest
    }

    /// The next slot to process and the tick it comes due, if any slot is occupied.
    fn next_expiration(&self) -> Option<Expiration> {
        // A finer level's next slot always comes first: a coarser level never holds an entry
        // in the slot containing `elapsed`.
        self.levels
            .iter()
            .find_map(|level| level.next_expiration(self.elapsed))
    }

    /// Fires `entry` if due, links it if not, or lets it go if resolved elsewhere. It must not
    /// be linked; a fired one-shot's block is freed by the next [`advance`](Self::advance).
    pub(crate) fn settle(&mut self, entry: EntryRef) -> Settled {
        // The queue's count becomes the wheel's, held by a pointer while the entry is settled.
        self.settle_listed(Listed(EntryRef::into_raw(entry).cast_mut()))
    }

    /// As [`settle`](Self::settle), for an entry out of its list, which may still be marked.
    fn settle_listed(&mut self, listed: Listed) -> Settled {
        loop {
            // SAFETY: see `Listed`.
            let entry = unsafe { listed.entry() };
            let word = match entry.fire(self.elapsed) {
                Ok((word, callback)) => {
                    // SAFETY: fired, so no cancel found it LINKED: the count is the wheel's.
                    let entry = unsafe { listed.into_ref() };
                    // A repeating timer's runner needs the entry; a one-shot's is freed later.
                    let rearm = if word.is_repeating() {
                        Some(entry)
                    } else {
                        EntryRef::drop_into(entry, &mut self.frees);
                        None
                    };
                    return Settled::Fired(Fired::new(callback, rearm), word.deadline());
                }
                Err(word) => word,
            };
            if word.lifecycle() != Lifecycle::Pending {
                if word.linked_at().is_some()
                    && entry.mark_unlinked().lifecycle() == Lifecycle::Cancelled
                {
                    // The cancel found it LINKED: the count is its unlink request's, and the
                    // wheel lets go of the pointer alone.
                    return Settled::LeftToUnlink;
                }
                // SAFETY: no cancel found it LINKED: the count is the wheel's.
                return Settled::Dropped(unsafe { listed.into_ref() });
            }
            let Some(at) = self.slot_for(word.deadline()) else {
                // Became due between the two reads (a concurrent reset); try again.
                continue;
            };
            if entry.mark_linked(word, at).is_ok() {
                self.link(at, listed);
                return Settled::Linked;
            }
        }
    }

    /// As [`settle`](Self::settle), for a repeating timer re-armed after its run: a survey
    /// may have met it before it fired, and may meet it again where it is linked now.
    pub(crate) fn settle_rearmed(&mut self, entry: EntryRef) -> Settled {
        self.relinking(None, &entry);
        let settled = self.settle(entry);
        self.relinking = None;
        settled
    }

    /// Handles an entry from a `changes` queue (reset earlier): unlinks and settles it again,
    /// which may fire it. One no longer linked needs nothing.
    pub(crate) fn reconsider(&mut self, entry: EntryRef) -> Settled {
        let word = entry.state();
        let Some(at) = word.linked_at() else {
            return Settled::Dropped(entry);
        };
        self.relinking(Some(at), &entry);
        // SAFETY: only the shard sets LINKED (on linking into this wheel) and clears it (on
        // taking the entry out for good); the only unlisted-but-LINKED moment is inside
        // `advance`, when `reconsider` never runs. So a linked entry is linked at `at`.
        let listed = unsafe { self.unlink(at, &entry) };
        drop(entry);
        // Pending: relink by its deadline (or fire). Resolved: `settle` lets it go.
        let settled = self.settle_listed(listed);
        self.relinking = None;
        settled
    }

    /// Takes a cancelled entry out for its unlink request and returns the request's count. It
    /// is still linked unless the wheel met it first.
    pub(crate) fn unlink_cancelled(&mut self, request: UnlinkRef) -> EntryRef {
        let word = request.state();
        if let Some(at) = word.linked_at() {
            // SAFETY: LINKED is set only while the entry is linked here (see `reconsider`);
            // the list's pointer carries the one count, which is the request's.
            unsafe { self.unlink(at, &request) };
            request.mark_unlinked_resolved(word);
        }
        // SAFETY: unlinked and unmarked, here or by `settle` or `drain`.
        unsafe { request.into_entry() }
    }

    /// Prefetches the slot-list neighbours of the still-linked entries about to go to
    /// [`unlink_cancelled`](Self::unlink_cancelled), so their cache misses overlap.
    pub(crate) fn warm(&self, requests: &[UnlinkRef]) {
        for entry in requests {
            if entry.state().linked_at().is_none() {
                continue;
            }
            // SAFETY: the shard thread owns the links of the entries in its wheel, and this
            // one is linked (LINKED is set and only this thread clears it).
            let links = unsafe { entry.links() };
            for neighbour in [links.next, links.prev].into_iter().flatten() {
                prefetch(neighbour.as_ptr());
            }
        }
    }

    /// Handles every slot due at or before `now` in deadline order, then moves `elapsed` to
    /// `now`. `on_fire` gets each fired callback with its due tick and deadline tick. Then frees
    /// the fired one-shots' blocks no one else holds.
    pub(crate) fn advance(&mut self, now: u64, mut on_fire: impl FnMut(u64, u64, Fired)) {
        let mut due = std::mem::take(&mut self.scratch);
        while let Some(expiration) = self.next_expiration() {
            if expiration.deadline > now {
                break;
            }
            let mut chains = self.take_slot(expiration);
            loop {
                self.detach(&mut chains, &mut due, DETACH_BATCH);
                if due.is_empty() {
                    break;
                }
                for listed in due.drain(..) {
                    if let Settled::Fired(fired, deadline) = self.settle_listed(listed) {
                        on_fire(self.elapsed, deadline, fired);
                    }
                }
            }
        }
        self.scratch = due;
        self.frees.flush();
        if now > self.elapsed {
            self.elapsed = now;
        }
    }

    /// Takes the lists of `expiration`'s slot out for [`detach`] and moves `elapsed` to its
    /// deadline; the entries keep LINKED until settled.
    ///
    /// [`detach`]: Self::detach
    fn take_slot(&mut self, expiration: Expiration) -> Heads {
        debug_assert!(expiration.deadline >= self.elapsed);
        self.elapsed = expiration.deadline;
        if let Some(cursor) = &mut self.survey {
            cursor.taking(expiration.at);
        }
        self.levels[expiration.at.level].take(expiration.at.slot)
    }

    /// Takes every entry out (at shutdown), unmarked; cancelled ones are left to their unlink
    /// requests, the rest go to `out`.
    pub(crate) fn drain(&mut self, out: &mut Vec<EntryRef>) {
        self.survey = None;
        let mut listed = std::mem::take(&mut self.scratch);
        for level in 0..LEVELS {
            for slot in 0..SLOTS {
                let mut chains = self.levels[level].take(slot);
                self.detach(&mut chains, &mut listed, usize::MAX);
            }
            debug_assert!(self.levels[level].is_empty());
        }
        for listed in listed.drain(..) {
            // The unmarking decides a racing cancel: one before it pushed a request, which
            // owns the count (as in `settle`); one after it sees the entry unlinked.
            // SAFETY: see `Listed`.
            if unsafe { listed.entry() }.mark_unlinked().lifecycle() != Lifecycle::Cancelled {
                // SAFETY: no cancel found it LINKED: the count is the wheel's.
                out.push(unsafe { listed.into_ref() });
            }
        }
        self.scratch = listed;
    }

    /// Moves up to `limit` entries (a whole round of the chains) from the detached `chains`
    /// into `out`, walking the lists in step and prefetching each new head (see `level`).
    fn detach(&mut self, chains: &mut Heads, out: &mut Vec<Listed>, limit: usize) {
        let goal = out.len().saturating_add(limit);
        while out.len() < goal {
            let before = out.len();
            for chain in chains.iter_mut() {
                let Some(ptr) = *chain else {
                    continue;
                };
                let listed = Listed(ptr.as_ptr());
                // SAFETY: see `Listed`; the list is detached and this thread owns its links.
                *chain = unsafe {
                    listed.entry().with_links(|links| {
                        links.prev = None;
                        links.next.take()
                    })
                };
                if let Some(next) = *chain {
                    prefetch(next.as_ptr());
                }
                self.len -= 1;
                out.push(listed);
            }
            if out.len() == before {
                break;
            }
        }
    }

    /// `entry`, linked at `from` before (a re-armed one: `None`), is about to be linked again:
    /// if the survey under way may have met it, `link` tells the survey where it goes.
    fn relinking(&mut self, from: Option<SlotId>, entry: &EntryRef) {
        let met = (self.survey.as_ref()).is_some_and(|cursor| cursor.may_have_met(from));
        self.relinking = met.then(|| EntryRef::as_ptr(entry) as usize);
    }

    fn link(&mut self, at: SlotId, listed: Listed) {
        if let (Some(address), Some(cursor)) = (self.relinking.take(), &mut self.survey) {
            cursor.relinked(at, address);
        }
        let Some(ptr) = NonNull::new(listed.0) else {
            unreachable!("an entry's address is never null")
        };
        // SAFETY: `ptr` holds the wheel's count, so stays live while linked; it is in no list,
        // and the owning shard thread owns its links.
        unsafe { self.levels[at.level].push(at.slot, ptr) };
        self.len += 1;
    }

    /// # Safety
    /// `entry` is linked in this wheel at `at`.
    unsafe fn unlink(&mut self, at: SlotId, entry: &Entry) -> Listed {
        if let Some(cursor) = &mut self.survey {
            // SAFETY: by this function's contract; this thread owns the links.
            unsafe { cursor.unlinking(at, entry) };
        }
        // SAFETY: by this function's contract.
        let ptr = unsafe { self.levels[at.level].remove(at.slot, entry) };
        self.len -= 1;
        Listed(ptr.as_ptr())
    }
}

impl Drop for Wheel {
    fn drop(&mut self) {
        // Release the counts iteratively: a recursive drop of a long list could overflow.
        let mut all = Vec::new();
        self.drain(&mut all);
    }
}

#[cfg(all(test, not(loom)))]
#[path = "tests/mod.rs"]
mod tests;
