//! Type-erased timer callbacks, one pointer wide.
//!
//! A [`CallbackBox`] is a thin owning pointer to a header naming the callback's [`VTable`]: one
//! heap block (header, then value), or for a zero-sized callback a static header and no
//! allocation. Half a `Box<dyn Callback>`, it keeps an entry small (see `node`).
//!
//! A task's [`Waker`] (a sleep's timer) needs no box when its vtable is the process's first:
//! the word holds the waker's data pointer, tagged [`WAKER`], and the vtable is read back from
//! [`WAKER_VTABLE`] (a std atomic, written once; no model touches it). Firing it wakes the
//! task, and so does dropping it (a sleep handed back at shutdown).
//!
//! The cell an entry keeps its box in is `cell`. All the `unsafe` of type erasure ([`Heap`],
//! the vtable functions, the tags) is here.

use std::alloc::Layout;
use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::node::EntryRef;
use crate::sync::drop_then_free;

/// What a timer runs, turned into a [`CallbackBox`] by [`CallbackBox::new`].
pub(crate) trait Callback: Send + Sized + 'static {
    /// Runs the callback once.
    fn call(self);
    /// Runs a repeating timer's callback once, handed its `entry` (for the run's handle):
    /// `this` back (the same box, no allocation) with the tick its next run is due, or `None`
    /// if the timer stops. A one-shot callback just runs.
    fn call_repeating(this: Boxed<Self>, _entry: &EntryRef) -> Option<(Boxed<Self>, u64)> {
        this.into_inner().call();
        None
    }
}

impl<F: FnOnce() + Send + 'static> Callback for F {
    fn call(self) {
        self()
    }
}

/// A repeating timer's callback back from its run, with the tick its next run is due.
pub(crate) type Again = (CallbackBox, u64);

/// The functions a [`CallbackBox`] reaches its value through, one table per callback type.
struct VTable {
    /// Runs the callback (as `call_repeating` when there is an entry), freeing the box unless
    /// it is handed back.
    run: unsafe fn(NonNull<Front>, Option<&EntryRef>) -> Option<Again>,
    /// Drops the callback without running it and frees the box.
    drop: unsafe fn(NonNull<Front>),
    /// The callback's type, for [`unbox`].
    type_id: fn() -> TypeId,
}

/// The start of every box: the callback's vtable.
#[repr(C)]
struct Front {
    vtable: &'static VTable,
}

/// The heap block of a callback that is not zero-sized: the header, then the value.
#[repr(C)]
struct Heap<C> {
    header: Front,
    value: C,
}

/// Where each callback type's vtable, and the static header of a zero-sized one, live.
trait Erased: Callback {
    const VTABLE: &'static VTable;
    const STATIC_HEADER: &'static Front;
}

impl<C: Callback> Erased for C {
    const VTABLE: &'static VTable = &VTable {
        run: run::<C>,
        drop: drop_boxed::<C>,
        type_id: TypeId::of::<C>,
    };
    const STATIC_HEADER: &'static Front = &Front {
        vtable: Self::VTABLE,
    };
}

/// Whether `C` is stored without an allocation.
const fn is_static<C>() -> bool {
    mem::size_of::<C>() == 0
}

/// # Safety
/// `header` is the header of a live box of `C`, which the caller gives up.
unsafe fn run<C: Callback>(header: NonNull<Front>, entry: Option<&EntryRef>) -> Option<Again> {
    // SAFETY: by this function's contract.
    let this = unsafe { Boxed::<C>::from_header(header) };
    match entry {
        Some(entry) => C::call_repeating(this, entry).map(|(this, tick)| (this.erase(), tick)),
        None => {
            this.into_inner().call();
            None
        }
    }
}

/// # Safety
/// As [`run`].
unsafe fn drop_boxed<C: Callback>(header: NonNull<Front>) {
    // SAFETY: by this function's contract.
    drop(unsafe { Boxed::<C>::from_header(header) });
}

/// A callback of a known type in its box, as [`Callback::call_repeating`] receives it.
pub(crate) struct Boxed<C: Callback> {
    header: NonNull<Front>,
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
                header: Front { vtable: C::VTABLE },
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
    unsafe fn from_header(header: NonNull<Front>) -> Self {
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

/// A callback of any type, one pointer wide (see the module documentation): a box's header,
/// or a waker's data pointer tagged [`WAKER`].
pub(crate) struct CallbackBox {
    header: NonNull<Front>,
}

/// The tag of a [`CallbackBox`] holding a waker of [`WAKER_VTABLE`].
const WAKER: usize = 2;

/// The vtable of the wakers a callback box holds without a box: the first one seen.
static WAKER_VTABLE: AtomicPtr<RawWakerVTable> = AtomicPtr::new(ptr::null_mut());

/// A waker that did not fit in a word, boxed: wakes when run or dropped.
struct BoxedWaker(Option<Waker>);

impl Callback for BoxedWaker {
    fn call(self) {
        // Dropping wakes.
    }
}

impl Drop for BoxedWaker {
    fn drop(&mut self) {
        if let Some(waker) = self.0.take() {
            waker.wake();
        }
    }
}

// SAFETY: a box owns a `Callback`, which is `Send`; its header is immutable.
unsafe impl Send for CallbackBox {}

impl CallbackBox {
    #[inline]
    pub(crate) fn new<C: Callback>(callback: C) -> Self {
        Boxed::new(callback).erase()
    }

    /// A callback that wakes `waker` when run or dropped: in the word itself where it fits.
    #[inline]
    pub(crate) fn waker(waker: Waker) -> Self {
        let vtable = ptr::from_ref(waker.vtable()).cast_mut();
        // Relaxed: the vtable is a `&'static`, read whole through the pointer; nothing else is
        // published with it.
        let known = WAKER_VTABLE.load(Ordering::Relaxed);
        let fits = waker.data().addr() & (EMPTY | WAKER) == 0
            && (known == vtable
                || (known.is_null()
                    && WAKER_VTABLE
                        .compare_exchange(
                            ptr::null_mut(),
                            vtable,
                            // Relaxed: as the load above.
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        )
                        .is_ok()));
        if !fits {
            return CallbackBox::new(BoxedWaker(Some(waker)));
        }
        let waker = ManuallyDrop::new(waker);
        let word = waker.data().cast_mut().map_addr(|addr| addr | WAKER);
        // SAFETY: the tagged word is not null; the box takes over the waker, whose vtable is
        // `WAKER_VTABLE` for good.
        CallbackBox {
            header: unsafe { NonNull::new_unchecked(word.cast()) },
        }
    }

    /// The waker a [`waker`](Self::waker) box holds, not woken; the box back if it is none.
    #[inline]
    pub(crate) fn into_waker(self) -> Result<Waker, Self> {
        if let Some(waker) = self.inline_waker() {
            mem::forget(self);
            return Ok(waker);
        }
        match self.downcast::<BoxedWaker>() {
            Ok(mut boxed) => Ok(boxed.0.take().unwrap_or_else(|| Waker::noop().clone())),
            Err(other) => Err(other),
        }
    }

    /// The waker held in the word, if any; the caller then forgets `self`, whose waker it is.
    #[inline]
    fn inline_waker(&self) -> Option<Waker> {
        let word = self.header.as_ptr().cast::<()>();
        if word.addr() & WAKER == 0 {
            return None;
        }
        // Relaxed: it was stored before any word tagged `WAKER` was made, and a box reaches
        // another thread only through the engine's synchronising hand-offs.
        let vtable = WAKER_VTABLE.load(Ordering::Relaxed);
        let data = word.map_addr(|addr| addr & !WAKER).cast_const();
        // SAFETY: `waker` made this word from a waker with that data and vtable and gave the
        // waker up to the box; the vtable is never replaced once stored.
        Some(unsafe { Waker::from_raw(RawWaker::new(data, &*vtable)) })
    }

    fn vtable(&self) -> &'static VTable {
        debug_assert!(self.header.as_ptr().addr() & WAKER == 0);
        // SAFETY: the header of a live box is initialised and never written after `new`.
        unsafe { self.header.as_ref().vtable }
    }

    /// Runs the callback once.
    pub(crate) fn call(self) {
        drop(self.run(None));
    }

    /// Runs a repeating timer's callback once (see [`Callback::call_repeating`]).
    pub(crate) fn call_repeating(self, entry: &EntryRef) -> Option<Again> {
        self.run(Some(entry))
    }

    /// Runs the callback; with `entry`, as a repeating run.
    fn run(self, entry: Option<&EntryRef>) -> Option<Again> {
        if let Some(waker) = self.inline_waker() {
            mem::forget(self);
            waker.wake();
            return None;
        }
        let this = ManuallyDrop::new(self);
        // SAFETY: the vtable is the one of the box's own type, and `this` gives the box up.
        unsafe { (this.vtable().run)(this.header, entry) }
    }

    /// The callback back as its own type, if it is a `C`.
    pub(crate) fn downcast<C: Callback>(self) -> Result<C, Self> {
        let waker = self.header.as_ptr().addr() & WAKER != 0;
        if waker || (self.vtable().type_id)() != TypeId::of::<C>() {
            return Err(self);
        }
        let this = ManuallyDrop::new(self);
        // SAFETY: the type check above proves the box was made from a `C`; `this` gives it up.
        Ok(unsafe { Boxed::<C>::from_header(this.header) }.into_inner())
    }

    /// The box's one word, given up (see `cell`).
    pub(super) fn into_raw(self) -> NonNull<()> {
        ManuallyDrop::new(self).header.cast()
    }

    /// # Safety
    /// `word` came from [`CallbackBox::into_raw`], and the caller gives it up.
    pub(super) unsafe fn from_raw(word: NonNull<()>) -> Self {
        CallbackBox {
            header: word.cast(),
        }
    }
}

impl Drop for CallbackBox {
    fn drop(&mut self) {
        if let Some(waker) = self.inline_waker() {
            return waker.wake();
        }
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

/// The low bit of an empty cell's word (see `cell`); a box's word never has it.
pub(super) const EMPTY: usize = 1;

const _: () = assert!(mem::align_of::<Front>() > (EMPTY | WAKER));

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn a_box_is_one_pointer() {
        // That a capture-free callback allocates nothing is checked by counting allocations,
        // in tests/footprint.rs.
        assert_eq!(mem::size_of::<CallbackBox>(), mem::size_of::<usize>());
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

    /// A waker that counts its wakes, and the count.
    fn counting_waker() -> (Arc<AtomicUsize>, Waker) {
        struct WakeCounter(Arc<AtomicUsize>);
        impl std::task::Wake for WakeCounter {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let woken = Arc::new(AtomicUsize::new(0));
        (woken.clone(), Waker::from(Arc::new(WakeCounter(woken))))
    }

    #[test]
    fn a_waker_box_wakes_when_run_or_dropped_and_gives_it_back_unwoken() {
        let (woken, waker) = counting_waker();
        CallbackBox::waker(waker.clone()).call();
        assert_eq!(woken.load(Ordering::SeqCst), 1);
        drop(CallbackBox::waker(waker.clone()));
        assert_eq!(woken.load(Ordering::SeqCst), 2);
        let back = CallbackBox::waker(waker.clone()).into_waker().ok().unwrap();
        assert_eq!(woken.load(Ordering::SeqCst), 2, "given back unwoken");
        back.wake();
        assert_eq!(woken.load(Ordering::SeqCst), 3, "the same waker");
        // A waker of another vtable than the first one seen takes the boxed path, alike.
        let (other_woken, other) = counting_waker();
        let noop = CallbackBox::waker(Waker::noop().clone());
        drop(CallbackBox::waker(other.clone()));
        CallbackBox::waker(other).into_waker().ok().unwrap().wake();
        assert_eq!(other_woken.load(Ordering::SeqCst), 2);
        assert!(noop.into_waker().is_ok());
        assert!(CallbackBox::new(|| {}).into_waker().is_err());
    }
}
