//! What users hold: handles of scheduled timers, and the timers built on them.
//!
//! - `deadline`: the current deadline of a deadline scope, and how a scope lends it.
//! - `grpc_timeout`: a deadline's time as gRPC's `grpc-timeout` header value, and back.
//! - `handle`: [`TimerHandle`], cancel, reset and look at one timer.
//! - `interval`: [`Interval`], a ticker on one sleep, and its [`MissedTickBehavior`].
//! - `repeating`: [`Repeat`], one run of a repeating timer, and the runner that re-arms the
//!   timer after each run.
//! - `sleep`: [`Sleep`], a future woken by the engine.
//! - `timeout`: [`Timeout`], a future under a sleep's deadline.

pub(crate) mod deadline;
pub(crate) mod grpc_timeout;
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
pub(crate) use timeout::Clamp;
pub use timeout::{Elapsed, Timeout};
