//! [`EngineLink`]: what a structure built on the engine keeps of it, so that it can arm sleeps
//! and read the clock after the borrow of the [`TimerEngine`] it was made from ends.
//!
//! A link holds the engine's shared core, as a [`TimerHandle`](crate::TimerHandle) holds its
//! lane: it keeps the shards' shared state in memory, never the engine's threads. Once the
//! engine is shut down (or dropped), every sleep armed through a link is refused with
//! [`ScheduleErrorKind::Shutdown`], and the clock still reads.

use std::time::Instant;

use super::api::TimerEngine;
use super::error::{ScheduleError, ScheduleErrorKind};
use super::shared::EngineShared;
use crate::sync::Arc;
use crate::time::TickClock;
use crate::timer::Sleep;

/// A handle on an engine's sleeps and clock that does not borrow the engine.
#[derive(Clone)]
pub(crate) struct EngineLink {
    core: Arc<EngineShared>,
}

impl TimerEngine {
    /// A link to this engine (see [`EngineLink`]).
    pub(crate) fn link(&self) -> EngineLink {
        EngineLink {
            core: self.shared().clone(),
        }
    }
}

impl EngineLink {
    /// A sleep until `tick` (`None`: until shutdown) on the calling task's lane, or why the
    /// engine refused it.
    pub(crate) fn try_sleep(&self, tick: Option<u64>) -> Result<Sleep, ScheduleErrorKind> {
        Sleep::try_on(self.core.lane_for_task(), tick)
            .map_err(|refusal| ScheduleError::refused(refusal, ()).kind())
    }

    /// Moves `sleep` to `tick` (`None`: until shutdown); a refused new timer ends it.
    pub(crate) fn reset_sleep(
        sleep: &mut Sleep,
        tick: Option<u64>,
    ) -> Result<(), ScheduleErrorKind> {
        sleep
            .try_reset_to(tick)
            .map_err(|refusal| ScheduleError::refused(refusal, ()).kind())
    }

    /// The engine's clock.
    pub(crate) fn clock(&self) -> &TickClock {
        &self.core.clock
    }

    /// As [`TimerEngine::is_shutdown`].
    pub(crate) fn is_shutdown(&self) -> bool {
        self.core.is_shutdown()
    }

    /// As [`TimerEngine::now`].
    pub(crate) fn now(&self) -> Instant {
        self.core.clock.now()
    }
}
