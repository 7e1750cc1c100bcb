//! The engine a thread has entered, if any: the one the free functions use there before the
//! default (see `scope`).

use std::cell::RefCell;

use super::api::TimerEngine;

thread_local! {
    /// The engine this thread has entered, if any.
    static ENTERED: RefCell<Option<TimerEngine>> = const { RefCell::new(None) };
}

/// The engine this thread has entered, if any (cloned out, so that the caller runs with the
/// thread-local free: it may enter an engine).
#[inline]
pub(super) fn entered() -> Option<TimerEngine> {
    ENTERED
        .try_with(|entered| entered.borrow().clone())
        .ok()
        .flatten()
}

/// Puts `engine` in the thread-local; returns what was there, or `Err` once the thread-local
/// has been torn down (the thread is ending).
pub(super) fn swap(engine: Option<TimerEngine>) -> Result<Option<TimerEngine>, ()> {
    ENTERED
        .try_with(|entered| entered.replace(engine))
        .map_err(|_| ())
}
