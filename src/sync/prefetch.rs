//! A cache prefetch hint.

/// Asks the CPU to start loading the cache line at `address`, without waiting; changes
/// nothing computed. A no-op off x86-64, and under Miri and loom.
#[inline(always)]
pub(crate) fn prefetch<T>(address: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    #[allow(unused_unsafe)] // a safe function where the compiler knows SSE is enabled
    // SAFETY: PREFETCHT0 accepts any address, mapped or not, and never faults.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = address;
}
