//! `TimerEngine::pending_timers`: a snapshot of the pending timers, with their sites, ages and
//! keys when the engine tracks them; and the ages in `stats()`.

mod support;
use support::{scaled, wait_until, PATIENCE};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::stats::{ClockDeadline, PendingAges, PendingTimer, SnapshotError, Stage};
use shardwheel::{ManualClock, TimerEngine};

const SECOND: Duration = Duration::from_secs(1);

/// An engine of two shards on `clock`, tracking sites or not.
fn on(clock: &ManualClock, track: bool) -> TimerEngine {
    TimerEngine::builder()
        .manual_clock(clock)
        .shards(2)
        .track_sites(track)
        .build()
        .unwrap()
}

/// The deadlines of `timers`, sorted.
fn deadlines(timers: &[PendingTimer]) -> Vec<Instant> {
    let mut deadlines: Vec<Instant> = timers.iter().map(|timer| timer.deadline).collect();
    deadlines.sort();
    deadlines
}

#[test]
fn a_snapshot_lists_the_timers_in_the_wheels_without_cancelled_or_fired_ones() {
    let clock = ManualClock::new();
    let engine = on(&clock, false);
    let fires = engine.schedule(SECOND, || {}).unwrap();
    let mut kept: Vec<Instant> = Vec::new();
    for delay in [5, 30, 30, 3600] {
        kept.push(engine.schedule(delay * SECOND, || {}).unwrap().deadline());
    }
    kept.push(
        engine
            .schedule_keyed(7, 90 * SECOND, || {})
            .unwrap()
            .deadline(),
    );
    let cancelled = engine.schedule(60 * SECOND, || {}).unwrap();
    assert!(cancelled.cancel());
    clock.advance(2 * SECOND);
    assert_eq!(fires.state(), shardwheel::TimerState::Fired);

    let snapshot = engine.pending_timers().unwrap();
    kept.sort();
    assert_eq!(deadlines(&snapshot.timers), kept);
    assert_eq!(snapshot.unlisted, 0);
    assert_eq!(snapshot.taken_at, clock.now());
    for timer in &snapshot.timers {
        assert_eq!(timer.stage, Stage::Linked);
        assert!(timer.shard < 2);
        assert_eq!((timer.site, timer.age, timer.key), (None, None, None));
    }
    assert_eq!(snapshot.ages(), None, "no ages without tracking");
    assert_eq!(engine.stats().pending_ages, None);
}

#[test]
fn with_tracking_each_timer_has_its_site_age_and_key() {
    let clock = ManualClock::new();
    let engine = on(&clock, true);
    let first = engine.schedule(60 * SECOND, || {}).unwrap();
    let first_line = line!() - 1;
    clock.advance(5 * SECOND);
    let keyed = engine.schedule_keyed(42, 60 * SECOND, || {}).unwrap();
    let keyed_line = line!() - 1;
    let repeating = engine
        .repeating(10 * SECOND)
        .keyed(9)
        .schedule(|| {})
        .unwrap();
    let repeating_line = line!() - 2;
    let gone = engine.schedule(60 * SECOND, || {}).unwrap();
    assert!(gone.cancel());

    let snapshot = engine.pending_timers().unwrap();
    assert_eq!(snapshot.timers.len(), 3);
    assert_eq!(snapshot.unlisted, 0);
    let find = |line: u32| {
        let timer = snapshot
            .timers
            .iter()
            .find(|t| t.site.unwrap().line() == line);
        timer.unwrap_or_else(|| panic!("no timer from line {line}: {:?}", snapshot.timers))
    };
    let timer = find(first_line);
    assert_eq!(timer.site.unwrap().file(), file!());
    assert_eq!(timer.deadline, first.deadline());
    assert_eq!((timer.age, timer.key), (Some(5 * SECOND), None));
    assert_eq!(timer.stage, Stage::Linked);
    let timer = find(keyed_line);
    assert_eq!(timer.deadline, keyed.deadline());
    assert_eq!((timer.age, timer.key), (Some(Duration::ZERO), Some(42)));
    let timer = find(repeating_line);
    assert_eq!(timer.deadline, repeating.deadline());
    assert_eq!(timer.key, Some(9));

    let ages = snapshot.ages().unwrap();
    assert_eq!((ages.under_a_second, ages.under_a_minute), (2, 1));
    assert_eq!(engine.stats().pending_ages, Some(ages));
    assert_eq!(snapshot.by_site().len(), 3);
}

#[test]
fn a_timer_not_yet_in_a_wheel_is_listed_as_queued_with_tracking() {
    // A real clock: a timer due far ahead stays young with its owner for a few milliseconds.
    let engine = TimerEngine::builder()
        .shards(1)
        .track_sites(true)
        .build()
        .unwrap();
    let timer = engine.schedule(3600 * SECOND, || {}).unwrap();
    let snapshot = engine.pending_timers().unwrap();
    assert_eq!(snapshot.timers.len(), 1);
    assert!(matches!(
        snapshot.timers[0].stage,
        Stage::Queued | Stage::Linked
    ));
    assert_eq!(snapshot.timers[0].deadline, timer.deadline());
    wait_until("the timer to be linked", || {
        engine.pending_timers().unwrap().timers[0].stage == Stage::Linked
    });
}

#[test]
fn sleeps_are_listed_with_their_site() {
    use futures::FutureExt;
    let clock = ManualClock::new();
    let engine = on(&clock, true);
    let mut sleep = engine.sleep(30 * SECOND);
    let line = line!() - 1;
    assert!(
        (&mut sleep).now_or_never().is_none(),
        "polled: it takes its timer"
    );
    clock.advance(SECOND);
    let snapshot = engine.pending_timers().unwrap();
    assert_eq!(snapshot.timers.len(), 1);
    let timer = &snapshot.timers[0];
    assert_eq!(Some(timer.deadline), sleep.deadline());
    assert_eq!(timer.age, Some(SECOND));
    assert_eq!(timer.site.map(|site| site.line()), Some(line));
    drop(sleep);
    assert!(engine.pending_timers().unwrap().timers.is_empty());
}

#[test]
fn boot_and_wall_sleeps_and_timeouts_are_listed_with_their_site() {
    use futures::FutureExt;
    let clock = ManualClock::new();
    let engine = on(&clock, true);
    let hour = 3600 * SECOND;
    let mut boot = engine.sleep_boot(hour).unwrap();
    let boot_line = line!() - 1;
    let mut wall = engine.timeout_at_wall(clock.wall() + hour, std::future::pending::<()>());
    let wall_line = line!() - 1;
    assert!((&mut boot).now_or_never().is_none());
    assert!((&mut wall).now_or_never().is_none());
    let mut lines: Vec<u32> = (engine.pending_timers().unwrap().timers.iter())
        .map(|timer| timer.site.expect("a sleep's line").line())
        .collect();
    lines.sort_unstable();
    assert_eq!(lines, [boot_line, wall_line]);
}

#[test]
fn grouping_by_site_finds_the_line_that_leaks() {
    let clock = ManualClock::new();
    let engine = on(&clock, true);
    let mut handles = Vec::new();
    for _ in 0..20 {
        handles.push(engine.schedule(60 * SECOND, || {}).unwrap());
    }
    let held_line = line!() - 2;
    for _ in 0..50 {
        engine.schedule(600 * SECOND, || {}).unwrap(); // never cancelled
    }
    let leak_line = line!() - 2;
    clock.advance(120 * SECOND);
    let rows = engine.pending_timers().unwrap().by_site();
    let (site, count, oldest) = rows[0];
    assert_eq!((site.unwrap().line(), count), (leak_line, 50));
    assert_eq!(oldest, Some(120 * SECOND));
    assert!(
        rows.iter().all(|row| row.0.unwrap().line() != held_line),
        "fired"
    );
}

#[test]
fn stats_count_the_pending_timers_by_age() {
    let clock = ManualClock::new();
    let engine = on(&clock, true);
    engine.schedule(7200 * SECOND, || {}).unwrap();
    clock.advance(3601 * SECOND);
    engine.schedule(7200 * SECOND, || {}).unwrap();
    clock.advance(2 * SECOND);
    engine.schedule(7200 * SECOND, || {}).unwrap();
    let ages = engine.stats().pending_ages.unwrap();
    assert_eq!(
        (
            ages.under_a_second,
            ages.under_a_minute,
            ages.under_an_hour,
            ages.older
        ),
        (1, 1, 0, 1)
    );
    assert_eq!(ages.total(), engine.stats().pending);
    assert_eq!(PendingAges::default().total(), 0);
}

#[test]
fn a_snapshot_after_shutdown_is_an_error() {
    for track in [false, true] {
        let clock = ManualClock::new();
        let engine = on(&clock, track);
        engine.schedule(SECOND, || {}).unwrap();
        assert_eq!(engine.shutdown().len(), 1);
        assert_eq!(engine.pending_timers(), Err(SnapshotError::Shutdown));
    }
}

#[test]
fn a_snapshot_waiting_on_a_stuck_shard_ends_when_the_engine_shuts_down() {
    // The shard runs callbacks itself, and this one holds it until released.
    let engine = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .track_sites(false)
        .build()
        .unwrap();
    let (release, held) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel();
    engine
        .schedule(Duration::ZERO, move || {
            started.send(()).unwrap();
            let _ = held.recv_timeout(PATIENCE);
        })
        .unwrap();
    running.recv_timeout(PATIENCE).unwrap();
    let asker = {
        let engine = engine.clone();
        thread::spawn(move || {
            let start = Instant::now();
            (engine.pending_timers(), start.elapsed())
        })
    };
    thread::sleep(Duration::from_millis(50));
    let closer = {
        let engine = engine.clone();
        thread::spawn(move || engine.shutdown())
    };
    let (snapshot, waited) = asker.join().unwrap();
    assert_eq!(snapshot, Err(SnapshotError::Shutdown));
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    release.send(()).unwrap();
    closer.join().unwrap();
}

#[test]
fn snapshots_of_many_timers_leave_firing_going() {
    let engine = TimerEngine::builder()
        .shards(1)
        .track_sites(false)
        .build()
        .unwrap();
    let many = scaled(300_000);
    let _idle: Vec<_> = (0..many)
        .map(|_| engine.schedule(3600 * SECOND, || {}).unwrap())
        .collect();
    wait_until("the timers to be linked", || {
        engine.stats().shards[0].in_wheel == many as u64
    });
    let surveying = Arc::new(AtomicBool::new(false));
    let during = Arc::new(AtomicUsize::new(0));
    let fired = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let sentinels: Vec<_> = (1..=50u64)
        .map(|ms| {
            let (surveying, during, fired) = (surveying.clone(), during.clone(), fired.clone());
            let due = start + Duration::from_millis(20 + 2 * ms);
            engine
                .schedule_at(due, move || {
                    if surveying.load(Ordering::SeqCst) {
                        during.fetch_add(1, Ordering::SeqCst);
                    }
                    fired.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap()
        })
        .collect();
    let mut snapshots = 0;
    while fired.load(Ordering::SeqCst) < sentinels.len() {
        assert!(start.elapsed() < PATIENCE, "the sentinels did not fire");
        surveying.store(true, Ordering::SeqCst);
        let snapshot = engine.pending_timers().unwrap();
        surveying.store(false, Ordering::SeqCst);
        assert!(
            snapshot.timers.len() >= many,
            "{} listed",
            snapshot.timers.len()
        );
        snapshots += 1;
    }
    assert!(snapshots > 0);
    assert!(
        during.load(Ordering::SeqCst) > 0,
        "no timer fired while a snapshot was taken ({snapshots} snapshots)"
    );
}

#[test]
fn boot_and_wall_timers_are_listed_with_their_lines_and_their_own_clocks_deadlines() {
    for track in [true, false] {
        let clock = ManualClock::new();
        let engine = on(&clock, track);
        let wall = clock.wall() + 3600 * SECOND;
        let boot = engine.schedule_boot(600 * SECOND, || {}).unwrap();
        let boot_line = line!() - 1;
        let renew = engine.schedule_at_wall(wall, || {}).unwrap();
        let wall_line = line!() - 1;
        let plain = engine.schedule(60 * SECOND, || {}).unwrap();
        let plain_line = line!() - 1;
        clock.advance(SECOND);
        let snapshot = engine.pending_timers().unwrap();
        assert_eq!((snapshot.timers.len(), snapshot.unlisted), (3, 0));
        let on_clocks: Vec<Option<ClockDeadline>> =
            snapshot.timers.iter().map(|t| t.on_clock).collect();
        assert_eq!(
            on_clocks.iter().filter(|at| at.is_none()).count(),
            1,
            "the plain timer's"
        );
        let since_boot = on_clocks
            .iter()
            .find_map(|at| at.as_ref()?.since_boot())
            .expect("a boot deadline");
        let walls: Vec<_> = on_clocks
            .iter()
            .filter_map(|at| at.as_ref()?.wall())
            .collect();
        assert_eq!(walls, [wall]);
        if track {
            let mut lines: Vec<u32> = (snapshot.timers.iter())
                .map(|timer| timer.site.expect("every timer's line").line())
                .collect();
            lines.sort_unstable();
            assert_eq!(lines, [boot_line, wall_line, plain_line]);
            assert_eq!(engine.stats().pending_ages.unwrap().total(), 3);
        }
        // A reset moves the listed deadline on its clock.
        assert!(boot.reset(1200 * SECOND));
        let moved = engine.pending_timers().unwrap();
        let boot_now = moved
            .timers
            .iter()
            .find_map(|timer| timer.on_clock?.since_boot());
        assert_eq!(boot_now, Some(since_boot + 601 * SECOND));
        drop((renew, plain));
    }
}

#[test]
fn a_snapshot_taken_while_timers_are_reset_lists_each_once() {
    // One shard; many timers due in an hour, and some due in a day that another thread resets
    // to 30 s while the shard walks its wheel: a timer moved to a level the walk has not
    // reached is met twice, and must be listed once.
    let engine = TimerEngine::builder()
        .shards(1)
        .pin_threads(false)
        .build()
        .unwrap();
    let (hour, day) = (scaled(100_000), scaled(2_000));
    let mut kept = Vec::with_capacity(hour);
    for _ in 0..hour {
        kept.push(engine.schedule(3600 * SECOND, || {}).unwrap());
    }
    let moved: Vec<_> = (0..day)
        .map(|_| engine.schedule(86_400 * SECOND, || {}).unwrap())
        .collect();
    let moved = Arc::new(moved);
    wait_until("the timers to be linked", || {
        engine.pending_timers().unwrap().timers.len() == hour + day
    });
    for attempt in 0..8 {
        let (go, start) = mpsc::channel();
        let resets = {
            let moved = moved.clone();
            thread::spawn(move || {
                start.recv().unwrap();
                thread::sleep(Duration::from_micros(250 << (attempt % 6)));
                for timer in moved.iter() {
                    assert!(timer.reset((30 + attempt) * SECOND));
                }
            })
        };
        go.send(()).unwrap();
        let snapshot = engine.pending_timers().unwrap();
        resets.join().unwrap();
        let listed = snapshot.timers.len() as u64;
        assert!(
            listed + snapshot.unlisted <= engine.pending(),
            "attempt {attempt}: {listed} listed and {} unlisted of {} pending",
            snapshot.unlisted,
            engine.pending()
        );
    }
    drop(kept);
}
