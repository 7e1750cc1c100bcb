//! The engine's own types, named where an engine is built, entered, shut down or handed a
//! repeating timer: [`Builder`] and [`BuildError`]; [`EnterGuard`], which points the free
//! functions at an engine, and [`Scoped`], the one scope future (an engine entered or a
//! deadline current around each poll); [`Unfired`], what shutdown hands back; [`Task`], a fired
//! callback for [`Builder::spawn_callbacks`]; [`RepeatBuilder`] and [`Repeat`], a repeating
//! timer and one of its runs; [`ClockSleep`], a sleep on the boot or wall clock.
//! [`TimerEngine`] itself is at the crate root; what its `stats` and `pending_timers` report
//! is in [`crate::stats`].

// The top layer, which alone knows every layer below; each file's own docs say what it holds.

pub(crate) mod api;
mod builder;
mod clocks;
mod closing;
// Public as `shardwheel::deadline` (see `lib.rs`).
#[doc(hidden)]
pub mod deadline;
mod entered;
pub(crate) mod error;
pub(crate) mod global;
#[cfg(test)]
mod hooks;
pub(crate) mod pending;
mod refused;
mod repeat;
mod routing;
mod scope;
mod shared;
mod shutdown;
mod snapshot;
pub(crate) mod stats;
#[cfg(all(test, not(loom)))]
mod tests;

pub use self::builder::Builder;
pub use self::error::BuildError;
pub use self::repeat::RepeatBuilder;
pub use self::scope::{EnterGuard, Scoped};
pub use self::shutdown::Unfired;
pub use crate::callbacks::Task;
pub use crate::clock::ClockSleep;
pub use crate::timer::Repeat;

// At the crate root (see `lib.rs`); these paths are the layers'.
pub(crate) use self::api::TimerEngine;
pub(crate) use self::error::{ScheduleError, ScheduleErrorKind};
pub(crate) use self::global::current_engine;
pub(crate) use self::shared::EngineShared;

#[cfg(all(test, loom))]
pub(crate) use self::closing::{Closing, Duty};
