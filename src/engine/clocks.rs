//! The engine's calls on the boot and wall clocks (see `clock`): a timer, a sleep and a
//! timeout on either, chosen per call; the monotonic calls are untouched.

use std::future::IntoFuture;
use std::time::{Duration, SystemTime};

use super::api::TimerEngine;
use super::error::ScheduleError;
use crate::clock::{ClockSleep, ClockTimers, OnClock, Waiting};
use crate::shard::{Lane, Memory};
use crate::time::{Due, Look, Nanos, OtherDeadline, Tick, TickClock};
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
    pub fn schedule_boot<F>(
        &self,
        delay: Duration,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        match self.shared().clock.boot_after(delay) {
            Some(deadline) => self.schedule_on(deadline, callback),
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
    pub fn schedule_at_wall<F>(
        &self,
        deadline: SystemTime,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.schedule_on(TickClock::wall_at(deadline), callback)
    }

    /// As [`sleep`](Self::sleep), `delay` on the boot clock, as
    /// [`schedule_boot`](Self::schedule_boot) counts it.
    ///
    /// # Errors
    /// [`ScheduleError::ClockUnsupported`] where the platform has no boot clock.
    pub fn sleep_boot(&self, delay: Duration) -> Result<ClockSleep, ScheduleError<()>> {
        match self.shared().clock.boot_after(delay) {
            Some(deadline) => Ok(self.sleep_on(deadline)),
            None => Err(ScheduleError::ClockUnsupported(())),
        }
    }

    /// As [`sleep_until`](Self::sleep_until), until `deadline` on the wall clock, as
    /// [`schedule_at_wall`](Self::schedule_at_wall) times it.
    pub fn sleep_until_wall(&self, deadline: SystemTime) -> ClockSleep {
        self.sleep_on(TickClock::wall_at(deadline))
    }

    /// As [`timeout`](Self::timeout), `delay` on the boot clock.
    ///
    /// # Errors
    /// [`ScheduleError::ClockUnsupported`], with `future`, where there is no boot clock.
    pub fn timeout_boot<F: IntoFuture>(
        &self,
        delay: Duration,
        future: F,
    ) -> Result<Timeout<F::IntoFuture, ClockSleep>, ScheduleError<F>> {
        match self.sleep_boot(delay) {
            Ok(sleep) => Ok(Timeout::new(future.into_future(), sleep)),
            Err(_) => Err(ScheduleError::ClockUnsupported(future)),
        }
    }

    /// As [`timeout_at`](Self::timeout_at), giving up at `deadline` on the wall clock.
    pub fn timeout_at_wall<F: IntoFuture>(
        &self,
        deadline: SystemTime,
        future: F,
    ) -> Timeout<F::IntoFuture, ClockSleep> {
        Timeout::new(future.into_future(), self.sleep_until_wall(deadline))
    }

    /// Schedules `callback` at its deadline's estimate on the calling thread's home shard, and
    /// keeps it.
    fn schedule_on<F>(
        &self,
        deadline: OtherDeadline,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let shared = self.shared();
        let tick = match shared.clock.look(deadline) {
            Look::Due => shared.clock.tick_now(),
            Look::At(tick) => tick,
        };
        let number = shared.clocks.number();
        let kind = OnClock::new(callback, deadline, number, &shared.clocks);
        let access = shared.lane(None);
        let lane = access.lane().clone();
        // Not kept young (`Memory::Own`, born at the origin), as a repeating timer.
        let due = Due {
            tick: Some(Tick::new(tick)),
            born: Nanos::ORIGIN,
        };
        let entry =
            Lane::schedule_as(access, due, kind, Memory::Own).map_err(ScheduleError::not_queued)?;
        let timer = TimerHandle::of(entry, lane);
        ClockTimers::keep(
            &shared.clocks,
            deadline,
            number,
            Waiting::Timer(timer.clone()),
        );
        Ok(timer)
    }

    /// A sleep until `deadline` on the calling task's lane.
    fn sleep_on(&self, deadline: OtherDeadline) -> ClockSleep {
        let shared = self.shared();
        ClockSleep::new(shared.lane_for_task(), &shared.clocks, deadline)
    }
}
