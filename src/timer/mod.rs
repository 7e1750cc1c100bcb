//! What users hold: handles of scheduled timers, and the timers built on them.
//!
//! - `handle`: [`TimerHandle`], cancel, reset and look at one timer.
//! - `interval`: [`Interval`], a ticker on one sleep, and its [`MissedTickBehavior`].
//! - `repeating`: [`Repeat`], one run of a repeating timer, and the runner that re-arms the
//!   timer after each run.
//! - `sleep`: [`Sleep`], a future woken by the engine.
//! - `timeout`: [`Timeout`], a future under a sleep's deadline.

mod handle;
mod interval;
mod repeating;
mod sleep;
mod timeout;

pub use handle::{TimerHandle, TimerState};
pub use interval::{Interval, MissedTickBehavior};
pub use repeating::Repeat;
pub(crate) use repeating::{FirstRun, Pace, Plain, RepeatFn, WithRepeat};
pub use sleep::Sleep;
pub(crate) use sleep::SleepSite;
pub use timeout::{Elapsed, Timeout};
