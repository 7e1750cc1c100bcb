//! Model 14: the slab's chunks (see `slab::chunk`). Blocks are freed on any thread, one by one
//! or together (`Frees`), and handed out again by the allocator's one user, and every chunk is
//! freed once, by whoever lets go of its last live block after the allocator gave it up (the
//! allocator itself, if that is later). loom reports a block never freed as a leak.

use loom::thread;

use crate::slab::{Allocator, Frees, SlabArc, Trim};
use crate::sync::{Arc, AtomicUsize, Ordering};

/// A value that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Two-block chunks: the allocator's user frees one value and hands two to other threads,
/// allocates a third (a block freed meanwhile, or a second chunk's) while they free theirs,
/// and gives its chunks up while the third is freed elsewhere: each value is dropped once and
/// each chunk freed once.
///
/// Catches: a give-up that does not add the blocks it handed out to `live` (the chunk is
/// never freed, which loom reports as a leak), and, as checked once with `== 2`, a freer that
/// frees the chunk at another count than the last (`fetch_sub(..) == 1`). loom cannot see the
/// early free itself (the header is plain memory, and an atomic's state lives in loom's own
/// store); the model failed because a later free read an atomic from the freed block after the
/// system allocator had reused it. Nor does it see the blocks' plain fields (value, link,
/// index), so an ordering too weak on the free stack passes here: Miri runs the slab's unit
/// tests, one of them with blocks freed on other threads, and catches a use after free. Nor
/// does it see `live`'s orderings order the chunk's memory: with the free's `fetch_sub` or
/// the give-up's `fetch_add` made Relaxed, this model passes, and so does Miri; CI's
/// sanitizer step (ThreadSanitizer) fails on the unit test
/// `the_thread_that_frees_a_chunk_s_last_block_frees_it_after_the_others` (each checked once).
#[test]
fn slab_chunk_is_freed_once_by_its_last_user() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let slab = Allocator::with_blocks(2);
        // SAFETY (each `alloc`): this thread is the allocator's only user.
        let first = unsafe { slab.alloc(Counted(drops.clone())) };
        let second = unsafe { slab.alloc(Counted(drops.clone())) };
        let shared = first.clone();
        let other = thread::spawn(move || {
            drop(shared);
            drop(second);
        });
        drop(first);
        let third = unsafe { slab.alloc(Counted(drops.clone())) };
        let last = thread::spawn(move || drop(third));
        drop(slab);
        other.join().unwrap();
        last.join().unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 3, "each value dropped once");
    });
}

/// Two-block chunks: another thread lets go of three values together (a clone of one the
/// allocator's user still holds, and the only references to two more, in two chunks) while the
/// user drops its reference, allocates two more (the second takes the free stack, with the
/// batch's chain on it or not yet) and gives its chunks up: each value is dropped once, by
/// whoever held it last, and each chunk freed once.
///
/// Catches: a run of blocks counted as one free (`count_freed(chunk, 1)` for a run of two: the
/// first chunk is never freed, a leak), and a value dropped into the batch while another
/// reference still holds it (`drop_into` without its count check). Both checked once by hand.
/// That the batch pushes its chains before it counts its runs (a push after the count may
/// write into a chunk freed), and that a chain is linked end to end, are plain memory, out of
/// loom's sight: the slab's unit tests catch them under Miri
/// (`blocks_freed_together_after_the_give_up_free_their_chunks`) and by the addresses handed
/// out again (`a_chain_across_chunks_is_handed_out_again_whole`).
#[test]
fn slab_blocks_freed_together_free_each_chunk_once() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let shared_drops = Arc::new(AtomicUsize::new(0));
        let slab = Allocator::with_blocks(2);
        // SAFETY (each `alloc`): this thread is the allocator's only user.
        let shared = unsafe { slab.alloc(Counted(shared_drops.clone())) };
        let second = unsafe { slab.alloc(Counted(drops.clone())) };
        let third = unsafe { slab.alloc(Counted(drops.clone())) };
        let clone = shared.clone();
        let other = thread::spawn(move || {
            let mut frees = Frees::new();
            for held in [clone, second, third] {
                SlabArc::drop_into(held, &mut frees);
            }
            frees.flush();
        });
        let early = shared_drops.load(Ordering::SeqCst);
        assert_eq!(early, 0, "not dropped while a reference holds it");
        drop(shared);
        let fourth = unsafe { slab.alloc(Counted(drops.clone())) };
        let fifth = unsafe { slab.alloc(Counted(drops.clone())) };
        drop(fourth);
        drop(slab);
        drop(fifth);
        other.join().unwrap();
        assert_eq!(shared_drops.load(Ordering::SeqCst), 1, "dropped once");
        assert_eq!(drops.load(Ordering::SeqCst), 4, "each value dropped once");
    });
}

/// Two-block chunks, a sweep step at every allocation and a trim from one chunk on: another
/// thread lets go of one value while the allocator's user lets go of the other, then allocates
/// and lets go of one value at a time until a trim has left its chunk behind and given it up:
/// each value is dropped once, each chunk freed once (the one given up by whoever let go of
/// its last block), and no block of a chunk left behind is handed out again.
///
/// Catches: a trim that keeps the old free stack (`start_afresh` without its new stack: the
/// next allocations take blocks of the chunk left behind off it, after the chunk was given up
/// and perhaps freed; loom failed on an object of the freed chunk). Checked once by hand. A
/// trim that keeps the chain already taken off the stack (`reuse` not emptied) passes here,
/// since with two-block chunks the chain holds one block at most; the slab's unit test
/// `after_a_trim_no_block_of_the_old_chunks_is_handed_out` catches it.
#[test]
fn slab_trim_leaves_its_chunks_behind_while_their_blocks_are_freed() {
    const CHURN: usize = 4;
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let slab = Allocator::with_settings(2, Trim { above: 1, every: 1 });
        let counted = || Counted(drops.clone());
        // SAFETY (each `alloc`): this thread is the allocator's only user.
        let first = unsafe { slab.alloc(counted()) };
        let second = unsafe { slab.alloc(counted()) };
        let other = thread::spawn(move || drop(second));
        drop(first);
        // Once the other thread's value is let go of, two steps find the chunk free (a trim),
        // and the next gives it up; until then the chunk is not free, and stays.
        for _ in 0..CHURN {
            drop(unsafe { slab.alloc(counted()) });
        }
        drop(slab);
        other.join().unwrap();
        assert_eq!(
            drops.load(Ordering::SeqCst),
            2 + CHURN,
            "each value dropped once"
        );
    });
}
