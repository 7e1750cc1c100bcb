//! What users hold: handles of scheduled timers, and the timers built on them.
//!
//! - `handle`: [`TimerHandle`], cancel, reset and look at one timer.
//! - `interval`: [`Interval`], a ticker on one sleep, and its [`MissedTickBehavior`].
//! - `repeating`: the runner that re-arms a repeating timer after each run.
//! - `sleep`: [`Sleep`] and [`Timeout`], futures woken by the engine.

mod handle;
mod interval;
mod repeating;
mod sleep;

pub(crate) use handle::NotQueued;
pub use handle::{TimerHandle, TimerState};
pub use interval::{Interval, MissedTickBehavior};
pub(crate) use repeating::Repeating;
pub use sleep::{Elapsed, Sleep, Timeout};
