//! Hooks for the crate's own tests: engines whose shards a test drives by hand, and a look at
//! the lanes. Compiled only into tests.

use super::api::TimerEngine;
use super::builder::{Assembled, Builder};
use super::closing::Phase;
use super::shutdown::{Threads, Unfired};
use crate::shard::Lane;
use crate::shard::Shard;
#[cfg(not(loom))]
use crate::sync::Arc;
use crate::time::Tick;

impl Builder {
    /// Sets how many lanes each shard has room for (rounded up to a power of two); more threads
    /// share them. Models use one lane to keep their state space small.
    #[cfg(loom)]
    pub(crate) fn lane_capacity(mut self, lanes: usize) -> Self {
        self.lane_capacity = Some(lanes.max(1));
        self
    }

    /// Builds an engine whose shards the caller drives by hand, one `turn` at a time.
    pub(crate) fn build_driven(self) -> Result<(TimerEngine, Vec<Shard>), super::BuildError> {
        let (shared, shards, pool): Assembled = self.assemble()?;
        let threads = Threads {
            shard_threads: Vec::new(),
            pool,
            driven: true,
        };
        Ok((TimerEngine::new(shared, threads), shards))
    }
}

impl TimerEngine {
    /// The lane the calling thread schedules through for route 0.
    #[cfg(not(loom))]
    pub(crate) fn lane_of_this_thread(&self) -> &Arc<Lane> {
        self.shared().lane_for(0)
    }

    /// How many lanes shard `shard` has made.
    #[cfg(not(loom))]
    pub(crate) fn lanes_made(&self, shard: usize) -> usize {
        self.shared().lanes[shard].all().len()
    }

    /// Schedules `callback` `delay` ahead through the engine's one lane as its owner would:
    /// under loom no thread owns a lane, so a model says which thread does (it alone calls
    /// this). `Err` hands the callback back.
    #[cfg(loom)]
    pub(crate) fn schedule_as_owner<F: FnOnce() + Send + 'static>(
        &self,
        delay: std::time::Duration,
        callback: F,
    ) -> Result<crate::TimerHandle, F> {
        use crate::shard::{Access, Memory, OneShot, Owner};
        let lane = self.shared().lane_for(0);
        let due = self.shared().clock.due_after(delay);
        let owner = Access::Owner(Owner::for_model(lane));
        let memory = Memory::Lane { born: due.born };
        Lane::schedule_as(owner, due.tick, OneShot(callback), memory)
            .map(|entry| crate::TimerHandle::of(entry, lane.clone()))
            .map_err(|(_, callback)| callback)
    }

    /// The engine's current tick.
    pub(crate) fn now_tick(&self) -> Tick {
        self.shared().clock.now_tick()
    }

    /// Shuts down an engine made by `Builder::build_driven`, given back its shards.
    pub(crate) fn shutdown_driven(&self, shards: Vec<Shard>) -> Vec<Unfired> {
        let threads = match std::mem::replace(&mut *self.engine().shutdown.lock(), Phase::Stopped) {
            Phase::Running(threads) => threads,
            _ => return Vec::new(),
        };
        self.engine().stop_shards();
        let stopped = shards.into_iter().map(|s| Some(s.stop())).collect();
        self.shared().finish_with(threads.pool, stopped)
    }
}
