//! Batches shared out among workers in ranges: each worker takes items from the front of its
//! claim's range, and an idle one steals the back half of another's (the callback pool's
//! runners share fired batches so, see `shard::relay`).
//!
//! Range-splitting work stealing over a batch that never grows: holder and thieves agree
//! through one word, `range` (both ends), changed only by `compare_exchange`. The holder moves
//! the front up by one; a thief moves the back down by half (rounded up). The first exchange
//! wins, so each index is handed out once.
//!
//! The batch a range indexes changes only when its holder, range empty, puts a new one in
//! under the claim's lock, under which thieves read and exchange the range. So no thief takes
//! from a changed batch, and the ends only move together while the batch stays (no ABA). Items
//! never taken stay in some range, and a claim dropped with items drops them.

use std::mem::{ManuallyDrop, MaybeUninit};

use crate::sync::{Arc, AtomicU64, Mutex, Ordering};

/// The most items in one batch: a range's ends are 32-bit.
const MAX_BATCH: usize = u32::MAX as usize;

/// `items` cut into batches a range can index, in order (`items` itself if small enough).
pub(crate) fn in_batches<T>(items: Vec<T>) -> impl Iterator<Item = Vec<T>> {
    split(items, MAX_BATCH)
}

/// `items` cut into pieces of at most `max`, in order.
fn split<T>(items: Vec<T>, max: usize) -> impl Iterator<Item = Vec<T>> {
    let mut rest = Some(items);
    std::iter::from_fn(move || {
        let mut items = rest.take()?;
        if items.len() > max {
            rest = Some(items.split_off(max));
        }
        Some(items)
    })
}

/// A batch of items, each read out once by whoever was handed its index, never dropped in
/// place: the claims' ranges own the items not yet taken.
struct Batch<T> {
    items: Vec<MaybeUninit<T>>,
    /// Where the batch came from (a tag for the taker: the callback pool's is the shard).
    from: usize,
}

// SAFETY: sharing a batch moves items between threads (each read by the one thread handed its
// index): sound if `T` is `Send`.
unsafe impl<T: Send> Sync for Batch<T> {}

impl<T> Batch<T> {
    fn new(items: Vec<T>, from: usize) -> Self {
        assert!(items.len() <= MAX_BATCH, "a batch of more than MAX_BATCH");
        let mut items = ManuallyDrop::new(items);
        // SAFETY: `MaybeUninit<T>` has the size and alignment of `T`, so the allocation is one
        // of `capacity` of them; `ManuallyDrop` keeps the old vector from freeing it.
        let items = unsafe {
            Vec::from_raw_parts(
                items.as_mut_ptr().cast::<MaybeUninit<T>>(),
                items.len(),
                items.capacity(),
            )
        };
        Batch { items, from }
    }

    /// Reads item `index` out of the batch.
    ///
    /// # Safety
    /// `index` was handed to the caller by an exchange of a range of this batch (or the caller
    /// has the only reference), so no one else reads it.
    unsafe fn read(&self, index: u32) -> T {
        // SAFETY: every item was written by `new`, and by the contract this is its only read.
        unsafe { self.items[index as usize].assume_init_read() }
    }
}

/// A range of a batch's indexes, `lo..hi`, packed in a word: `lo` low, `hi` high.
#[derive(Clone, Copy)]
struct Range {
    lo: u32,
    hi: u32,
}

impl Range {
    const EMPTY: Range = Range { lo: 0, hi: 0 };

    fn unpack(word: u64) -> Self {
        Range {
            lo: word as u32,
            hi: (word >> 32) as u32,
        }
    }

    fn pack(self) -> u64 {
        u64::from(self.lo) | u64::from(self.hi) << 32
    }

    fn len(self) -> u32 {
        self.hi - self.lo
    }
}

/// A runner's holding: the batch it holds a range of, and the range.
pub(crate) struct Claim<T> {
    /// The batch `range` indexes; replaced only by its holder (range empty) under the lock.
    batch: Mutex<Option<Arc<Batch<T>>>>,
    /// The range of `batch` left to take (see `Range`).
    range: AtomicU64,
}

impl<T> Claim<T> {
    pub(crate) fn new() -> Self {
        Claim {
            batch: Mutex::new(None),
            range: AtomicU64::new(Range::EMPTY.pack()),
        }
    }

    /// How many items are left in the range: a glance. Relaxed: taking acts through the
    /// exchanges; a runner deciding to park looks under the relay's lock (see `shard::relay`).
    pub(crate) fn left(&self) -> u32 {
        Range::unpack(self.range.load(Ordering::Relaxed)).len()
    }
}

impl<T> Drop for Claim<T> {
    fn drop(&mut self) {
        // Relaxed: `&mut self` orders every exchange before this (loom has no `get_mut`).
        let range = Range::unpack(self.range.load(Ordering::Relaxed));
        if let Some(batch) = self.batch.lock().take() {
            for index in range.lo..range.hi {
                // SAFETY: the claim owns the items of its range, and with `&mut self` no one
                // can take them any more.
                drop(unsafe { batch.read(index) });
            }
        }
    }
}

/// The runner that holds a claim: the only one that takes from its range's front and puts new
/// batches in.
pub(crate) struct Holder<'a, T> {
    claim: &'a Claim<T>,
    /// The claim's batch, for taking items without the lock.
    batch: Option<Arc<Batch<T>>>,
}

impl<'a, T> Holder<'a, T> {
    /// The holder of `claim`, taking over what an earlier holder left; one per claim at a time.
    pub(crate) fn new(claim: &'a Claim<T>) -> Self {
        let batch = claim.batch.lock().clone();
        Holder { claim, batch }
    }

    /// Takes the next item of the range, with its batch's origin; `None` once empty, which
    /// also drops the batch.
    pub(crate) fn take(&mut self) -> Option<(T, usize)> {
        let batch = self.batch.as_ref()?;
        // Relaxed, here and in the exchange: the items were written before the batch reached
        // this claim (relay queue or thief's lock); the exchange alone decides who gets an
        // index.
        let mut word = self.claim.range.load(Ordering::Relaxed);
        loop {
            let range = Range::unpack(word);
            if range.len() == 0 {
                self.drop_batch();
                return None;
            }
            let taken = Range {
                lo: range.lo + 1,
                ..range
            };
            match self.claim.range.compare_exchange_weak(
                word,
                taken.pack(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                // SAFETY: the exchange handed index `range.lo` to this holder alone.
                Ok(_) => return Some((unsafe { batch.read(range.lo) }, batch.from)),
                Err(now) => word = now,
            }
        }
    }

    /// Puts `items`, which came from `from`, in the claim, whose range must be empty.
    pub(crate) fn hold(&mut self, items: Vec<T>, from: usize) {
        let len = items.len() as u32;
        self.put(Arc::new(Batch::new(items, from)), Range { lo: 0, hi: len });
    }

    /// Steals the back half of `victim`'s range into this (empty) claim; false if it was empty.
    pub(crate) fn steal(&mut self, victim: &Claim<T>) -> bool {
        let loot = {
            let batch = victim.batch.lock();
            // Relaxed, here and in the exchange: the lock orders this after the batch was put
            // in; the exchange alone decides (see `take`).
            let mut word = victim.range.load(Ordering::Relaxed);
            loop {
                let range = Range::unpack(word);
                if range.len() == 0 {
                    return false;
                }
                let half = range.len().div_ceil(2);
                let kept = Range {
                    hi: range.hi - half,
                    ..range
                };
                match victim.range.compare_exchange_weak(
                    word,
                    kept.pack(),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        let batch = batch.clone().expect("a range has a batch");
                        break (
                            batch,
                            Range {
                                lo: kept.hi,
                                ..range
                            },
                        );
                    }
                    Err(now) => word = now,
                }
            }
        };
        self.put(loot.0, loot.1);
        true
    }

    /// Puts `range` of `batch` in the claim, whose range must be empty.
    fn put(&mut self, batch: Arc<Batch<T>>, range: Range) {
        debug_assert_eq!(self.claim.left(), 0, "a claim's range is empty when filled");
        let mut held = self.claim.batch.lock();
        // Relaxed: thieves read it under the lock; `left` is a glance.
        self.claim.range.store(range.pack(), Ordering::Relaxed);
        *held = Some(batch.clone());
        drop(held);
        self.batch = Some(batch);
    }

    /// Drops the batch once the range is empty, with the last range of it.
    fn drop_batch(&mut self) {
        if self.batch.take().is_some() {
            self.claim.batch.lock().take();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc as StdArc;

    use super::*;

    /// Takes everything left in `holder`'s range.
    fn take_all<T>(holder: &mut Holder<'_, T>) -> Vec<(T, usize)> {
        std::iter::from_fn(|| holder.take()).collect()
    }

    #[test]
    fn a_holder_takes_its_items_in_order_then_lets_go_of_the_batch() {
        let claim = Claim::new();
        let mut holder = Holder::new(&claim);
        assert!(holder.take().is_none(), "a new claim is empty");
        holder.hold(vec![10, 11, 12], 7);
        assert_eq!(claim.left(), 3);
        assert_eq!(take_all(&mut holder), [(10, 7), (11, 7), (12, 7)]);
        assert_eq!(claim.left(), 0);
        assert!(
            claim.batch.lock().is_none(),
            "the batch goes with its range"
        );
    }

    #[test]
    fn a_thief_takes_the_back_half_rounded_up() {
        let (victim, thief) = (Claim::new(), Claim::new());
        let mut holder = Holder::new(&victim);
        holder.hold((0..5).collect(), 1);
        let mut stealer = Holder::new(&thief);
        assert!(stealer.steal(&victim));
        assert_eq!((victim.left(), thief.left()), (2, 3));
        assert_eq!(take_all(&mut stealer), [(2, 1), (3, 1), (4, 1)]);
        assert_eq!(take_all(&mut holder), [(0, 1), (1, 1)]);
        assert!(!stealer.steal(&victim), "nothing left to steal");
    }

    #[test]
    fn the_last_item_goes_to_the_thief_or_the_holder_once() {
        let (victim, thief) = (Claim::new(), Claim::new());
        let mut holder = Holder::new(&victim);
        holder.hold(vec!["last"], 0);
        let mut stealer = Holder::new(&thief);
        assert!(stealer.steal(&victim));
        assert!(holder.take().is_none());
        assert_eq!(take_all(&mut stealer), [("last", 0)]);
    }

    /// Counts its drops.
    struct Counted(StdArc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_claim_dropped_with_items_left_drops_each_of_them_once() {
        let drops = StdArc::new(AtomicUsize::new(0));
        let (victim, thief) = (Claim::new(), Claim::new());
        let mut holder = Holder::new(&victim);
        holder.hold((0..6).map(|_| Counted(drops.clone())).collect(), 0);
        drop(holder.take());
        let mut stealer = Holder::new(&thief);
        assert!(stealer.steal(&victim));
        drop(stealer.take());
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        drop((holder, stealer));
        drop(victim);
        assert_eq!(drops.load(Ordering::SeqCst), 4);
        drop(thief);
        assert_eq!(drops.load(Ordering::SeqCst), 6, "each item dropped once");
    }

    #[test]
    fn a_new_holder_takes_over_what_its_claim_has_left() {
        let claim = Claim::new();
        let mut holder = Holder::new(&claim);
        holder.hold(vec![1, 2, 3], 0);
        assert_eq!(holder.take(), Some((1, 0)));
        drop(holder);
        assert_eq!(take_all(&mut Holder::new(&claim)), [(2, 0), (3, 0)]);
    }

    #[test]
    fn a_batch_too_long_for_a_range_is_cut_in_order() {
        let pieces: Vec<Vec<u32>> = split((0..7).collect(), 3).collect();
        assert_eq!(pieces, [vec![0, 1, 2], vec![3, 4, 5], vec![6]]);
        let whole: Vec<Vec<u32>> = in_batches(vec![1, 2]).collect();
        assert_eq!(whole, [vec![1, 2]]);
    }

    /// A holder and two thieves on threads of their own, stealing from each other until the
    /// batch is gone: every item is taken once.
    #[test]
    fn holders_and_thieves_on_other_threads_take_each_item_once() {
        const ITEMS: usize = 2_000;
        let taken: Vec<AtomicUsize> = (0..ITEMS).map(|_| AtomicUsize::new(0)).collect();
        let claims: Vec<Claim<usize>> = (0..3).map(|_| Claim::new()).collect();
        let total = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for me in 0..claims.len() {
                let (claims, taken, total) = (&claims, &taken, &total);
                scope.spawn(move || {
                    let mut holder = Holder::new(&claims[me]);
                    if me == 0 {
                        holder.hold((0..ITEMS).collect(), 0);
                    }
                    while total.load(Ordering::SeqCst) < ITEMS {
                        while let Some((item, _)) = holder.take() {
                            taken[item].fetch_add(1, Ordering::SeqCst);
                            total.fetch_add(1, Ordering::SeqCst);
                        }
                        for victim in claims {
                            if holder.steal(victim) {
                                break;
                            }
                        }
                    }
                });
            }
        });
        assert!(taken.iter().all(|n| n.load(Ordering::SeqCst) == 1));
    }
}
