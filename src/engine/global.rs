//! The default engine: one per process, started on first use or configured once before it by
//! [`Builder::build_global`], and the free functions that schedule on it (or on the engine the
//! thread has entered, see `scope`). It is never shut down; its threads end with the process.

use std::future::IntoFuture;
use std::panic::Location;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::api::TimerEngine;
use super::builder::Builder;
use super::entered::entered;
use super::error::{BuildError, ScheduleError};
use super::repeat::RepeatBuilder;
use crate::timer::{Interval, Sleep, SleepSite, Timeout, TimerHandle};

static DEFAULT: OnceLock<TimerEngine> = OnceLock::new();

/// Held while the default engine is being built, so that racing first uses (or a first use
/// racing `build_global`) start one engine between them, not one each.
static STARTING: Mutex<()> = Mutex::new(());

/// The default engine, built by `build` if it has not started; and whether this call built it.
fn start_with(
    build: impl FnOnce() -> Result<TimerEngine, BuildError>,
) -> Result<(&'static TimerEngine, bool), BuildError> {
    if let Some(engine) = DEFAULT.get() {
        return Ok((engine, false));
    }
    let _starting = STARTING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(engine) = DEFAULT.get() {
        return Ok((engine, false));
    }
    let engine = build()?;
    Ok((DEFAULT.get_or_init(|| engine), true))
}

/// The process's default engine, started with [`Builder`]'s defaults on first use unless
/// [`Builder::build_global`] configured it before.
///
/// # Panics
/// If the system refuses the engine's threads on first use; [`Builder::build_global`], called
/// first, returns that error instead.
#[inline]
pub fn default_engine() -> &'static TimerEngine {
    match DEFAULT.get() {
        Some(engine) => engine,
        None => start_default(),
    }
}

/// Starts the default engine with the defaults, or takes the one that won the race to.
#[cold]
fn start_default() -> &'static TimerEngine {
    match start_with(|| Builder::default().build()) {
        Ok((engine, _)) => engine,
        Err(e) => panic!("shardwheel: the default engine could not start: {e}"),
    }
}

impl Builder {
    /// Builds the process's default engine with these settings, before its first use.
    ///
    /// # Errors
    /// [`BuildError::GlobalAlreadyBuilt`] if the default engine has already started (it was
    /// used, or built before), and the errors of [`build`](Self::build).
    ///
    /// ```
    /// use std::time::Duration;
    /// shardwheel::TimerEngine::builder().max_pending(1_000_000).build_global()?;
    /// assert!(shardwheel::TimerEngine::builder().build_global().is_err());
    /// # Ok::<(), shardwheel::engine::BuildError>(())
    /// ```
    pub fn build_global(self) -> Result<(), BuildError> {
        match start_with(|| self.build())? {
            (_, true) => Ok(()),
            (_, false) => Err(BuildError::GlobalAlreadyBuilt),
        }
    }
}

/// [`TimerEngine::schedule`] on the [`default_engine`], or on the engine the thread has
/// entered ([`TimerEngine::enter`]), as every free function.
///
/// ```
/// use std::time::Duration;
/// let timer = shardwheel::schedule(Duration::from_secs(5), || eprintln!("request timed out"))?;
/// assert!(timer.cancel());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn schedule<F>(delay: Duration, callback: F) -> Result<TimerHandle, ScheduleError<F>>
where
    F: FnOnce() + Send + 'static,
{
    let site = Location::caller();
    with_current(|engine| {
        let due = engine.shared().clock.due_after(delay);
        engine.schedule_routed(None, due, callback, site)
    })
}

/// [`TimerEngine::schedule_at`] on the [`default_engine`] (or the entered one).
#[track_caller]
pub fn schedule_at<F>(deadline: Instant, callback: F) -> Result<TimerHandle, ScheduleError<F>>
where
    F: FnOnce() + Send + 'static,
{
    let site = Location::caller();
    with_current(|engine| {
        let due = engine.shared().clock.due_at(deadline);
        engine.schedule_routed(None, due, callback, site)
    })
}

/// [`TimerEngine::repeating`] on the [`default_engine`] (or the entered one): a repeating
/// timer, scheduled by [`RepeatBuilder::schedule`].
pub fn repeating(period: Duration) -> RepeatBuilder<'static> {
    with_current(|engine| RepeatBuilder::owned(engine.shared().clone(), period))
}

/// [`TimerEngine::sleep`] on the [`default_engine`] (or the entered one): a future that
/// completes `delay` from now, under any executor.
#[track_caller]
pub fn sleep(delay: Duration) -> Sleep {
    let site = SleepSite::caller();
    with_current(|engine| engine.sleep(delay)).sited(site)
}

/// [`TimerEngine::sleep_until`] on the [`default_engine`] (or the entered one).
#[track_caller]
pub fn sleep_until(deadline: Instant) -> Sleep {
    let site = SleepSite::caller();
    with_current(|engine| engine.sleep_until(deadline)).sited(site)
}

/// [`TimerEngine::timeout`] on the [`default_engine`] (or the entered one): `future`'s
/// output, or [`Elapsed`](crate::Elapsed) if `delay` passes first.
#[track_caller]
#[inline]
pub fn timeout<F: IntoFuture>(delay: Duration, future: F) -> Timeout<F::IntoFuture> {
    let site = SleepSite::caller();
    with_current(|engine| engine.timeout(delay, future)).sited(site)
}

/// [`TimerEngine::timeout_at`] on the [`default_engine`] (or the entered one).
#[track_caller]
#[inline]
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    let site = SleepSite::caller();
    with_current(|engine| engine.timeout_at(deadline, future)).sited(site)
}

/// [`TimerEngine::interval`] on the [`default_engine`] (or the entered one).
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    let site = SleepSite::caller();
    with_current(|engine| engine.interval(period)).sited(site)
}

/// [`TimerEngine::interval_at`] on the [`default_engine`] (or the entered one).
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    let site = SleepSite::caller();
    with_current(|engine| engine.interval_at(start, period)).sited(site)
}

/// [`TimerEngine::now`] of the entered engine, else of the [`default_engine`]: the time the free
/// functions' deadlines are on, a [`ManualClock`](crate::ManualClock)'s in a test's scope (as
/// tokio's `Instant::now` under a paused clock).
///
/// ```
/// use std::time::Duration;
/// let clock = shardwheel::ManualClock::new();
/// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
/// let _entered = engine.enter();
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(shardwheel::now(), clock.now());
/// ```
pub fn now() -> Instant {
    with_current(TimerEngine::now)
}

/// Runs `f` on the engine the free functions use on this thread now: the one entered, else
/// the default engine.
#[inline]
pub(super) fn with_current<R>(f: impl FnOnce(&TimerEngine) -> R) -> R {
    // `f` called at one place, not once per engine: inlined twice, a timeout grew too large
    // to inline into its caller.
    let entered = entered();
    f(entered.as_ref().unwrap_or_else(|| default_engine()))
}

/// The engine the free functions use on this thread now (for constructors that follow them).
pub(crate) fn current_engine() -> TimerEngine {
    with_current(TimerEngine::clone)
}
