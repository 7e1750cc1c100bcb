//! [`RepeatBuilder`]: a repeating timer and its options, the one way to schedule one.

use std::borrow::Cow;
use std::panic::Location;
use std::time::{Duration, Instant};

use super::error::ScheduleError;
use super::shared::EngineShared;
use crate::shard::{Lane, Memory, Origin};
use crate::sync::Arc;
use crate::time::Tick;
use crate::timer::{FirstRun, Pace, Plain, Repeat, RepeatFn, TimerHandle, WithRepeat};

/// A repeating timer being set up, made by [`TimerEngine::repeating`](crate::TimerEngine::repeating)
/// or [`repeating`](crate::repeating); nothing is scheduled until [`schedule`](Self::schedule)
/// or [`schedule_with`](Self::schedule_with).
///
/// By default it runs at a fixed rate: the n-th run is due at `first + n·period`, whatever the
/// earlier runs cost, and a run that would overlap the one before it, or that was missed (the
/// engine was busy, or the callback ran long), is skipped, never queued up. `cancel()` on its
/// handle stops it, also from inside the callback; shutdown hands it back like any pending
/// timer (running it then runs it once). A period shorter than the tick repeats once a tick. A
/// callback that panics stops its timer. The first run, the pace, the route and the
/// callback's form combine freely: options of one builder, not sixteen methods.
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
#[derive(Clone)]
#[must_use = "a RepeatBuilder schedules nothing until `schedule` or `schedule_with`"]
pub struct RepeatBuilder<'a> {
    engine: Cow<'a, Arc<EngineShared>>,
    period: Duration,
    first: Option<Instant>,
    pace: Pace,
    key: Option<u64>,
}

impl<'a> RepeatBuilder<'a> {
    pub(super) fn new(engine: &'a Arc<EngineShared>, period: Duration) -> Self {
        RepeatBuilder::with(Cow::Borrowed(engine), period)
    }

    fn with(engine: Cow<'a, Arc<EngineShared>>, period: Duration) -> Self {
        RepeatBuilder {
            engine,
            period,
            first: None,
            pace: Pace::FixedRate,
            key: None,
        }
    }

    /// A builder holding a clone of `engine` (for the free function `repeating`).
    pub(super) fn owned(engine: Arc<EngineShared>, period: Duration) -> RepeatBuilder<'static> {
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

    /// Routes the timer by `key`, as [`TimerEngine::schedule_keyed`](crate::TimerEngine::schedule_keyed) does.
    pub fn keyed(mut self, key: u64) -> Self {
        self.key = Some(key);
        self
    }

    /// Schedules the timer, running `callback` on each run.
    ///
    /// # Errors
    /// As [`TimerEngine::schedule`](crate::TimerEngine::schedule), for the first run; [`ScheduleError::ZeroPeriod`] for a
    /// zero period.
    #[track_caller]
    pub fn schedule<F>(self, callback: F) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnMut() + Send + 'static,
    {
        self.schedule_job(Plain(callback), Location::caller())
    }

    /// Schedules the timer, handing `callback` each run as a [`Repeat`], through which it can
    /// cancel the timer or change its period.
    ///
    /// # Errors
    /// As [`TimerEngine::schedule`](crate::TimerEngine::schedule), for the first run; [`ScheduleError::ZeroPeriod`] for a
    /// zero period.
    #[track_caller]
    pub fn schedule_with<F>(self, callback: F) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnMut(&mut Repeat) + Send + 'static,
    {
        self.schedule_job(WithRepeat(callback), Location::caller())
    }

    fn schedule_job<R: RepeatFn>(
        self,
        run: R,
        site: &'static Location<'static>,
    ) -> Result<TimerHandle, ScheduleError<R::Value>> {
        let RepeatBuilder {
            engine,
            period,
            first,
            pace,
            key,
        } = self;
        let handle = queue_first_run(&engine, key, first, period, pace, run)?;
        handle.note_origin(|| Origin {
            site: Some(site),
            born: engine.clock.now_nanos(),
            key,
        });
        Ok(handle)
    }
}

impl std::fmt::Debug for RepeatBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RepeatBuilder")
            .field("period", &self.period)
            .field("first", &self.first)
            .field("pace", &self.pace)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// Schedules a repeating timer routed by `route` (else as `schedule`), first due at
/// `first` (else a period from now).
fn queue_first_run<R: RepeatFn>(
    engine: &EngineShared,
    route: Option<u64>,
    first: Option<Instant>,
    period: Duration,
    pace: Pace,
    callback: R,
) -> Result<TimerHandle, ScheduleError<R::Value>> {
    if period.is_zero() {
        return Err(ScheduleError::ZeroPeriod(callback.into_value()));
    }
    let access = engine.lane(route);
    let lane = access.lane();
    let clock = &engine.clock;
    let (first, tick) = match first.or_else(|| clock.now().checked_add(period)) {
        Some(first) => (first, clock.tick_at(first)),
        // Beyond what an instant holds: refused as too far away (a refused job's first
        // run is never read).
        None => (clock.now(), None),
    };
    let job = FirstRun {
        run: callback,
        first,
        period,
        pace,
    };
    // In its own memory: never kept young, so when it was made does not matter.
    Lane::schedule_as(access, tick.map(Tick::new), job, Memory::Own)
        .map(|entry| TimerHandle::of(entry, lane.clone()))
        .map_err(ScheduleError::not_queued)
}
