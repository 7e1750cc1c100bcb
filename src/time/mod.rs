//! Time: the engine's tick clock and the manual clock tests drive it with.
//!
//! - `tick`: [`TickClock`], instants as ticks from the engine's start (deadlines round up, the
//!   present down, so a timer is never early).
//! - `tsc`: [`Ceiling`](tsc::Ceiling), a cheap upper bound on the monotonic clock from the TSC.
//! - `manual`: [`ManualClock`] and the [`CatchUp`] trait through which it drives engines.
//! - `units`: [`Tick`] and [`Nanos`], the engine's two units of time, apart by type.
//! - `other`: the boot and wall clocks, read from the system or a manual clock.
//! - `fallback`: where the sleeps of an engine shut down wait for their deadlines.

mod fallback;
mod manual;
mod other;
mod tick;
mod tsc;
mod units;

pub(crate) use fallback::wake_at;
pub(crate) use manual::CatchUp;
pub use manual::ManualClock;
pub(crate) use other::{Look, OtherClock, OtherDeadline, PerClock};
pub(crate) use tick::{Due, TickClock};
pub(crate) use units::{Nanos, Tick};
