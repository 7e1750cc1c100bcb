//! What a delay queue shares with the engine's callbacks: an inbox of the timers that fired,
//! and the waker of the task that polls the queue.
//!
//! Each value's timer carries a [`Notice`]: its callback drops the notice, and the drop puts a
//! [`Record`] of the value's slot and arm (the id of the timer it was given) in the inbox and
//! wakes the task, if one waits. The callback runs wherever the engine runs callbacks (its
//! pool, its tick thread, or a user's spawner), so it only takes one uncontended lock, pushes,
//! and wakes; it never touches the
//! queue itself, which the record may have outlived. The queue checks each record against the
//! slot when it takes it in: a record whose value was removed, or reset onto a new timer, since
//! names an arm that is no longer the slot's, and is dropped.
//!
//! A notice is dropped the same way when the engine lets its timer go without running it: at
//! shutdown, when the timers handed back are dropped. Its value then comes out of the queue, so
//! a task waiting on a queue whose engine went away does not wait forever. The one drop that
//! must not notify is the queue's own: a cancel (by `remove`, `reset`, `clear` or the queue's
//! drop) drops the callback on the calling thread, as does a schedule the engine refused and
//! handed back. The queue makes those drops inside [`quietly`], which marks the thread.

use std::cell::Cell;
use std::mem;
use std::task::Waker;

use crate::sync::{Arc, Mutex};

/// A fired timer: the slot of its value and the arm it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) index: usize,
    pub(super) arm: u64,
}

/// The records of fired timers and the waiting task, shared by a queue and its timers'
/// callbacks.
pub(super) struct Inbox {
    state: Mutex<State>,
}

struct State {
    records: Vec<Record>,
    /// The task that polled last and found nothing, taken (and woken) by the next record.
    waker: Option<Waker>,
}

impl Inbox {
    pub(super) fn new() -> Arc<Inbox> {
        Arc::new(Inbox {
            state: Mutex::new(State {
                records: Vec::new(),
                waker: None,
            }),
        })
    }

    /// Adds a record and wakes the waiting task, if any (outside the lock).
    fn push(&self, record: Record) {
        let waker = {
            let mut state = self.state.lock();
            state.records.push(record);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Swaps the records into `into` (which must be empty) if there are any, and returns
    /// `true`; if there are none, registers `waker` to be woken by the next one and returns
    /// `false`.
    pub(super) fn take_or_register(&self, into: &mut Vec<Record>, waker: &Waker) -> bool {
        let mut state = self.state.lock();
        if state.records.is_empty() {
            match &state.waker {
                Some(registered) if registered.will_wake(waker) => {}
                _ => state.waker = Some(waker.clone()),
            }
            return false;
        }
        mem::swap(&mut state.records, into);
        true
    }

    /// The waiting task, taken to be woken.
    pub(super) fn take_waker(&self) -> Option<Waker> {
        self.state.lock().waker.take()
    }

    /// Drops every record (when the queue holds no value, all are stale) and their storage
    /// beyond `keep`, and takes the waiting task to be woken.
    pub(super) fn discard(&self, keep: usize) -> Option<Waker> {
        let mut state = self.state.lock();
        state.records.clear();
        state.records.shrink_to(keep);
        state.waker.take()
    }
}

/// What a value's timer callback carries; dropping it records the timer as fired (see the
/// module docs).
pub(super) struct Notice {
    inbox: Arc<Inbox>,
    record: Record,
}

impl Notice {
    pub(super) fn new(inbox: Arc<Inbox>, record: Record) -> Self {
        Notice { inbox, record }
    }
}

impl Drop for Notice {
    fn drop(&mut self) {
        // A thread being torn down has no marks left: it is not inside `quietly`.
        if !QUIET.try_with(Cell::get).unwrap_or(false) {
            self.inbox.push(self.record);
        }
    }
}

thread_local! {
    /// Set while the thread runs inside `quietly`.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the notices it drops on this thread silenced: for the queue's own cancels
/// and the callbacks a refused schedule hands back.
pub(super) fn quietly<R>(f: impl FnOnce() -> R) -> R {
    /// Puts the mark back as it was, even if `f` unwinds.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = QUIET.try_with(|quiet| quiet.set(self.0));
        }
    }
    let _restore = Restore(QUIET.with(|quiet| quiet.replace(true)));
    f()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    use super::{quietly, Inbox, Notice, Record};
    use crate::sync::Arc;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_dropped_notice_records_and_wakes_once() {
        let inbox = Inbox::new();
        let count = std::sync::Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut taken = Vec::new();
        assert!(!inbox.take_or_register(&mut taken, &waker));
        let first = Record { index: 3, arm: 9 };
        drop(Notice::new(inbox.clone(), first));
        drop(Notice::new(inbox.clone(), Record { index: 4, arm: 10 }));
        // The first record took the waker; the second found none.
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(inbox.take_or_register(&mut taken, &waker));
        assert_eq!(taken, vec![first, Record { index: 4, arm: 10 }]);
    }

    #[test]
    fn a_notice_dropped_quietly_records_nothing() {
        let inbox = Inbox::new();
        let notice = Notice::new(inbox.clone(), Record { index: 0, arm: 1 });
        quietly(|| drop(notice));
        let waker = Waker::from(std::sync::Arc::new(Count(AtomicUsize::new(0))));
        assert!(!inbox.take_or_register(&mut Vec::new(), &waker));
        // The mark is gone once `quietly` returns.
        drop(Notice::new(inbox.clone(), Record { index: 0, arm: 2 }));
        assert!(inbox.take_or_register(&mut Vec::new(), &waker));
        assert_eq!(Arc::strong_count(&inbox), 1);
    }
}
