//! [`EngineLink`]: what a structure built on the engine keeps of it, so that it can schedule
//! timers and read the clock after the borrow of the [`TimerEngine`] it was made from ends.
//!
//! A link holds the engine's shared core, as a [`TimerHandle`] holds its lane: it keeps the
//! shards' shared state in memory, never the engine's threads. Once the engine is shut down
//! (or dropped), every schedule through a link is refused with
//! [`ScheduleError::Shutdown`], and the clock still reads.
//!
//! A link schedules as [`TimerEngine::schedule_at`] does, but always in a new entry: the spare
//! entries a lane's owner reuses may be taken only inside a call on the engine itself (the
//! engine frees them when dropped), and a link's calls may outlive the engine.

use std::time::Instant;

use super::api::TimerEngine;
use super::core::EngineCore;
use super::error::ScheduleError;
use crate::sync::Arc;
use crate::timer::{fresh, schedule, OneShot, TimerHandle};

/// A handle on an engine's scheduling and clock that does not borrow the engine.
#[derive(Clone)]
pub(crate) struct EngineLink {
    core: Arc<EngineCore>,
}

impl TimerEngine {
    /// A link to this engine (see [`EngineLink`]).
    pub(crate) fn link(&self) -> EngineLink {
        EngineLink {
            core: self.core().clone(),
        }
    }
}

impl EngineLink {
    /// As [`TimerEngine::schedule_at`]: runs `callback` at `deadline`, or hands it back.
    pub(crate) fn schedule_at<F>(
        &self,
        deadline: Instant,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.schedule_on(self.core.clock.tick_at(deadline), callback)
    }

    /// As [`schedule_at`](Self::schedule_at), at the farthest deadline the engine takes
    /// (`max_delay` from now): a stand-in for a deadline beyond it, which comes due in time to
    /// be renewed, or is handed back at shutdown.
    pub(crate) fn schedule_farthest<F>(&self, callback: F) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.schedule_on(self.core.clock.farthest_tick(), callback)
    }

    /// Schedules `callback` at `tick` on the calling task's lane, in a new entry.
    fn schedule_on<F>(
        &self,
        tick: Option<u64>,
        callback: F,
    ) -> Result<TimerHandle, ScheduleError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let lane = self.core.lane_for_task();
        schedule(lane, tick, OneShot(callback), fresh).map_err(ScheduleError::not_queued)
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
