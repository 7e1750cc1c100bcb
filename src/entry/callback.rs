//! Type-erased timer callbacks, one pointer wide.
//!
//! A [`CallbackBox`] is a thin owning pointer to a header naming the callback's [`VTable`]: one
//! heap block (header, then value), or for a zero-sized callback a static header and no
//! allocation. Half a `Box<dyn Callback>`, it keeps an entry small (see `node`).
//!
//! [`CallbackCell`] holds the box while the timer is pending, and once the CAS winner took it,
//! an unlink-stack link, in one word: a box pointer's low bit is clear, an empty cell sets it.
//! All the `unsafe` of type erasure ([`Heap`], the vtable functions, the cell's tag) is here.

use std::alloc::Layout;
use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::ptr::{self, NonNull};

use super::node::EntryRef;
use crate::sync::drop_then_free;

/// What a timer runs, turned into a [`CallbackBox`] by [`CallbackBox::new`].
pub(crate) trait Callback: Send + Sized + 'static {
    /// Runs the callback once.
    fn call(self);
    /// Runs a repeating timer's callback, which re-arms `entry` with `this` (the same box, no
    /// allocation). A one-shot callback just runs.
    fn call_repeating(this: Boxed<Self>, entry: EntryRef) {
        drop(entry);
        this.into_inner().call()
    }
}

impl<F: FnOnce() + Send + 'static> Callback for F {
    fn call(self) {
        self()
    }
}

/// The functions a [`CallbackBox`] reaches its value through, one table per callback type.
struct VTable {
    /// Runs the callback (as `call_repeating` when there is an entry) and frees the box.
    run: unsafe fn(NonNull<Header>, Option<EntryRef>),
    /// Drops the callback without running it and frees the box.
    drop: unsafe fn(NonNull<Header>),
    /// The callback's type, for [`unbox`].
    type_id: fn() -> TypeId,
}

/// The start of every box: the callback's vtable.
#[repr(C)]
struct Header {
    vtable: &'static VTable,
}

/// The heap block of a callback that is not zero-sized: the header, then the value.
#[repr(C)]
struct Heap<C> {
    header: Header,
    value: C,
}

/// Where each callback type's vtable, and the static header of a zero-sized one, live.
trait Erased: Callback {
    const VTABLE: &'static VTable;
    const STATIC_HEADER: &'static Header;
}

impl<C: Callback> Erased for C {
    const VTABLE: &'static VTable = &VTable {
        run: run::<C>,
        drop: drop_boxed::<C>,
        type_id: TypeId::of::<C>,
    };
    const STATIC_HEADER: &'static Header = &Header {
        vtable: Self::VTABLE,
    };
}

/// Whether `C` is stored without an allocation.
const fn is_static<C>() -> bool {
    mem::size_of::<C>() == 0
}

/// # Safety
/// `header` is the header of a live box of `C`, which the caller gives up.
unsafe fn run<C: Callback>(header: NonNull<Header>, entry: Option<EntryRef>) {
    // SAFETY: by this function's contract.
    let this = unsafe { Boxed::<C>::from_header(header) };
    match entry {
        Some(entry) => C::call_repeating(this, entry),
        None => this.into_inner().call(),
    }
}

/// # Safety
/// As [`run`].
unsafe fn drop_boxed<C: Callback>(header: NonNull<Header>) {
    // SAFETY: by this function's contract.
    drop(unsafe { Boxed::<C>::from_header(header) });
}

/// A callback of a known type in its box, as [`Callback::call_repeating`] receives it.
pub(crate) struct Boxed<C: Callback> {
    header: NonNull<Header>,
    _owns: PhantomData<C>,
}

impl<C: Callback> Boxed<C> {
    fn new(value: C) -> Self {
        let header = if is_static::<C>() {
            // A zero-sized value has nothing to store; `into_inner` makes it again.
            mem::forget(value);
            NonNull::from(C::STATIC_HEADER)
        } else {
            let heap = Box::new(Heap {
                header: Header { vtable: C::VTABLE },
                value,
            });
            NonNull::from(Box::leak(heap)).cast()
        };
        Boxed {
            header,
            _owns: PhantomData,
        }
    }

    /// # Safety
    /// `header` is the header of a live box of `C` made by [`Boxed::new`], given up.
    unsafe fn from_header(header: NonNull<Header>) -> Self {
        Boxed {
            header,
            _owns: PhantomData,
        }
    }

    fn value(&self) -> NonNull<C> {
        if is_static::<C>() {
            NonNull::dangling()
        } else {
            // SAFETY: a box of a type that is not zero-sized points at the start of its
            // `Heap<C>`, which lives as long as the box; `addr_of_mut` makes no reference.
            let heap = self.header.cast::<Heap<C>>().as_ptr();
            unsafe { NonNull::new_unchecked(ptr::addr_of_mut!((*heap).value)) }
        }
    }

    /// The callback, out of its box.
    pub(crate) fn into_inner(self) -> C {
        let this = ManuallyDrop::new(self);
        // SAFETY: the box owns a live `C` at `value()` (for a zero-sized `C`, any aligned
        // non-null pointer reads one); `this` is not dropped, so it moves out once.
        let value = unsafe { this.value().as_ptr().read() };
        this.free();
        value
    }

    /// Frees the heap block, whose value has been moved out or dropped.
    fn free(&self) {
        if !is_static::<C>() {
            // SAFETY: allocated by `Box::new` as a `Heap<C>` in `new`; its value is gone.
            unsafe {
                std::alloc::dealloc(self.header.cast::<u8>().as_ptr(), Layout::new::<Heap<C>>())
            };
        }
    }

    /// The box, with its type erased again.
    pub(crate) fn erase(self) -> CallbackBox {
        let this = ManuallyDrop::new(self);
        CallbackBox {
            header: this.header,
        }
    }
}

impl<C: Callback> std::ops::Deref for Boxed<C> {
    type Target = C;
    fn deref(&self) -> &C {
        // SAFETY: the box owns a live `C` there for as long as it lives.
        unsafe { self.value().as_ref() }
    }
}

impl<C: Callback> std::ops::DerefMut for Boxed<C> {
    fn deref_mut(&mut self) -> &mut C {
        // SAFETY: as `deref`, and `&mut self` makes the access unique.
        unsafe { self.value().as_mut() }
    }
}

impl<C: Callback> Drop for Boxed<C> {
    fn drop(&mut self) {
        // SAFETY: the box owns a live `C`, dropped once; its block is freed even on panic.
        unsafe { drop_then_free(self.value().as_ptr(), || self.free()) };
    }
}

/// A callback of any type, one pointer wide (see the module documentation).
pub(crate) struct CallbackBox {
    header: NonNull<Header>,
}

// SAFETY: a box owns a `Callback`, which is `Send`; its header is immutable.
unsafe impl Send for CallbackBox {}

impl CallbackBox {
    pub(crate) fn new<C: Callback>(callback: C) -> Self {
        Boxed::new(callback).erase()
    }

    fn vtable(&self) -> &'static VTable {
        // SAFETY: the header of a live box is initialised and never written after `new`.
        unsafe { self.header.as_ref().vtable }
    }

    /// Runs the callback once.
    pub(crate) fn call(self) {
        self.run(None)
    }

    /// Runs the callback; with `entry`, as a repeating run that re-arms it.
    fn run(self, entry: Option<EntryRef>) {
        let this = ManuallyDrop::new(self);
        // SAFETY: the vtable is the one of the box's own type, and `this` gives the box up.
        unsafe { (this.vtable().run)(this.header, entry) }
    }

    /// The callback back as its own type, if it is a `C`.
    pub(crate) fn downcast<C: Callback>(self) -> Result<C, Self> {
        if (self.vtable().type_id)() != TypeId::of::<C>() {
            return Err(self);
        }
        let this = ManuallyDrop::new(self);
        // SAFETY: the type check above proves the box was made from a `C`; `this` gives it up.
        Ok(unsafe { Boxed::<C>::from_header(this.header) }.into_inner())
    }

    fn into_raw(self) -> NonNull<Header> {
        ManuallyDrop::new(self).header
    }

    /// # Safety
    /// `header` came from [`CallbackBox::into_raw`], and the caller gives it up.
    unsafe fn from_raw(header: NonNull<Header>) -> Self {
        CallbackBox { header }
    }
}

impl Drop for CallbackBox {
    fn drop(&mut self) {
        // SAFETY: as `run`; the box is not used after its drop.
        unsafe { (self.vtable().drop)(self.header) }
    }
}

impl fmt::Debug for CallbackBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Callback")
    }
}

/// Recovers the caller's callback from its box.
pub(crate) fn unbox<C: Callback>(callback: CallbackBox) -> C {
    match callback.downcast::<C>() {
        Ok(callback) => callback,
        // The engine boxes exactly one `F` per `schedule::<F>` and unboxes it in the same call.
        Err(_) => unreachable!("a callback is unboxed as the type it was boxed as"),
    }
}

/// A callback the shard fired, with the entry when it repeats (so its runner can re-arm it).
pub(crate) struct Fired {
    callback: CallbackBox,
    rearm: Option<EntryRef>,
}

impl Fired {
    /// `callback`, taken by the shard's PENDING→FIRED; with the entry if it repeats.
    pub(crate) fn new(callback: CallbackBox, rearm: Option<EntryRef>) -> Self {
        Fired { callback, rearm }
    }

    /// Whether the timer runs again after this run.
    pub(crate) fn repeats(&self) -> bool {
        self.rearm.is_some()
    }

    pub(crate) fn run(self) {
        self.callback.run(self.rearm)
    }
}

/// The low bit of an empty [`CallbackCell`]; a box's pointer never has it.
const EMPTY: usize = 1;

const _: () = assert!(mem::align_of::<Header>() > EMPTY);

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
            word: callback.into_raw().as_ptr().cast(),
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
    fn callback(&self) -> Option<NonNull<Header>> {
        if self.word.addr() & EMPTY == 0 {
            // A full cell's word is a box's pointer, never null.
            NonNull::new(self.word.cast())
        } else {
            None
        }
    }

    /// Takes the callback, leaving the cell empty with no link; `None` if it was empty.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<CallbackBox> {
        let header = self.callback()?;
        // The word alone: assigning a whole cell would drop this one, still full.
        self.word = Self::empty_word(None);
        // SAFETY: a full cell's word came from `CallbackBox::into_raw`; the cell no longer
        // owns it.
        Some(unsafe { CallbackBox::from_raw(header) })
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
    fn a_box_and_a_cell_are_one_pointer_each() {
        // That a capture-free callback allocates nothing is checked by counting allocations,
        // in tests/footprint.rs.
        assert_eq!(mem::size_of::<CallbackBox>(), mem::size_of::<usize>());
        assert_eq!(mem::size_of::<CallbackCell<u64>>(), mem::size_of::<usize>());
    }

    #[test]
    fn runs_drops_and_unboxes_each_value_once() {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        CallbackBox::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .call();
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert_eq!(
            Arc::strong_count(&hits),
            1,
            "the capture was dropped after the run"
        );

        let counter = hits.clone();
        drop(CallbackBox::new(move || drop(counter)));
        assert_eq!(Arc::strong_count(&hits), 1, "dropped unrun");

        let counter = hits.clone();
        let boxed = CallbackBox::new(move || drop(counter));
        let boxed = boxed.downcast::<fn()>().expect_err("not a fn pointer");
        drop(boxed);
        assert_eq!(Arc::strong_count(&hits), 1);

        let f: fn() = || {};
        let back: fn() = unbox(CallbackBox::new(f));
        assert_eq!(back as usize, f as usize);
    }

    #[test]
    fn a_capture_whose_drop_panics_still_frees_its_block() {
        // Miri's leak check (CI runs the unit tests under it) fails this if the block leaks.
        struct Loud(#[allow(dead_code)] u64);
        impl Drop for Loud {
            fn drop(&mut self) {
                panic!("dropping");
            }
        }
        let loud = Loud(1);
        let boxed = CallbackBox::new(move || drop(loud));
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(boxed)));
        assert!(unwound.is_err());
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
