//! Dropping a value in place, then freeing its memory even if the `Drop` panics.

/// Drops the value at `value`, then runs `free`, even if the drop panics.
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
