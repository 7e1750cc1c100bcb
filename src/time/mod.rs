//! Time: the engine's tick clock and the manual clock tests drive it with.
//!
//! - `tick`: [`TickClock`], instants as ticks from the engine's start (deadlines round up, the
//!   present down, so a timer is never early).
//! - `tsc`: [`Ceiling`](tsc::Ceiling), a cheap upper bound on the monotonic clock from the TSC.
//! - `manual`: [`ManualClock`] and the [`CatchUp`] trait through which it drives engines.

mod manual;
mod tick;
mod tsc;

pub(crate) use manual::CatchUp;
pub use manual::ManualClock;
pub(crate) use tick::{Due, TickClock};
