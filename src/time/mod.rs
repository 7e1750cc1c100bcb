//! Time: the engine's tick clock and the manual clock tests drive it with.
//!
//! - `tick`: [`TickClock`], instants as ticks counted from the engine's start (deadlines round
//!   up, the present rounds down, so a timer is never early), with division by a reciprocal
//!   multiply.
//! - `tsc`: [`Ceiling`](tsc::Ceiling), a cheap upper bound on the monotonic clock extrapolated
//!   from the processor's time-stamp counter, for rounding a new timer's deadline up.
//! - `manual`: [`ManualClock`], which moves only when told to, and the [`CatchUp`] trait through
//!   which it asks the engines on it to fire what came due.

mod manual;
mod tick;
mod tsc;

pub(crate) use manual::CatchUp;
pub use manual::ManualClock;
pub(crate) use tick::TickClock;
