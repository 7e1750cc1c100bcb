//! Type-erased timer callbacks.

use std::any::Any;
use std::fmt;

use super::node::EntryRef;

/// A boxed `FnOnce` that can also be turned back into the caller's own type, so that an error
/// can hand the callback back after it was boxed (`ScheduleError::Shutdown` racing shutdown).
pub(crate) trait Callback: Send {
    /// Runs the callback once.
    fn call(self: Box<Self>);
    /// Runs a repeating timer's callback, which re-arms `entry` afterwards. A one-shot
    /// callback just runs.
    fn call_repeating(self: Box<Self>, entry: EntryRef) {
        drop(entry);
        self.call()
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

/// A callback the shard fired, with the entry when it repeats (so its runner can re-arm it).
pub(crate) struct Fired {
    callback: Box<dyn Callback>,
    rearm: Option<EntryRef>,
}

impl Fired {
    /// `callback`, taken from `entry` by the shard's INIT→EXPIRED; `repeating` if the entry
    /// repeats, so the runner needs it to re-arm it.
    pub(crate) fn new(callback: Box<dyn Callback>, entry: EntryRef, repeating: bool) -> Self {
        Fired {
            callback,
            rearm: repeating.then_some(entry),
        }
    }

    /// Whether the timer runs again after this run.
    pub(crate) fn repeats(&self) -> bool {
        self.rearm.is_some()
    }

    pub(crate) fn run(self) {
        match self.rearm {
            Some(entry) => self.callback.call_repeating(entry),
            None => self.callback.call(),
        }
    }
}

impl<F: FnOnce() + Send + 'static> Callback for F {
    fn call(self: Box<Self>) {
        (*self)()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

impl fmt::Debug for dyn Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Callback")
    }
}

/// Recovers the caller's callback from its boxed form.
pub(crate) fn unbox<T: Any + Send>(callback: Box<dyn Callback>) -> T {
    match callback.into_any().downcast::<T>() {
        Ok(f) => *f,
        // The engine boxes exactly one `F` per `schedule::<F>` and unboxes it in the same call.
        Err(_) => unreachable!("a callback is unboxed as the type it was boxed as"),
    }
}
