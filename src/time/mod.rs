//! Time: the engine's tick clock and the manual clock tests drive it with.
//!
//! - `tick`: [`TickClock`], instants as ticks counted from the engine's start (deadlines round
//!   up, the present rounds down, so a timer is never early), with division by a reciprocal
//!   multiply.
//! - `manual`: [`ManualClock`], which moves only when told to, and the [`CatchUp`] trait through
//!   which it asks the engines on it to fire what came due.

mod manual;
mod tick;

pub(crate) use manual::CatchUp;
pub use manual::ManualClock;
pub(crate) use tick::TickClock;
