//! [`UnlinkRef`]: the reference an unlink request owns (see `queue::unlink`). A cancel that
//! finds its entry LINKED takes over the count the slot list's pointer holds, with no
//! read-modify-write: the won transition hands it over as an `UnlinkRef`. The wheel never
//! releases it (meeting the entry first, it lets go of the pointer alone); the shard, taking
//! the request, unlinks the entry if the wheel has not and makes it an [`EntryRef`].

use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use super::callback::CallbackBox;
use super::node::{Entry, EntryRef};
use super::state::StateWord;

/// The count of a cancelled entry that its unlink request owns; freed when dropped, once no
/// wheel lists the entry (LINKED clear).
pub(crate) struct UnlinkRef {
    entry: NonNull<Entry>,
}

// SAFETY: it holds one count of an entry, as an `EntryRef` (which is `Send`) does.
unsafe impl Send for UnlinkRef {}

/// What a won cancel hands its winner.
pub(crate) struct Cancelled {
    /// The callback to drop; `None` for a repeating timer cancelled while it runs.
    pub(crate) callback: Option<CallbackBox>,
    /// The engine's count of an entry the cancel found linked, for its unlink request.
    pub(crate) unlink: Option<UnlinkRef>,
}

impl Entry {
    /// Cancels `this` (see [`Entry::cancel_word`]), handing over what the winner owns.
    #[inline]
    pub(crate) fn cancel(this: &EntryRef) -> Result<Cancelled, StateWord> {
        let (before, callback) = this.cancel_word()?;
        // The linked entry's count is the wheel's, which this cancel takes over. (The address
        // from `as_ptr` reaches the whole block, as `EntryRef::from_raw` needs.)
        let unlink = before.linked_at().map(|_| UnlinkRef {
            // SAFETY: the address of a live entry is not null.
            entry: unsafe { NonNull::new_unchecked(EntryRef::as_ptr(this).cast_mut()) },
        });
        Ok(Cancelled { callback, unlink })
    }
}

impl UnlinkRef {
    /// The request's count as a pointer, for the unlink stack to carry.
    pub(crate) fn into_raw(self) -> NonNull<Entry> {
        ManuallyDrop::new(self).entry
    }

    /// Takes back a request given up by [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `entry` came from `into_raw`, and is taken back once.
    pub(crate) unsafe fn from_raw(entry: NonNull<Entry>) -> Self {
        UnlinkRef { entry }
    }

    /// The request's count as an entry reference.
    ///
    /// # Safety
    /// No wheel lists the entry: its shard unlinked it and cleared LINKED.
    pub(crate) unsafe fn into_entry(self) -> EntryRef {
        debug_assert!(self.state().linked_at().is_none());
        // SAFETY: the pointer holds a count (see `into_raw`), now this reference's.
        unsafe { EntryRef::from_raw(self.into_raw().as_ptr()) }
    }
}

impl std::ops::Deref for UnlinkRef {
    type Target = Entry;

    fn deref(&self) -> &Entry {
        // SAFETY: the request's count keeps the entry live.
        unsafe { self.entry.as_ref() }
    }
}

impl Drop for UnlinkRef {
    fn drop(&mut self) {
        // A list still holding the entry leans on this count: left, not freed under it.
        if self.state().linked_at().is_none() {
            // SAFETY: the count is this request's, and no wheel lists the entry.
            drop(unsafe { EntryRef::from_raw(self.entry.as_ptr()) });
        }
    }
}
