//! Tests of the engine's parts that need a whole engine around them.

use crate::shard::{Lane, Reply};
use crate::sync::owner_number;
use crate::TimerEngine;

#[test]
fn a_lane_passes_to_the_next_thread_when_its_owner_exits() {
    // Inline callbacks: no rayon pool, whose deques trip Miri's Stacked Borrows (see
    // `.ci/miri`).
    let engine = one_shard();
    let lane = engine.lane_of_this_thread().clone();
    let first = {
        let lane = lane.clone();
        std::thread::spawn(move || {
            assert!(
                Lane::count_a_schedule_as_owner(&lane),
                "the first thread claims the lane"
            );
            owner_number().unwrap()
        })
        .join()
        .unwrap()
    };
    assert!(!lane.counts().has_owner(), "released when the owner exited");
    let lane2 = lane.clone();
    std::thread::spawn(move || {
        assert!(
            Lane::count_a_schedule_as_owner(&lane2),
            "the next thread claims it"
        );
        assert_ne!(owner_number().unwrap(), first);
    })
    .join()
    .unwrap();
    assert_eq!(
        lane.counts().scheduled(),
        2,
        "the new owner went on from the old count"
    );
    drop(engine);
}

#[test]
fn a_thread_that_left_its_lanes_schedules_as_another_thread() {
    use std::cell::RefCell;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// Schedules from a thread-local destructor that runs after the one that gives the
    /// thread's lanes up, and records whether the schedule went as the lane's owner.
    struct Late(Arc<TimerEngine>, Arc<Mutex<Option<bool>>>);
    impl Drop for Late {
        fn drop(&mut self) {
            let owner = self.0.shared().lane(None).is_owner();
            let handle = self.0.schedule(Duration::from_secs(60), || {});
            assert!(handle.is_ok_and(|handle| handle.cancel()));
            *self.1.lock().unwrap() = Some(owner);
        }
    }
    thread_local! {
        static LATE: RefCell<Option<Late>> = const { RefCell::new(None) };
    }

    let engine = Arc::new(one_shard());
    let seen = Arc::new(Mutex::new(None));
    {
        let (engine, seen) = (engine.clone(), seen.clone());
        std::thread::spawn(move || {
            // Registered before the first schedule registers the owned lanes' record, so
            // destroyed after it (thread-local destructors run last registered first).
            LATE.with(|late| *late.borrow_mut() = Some(Late(engine.clone(), seen)));
            let handle = engine.schedule(Duration::from_secs(60), || {}).unwrap();
            assert!(engine.shared().lane(None).is_owner());
            assert!(handle.cancel());
        })
        .join()
        .unwrap();
    }
    assert_eq!(
        *seen.lock().unwrap(),
        Some(false),
        "a lane given up at exit is not used as its owner's"
    );
}

#[test]
// Needs more timers than the buffer keeps (4,096): minutes under Miri, and no unsafe code of
// its own (the unlinks are exercised under Miri by the smaller tests).
#[cfg_attr(miri, ignore)]
fn a_turn_keeps_the_unlink_buffer_its_busiest_lane_needed() {
    use std::time::Duration;
    let clock = crate::ManualClock::new();
    let (engine, mut shards) = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .manual_clock(&clock)
        .build_driven()
        .unwrap();
    let engine = std::sync::Arc::new(engine);
    let shard = &mut shards[0];
    let now = engine.now_tick();
    let many = 20_000;
    for round in 0..2 {
        // A thread schedules many timers, and this one (alive meanwhile, so with another lane
        // index and lane) schedules one; the shard takes them in.
        let schedule = |engine: std::sync::Arc<TimerEngine>, count: usize| {
            move || {
                (0..count)
                    .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
                    .collect::<Vec<_>>()
            }
        };
        let busy = std::thread::spawn(schedule(engine.clone(), many))
            .join()
            .unwrap();
        let quiet = schedule(engine.clone(), 1)();
        for _ in 0..4 {
            shard.turn(now);
        }
        assert_eq!(engine.stats().shards[0].in_wheel, many as u64 + 1);
        // A cancel asks the timer's own lane to unlink it: the next turn takes one lane's
        // many, then the other's one.
        assert!(busy.iter().chain(&quiet).all(|handle| handle.cancel()));
        shard.turn(now);
        assert_eq!(engine.stats().shards[0].in_wheel, 0);
        assert!(
            shard.unlink_capacity() >= many,
            "round {round}: the buffer kept what lane 0 needed ({} < {many})",
            shard.unlink_capacity()
        );
    }
    engine.shutdown_driven(shards);
}

#[test]
fn a_reset_after_shutdown_is_refused_though_the_sleep_kept_its_timer() {
    use futures::FutureExt;
    use std::time::Duration;

    let clock = crate::ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .inline_callbacks()
        .build()
        .unwrap();
    let mut sleep = engine.sleep(Duration::from_millis(2));
    assert!((&mut sleep).now_or_never().is_none());
    let later = engine.now_tick().get() + 6;
    // Pushed later, the sleep keeps its timer; shutdown then hands that timer back.
    assert!(sleep.try_reset_to(Some(later)).is_ok());
    drop(engine.shutdown());
    assert!(matches!(
        sleep.try_reset_to(Some(later + 2)),
        Err(crate::shard::Refusal::Shutdown)
    ));
    assert!(sleep.is_elapsed());
}

/// An engine of one unpinned shard with inline callbacks.
fn one_shard() -> TimerEngine {
    TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .pin_threads(false)
        .build()
        .unwrap()
}

#[test]
fn every_thread_alive_at_once_owns_a_lane_of_its_own() {
    use std::sync::{Arc, Barrier};
    let engine = Arc::new(one_shard());
    // More threads than the cpus of any machine this runs on, and than lanes were before.
    let threads = 24;
    let barrier = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (engine, barrier) = (engine.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let lane = engine.lane_of_this_thread().clone();
                let mine = Lane::owned_by_caller(&lane);
                // No thread exits, and gives its lane up, before every thread has claimed one.
                barrier.wait();
                (Arc::as_ptr(&lane) as usize, mine)
            })
        })
        .collect();
    let mut lanes: Vec<(usize, bool)> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(
        lanes.iter().all(|&(_, mine)| mine),
        "every thread owns its lane"
    );
    lanes.sort_unstable();
    lanes.dedup();
    assert_eq!(lanes.len(), threads, "no two threads share a lane");
}

#[test]
// 200 threads one after another: minutes under Miri, and no unsafe code the other lane tests
// do not run.
#[cfg_attr(miri, ignore)]
fn lanes_follow_the_threads_alive_not_every_thread_there_was() {
    use std::time::Duration;
    let engine = std::sync::Arc::new(one_shard());
    for _ in 0..200 {
        let engine = engine.clone();
        std::thread::spawn(move || {
            assert!(engine
                .schedule(Duration::from_secs(60), || {})
                .unwrap()
                .cancel());
        })
        .join()
        .unwrap();
    }
    // One thread at a time, each giving its lane index back as it exits: the shard made about
    // as many lanes as threads were alive at once in this process, not 200.
    let made = engine.lanes_made(0);
    assert!(
        made <= 64,
        "{made} lanes for threads that came one at a time"
    );
}

#[test]
fn a_thread_s_unkeyed_timers_go_to_its_home_shard() {
    use std::time::Duration;
    let engine = TimerEngine::builder()
        .shards(4)
        .inline_callbacks()
        .pin_threads(false)
        .build()
        .unwrap();
    let handles: Vec<_> = (0..100)
        .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
        .collect();
    let pending: Vec<u64> = engine.stats().shards.iter().map(|s| s.pending).collect();
    assert_eq!(pending.iter().filter(|&&n| n > 0).count(), 1, "{pending:?}");
    assert_eq!(pending.iter().sum::<u64>(), 100);
    drop(handles);
}

#[test]
fn a_thread_claims_its_home_lane_once_another_owner_gives_it_up() {
    use std::sync::{Arc, Barrier};
    use std::time::Duration;
    let engine = one_shard();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let lane = engine.lane_of_this_thread();
            let (claimed, exit) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
            let other = {
                let (lane, claimed, exit) = (lane.clone(), claimed.clone(), exit.clone());
                std::thread::spawn(move || {
                    assert!(Lane::owned_by_caller(&lane), "another thread owns it first");
                    claimed.wait();
                    exit.wait();
                })
            };
            claimed.wait();
            let first = engine.schedule(Duration::from_secs(5), || {}).unwrap();
            assert!(!Lane::owned_by_caller(lane), "scheduled as another thread");
            exit.wait();
            other.join().unwrap();
            assert!(!lane.counts().has_owner(), "given up as its owner exited");
            let second = engine.schedule(Duration::from_secs(5), || {}).unwrap();
            assert!(
                lane.counts().has_owner(),
                "the thread claims its free home lane"
            );
            assert!(first.cancel() && second.cancel());
        });
    });
    drop(engine);
}

#[test]
fn a_shard_takes_young_timers_a_reset_hurried_before_it_sleeps() {
    use std::time::Duration;
    // A tick of a second: the first two ticks of the engine's life, when a hurry once read as a
    // timer made at the clock's origin, last far longer than the test.
    let (engine, mut shards) = TimerEngine::builder()
        .shards(1)
        .tick(Duration::from_secs(1))
        .inline_callbacks()
        .pin_threads(false)
        .build_driven()
        .unwrap();
    let shard = &mut shards[0];
    let handle = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    shard.turn(engine.now_tick());
    assert!(
        shard.shared().counts().in_wheel() == 0,
        "young, in its lane"
    );
    assert!(handle.reset(Duration::from_secs(10)));
    assert!(
        shard.prepare_sleep(engine.now_tick()) == crate::shard::Announced::Awake,
        "a hurried lane is taken before the shard sleeps"
    );
    assert!(handle.cancel());
    drop(engine.shutdown_driven(shards));
}

#[test]
fn fired_clock_timers_are_forgotten_and_cancelled_ones_swept() {
    use std::time::Duration;
    let clock = crate::ManualClock::new();
    // Inline callbacks: no rayon pool, whose deques trip Miri's Stacked Borrows.
    let engine = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .manual_clock(&clock)
        .build()
        .unwrap();
    let hour = clock.wall() + Duration::from_secs(3600);
    let kept = engine.schedule_at_wall(hour, || {}).unwrap();
    // Under Miri a few hundred: enough for the map to double and be swept several times.
    for _ in 0..if cfg!(miri) { 300 } else { 10_000 } {
        assert!(engine.schedule_at_wall(hour, || {}).unwrap().cancel());
    }
    let count = engine.shared().clocks.kept();
    assert!(count <= 2 + 64 + 1, "{count} kept for one live timer");
    clock.set_wall(hour);
    assert_eq!(kept.state(), crate::TimerState::Fired);
    assert!(engine.schedule_at_wall(hour, || {}).is_ok());
    clock.advance(Duration::ZERO);
    assert_eq!(engine.shared().clocks.kept(), 0, "fired ones are forgotten");
}

#[test]
fn a_survey_walks_between_turns_that_go_on_firing() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    let (engine, mut shards) = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .pin_threads(false)
        .build_driven()
        .unwrap();
    let mut shard = shards.pop().unwrap();
    let many = if cfg!(miri) { 64 } else { 200_000 };
    let idle: Vec<_> = (0..many)
        .map(|_| engine.schedule(Duration::from_secs(3600), || {}).unwrap())
        .collect();
    // Past the horizon: the shard takes the young timers and links them, a budget a turn.
    std::thread::sleep(Duration::from_millis(10));
    while engine.stats().shards[0].in_wheel < many as u64 {
        shard.turn(engine.now_tick());
    }
    let ticket = shard.shared().survey().ask();
    let mut pieces = 1;
    let walking = shard.survey_step();
    assert!(walking || cfg!(miri), "a long wheel is walked in pieces");
    let fired = Arc::new(AtomicUsize::new(0));
    let counter = fired.clone();
    let soon = move || {
        counter.fetch_add(1, Ordering::SeqCst);
    };
    engine.schedule(Duration::ZERO, soon).unwrap();
    shard.turn(engine.now_tick());
    assert_eq!(
        fired.load(Ordering::SeqCst),
        1,
        "a turn amid the survey fires"
    );
    while shard.survey_step() {
        pieces += 1;
        shard.turn(engine.now_tick());
    }
    let Reply::Given(found) = shard.shared().survey().take(ticket) else {
        panic!("answered");
    };
    assert_eq!(found.seen.len(), many, "in {pieces} pieces");
    assert!(
        matches!(shard.shared().survey().take(ticket), Reply::Taken),
        "taken"
    );
    drop(idle);
    drop(engine.shutdown_driven(vec![shard]));
}

/// On the system's clocks, a timer whose monotonic estimate is an hour late (as after a step
/// forward or a resume) fires at its own deadline: the watcher's `timerfd` (Linux) or its
/// recheck (elsewhere, within a second) finds it. Prints the lateness of each.
#[test]
#[cfg_attr(miri, ignore = "real time, and a timerfd Miri cannot make")]
fn the_watcher_fires_a_timer_whose_estimate_is_late_at_its_own_deadline() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant, SystemTime};
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let wall_late = Arc::new(Mutex::new(Vec::new()));
    let boot_left = Arc::new(AtomicUsize::new(0));
    let count = 20;
    for i in 0..count {
        let deadline = SystemTime::now() + Duration::from_millis(20 + 5 * i);
        let late = wall_late.clone();
        let wall = engine
            .schedule_at_wall(deadline, move || {
                let now = SystemTime::now();
                let early = now < deadline;
                let lateness = now.duration_since(deadline).unwrap_or_default();
                late.lock().unwrap().push((early, lateness));
            })
            .unwrap();
        // Its next look an hour off: only the watcher fires it on time.
        let hour = engine.shared().clock.tick_after(Duration::from_secs(3600));
        assert!(wall.move_to(hour));
        let left = boot_left.clone();
        left.fetch_add(1, Ordering::SeqCst);
        let boot = engine
            .schedule_boot(Duration::from_millis(20 + 5 * i), move || {
                left.fetch_sub(1, Ordering::SeqCst);
            })
            .unwrap();
        assert!(boot.move_to(hour));
    }
    let start = Instant::now();
    let give_up = Instant::now() + Duration::from_secs(60);
    while wall_late.lock().unwrap().len() < count as usize || boot_left.load(Ordering::SeqCst) > 0 {
        assert!(
            Instant::now() < give_up,
            "timed out waiting for the watcher"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut late: Vec<Duration> = wall_late
        .lock()
        .unwrap()
        .iter()
        .map(|(early, late)| {
            assert!(!early, "a wall timer ran before its deadline");
            *late
        })
        .collect();
    late.sort();
    eprintln!(
        "wall timers an hour late on their estimate: lateness p50 {:?}, max {:?} (all in {:?})",
        late[late.len() / 2],
        late[late.len() - 1],
        start.elapsed()
    );
    let bound = Duration::from_secs(5);
    assert!(
        late[late.len() - 1] < bound,
        "the watcher fired them within {bound:?}"
    );
    engine.shutdown();
}
