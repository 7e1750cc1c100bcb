//! [`Fired`]: what the shard's PENDING→FIRED hands the runner of the callback.

use super::callback::CallbackBox;
use super::node::EntryRef;

/// A callback the shard fired, with the entry when it repeats (so its runner can stow it).
pub(crate) struct Fired {
    callback: CallbackBox,
    rearm: Option<EntryRef>,
}

impl Fired {
    /// `callback`, taken by the shard's PENDING→FIRED; with the entry if it repeats.
    pub(crate) fn new(callback: CallbackBox, rearm: Option<EntryRef>) -> Self {
        Fired { callback, rearm }
    }

    /// The callback, and the entry of a repeating timer.
    pub(crate) fn into_parts(self) -> (CallbackBox, Option<EntryRef>) {
        (self.callback, self.rearm)
    }
}
