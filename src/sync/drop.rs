//! Dropping a value in place and then freeing the memory it lived in, also when its `Drop`
//! panics: the callback box and the slab block both hold values of their users' types, whose
//! drops may panic, in memory of their own.

/// Drops the value at `value`, then runs `free`, which runs even if the drop panics (and the
/// panic then goes on unwinding).
///
/// # Safety
/// `value` points at a live, initialised `T` that the caller owns and never uses again.
pub(crate) unsafe fn drop_then_free<T>(value: *mut T, free: impl FnOnce()) {
    struct Free<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Free<F> {
        fn drop(&mut self) {
            if let Some(free) = self.0.take() {
                free();
            }
        }
    }
    let _free = Free(Some(free));
    // SAFETY: by this function's contract.
    unsafe { std::ptr::drop_in_place(value) };
}
