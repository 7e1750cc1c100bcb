//! A delay queue's own timing wheel, behind the queue's one engine timer.
//!
//! Levels of 64 slots, level n's 64^n ticks wide, added as deadlines reach them; a value due
//! at `t` sits where the shard wheel would put it (`wheel::level_for` and `wheel::slot_of`,
//! without the shard wheel's top level), in a doubly-linked list
//! threaded through the values by index, with a per-level occupancy bitmap. Values beyond the
//! engine's range wait in one more list, `far`, which only `drain` empties.

use super::values::Values;
use crate::wheel::{level_for, slot_of, SLOTS, SLOT_BITS};

/// The end of a list.
const NONE: usize = usize::MAX;

/// Where a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum InList {
    /// In no list (being linked or moved).
    Loose,
    /// In slot `slot` of level `level`.
    Wheel { level: u8, slot: u8 },
    /// In the list of values beyond the engine's range.
    Far,
    /// Among the values due, under this arm (an older record of the value is stale).
    Due(u64),
}

/// A value's tick, the list it is in, and its neighbours there.
#[derive(Clone, Copy, Debug)]
pub(super) struct Link {
    pub(super) tick: u64,
    pub(super) list: InList,
    prev: usize,
    next: usize,
}

impl Link {
    pub(super) const LOOSE: Link = Link {
        tick: 0,
        list: InList::Loose,
        prev: NONE,
        next: NONE,
    };
}

/// A value of the queue's store, with its link.
pub(super) trait Linked {
    fn link(&mut self) -> &mut Link;
    fn link_ref(&self) -> &Link;
}

/// One level of the wheel: its slots' lists.
struct DelayLevel {
    /// Bit `s` set: slot `s` holds a value.
    occupied: u64,
    heads: [usize; SLOTS],
}

/// The wheel: its levels, its far list, and how far it has been taken.
pub(super) struct DelayWheel {
    levels: Vec<DelayLevel>,
    far: usize,
    /// Every value in the levels is due after this tick.
    elapsed: u64,
    /// Values in the levels (not the far list).
    len: usize,
}

/// The link of the value at `index`.
fn link_of<E: Linked>(values: &mut Values<E>, index: usize) -> Option<&mut Link> {
    values.get_at_mut(index).map(|(_, item)| item.link())
}

/// Pushes the value at `index` on the list at `head`, as `list`.
fn push<E: Linked>(values: &mut Values<E>, head: &mut usize, index: usize, list: InList) {
    if let Some(first) = link_of(values, *head) {
        first.prev = index;
    }
    if let Some(link) = link_of(values, index) {
        link.list = list;
        link.prev = NONE;
        link.next = *head;
    }
    *head = index;
}

impl DelayWheel {
    /// An empty wheel taken up to `elapsed`.
    pub(super) fn new(elapsed: u64) -> Self {
        DelayWheel {
            levels: Vec::new(),
            far: NONE,
            elapsed,
            len: 0,
        }
    }

    /// The tick the wheel has been taken up to.
    pub(super) fn elapsed(&self) -> u64 {
        self.elapsed
    }

    /// Whether the levels hold no value (the far list may).
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Moves an empty wheel up to `tick`, so that values inserted next sit low.
    pub(super) fn catch_up(&mut self, tick: u64) {
        if self.len == 0 {
            self.elapsed = self.elapsed.max(tick);
        }
    }

    /// Links the value at `index` in by `tick`; `false` (and not linked) if `tick` is due.
    pub(super) fn insert<E: Linked>(
        &mut self,
        values: &mut Values<E>,
        index: usize,
        tick: u64,
    ) -> bool {
        if tick <= self.elapsed {
            return false;
        }
        let level = level_for(self.elapsed, tick);
        let slot = slot_of(tick, level);
        while self.levels.len() <= level {
            self.levels.push(DelayLevel {
                occupied: 0,
                heads: [NONE; SLOTS],
            });
        }
        if let Some(link) = link_of(values, index) {
            link.tick = tick;
        }
        let row = &mut self.levels[level];
        row.occupied |= 1 << slot;
        let list = InList::Wheel {
            level: level as u8,
            slot: slot as u8,
        };
        push(values, &mut row.heads[slot], index, list);
        self.len += 1;
        true
    }

    /// Links the value at `index` in the far list.
    pub(super) fn insert_far<E: Linked>(&mut self, values: &mut Values<E>, index: usize) {
        push(values, &mut self.far, index, InList::Far);
    }

    /// Unlinks a value whose link was `link` from its list (if it is in one). The value may
    /// already be out of the values: only its neighbours are touched.
    pub(super) fn unlink<E: Linked>(&mut self, values: &mut Values<E>, link: &Link) {
        let head = match link.list {
            InList::Wheel { level, slot } => {
                self.len -= 1;
                let row = &mut self.levels[usize::from(level)];
                if link.prev == NONE && link.next == NONE {
                    row.occupied &= !(1 << slot);
                }
                &mut row.heads[usize::from(slot)]
            }
            InList::Far => &mut self.far,
            InList::Loose | InList::Due(_) => return,
        };
        match link_of(values, link.prev) {
            Some(prev) => prev.next = link.next,
            None => *head = link.next,
        }
        if let Some(next) = link_of(values, link.next) {
            next.prev = link.prev;
        }
    }

    /// The values of the earliest occupied slot, or of the far list if the levels are empty:
    /// the value due first in the wheel is among them.
    pub(super) fn first_values<'a, E: Linked>(
        &'a self,
        values: &'a Values<E>,
    ) -> impl Iterator<Item = usize> + 'a {
        let head = match self.next_slot() {
            Some((level, slot, _)) => self.levels[level].heads[slot],
            None => self.far,
        };
        std::iter::successors((head != NONE).then_some(head), move |&index| {
            let next = values.get_at(index)?.1.link_ref().next;
            (next != NONE).then_some(next)
        })
    }

    /// The start of the earliest occupied slot: no value in the levels is due before it.
    pub(super) fn next_tick(&self) -> Option<u64> {
        self.next_slot().map(|(_, _, start)| start)
    }

    /// The earliest occupied slot: its level, index and first tick. A lower level's slots all
    /// come before a higher one's.
    fn next_slot(&self) -> Option<(usize, usize, u64)> {
        let (level, row) = self
            .levels
            .iter()
            .enumerate()
            .find(|(_, row)| row.occupied != 0)?;
        let shift = SLOT_BITS * level as u32;
        let now_slot = ((self.elapsed >> shift) & (SLOTS as u64 - 1)) as u32;
        let slot = (row.occupied.rotate_right(now_slot).trailing_zeros() + now_slot) as usize
            & (SLOTS - 1);
        let span_bits = shift + SLOT_BITS;
        let level_start = if span_bits >= 64 {
            0
        } else {
            self.elapsed & !((1u64 << span_bits) - 1)
        };
        Some((level, slot, level_start + ((slot as u64) << shift)))
    }

    /// Takes the wheel up to `now`: every value whose tick is at or before it goes to `due`
    /// (with its index and generation), the others of the slots taken move down.
    pub(super) fn advance<E: Linked>(
        &mut self,
        values: &mut Values<E>,
        now: u64,
        mut due: impl FnMut(usize, u64, &mut E),
    ) {
        while let Some((level, slot, start)) = self.next_slot() {
            if start > now {
                break;
            }
            self.elapsed = self.elapsed.max(start);
            let row = &mut self.levels[level];
            row.occupied &= !(1 << slot);
            let mut index = std::mem::replace(&mut row.heads[slot], NONE);
            while let Some((generation, item)) = values.get_at_mut(index) {
                let link = *item.link();
                self.len -= 1;
                if link.tick <= self.elapsed {
                    due(index, generation, item);
                } else {
                    self.insert(values, index, link.tick);
                }
                index = link.next;
            }
        }
        self.elapsed = self.elapsed.max(now);
    }

    /// Takes every value out, far ones included, to `due`.
    pub(super) fn drain<E: Linked>(
        &mut self,
        values: &mut Values<E>,
        mut due: impl FnMut(usize, u64, &mut E),
    ) {
        let heads = self
            .levels
            .iter_mut()
            .flat_map(|row| {
                row.occupied = 0;
                row.heads.iter_mut()
            })
            .chain(std::iter::once(&mut self.far));
        for head in heads {
            let mut index = std::mem::replace(head, NONE);
            while let Some((generation, item)) = values.get_at_mut(index) {
                let taken = std::mem::replace(&mut index, item.link().next);
                due(taken, generation, item);
            }
        }
        self.len = 0;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    impl Linked for Link {
        fn link(&mut self) -> &mut Link {
            self
        }
        fn link_ref(&self) -> &Link {
            self
        }
    }

    #[test]
    fn a_value_sits_where_the_shard_wheel_puts_it_and_above_its_top_level() {
        let elapsed = 1000;
        let mut wheel = DelayWheel::new(elapsed);
        let mut values = Values::with_capacity(0);
        let ticks = [elapsed + 1, elapsed + 64, 1 << 20, crate::wheel::SPAN - 1];
        for (at, tick) in ticks.into_iter().chain([1 << 40]).enumerate() {
            let index = values.insert(at as u64, Link::LOOSE);
            assert!(wheel.insert(&mut values, index, tick));
            let level = level_for(elapsed, tick);
            let expected = InList::Wheel {
                level: level as u8,
                slot: slot_of(tick, level) as u8,
            };
            assert_eq!(values.get_at(index).unwrap().1.list, expected);
        }
        // Beyond the shard wheel's six levels, the queue's wheel grows a seventh.
        assert_eq!(wheel.levels.len(), 7);
    }
}
