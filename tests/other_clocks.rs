//! Deadlines on the boot clock (which counts the time the machine slept) and on the wall clock
//! (which may be stepped): a suspend or a step takes effect before `ManualClock::suspend` or
//! `set_wall` returns, nothing fires early on its own clock, a cancel and shutdown behave as
//! for any timer, and on the system's clocks the watcher fires what its estimate would miss.

#![cfg(not(loom))]

mod support;
use support::{counting, manual, poll_once};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, SystemTime};

use shardwheel::{ManualClock, ScheduleError, ScheduleErrorKind, TimerState};

const SEC: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_secs(60);

/// A callback that records the wall time it ran at (by `clock`), and the record.
fn records_wall(clock: &ManualClock) -> (Arc<Mutex<Vec<SystemTime>>>, impl FnOnce() + Send) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let (record, clock) = (ran.clone(), clock.clone());
    (ran, move || record.lock().unwrap().push(clock.wall()))
}

/// A flag and a callback that raises it.
fn flag() -> (Arc<AtomicBool>, impl FnOnce() + Send) {
    let raised = Arc::new(AtomicBool::new(false));
    let raise = raised.clone();
    (raised, move || raise.store(true, Ordering::SeqCst))
}

#[test]
fn a_boot_timer_fires_at_once_after_a_suspend_past_its_deadline_and_a_monotonic_one_does_not() {
    let (clock, engine) = manual();
    let (boot_ran, on_boot) = flag();
    let (plain_ran, on_plain) = flag();
    let boot = engine.schedule_boot(10 * MINUTE, on_boot).unwrap();
    let plain = engine.schedule(10 * MINUTE, on_plain).unwrap();
    clock.advance(MINUTE);
    let before = clock.now();
    clock.suspend(60 * MINUTE);
    // Before `suspend` returned, with no monotonic time passing: zero ticks from the resume.
    assert_eq!(clock.now(), before);
    assert!(boot_ran.load(Ordering::SeqCst));
    assert_eq!(boot.state(), TimerState::Fired);
    assert!(!plain_ran.load(Ordering::SeqCst));
    assert_eq!(plain.state(), TimerState::Pending);
    clock.advance(9 * MINUTE);
    assert!(plain_ran.load(Ordering::SeqCst));
}

#[test]
fn a_boot_timer_counts_a_short_suspend_and_is_never_early() {
    let (clock, engine) = manual();
    let (boot_ran, on_boot) = flag();
    let (plain_ran, on_plain) = flag();
    engine.schedule_boot(10 * MINUTE, on_boot).unwrap();
    engine.schedule(10 * MINUTE, on_plain).unwrap();
    clock.suspend(4 * MINUTE);
    assert!(!boot_ran.load(Ordering::SeqCst), "4 of 10 minutes passed");
    clock.advance(6 * MINUTE - Duration::from_millis(1));
    assert!(!boot_ran.load(Ordering::SeqCst), "a millisecond early");
    clock.advance(Duration::from_millis(1));
    assert!(
        boot_ran.load(Ordering::SeqCst),
        "10 minutes on the boot clock"
    );
    assert!(
        !plain_ran.load(Ordering::SeqCst),
        "6 minutes on the monotonic clock"
    );
}

#[test]
fn a_wall_timer_fires_at_once_after_a_forward_step_past_its_deadline() {
    let (clock, engine) = manual();
    let deadline = clock.wall() + 60 * MINUTE;
    let (ran, callback) = records_wall(&clock);
    let timer = engine.schedule_at_wall(deadline, callback).unwrap();
    clock.advance(MINUTE);
    let before = clock.now();
    clock.set_wall(deadline + SEC);
    assert_eq!(clock.now(), before, "no monotonic time passed");
    assert_eq!(timer.state(), TimerState::Fired);
    let ran = ran.lock().unwrap();
    assert_eq!(ran.len(), 1);
    assert!(ran[0] >= deadline, "never early on the wall clock");
}

#[test]
fn a_forward_step_short_of_the_deadline_brings_it_closer() {
    let (clock, engine) = manual();
    let deadline = clock.wall() + 60 * MINUTE;
    let (ran, callback) = records_wall(&clock);
    engine.schedule_at_wall(deadline, callback).unwrap();
    clock.set_wall(clock.wall() + 30 * MINUTE);
    clock.advance(30 * MINUTE - Duration::from_millis(1));
    assert!(ran.lock().unwrap().is_empty(), "a millisecond early");
    clock.advance(Duration::from_millis(1));
    assert_eq!(*ran.lock().unwrap(), [deadline]);
}

#[test]
fn a_backward_step_delays_a_wall_timer_and_it_is_never_early() {
    let (clock, engine) = manual();
    let deadline = clock.wall() + MINUTE;
    let (ran, callback) = records_wall(&clock);
    let timer = engine.schedule_at_wall(deadline, callback).unwrap();
    clock.set_wall(clock.wall() - 30 * MINUTE);
    // The monotonic estimate made before the step comes and goes: the run finds it early.
    clock.advance(MINUTE);
    assert!(ran.lock().unwrap().is_empty());
    assert_eq!(timer.state(), TimerState::Pending);
    clock.advance(30 * MINUTE - Duration::from_millis(1));
    assert!(ran.lock().unwrap().is_empty());
    clock.advance(Duration::from_millis(1));
    assert_eq!(*ran.lock().unwrap(), [deadline]);
    assert_eq!(timer.state(), TimerState::Fired);
}

#[test]
fn a_reset_is_a_new_delay_on_the_timer_s_own_clock() {
    let (clock, engine) = manual();
    let start = clock.wall();
    let (ran, callback) = records_wall(&clock);
    let timer = engine
        .schedule_at_wall(start + 60 * MINUTE, callback)
        .unwrap();
    let (boot_ran, on_boot) = flag();
    let boot = engine.schedule_boot(60 * MINUTE, on_boot).unwrap();
    assert!(timer.reset(MINUTE));
    assert!(boot.reset(MINUTE));
    clock.advance(MINUTE - Duration::from_millis(1));
    assert!(ran.lock().unwrap().is_empty(), "never early");
    assert!(!boot_ran.load(Ordering::SeqCst));
    clock.advance(Duration::from_millis(1));
    assert_eq!(*ran.lock().unwrap(), [start + MINUTE]);
    assert!(boot_ran.load(Ordering::SeqCst));
    assert_eq!(timer.state(), TimerState::Fired);
}

#[test]
fn a_true_reset_of_a_boot_timer_never_fires_at_its_old_deadline_after_a_suspend() {
    let (clock, engine) = manual();
    let (ran, callback) = flag();
    let timer = engine.schedule_boot(600 * SEC, callback).unwrap();
    clock.advance(500 * SEC);
    assert!(timer.reset(600 * SEC));
    // 700 s of boot time since the start, 200 since the reset.
    clock.suspend(200 * SEC);
    assert!(!ran.load(Ordering::SeqCst), "fired at the old deadline");
    assert_eq!(timer.state(), TimerState::Pending);
    clock.advance(400 * SEC - Duration::from_millis(1));
    assert!(!ran.load(Ordering::SeqCst), "early on the boot clock");
    clock.advance(Duration::from_millis(1));
    assert!(ran.load(Ordering::SeqCst));
}

#[test]
fn a_true_reset_of_a_wall_timer_never_fires_at_its_old_deadline_after_a_step() {
    let (clock, engine) = manual();
    let start = clock.wall();
    let (ran, callback) = records_wall(&clock);
    let timer = engine
        .schedule_at_wall(start + 600 * SEC, callback)
        .unwrap();
    clock.advance(500 * SEC);
    let later = engine.now() + 600 * SEC;
    assert!(timer.reset_at(later), "600 s from now, on the wall clock");
    clock.set_wall(start + 700 * SEC);
    assert!(ran.lock().unwrap().is_empty(), "fired at the old deadline");
    // The new deadline is start + 1100 s on the wall clock: 400 s more.
    clock.advance(400 * SEC - Duration::from_millis(1));
    assert!(ran.lock().unwrap().is_empty(), "early on the wall clock");
    clock.advance(Duration::from_millis(1));
    assert_eq!(*ran.lock().unwrap(), [start + 1100 * SEC]);
}

#[test]
fn a_reset_of_an_ended_clock_timer_answers_false_and_moves_nothing() {
    let (clock, engine) = manual();
    let (ran, callback) = flag();
    let fired = engine.schedule_boot(SEC, callback).unwrap();
    let cancelled = engine.schedule_at_wall(clock.wall() + SEC, || {}).unwrap();
    assert!(cancelled.cancel());
    clock.advance(SEC);
    assert!(ran.load(Ordering::SeqCst));
    assert!(!fired.reset(SEC));
    assert!(!cancelled.reset(SEC));
    assert_eq!(fired.state(), TimerState::Fired);
    assert_eq!(cancelled.state(), TimerState::Cancelled);
}

#[test]
fn a_wall_deadline_already_past_fires_on_the_next_turn() {
    let (clock, engine) = manual();
    let (ran, callback) = flag();
    engine
        .schedule_at_wall(clock.wall() - MINUTE, callback)
        .unwrap();
    clock.advance(Duration::ZERO);
    assert!(ran.load(Ordering::SeqCst));
}

#[test]
fn a_wall_deadline_beyond_the_engine_s_range_is_taken_and_fires_when_stepped_to() {
    let (clock, engine) = manual();
    let far = clock.wall() + engine.max_delay() * 3;
    let (ran, callback) = flag();
    let timer = engine.schedule_at_wall(far, callback).unwrap();
    assert!(engine
        .schedule_at(clock.now() + engine.max_delay() * 3, || {})
        .is_err());
    clock.advance(engine.max_delay());
    assert!(!ran.load(Ordering::SeqCst), "its stand-in came and went");
    assert_eq!(timer.state(), TimerState::Pending);
    clock.set_wall(far);
    assert!(ran.load(Ordering::SeqCst));
}

#[test]
fn a_cancelled_boot_or_wall_timer_never_runs() {
    let (clock, engine) = manual();
    let (boot_ran, on_boot) = flag();
    let (wall_ran, on_wall) = flag();
    let boot = engine.schedule_boot(MINUTE, on_boot).unwrap();
    let wall = engine
        .schedule_at_wall(clock.wall() + MINUTE, on_wall)
        .unwrap();
    assert!(boot.cancel());
    assert!(wall.cancel());
    assert!(!wall.cancel(), "once");
    clock.suspend(2 * MINUTE);
    clock.set_wall(clock.wall() + 60 * MINUTE);
    clock.advance(2 * MINUTE);
    assert!(!boot_ran.load(Ordering::SeqCst));
    assert!(!wall_ran.load(Ordering::SeqCst));
    assert_eq!(wall.state(), TimerState::Cancelled);
    // After it fired, a cancel answers false.
    let fired = engine.schedule_boot(SEC, || {}).unwrap();
    clock.advance(SEC);
    assert!(!fired.cancel());
    assert_eq!(fired.state(), TimerState::Fired);
}

#[test]
fn a_cancelled_wall_timer_that_was_re_armed_never_runs() {
    let (clock, engine) = manual();
    let (ran, callback) = flag();
    let timer = engine
        .schedule_at_wall(clock.wall() + MINUTE, callback)
        .unwrap();
    clock.set_wall(clock.wall() - MINUTE);
    clock.advance(MINUTE); // the estimate comes early: re-armed
    assert!(timer.cancel());
    clock.advance(MINUTE);
    assert!(!ran.load(Ordering::SeqCst));
}

#[test]
fn shutdown_hands_boot_and_wall_timers_back_and_running_one_runs_it() {
    let (clock, engine) = manual();
    let runs = Arc::new(AtomicUsize::new(0));
    let (r1, r2) = (runs.clone(), runs.clone());
    let boot = engine
        .schedule_boot(MINUTE, move || {
            r1.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let wall = engine
        .schedule_at_wall(clock.wall() + MINUTE, move || {
            r2.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let unfired = engine.shutdown();
    assert_eq!(unfired.len(), 2);
    assert!(unfired.iter().any(|u| u.timer() == &boot));
    assert!(unfired.iter().any(|u| u.timer() == &wall));
    assert_eq!(boot.state(), TimerState::HandedBack);
    for timer in unfired {
        timer.run();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(matches!(
        engine.schedule_at_wall(clock.wall(), || {}),
        Err(ScheduleError::Shutdown(_))
    ));
}

#[test]
fn a_wall_sleep_wakes_its_task_on_a_step_and_ends_only_at_its_deadline() {
    let (clock, engine) = manual();
    let (count, waker) = counting();
    let deadline = clock.wall() + 60 * MINUTE;
    let mut sleep = engine.sleep_until_wall(deadline);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.set_wall(clock.wall() - MINUTE);
    assert!(count.count() >= 1, "a step wakes the task to look again");
    assert!(poll_once(&mut sleep, &waker).is_pending());
    let woken = count.count();
    clock.set_wall(deadline);
    assert!(count.count() > woken);
    assert!(sleep.is_elapsed());
    assert_eq!(poll_once(&mut sleep, &waker), Poll::Ready(()));
}

#[test]
fn a_boot_sleep_ends_after_a_suspend_and_a_timeout_on_either_clock_gives_up() {
    let (clock, engine) = manual();
    let (_, waker) = counting();
    let mut sleep = engine.sleep_boot(10 * MINUTE).unwrap();
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.suspend(10 * MINUTE);
    assert_eq!(poll_once(&mut sleep, &waker), Poll::Ready(()));

    let never = std::future::pending::<()>();
    let mut boot = engine.timeout_boot(MINUTE, never).unwrap();
    let mut wall = engine.timeout_at_wall(clock.wall() + MINUTE, std::future::pending::<()>());
    assert!(poll_once(&mut boot, &waker).is_pending());
    assert!(poll_once(&mut wall, &waker).is_pending());
    assert_eq!(wall.refused(), None);
    clock.set_wall(clock.wall() + MINUTE);
    assert!(poll_once(&mut wall, &waker).is_ready());
    assert!(
        poll_once(&mut boot, &waker).is_pending(),
        "the boot clock did not move"
    );
    clock.advance(MINUTE);
    assert!(poll_once(&mut boot, &waker).is_ready());
    let quick = engine.timeout_at_wall(clock.wall() + MINUTE, async { 7 });
    assert_eq!(futures::executor::block_on(quick), Ok(7));
}

#[test]
fn a_dropped_clock_sleep_is_no_longer_watched_and_wakes_nothing() {
    let (clock, engine) = manual();
    let (count, waker) = counting();
    let mut sleep = engine.sleep_until_wall(clock.wall() + MINUTE);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    drop(sleep);
    clock.set_wall(clock.wall() + 2 * MINUTE);
    clock.advance(2 * MINUTE);
    assert_eq!(count.count(), 0);
}

#[test]
fn the_refusal_of_a_platform_without_a_boot_clock_is_an_error_that_hands_the_value_back() {
    let refused = ScheduleError::ClockUnsupported(7);
    assert_eq!(refused.kind(), ScheduleErrorKind::ClockUnsupported);
    assert_eq!(format!("{refused:?}"), "ClockUnsupported(..)");
    assert!(refused.to_string().contains("CLOCK_BOOTTIME"));
    assert_eq!(refused.into_inner(), 7);
    let (_, engine) = manual();
    let scheduled = engine.schedule_boot(MINUTE, || {});
    let supported = cfg!(any(target_os = "linux", target_vendor = "apple", windows));
    match scheduled {
        Ok(timer) => assert!(supported && timer.cancel()),
        Err(e) => assert!(!supported && e.kind() == ScheduleErrorKind::ClockUnsupported),
    }
    // A manual clock simulates the boot clock on every platform.
    assert!(engine.sleep_boot(MINUTE).is_ok());
}
