//! Model 11: callers of `shutdown` (and `drop`) meeting in the closing protocol
//! (`engine::closing`), with the engine's part reduced to a value.

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::engine::{Closing, Duty};

/// What an outside caller does with its duty; returns what it receives.
fn outside(closing: &Closing<u32, u32>, finished: &AtomicBool) -> u32 {
    match closing.begin(false, |_| true) {
        Duty::Finish(handed_back) => {
            // Relaxed: the closing's mutex orders it before `complete`, which others wait for.
            finished.store(true, Ordering::Relaxed);
            closing.complete();
            handed_back
        }
        Duty::Join(finisher) => {
            let handed_back = finisher.join().unwrap();
            finished.store(true, Ordering::Relaxed);
            closing.complete();
            handed_back
        }
        Duty::FinishElsewhere(_) => unreachable!("only a caller inside a callback is sent away"),
        Duty::Nothing => 0,
    }
}

/// Two callers from outside: one finishes, and neither returns before it has.
///
/// Catches: a caller that finds the shutdown stopping and returns instead of waiting (the
/// second `shutdown()` that returned while callbacks still ran).
#[test]
fn every_caller_waits_for_the_finish() {
    loom::model(|| {
        let closing = Arc::new(Closing::new(7));
        let finished = Arc::new(AtomicBool::new(false));
        let other = {
            let (closing, finished) = (closing.clone(), finished.clone());
            thread::spawn(move || {
                let got = outside(&closing, &finished);
                // Relaxed: as in `outside`.
                (got, finished.load(Ordering::Relaxed))
            })
        };
        let got = outside(&closing, &finished);
        assert!(
            finished.load(Ordering::Relaxed),
            "returned before the finish"
        );
        let (other_got, other_saw) = other.join().unwrap();
        assert!(other_saw, "the other caller returned before the finish");
        assert_eq!(
            got + other_got,
            7,
            "one caller receives what was handed back"
        );
    });
}

/// A shutdown begun inside a callback finishes on a thread of its own; the caller from outside
/// joins it, whenever it comes, and receives what it handed back.
///
/// Catches: `finishing` not waking a caller that arrived while the thread was being started
/// (it waits forever), and an outside caller that returns without joining.
#[test]
fn the_next_caller_joins_a_shutdown_begun_inside_a_callback() {
    loom::model(|| {
        let closing = Arc::new(Closing::new(7));
        let inside = {
            let closing = closing.clone();
            thread::spawn(move || {
                if let Duty::FinishElsewhere(handed_back) = closing.begin(true, |_| true) {
                    let finisher =
                        crate::sync::thread::spawn_named("finisher", move || handed_back);
                    closing.finishing(finisher.ok());
                }
            })
        };
        let finished = AtomicBool::new(false);
        let got = outside(&closing, &finished);
        inside.join().unwrap();
        assert_eq!(
            got, 7,
            "the caller from outside receives what was handed back"
        );
    });
}
