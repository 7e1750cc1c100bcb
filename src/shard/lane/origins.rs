//! A lane's origins: where, when and by which key each timer scheduled through it was made,
//! kept only on an engine that tracks them (`Builder::track_sites`), for a snapshot of the
//! pending timers and the ages in the statistics.
//!
//! An entry has no room for them (four words, see `entry::node`), so they sit beside it, in a
//! list under the lane's lock: the scheduling thread adds its timer's origin, holding a count
//! of its entry. The count keeps the entry's memory (and so its state word, which says when
//! the timer has ended) readable from any thread while the origin is kept; an ended timer's
//! entry goes back to the slab when its origin is forgotten. Each origin added forgets up to
//! [`LOOKS`] ended ones, round the list, so while timers come in the list holds about twice
//! the lane's pending timers at most; a reader alone on the list forgets every ended one it
//! meets. A reader visits the list [`PIECE`] origins at a time, so a scheduling thread waits
//! for one piece at most; while any reader is under way nothing is forgotten, so the origins
//! keep their places and each is visited once.

use std::panic::Location;

use crate::entry::{EntryRef, StateWord};
use crate::sync::Mutex;
use crate::time::Nanos;

/// Ended timers each new origin looks for, to forget.
const LOOKS: usize = 2;

/// Origins a reader visits per hold of the lock.
const PIECE: usize = 4096;

/// Where, when and by which key a timer was made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin {
    /// The caller of the call that made it (a sleep's: that of its `Sleep`'s maker).
    pub(crate) site: Option<&'static Location<'static>>,
    pub(crate) born: Nanos,
    /// The key it was routed by, if any.
    pub(crate) key: Option<u64>,
}

/// An origin and a count of its timer's entry.
struct Kept {
    entry: EntryRef,
    origin: Origin,
}

/// A lane's origins (see the module documentation).
pub(super) struct Origins(Mutex<List>);

impl Default for Origins {
    fn default() -> Self {
        Origins(Mutex::new(List::default()))
    }
}

#[derive(Default)]
struct List {
    kept: Vec<Kept>,
    /// Where the next look for ended timers begins.
    next: usize,
    /// Readers under way.
    readers: usize,
}

/// Whether a timer in state `word` has ended: neither pending, stowed nor in a run.
fn ended(word: StateWord) -> bool {
    !(word.is_armed() || word.is_running())
}

impl Origins {
    /// Keeps the origin of `entry`'s timer (out of line: the schedule path holds a branch).
    #[cold]
    #[inline(never)]
    pub(super) fn keep(&self, entry: EntryRef, origin: Origin) {
        let mut list = self.0.lock();
        if list.readers == 0 {
            list.forget_ended(LOOKS);
        }
        list.kept.push(Kept { entry, origin });
    }

    /// Calls `f` on the origin, state word and entry address of each timer not ended.
    pub(super) fn visit(&self, mut f: impl FnMut(&Origin, StateWord, usize)) {
        self.0.lock().readers += 1;
        let mut at = 0;
        loop {
            let mut list = self.0.lock();
            let alone = list.readers == 1;
            let end = at + PIECE;
            while at < end.min(list.kept.len()) {
                let word = list.kept[at].entry.state();
                if !ended(word) {
                    let kept = &list.kept[at];
                    f(&kept.origin, word, EntryRef::as_ptr(&kept.entry) as usize);
                    at += 1;
                } else if alone {
                    // The last origin, not visited yet, takes its place.
                    list.kept.swap_remove(at);
                } else {
                    at += 1;
                }
            }
            if at >= list.kept.len() {
                list.readers -= 1;
                return;
            }
        }
    }

    /// Forgets every origin (at shutdown, once every timer is handed back).
    pub(super) fn clear(&self) {
        let kept = std::mem::take(&mut self.0.lock().kept);
        drop(kept);
    }
}

impl List {
    /// Forgets the ended timers among the next `looks` origins, round the list.
    fn forget_ended(&mut self, looks: usize) {
        for _ in 0..looks {
            if self.next >= self.kept.len() {
                if self.kept.is_empty() {
                    return;
                }
                self.next = 0;
            }
            if ended(self.kept[self.next].entry.state()) {
                self.kept.swap_remove(self.next);
            } else {
                self.next += 1;
            }
        }
    }
}
