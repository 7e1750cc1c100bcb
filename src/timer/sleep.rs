//! Async sleeps and timeouts, driven by the engine's shards with no runtime of their own.
//!
//! A [`Sleep`] is an ordinary timer whose callback wakes the task that polled it last. The
//! callback owns a `WakeOnDrop` guard that wakes on drop, so the sleep completes whether its
//! timer runs, is handed back at shutdown (and dropped or run there), or could not be
//! scheduled at all: a task awaiting a timeout never hangs because its engine went away.
//!
//! Dropping a `Sleep` cancels its timer and never wakes its task: the drop first takes the
//! registered waker out of the state it shares with the callback, so the guard that the cancel
//! drops finds none. (A waker is called when the timer fires or is handed back, never because
//! the sleep was dropped: a waker may itself drop sleeps, and would otherwise be re-entered.)

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::handle::TimerHandle;
use crate::entry::{Entry, EntryRef};
use crate::shard::Lane;
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};

/// What a sleep and its timer's callback share.
struct SleepState {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl SleepState {
    fn new() -> Arc<SleepState> {
        Arc::new(SleepState {
            fired: AtomicBool::new(false),
            waker: Mutex::new(None),
        })
    }

    fn fire(&self) {
        // Release: pairs with the Acquire in `poll`.
        self.fired.store(true, Ordering::Release);
        // The waker stays registered, so a sleep reset after it fired wakes the same task.
        let waker = self.waker.lock().clone();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn has_fired(&self) -> bool {
        // Acquire: pairs with the Release in `fire`.
        self.fired.load(Ordering::Acquire)
    }
}

/// Wakes the sleep when dropped: when the timer's callback runs, and also when the callback is
/// dropped without running (cancelled, or handed back at shutdown).
struct WakeOnDrop(Arc<SleepState>);

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        self.0.fire();
    }
}

/// A future that completes at a deadline. Made by [`TimerEngine::sleep`].
///
/// Dropping it cancels its timer. If the engine shuts down first, the sleep completes then.
///
/// [`TimerEngine::sleep`]: crate::TimerEngine::sleep
pub struct Sleep {
    wake: Arc<SleepState>,
    /// The timer, or `None` for a sleep the engine does not hold: one that never ends (a
    /// deadline beyond the engine's range) or one that ended at once (refused).
    timer: Option<TimerHandle>,
    /// Where to schedule a new timer on `reset`.
    lane: Arc<Lane>,
}

impl Sleep {
    /// A sleep on `lane`'s shard until `tick`.
    pub(crate) fn on(lane: &Arc<Lane>, tick: Option<u64>) -> Sleep {
        Sleep::with_wake(lane, tick, SleepState::new())
    }

    fn with_wake(lane: &Arc<Lane>, tick: Option<u64>, wake: Arc<SleepState>) -> Sleep {
        let refused = |wake| Sleep {
            wake,
            timer: None,
            lane: lane.clone(),
        };
        let Some(tick) = tick else {
            // Too far away to schedule: as good as forever.
            return refused(wake);
        };
        let Ok(tick) = lane.admit(Some(tick)) else {
            // Shut down, or full: the sleep ends now rather than never.
            wake.fire();
            return refused(wake);
        };
        let guard = WakeOnDrop(wake.clone());
        let entry = EntryRef::new(Entry::new(tick, Box::new(move || drop(guard))));
        match TimerHandle::enqueue(lane, Lane::ownership(lane), entry) {
            Ok(timer) => Sleep {
                wake,
                timer: Some(timer),
                lane: lane.clone(),
            },
            // Shutdown took it back: dropping the callback woke the sleep.
            Err(callback) => {
                drop(callback);
                refused(wake)
            }
        }
    }

    /// Whether the deadline has passed (the timer fired), or the engine let the sleep go.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let sleep = engine.sleep(Duration::from_secs(60));
    /// assert!(!sleep.is_elapsed());
    /// ```
    pub fn is_elapsed(&self) -> bool {
        self.wake.has_fired()
    }

    /// When the sleep ends, if it ever does: as [`TimerHandle::deadline`] (the requested
    /// deadline rounded up to the engine's tick).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let sleep = engine.sleep(Duration::from_secs(1));
    /// assert!(sleep.deadline().unwrap() > Instant::now());
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        self.timer.as_ref().map(TimerHandle::deadline)
    }

    /// Moves the sleep's deadline to `delay` from now, whether or not it has elapsed (a
    /// sleep that has elapsed starts over). Pushing a deadline later is one CAS.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut sleep = engine.sleep(Duration::from_millis(1));
    /// sleep.reset(Duration::from_secs(60));
    /// assert!(!sleep.is_elapsed());
    /// ```
    pub fn reset(&mut self, delay: Duration) {
        if let Some(timer) = &self.timer {
            if !self.wake.has_fired() && timer.reset(delay) {
                return;
            }
        }
        // It fired (or is firing), or the engine never held it: start over with a new timer,
        // keeping the waker the task registered. Replacing `self` cancels the old timer, whose
        // callback then wakes only the old `SleepState`.
        let wake = SleepState::new();
        let registered = self.wake.waker.lock().take();
        *wake.waker.lock() = registered;
        let lane = self.lane.clone();
        let tick = lane.shard().clock().tick_after(delay);
        *self = Sleep::with_wake(&lane, tick, wake);
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.wake.has_fired() {
            return Poll::Ready(());
        }
        {
            let mut slot = self.wake.waker.lock();
            match &*slot {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                _ => *slot = Some(cx.waker().clone()),
            }
        }
        // Fired between the first look and storing the waker: `fire` may have found no waker.
        if self.wake.has_fired() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(timer) = &self.timer {
            // Unregister the task first: the cancel drops the callback, whose guard would
            // otherwise wake it, here, inside the drop (see the module docs).
            let waker = self.wake.waker.lock().take();
            timer.cancel();
            drop(waker);
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("elapsed", &self.is_elapsed())
            .finish()
    }
}

pin_project_lite::pin_project! {
    /// A future that gives up at a deadline. Made by [`TimerEngine::timeout`].
    ///
    /// [`TimerEngine::timeout`]: crate::TimerEngine::timeout
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

impl<F> Timeout<F> {
    pub(crate) fn new(future: F, sleep: Sleep) -> Self {
        Timeout { future, sleep }
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match Pin::new(this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The error of a [`Timeout`] whose deadline passed before its future completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl Error for Elapsed {}
