//! The re-arm stack: a shard's take-all stack (`sync::stack`) of the repeating timers its
//! runners stowed (see `entry::repeat`), linked through `next` (a fired entry is in no queue
//! nor wheel). The shard takes it whole each turn. A push onto an empty stack unparks the
//! shard, whose park then returns at once if it comes later. Shutdown takes it a last time and
//! closes it: a later push fails, and its runner stops the timer itself.

use crate::entry::{Entry, EntryRef};
use crate::sync::thread::Thread;
use crate::sync::{Mutex, Ordering, TakeAllStack};

/// A shard's stowed repeating timers, from their runners (see the module documentation).
pub(crate) struct Rearms {
    stack: TakeAllStack<Entry>,
    /// The shard thread, once it runs.
    shard: Mutex<Option<Thread>>,
}

impl Rearms {
    pub(crate) fn new() -> Self {
        Rearms {
            stack: TakeAllStack::new(),
            shard: Mutex::new(None),
        }
    }

    /// Records the thread to unpark; called by the shard thread when it starts.
    pub(crate) fn set_thread(&self, thread: Thread) {
        *self.shard.lock() = Some(thread);
    }

    /// Hands stowed `entry` to the shard. Any thread. Gives it back if the stack is closed.
    pub(crate) fn push(&self, entry: EntryRef) -> Result<(), EntryRef> {
        let node = EntryRef::into_raw(entry).cast_mut();
        let pushed = self.stack.push_unless_closed(node, |top| {
            // SAFETY: `node` holds the count given up above; a fired entry is in no list, so
            // this thread alone writes its `next` until the push publishes it.
            // Relaxed: published by the push's Release CAS.
            unsafe { (*node).next.store(top, Ordering::Relaxed) }
        });
        match pushed {
            Ok(was_empty) => {
                if was_empty {
                    if let Some(shard) = &*self.shard.lock() {
                        shard.unpark();
                    }
                }
                Ok(())
            }
            // SAFETY: the push failed, so the count given up above is still this call's.
            Err(()) => Err(unsafe { EntryRef::from_raw(node) }),
        }
    }

    /// The shard thread: takes every stowed entry into `out`; returns how many.
    pub(crate) fn take_all(&self, out: &mut Vec<EntryRef>) -> usize {
        // A look first: most turns find none, and a load costs less than a swap.
        if self.stack.is_empty() {
            return 0;
        }
        Self::unchain(self.stack.take_all(), out)
    }

    /// Shutdown, once the shard thread is gone: takes every stowed entry into `out` and closes
    /// the stack; returns how many.
    pub(crate) fn close(&self, out: &mut Vec<EntryRef>) -> usize {
        Self::unchain(self.stack.close(), out)
    }

    /// Whether no entry waits (a closed stack counts as waiting). A hint.
    pub(crate) fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    fn unchain(mut node: *mut Entry, out: &mut Vec<EntryRef>) -> usize {
        let before = out.len();
        while !node.is_null() {
            // SAFETY: each node on a taken chain carries the count its push gave up, taken
            // back once here; the take's Acquire swap made its `next` visible.
            let entry = unsafe { EntryRef::from_raw(node) };
            // Relaxed: as above.
            node = entry.next.load(Ordering::Relaxed);
            out.push(entry);
        }
        out.len() - before
    }
}

impl Drop for Rearms {
    fn drop(&mut self) {
        // Entries never taken (the engine never shut down): their counts go with the stack.
        self.close(&mut Vec::new());
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::queue::tests::entry;

    #[test]
    fn the_shard_takes_each_entry_once_and_a_closed_stack_refuses() {
        let rearms = Rearms::new();
        assert!(rearms.is_empty());
        let kept: Vec<EntryRef> = (0..3).map(entry).collect();
        for e in &kept {
            rearms.push(e.clone()).map_err(|_| ()).unwrap();
        }
        let mut out = Vec::new();
        assert_eq!(rearms.take_all(&mut out), 3);
        assert!(rearms.is_empty());
        let mut deadlines: Vec<u64> = out.iter().map(|e| e.state().deadline()).collect();
        deadlines.sort_unstable();
        assert_eq!(deadlines, vec![0, 1, 2]);
        rearms.push(out.pop().unwrap()).map_err(|_| ()).unwrap();
        assert_eq!(rearms.close(&mut out), 1);
        let refused = rearms.push(out.pop().unwrap()).unwrap_err();
        assert_eq!(EntryRef::strong_count(&refused), 2, "handed back whole");
        assert!(!rearms.is_empty(), "closed");
        assert_eq!(rearms.close(&mut out), 0);
        drop((out, refused));
        assert!(kept.iter().all(|e| EntryRef::strong_count(e) == 1));
    }

    #[test]
    fn entries_left_on_the_stack_are_released_with_it() {
        let rearms = Rearms::new();
        let kept = entry(5);
        rearms.push(kept.clone()).map_err(|_| ()).unwrap();
        drop(rearms);
        assert_eq!(EntryRef::strong_count(&kept), 1);
    }
}
