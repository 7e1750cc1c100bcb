//! Where a delay queue keeps its values: a vector of cells, each holding a value with its
//! generation (the id in its key) or a link in the free list of vacant cells.
//!
//! It shrinks as told in `DelayQueue`'s Storage docs (a quarter-full compaction, a fill
//! hysteresis when emptied). After a compaction the next waits until the length halves again;
//! one that drops a vacant end rebuilds the free list lowest index first, so the front fills.

use std::mem;

/// The end of the free list.
const NONE: usize = usize::MAX;

enum Stored<V> {
    Occupied { generation: u64, value: V },
    Vacant { next: usize },
}

/// Values by index, each with a generation that a lookup must match.
pub(super) struct Values<V> {
    cells: Vec<Stored<V>>,
    /// The first vacant cell, or `NONE`.
    free: usize,
    len: usize,
    /// The capacity the store keeps when it shrinks by itself.
    floor: usize,
    /// The length at or below which a remove compacts next.
    compact_at: usize,
    /// The highest length since the store was last empty.
    peak: usize,
}

impl<V> Values<V> {
    /// An empty values with room for `floor` values, which it keeps when it shrinks.
    pub(super) fn with_capacity(floor: usize) -> Self {
        let cells = Vec::with_capacity(floor);
        let compact_at = cells.capacity() / 4;
        Values {
            cells,
            free: NONE,
            len: 0,
            floor,
            compact_at,
            peak: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn capacity(&self) -> usize {
        self.cells.capacity()
    }

    /// The index the next `insert` will use.
    #[cfg(all(test, not(loom)))]
    pub(super) fn next_index(&self) -> usize {
        if self.free == NONE {
            self.cells.len()
        } else {
            self.free
        }
    }

    /// Stores `value` in the first vacant cell (or a new one) and returns its index.
    pub(super) fn insert(&mut self, generation: u64, value: V) -> usize {
        let occupied = Stored::Occupied { generation, value };
        if let Some(cell) = self.cells.get_mut(self.free) {
            if let Stored::Vacant { next } = *cell {
                *cell = occupied;
                let index = mem::replace(&mut self.free, next);
                self.count_insert();
                return index;
            }
        }
        if self.cells.len() == self.cells.capacity() {
            self.cells.push(occupied);
            self.compact_at = self.cells.capacity() / 4;
        } else {
            self.cells.push(occupied);
        }
        self.count_insert();
        self.cells.len() - 1
    }

    /// Counts a value just stored.
    fn count_insert(&mut self) {
        self.len += 1;
        self.peak = self.peak.max(self.len);
    }

    /// The value at `index`, if its generation is `generation`.
    pub(super) fn get(&self, index: usize, generation: u64) -> Option<&V> {
        match self.cells.get(index) {
            Some(Stored::Occupied {
                generation: held,
                value,
            }) if *held == generation => Some(value),
            _ => None,
        }
    }

    /// As [`get`](Self::get), to change.
    pub(super) fn get_mut(&mut self, index: usize, generation: u64) -> Option<&mut V> {
        match self.cells.get_mut(index) {
            Some(Stored::Occupied {
                generation: held,
                value,
            }) if *held == generation => Some(value),
            _ => None,
        }
    }

    /// The value at `index` and its generation, whatever that is.
    pub(super) fn get_at(&self, index: usize) -> Option<(u64, &V)> {
        match self.cells.get(index) {
            Some(Stored::Occupied { generation, value }) => Some((*generation, value)),
            _ => None,
        }
    }

    /// The value at `index` and its generation, whatever that is, to change.
    pub(super) fn get_at_mut(&mut self, index: usize) -> Option<(u64, &mut V)> {
        match self.cells.get_mut(index) {
            Some(Stored::Occupied { generation, value }) => Some((*generation, value)),
            _ => None,
        }
    }

    /// Takes out the value at `index` if its generation matches; shrinks as the module says.
    pub(super) fn remove(&mut self, index: usize, generation: u64) -> Option<V> {
        self.get(index, generation)?;
        let cell = self.cells.get_mut(index)?;
        let Stored::Occupied { value, .. } = mem::replace(cell, Stored::Vacant { next: self.free })
        else {
            return None;
        };
        self.free = index;
        self.len -= 1;
        if self.len == 0 {
            self.keep_or_shrink();
        } else if self.len <= self.compact_at && self.cells.capacity() > self.floor {
            self.compact();
            let keep = self.floor.max(self.cells.len());
            if self.cells.capacity() / 2 >= keep {
                self.cells.shrink_to(keep);
            }
        }
        Some(value)
    }

    /// Makes room for `additional` more values; the room counts as a fill.
    pub(super) fn reserve(&mut self, additional: usize) {
        let vacant = self.cells.len() - self.len;
        self.cells.reserve(additional.saturating_sub(vacant));
        self.peak = self.peak.max(self.len.saturating_add(additional));
    }

    /// Drops every value and shrinks the storage to the floor.
    pub(super) fn clear(&mut self) {
        // Emptied before any value is dropped, so a panicking `Drop` leaves it consistent.
        let mut cells = mem::take(&mut self.cells);
        self.len = 0;
        self.free = NONE;
        self.compact_at = 0;
        self.peak = 0;
        cells.clear();
        cells.shrink_to(self.floor);
        self.compact_at = cells.capacity() / 4;
        self.cells = cells;
    }

    /// Shrinks the storage as far as it goes: to nothing if empty, else to the last value.
    pub(super) fn shrink_to_fit(&mut self) {
        if self.len == 0 {
            self.shrink_to(0);
        } else {
            self.compact();
            self.cells.shrink_to_fit();
        }
    }

    /// The last value was removed: keeps the storage if a quarter was filled, else frees it
    /// down to the floor.
    fn keep_or_shrink(&mut self) {
        let capacity = self.cells.capacity();
        let keep = if self.peak.saturating_mul(4) >= capacity {
            capacity
        } else {
            self.floor
        };
        self.shrink_to(keep);
    }

    /// Frees the storage of an empty values down to `keep` cells.
    fn shrink_to(&mut self, keep: usize) {
        self.cells.clear();
        self.cells.shrink_to(keep);
        self.free = NONE;
        self.compact_at = self.cells.capacity() / 4;
        self.peak = 0;
    }

    /// Drops the vacant end and rebuilds the free list lowest index first.
    fn compact(&mut self) {
        if matches!(self.cells.last(), Some(Stored::Occupied { .. })) {
            // No vacant end to drop: spare the walk.
            self.compact_at = self.len / 2;
            return;
        }
        while matches!(self.cells.last(), Some(Stored::Vacant { .. })) {
            self.cells.pop();
        }
        self.free = NONE;
        for (index, cell) in self.cells.iter_mut().enumerate().rev() {
            if let Stored::Vacant { next } = cell {
                *next = self.free;
                self.free = index;
            }
        }
        self.compact_at = self.len / 2;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Values;

    #[test]
    fn lookups_match_the_generation() {
        let mut values = Values::with_capacity(0);
        let a = values.insert(1, "a");
        assert_eq!(values.get(a, 1), Some(&"a"));
        assert_eq!(values.get(a, 2), None);
        assert_eq!(values.remove(a, 2), None);
        assert_eq!(values.remove(a, 1), Some("a"));
        assert_eq!(values.remove(a, 1), None);
        let b = values.insert(3, "b");
        assert_eq!(values.get(b, 1), None);
        assert_eq!(values.get_at_mut(b), Some((3, &mut "b")));
        assert_eq!(values.get(usize::MAX, 3), None);
        assert_eq!(values.len(), 1);
    }

    #[test]
    fn vacant_cells_are_reused() {
        let mut values = Values::with_capacity(0);
        let indices: Vec<usize> = (0..8).map(|g| values.insert(g, g)).collect();
        assert_eq!(values.remove(indices[2], 2), Some(2));
        assert_eq!(values.remove(indices[5], 5), Some(5));
        assert_eq!(values.next_index(), indices[5]);
        assert_eq!(values.insert(10, 10), indices[5]);
        assert_eq!(values.insert(11, 11), indices[2]);
        assert_eq!(values.insert(12, 12), 8);
        assert_eq!(values.len(), 9);
    }

    /// Inserts `count` values (generations from `first`) and removes them in order.
    fn fill_and_drain(values: &mut Values<u64>, first: u64, count: u64) {
        let indices: Vec<usize> = (first..first + count)
            .map(|g| values.insert(g, g))
            .collect();
        for (g, index) in (first..).zip(indices) {
            assert_eq!(values.remove(index, g), Some(g));
        }
    }

    #[test]
    fn emptying_keeps_what_the_fill_used_and_gives_back_a_spike() {
        let mut values = Values::with_capacity(0);
        fill_and_drain(&mut values, 0, 1000);
        let kept = values.capacity();
        assert!(kept >= 1000, "the fill used it: kept {kept}");
        fill_and_drain(&mut values, 1000, 1000);
        assert_eq!(values.capacity(), kept, "an equal fill grows nothing");
        // The first remove compacts (10 values left, a quarter or less of the storage) and
        // frees all but the 10 cells they span.
        fill_and_drain(&mut values, 2000, 10);
        assert_eq!(values.capacity(), 10, "the spike went back");
        fill_and_drain(&mut values, 3000, 1);
        assert_eq!(
            values.capacity(),
            0,
            "a fill under a quarter gives all back"
        );
        fill_and_drain(&mut values, 4000, 1);
        assert_eq!(
            values.capacity(),
            4,
            "one value fills a quarter of the first four cells"
        );

        let mut floored = Values::with_capacity(100);
        fill_and_drain(&mut floored, 0, 1000);
        assert!(floored.capacity() >= 1000);
        fill_and_drain(&mut floored, 1000, 10);
        assert!((100..1000).contains(&floored.capacity()));
    }

    #[test]
    fn a_drain_keeps_storage_it_would_free_less_than_half_of() {
        let mut values = Values::with_capacity(0);
        let indices: Vec<usize> = (0..1000).map(|g| values.insert(g, g)).collect();
        let grown = values.capacity();
        // The last 400 out, then the first 344: the compaction at a quarter (256 left) drops
        // the vacant end, leaving 600 cells, more than half the storage.
        for g in (600..1000).rev().chain(0..344) {
            values.remove(indices[g as usize], g);
        }
        assert_eq!(values.len(), 256);
        assert_eq!(
            values.next_index(),
            0,
            "the compaction rebuilt the free list"
        );
        assert_eq!(values.capacity(), grown);
    }

    #[test]
    fn a_mostly_empty_store_drops_its_vacant_end() {
        let mut values = Values::with_capacity(0);
        for g in 0..1000 {
            values.insert(g, g);
        }
        // Remove from the end, keeping the first 100.
        for g in (100..1000).rev() {
            values.remove(g as usize, g);
        }
        assert!(values.capacity() <= 256, "capacity {}", values.capacity());
        assert_eq!(values.len(), 100);
        for g in 0..100 {
            assert_eq!(values.get(g as usize, g), Some(&g));
        }
        // A compaction that drops a vacant end rebuilds the free list lowest index first.
        values.remove(10, 10);
        values.remove(50, 50);
        values.remove(99, 99);
        values.shrink_to_fit();
        assert_eq!(values.next_index(), 10);
        assert_eq!(values.capacity(), 99);
    }

    #[test]
    fn compaction_waits_for_the_length_to_halve() {
        let mut values = Values::with_capacity(0);
        for g in 0..1024 {
            values.insert(g, g);
        }
        // Keep the last cell, so no compaction can drop the end.
        for g in 0..1000 {
            values.remove(g as usize, g);
        }
        assert_eq!(values.capacity(), 1024);
        assert!(values.compact_at < 24, "compact_at {}", values.compact_at);
    }

    #[test]
    fn clearing_drops_every_value() {
        let value = std::rc::Rc::new(());
        let mut values = Values::with_capacity(4);
        for g in 0..10 {
            values.insert(g, value.clone());
        }
        values.clear();
        assert_eq!(std::rc::Rc::strong_count(&value), 1);
        assert_eq!(values.len(), 0);
        assert!(values.capacity() >= 4 && values.capacity() < 10);
        assert_eq!(values.insert(20, value.clone()), 0);
    }
}
