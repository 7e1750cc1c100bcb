//! Timer entries: one allocation per timer, and the state word that decides its fate.
//!
//! Ground rules, which every other module relies on:
//!
//! 1. An entry is one counted block ([`EntryRef`], see `slab`): the state word, the two
//!    intrusive links of its wheel slot, and the callback in its one-word box. An entry no one
//!    else holds may be reused (see `queue::recycle`).
//! 2. The state word ([`StateWord`]) is written by whoever schedules, cancels, resets, fires
//!    or hands back the timer, always through one CAS loop (`Entry::transition`) except the
//!    shard's clearing of LINKED (`mark_unlinked`). Leaving `Pending` is one transition
//!    (`cancel`, `fire`, `hand_back`) that exactly one party wins.
//! 3. The winner, and only the winner, owns the callback: the canceller drops it, the shard
//!    runs it, shutdown hands it back. The emptied cell stays the winner's: a canceller uses it
//!    as the link of its lane's unlink stack (`queue::unlink`), and the shard that pops it owns
//!    it then. A repeating timer is the exception to "once" (see `repeat`): its runner puts the
//!    callback back and stows the entry (FIRED→STOWED), its shard re-arms it (→PENDING); a
//!    stowed timer cancels or is handed back as a pending one does, while a cancel during the
//!    run is FIRED→CANCELLED and leaves the callback to the runner.
//! 4. `next` carries the entry through its shard's inbound queue (producers write it, see
//!    `queue::inbound`), then through its wheel slot list; `prev` is the wheel's. In a wheel,
//!    both are the owning shard thread's alone. The shard records where it linked the entry in
//!    the state word (LINKED, level, slot), so a canceller knows whether to ask for an unlink.
//!
//! After Netty's `HashedWheelTimeout` and tokio's `TimerShared`, with the deadline and wheel
//! position packed into the same word.

use std::ptr::NonNull;

use super::callback::CallbackBox;
use super::cell::CallbackCell;
use super::state::{Lifecycle, SlotId, StateWord};
use crate::slab::SlabArc;
use crate::sync::{AtomicPtr, AtomicU64, Cap, Ordering, Permit, UnsafeCell};

/// A shared reference to an entry: held by its handle, a queue in transit, and the wheel.
pub(crate) type EntryRef = SlabArc<Entry>;

/// A scheduled timer. See the module documentation for who may touch which field. Its
/// methods are here and, by protocol, in `unlink_ref` (cancel), `repeat` (stow, re-arm) and
/// `permit` (the end of a permit hold); `entry`'s module index lists which holds what.
pub(crate) struct Entry {
    state: AtomicU64,
    /// The next entry in the inbound queue, then in the wheel slot list (ground rule 4).
    pub(crate) next: AtomicPtr<Entry>,
    prev: UnsafeCell<Option<NonNull<Entry>>>,
    /// The callback until the CAS winner takes it; then room for an unlink-stack link (rule 3).
    callback: UnsafeCell<CallbackCell<Entry>>,
}

/// A copy of an entry's slot-list links (see [`Entry::with_links`]).
pub(crate) struct Links {
    pub(crate) next: Option<NonNull<Entry>>,
    pub(crate) prev: Option<NonNull<Entry>>,
}

// SAFETY: `prev` is touched only by the shard owning the entry's wheel (rule 4), the callback
// cell only by the CAS winner (rule 3); the callback is `Send`; the rest is atomic.
unsafe impl Send for Entry {}
// SAFETY: as above; shared references from other threads only reach the atomic state word.
unsafe impl Sync for Entry {}

/// A lifecycle CAS won by the caller: the word it replaced, and the callback it now owns.
pub(super) type Won = (StateWord, CallbackBox);

/// What a won hand-back hands its winner.
pub(crate) struct HandedBack<'a> {
    /// The word it replaced.
    pub(crate) word: StateWord,
    pub(crate) callback: CallbackBox,
    /// The permit the timer held (none: the engine has no cap).
    pub(crate) permit: Option<Permit<'a>>,
}

impl Entry {
    #[inline]
    pub(crate) fn new(deadline: u64, callback: CallbackBox) -> Self {
        Entry::with_word(StateWord::pending(deadline), Some(callback))
    }

    /// A repeating timer's entry; its callback is installed with [`Entry::install`] later.
    pub(crate) fn new_repeating(deadline: u64) -> Self {
        Entry::with_word(StateWord::pending(deadline).repeating(), None)
    }

    #[inline]
    fn with_word(word: StateWord, callback: Option<CallbackBox>) -> Self {
        Entry {
            state: AtomicU64::new(word.bits()),
            next: AtomicPtr::new(std::ptr::null_mut()),
            prev: UnsafeCell::new(None),
            callback: UnsafeCell::new(match callback {
                Some(callback) => CallbackCell::full(callback),
                None => CallbackCell::empty(None),
            }),
        }
    }

    /// Installs a `new_repeating` entry's callback, before the entry is shared (`&mut`).
    pub(crate) fn install(&mut self, callback: CallbackBox) {
        // SAFETY: `&mut self` proves no other reference to the entry exists.
        self.callback
            .with_mut(|cell| unsafe { *cell = CallbackCell::full(callback) });
    }

    /// The current state word.
    pub(crate) fn state(&self) -> StateWord {
        // Acquire: pairs with the AcqRel CASes below; a resolved lifecycle shows its winner's
        // writes.
        StateWord::from_bits(self.state.load(Ordering::Acquire))
    }

    /// The one CAS loop for every state transition (see rule 2): asks `step` for the successor
    /// (`None`: refused) and swaps it in, retrying on the competitor's word. Returns the word
    /// replaced, or the word `step` refused.
    #[inline]
    pub(super) fn transition(
        &self,
        mut step: impl FnMut(StateWord) -> Option<StateWord>,
    ) -> Result<StateWord, StateWord> {
        let mut current = self.state();
        loop {
            let Some(next) = step(current) else {
                return Err(current);
            };
            // AcqRel on success: Acquire sees the callback cell as the last writer left it,
            // Release publishes this thread's writes with the new word. Acquire on failure:
            // the retry reads the competitor's word.
            match self.state.compare_exchange_weak(
                current.bits(),
                next.bits(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(current),
                Err(actual) => current = StateWord::from_bits(actual),
            }
        }
    }

    /// Out of PENDING (or STOWED) by `step`; the caller then owns the callback.
    fn resolve(&self, step: impl FnMut(StateWord) -> Option<StateWord>) -> Result<Won, StateWord> {
        let before = self.transition(step)?;
        Ok((before, self.take_callback()))
    }

    pub(super) fn take_callback(&self) -> CallbackBox {
        // SAFETY: only a just-won lifecycle CAS (or a runner's failed stow, see `repeat`) leads
        // here, so no other thread touches the cell (rule 3); a repeating timer's cell is
        // refilled only by its runner, before STOWED is published.
        match self.callback.with_mut(|cell| unsafe { (*cell).take() }) {
            Some(callback) => callback,
            None => {
                unreachable!("the lifecycle leaves Pending once, so the callback is taken once")
            }
        }
    }

    /// PENDING (or STOWED) →CANCELLED: the replaced word (its link tells whether the wheel
    /// holds the entry) and the callback to drop. A repeating timer whose run is under way
    /// cancels with no callback (its runner drops it when its stow fails). [`Entry::cancel`]
    /// hands the winner more.
    pub(super) fn cancel_word(&self) -> Result<(StateWord, Option<CallbackBox>), StateWord> {
        let cancelled = Lifecycle::Cancelled;
        // A runner's stow fails on the word this leaves.
        let before = self.transition(|word| {
            if word.is_pending() || word.is_running() {
                Some(word.with_lifecycle(cancelled))
            } else {
                word.is_stowed()
                    .then(|| word.unlinked().with_lifecycle(cancelled))
            }
        })?;
        if before.is_running() {
            return Ok((before, None));
        }
        Ok((before, Some(self.take_callback())))
    }

    /// Moves a pending (or stowed) timer's deadline; returns the replaced word. A shard's FIRED
    /// transition failing on the new word reads the new deadline.
    pub(crate) fn reset(&self, deadline: u64) -> Result<StateWord, StateWord> {
        self.transition(|word| word.is_armed().then(|| word.with_deadline(deadline)))
    }

    /// PENDING→FIRED, by the shard, if the deadline is at or before `elapsed`.
    pub(crate) fn fire(&self, elapsed: u64) -> Result<Won, StateWord> {
        self.resolve(|word| {
            (word.is_pending() && word.deadline() <= elapsed)
                .then(|| word.with_lifecycle(Lifecycle::Fired).unlinked())
        })
    }

    /// PENDING (or STOWED) →HANDED_BACK, at shutdown or by a racing `schedule`, with the permit
    /// the timer held, of `cap` (see `permit`). The link is left for whoever unlinks the
    /// entry, so LINKED keeps meaning "linked".
    pub(crate) fn hand_back<'a>(&self, cap: Option<&'a Cap>) -> Result<HandedBack<'a>, StateWord> {
        let handed_back = Lifecycle::HandedBack;
        let (word, callback) = self.resolve(|word| {
            if word.is_stowed() {
                Some(word.unlinked().with_lifecycle(handed_back))
            } else {
                word.is_pending().then(|| word.with_lifecycle(handed_back))
            }
        })?;
        let permit = cap.map(Permit::given_back);
        Ok(HandedBack {
            word,
            callback,
            permit,
        })
    }

    /// Puts a repeating timer's callback back in its cell.
    ///
    /// # Safety
    /// The caller is the timer's runner, and the word says its run is under way: the cell is
    /// the runner's (rule 3).
    pub(super) unsafe fn put_callback(&self, callback: CallbackBox) {
        // SAFETY: by this function's contract.
        self.callback
            .with_mut(|cell| unsafe { *cell = CallbackCell::full(callback) });
    }

    /// Records that the shard linked the entry at `at`, if the word is still `seen`.
    pub(crate) fn mark_linked(&self, seen: StateWord, at: SlotId) -> Result<(), StateWord> {
        debug_assert!(seen.is_pending());
        // The transition's Release: a canceller reading LINKED sees the entry linked; a
        // failure hands the shard the competitor's word.
        self.transition(|word| (word == seen).then(|| seen.with_link(at)))
            .map(|_| ())
    }

    /// Clears the link after the shard unlinked the entry; returns the replaced word, in which
    /// an earlier cancel shows (its canceller pushed an unlink request, `queue::unlink`).
    pub(crate) fn mark_unlinked(&self) -> StateWord {
        // AcqRel: Release orders the unlink before it for readers of the word; Acquire, as a
        // cancel seen in the old word hands this thread the entry's count.
        StateWord::from_bits(self.state.fetch_and(!StateWord::LINKED, Ordering::AcqRel))
    }

    /// Sets the entry's link on an unlink stack.
    ///
    /// # Safety
    /// The caller won the cancel that emptied the callback cell and has not yet published the
    /// entry on a stack (rule 3).
    pub(crate) unsafe fn set_unlink_next(&self, next: Option<NonNull<Entry>>) {
        // SAFETY: by this function's contract.
        self.callback
            .with_mut(|cell| unsafe { *cell = CallbackCell::empty(next) });
    }

    /// The entry's link on an unlink stack.
    ///
    /// # Safety
    /// The caller took the entry off the stack (Acquire pairing with the push).
    pub(crate) unsafe fn unlink_next(&self) -> Option<NonNull<Entry>> {
        // SAFETY: by this function's contract.
        match self.callback.with_mut(|cell| unsafe { (*cell).link() }) {
            Ok(next) => next,
            Err(()) => {
                unreachable!("only an entry whose cancel took the callback is on an unlink stack")
            }
        }
    }

    /// A copy of the entry's slot-list links.
    ///
    /// # Safety
    /// As [`with_links`](Self::with_links).
    pub(crate) unsafe fn links(&self) -> Links {
        Links {
            // Relaxed: while the entry is in a wheel, `next` is touched by the shard thread alone.
            next: NonNull::new(self.next.load(Ordering::Relaxed)),
            // SAFETY: by this function's contract, the calling thread alone accesses `prev`.
            prev: self.prev.with_mut(|prev| unsafe { *prev }),
        }
    }

    /// As [`mark_unlinked`](Self::mark_unlinked), for an entry whose lifecycle ended as `word`:
    /// no one else writes it any more, so a plain store does.
    pub(crate) fn mark_unlinked_resolved(&self, word: StateWord) {
        debug_assert!(matches!(
            word.lifecycle(),
            Lifecycle::Cancelled | Lifecycle::HandedBack
        ));
        debug_assert_eq!(self.state().bits(), word.bits());
        // Release: as in `mark_unlinked`.
        self.state
            .store(word.bits() & !StateWord::LINKED, Ordering::Release);
    }

    /// Runs `f` on the entry's slot-list links.
    ///
    /// # Safety
    /// The caller is the shard thread owning the wheel this entry is (or is about to be)
    /// linked into (rule 4), and no reference from an earlier call is alive.
    pub(crate) unsafe fn with_links<R>(&self, f: impl FnOnce(&mut Links) -> R) -> R {
        // SAFETY: by this function's contract.
        let mut links = unsafe { self.links() };
        let result = f(&mut links);
        self.next.store(
            links.next.map_or(std::ptr::null_mut(), NonNull::as_ptr),
            Ordering::Relaxed,
        );
        // SAFETY: as above.
        self.prev.with_mut(|prev| unsafe { *prev = links.prev });
        result
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
pub(super) mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// A callback that counts its runs in `hits`.
    pub(in crate::entry) fn counting(hits: &Arc<AtomicUsize>) -> CallbackBox {
        let hits = hits.clone();
        CallbackBox::new(move || {
            hits.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn cancel_wins_once_and_hands_over_the_callback() {
        let hits = Arc::new(AtomicUsize::new(0));
        let entry = Entry::new(10, counting(&hits));
        let (before, callback) = entry.cancel_word().expect("first cancel wins");
        let callback = callback.expect("a pending timer's cancel takes the callback");
        assert!(before.is_pending());
        drop(callback);
        assert_eq!(
            entry.cancel_word().unwrap_err().lifecycle(),
            Lifecycle::Cancelled
        );
        assert!(entry.fire(u64::MAX).is_err());
        assert!(entry.hand_back(None).is_err());
        assert_eq!(hits.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_reset_to_the_same_deadline_holds_only_while_pending() {
        let hits = Arc::new(AtomicUsize::new(0));
        let entry = Entry::new(10, counting(&hits));
        assert!(entry.reset(10).is_ok_and(|before| before.deadline() == 10));
        assert_eq!(entry.state().deadline(), 10);
        let (_, callback) = entry.cancel_word().expect("pending");
        drop(callback);
        assert!(entry.reset(10).is_err(), "a cancelled timer is not moved");
    }

    #[test]
    fn fires_only_once_due() {
        let hits = Arc::new(AtomicUsize::new(0));
        let entry = Entry::new(10, counting(&hits));
        let not_due = entry.fire(9).unwrap_err();
        assert!(not_due.is_pending());
        let (_, callback) = entry.fire(10).expect("due at 10");
        callback.call();
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert_eq!(entry.state().lifecycle(), Lifecycle::Fired);
        assert!(entry.cancel_word().is_err());
    }

    #[test]
    fn firing_clears_the_link_but_cancelling_keeps_it() {
        let at = SlotId { level: 1, slot: 2 };
        let fired = Entry::new(5, CallbackBox::new(|| {}));
        fired.mark_linked(fired.state(), at).unwrap();
        fired.fire(5).unwrap();
        assert_eq!(fired.state().linked_at(), None);

        let cancelled = Entry::new(5, CallbackBox::new(|| {}));
        cancelled.mark_linked(cancelled.state(), at).unwrap();
        let (before, _) = cancelled.cancel_word().unwrap();
        assert_eq!(before.linked_at(), Some(at));
        assert_eq!(cancelled.state().linked_at(), Some(at));
        cancelled.mark_unlinked();
        assert_eq!(cancelled.state().linked_at(), None);
    }

    #[test]
    fn reset_moves_only_a_pending_deadline() {
        let entry = Entry::new(10, CallbackBox::new(|| {}));
        let at = SlotId { level: 0, slot: 10 };
        entry.mark_linked(entry.state(), at).unwrap();
        let before = entry.reset(40).unwrap();
        assert_eq!(before.deadline(), 10);
        assert_eq!(entry.state().deadline(), 40);
        assert_eq!(
            entry.state().linked_at(),
            Some(at),
            "the shard moves it, not the reset"
        );
        assert!(entry.fire(39).is_err());
        entry.fire(40).unwrap();
        assert!(entry.reset(50).is_err());
    }

    #[test]
    fn marking_linked_fails_after_cancel() {
        let entry = Entry::new(5, CallbackBox::new(|| {}));
        let seen = entry.state();
        entry.cancel_word().unwrap();
        let now = entry
            .mark_linked(seen, SlotId { level: 0, slot: 5 })
            .unwrap_err();
        assert_eq!(now.lifecycle(), Lifecycle::Cancelled);
    }

    #[test]
    fn an_entry_is_four_words() {
        // With its count and block index, one 40-byte block (see `slab`).
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        let entry = EntryRef::new(Entry::new(0, CallbackBox::new(|| {})));
        let start = EntryRef::as_ptr(&entry) as usize;
        assert_eq!(start % 8, 0);
    }
}
