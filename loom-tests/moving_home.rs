//! Model 16: a shard moving its neighbour's tick thread off a core and sending it home, while
//! that thread lets go of its core for good or leaves its loop (see `shard::moving`), with
//! the kernel's affinity of the thread reduced to a cell that both sides write (so that two
//! writes not ordered by the protocol are a data race the model reports).

use loom::cell::UnsafeCell;
use loom::thread;

use crate::shard::Whereabouts;
use crate::sync::Arc;

/// Where the kernel lets the thread run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Set {
    /// Its own core.
    Home,
    /// The other cores (moved).
    Away,
    /// Every core (it let go of its core).
    All,
}

/// The thread's affinity.
struct Affinity(UnsafeCell<Set>);

// SAFETY: the protocol under test orders every access to the cell; loom reports any access
// it does not order.
unsafe impl Sync for Affinity {}

impl Affinity {
    fn set(&self, set: Set) -> bool {
        // SAFETY: only under a claim of the move word (see `shard::moving`), after a stay
        // that waited a claim out, or with every other thread joined; loom checks that.
        self.0.with_mut(|at| unsafe { *at = set });
        true
    }

    fn get(&self) -> Set {
        // SAFETY: as in `set`.
        self.0.with(|at| unsafe { *at })
    }
}

/// A thread at home, its id recorded, and its affinity.
fn thread_at_home() -> (Arc<Whereabouts>, Arc<Affinity>) {
    let place = Arc::new(Whereabouts::new());
    place.record_thread(7);
    (place, Arc::new(Affinity(UnsafeCell::new(Set::Home))))
}

/// The neighbour, on a thread of its own: tries to send the thread home at tick 200 (if it
/// is away), and to move it at tick 100 (if `moves`, and it is at home).
fn neighbour(
    place: &Arc<Whereabouts>,
    affinity: &Arc<Affinity>,
    moves: bool,
) -> thread::JoinHandle<()> {
    let (place, affinity) = (place.clone(), affinity.clone());
    thread::spawn(move || {
        if moves {
            place.try_move(100, |tid| {
                assert_eq!(tid, 7);
                affinity.set(Set::Away)
            });
        }
        place.return_if_due(200, 50, |tid| {
            assert_eq!(tid, 7);
            affinity.set(Set::Home)
        });
    })
}

/// The neighbour moves the thread, and sends it home (the two can run in one look, the model
/// letting the neighbour's clock jump), while the thread lets go of its core for good.
///
/// Catches: a neighbour that publishes the tick of its move before it moves the thread
/// (`away` from `HOME` straight to the tick): the thread's stay lands between the two, and
/// the move undoes the widening. Also a publish or a claim without Release and Acquire (the
/// writes of the affinity are then unordered), and a stay that does not wait out a claim
/// (swaps `STAYING` over `MOVING`). Each checked once by putting it in.
#[test]
fn a_thread_that_lets_go_is_never_moved_after() {
    loom::model(|| {
        let (place, affinity) = thread_at_home();
        let neighbour = neighbour(&place, &affinity, true);
        place.stay_put(|| {
            affinity.set(Set::All);
        });
        neighbour.join().unwrap();
        assert_eq!(affinity.get(), Set::All, "moved after it let go");
    });
}

/// The thread was moved at tick 0; the neighbour sends it home at tick 200 while the thread
/// lets go of its core for good.
///
/// Catches: a neighbour that stores `HOME` before it sends the thread home (rather than
/// holding the word until its call is made): the thread's stay then lands between the two,
/// and the return undoes the widening. Checked once by putting it in.
#[test]
fn a_thread_that_lets_go_is_never_sent_home_after() {
    loom::model(|| {
        let (place, affinity) = thread_at_home();
        assert!(place.try_move(0, |_| affinity.set(Set::Away)));
        let neighbour = neighbour(&place, &affinity, false);
        place.stay_put(|| {
            affinity.set(Set::All);
        });
        neighbour.join().unwrap();
        assert_eq!(affinity.get(), Set::All, "sent home after it let go");
    });
}
