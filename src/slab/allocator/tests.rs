use super::*;
use crate::slab::chunk::Frees;
use std::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::sync::Arc;

/// Counts its drops.
struct Tracked(Arc<StdAtomicUsize>, [u64; 4]);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_64_kib_chunk_holds_1637_entry_sized_blocks() {
    let slab = Allocator::<[u64; 4]>::new();
    // SAFETY: the test thread is the only one using the allocator.
    let blocks = slab.carver.with_mut(|carver| unsafe { (*carver).blocks });
    assert_eq!((blocks, layout::<[u64; 4]>(0).1), (1637, 32));
    assert!(layout::<[u64; 4]>(blocks).0.size() <= CHUNK_BYTES);
}

#[test]
fn bytes_count_the_chunks_held_until_the_give_up() {
    let slab = Allocator::with_blocks(2);
    let chunk = layout::<u64>(2).0.size();
    assert_eq!(slab.bytes(), 0);
    // SAFETY (every `alloc` and `give_up` here): the test thread is the allocator's only
    // user.
    let three: Vec<_> = (0..3u64).map(|i| unsafe { slab.alloc(i) }).collect();
    assert_eq!(slab.bytes(), 2 * chunk);
    drop(three);
    assert_eq!(slab.bytes(), 2 * chunk, "kept for reuse");
    unsafe { slab.give_up() };
    assert_eq!(slab.bytes(), 0);
    let again = unsafe { slab.alloc(9) };
    assert_eq!(slab.bytes(), chunk, "a new start");
    drop(again);
}

/// The chunks an allocator holds (not given up), which its statistic counts.
fn chunks_held<T>(slab: &Allocator<T>) -> usize {
    // SAFETY: the test thread is the allocator's only user, and not inside a call on it.
    let held = slab
        .carver
        .with_mut(|carver| unsafe { (*carver).chunks.len() + (*carver).left_behind.len() });
    assert_eq!(slab.bytes(), held * slab.chunk_bytes);
    held
}

#[test]
fn after_a_spike_a_mostly_free_allocator_lets_its_chunks_go() {
    let drops = Arc::new(StdAtomicUsize::new(0));
    let tracked = || Tracked(drops.clone(), [7; 4]);
    // Four blocks a chunk, trimming from eight chunks on, a step every 64 allocations.
    let slab = Allocator::with_settings(
        4,
        Trim {
            above: 8,
            every: 64,
        },
    );
    // SAFETY (every `alloc` here): the test thread is the allocator's only user.
    let mut spike: Vec<_> = (0..80).map(|_| unsafe { slab.alloc(tracked()) }).collect();
    assert_eq!(chunks_held(&slab), 20);
    // Three stay live, in three chunks; the rest go.
    let kept = [
        spike.swap_remove(79),
        spike.swap_remove(41),
        spike.swap_remove(0),
    ];
    drop(spike);
    // One value live at a time: the pass under way (begun during the spike) ends after 19
    // more steps and finds the chunks nearly free, but one such pass is not enough.
    let mut churn = 0;
    while churn < 64 * 22 {
        drop(unsafe { slab.alloc(tracked()) });
        churn += 1;
    }
    assert_eq!(chunks_held(&slab), 20, "trimmed after one pass");
    // The next pass finds them nearly free again: a trim, and the old chunks given up at
    // the step after it.
    while chunks_held(&slab) > 1 {
        drop(unsafe { slab.alloc(tracked()) });
        churn += 1;
        assert!(churn <= 3 * 64 * 20, "no trim after {churn} allocations");
    }
    // The live ones outlast the trim, each dropped once, with their chunks.
    assert!(kept.iter().all(|value| value.1 == [7; 4]));
    let before = drops.load(Ordering::SeqCst);
    drop(kept);
    assert_eq!(drops.load(Ordering::SeqCst), before + 3);
    assert_eq!(before, 77 + churn);
}

#[test]
fn a_trim_gives_the_old_chunks_up_a_few_at_a_time() {
    let slab = Allocator::with_settings(4, Trim { above: 8, every: 1 });
    // SAFETY (every `alloc` here, and the reads of the state): the test thread is the
    // allocator's only user.
    drop(
        (0..400u64)
            .map(|i| unsafe { slab.alloc(i) })
            .collect::<Vec<_>>(),
    );
    let left_behind = || {
        slab.carver
            .with_mut(|carver| unsafe { (*carver).left_behind.len() })
    };
    let mut churn = 0;
    while left_behind() == 0 {
        drop(unsafe { slab.alloc(0) });
        churn += 1;
        assert!(churn <= 300, "no trim after {churn} allocations");
    }
    assert_eq!(left_behind(), 100, "every old chunk left behind at once");
    for left in [68, 36, 4, 0] {
        drop(unsafe { slab.alloc(0) });
        assert_eq!(left_behind(), left, "{GIVE_UP_PER_STEP} given up a step");
    }
    assert_eq!(chunks_held(&slab), 1, "the new start's chunk");
}

#[test]
fn after_a_trim_no_block_of_the_old_chunks_is_handed_out() {
    let slab = Allocator::with_settings(4, Trim { above: 2, every: 1 });
    // SAFETY (every `alloc` here, and the reads of the state): the test thread is the
    // allocator's only user.
    let old: Vec<_> = (0..12u64).map(|i| unsafe { slab.alloc(i) }).collect();
    let addresses: Vec<_> = old.iter().map(SlabArc::as_ptr).collect();
    // All twelve freed: the next allocation takes them off the stack together, and the
    // trim comes while most of them wait in that chain.
    drop(old);
    let left_behind = || {
        slab.carver
            .with_mut(|carver| unsafe { (*carver).left_behind.len() })
    };
    for round in 0.. {
        assert!(round < 20, "no trim");
        let value = unsafe { slab.alloc(round) };
        if left_behind() > 0 {
            assert!(
                !addresses.contains(&SlabArc::as_ptr(&value)),
                "a block of a chunk left behind, handed out after the trim"
            );
            break;
        }
        assert!(
            addresses.contains(&SlabArc::as_ptr(&value)),
            "reused before"
        );
    }
}

#[test]
fn a_burst_refilling_its_chunks_keeps_them() {
    let slab = Allocator::with_settings(
        408,
        Trim {
            above: 4,
            every: 64,
        },
    );
    // SAFETY (every `alloc` here): the test thread is the allocator's only user.
    let first: Vec<_> = (0..4 * 408u64).map(|i| unsafe { slab.alloc(i) }).collect();
    let mut addresses: Vec<_> = first.iter().map(SlabArc::as_ptr).collect();
    drop(first);
    // A pass takes 256 allocations here, a sixth of the refill: one that ends early in the
    // refill finds the chunks mostly free, and the next more than a quarter full, so the
    // refill never sees two low passes in a row.
    let again: Vec<_> = (0..4 * 408u64).map(|i| unsafe { slab.alloc(i) }).collect();
    assert_eq!(chunks_held(&slab), 4, "no chunk let go of, none added");
    let mut reused: Vec<_> = again.iter().map(SlabArc::as_ptr).collect();
    addresses.sort();
    reused.sort();
    assert_eq!(reused, addresses);
}

#[test]
fn freed_blocks_are_handed_out_again_before_a_new_chunk() {
    let slab = Allocator::with_blocks(4);
    // SAFETY (every `alloc` here): the test thread is the only one using the allocator.
    let first: Vec<_> = (0..4u64).map(|i| unsafe { slab.alloc(i) }).collect();
    let addresses: Vec<_> = first.iter().map(SlabArc::as_ptr).collect();
    drop(first);
    let again: Vec<_> = (0..4u64).map(|i| unsafe { slab.alloc(i + 10) }).collect();
    let mut reused: Vec<_> = again.iter().map(SlabArc::as_ptr).collect();
    reused.sort();
    let mut expected = addresses.clone();
    expected.sort();
    assert_eq!(reused, expected, "the same four blocks, not a new chunk");
    assert_eq!(again.iter().map(|a| **a).sum::<u64>(), 10 + 11 + 12 + 13);
    // A fifth while all four are live: a new chunk.
    let fifth = unsafe { slab.alloc(99) };
    assert!(!addresses.contains(&SlabArc::as_ptr(&fifth)));
}

#[test]
fn a_freed_block_of_an_older_chunk_is_handed_out_again() {
    let slab = Allocator::with_blocks(2);
    // SAFETY (every `alloc` here): the test thread is the only one using the allocator.
    let mut held: Vec<_> = (0..4u64).map(|i| unsafe { slab.alloc(i) }).collect();
    let older = SlabArc::as_ptr(&held[0]);
    drop(held.remove(0));
    // A long-lived value in every chunk, and churn beside it: the blocks go round.
    for round in 0..100u64 {
        let churn = unsafe { slab.alloc(round) };
        assert_eq!(SlabArc::as_ptr(&churn), older, "round {round}");
    }
}

#[test]
fn every_value_is_dropped_once_whoever_lets_go_last() {
    let drops = Arc::new(StdAtomicUsize::new(0));
    let slab = Allocator::with_blocks(3);
    let mut kept = Vec::new();
    for i in 0..10u64 {
        // SAFETY: the test thread is the only one using the allocator.
        let a = unsafe { slab.alloc(Tracked(drops.clone(), [i; 4])) };
        let b = a.clone();
        assert_eq!(SlabArc::strong_count(&a), 2);
        if i % 2 == 0 {
            kept.push(b);
        }
    }
    // The allocator goes first: its chunks live on in the values still held.
    drop(slab);
    assert_eq!(drops.load(Ordering::SeqCst), 5);
    let held = std::thread::spawn(move || {
        kept.iter().map(|t| t.1[0]).sum::<u64>() // 0 + 2 + 4 + 6 + 8
    })
    .join()
    .unwrap();
    assert_eq!(held, 20);
    assert_eq!(drops.load(Ordering::SeqCst), 10);
}

#[test]
fn raw_round_trip_and_get_mut() {
    let slab = Allocator::with_blocks(2);
    // SAFETY: the test thread is the only one using the allocator.
    let mut a = unsafe { slab.alloc(7u64) };
    *SlabArc::get_mut(&mut a).unwrap() += 1;
    let b = a.clone();
    assert!(SlabArc::get_mut(&mut a).is_none());
    let raw = SlabArc::into_raw(b);
    // SAFETY: from `into_raw`, taken back once.
    let b = unsafe { SlabArc::from_raw(raw) };
    assert_eq!(*b, 8);
    drop(b);
    assert!(SlabArc::get_mut(&mut a).is_some());
    let alone = SlabArc::new(5u64);
    let raw = SlabArc::into_raw(alone);
    // SAFETY: as above.
    assert_eq!(*unsafe { SlabArc::from_raw(raw) }, 5);
}

#[test]
fn a_value_whose_drop_panics_still_frees_its_block() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("drop panics");
        }
    }
    let slab = Allocator::with_blocks(1);
    // SAFETY: the test thread is the only one using the allocator.
    let [bomb, batched] = [(); 2].map(|()| unsafe { slab.alloc(Bomb) });
    drop(slab);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(bomb)));
    assert!(unwound.is_err());
    let mut frees = Frees::new();
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        SlabArc::drop_into(batched, &mut frees)
    }));
    assert!(unwound.is_err());
    frees.flush();
    // Under Miri, a chunk left allocated here fails the test as a leak.
    let alone = SlabArc::new(Bomb);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(alone)));
    assert!(unwound.is_err());
}

#[test]
fn blocks_freed_together_come_back_after_the_flush_and_a_shared_value_stays() {
    let drops = Arc::new(StdAtomicUsize::new(0));
    let slab = Allocator::with_blocks(4);
    // SAFETY (every `alloc` here): the test thread is the only one using the allocator.
    let four: Vec<_> = (0..4u64)
        .map(|i| unsafe { slab.alloc(Tracked(drops.clone(), [i; 4])) })
        .collect();
    let addresses: Vec<_> = four.iter().map(SlabArc::as_ptr).collect();
    let kept = four[3].clone();
    let mut frees = Frees::new();
    for held in four {
        SlabArc::drop_into(held, &mut frees);
    }
    assert_eq!(
        drops.load(Ordering::SeqCst),
        3,
        "dropped at once, but not the one kept"
    );
    assert_eq!(kept.1[0], 3);
    // Not flushed: the three blocks are not free yet, and the kept one is live.
    let before = unsafe { slab.alloc(Tracked(drops.clone(), [9; 4])) };
    assert!(
        !addresses.contains(&SlabArc::as_ptr(&before)),
        "a new chunk"
    );
    frees.flush();
    // The new chunk's three unused blocks, then the three freed together.
    let next: Vec<_> = (0..6u64)
        .map(|i| unsafe { slab.alloc(Tracked(drops.clone(), [i; 4])) })
        .collect();
    let mut reused: Vec<_> = next[3..].iter().map(SlabArc::as_ptr).collect();
    reused.sort();
    assert_eq!(reused, addresses[..3], "the three blocks freed together");
    assert_eq!(kept.1[0], 3, "the kept value is untouched");
}

#[test]
fn a_chain_across_chunks_is_handed_out_again_whole() {
    let slab = Allocator::with_blocks(2);
    // SAFETY (every `alloc` here): the test thread is the only one using the allocator.
    let six: Vec<_> = (0..6u64).map(|i| unsafe { slab.alloc(i) }).collect();
    let mut addresses: Vec<_> = six.iter().map(SlabArc::as_ptr).collect();
    // Out of order: runs of one block, in three chunks, one chain.
    let mut frees = Frees::new();
    let mut six: Vec<_> = six.into_iter().map(Some).collect();
    for i in [0, 3, 4, 1, 5, 2] {
        SlabArc::drop_into(six[i].take().unwrap(), &mut frees);
    }
    frees.flush();
    let again: Vec<_> = (0..6u64).map(|i| unsafe { slab.alloc(i + 10) }).collect();
    let mut reused: Vec<_> = again.iter().map(SlabArc::as_ptr).collect();
    reused.sort();
    addresses.sort();
    assert_eq!(reused, addresses, "all six, and no new chunk");
    assert_eq!(
        again.iter().map(|a| **a).sum::<u64>(),
        (10..16).sum::<u64>()
    );
}

#[test]
fn blocks_freed_together_after_the_give_up_free_their_chunks() {
    let drops = Arc::new(StdAtomicUsize::new(0));
    let slabs = [Allocator::with_blocks(2), Allocator::with_blocks(2)];
    // Three from each allocator, interleaved: two chunks each, two free stacks, and runs of
    // one block.
    let mut held = Vec::new();
    for i in 0..3u64 {
        for slab in &slabs {
            // SAFETY: the test thread is the only one using the allocators.
            held.push(unsafe { slab.alloc(Tracked(drops.clone(), [i; 4])) });
        }
    }
    drop(slabs);
    // The last blocks of given-up chunks, let go of together on another thread: under
    // Miri, a chunk left allocated fails the test as a leak, and one freed before the
    // pushes into it as a use after free.
    std::thread::spawn(move || {
        let mut frees = Frees::new();
        for value in held {
            SlabArc::drop_into(value, &mut frees);
        }
    })
    .join()
    .unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 6);
}

#[test]
fn blocks_freed_on_other_threads_come_back() {
    let slab = Allocator::with_blocks(8);
    for round in 0..50u64 {
        // SAFETY: only the test thread allocates.
        let batch: Vec<_> = (0..8)
            .map(|i| unsafe { slab.alloc(round * 8 + i) })
            .collect();
        let sum = std::thread::spawn(move || batch.iter().map(|v| **v).sum::<u64>())
            .join()
            .unwrap();
        assert_eq!(sum, (0..8).map(|i| round * 8 + i).sum::<u64>());
    }
}

/// Blocks of a chunk freed on two threads at once, with the allocator giving the chunk up
/// before (even rounds) or meanwhile (odd rounds): whoever brings `live` to zero frees the
/// chunk, after the other thread's frees and give-up, which wrote into it. The AcqRel updates
/// of `live` order them; loom does not see the chunk's memory, so ThreadSanitizer (CI's
/// sanitizer step) is what reports either update made Relaxed, as a free racing those writes.
#[test]
fn the_thread_that_frees_a_chunk_s_last_block_frees_it_after_the_others() {
    let rounds = if cfg!(miri) { 2 } else { 40 };
    for round in 0..rounds {
        let slab = Allocator::with_blocks(64);
        // SAFETY: only the test thread allocates.
        let mut mine: Vec<_> = (0..64u64).map(|i| unsafe { slab.alloc([i; 4]) }).collect();
        let slab = if round % 2 == 0 {
            drop(slab);
            None
        } else {
            Some(slab)
        };
        let theirs = mine.split_off(32);
        let start = Arc::new(std::sync::Barrier::new(2));
        let other = {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                drop(theirs);
            })
        };
        start.wait();
        drop(mine);
        drop(slab);
        other.join().unwrap();
    }
}
