//! Timers that another layer times: a boot or wall timer's deadline is on its own clock, kept
//! by the engine's `clock` module, so a reset of one must move that deadline, not only the
//! tick its entry waits at. The shard holds that module behind [`Retime`], given it with the
//! engine's first such timer; a reset asks it first.

use std::sync::{OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::entry::EntryRef;

/// Where a reset moves a timer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reset {
    /// This long from now.
    After(Duration),
    /// At this instant of the engine's clock.
    At(Instant),
}

/// Moves the timers another layer times.
pub(crate) trait Retime: Send + Sync {
    /// Moves the timer of `entry` as `to` says, if this times it (else `None`): `false` if it
    /// ended or is in a run.
    fn reset(&self, entry: &EntryRef, to: Reset) -> Option<bool>;
}

/// A shard's [`Retime`], once its engine has one. Held weakly: it holds the timers' handles,
/// which hold the shard.
#[derive(Default)]
pub(super) struct Retimer(OnceLock<Weak<dyn Retime>>);

impl Retimer {
    pub(super) fn set(&self, retime: impl FnOnce() -> Weak<dyn Retime>) {
        self.0.get_or_init(retime);
    }

    /// As [`Retime::reset`]; `None` before any is set. A one-shot is never another's.
    #[inline]
    pub(super) fn reset(&self, entry: &EntryRef, to: Reset) -> Option<bool> {
        let retime = self.0.get()?;
        if !entry.state().is_repeating() {
            return None;
        }
        retime.upgrade()?.reset(entry, to)
    }
}
