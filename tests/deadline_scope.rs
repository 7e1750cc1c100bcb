//! Deadline scopes (`shardwheel::deadline`): the current deadline, its nesting, the timeouts
//! clamped to it, on manual clocks; and the tower layer's incoming deadline.

#![cfg(not(loom))]

use std::future::{pending, poll_fn, Future};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::executor::block_on;
use futures::FutureExt;

mod support;
use shardwheel::deadline::{self, current, remaining, within, within_at};
use shardwheel::{Elapsed, ManualClock, TimerEngine};
use support::{counting, one_shard_on, poll_once};

const SEC: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

/// An engine of one shard on a manual clock of its own.
fn own_engine() -> (ManualClock, TimerEngine) {
    let clock = ManualClock::new();
    let engine = one_shard_on(&clock);
    (clock, engine)
}

/// A future that is pending on its first poll and ready on its second, recording the current
/// deadline at each poll.
fn twice(seen: Arc<Mutex<Vec<Option<Instant>>>>) -> impl Future<Output = ()> + Send {
    let mut polls = 0;
    poll_fn(move |cx| {
        seen.lock().unwrap().push(current());
        polls += 1;
        if polls == 1 {
            cx.waker().wake_by_ref();
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
}

#[test]
fn current_is_the_scopes_deadline_inside_and_none_outside() {
    let at = Instant::now() + SEC;
    assert_eq!(current(), None);
    assert_eq!(remaining(), None);
    let inside = block_on(within_at(at, async { current() }));
    assert_eq!(inside, Some(at));
    assert_eq!(current(), None, "the scope's deadline ends with its poll");
}

#[test]
fn a_nested_scope_has_the_earlier_of_its_own_and_the_enclosing_deadline() {
    let soon = Instant::now() + SEC;
    let late = soon + SEC;
    let seen = |outer, inner| {
        block_on(within_at(outer, async move {
            let nested = within_at(inner, async { current() }).await;
            (nested, current())
        }))
    };
    assert_eq!(
        seen(soon, late),
        (Some(soon), Some(soon)),
        "the enclosing one is earlier"
    );
    assert_eq!(
        seen(late, soon),
        (Some(soon), Some(late)),
        "its own is earlier"
    );
}

#[test]
fn a_timeout_inside_a_scope_ends_at_the_scopes_deadline() {
    let (clock, engine) = own_engine();
    let start = clock.now();
    let mut call = Box::pin(within_at(start + SEC * 2, async {
        engine.timeout(SEC * 60, pending::<()>()).await
    }));
    assert!(call.as_mut().now_or_never().is_none());
    clock.advance(SEC * 2 - MS);
    assert!(call.as_mut().now_or_never().is_none(), "never early");
    clock.advance(MS);
    let elapsed = call.now_or_never().expect("ended at the scope's deadline");
    assert!(elapsed.unwrap_err().is_inherited());
    assert_eq!(engine.pending(), 0);
}

#[test]
fn a_timeout_earlier_than_its_scope_ends_at_its_own_deadline() {
    let (clock, engine) = own_engine();
    let start = clock.now();
    let mut call = Box::pin(within_at(start + SEC * 10, async {
        engine.timeout_at(start + SEC * 3, pending::<()>()).await
    }));
    assert!(call.as_mut().now_or_never().is_none());
    clock.advance(SEC * 3);
    let elapsed = call.now_or_never().expect("ended at its own deadline");
    assert_eq!(elapsed, Err(Elapsed::new()));
    assert!(!Elapsed::new().is_inherited());
}

#[test]
fn a_timeout_due_with_its_scope_reports_its_own_deadline() {
    let (clock, engine) = own_engine();
    let mut call = Box::pin(within_at(clock.now() + SEC * 2, async {
        engine.timeout(SEC * 2, pending::<()>()).await
    }));
    assert!(call.as_mut().now_or_never().is_none());
    clock.advance(SEC * 2);
    assert_eq!(
        call.now_or_never(),
        Some(Err(Elapsed::new())),
        "both ran out"
    );
}

#[test]
fn each_kind_of_timeout_made_inside_a_scope_is_clamped() {
    let (clock, engine) = own_engine();
    let at = clock.now() + SEC * 2;
    let far = clock.now() + SEC * 60;
    let deadlines = block_on(engine.scope(within_at(at, async {
        [
            shardwheel::timeout(SEC * 60, async {}).deadline(),
            shardwheel::timeout_at(far, async {}).deadline(),
            engine.try_timeout(SEC * 60, async {}).unwrap().deadline(),
            engine.try_timeout_at(far, async {}).unwrap().deadline(),
        ]
    })));
    assert_eq!(deadlines, [Some(at); 4]);
    let outside = engine.timeout(SEC * 60, async {}).deadline();
    assert_eq!(outside, Some(clock.now() + SEC * 60), "no scope, no clamp");
}

#[test]
fn a_sleep_inside_a_scope_is_not_clamped() {
    let (clock, engine) = own_engine();
    let start = clock.now();
    let mut nap = Box::pin(within_at(
        start + SEC,
        engine.scope(async {
            shardwheel::sleep(SEC * 5).await;
        }),
    ));
    assert!(nap.as_mut().now_or_never().is_none());
    clock.advance(SEC * 2);
    assert!(
        nap.as_mut().now_or_never().is_none(),
        "a sleep is no deadline"
    );
    clock.advance(SEC * 3);
    assert!(nap.now_or_never().is_some());
}

#[test]
fn a_timeout_made_in_a_scope_stays_clamped_when_reset_outside_it() {
    let (clock, engine) = own_engine();
    let at = clock.now() + SEC * 2;
    // The async block hands the timeout out unawaited: made inside the scope, used outside.
    let made = block_on(within_at(at, async {
        Some(engine.timeout(SEC * 60, pending::<()>()))
    }));
    let mut timeout = Box::pin(made.unwrap());
    assert_eq!(timeout.deadline(), Some(at));
    timeout.as_mut().reset(SEC * 30);
    assert_eq!(
        timeout.deadline(),
        Some(at),
        "a later reset stays inside the scope"
    );
    timeout.as_mut().reset(SEC);
    assert_eq!(timeout.deadline(), Some(clock.now() + SEC));
    clock.advance(SEC);
    let elapsed = timeout.now_or_never().unwrap().unwrap_err();
    assert!(!elapsed.is_inherited(), "its own, earlier deadline ran out");
}

#[test]
fn a_timeout_inside_a_scope_whose_deadline_passed_ends_at_once() {
    let (clock, engine) = own_engine();
    clock.advance(SEC * 10);
    let passed = clock.now() - SEC * 5;
    let mut call = Box::pin(within_at(passed, async {
        engine.timeout(SEC, pending::<()>()).await
    }));
    let (_, waker) = counting();
    let mut ended = None;
    // The clock does not move: the shard's next turn ends it.
    support::wait_until("the timeout to end", || {
        ended = match poll_once(&mut call, &waker) {
            Poll::Ready(result) => Some(result),
            Poll::Pending => None,
        };
        ended.is_some()
    });
    assert!(ended.unwrap().unwrap_err().is_inherited());
}

#[test]
fn remaining_is_the_time_left_on_the_entered_engines_clock() {
    let (clock, engine) = own_engine();
    // `within` inside the engine's scope, to read its clock.
    let mut call = Box::pin(engine.scope(async {
        within(SEC * 5, async {
            let first = remaining();
            shardwheel::sleep(SEC * 2).await;
            let second = remaining();
            shardwheel::sleep(SEC * 4).await;
            (first, second, remaining())
        })
        .await
    }));
    assert!(call.as_mut().now_or_never().is_none());
    clock.advance(SEC * 2);
    assert!(call.as_mut().now_or_never().is_none());
    clock.advance(SEC * 4);
    let left = call.now_or_never().unwrap();
    assert_eq!(left, (Some(SEC * 5), Some(SEC * 3), Some(Duration::ZERO)));
}

#[test]
fn the_deadline_is_current_only_during_the_scopes_polls() {
    let at = Instant::now() + SEC;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut task = Box::pin(within_at(at, twice(seen.clone())));
    let (_, waker) = counting();
    assert!(poll_once(&mut task, &waker).is_pending());
    assert_eq!(current(), None, "between polls");
    assert!(poll_once(&mut task, &waker).is_ready());
    assert_eq!(current(), None);
    assert_eq!(*seen.lock().unwrap(), [Some(at), Some(at)]);
}

#[test]
fn a_scope_restores_the_enclosing_deadline_when_its_poll_unwinds() {
    let outer = Instant::now() + SEC * 2;
    let inner = outer - SEC;
    let after = block_on(within_at(outer, async move {
        let panicked = AssertUnwindSafe(within_at(inner, async {
            assert_eq!(current(), Some(inner));
            panic!("the inner future fails");
        }))
        .catch_unwind()
        .await;
        assert!(panicked.is_err());
        current()
    }));
    assert_eq!(after, Some(outer));
    assert_eq!(current(), None);
}

#[test]
fn a_scope_moved_between_threads_applies_on_each() {
    let at = Instant::now() + SEC;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut task: Pin<Box<dyn Future<Output = ()> + Send>> =
        Box::pin(within_at(at, twice(seen.clone())));
    for expect_ready in [false, true] {
        task = std::thread::spawn(move || {
            let (_, waker) = counting();
            assert_eq!(poll_once(&mut task, &waker).is_ready(), expect_ready);
            assert_eq!(current(), None, "the thread's own deadline is back");
            task
        })
        .join()
        .unwrap();
    }
    assert_eq!(*seen.lock().unwrap(), [Some(at), Some(at)]);
}

#[test]
fn an_inherited_elapsed_is_told_apart() {
    let at = Instant::now() + MS * 5;
    let elapsed = block_on(within_at(at, async {
        shardwheel::timeout(SEC * 60, pending::<()>()).await
    }))
    .unwrap_err();
    assert!(elapsed.is_inherited());
    assert_ne!(elapsed, Elapsed::new());
    assert!(elapsed.to_string().starts_with("deadline has elapsed"));
    assert!(Instant::now() >= at, "never early");
    let io: std::io::Error = elapsed.into();
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
}

#[test]
fn the_grpc_timeout_text_carries_the_time_left() {
    let (_clock, engine) = own_engine();
    let sent = block_on(engine.scope(engine.within(MS * 250, async {
        deadline::format_grpc_timeout(remaining().unwrap())
    })));
    assert_eq!(sent, "250000u");
    assert_eq!(deadline::parse_grpc_timeout(&sent), Ok(MS * 250));
    let error = deadline::parse_grpc_timeout("soon").unwrap_err();
    assert!(error.to_string().contains("grpc-timeout"), "{error}");
}

#[test]
fn boot_and_wall_timeouts_inside_a_scope_end_by_its_deadline() {
    let (clock, engine) = own_engine();
    let hour = SEC * 3600;
    let wall = clock.wall() + hour;
    let mut call = Box::pin(engine.within(MS * 200, async {
        let on_wall = engine.timeout_at_wall(wall, pending::<()>()).await;
        let on_boot = engine.timeout_boot(hour, pending::<()>()).unwrap().await;
        (on_wall, on_boot)
    }));
    assert!(call.as_mut().now_or_never().is_none());
    clock.advance(MS * 199);
    assert!(call.as_mut().now_or_never().is_none(), "never early");
    clock.advance(MS);
    let (on_wall, on_boot) = call
        .now_or_never()
        .expect("both ended by the scope's deadline");
    assert!(on_wall.unwrap_err().is_inherited());
    assert!(on_boot.unwrap_err().is_inherited());
    assert_eq!(engine.pending(), 0);
}

#[test]
fn a_boot_timeout_earlier_than_its_scope_ends_at_its_own_deadline_after_a_suspend() {
    let (clock, engine) = own_engine();
    let mut call = Box::pin(engine.within(SEC * 60, async {
        engine
            .timeout_boot(SEC * 10, pending::<()>())
            .unwrap()
            .await
    }));
    assert!(call.as_mut().now_or_never().is_none());
    clock.suspend(SEC * 10);
    let ended = call.now_or_never().expect("ended on the boot clock");
    assert_eq!(ended, Err(Elapsed::new()), "its own deadline");
}

#[test]
fn remaining_inside_a_scope_is_on_the_clock_of_the_engine_that_made_it() {
    let (clock, engine) = own_engine();
    clock.advance(SEC * 3600);
    let left = block_on(engine.within(MS * 200, async { remaining() }));
    assert_eq!(left, Some(MS * 200));
    let mut later = Box::pin(engine.within(MS * 200, async {
        engine.sleep(MS * 50).await;
        remaining()
    }));
    assert!(later.as_mut().now_or_never().is_none());
    clock.advance(MS * 50);
    assert_eq!(later.now_or_never(), Some(Some(MS * 150)));
}

#[test]
fn a_scope_made_outside_an_engines_scope_takes_that_engines_clock() {
    let (clock, engine) = own_engine();
    clock.advance(SEC * 3600);
    let mut call = Box::pin(engine.scope(within(SEC * 2, async {
        let left = remaining();
        (left, shardwheel::timeout(SEC * 60, pending::<()>()).await)
    })));
    assert!(call.as_mut().now_or_never().is_none());
    clock.advance(SEC * 2 - MS);
    assert!(call.as_mut().now_or_never().is_none(), "never early");
    clock.advance(MS);
    let (left, ended) = call.now_or_never().expect("ended at the scope's deadline");
    assert_eq!(left, Some(SEC * 2));
    assert!(ended.unwrap_err().is_inherited());
}

#[test]
fn a_scope_on_one_clock_bounds_a_timeout_on_another_by_what_is_left_of_it() {
    let (clock, engine) = own_engine();
    let (_, other) = own_engine();
    clock.advance(SEC * 3600);
    let deadline = block_on(engine.within(SEC * 2, async {
        other.timeout(SEC * 60, async {}).deadline()
    }));
    assert_eq!(
        deadline,
        Some(other.now() + SEC * 2),
        "2 s on the other clock"
    );
}

#[test]
fn a_deadline_carried_into_a_spawned_task_bounds_its_timeouts_there() {
    let (clock, engine) = own_engine();
    let (spawned, tasks) = std::sync::mpsc::channel();
    let handler = engine.within(SEC, async {
        let uncarried = engine.scope(async {
            (
                remaining(),
                shardwheel::timeout(SEC * 60, pending::<()>()).await,
            )
        });
        let carried = deadline::carry(engine.scope(async {
            (
                remaining(),
                shardwheel::timeout(SEC * 60, pending::<()>()).await,
            )
        }));
        spawned
            .send((Box::pin(uncarried), Box::pin(carried)))
            .unwrap();
    });
    block_on(handler);
    let (mut uncarried, mut carried) = tasks.recv().unwrap();
    // Polled outside the handler's scope, as an executor polls a spawned task.
    assert!(uncarried.as_mut().now_or_never().is_none());
    assert!(carried.as_mut().now_or_never().is_none());
    clock.advance(SEC);
    let (left, ended) = carried
        .now_or_never()
        .expect("the carried deadline ended it");
    assert_eq!(left, Some(SEC));
    assert!(ended.unwrap_err().is_inherited());
    assert!(
        uncarried.now_or_never().is_none(),
        "a deadline does not follow a spawn"
    );
}
