//! [`CallbackCell`]: the callback box while the timer is pending and, once the CAS winner took
//! it, an unlink-stack link, in one word: a box's word has its low bit clear (see `callback`),
//! an empty cell sets [`EMPTY`].

use std::marker::PhantomData;
use std::mem;
use std::ptr::{self, NonNull};

use super::callback::{CallbackBox, EMPTY};

/// One word holding a callback or, once taken, an optional link to a 2-aligned `L` (an
/// unlink stack's next entry).
pub(crate) struct CallbackCell<L> {
    word: *mut (),
    _links: PhantomData<NonNull<L>>,
}

impl<L> CallbackCell<L> {
    #[inline]
    pub(crate) fn full(callback: CallbackBox) -> Self {
        CallbackCell {
            word: callback.into_raw().as_ptr(),
            _links: PhantomData,
        }
    }

    /// An empty cell holding `link`.
    #[inline]
    pub(crate) fn empty(link: Option<NonNull<L>>) -> Self {
        CallbackCell {
            word: Self::empty_word(link),
            _links: PhantomData,
        }
    }

    /// The word of an empty cell holding `link`.
    #[inline]
    fn empty_word(link: Option<NonNull<L>>) -> *mut () {
        const { assert!(mem::align_of::<L>() > EMPTY) };
        let at: *mut () = link.map_or(ptr::null_mut(), |link| link.as_ptr().cast());
        at.map_addr(|addr| addr | EMPTY)
    }

    #[inline]
    fn callback(&self) -> Option<NonNull<()>> {
        if self.word.addr() & EMPTY == 0 {
            // A full cell's word is a box's, never null.
            NonNull::new(self.word)
        } else {
            None
        }
    }

    /// Takes the callback, leaving the cell empty with no link; `None` if it was empty.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<CallbackBox> {
        let word = self.callback()?;
        // The word alone: assigning a whole cell would drop this one, still full.
        self.word = Self::empty_word(None);
        // SAFETY: a full cell's word came from `CallbackBox::into_raw`; the cell no longer
        // owns it.
        Some(unsafe { CallbackBox::from_raw(word) })
    }

    /// The link of an empty cell; `Err` if the cell holds a callback.
    pub(crate) fn link(&self) -> Result<Option<NonNull<L>>, ()> {
        match self.callback() {
            Some(_) => Err(()),
            None => Ok(NonNull::new(
                self.word.map_addr(|addr| addr & !EMPTY).cast::<L>(),
            )),
        }
    }
}

impl<L> Drop for CallbackCell<L> {
    #[inline]
    fn drop(&mut self) {
        drop(self.take());
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_cell_is_one_pointer() {
        assert_eq!(mem::size_of::<CallbackCell<u64>>(), mem::size_of::<usize>());
    }

    #[test]
    fn a_cell_holds_a_callback_or_a_link() {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let mut cell = CallbackCell::<u64>::full(CallbackBox::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        assert!(cell.link().is_err());
        cell.take().expect("full").call();
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert_eq!(cell.link(), Ok(None));
        assert!(cell.take().is_none());

        let mut target = 7u64;
        let at = NonNull::from(&mut target);
        let cell = CallbackCell::empty(Some(at));
        assert_eq!(cell.link(), Ok(Some(at)));

        // A full cell dropped drops its callback.
        let counter = hits.clone();
        drop(CallbackCell::<u64>::full(CallbackBox::new(move || {
            drop(counter)
        })));
        assert_eq!(Arc::strong_count(&hits), 1);
    }
}
