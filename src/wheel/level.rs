//! One level of the wheel: 64 slots, each [`CHAINS`] intrusive doubly-linked lists, and a
//! `u64` occupancy bitmap; the next occupied slot is a rotate and `trailing_zeros` (as tokio).
//!
//! A slot's entries are dealt round-robin onto its chains: walking several lists in step keeps
//! that many cache misses in flight, which bounds a slot of thousands firing or cascading.

use std::ptr::NonNull;

use crate::entry::{Entry, SlotId};

/// Slots per level.
pub(crate) const SLOTS: usize = 64;

/// Levels in the wheel.
pub(super) const LEVELS: usize = 6;
/// Lists per slot (see the module documentation).
pub(super) const CHAINS: usize = 4;

/// The heads of a slot's lists.
pub(super) type Heads = [Option<NonNull<Entry>>; CHAINS];
/// Bits of a tick per level.
pub(crate) const SLOT_BITS: u32 = 6;

/// Ticks covered by one slot of `level`.
pub(super) fn slot_span(level: usize) -> u64 {
    1 << (SLOT_BITS as usize * level)
}

/// Ticks covered by all of `level`.
pub(super) fn level_span(level: usize) -> u64 {
    1 << (SLOT_BITS as usize * (level + 1))
}

/// The level a tick `when` goes to, seen from `elapsed`: that of the highest bit where the
/// two differ, the bottom level's six bits counted as one. Unbounded: a wheel of fewer levels
/// clamps it into its top one.
pub(crate) fn level_for(elapsed: u64, when: u64) -> usize {
    let masked = (elapsed ^ when) | (SLOTS as u64 - 1);
    (63 - masked.leading_zeros()) as usize / SLOT_BITS as usize
}

/// The slot of `level` that tick `when` falls into.
pub(crate) fn slot_of(when: u64, level: usize) -> usize {
    ((when >> (SLOT_BITS as usize * level)) as usize) & (SLOTS - 1)
}

/// The next slot that needs processing, and the tick at which it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Expiration {
    pub(super) at: SlotId,
    pub(super) deadline: u64,
}

pub(super) struct Level {
    level: usize,
    occupied: u64,
    heads: [Heads; SLOTS],
    /// The chain the next entry linked into this level goes to.
    deal: usize,
}

impl Level {
    pub(super) fn new(level: usize) -> Self {
        Level {
            level,
            occupied: 0,
            heads: [[None; CHAINS]; SLOTS],
            deal: 0,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// The first occupied slot at or after `now`, with the tick at which it comes due.
    pub(super) fn next_expiration(&self, now: u64) -> Option<Expiration> {
        if self.occupied == 0 {
            return None;
        }
        // Search from the next slot: below the top level the current slot is never occupied;
        // in the top level (a ring) an entry in it belongs to the next turn, so comes last.
        let start = (slot_of(now, self.level) + 1) % SLOTS;
        let ahead = self.occupied.rotate_right(start as u32).trailing_zeros() as usize;
        let slot = (start + ahead) % SLOTS;
        let level_start = now & !(level_span(self.level) - 1);
        let mut deadline = level_start + slot as u64 * slot_span(self.level);
        if deadline <= now {
            // The slot lies in the next turn of the level: only the top level wraps like this.
            debug_assert_eq!(self.level, LEVELS - 1);
            deadline += level_span(self.level);
        }
        Some(Expiration {
            at: SlotId {
                level: self.level,
                slot,
            },
            deadline,
        })
    }

    /// Links `entry` at the head of `slot`.
    ///
    /// # Safety
    /// `entry` points to a live entry that is in no list, and the caller owns its links.
    pub(crate) unsafe fn push(&mut self, slot: usize, entry: NonNull<Entry>) {
        let chain = self.deal;
        self.deal = (chain + 1) % CHAINS;
        let old_head = self.heads[slot][chain];
        // SAFETY: the caller owns the links of `entry` and of every entry in the list.
        unsafe {
            entry.as_ref().with_links(|links| {
                links.next = old_head;
                links.prev = None;
            });
            if let Some(head) = old_head {
                head.as_ref().with_links(|links| links.prev = Some(entry));
            }
        }
        self.heads[slot][chain] = Some(entry);
        self.occupied |= 1 << slot;
    }

    /// Unlinks `entry` from `slot` and returns the pointer the list held for it.
    ///
    /// # Safety
    /// `entry` is linked in `slot` of this level, and the caller owns the links of that list.
    pub(super) unsafe fn remove(&mut self, slot: usize, entry: &Entry) -> NonNull<Entry> {
        // SAFETY: `entry` and its neighbours are in this list, whose links the caller owns;
        // the list keeps the neighbours live.
        unsafe {
            let (prev, next) = entry.with_links(|links| (links.prev.take(), links.next.take()));
            let owned = match prev {
                Some(prev) => prev.as_ref().with_links(|links| {
                    let owned = links.next;
                    links.next = next;
                    owned
                }),
                None => {
                    // The head of one of the slot's chains: the one that points to it.
                    let this = NonNull::from(entry);
                    let head = self.heads[slot]
                        .iter_mut()
                        .find(|head| **head == Some(this));
                    match head {
                        Some(head) => std::mem::replace(head, next),
                        None => None,
                    }
                }
            };
            if let Some(next) = next {
                next.as_ref().with_links(|links| links.prev = prev);
            }
            if self.heads[slot].iter().all(Option::is_none) {
                self.occupied &= !(1 << slot);
            }
            match owned {
                Some(owned) => owned,
                None => unreachable!("a linked entry is pointed to by its predecessor or the head"),
            }
        }
    }

    /// Calls `f` on every entry linked into this level.
    ///
    /// # Safety
    /// The caller owns the links of this level's lists.
    pub(super) unsafe fn visit(&self, mut f: impl FnMut(&Entry)) {
        let mut occupied = self.occupied;
        while occupied != 0 {
            let slot = occupied.trailing_zeros() as usize;
            occupied &= occupied - 1;
            for head in self.heads[slot] {
                let mut at = head;
                while let Some(entry) = at {
                    // SAFETY: the list keeps the entry live; the caller owns its links.
                    let entry = unsafe { entry.as_ref() };
                    f(entry);
                    // SAFETY: as above.
                    at = unsafe { entry.links() }.next;
                }
            }
        }
    }

    /// The first occupied slot at or after `slot`, if any.
    pub(super) fn occupied_from(&self, slot: usize) -> Option<usize> {
        let ahead = self.occupied.checked_shr(slot as u32).unwrap_or(0);
        (ahead != 0).then(|| slot + ahead.trailing_zeros() as usize)
    }

    /// The heads of `slot`'s lists.
    pub(super) fn heads(&self, slot: usize) -> Heads {
        self.heads[slot]
    }

    /// Detaches all the lists of `slot`, returning their heads.
    pub(super) fn take(&mut self, slot: usize) -> Heads {
        self.occupied &= !(1 << slot);
        std::mem::take(&mut self.heads[slot])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level_with(level: usize, slots: &[usize]) -> Level {
        let mut l = Level::new(level);
        for &s in slots {
            l.occupied |= 1 << s;
        }
        l
    }

    #[test]
    fn occupied_from_finds_the_next_occupied_slot() {
        let l = level_with(2, &[3, 40, 63]);
        assert_eq!(l.occupied_from(0), Some(3));
        assert_eq!(l.occupied_from(4), Some(40));
        assert_eq!(l.occupied_from(63), Some(63));
        assert_eq!(l.occupied_from(64), None);
        assert_eq!(level_with(0, &[]).occupied_from(0), None);
    }

    #[test]
    fn spans() {
        assert_eq!(slot_span(0), 1);
        assert_eq!(level_span(0), 64);
        assert_eq!(slot_span(1), 64);
        assert_eq!(level_span(5), 1 << 36);
        assert_eq!(slot_of(64 * 3 + 5, 0), 5);
        assert_eq!(slot_of(64 * 3 + 5, 1), 3);
    }

    #[test]
    fn next_expiration_on_level_zero() {
        let l = level_with(0, &[10]);
        assert_eq!(l.next_expiration(3).unwrap().deadline, 10);
        assert_eq!(l.next_expiration(64 + 3).unwrap().deadline, 64 + 10);
        assert_eq!(l.next_expiration(9).unwrap().deadline, 10);
    }

    #[test]
    fn next_expiration_at_a_level_boundary() {
        // Level 1, slot 2 covers ticks [128, 192); it comes due at its start.
        let l = level_with(1, &[2]);
        assert_eq!(l.next_expiration(64).unwrap().deadline, 128);
        assert_eq!(l.next_expiration(127).unwrap().deadline, 128);
        let e = l.next_expiration(0).unwrap();
        assert_eq!(e.at, SlotId { level: 1, slot: 2 });
    }

    #[test]
    fn next_expiration_picks_the_nearest_occupied_slot_after_now() {
        let l = level_with(0, &[2, 40, 60]);
        assert_eq!(l.next_expiration(41).unwrap().deadline, 60);
        assert_eq!(l.next_expiration(30).unwrap().deadline, 40);
    }

    #[test]
    fn top_level_wraps_round() {
        // An entry clamped into the top level at a slot behind `now` is due one turn later.
        let l = level_with(5, &[0]);
        let now = 3 * slot_span(5) + 7;
        assert_eq!(l.next_expiration(now).unwrap().deadline, level_span(5));
    }
}
