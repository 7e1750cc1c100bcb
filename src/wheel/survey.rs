//! A survey of the wheel: its entries visited a piece at a time between turns, for a snapshot
//! of the pending timers (see `shard::survey`).
//!
//! The cursor walks the levels top down, each occupied slot's chains in step (as `detach`
//! does), and points at the next entry of each chain. The wheel keeps it valid while the
//! survey waits between pieces: an entry unlinked under the cursor is stepped over
//! ([`Cursor::unlinking`]), and a slot taken as it comes due is left ([`Cursor::taking`]).
//! A timer due in a slot of a level above 0 that comes due during the survey cascades into a
//! lower level, which the walk has not reached: met twice if the walk had passed its slot, so
//! the cursor says so ([`Cursor::repeats`]). A timer reset, re-armed or linked during the
//! survey is met only if it lands where the walk has yet to go.

use std::ptr::NonNull;

use super::level::{Heads, Level, CHAINS, LEVELS};
use crate::entry::{Entry, SlotId};
use crate::sync::prefetch;

/// Where a survey has got to.
pub(super) struct Cursor {
    level: usize,
    /// The slot whose chains `at` walks.
    slot: usize,
    /// The first slot of `level` the walk has not reached.
    from: usize,
    /// The next entry of each chain of `slot`, or `None` once its chain is walked.
    at: Heads,
    /// A slot of a level above 0 came due during the survey: an entry may be met twice.
    repeats: bool,
}

impl Cursor {
    /// A survey from the top level's first slot.
    pub(super) fn new() -> Self {
        Cursor {
            level: LEVELS - 1,
            slot: 0,
            from: 0,
            at: [None; CHAINS],
            repeats: false,
        }
    }

    /// Whether an entry may have been met twice.
    pub(super) fn repeats(&self) -> bool {
        self.repeats
    }

    /// Visits up to about `budget` entries of `levels` with `visit`; `true` once every level
    /// is walked.
    ///
    /// # Safety
    /// The caller owns the links of the entries in `levels`, and the wheel has kept the cursor
    /// valid since its last call (see the module documentation).
    pub(super) unsafe fn walk(
        &mut self,
        levels: &[Level],
        budget: usize,
        mut visit: impl FnMut(&Entry),
    ) -> bool {
        let mut left = budget;
        loop {
            let mut met = false;
            for chain in self.at.iter_mut() {
                let Some(ptr) = *chain else {
                    continue;
                };
                // SAFETY: the cursor points at linked entries only, which their lists keep
                // live; the caller owns their links.
                let entry = unsafe { ptr.as_ref() };
                visit(entry);
                // SAFETY: as above.
                *chain = unsafe { entry.links() }.next;
                if let Some(next) = *chain {
                    prefetch(next.as_ptr());
                }
                met = true;
                left = left.saturating_sub(1);
            }
            if met {
                if left == 0 {
                    return false;
                }
                continue;
            }
            match levels[self.level].occupied_from(self.from) {
                Some(slot) => {
                    self.slot = slot;
                    self.from = slot + 1;
                    self.at = levels[self.level].heads(slot);
                }
                None if self.level == 0 => return true,
                None => {
                    self.level -= 1;
                    self.from = 0;
                }
            }
        }
    }

    /// The wheel is about to unlink `entry` from `at`: a chain pointing at it moves on.
    ///
    /// # Safety
    /// `entry` is linked at `at`, and the caller owns its links.
    pub(super) unsafe fn unlinking(&mut self, at: SlotId, entry: &Entry) {
        if at.level != self.level || at.slot != self.slot {
            return;
        }
        let this = NonNull::from(entry);
        for chain in self.at.iter_mut().filter(|chain| **chain == Some(this)) {
            // SAFETY: by this function's contract.
            *chain = unsafe { entry.links() }.next;
        }
    }

    /// The wheel takes the slot `at` out as it comes due: the walk leaves it, and a coarse
    /// slot's entries may move where the walk is still to go.
    pub(super) fn taking(&mut self, at: SlotId) {
        if at.level > 0 {
            self.repeats = true;
        }
        if at.level == self.level && at.slot == self.slot {
            self.at = [None; CHAINS];
        }
    }
}
