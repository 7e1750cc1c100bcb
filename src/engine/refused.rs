//! What a sleep, a timeout or an interval whose timer the engine refused tells its holder.
//!
//! These types live in `timer`, below the engine's errors; their refusal is read there and
//! named here, as a [`ScheduleErrorKind`].

use std::future::poll_fn;
use std::task::{Context, Poll};
use std::time::Instant;

use super::error::{ScheduleError, ScheduleErrorKind};
use crate::clock::ClockSleep;
use crate::shard::Refusal;
use crate::timer::{Interval, Sleep, Timeout};

/// The kind of error a refusal is.
fn kind(refusal: Refusal) -> ScheduleErrorKind {
    ScheduleError::refused(refusal, ()).kind()
}

impl Sleep {
    /// Why the engine does not time the sleep: `Shutdown` (a fallback thread of the process
    /// ends it at its deadline, never early), or `Full` (it waits for a permit under the cap);
    /// `None` while it is timed as asked.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwheel::ScheduleErrorKind;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let sleep = engine.sleep(Duration::from_secs(1));
    /// assert_eq!(sleep.refused(), None);
    /// engine.shutdown();
    /// assert_eq!(sleep.refused(), Some(ScheduleErrorKind::Shutdown));
    /// ```
    pub fn refused(&self) -> Option<ScheduleErrorKind> {
        self.refusal().map(kind)
    }
}

impl<F> Timeout<F> {
    /// As [`Sleep::refused`], for the timeout's deadline.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// engine.shutdown();
    /// let timeout = engine.timeout(Duration::from_secs(1), async { 7 });
    /// assert!(timeout.refused().is_some());
    /// ```
    pub fn refused(&self) -> Option<ScheduleErrorKind> {
        self.sleep().refused()
    }
}

impl ClockSleep {
    /// As [`Sleep::refused`]: why its timer at the deadline's estimate was refused.
    pub fn refused(&self) -> Option<ScheduleErrorKind> {
        self.sleep().refused()
    }
}

impl<F> Timeout<F, ClockSleep> {
    /// As [`ClockSleep::refused`], for the timeout's deadline.
    pub fn refused(&self) -> Option<ScheduleErrorKind> {
        self.sleep().refused()
    }
}

impl Interval {
    /// As [`tick`](Self::tick), but once the engine has shut down it completes with
    /// [`ScheduleErrorKind::Shutdown`] rather than waiting until dropped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwheel::ScheduleErrorKind;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut interval = engine.interval(Duration::from_millis(10));
    /// futures::executor::block_on(async {
    ///     assert!(interval.try_tick().await.is_ok());
    ///     engine.shutdown();
    ///     assert_eq!(interval.try_tick().await, Err(ScheduleErrorKind::Shutdown));
    /// });
    /// ```
    pub async fn try_tick(&mut self) -> Result<Instant, ScheduleErrorKind> {
        poll_fn(|cx| self.poll_try_tick(cx)).await
    }

    /// Polls as [`try_tick`](Self::try_tick) completes: `Ready(Err(Shutdown))` once the
    /// engine has shut down, else as [`poll_tick`](Self::poll_tick).
    pub fn poll_try_tick(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Instant, ScheduleErrorKind>> {
        if self.sleep().engine_stopped() {
            return Poll::Ready(Err(ScheduleErrorKind::Shutdown));
        }
        self.poll_tick(cx).map(Ok)
    }
}
