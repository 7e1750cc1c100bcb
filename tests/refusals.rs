//! Refusals a caller can see: after shutdown or at the cap, a task looping on a sleep or an
//! interval's tick waits rather than spins, and a zero period is refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::FutureExt;
use shardwheel::{ManualClock, ScheduleError, ScheduleErrorKind, TimerEngine};

const MS: Duration = Duration::from_millis(1);

/// More iterations than a loop that waits makes in a test's window: a loop that gets this
/// far spins, and stops here rather than hold the test forever.
const SPINNING: usize = 1000;

/// Runs `looping` for `window` on a current-thread runtime; it must still be waiting then.
fn run_for(window: Duration, looping: impl std::future::Future<Output = ()>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let outcome = runtime.block_on(async { tokio::time::timeout(window, looping).await });
    assert!(outcome.is_err(), "the loop spun {SPINNING} times");
}

/// How many times `$step` completes, awaited in a loop, within `$window` (see `run_for`).
macro_rules! passes_in {
    ($window:expr, $step:expr) => {{
        let mut passes = 0;
        run_for($window, async {
            loop {
                $step.await;
                passes += 1;
                if passes == SPINNING {
                    return;
                }
            }
        });
        passes
    }};
}

#[test]
fn a_loop_on_tick_does_not_spin_after_shutdown() {
    let engine = TimerEngine::builder().build().unwrap();
    let mut interval = engine.interval(MS * 50);
    drop(engine.shutdown());
    let ticks = passes_in!(MS * 200, interval.tick());
    assert!(ticks <= 5, "{ticks} ticks of a 50 ms interval in 200 ms");
}

#[test]
fn a_loop_on_sleep_does_not_spin_after_shutdown() {
    let engine = TimerEngine::builder().build().unwrap();
    drop(engine.shutdown());
    let sleeps = passes_in!(MS * 200, engine.sleep(MS * 100));
    assert!(sleeps <= 5, "{sleeps} sleeps of 100 ms in 200 ms");
}

#[test]
fn a_loop_on_sleep_does_not_spin_at_the_cap() {
    let engine = TimerEngine::builder().max_pending(1).build().unwrap();
    let held = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    let sleeps = passes_in!(MS * 200, engine.sleep(MS * 100));
    assert!(sleeps <= 5, "{sleeps} sleeps of 100 ms in 200 ms");
    drop(held);
}

#[test]
fn a_loop_on_tick_does_not_spin_at_the_cap() {
    let engine = TimerEngine::builder().max_pending(1).build().unwrap();
    let held = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    let mut interval = engine.interval(MS * 50);
    let ticks = passes_in!(MS * 200, interval.tick());
    assert!(ticks <= 6, "{ticks} ticks of a 50 ms interval in 200 ms");
    drop(held);
}

#[test]
fn a_sleep_at_the_cap_waits_for_a_place_then_ends_at_its_deadline() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .max_pending(1)
        .build()
        .unwrap();
    let held = engine.schedule(MS * 100, || {}).unwrap();
    let counter = Arc::new(Counting(AtomicUsize::new(0)));
    let waker = Waker::from(counter.clone());
    let mut sleep = engine.sleep(MS * 10);
    assert!(poll_once(&mut sleep, &waker).is_pending(), "not early");
    assert!(held.cancel());
    clock.advance(MS); // the shard drops the cancelled timer: its permit is free
    assert!(
        counter.0.load(Ordering::SeqCst) >= 1,
        "woken for the permit"
    );
    assert!(poll_once(&mut sleep, &waker).is_pending());
    assert_eq!(engine.pending(), 1, "the sleep holds its timer");
    clock.advance(MS * 8);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert!(poll_once(&mut sleep, &waker).is_ready());
}

#[test]
fn a_zero_period_is_refused_with_the_callback() {
    let engine = TimerEngine::builder().build().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let refused = engine
        .repeating(Duration::ZERO)
        .schedule(move || tx.send(1).unwrap());
    let error = refused.unwrap_err();
    assert_eq!(error.kind().to_string(), "the period is zero");
    let mut callback = error.into_inner();
    callback();
    assert_eq!(rx.try_recv(), Ok(1));
    let first = engine.now();
    let zero = || engine.repeating(Duration::ZERO);
    assert!(zero().first_at(first).schedule(|| {}).is_err());
    assert!(zero().keyed(7).schedule(|| {}).is_err());
    assert!(zero().schedule_with(|_| {}).is_err());
    assert!(engine
        .repeating(Duration::ZERO)
        .fixed_delay()
        .schedule(|| {})
        .is_err());
    assert_eq!(engine.pending(), 0);
    assert_eq!(engine.stats().scheduled, 0);
}

#[test]
fn a_sleep_after_shutdown_stays_pending_and_says_why() {
    let engine = TimerEngine::builder().build().unwrap();
    let counter = Arc::new(Counting(AtomicUsize::new(0)));
    let waker = Waker::from(counter.clone());
    let mut before = engine.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut before, &waker).is_pending());
    drop(engine.shutdown());
    assert!(counter.0.load(Ordering::SeqCst) >= 1, "shutdown wakes it");
    assert!(poll_once(&mut before, &waker).is_pending(), "not early");
    assert!(!before.is_elapsed());
    assert_eq!(before.refused(), Some(ScheduleErrorKind::Shutdown));
    let mut after = engine.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut after, &waker).is_pending());
    assert_eq!(after.refused(), Some(ScheduleErrorKind::Shutdown));
    // A timeout then waits for its future alone.
    let timeout = engine.timeout(Duration::from_secs(60), async { 7 });
    assert_eq!(timeout.now_or_never(), Some(Ok(7)));
    let mut interval = engine.interval(Duration::from_secs(60));
    assert_eq!(
        interval.try_tick().now_or_never(),
        Some(Err(ScheduleErrorKind::Shutdown))
    );
    // The first tick is due at once: the clock has reached it. The next never comes.
    assert!(interval.tick().now_or_never().is_some());
    assert_eq!(interval.tick().now_or_never(), None);
}

#[test]
fn try_interval_refuses_a_zero_period_and_a_stopped_engine() {
    let engine = TimerEngine::builder().build().unwrap();
    assert!(matches!(
        engine.try_interval(Duration::ZERO),
        Err(ScheduleError::ZeroPeriod(()))
    ));
    assert!(engine.try_interval(MS).is_ok());
    drop(engine.shutdown());
    assert!(matches!(
        engine.try_interval(MS),
        Err(ScheduleError::Shutdown(()))
    ));
}

struct Counting(AtomicUsize);

impl std::task::Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll_once<F: std::future::Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    std::pin::Pin::new(future).poll(&mut Context::from_waker(waker))
}
