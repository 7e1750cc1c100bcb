//! How a timer's hold on its permit ends (see `sync::cap`): the transition that ends it gives
//! the permit back, as a value, to its winner: a one-shot's fire to the runner as the callback
//! begins, a hand-back to its winner, a stop to the runner. A cancel leaves it with the
//! engine's reference to the entry, so that the cap bounds the memory of cancelled timers;
//! whoever holds that reference ends the hold as it drops it
//! ([`Entry::end_cancelled_hold`]).

use super::callback::CallbackBox;
use super::fired::Fired;
use super::node::{Entry, EntryRef};
use super::state::Lifecycle;
use crate::sync::{Cap, Permit, Permits};

/// A fired callback as its run begins (see [`Fired::begin`]).
pub(crate) enum Begun<'a> {
    /// A one-shot's callback, and the permit its timer held.
    Once(CallbackBox, Option<Permit<'a>>),
    /// A repeating timer's callback and entry, which keeps its permit.
    Again(CallbackBox, EntryRef),
}

impl Fired {
    /// The callback as its run begins, with the permit of a one-shot, of `cap`.
    pub(crate) fn begin(self, cap: Option<&Cap>) -> Begun<'_> {
        match self.into_parts() {
            (callback, Some(entry)) => Begun::Again(callback, entry),
            (callback, None) => Begun::Once(callback, cap.map(Permit::given_back)),
        }
    }
}

impl Entry {
    /// Ends a repeating timer with the run of its runner, which holds `this`: retires it, unless
    /// cancelled during the run; either way its permit, of `cap`, comes back.
    pub(crate) fn stop(this: EntryRef, cap: Option<&Cap>) -> Option<Permit<'_>> {
        this.retire();
        cap.map(Permit::given_back)
    }

    /// Ends the permit hold of a timer that a cancel ended, its permit going into `released`;
    /// called by the holder of the engine's reference as it drops it. Otherwise does nothing.
    #[inline]
    pub(crate) fn end_cancelled_hold(&self, released: &mut Permits<'_>) {
        if let Some(cap) = released.cap() {
            if self.state().lifecycle() == Lifecycle::Cancelled {
                released.add(Some(Permit::given_back(cap)));
            }
        }
    }
}
