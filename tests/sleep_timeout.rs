//! The `sleep` and `timeout` futures: when they wake and end, drops, refusals, three executors.

#![cfg(not(loom))]

mod support;
use support::{
    on_manual_clock, one_shard_on, one_shard_ticking, poll_once, CountingWaker, PATIENCE,
};

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use futures::FutureExt;
use shardwheel::{Elapsed, ManualClock, ScheduleError, ScheduleErrorKind, Sleep, TimerEngine};

const MS: Duration = Duration::from_millis(1);

/// The behaviour every executor must show: a sleep lasts at least its delay; a timeout
/// returns a quick future's output and gives up on a slow one; a thousand sleeps all end.
async fn exercise(engine: Arc<TimerEngine>) {
    let start = Instant::now();
    engine.sleep(MS * 20).await;
    assert!(start.elapsed() >= MS * 20);

    assert_eq!(engine.timeout(MS * 5_000, async { 42 }).await, Ok(42));
    let start = Instant::now();
    let slow = engine.sleep(Duration::from_secs(60));
    let gave_up: Result<(), Elapsed> = engine.timeout(MS * 10, slow).await;
    assert_eq!(gave_up.unwrap_err().to_string(), "deadline has elapsed");
    assert!(start.elapsed() >= MS * 10);

    let sleeps: Vec<_> = (0..1000u32).map(|i| engine.sleep(MS * (i % 25))).collect();
    for sleep in sleeps {
        sleep.await;
    }
}

#[test]
fn sleep_and_timeout_keep_their_deadlines_under_tokio() {
    let engine = Arc::new(TimerEngine::builder().build().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..4)
        .map(|_| runtime.spawn(exercise(engine.clone())))
        .collect();
    runtime.block_on(async {
        for task in tasks {
            task.await.unwrap();
        }
    });
}

#[test]
fn sleep_and_timeout_keep_their_deadlines_under_async_executor() {
    let engine = Arc::new(TimerEngine::builder().build().unwrap());
    let executor = async_executor::Executor::new();
    let tasks: Vec<_> = (0..4)
        .map(|_| executor.spawn(exercise(engine.clone())))
        .collect();
    futures_lite::future::block_on(executor.run(async {
        for task in tasks {
            task.await;
        }
    }));
}

#[test]
fn sleep_and_timeout_keep_their_deadlines_under_futures_executor() {
    let engine = Arc::new(TimerEngine::builder().build().unwrap());
    futures::executor::block_on(exercise(engine.clone()));
    let mut pool = futures::executor::LocalPool::new();
    use futures::task::LocalSpawnExt;
    for _ in 0..4 {
        pool.spawner()
            .spawn_local(exercise(engine.clone()))
            .unwrap();
    }
    pool.run();
}

#[test]
fn a_sleep_wakes_its_task_exactly_when_due() {
    let (clock, engine, waker, woken) = on_manual_clock();
    let mut sleep = engine.sleep(MS * 10);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS * 9);
    assert_eq!(woken(), 0);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert_eq!(woken(), 1, "woken by the engine");
    assert!(sleep.is_elapsed());
    assert!(poll_once(&mut sleep, &waker).is_ready());
}

/// `is_elapsed` says what the next poll does, also while the clock has reached the deadline
/// and the shard has not yet turned that tick (here it is held inside a callback of that tick).
#[test]
fn is_elapsed_agrees_with_a_poll_while_the_shard_is_behind_the_clock() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(1)
        .inline_callbacks()
        .build()
        .unwrap();
    let (started, has_started) = mpsc::channel();
    let (go, wait_for_go) = mpsc::channel::<()>();
    engine
        .schedule(MS, move || {
            started.send(()).unwrap();
            let _ = wait_for_go.recv();
        })
        .unwrap();
    let mut sleep = engine.sleep(MS);
    let advancing = {
        let clock = clock.clone();
        thread::spawn(move || clock.advance(MS))
    };
    has_started.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(clock.elapsed(), MS, "the clock is at the deadline");
    assert!(
        !sleep.is_elapsed(),
        "the shard has not turned the deadline's tick"
    );
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
    drop(go);
    advancing.join().unwrap();
    assert!(sleep.is_elapsed(), "the next turn fired the sleep's timer");
    assert!(poll_once(&mut sleep, Waker::noop()).is_ready());
}

#[test]
fn a_sleep_polled_by_another_task_wakes_that_task() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let first = Arc::new(CountingWaker::default());
    let second = Arc::new(CountingWaker::default());
    let mut sleep = engine.sleep(MS);
    assert!(poll_once(&mut sleep, &Waker::from(first.clone())).is_pending());
    assert!(poll_once(&mut sleep, &Waker::from(second.clone())).is_pending());
    assert_eq!(engine.pending(), 1, "the first timer is swapped, not kept");
    clock.advance(MS);
    assert_eq!(first.count(), 0);
    assert_eq!(second.count(), 1);
    assert!(poll_once(&mut sleep, &Waker::from(second)).is_ready());
    assert_eq!(engine.stats().cancelled, 1);
}

#[test]
fn dropping_a_sleep_cancels_its_timer() {
    let engine = TimerEngine::builder().build().unwrap();
    let mut sleeps: Vec<_> = (0..100)
        .map(|_| engine.sleep(Duration::from_secs(60)))
        .collect();
    // A sleep takes its timer when first polled.
    assert_eq!(engine.pending(), 0);
    for sleep in &mut sleeps {
        assert!(poll_once(sleep, Waker::noop()).is_pending());
    }
    assert_eq!(engine.pending(), 100);
    drop(sleeps);
    assert_eq!(engine.pending(), 0);
    assert_eq!(engine.stats().cancelled, 100);
}

#[test]
fn dropping_a_pending_sleep_or_timeout_does_not_wake_its_task() {
    let clock = ManualClock::new();
    let engine = one_shard_on(&clock);
    let wakes = Arc::new(CountingWaker::default());
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);

    let mut sleep = Box::pin(engine.sleep(Duration::from_secs(10)));
    assert!(sleep.as_mut().poll(&mut cx).is_pending());
    drop(sleep);
    assert_eq!(wakes.count(), 0, "woken by its own drop");

    // The RPC pattern: the response comes first, and the timeout is dropped.
    let answered = AtomicBool::new(false);
    let response = std::future::poll_fn(|_| {
        if answered.load(Ordering::SeqCst) {
            Poll::Ready(7)
        } else {
            Poll::Pending
        }
    });
    let mut call = Box::pin(engine.timeout(Duration::from_secs(10), response));
    assert!(call.as_mut().poll(&mut cx).is_pending());
    answered.store(true, Ordering::SeqCst);
    assert_eq!(call.as_mut().poll(&mut cx), Poll::Ready(Ok(7)));
    drop(call);
    clock.advance(Duration::from_secs(20));
    assert_eq!(wakes.count(), 0, "a finished timeout woke its task");
}

/// A waker that drops every sleep in a list when woken (tokio's `drop_from_wake` pattern).
struct DropsSleeps(Mutex<Vec<Pin<Box<Sleep>>>>);

impl Wake for DropsSleeps {
    fn wake(self: Arc<Self>) {
        self.0.lock().unwrap().clear();
    }
}

#[test]
fn a_waker_that_drops_sleeps_when_woken_does_not_deadlock() {
    let clock = ManualClock::new();
    let engine = one_shard_on(&clock);
    let sleeps = Arc::new(DropsSleeps(Mutex::new(Vec::new())));
    let waker = Waker::from(sleeps.clone());
    let mut cx = Context::from_waker(&waker);
    {
        let mut list = sleeps.0.lock().unwrap();
        list.push(Box::pin(engine.sleep(Duration::from_millis(10))));
        list.push(Box::pin(engine.sleep(Duration::from_secs(10))));
        for sleep in list.iter_mut() {
            assert!(sleep.as_mut().poll(&mut cx).is_pending());
        }
    }
    let (done, advanced) = mpsc::channel();
    thread::spawn(move || {
        clock.advance(Duration::from_millis(20));
        done.send(()).unwrap();
    });
    advanced
        .recv_timeout(PATIENCE)
        .expect("the clock's advance returned");
    assert!(sleeps.0.lock().unwrap().is_empty());
}

#[test]
fn timeout_at_gives_up_at_its_deadline() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let deadline = engine.now() + MS * 10;
    let mut slow = engine.timeout_at(deadline, engine.sleep(Duration::from_secs(60)));
    assert!(poll_once(&mut slow, &waker).is_pending());
    clock.advance(MS * 9);
    assert!(poll_once(&mut slow, &waker).is_pending());
    clock.advance(MS);
    assert!(matches!(poll_once(&mut slow, &waker), Poll::Ready(Err(_))));
    // A future that completes in time gives its output.
    let mut quick = Box::pin(engine.timeout_at(engine.now() + MS * 10, async { 5 }));
    assert_eq!(poll_once(&mut quick, &waker), Poll::Ready(Ok(5)));
    // A deadline already past gives up once the shard has had its turn.
    let past = engine.timeout_at(engine.now() - MS, engine.sleep(Duration::from_secs(60)));
    assert!(futures::executor::block_on(past).is_err());
}

#[test]
fn a_timeout_gives_access_to_its_future() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let start = engine.now();
    let mut timeout = engine.timeout(MS * 100, engine.sleep(MS * 10));
    assert_eq!(timeout.get_ref().deadline(), Some(start + MS * 10));
    timeout.get_mut().reset(MS * 20);
    assert_eq!(timeout.get_ref().deadline(), Some(start + MS * 20));
    clock.advance(MS * 10);
    assert!(
        poll_once(&mut timeout, &waker).is_pending(),
        "moved by get_mut"
    );
    clock.advance(MS * 10);
    assert!(timeout.get_ref().is_elapsed());
    assert_eq!(poll_once(&mut timeout, &waker), Poll::Ready(Ok(())));
    drop(timeout);
    assert_eq!(engine.pending(), 0);

    // into_inner hands the future back and cancels the timeout's own timer.
    let mut timeout = engine.timeout(MS * 100, std::future::pending::<()>());
    assert_eq!(engine.pending(), 0, "no timer until polled");
    assert!(poll_once(&mut timeout, &waker).is_pending());
    assert_eq!(engine.pending(), 1);
    drop(timeout.into_inner());
    assert_eq!(engine.pending(), 0);
    let timeout = engine.timeout(MS * 100, futures::future::ready(9));
    let inner = timeout.into_inner();
    assert_eq!(engine.pending(), 0);
    assert_eq!(inner.now_or_never(), Some(9));
}

#[test]
fn a_sleep_wakes_its_task_at_shutdown_and_never_ends_early() {
    let engine = TimerEngine::builder().build().unwrap();
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(counter.clone());
    let mut sleep = engine.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut sleep, &waker).is_pending());
    drop(engine.shutdown());
    assert_eq!(counter.count(), 1, "woken by the shutdown");
    assert!(poll_once(&mut sleep, &waker).is_pending());
    assert_eq!(sleep.refused(), Some(ScheduleErrorKind::Shutdown));
    // And a sleep asked of a stopped engine never ends either.
    let mut late = engine.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut late, &waker).is_pending());
    assert_eq!(engine.pending(), 0);
}

#[test]
fn the_try_forms_refuse_with_shutdown_where_the_plain_forms_wait_and_say_why() {
    let engine = TimerEngine::builder().build().unwrap();
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let in_time = engine.now() + Duration::from_secs(60);
    // Before shutdown they are ordinary sleeps and timeouts.
    let mut sleep = engine.try_sleep(Duration::from_secs(60)).unwrap();
    assert!(poll_once(&mut sleep, &waker).is_pending());
    let mut timeout = engine
        .try_timeout_at(in_time, engine.sleep(Duration::from_secs(60)))
        .unwrap();
    assert!(poll_once(&mut timeout, &waker).is_pending());
    drop(engine.shutdown());

    let shutdown = Some(ScheduleError::Shutdown(()));
    assert_eq!(engine.try_sleep(MS).err(), shutdown);
    assert_eq!(engine.try_sleep_until(in_time).err(), shutdown);
    assert_eq!(engine.try_timeout(MS, async {}).err(), shutdown);
    assert_eq!(engine.try_timeout_at(in_time, async {}).err(), shutdown);
    // The plain forms never elapse instead, and say why.
    let mut sleep = engine.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut sleep, &waker).is_pending());
    assert_eq!(sleep.refused(), Some(ScheduleErrorKind::Shutdown));
    let pending = std::future::pending::<()>();
    let mut timeout = engine.timeout(Duration::from_secs(60), pending);
    assert!((&mut timeout).now_or_never().is_none());
    assert_eq!(timeout.refused(), Some(ScheduleErrorKind::Shutdown));
}

#[test]
fn the_try_forms_refuse_with_full_where_the_plain_forms_wait_and_say_why() {
    let engine = TimerEngine::builder().max_pending(2).build().unwrap();
    let in_time = engine.now() + Duration::from_secs(60);
    let mut held = engine.try_sleep(Duration::from_secs(60)).unwrap();
    let mut also = engine.try_sleep_until(in_time).unwrap();
    // Not full yet: the sleeps take their timers when polled.
    assert!(engine.try_sleep(Duration::from_secs(60)).is_ok());
    assert!(poll_once(&mut held, Waker::noop()).is_pending());
    assert!(poll_once(&mut also, Waker::noop()).is_pending());
    assert_eq!(engine.pending(), 2);

    let full = Some(ScheduleError::Full(()));
    assert_eq!(engine.try_sleep(Duration::from_secs(60)).err(), full);
    assert_eq!(engine.try_sleep_until(in_time).err(), full);
    assert_eq!(
        engine.try_timeout(Duration::from_secs(60), async {}).err(),
        full
    );
    assert_eq!(engine.try_timeout_at(in_time, async {}).err(), full);
    // The plain forms wait for a permit instead, and say why.
    let mut sleep = engine.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
    assert_eq!(sleep.refused(), Some(ScheduleErrorKind::Full));
    let pending = std::future::pending::<()>();
    let mut timeout = engine.timeout(Duration::from_secs(60), pending);
    assert!((&mut timeout).now_or_never().is_none());
    assert_eq!(timeout.refused(), Some(ScheduleErrorKind::Full));
    assert_eq!(engine.pending(), 2);
}

#[test]
fn a_sleep_beyond_the_range_is_no_error_and_never_ends() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(counter.clone());
    let far = engine.max_delay() * 2;
    let mut sleep = engine.try_sleep(far).unwrap();
    let mut timeout = Box::pin(
        engine
            .try_timeout(far, std::future::pending::<()>())
            .unwrap(),
    );
    let mut forever = engine.sleep(Duration::MAX);
    assert_eq!(sleep.deadline(), None);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    assert!(poll_once(&mut timeout, &waker).is_pending());
    assert!(poll_once(&mut forever, &waker).is_pending());
    // Each holds a stand-in timer at the farthest deadline the engine takes.
    assert_eq!(engine.pending(), 3);
    // Past the stand-ins' deadline: they come due and are renewed; the sleeps go on.
    clock.advance(engine.max_delay() + Duration::from_secs(1));
    for _ in 0..2 {
        assert!(!sleep.is_elapsed());
        assert!(poll_once(&mut sleep, &waker).is_pending());
        assert!(poll_once(&mut timeout, &waker).is_pending());
        assert!(poll_once(&mut forever, &waker).is_pending());
    }
    assert_eq!(engine.pending(), 3);
    let woken = counter.count();
    // The shutdown hands the stand-ins back, which wakes the task; the sleeps go on.
    drop(engine.shutdown());
    assert!(counter.count() >= woken + 3);
    assert!(!sleep.is_elapsed());
    assert!(poll_once(&mut sleep, &waker).is_pending());
    assert!(poll_once(&mut timeout, &waker).is_pending());
    assert!(poll_once(&mut forever, &waker).is_pending());
    // After the shutdown, a far sleep is refused like any other.
    assert!(engine.try_sleep(far).is_err());
}

#[test]
fn a_sleep_s_deadline_is_its_deadline_rounded_up_to_the_tick() {
    let clock = ManualClock::new();
    let engine = one_shard_ticking(&clock, MS * 4);
    let start = engine.now();
    assert_eq!(engine.sleep(MS * 5).deadline(), Some(start + MS * 8));
    assert_eq!(engine.sleep(MS * 8).deadline(), Some(start + MS * 8));
}

#[test]
fn a_timeout_reset_moves_its_deadline_earlier_or_later() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let start = engine.now();
    let mut timeout = Box::pin(engine.timeout(MS * 10, std::future::pending::<()>()));
    assert!(poll_once(&mut timeout, &waker).is_pending());
    timeout.as_mut().reset(MS * 30);
    assert_eq!(timeout.deadline(), Some(start + MS * 30));
    timeout.as_mut().reset_at(start + MS * 20);
    assert_eq!(timeout.deadline(), Some(start + MS * 20));
    clock.advance(MS * 19);
    assert!(poll_once(&mut timeout, &waker).is_pending());
    clock.advance(MS);
    assert!(matches!(
        poll_once(&mut timeout, &waker),
        Poll::Ready(Err(_))
    ));
}

#[test]
fn an_elapsed_timeout_is_a_timed_out_io_error() {
    let engine = TimerEngine::builder().build().unwrap();
    let read = async {
        engine
            .timeout(Duration::ZERO, std::future::pending::<()>())
            .await?;
        Ok::<(), std::io::Error>(())
    };
    let error = futures::executor::block_on(read).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
}
