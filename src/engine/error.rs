//! Errors: building an engine, and scheduling a timer (which hands the callback back).

use std::error::Error;
use std::fmt;

use crate::shard::Refusal;

/// Why [`Builder::build`](crate::engine::Builder::build) refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// `shards(0)`: an engine needs at least one shard.
    ZeroShards,
    /// `shards(n)` with more than 1024 shards.
    TooManyShards,
    /// A tick shorter than one microsecond (zero included).
    TickTooShort,
    /// A tick longer than an hour.
    TickTooLong,
    /// `callback_threads(n)` with more than 4096 threads.
    TooManyCallbackThreads,
    /// `callback_threads(0)`: the callback pool needs at least one thread.
    ZeroCallbackThreads,
    /// `max_pending(0)`: such an engine could never hold a timer.
    ZeroMaxPending,
    /// The operating system refused to start a thread: a shard's tick thread, or one of the
    /// engine's callback threads.
    Spawn(std::io::Error),
    /// [`Builder::build_global`](crate::engine::Builder::build_global) after the default engine had
    /// started.
    GlobalAlreadyBuilt,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroShards => f.write_str("the number of shards must be at least 1"),
            BuildError::TooManyShards => f.write_str("an engine may have at most 1024 shards"),
            BuildError::TickTooShort => f.write_str("the tick must be at least 1 microsecond"),
            BuildError::TickTooLong => f.write_str("the tick must be at most an hour"),
            BuildError::TooManyCallbackThreads => {
                f.write_str("the callback pool may have at most 4096 threads")
            }
            BuildError::ZeroCallbackThreads => {
                f.write_str("the callback pool must have at least 1 thread")
            }
            BuildError::ZeroMaxPending => f.write_str("the pending-timer cap must be at least 1"),
            BuildError::Spawn(e) => write!(f, "could not start a thread: {e}"),
            BuildError::GlobalAlreadyBuilt => f.write_str("the default engine has already started"),
        }
    }
}

impl Error for BuildError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            BuildError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a timer was not scheduled. Every variant hands the callback back.
///
/// ```
/// use std::time::Duration;
/// use shardwheel::{ScheduleError, TimerEngine};
/// let engine = TimerEngine::builder().build().unwrap();
/// engine.shutdown();
/// let (tx, rx) = std::sync::mpsc::channel();
/// match engine.schedule(Duration::from_secs(1), move || tx.send("ran").unwrap()) {
///     Err(ScheduleError::Shutdown(callback)) => callback(), // run it here instead
///     _ => unreachable!(),
/// }
/// assert_eq!(rx.recv().unwrap(), "ran");
/// ```
#[derive(PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleError<F> {
    /// The engine has been shut down.
    Shutdown(F),
    /// The engine holds as many pending timers as its cap allows.
    Full(F),
    /// The deadline is further away than the wheel's range ([`TimerEngine::max_delay`]) or
    /// than `Instant` can represent.
    ///
    /// [`TimerEngine::max_delay`]: crate::TimerEngine::max_delay
    DelayTooLong(F),
    /// A repeating timer or an interval asked for with a zero period.
    ZeroPeriod(F),
    /// A boot-clock timer on a platform without a clock that counts the time the machine
    /// slept (Linux, Apple's systems and Windows have one).
    ClockUnsupported(F),
}

impl<F> ScheduleError<F> {
    /// The error for a timer the shard refused, handing `callback` back.
    pub(super) fn refused(refusal: Refusal, callback: F) -> Self {
        match refusal {
            Refusal::Shutdown => ScheduleError::Shutdown(callback),
            Refusal::TooLong => ScheduleError::DelayTooLong(callback),
            Refusal::Full => ScheduleError::Full(callback),
        }
    }

    /// The error of kind `kind`, handing `value` back.
    pub(crate) fn of_kind(kind: ScheduleErrorKind, value: F) -> Self {
        match kind {
            ScheduleErrorKind::Shutdown => ScheduleError::Shutdown(value),
            ScheduleErrorKind::Full => ScheduleError::Full(value),
            ScheduleErrorKind::DelayTooLong => ScheduleError::DelayTooLong(value),
            ScheduleErrorKind::ZeroPeriod => ScheduleError::ZeroPeriod(value),
            ScheduleErrorKind::ClockUnsupported => ScheduleError::ClockUnsupported(value),
        }
    }

    /// The error for a timer that was not queued (see `timer::schedule`), handing `callback`
    /// back.
    pub(super) fn not_queued((refusal, callback): (Refusal, F)) -> Self {
        ScheduleError::refused(refusal, callback)
    }

    /// The callback that was not scheduled.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let err = engine.schedule(Duration::MAX, move || tx.send(7).unwrap()).unwrap_err();
    /// err.into_inner()();
    /// assert_eq!(rx.recv().unwrap(), 7);
    /// ```
    pub fn into_inner(self) -> F {
        match self {
            ScheduleError::Shutdown(f)
            | ScheduleError::Full(f)
            | ScheduleError::DelayTooLong(f)
            | ScheduleError::ZeroPeriod(f)
            | ScheduleError::ClockUnsupported(f) => f,
        }
    }

    /// Why the timer was refused, without the callback: an error that is `Send + Sync +
    /// 'static` whatever the callback is.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::time::Duration;
    /// fn arm(engine: &shardwheel::TimerEngine) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    ///     let counted = Cell::new(0); // not Sync: the callback is not either
    ///     engine.schedule(Duration::MAX, move || counted.set(1)).map_err(|e| e.kind())?;
    ///     Ok(())
    /// }
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// assert!(arm(&engine).is_err());
    /// ```
    pub fn kind(&self) -> ScheduleErrorKind {
        match self {
            ScheduleError::Shutdown(_) => ScheduleErrorKind::Shutdown,
            ScheduleError::Full(_) => ScheduleErrorKind::Full,
            ScheduleError::DelayTooLong(_) => ScheduleErrorKind::DelayTooLong,
            ScheduleError::ZeroPeriod(_) => ScheduleErrorKind::ZeroPeriod,
            ScheduleError::ClockUnsupported(_) => ScheduleErrorKind::ClockUnsupported,
        }
    }
}

/// Why a timer (or a delay-queue value) was refused, without the value handed back: what
/// [`ScheduleError::kind`] returns and what every `ScheduleError` converts into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScheduleErrorKind {
    /// The engine has been shut down.
    Shutdown,
    /// The engine holds as many pending timers as its cap allows.
    Full,
    /// The deadline is beyond the engine's range or what `Instant` can represent.
    DelayTooLong,
    /// The period of a repeating timer or an interval is zero.
    ZeroPeriod,
    /// The platform has no clock that counts the time the machine slept.
    ClockUnsupported,
}

impl fmt::Display for ScheduleErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScheduleErrorKind::Shutdown => "the timer engine has been shut down",
            ScheduleErrorKind::Full => "the timer engine holds its maximum of pending timers",
            ScheduleErrorKind::DelayTooLong => "the delay is beyond the timer engine's range",
            ScheduleErrorKind::ZeroPeriod => "the period is zero",
            ScheduleErrorKind::ClockUnsupported => {
                "this platform has no clock that counts the time the machine slept \
                 (CLOCK_BOOTTIME or its counterpart): boot-clock timers are refused"
            }
        })
    }
}

impl Error for ScheduleErrorKind {}

impl<F> From<ScheduleError<F>> for ScheduleErrorKind {
    fn from(error: ScheduleError<F>) -> Self {
        error.kind()
    }
}

impl<F> fmt::Debug for ScheduleError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            ScheduleError::Shutdown(_) => "Shutdown",
            ScheduleError::Full(_) => "Full",
            ScheduleError::DelayTooLong(_) => "DelayTooLong",
            ScheduleError::ZeroPeriod(_) => "ZeroPeriod",
            ScheduleError::ClockUnsupported(_) => "ClockUnsupported",
        };
        write!(f, "{name}(..)")
    }
}

impl<F> fmt::Display for ScheduleError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind(), f)
    }
}

impl<F> Error for ScheduleError<F> {}
