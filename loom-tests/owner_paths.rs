//! Model 9: the owner's single-writer paths: the ring of new timers, the stack of spare
//! entries, and the hand-over of a lane when its owner exits. (The engine takes these paths
//! only on a lane's owner thread, and under loom no thread owns a lane, so the models drive the
//! structures directly.)

use loom::thread;

use crate::entry::{CallbackBox, Entry, EntryRef};
use crate::queue::Recycler;
use crate::queue::{Ring, RING_CELLS};
use crate::shard::LaneCounts;
use crate::slab::Allocator;
use crate::sync::Arc;

fn entry(deadline: u64) -> EntryRef {
    EntryRef::new(Entry::new(deadline, CallbackBox::new(|| {})))
}

/// The owner pushes more timers than the ring holds while the shard takes them: each arrives
/// once, in order, written as the owner wrote it, and a push to a full ring hands its entry
/// back rather than overwriting a slot the shard has not read.
///
/// Catches: a full check that lets the owner write one slot too many (`>` for `>=`), which
/// overwrites a timer the shard has not taken. (A Relaxed store of `tail` is not caught: loom
/// never lets the shard read the slot's older value here, nor flags the entry's cells read
/// without a happens-before edge from their writer. That ordering is checked by
/// ThreadSanitizer instead, in CI's sanitizer step: with the store Relaxed, the library's
/// tests report a data race on the entry the shard takes from the ring (checked once; the
/// ring's own unit tests alone do not), see `queue::ring`.)
#[test]
fn ring_hands_over_each_timer_once() {
    loom::model(|| {
        let total = RING_CELLS as u64 + 1;
        let ring = Arc::new(Ring::new());
        let owner = {
            let ring = ring.clone();
            thread::spawn(move || {
                let mut refused = Vec::new();
                for deadline in 0..total {
                    // SAFETY: this thread is the ring's one producer.
                    if let Err(back) = unsafe { ring.push(entry(deadline)) } {
                        refused.push(back.state().deadline());
                    }
                }
                refused
            })
        };
        let mut taken = Vec::new();
        // SAFETY: this thread is the ring's one consumer.
        unsafe { ring.take(usize::MAX, &mut taken) };
        let refused = owner.join().unwrap();
        // SAFETY: as above.
        unsafe { ring.take(usize::MAX, &mut taken) };
        let mut seen: Vec<u64> = taken.iter().map(|e| e.state().deadline()).collect();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order: {seen:?}");
        assert!(taken.iter().all(|e| EntryRef::strong_count(e) == 1));
        seen.extend(refused);
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..total).collect::<Vec<_>>(),
            "each timer exactly once"
        );
    });
}

/// The shard gives dead entries back in two chains while the owner takes spares: the owner
/// gets each entry once, unshared, and sees the writes made to it before it was given; what
/// the owner did not take is freed by `free_returned`.
///
/// Catches: a Relaxed CAS in `give` or a Relaxed swap in `take` (the owner follows a link
/// that is not written yet), and a consumer that pops single nodes (ABA).
#[test]
fn spares_reach_the_owner_once() {
    loom::model(|| {
        let spares = Arc::new(Recycler::new());
        let shard = {
            let spares = spares.clone();
            thread::spawn(move || {
                spares.give(&mut vec![entry(1), entry(2)]);
                spares.give(&mut vec![entry(3)]);
            })
        };
        let mut reused = Vec::new();
        for _ in 0..2 {
            // SAFETY: this thread is the owner, and the recycler is not being freed.
            if let Some(mut spare) = unsafe { spares.take() } {
                let unshared = EntryRef::get_mut(&mut spare).expect("a spare is unshared");
                reused.push(unshared.state().deadline());
            }
        }
        shard.join().unwrap();
        // SAFETY: as above.
        while let Some(spare) = unsafe { spares.take() } {
            reused.push(spare.state().deadline());
        }
        reused.sort_unstable();
        assert_eq!(reused, vec![1, 2, 3]);
        spares.free_returned();
    });
}

/// A lane's owner counts with plain loads and stores, then lets the lane go (as its thread's
/// exit does) while another thread claims it and counts on: the new owner goes on from the old
/// owner's count, and a thread that finds the lane owned counts in the shared cells. No
/// update is lost.
///
/// Catches: a Relaxed claim or release. The new owner may then read its counter cell from
/// before the old owner's last store, and its store overwrites that update (3 counted as 2).
#[test]
fn the_lane_passes_to_the_next_owner_whole() {
    loom::model(|| {
        let counts = Arc::new(LaneCounts::new());
        let first = {
            let counts = counts.clone();
            thread::spawn(move || {
                // SAFETY (each claim, give-up and leave in these models): the model numbers
                // its threads 1 and 2, and each passes its own.
                let mine = unsafe { counts.claim(1) };
                counts.add_scheduled_in_model(mine);
                counts.add_scheduled_in_model(mine);
                if mine {
                    unsafe { counts.give_up(1) };
                }
            })
        };
        let mine = unsafe { counts.claim(2) };
        counts.add_scheduled_in_model(mine);
        if mine {
            unsafe { counts.give_up(2) };
        }
        first.join().unwrap();
        assert_eq!(counts.scheduled(), 3);
    });
}

/// The engine's drop closes a lane to owners while a thread claims it and takes a spare: the
/// drop frees the spares only if it closed the lane, and a thread takes spares only as the
/// owner, so the two never touch the stash at once.
///
/// Catches: a close that succeeds over another thread's ownership (the drop frees the stash
/// while the owner takes from it: loom reports the two accesses to the stash's cell).
#[test]
fn the_drop_frees_the_spares_of_a_lane_no_thread_owns() {
    loom::model(|| {
        let counts = Arc::new(LaneCounts::new());
        let spares = Arc::new(Recycler::new());
        spares.give(&mut vec![entry(1)]);
        let owner = {
            let (counts, spares) = (counts.clone(), spares.clone());
            thread::spawn(move || {
                // SAFETY (each claim, give-up and close in this model): the model numbers
                // the owner 1 and the thread after it 2; the closer has no number.
                if unsafe { counts.claim(1) } {
                    // SAFETY: this thread owns the lane, so the stash is not being freed.
                    drop(unsafe { spares.take() });
                    unsafe { counts.give_up(1) };
                }
            })
        };
        let closed = unsafe { counts.close(None) };
        if closed {
            // SAFETY: the lane is closed to owners, and no thread owned it.
            unsafe { spares.free_stash() };
        }
        owner.join().unwrap();
        if closed {
            assert!(
                !unsafe { counts.claim(2) },
                "a closed lane has no owner again"
            );
        }
        spares.free_returned();
    });
}

/// The owner exits (`LaneCounts::leave`), freeing its stash and giving up the lane's chunks,
/// while another thread drops a value the owner carved and a third claims the lane, takes a
/// spare and carves a block: each value is dropped once, each chunk freed once, and the new
/// owner never touches the stash or the allocator while the old one does.
///
/// Catches: a `leave` that gives the lane up before it lets go (the new owner carves from the
/// allocator while the old one gives its chunks up: loom reports the two accesses to its
/// cell), and a give-up that leaves a chunk behind (loom reports the leak).
#[test]
fn an_exiting_owner_lets_go_before_the_next_claims() {
    loom::model(|| {
        let counts = Arc::new(LaneCounts::new());
        let spares = Arc::new(Recycler::new());
        let slab = Arc::new(Allocator::<u64>::with_blocks(2));
        // SAFETY (each claim, leave and give-up of `counts` here): the model numbers the
        // exiting owner 1 (this thread claims for it, before it starts) and the next 2.
        assert!(unsafe { counts.claim(1) });
        spares.give(&mut vec![entry(1)]);
        // SAFETY (each `alloc`, `take`, `free_stash` and `give_up` below): done by the lane's
        // owner alone, one owner after the other through the claim.
        let carved = unsafe { slab.alloc(7) };
        let exiting = {
            let (counts, spares, slab) = (counts.clone(), spares.clone(), slab.clone());
            thread::spawn(move || {
                unsafe {
                    counts.leave(1, || {
                        spares.free_stash();
                        slab.give_up();
                    })
                };
            })
        };
        let freer = thread::spawn(move || drop(carved));
        if unsafe { counts.claim(2) } {
            drop(unsafe { spares.take() });
            drop(unsafe { slab.alloc(8) });
            unsafe { counts.give_up(2) };
        }
        exiting.join().unwrap();
        freer.join().unwrap();
        spares.free_returned();
        // SAFETY: every thread that used the lane has been joined.
        unsafe { spares.free_stash() };
    });
}
