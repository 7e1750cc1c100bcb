//! A survey of the wheel: its entries visited a piece at a time between turns, for a snapshot
//! of the pending timers (see `shard::survey`).
//!
//! The cursor walks the levels top down, each occupied slot's chains in step (as `detach`
//! does), and points at the next entry of each chain. The wheel keeps it valid while the
//! survey waits between pieces: an entry unlinked under the cursor is stepped over
//! ([`Cursor::unlinking`]), and a slot taken as it comes due is left ([`Cursor::taking`]).
//! A timer may be met twice, and the cursor then says which ([`Repeats`]): any, when a slot of
//! a level above 0 comes due during the survey (its timers cascade into a lower level, which
//! the walk has not reached); or those moved by a reset, or re-armed, from where the walk has
//! been (a re-armed one: after a slot the walk had passed came due) to where it has yet to go
//! ([`Cursor::relinked`]). A slot counts as passed once the walk starts it: a timer linked
//! there goes to the head of a chain, which the walk has left. A timer linked for the first
//! time during the survey is met only if it lands where the walk has yet to go.

use std::ptr::NonNull;

use super::level::{Heads, Level, CHAINS, LEVELS};
use crate::entry::{Entry, SlotId};
use crate::sync::prefetch;

/// Which timers a survey may have met twice.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) enum Repeats {
    /// None.
    #[default]
    None,
    /// Those at these addresses (a reset or a re-arm moved them ahead of the walk).
    These(Vec<usize>),
    /// Any (a coarse slot came due).
    Any,
}

/// Where a survey has got to.
pub(super) struct Cursor {
    level: usize,
    /// The slot whose chains `at` walks.
    slot: usize,
    /// The first slot of `level` the walk has not reached.
    from: usize,
    /// The next entry of each chain of `slot`, or `None` once its chain is walked.
    at: Heads,
    /// Which entries may be met twice.
    repeats: Repeats,
    /// A slot of level 0 the walk had passed came due: a timer fired there, re-armed, may be
    /// met again.
    fired_passed: bool,
}

impl Cursor {
    /// A survey from the top level's first slot.
    pub(super) fn new() -> Self {
        Cursor {
            level: LEVELS - 1,
            slot: 0,
            from: 0,
            at: [None; CHAINS],
            repeats: Repeats::None,
            fired_passed: false,
        }
    }

    /// Which entries may have been met twice.
    pub(super) fn into_repeats(self) -> Repeats {
        self.repeats
    }

    /// Whether the walk has started the slot `at` (it may have met a timer linked there).
    fn passed(&self, at: SlotId) -> bool {
        at.level > self.level || (at.level == self.level && at.slot < self.from)
    }

    /// Whether a timer that was linked at `from` (a re-armed one: `None`) may have been met.
    pub(super) fn may_have_met(&self, from: Option<SlotId>) -> bool {
        from.map_or(self.fired_passed, |at| self.passed(at))
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

    /// The wheel linked at `to` the entry at `address`, which the walk may have met (reset or
    /// re-armed): one the walk will meet there again is a repeat.
    pub(super) fn relinked(&mut self, to: SlotId, address: usize) {
        if self.passed(to) {
            return;
        }
        match &mut self.repeats {
            Repeats::None => self.repeats = Repeats::These(vec![address]),
            Repeats::These(addresses) => addresses.push(address),
            Repeats::Any => {}
        }
    }

    /// The wheel takes the slot `at` out as it comes due: the walk leaves it, and a coarse
    /// slot's entries may move where the walk is still to go.
    pub(super) fn taking(&mut self, at: SlotId) {
        if at.level > 0 {
            self.repeats = Repeats::Any;
        } else if self.passed(at) {
            self.fired_passed = true;
        }
        if at.level == self.level && at.slot == self.slot {
            self.at = [None; CHAINS];
        }
    }
}
