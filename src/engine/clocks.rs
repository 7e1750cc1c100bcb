//! The engine's calls on the boot and wall clocks (see `clock`): a timer, a sleep and a
//! timeout on either, chosen per call; the monotonic calls are untouched.

use std::future::IntoFuture;
use std::panic::Location;
use std::sync::Weak;
use std::time::{Duration, SystemTime};

use super::api::TimerEngine;
use super::error::ScheduleError;
use crate::clock::{ClockSleep, ClockTimers, OnClock, Waiting};
use crate::shard::{Lane, Memory, Origin, Retime};
use crate::sync::StdArc;
use crate::time::{OtherDeadline, Tick, TickClock};
use crate::timer::{Timeout, TimerHandle};

impl TimerEngine {
    /// Runs `callback` once `delay` has passed on the boot clock, which counts the time the
    /// machine slept (a monotonic deadline does not): one whose deadline passed during a
    /// suspend runs at once on resume. Cancel and shutdown as for [`schedule`](Self::schedule).
    ///
    /// # Errors
    /// [`ScheduleError::ClockUnsupported`] where the platform has no boot clock; else as
    /// `schedule`, but no delay is too long (a far one is looked at again on the way).
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build()?;
    /// let refresh = engine.schedule_boot(Duration::from_secs(600), || { /* the token */ })?;
    /// let plain = engine.schedule(Duration::from_secs(600), || {})?;
    /// clock.suspend(Duration::from_secs(3600)); // the laptop slept an hour
    /// assert_eq!(refresh.state(), shardwheel::TimerState::Fired);
    /// assert_eq!(plain.state(), shardwheel::TimerState::Pending);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn schedule_boot<F>(
        &self,
        delay: Duration,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        match self.shared().clock.boot_after(delay) {
            Some(deadline) => self.schedule_on(deadline, callback, Location::caller()),
            None => Err(ScheduleError::ClockUnsupported(callback)),
        }
    }

    /// Runs `callback` at `deadline` on the wall clock ("at 03:00", "when the certificate
    /// expires"), never before it: a step of the clock forward past it runs it at once, a step
    /// back delays it. Cancel and shutdown as for [`schedule`](Self::schedule).
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule), but no deadline is too far.
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build()?;
    /// let at = clock.wall() + Duration::from_secs(3600);
    /// let rotate = engine.schedule_at_wall(at, || { /* rotate the logs */ })?;
    /// clock.set_wall(at); // NTP steps the clock an hour forward
    /// assert_eq!(rotate.state(), shardwheel::TimerState::Fired);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn schedule_at_wall<F>(
        &self,
        deadline: SystemTime,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.schedule_on(TickClock::wall_at(deadline), callback, Location::caller())
    }

    /// As [`sleep`](Self::sleep), `delay` on the boot clock, as
    /// [`schedule_boot`](Self::schedule_boot) counts it.
    ///
    /// # Errors
    /// [`ScheduleError::ClockUnsupported`] where the platform has no boot clock.
    #[track_caller]
    pub fn sleep_boot(&self, delay: Duration) -> Result<ClockSleep, ScheduleError<()>> {
        match self.shared().clock.boot_after(delay) {
            Some(deadline) => Ok(self.sleep_on(deadline, None)),
            None => Err(ScheduleError::ClockUnsupported(())),
        }
    }

    /// As [`sleep_until`](Self::sleep_until), until `deadline` on the wall clock, as
    /// [`schedule_at_wall`](Self::schedule_at_wall) times it.
    #[track_caller]
    pub fn sleep_until_wall(&self, deadline: SystemTime) -> ClockSleep {
        self.sleep_on(TickClock::wall_at(deadline), None)
    }

    /// As [`timeout`](Self::timeout), `delay` on the boot clock; inside a deadline scope, it
    /// ends by the scope's deadline too, whichever comes first, each on its own clock.
    ///
    /// # Errors
    /// [`ScheduleError::ClockUnsupported`], with `future`, where there is no boot clock.
    #[track_caller]
    pub fn timeout_boot<F: IntoFuture>(
        &self,
        delay: Duration,
        future: F,
    ) -> Result<Timeout<F::IntoFuture, ClockSleep>, ScheduleError<F>> {
        match self.shared().clock.boot_after(delay) {
            Some(deadline) => Ok(self.timeout_on(deadline, future)),
            None => Err(ScheduleError::ClockUnsupported(future)),
        }
    }

    /// As [`timeout_at`](Self::timeout_at), giving up at `deadline` on the wall clock; inside
    /// a deadline scope, by the scope's deadline too, as [`timeout_boot`](Self::timeout_boot).
    #[track_caller]
    pub fn timeout_at_wall<F: IntoFuture>(
        &self,
        deadline: SystemTime,
        future: F,
    ) -> Timeout<F::IntoFuture, ClockSleep> {
        self.timeout_on(TickClock::wall_at(deadline), future)
    }

    /// A timeout until `deadline`, or the current deadline scope's if that comes first.
    #[track_caller]
    fn timeout_on<F: IntoFuture>(
        &self,
        deadline: OtherDeadline,
        future: F,
    ) -> Timeout<F::IntoFuture, ClockSleep> {
        let sleep = self.sleep_on(deadline, self.limit_tick());
        Timeout::new(future.into_future(), sleep)
    }

    /// Schedules `callback` at its deadline's estimate on the calling thread's home shard, and
    /// keeps it.
    fn schedule_on<F>(
        &self,
        deadline: OtherDeadline,
        callback: F,
        site: &'static Location<'static>,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let shared = self.shared();
        let tick = shared.clock.estimate(deadline);
        let kind = OnClock::new(callback, deadline, &shared.clocks);
        let access = shared.lane(None);
        let lane = access.lane().clone();
        let clocks = &shared.clocks;
        lane.shard()
            .set_retimer(|| StdArc::downgrade(clocks) as Weak<dyn Retime>);
        // In its own memory, as a repeating timer: never kept young.
        let entry = Lane::schedule_as(access, Some(Tick::new(tick)), kind, Memory::Own)
            .map_err(ScheduleError::not_queued)?;
        lane.note(&entry, || Origin {
            site: Some(site),
            born: shared.clock.now_nanos(),
            key: None,
        });
        let timer = TimerHandle::of(entry, lane);
        let waiting = Waiting::Timer(timer.clone());
        ClockTimers::keep(clocks, deadline, clocks.number(), waiting);
        Ok(timer)
    }

    /// A sleep until `deadline` (or the tick `limit`) on the calling task's lane.
    #[track_caller]
    fn sleep_on(&self, deadline: OtherDeadline, limit: Option<u64>) -> ClockSleep {
        let shared = self.shared();
        ClockSleep::new(shared.lane_for_task(), &shared.clocks, deadline, limit)
    }
}
