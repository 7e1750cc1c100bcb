//! Where a delay queue keeps its values: a vector of slots, each holding a value with its
//! generation (the id in its key) or a link in the free list of vacant slots.
//!
//! The slab shrinks as the queue empties: when it empties altogether its storage goes back to
//! the floor (what the queue was made with, `with_capacity`); when its length falls to a
//! quarter of its capacity, the vacant slots at its end are dropped and the storage shrinks to
//! what is left. A compaction walks the whole vector, so after one the next waits until the
//! length has halved again (or the vector has grown): a queue that hovers at one length does
//! not compact on every remove. A compaction that drops a vacant end also rebuilds the free list
//! lowest index first, so new values fill the front and leave the end free to be dropped.

use std::mem;

/// The end of the free list.
const NONE: usize = usize::MAX;

enum Slot<V> {
    Occupied { generation: u64, value: V },
    Vacant { next: usize },
}

/// Values by index, each with a generation that a lookup must match.
pub(super) struct Slab<V> {
    slots: Vec<Slot<V>>,
    /// The first vacant slot, or `NONE`.
    free: usize,
    len: usize,
    /// The capacity the slab keeps when it shrinks by itself.
    floor: usize,
    /// The length at or below which a remove compacts next.
    compact_at: usize,
}

impl<V> Slab<V> {
    /// An empty slab with room for `floor` values, which it keeps when it shrinks.
    pub(super) fn with_capacity(floor: usize) -> Self {
        let slots = Vec::with_capacity(floor);
        let compact_at = slots.capacity() / 4;
        Slab {
            slots,
            free: NONE,
            len: 0,
            floor,
            compact_at,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    /// The index the next `insert` will use.
    #[cfg(test)]
    pub(super) fn next_index(&self) -> usize {
        if self.free == NONE {
            self.slots.len()
        } else {
            self.free
        }
    }

    /// Stores `value` in the first vacant slot (or a new one) and returns its index.
    pub(super) fn insert(&mut self, generation: u64, value: V) -> usize {
        let occupied = Slot::Occupied { generation, value };
        if let Some(slot) = self.slots.get_mut(self.free) {
            if let Slot::Vacant { next } = *slot {
                *slot = occupied;
                let index = mem::replace(&mut self.free, next);
                self.len += 1;
                return index;
            }
        }
        if self.slots.len() == self.slots.capacity() {
            self.slots.push(occupied);
            self.compact_at = self.slots.capacity() / 4;
        } else {
            self.slots.push(occupied);
        }
        self.len += 1;
        self.slots.len() - 1
    }

    /// The value at `index`, if its generation is `generation`.
    pub(super) fn get(&self, index: usize, generation: u64) -> Option<&V> {
        match self.slots.get(index) {
            Some(Slot::Occupied {
                generation: held,
                value,
            }) if *held == generation => Some(value),
            _ => None,
        }
    }

    /// As [`get`](Self::get), to change.
    pub(super) fn get_mut(&mut self, index: usize, generation: u64) -> Option<&mut V> {
        match self.slots.get_mut(index) {
            Some(Slot::Occupied {
                generation: held,
                value,
            }) if *held == generation => Some(value),
            _ => None,
        }
    }

    /// The value at `index` and its generation, whatever that is, to change.
    pub(super) fn get_at_mut(&mut self, index: usize) -> Option<(u64, &mut V)> {
        match self.slots.get_mut(index) {
            Some(Slot::Occupied { generation, value }) => Some((*generation, value)),
            _ => None,
        }
    }

    /// Takes out the value at `index`, if its generation is `generation`, and shrinks the
    /// storage if that left it mostly empty (see the module docs).
    pub(super) fn remove(&mut self, index: usize, generation: u64) -> Option<V> {
        self.get(index, generation)?;
        let slot = self.slots.get_mut(index)?;
        let Slot::Occupied { value, .. } = mem::replace(slot, Slot::Vacant { next: self.free })
        else {
            return None;
        };
        self.free = index;
        self.len -= 1;
        if self.len == 0 {
            self.release(self.floor);
        } else if self.len <= self.compact_at && self.slots.capacity() > self.floor {
            self.compact(self.floor);
        }
        Some(value)
    }

    /// Drops every value and shrinks the storage to the floor.
    pub(super) fn clear(&mut self) {
        // The slab is empty before any value is dropped, so that it stays consistent even if
        // a value's `Drop` panics.
        let mut slots = mem::take(&mut self.slots);
        self.len = 0;
        self.free = NONE;
        self.compact_at = 0;
        slots.clear();
        slots.shrink_to(self.floor);
        self.compact_at = slots.capacity() / 4;
        self.slots = slots;
    }

    /// Shrinks the storage as far as it goes: to nothing if the slab is empty, else to its
    /// last occupied slot.
    pub(super) fn shrink_to_fit(&mut self) {
        if self.len == 0 {
            self.release(0);
        } else {
            self.compact(0);
        }
    }

    /// Frees the storage of an empty slab down to `keep` slots.
    fn release(&mut self, keep: usize) {
        self.slots.clear();
        self.slots.shrink_to(keep);
        self.free = NONE;
        self.compact_at = self.slots.capacity() / 4;
    }

    /// Drops the vacant slots at the end, rebuilds the free list lowest index first, and
    /// shrinks the storage to what is left (but not below `keep`).
    fn compact(&mut self, keep: usize) {
        if matches!(self.slots.last(), Some(Slot::Occupied { .. })) {
            // No vacant end to drop: spare the walk.
            self.slots.shrink_to(keep);
            self.compact_at = self.len / 2;
            return;
        }
        while matches!(self.slots.last(), Some(Slot::Vacant { .. })) {
            self.slots.pop();
        }
        self.free = NONE;
        for (index, slot) in self.slots.iter_mut().enumerate().rev() {
            if let Slot::Vacant { next } = slot {
                *next = self.free;
                self.free = index;
            }
        }
        self.slots.shrink_to(keep);
        self.compact_at = self.len / 2;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Slab;

    #[test]
    fn lookups_match_the_generation() {
        let mut slab = Slab::with_capacity(0);
        let a = slab.insert(1, "a");
        assert_eq!(slab.get(a, 1), Some(&"a"));
        assert_eq!(slab.get(a, 2), None);
        assert_eq!(slab.remove(a, 2), None);
        assert_eq!(slab.remove(a, 1), Some("a"));
        assert_eq!(slab.remove(a, 1), None);
        let b = slab.insert(3, "b");
        assert_eq!(slab.get(b, 1), None);
        assert_eq!(slab.get_at_mut(b), Some((3, &mut "b")));
        assert_eq!(slab.get(usize::MAX, 3), None);
        assert_eq!(slab.len(), 1);
    }

    #[test]
    fn vacant_slots_are_reused() {
        let mut slab = Slab::with_capacity(0);
        let indices: Vec<usize> = (0..8).map(|g| slab.insert(g, g)).collect();
        assert_eq!(slab.remove(indices[2], 2), Some(2));
        assert_eq!(slab.remove(indices[5], 5), Some(5));
        assert_eq!(slab.next_index(), indices[5]);
        assert_eq!(slab.insert(10, 10), indices[5]);
        assert_eq!(slab.insert(11, 11), indices[2]);
        assert_eq!(slab.insert(12, 12), 8);
        assert_eq!(slab.len(), 9);
    }

    #[test]
    fn emptying_releases_the_storage_down_to_the_floor() {
        let mut slab = Slab::with_capacity(0);
        for g in 0..1000 {
            slab.insert(g, g);
        }
        assert!(slab.capacity() >= 1000);
        for g in 0..1000 {
            assert_eq!(slab.remove(g as usize, g), Some(g));
        }
        assert_eq!(slab.capacity(), 0);

        let mut floored = Slab::with_capacity(100);
        for g in 0..1000 {
            floored.insert(g, g);
        }
        for g in 0..1000 {
            floored.remove(g as usize, g);
        }
        assert!((100..1000).contains(&floored.capacity()));
    }

    #[test]
    fn a_mostly_empty_slab_drops_its_vacant_end() {
        let mut slab = Slab::with_capacity(0);
        for g in 0..1000 {
            slab.insert(g, g);
        }
        // Remove from the end, keeping the first 100.
        for g in (100..1000).rev() {
            slab.remove(g as usize, g);
        }
        assert!(slab.capacity() <= 256, "capacity {}", slab.capacity());
        assert_eq!(slab.len(), 100);
        for g in 0..100 {
            assert_eq!(slab.get(g as usize, g), Some(&g));
        }
        // After a compaction the free list hands out the lowest index first.
        slab.remove(50, 50);
        slab.remove(10, 10);
        slab.shrink_to_fit();
        assert_eq!(slab.next_index(), 10);
        assert_eq!(slab.capacity(), 100);
    }

    #[test]
    fn compaction_waits_for_the_length_to_halve() {
        let mut slab = Slab::with_capacity(0);
        for g in 0..1024 {
            slab.insert(g, g);
        }
        // Keep the last slot, so no compaction can drop the end.
        for g in 0..1000 {
            slab.remove(g as usize, g);
        }
        assert_eq!(slab.capacity(), 1024);
        assert!(slab.compact_at < 24, "compact_at {}", slab.compact_at);
    }

    #[test]
    fn clearing_drops_every_value() {
        let value = std::rc::Rc::new(());
        let mut slab = Slab::with_capacity(4);
        for g in 0..10 {
            slab.insert(g, value.clone());
        }
        slab.clear();
        assert_eq!(std::rc::Rc::strong_count(&value), 1);
        assert_eq!(slab.len(), 0);
        assert!(slab.capacity() >= 4 && slab.capacity() < 10);
        assert_eq!(slab.insert(20, value.clone()), 0);
    }
}
