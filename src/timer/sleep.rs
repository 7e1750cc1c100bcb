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
//!
//! # Refusals
//!
//! The engine refuses a timer when it has shut down or holds as many as its `max_pending` cap
//! allows (a shutdown that races the queueing counts as shut down). The plain constructors
//! (`sleep`, `sleep_until`, `timeout`, `timeout_at`) cannot fail: a sleep they could not
//! schedule completes at once, since a sleep that never completed would hang its task. That
//! completion looks like an elapse. The `try_` constructors tell the two apart: they return
//! `ScheduleError::Shutdown(())` or `ScheduleError::Full(())` instead of a sleep. Both kinds
//! share one scheduling path, `Sleep::schedule`, which reports the refusal; the plain forms
//! turn it into a sleep that has already ended. At the cap, a timer just cancelled (a sleep
//! dropped) frees its place on its shard's next turn, and one that fired once its callback
//! has returned, which may be after the woken task runs (see `Builder::max_pending`): a sleep
//! made right after can still be refused, and end at once. A deadline beyond the engine's
//! `max_delay` is not a refusal for either kind: such a sleep ends only when the engine shuts
//! down (a reset can still bring it within range). It holds a stand-in timer at the farthest
//! deadline the engine takes, renewed whenever it comes due, so that the shutdown hands it
//! back and wakes the task like any other.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::handle::TimerHandle;
use super::schedule::{fresh, schedule, OneShot};
use crate::shard::{Lane, Refusal};
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
use crate::time::TickClock;

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

/// A future that completes at a deadline. Made by [`TimerEngine::sleep`] and
/// [`TimerEngine::sleep_until`] (which complete at once if the engine refuses the timer), or
/// by [`TimerEngine::try_sleep`] and [`TimerEngine::try_sleep_until`] (which return the
/// refusal instead).
///
/// Dropping it cancels its timer. If the engine shuts down first, the sleep completes then.
///
/// [`TimerEngine::sleep`]: crate::TimerEngine::sleep
/// [`TimerEngine::sleep_until`]: crate::TimerEngine::sleep_until
/// [`TimerEngine::try_sleep`]: crate::TimerEngine::try_sleep
/// [`TimerEngine::try_sleep_until`]: crate::TimerEngine::try_sleep_until
pub struct Sleep {
    wake: Arc<SleepState>,
    /// The timer, or `None` for a sleep the engine does not hold: one that ended at once
    /// (refused), or a far one at the end of a manual clock's time, where no timer fits.
    timer: Option<TimerHandle>,
    /// The deadline is beyond the engine's range: the sleep ends only at shutdown, and its
    /// timer is a stand-in at the farthest deadline, renewed when it comes due.
    far: bool,
    /// Where to schedule a new timer on `reset`.
    lane: Arc<Lane>,
}

impl Sleep {
    /// A sleep on `lane`'s shard until `tick` (`None`: never). One the shard refuses has
    /// ended already.
    pub(crate) fn on(lane: &Arc<Lane>, tick: Option<u64>) -> Sleep {
        Sleep::with_wake(lane, tick, SleepState::new())
    }

    /// As [`on`](Self::on), but a refusal (shut down, or full) is returned, not turned into a
    /// sleep that has ended.
    pub(crate) fn try_on(lane: &Arc<Lane>, tick: Option<u64>) -> Result<Sleep, Refusal> {
        Sleep::schedule(lane, tick, SleepState::new()).map_err(|(refusal, _)| refusal)
    }

    /// A sleep sharing `wake`; a refusal ends it at once rather than never.
    fn with_wake(lane: &Arc<Lane>, tick: Option<u64>, wake: Arc<SleepState>) -> Sleep {
        Sleep::schedule(lane, tick, wake).unwrap_or_else(|(_, wake)| {
            // The refused callback fired `wake` as it was dropped, by dropping its guard.
            Sleep::unheld(lane, wake, false)
        })
    }

    /// Schedules a timer that fires `wake` at `tick`, or, for `None` (too far away: as good as
    /// forever), a stand-in at the farthest tick the engine takes. The only path by which a
    /// sleep gets a timer (through `timer::schedule`). On a refusal, hands `wake` back
    /// with it, fired: the callback that was not queued dropped its guard.
    fn schedule(
        lane: &Arc<Lane>,
        tick: Option<u64>,
        wake: Arc<SleepState>,
    ) -> Result<Sleep, (Refusal, Arc<SleepState>)> {
        let far = tick.is_none();
        let Some(tick) = tick.or_else(|| lane.shard().clock().farthest_tick()) else {
            // The end of a manual clock's time: no tick is left to hold a stand-in at.
            return Ok(Sleep::unheld(lane, wake, true));
        };
        let guard = WakeOnDrop(wake.clone());
        match schedule(lane, Some(tick), OneShot(move || drop(guard)), fresh) {
            Ok(timer) => Ok(Sleep {
                wake,
                timer: Some(timer),
                far,
                lane: lane.clone(),
            }),
            // Dropping the callback (the guard) fires `wake`: the sleep has ended.
            Err((refusal, callback)) => {
                drop(callback);
                Err((refusal, wake))
            }
        }
    }

    /// A sleep the engine does not hold: `far`, or ended (`wake` fired).
    fn unheld(lane: &Arc<Lane>, wake: Arc<SleepState>, far: bool) -> Sleep {
        Sleep {
            wake,
            timer: None,
            far,
            lane: lane.clone(),
        }
    }

    /// The clock of the engine the sleep belongs to.
    pub(super) fn clock(&self) -> &TickClock {
        self.lane.shard().clock()
    }

    /// The shard the sleep's timers go to, which tells the engine it belongs to.
    #[cfg(feature = "hyper")]
    pub(crate) fn shard(&self) -> &crate::shard::ShardCore {
        self.lane.shard()
    }

    /// Whether the engine the sleep belongs to has shut down.
    pub(super) fn engine_stopped(&self) -> bool {
        self.lane.shard().is_stopped()
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
        self.wake.has_fired() && !self.stand_in_came_due()
    }

    /// Whether a far sleep's stand-in timer came due (or was handed back) while the engine
    /// still runs: the sleep has not ended, and `poll` renews the stand-in.
    fn stand_in_came_due(&self) -> bool {
        self.far && !self.engine_stopped()
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
        if self.far {
            return None;
        }
        self.timer.as_ref().map(TimerHandle::deadline)
    }

    /// Moves the sleep's deadline to `delay` from now, whether or not it has elapsed (a
    /// sleep that has elapsed starts over). Pushing a deadline later is one CAS. As with
    /// [`TimerEngine::sleep`], a new timer the engine refuses (shut down, or at its cap) ends
    /// the sleep at once, and one beyond [`max_delay`] ends it only at shutdown.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut sleep = engine.sleep(Duration::from_millis(1));
    /// sleep.reset(Duration::from_secs(60));
    /// assert!(!sleep.is_elapsed());
    /// ```
    ///
    /// [`TimerEngine::sleep`]: crate::TimerEngine::sleep
    /// [`max_delay`]: crate::TimerEngine::max_delay
    pub fn reset(&mut self, delay: Duration) {
        let tick = self.clock().tick_after(delay);
        self.reset_to(tick);
    }

    /// As [`reset`](Self::reset), to an absolute deadline, earlier or later than the one
    /// before. A deadline already past ends the sleep on the shard's next turn.
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let mut sleep = engine.sleep(Duration::from_secs(60));
    /// sleep.reset_at(engine.now() + Duration::from_secs(5));
    /// clock.advance(Duration::from_secs(4));
    /// assert!((&mut sleep).now_or_never().is_none());
    /// clock.advance(Duration::from_secs(1));
    /// assert!(sleep.now_or_never().is_some());
    /// ```
    pub fn reset_at(&mut self, deadline: Instant) {
        let tick = self.clock().tick_at(deadline);
        self.reset_to(tick);
    }

    /// Moves the sleep to `tick` (`None`: never), as `reset` and `reset_at` describe.
    pub(super) fn reset_to(&mut self, tick: Option<u64>) {
        // A refusal has ended the sleep, as the plain constructors do.
        let _ = self.try_reset_to(tick);
    }

    /// As `reset_to`, telling of a new timer the engine refused (the sleep has then ended).
    pub(crate) fn try_reset_to(&mut self, tick: Option<u64>) -> Result<(), Refusal> {
        if let Some(timer) = &self.timer {
            if !self.wake.has_fired() && timer.move_to(tick) {
                // `move_to` takes only a tick in range: the sleep is not far any more.
                self.far = false;
                return Ok(());
            }
        }
        // It fired (or is firing), or the engine never held it: start over with a new timer,
        // keeping the waker the task registered. Replacing `self` cancels the old timer, whose
        // callback then wakes only the old `SleepState`.
        let wake = SleepState::new();
        let registered = self.wake.waker.lock().take();
        *wake.waker.lock() = registered;
        let lane = self.lane.clone();
        let (sleep, refused) = match Sleep::schedule(&lane, tick, wake) {
            Ok(sleep) => (sleep, Ok(())),
            // The refused callback fired `wake` as it was dropped: the sleep has ended.
            Err((refusal, wake)) => (Sleep::unheld(&lane, wake, false), Err(refusal)),
        };
        *self = sleep;
        refused
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        loop {
            if this.wake.has_fired() {
                if !this.stand_in_came_due() {
                    return Poll::Ready(());
                }
                // A far sleep's stand-in came due: renew it. A refusal ends the sleep (see
                // `reset_to`); a shutdown meanwhile hands the new stand-in back.
                this.reset_to(None);
                continue;
            }
            {
                let mut slot = this.wake.waker.lock();
                match &*slot {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    _ => *slot = Some(cx.waker().clone()),
                }
            }
            // Fired between the first look and storing the waker: `fire` may have found no
            // waker. Look again.
            if !this.wake.has_fired() {
                return Poll::Pending;
            }
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
    /// A future that gives up at a deadline. Made by [`TimerEngine::timeout`] and
    /// [`TimerEngine::timeout_at`] (which elapse at once if the engine refuses the timer), or
    /// by [`TimerEngine::try_timeout`] and [`TimerEngine::try_timeout_at`] (which return the
    /// refusal instead).
    ///
    /// [`TimerEngine::timeout`]: crate::TimerEngine::timeout
    /// [`TimerEngine::timeout_at`]: crate::TimerEngine::timeout_at
    /// [`TimerEngine::try_timeout`]: crate::TimerEngine::try_timeout
    /// [`TimerEngine::try_timeout_at`]: crate::TimerEngine::try_timeout_at
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

impl<F> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("sleep", &self.sleep)
            .finish_non_exhaustive()
    }
}

impl<F> Timeout<F> {
    pub(crate) fn new(future: F, sleep: Sleep) -> Self {
        Timeout { future, sleep }
    }

    /// The future the timeout runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let inner = engine.sleep(Duration::from_secs(60));
    /// let timeout = engine.timeout(Duration::from_secs(1), inner);
    /// assert!(!timeout.get_ref().is_elapsed());
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The future the timeout runs, to change it. (A timeout that has been pinned gives this
    /// access only if it is `Unpin`.)
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let inner = engine.sleep(Duration::from_secs(60));
    /// let mut timeout = engine.timeout(Duration::from_secs(1), inner);
    /// timeout.get_mut().reset(Duration::from_secs(120));
    /// let moved = timeout.get_ref().deadline().unwrap();
    /// assert!(moved > engine.now() + Duration::from_secs(60));
    /// ```
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The future the timeout runs, without the timeout (whose timer is cancelled).
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let inner = engine.sleep(Duration::from_secs(60));
    /// let timeout = engine.timeout(Duration::from_secs(1), inner);
    /// assert_eq!(engine.pending(), 2);
    /// let inner = timeout.into_inner();
    /// assert_eq!(engine.pending(), 1);
    /// # drop(inner);
    /// ```
    pub fn into_inner(self) -> F {
        self.future
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
