//! The engine's public face: [`TimerEngine`] and its scheduling calls (the path of one
//! schedule is in the design map).

use std::future::IntoFuture;
use std::panic::Location;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::closing::Phase;
use super::error::ScheduleError;
use super::pending::{PendingTimers, SnapshotError};
use super::repeat::RepeatBuilder;
use super::shared::EngineShared;
use super::shutdown::{Engine, Threads, Unfired};
use super::stats::Stats;
use crate::shard::{Lane, Memory, OneShot, Origin, Stopped};
use crate::sync::{Arc, StdArc};
use crate::time::Due;

use crate::timer::{Interval, Sleep, Timeout, TimerHandle};

/// A sharded timer engine. See the [crate documentation](crate) for an overview.
///
/// A clone is one more reference to the same engine. Dropping the last one shuts the engine
/// down as [`shutdown`](Self::shutdown) does, dropping the timers that never ran; it waits for
/// the callbacks running then, never for a task, so it is safe on an async worker thread.
#[derive(Clone)]
pub struct TimerEngine {
    engine: StdArc<Engine>,
}

impl TimerEngine {
    pub(super) fn new(shared: Arc<EngineShared>, threads: Threads) -> Self {
        TimerEngine {
            engine: StdArc::new(Engine::new(shared, threads)),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<EngineShared> {
        &self.engine.shared
    }

    pub(super) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(super) fn add_shard_thread(&self, thread: JoinHandle<Stopped>) {
        if let Phase::Running(threads) = &mut *self.engine.shutdown.lock() {
            threads.shard_threads.push(thread);
        }
    }

    /// Runs `callback` once `delay` has passed (at the first tick at or after it). A zero delay
    /// fires on the shard's next turn.
    ///
    /// # Errors
    /// Hands the callback back in [`ScheduleError::DelayTooLong`] if `delay` exceeds
    /// [`max_delay`](Self::max_delay), in [`ScheduleError::Full`] if the engine's cap is
    /// reached, and in [`ScheduleError::Shutdown`] after shutdown.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// engine.schedule(Duration::from_millis(5), move || tx.send("timeout").unwrap()).unwrap();
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("timeout"));
    /// ```
    #[track_caller]
    pub fn schedule<F>(&self, delay: Duration, callback: F) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let due = self.shared().clock.due_after(delay);
        self.schedule_routed(None, due, callback, Location::caller())
    }

    /// Runs `callback` at `deadline` (at the first tick at or after it). A deadline already
    /// past fires on the shard's next turn.
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    #[track_caller]
    pub fn schedule_at<F>(
        &self,
        deadline: Instant,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let due = self.shared().clock.due_at(deadline);
        self.schedule_routed(None, due, callback, Location::caller())
    }

    /// As [`schedule`](Self::schedule), routed by `key` (a connection id, say): timers with
    /// the same key go to the same shard.
    #[track_caller]
    pub fn schedule_keyed<F>(
        &self,
        key: u64,
        delay: Duration,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let due = self.shared().clock.due_after(delay);
        self.schedule_routed(Some(key), due, callback, Location::caller())
    }

    /// As [`schedule_at`](Self::schedule_at), routed by `key`.
    #[track_caller]
    pub fn schedule_keyed_at<F>(
        &self,
        key: u64,
        deadline: Instant,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let due = self.shared().clock.due_at(deadline);
        self.schedule_routed(Some(key), due, callback, Location::caller())
    }

    /// Sets up a repeating timer of period `period` (see [`RepeatBuilder`] for how it runs):
    /// by default at a fixed rate, its first run one period from now, routed as
    /// [`schedule`](Self::schedule) routes; [`RepeatBuilder::schedule`] schedules it.
    pub fn repeating(&self, period: Duration) -> RepeatBuilder<'_> {
        RepeatBuilder::new(self.shared(), period)
    }

    /// A future that completes `delay` from now, never before, woken by the engine under any
    /// executor. Dropping it cancels its timer. At the cap it waits for a permit; after shutdown
    /// a fallback thread of the process times it ([`Sleep::refused`] says why). Beyond
    /// [`max_delay`](Self::max_delay) it never completes. A [`deadline`](crate::deadline) scope does not shorten it: a sleep
    /// is a wait, not a deadline.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let start = Instant::now();
    /// futures::executor::block_on(engine.sleep(Duration::from_millis(20)));
    /// assert!(start.elapsed() >= Duration::from_millis(20));
    /// ```
    #[track_caller]
    pub fn sleep(&self, delay: Duration) -> Sleep {
        let lane = self.shared().lane_for_task();
        Sleep::on(lane, self.shared().clock.tick_after(delay))
    }

    /// As [`sleep`](Self::sleep), until `deadline`; [`try_sleep_until`](Self::try_sleep_until)
    /// tells a refusal apart.
    #[track_caller]
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        let lane = self.shared().lane_for_task();
        Sleep::on(lane, self.shared().clock.tick_at(deadline))
    }

    /// As [`sleep`](Self::sleep), but a sleep the engine would refuse now is an error. A delay
    /// beyond [`max_delay`](Self::max_delay) is not: that sleep never ends.
    ///
    /// # Errors
    /// [`ScheduleError::Shutdown`] after shutdown, [`ScheduleError::Full`] at the cap, as of
    /// the call; a refusal when the sleep is first polled is a [`sleep`](Self::sleep)'s.
    #[track_caller]
    pub fn try_sleep(&self, delay: Duration) -> Result<Sleep, ScheduleError<()>> {
        let lane = self.shared().lane_for_task();
        Sleep::try_on(lane, self.shared().clock.tick_after(delay))
            .map_err(|refusal| ScheduleError::refused(refusal, ()))
    }

    /// As [`try_sleep`](Self::try_sleep), until `deadline`.
    ///
    /// # Errors
    /// As [`try_sleep`](Self::try_sleep).
    #[track_caller]
    pub fn try_sleep_until(&self, deadline: Instant) -> Result<Sleep, ScheduleError<()>> {
        let lane = self.shared().lane_for_task();
        Sleep::try_on(lane, self.shared().clock.tick_at(deadline))
            .map_err(|refusal| ScheduleError::refused(refusal, ()))
    }

    /// Runs `future` until `delay` has passed: its output, or [`Elapsed`](crate::Elapsed) if the
    /// deadline came first (the future is then dropped with the `Timeout`). Its deadline is a
    /// [`sleep`](Self::sleep)'s: after shutdown too it comes, never early.
    /// Inside a deadline scope ([`deadline`](crate::deadline)) it ends by the scope's deadline.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let quick = futures::executor::block_on(engine.timeout(Duration::from_secs(5), async { 7 }));
    /// assert_eq!(quick, Ok(7));
    /// let slow = engine.timeout(Duration::from_millis(5), engine.sleep(Duration::from_secs(60)));
    /// assert!(futures::executor::block_on(slow).is_err());
    /// ```
    #[track_caller]
    #[inline]
    pub fn timeout<F: IntoFuture>(&self, delay: Duration, future: F) -> Timeout<F::IntoFuture> {
        let (tick, clamp) = self.clamped(self.shared().clock.tick_after(delay));
        let sleep = Sleep::on(self.shared().lane_for_task(), tick);
        Timeout::clamped(future.into_future(), sleep, clamp)
    }

    /// As [`timeout`](Self::timeout), giving up at `deadline`;
    /// [`try_timeout_at`](Self::try_timeout_at) tells a refusal apart.
    #[track_caller]
    #[inline]
    pub fn timeout_at<F: IntoFuture>(
        &self,
        deadline: Instant,
        future: F,
    ) -> Timeout<F::IntoFuture> {
        let (tick, clamp) = self.clamped(self.shared().clock.tick_at(deadline));
        let sleep = Sleep::on(self.shared().lane_for_task(), tick);
        Timeout::clamped(future.into_future(), sleep, clamp)
    }

    /// As [`timeout`](Self::timeout), but a timeout the engine would refuse now is an error
    /// (and `future` is dropped).
    ///
    /// # Errors
    /// As [`try_sleep`](Self::try_sleep).
    #[track_caller]
    #[inline]
    pub fn try_timeout<F: IntoFuture>(
        &self,
        delay: Duration,
        future: F,
    ) -> Result<Timeout<F::IntoFuture>, ScheduleError<()>> {
        let (tick, clamp) = self.clamped(self.shared().clock.tick_after(delay));
        let sleep = Sleep::try_on(self.shared().lane_for_task(), tick)
            .map_err(|refusal| ScheduleError::refused(refusal, ()))?;
        Ok(Timeout::clamped(future.into_future(), sleep, clamp))
    }

    /// As [`try_timeout`](Self::try_timeout), giving up at `deadline`.
    ///
    /// # Errors
    /// As [`try_sleep`](Self::try_sleep).
    #[track_caller]
    #[inline]
    pub fn try_timeout_at<F: IntoFuture>(
        &self,
        deadline: Instant,
        future: F,
    ) -> Result<Timeout<F::IntoFuture>, ScheduleError<()>> {
        let (tick, clamp) = self.clamped(self.shared().clock.tick_at(deadline));
        let sleep = Sleep::try_on(self.shared().lane_for_task(), tick)
            .map_err(|refusal| ScheduleError::refused(refusal, ()))?;
        Ok(Timeout::clamped(future.into_future(), sleep, clamp))
    }

    /// Ticks every `period`, the first tick at once (at [`now`](Self::now)): as
    /// [`interval_at`](Self::interval_at) from now.
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let start = engine.now();
    /// let mut interval = engine.interval(Duration::from_secs(1));
    /// assert_eq!(interval.tick().now_or_never(), Some(start));
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(interval.tick().now_or_never(), Some(start + Duration::from_secs(1)));
    /// ```
    #[track_caller]
    pub fn interval(&self, period: Duration) -> Interval {
        self.interval_at(self.now(), period)
    }

    /// Ticks every `period`, the first tick due at `start`. A zero period (tokio panics) is one
    /// engine tick; [`try_interval_at`](Self::try_interval_at) refuses it.
    #[track_caller]
    pub fn interval_at(&self, start: Instant, period: Duration) -> Interval {
        Interval::new(self.shared().lane_for_task(), start, period)
    }

    /// As [`interval`](Self::interval), but a zero period, or a timer the engine would refuse
    /// now, is an error.
    ///
    /// # Errors
    /// [`ScheduleError::ZeroPeriod`] for a zero period, and those of
    /// [`try_sleep`](Self::try_sleep).
    #[track_caller]
    pub fn try_interval(&self, period: Duration) -> Result<Interval, ScheduleError<()>> {
        self.try_interval_at(self.now(), period)
    }

    /// As [`try_interval`](Self::try_interval), the first tick due at `start`.
    ///
    /// # Errors
    /// As [`try_interval`](Self::try_interval).
    #[track_caller]
    pub fn try_interval_at(
        &self,
        start: Instant,
        period: Duration,
    ) -> Result<Interval, ScheduleError<()>> {
        if period.is_zero() {
            return Err(ScheduleError::ZeroPeriod(()));
        }
        let lane = self.shared().lane_for_task();
        match lane.refusal_now() {
            Some(refusal) => Err(ScheduleError::refused(refusal, ())),
            None => Ok(Interval::new(lane, start, period)),
        }
    }

    /// Whether `sleep` was made on this engine (its timers go to one of the engine's shards).
    #[cfg(feature = "hyper")]
    pub(crate) fn made(&self, sleep: &Sleep) -> bool {
        sleep.shard().callbacks().engine() == self.shared().id
    }

    /// Routes and queues a timer `due` (at no tick: refused as too far away), by `route` if
    /// keyed, else to the calling thread's home shard; `site` scheduled it.
    pub(crate) fn schedule_routed<F>(
        &self,
        route: Option<u64>,
        due: Due,
        callback: F,
        site: &'static Location<'static>,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let access = self.shared().lane(route);
        let lane = access.lane();
        let memory = Memory::Lane { born: due.born };
        match Lane::schedule_as(access, due.tick, OneShot(callback), memory) {
            Ok(entry) => {
                lane.note(&entry, || Origin {
                    site: Some(site),
                    born: due.born,
                    key: route,
                });
                Ok(TimerHandle::of(entry, lane.clone()))
            }
            Err(refused) => Err(ScheduleError::not_queued(refused)),
        }
    }

    /// The longest delay `schedule` always accepts: the wheel's span less two ticks (about
    /// 2.2 years at a 1 ms tick).
    pub fn max_delay(&self) -> Duration {
        self.shared().clock.max_delay()
    }

    /// The engine's tick.
    pub fn tick(&self) -> Duration {
        self.shared().clock.tick()
    }

    /// The engine's current time: the system's monotonic clock, or its manual clock.
    pub fn now(&self) -> Instant {
        self.shared().clock.now()
    }

    /// The timers the engine holds: with a cap, the permits held (see
    /// [`max_pending`](crate::engine::Builder::max_pending)); else those neither fired, cancelled nor
    /// handed back ([`Stats::pending`]).
    pub fn pending(&self) -> u64 {
        match self.shared().shards[0].cap_used() {
            Some(used) => u64::try_from(used).unwrap_or(u64::MAX),
            None => self.stats().pending,
        }
    }

    /// The timers the engine holds, each with its deadline and [`Stage`]; with
    /// [`track_sites`](crate::engine::Builder::track_sites), its age, key and line too. Shards
    /// list theirs between turns, a fraction of a tick at a time; it waits for them 10 s at most.
    ///
    /// # Errors
    /// [`SnapshotError::Shutdown`] once the engine has shut down, [`SnapshotError::TimedOut`]
    /// if a shard did not answer in time.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwheel::stats::Stage;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build()?;
    /// let kept = engine.schedule(Duration::from_secs(30), || {})?;
    /// engine.schedule(Duration::from_secs(60), || {})?.cancel();
    /// clock.advance(Duration::from_millis(1)); // its shard links it
    /// let snapshot = engine.pending_timers()?;
    /// assert_eq!(snapshot.timers.len(), 1);
    /// assert_eq!(snapshot.timers[0].deadline, kept.deadline());
    /// assert_eq!(snapshot.timers[0].stage, Stage::Linked);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`Stage`]: crate::stats::Stage
    pub fn pending_timers(&self) -> Result<PendingTimers, SnapshotError> {
        self.shared().pending_timers()
    }

    /// A snapshot of the engine's counters.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().shards(2).build().unwrap();
    /// engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// let stats = engine.stats();
    /// assert_eq!(stats.scheduled, 1);
    /// assert_eq!(stats.pending, 1);
    /// assert_eq!(stats.shards.iter().map(|s| s.pending).sum::<u64>(), 1);
    /// ```
    pub fn stats(&self) -> Stats {
        self.shared().stats()
    }

    /// Stops the shards, waits for the callbacks running on the engine's own threads, and
    /// hands back every timer that neither fired nor was cancelled; later schedules are
    /// refused. A second call returns an empty list.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// let cancelled = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    /// cancelled.cancel();
    /// assert_eq!(engine.shutdown().len(), 1);
    /// assert!(engine.shutdown().is_empty());
    /// assert!(engine.schedule(Duration::from_secs(1), || {}).is_err());
    /// ```
    pub fn shutdown(&self) -> Vec<Unfired> {
        self.engine().shutdown()
    }

    /// Whether `shutdown` has been called (or the engine dropped). From then on every
    /// `schedule` is refused.
    pub fn is_shutdown(&self) -> bool {
        self.shared().is_shutdown()
    }
}

impl std::fmt::Debug for TimerEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerEngine")
            .field("tick", &self.tick())
            .field("stats", &self.stats())
            .finish()
    }
}
