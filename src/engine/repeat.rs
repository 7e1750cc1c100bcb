//! [`RepeatBuilder`]: the options of a repeating timer, for the forms that
//! `TimerEngine::schedule_repeating` and its siblings do not name.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use super::api::TimerEngine;
use super::error::ScheduleError;
use crate::timer::{Pace, Plain, Repeat, RepeatFn, TimerHandle, WithRepeat};

/// A repeating timer being set up, made by [`TimerEngine::repeating`]; nothing is scheduled
/// until [`schedule`](Self::schedule) or [`schedule_with`](Self::schedule_with).
///
/// The first run, the pace (fixed rate or fixed delay), the route and the callback's form
/// combine freely, so they are options of one builder rather than a method for each of the
/// sixteen combinations; the common forms keep methods of their own on [`TimerEngine`]
/// (`schedule_repeating`, `_keyed`, `_at`, `_with`), each a shorthand for a builder.
///
/// ```
/// use std::time::Duration;
/// let engine = shardwheel::TimerEngine::builder().build().unwrap();
/// let first = engine.now() + Duration::from_secs(1);
/// let poll = engine
///     .repeating(Duration::from_secs(5))
///     .first_at(first)
///     .fixed_delay()
///     .keyed(42)
///     .schedule_with(|run| if run.period() > Duration::from_secs(60) { run.cancel(); })
///     .unwrap();
/// assert!(poll.cancel());
/// ```
#[derive(Debug, Clone)]
#[must_use = "a RepeatBuilder schedules nothing until `schedule` or `schedule_with`"]
pub struct RepeatBuilder<'a> {
    engine: Cow<'a, TimerEngine>,
    period: Duration,
    first: Option<Instant>,
    pace: Pace,
    key: Option<u64>,
}

impl<'a> RepeatBuilder<'a> {
    pub(super) fn new(engine: &'a TimerEngine, period: Duration) -> Self {
        RepeatBuilder::with(Cow::Borrowed(engine), period)
    }

    fn with(engine: Cow<'a, TimerEngine>, period: Duration) -> Self {
        RepeatBuilder {
            engine,
            period,
            first: None,
            pace: Pace::FixedRate,
            key: None,
        }
    }

    /// A builder holding a clone of `engine` (for the free function `repeating`).
    pub(super) fn owned(engine: TimerEngine, period: Duration) -> RepeatBuilder<'static> {
        RepeatBuilder::with(Cow::Owned(engine), period)
    }

    /// The first run is due at `first` (at once if it is past) rather than a period from now.
    pub fn first_at(mut self, first: Instant) -> Self {
        self.first = Some(first);
        self
    }

    /// Each run after the first is due `period` after the previous run returned (as Java's
    /// `scheduleWithFixedDelay`), rather than at `first + n·period`: a slow run delays the
    /// rest, and runs are never skipped. Suits polling; the default fixed rate suits clocks.
    pub fn fixed_delay(mut self) -> Self {
        self.pace = Pace::FixedDelay;
        self
    }

    /// Routes the timer by `key`, as [`TimerEngine::schedule_keyed`] does.
    pub fn keyed(mut self, key: u64) -> Self {
        self.key = Some(key);
        self
    }

    /// Schedules the timer, running `callback` on each run.
    ///
    /// # Errors
    /// As [`TimerEngine::schedule`], for the first run; [`ScheduleError::ZeroPeriod`] for a
    /// zero period.
    pub fn schedule<F>(self, callback: F) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnMut() + Send + 'static,
    {
        self.schedule_job(Plain(callback))
    }

    /// Schedules the timer, handing `callback` each run as a [`Repeat`], through which it can
    /// cancel the timer or change its period.
    ///
    /// # Errors
    /// As [`TimerEngine::schedule`], for the first run; [`ScheduleError::ZeroPeriod`] for a
    /// zero period.
    pub fn schedule_with<F>(self, callback: F) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnMut(&mut Repeat) + Send + 'static,
    {
        self.schedule_job(WithRepeat(callback))
    }

    fn schedule_job<R: RepeatFn>(self, run: R) -> Result<TimerHandle, ScheduleError<R::Value>> {
        let RepeatBuilder {
            engine,
            period,
            first,
            pace,
            key,
        } = self;
        engine.schedule_repeating_job(key, first, period, pace, run)
    }
}
