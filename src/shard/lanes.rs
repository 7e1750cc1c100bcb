//! A shard's lanes: one per thread scheduling into it, made by its first schedule there.
//!
//! A thread's lane is at its lane index (`sync::lane_index`, modulo the capacity); indices are
//! small and reused, so up to `CAPACITY` concurrent threads each own a lane.
//!
//! Making a lane: the first schedule through an empty row takes `made`'s lock, makes the lane,
//! appends it to `made`, publishes the length in `count`, writes the row and only then sets
//! the row's `ready` (Release), which later schedules read (Acquire) without a lock. Rows are
//! written once and lanes never removed, so a ready row's reference lives as long as the table.
//!
//! Finding new lanes: the shard adds those made since ([`Lanes::refresh`]) each turn and after
//! announcing a sleep. A producer stores `count` before its push, and pushes before the fence
//! in `Signal::notify`; the shard reads `count` after its announcement's fence: the Dekker pair
//! of `signal`. Shutdown takes every lane once the thread is gone ([`Lanes::all`]).

use super::lane::Lane;
use super::shared::ShardShared;
use std::cell::UnsafeCell;

use crate::sync::{Arc, AtomicBool, AtomicUsize, Mutex, Ordering};

/// The most threads that each get a lane of their own in a shard; more share lanes.
const CAPACITY: usize = 1024;

/// A shard's lanes, made as threads first schedule into it.
pub(crate) struct Lanes {
    shard: Arc<ShardShared>,
    /// The lane at each index, once made. A power of two long.
    rows: Box<[Row]>,
    /// Every lane, in the order they were made.
    made: Mutex<Vec<Arc<Lane>>>,
    /// `made.len()`, read without the lock.
    count: AtomicUsize,
}

/// Where one lane index's lane is kept.
struct Row {
    /// Set once `lane` holds the lane; never cleared.
    ready: AtomicBool,
    /// Written once under `made`'s lock before `ready` is set; read only after.
    lane: UnsafeCell<Option<Arc<Lane>>>,
}

// SAFETY: `lane` is written once under the lock before `ready`'s Release store; readers see
// `ready` with Acquire (or hold the lock), and nothing writes it after. `Arc<Lane>` is
// `Send + Sync`.
unsafe impl Sync for Row {}
// SAFETY: as above.
unsafe impl Send for Row {}

impl Lanes {
    /// An empty table for `shard`, with room for `capacity` lanes (the default if `None`).
    pub(crate) fn new(shard: Arc<ShardShared>, capacity: Option<usize>) -> Self {
        let capacity = capacity.unwrap_or(CAPACITY).max(1).next_power_of_two();
        Lanes {
            shard,
            rows: (0..capacity)
                .map(|_| Row {
                    ready: AtomicBool::new(false),
                    lane: UnsafeCell::new(None),
                })
                .collect(),
            made: Mutex::new(Vec::new()),
            count: AtomicUsize::new(0),
        }
    }

    /// The shard the lanes lead into.
    pub(crate) fn shard(&self) -> &Arc<ShardShared> {
        &self.shard
    }

    /// The lane of the thread with lane index `index`, made now if it does not exist yet.
    #[inline]
    pub(crate) fn lane(&self, index: usize) -> &Arc<Lane> {
        let row = &self.rows[index & (self.rows.len() - 1)];
        // Acquire: pairs with the Release in `make`, so the lane is seen whole.
        if !row.ready.load(Ordering::Acquire) {
            return self.make(row);
        }
        row.get()
    }

    #[cold]
    fn make<'a>(&'a self, row: &'a Row) -> &'a Arc<Lane> {
        let mut made = self.made.lock();
        // Relaxed: the lock orders this load after the store made under it, if any.
        if !row.ready.load(Ordering::Relaxed) {
            let new = Arc::new(Lane::new(self.shard.clone()));
            made.push(new.clone());
            // Release: with the lock, orders the list before a reader that acquires `count`.
            self.count.store(made.len(), Ordering::Release);
            // SAFETY: `ready` is unset and this thread holds the lock: no one else touches
            // the cell (see `Row`).
            unsafe { *row.lane.get() = Some(new) };
            // Release: publishes the lane to the schedules that acquire `ready`.
            row.ready.store(true, Ordering::Release);
        }
        drop(made);
        row.get()
    }

    /// Appends to `known` (in order made) the lanes made since; whether there were any.
    pub(crate) fn refresh(&self, known: &mut Vec<Arc<Lane>>) -> bool {
        // Acquire: pairs with `make`'s Release; after the shard's sleep fence, its half of
        // the Dekker pair.
        if self.count.load(Ordering::Acquire) == known.len() {
            return false;
        }
        let made = self.made.lock();
        known.extend(made[known.len()..].iter().cloned());
        true
    }

    /// Every lane made so far, in the order they were made.
    pub(crate) fn all(&self) -> Vec<Arc<Lane>> {
        self.made.lock().clone()
    }
}

impl Row {
    /// The lane, once `ready` has been seen set.
    #[inline]
    fn get(&self) -> &Arc<Lane> {
        // SAFETY: `ready` was seen set (Acquire): the cell is written, never again.
        match unsafe { &*self.lane.get() } {
            Some(lane) => lane,
            None => unreachable!("a ready row holds its lane"),
        }
    }
}
