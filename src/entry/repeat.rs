//! A repeating timer's transitions after each fire. While its run is under way (FIRED) the
//! runner owns the cell, and a cancel leaves it alone; after the run the runner puts the
//! callback back and stows the entry at its next deadline (FIRED→STOWED) for its shard, which
//! re-arms it (STOWED→PENDING) and links it. A stowed timer cancels and is handed back as a
//! pending one. A runner that gives up retires the entry (FIRED without REPEATING).

use super::callback::CallbackBox;
use super::node::Entry;
use super::state::{Lifecycle, StateWord};

impl Entry {
    /// FIRED→STOWED at `deadline`, with `callback` back in the cell, by the runner after a run.
    /// Fails, returning the callback, if the timer was cancelled during the run.
    pub(crate) fn stow(&self, deadline: u64, callback: CallbackBox) -> Result<(), CallbackBox> {
        // SAFETY: the caller is the runner, which has not stowed the entry yet: the cell is its
        // own, whether the run is still FIRED or was cancelled (rule 3 of `node`).
        unsafe { self.put_callback(callback) };
        // The transition's Release publishes the callback to the next winner.
        match self.transition(|word| word.is_running().then(|| word.stowed(deadline))) {
            Ok(_) => Ok(()),
            Err(_) => Err(self.take_callback()),
        }
    }

    /// STOWED→PENDING, by the shard that took the entry from its runner, which then settles
    /// it. Fails, with the word, if a cancel won first (and took the callback).
    pub(crate) fn rearm(&self) -> Result<(), StateWord> {
        self.transition(|word| {
            word.is_stowed()
                .then(|| word.unlinked().with_lifecycle(Lifecycle::Pending))
        })
        .map(|_| ())
    }

    /// STOWED→FIRED for good, by a runner whose shard stopped before taking the entry: the
    /// callback, unless a cancel took it first.
    pub(crate) fn unstow(&self) -> Option<CallbackBox> {
        let unstowed = self.transition(|word| word.is_stowed().then(|| word.unlinked().retired()));
        unstowed.ok().map(|_| self.take_callback())
    }

    /// Ends a repeating timer whose runner gives up, or claims its last run: FIRED without
    /// REPEATING, so it reads as fired and a later `cancel` answers false. False if it was
    /// cancelled during the run (or retired before).
    pub(crate) fn retire(&self) -> bool {
        // Races `cancel`; whichever is first decides.
        self.transition(|word| word.is_running().then(|| word.retired()))
            .is_ok()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::entry::node::tests::counting;
    use crate::sync::Ordering;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// A repeating entry counting its runs in `hits`, fired at 5 and stowed for 9.
    fn stowed(hits: &Arc<AtomicUsize>) -> Entry {
        let mut entry = Entry::new_repeating(5);
        entry.install(counting(hits));
        let (word, callback) = entry.fire(5).unwrap();
        assert!(word.is_repeating());
        entry.stow(9, callback).map_err(|_| ()).unwrap();
        entry
    }

    #[test]
    fn a_repeating_entry_is_stowed_then_rearmed_unless_cancelled_while_running() {
        let hits = Arc::new(AtomicUsize::new(0));
        let entry = stowed(&hits);
        let stowed = entry.state();
        assert!(stowed.is_stowed() && stowed.deadline() == 9);
        assert!(entry.fire(u64::MAX).is_err(), "a stowed timer is not fired");
        entry.rearm().unwrap();
        let now = entry.state();
        assert!(now.is_pending() && now.is_repeating() && !now.is_stowed());
        assert_eq!(now.deadline(), 9);
        // Fire again; cancelled while "running": the cancel hands over no callback, and the
        // stow fails, giving the callback back to the runner.
        let (_, callback) = entry.fire(9).unwrap();
        let (_, taken) = entry.cancel_word().unwrap();
        assert!(taken.is_none());
        let back = entry.stow(13, callback).unwrap_err();
        back.call();
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert_eq!(entry.state().lifecycle(), Lifecycle::Cancelled);
        assert!(entry.cancel_word().is_err());
        entry.retire();
        assert_eq!(entry.state().lifecycle(), Lifecycle::Cancelled);
    }

    #[test]
    fn a_stowed_entry_cancels_or_is_handed_back_as_a_pending_one() {
        let hits = Arc::new(AtomicUsize::new(0));
        let entry = stowed(&hits);
        assert!(entry.reset(20).is_ok(), "a stowed timer moves");
        let (before, taken) = entry.cancel_word().unwrap();
        assert!(before.is_stowed() && before.linked_at().is_none());
        taken
            .expect("a stowed timer's cancel takes the callback")
            .call();
        assert_eq!(entry.rearm().unwrap_err().lifecycle(), Lifecycle::Cancelled);
        assert!(entry.unstow().is_none());

        let entry = stowed(&hits);
        let back = entry.hand_back(None).unwrap();
        assert_eq!(back.word.deadline(), 9);
        back.callback.call();
        assert_eq!(entry.state().lifecycle(), Lifecycle::HandedBack);
        assert!(!entry.state().is_stowed());
        assert_eq!(hits.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_runner_takes_back_a_stowed_entry_its_shard_refused_and_it_ends_fired() {
        let entry = stowed(&Arc::new(AtomicUsize::new(0)));
        drop(entry.unstow().expect("no cancel took it"));
        let word = entry.state();
        assert_eq!(word.lifecycle(), Lifecycle::Fired);
        assert!(!word.is_repeating() && !word.is_stowed());
        assert!(entry.cancel_word().is_err(), "it stopped for good");
    }
}
