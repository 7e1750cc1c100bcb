//! The rayon pool an engine starts for its callbacks, when it is not given another place to
//! run them.

use std::thread::JoinHandle;

use rayon::ThreadPool;

use super::error::BuildError;
use crate::shard::{Inflight, Job, Relay, ShardCore, Spawn};
use crate::sync::{Arc, StdArc};

/// A rayon pool the engine started, with the handles of its threads so shutdown can join them.
pub(super) struct OwnedPool {
    pool: StdArc<ThreadPool>,
    threads: Vec<JoinHandle<()>>,
    /// The relay that starts runners on the pool, closed before the pool is joined.
    relay: Option<StdArc<Relay>>,
}

impl OwnedPool {
    pub(super) fn start(threads: usize) -> Result<Self, BuildError> {
        let mut handles = Vec::with_capacity(threads);
        // The system's own error, when it refuses a thread; rayon's error type stays out of
        // shardwheel's API.
        let mut refused = None;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("shardwheel-callback-{i}"))
            .spawn_handler(|thread| {
                let mut builder = std::thread::Builder::new();
                if let Some(name) = thread.name() {
                    builder = builder.name(name.to_owned());
                }
                if let Some(size) = thread.stack_size() {
                    builder = builder.stack_size(size);
                }
                match builder.spawn(|| thread.run()) {
                    Ok(handle) => {
                        handles.push(handle);
                        Ok(())
                    }
                    Err(e) => {
                        let for_rayon = std::io::Error::new(e.kind(), e.to_string());
                        refused = Some(e);
                        Err(for_rayon)
                    }
                }
            })
            .build()
            .map_err(|e| {
                BuildError::Spawn(refused.take().unwrap_or_else(|| std::io::Error::other(e)))
            })?;
        Ok(OwnedPool {
            pool: StdArc::new(pool),
            threads: handles,
            relay: None,
        })
    }

    /// How many threads the pool has: the most runners its relay starts at once.
    pub(super) fn threads(&self) -> usize {
        self.threads.len()
    }

    /// The relay through which `shards` (in shard order) hand their callbacks to this pool,
    /// with as many runners at most as the pool has threads.
    pub(super) fn relay_for(
        &mut self,
        shards: Vec<Arc<ShardCore>>,
        inflight: Arc<Inflight>,
    ) -> StdArc<Relay> {
        let pool = self.pool.clone();
        let spawn: Spawn = StdArc::new(move |job: Job| pool.spawn(job));
        let relay = Relay::new(shards, spawn, self.threads(), inflight);
        self.relay = Some(relay.clone());
        relay
    }

    /// Ends the pool and joins its threads. Called once no shard can hand it more work.
    pub(super) fn join(self) {
        if let Some(relay) = &self.relay {
            relay.close();
        }
        // The shards held the other references; they have exited. If someone else still holds
        // the pool, its threads live on with it and are not waited for.
        if let Ok(pool) = StdArc::try_unwrap(self.pool) {
            drop(pool);
            for thread in self.threads {
                let _ = thread.join();
            }
        }
    }
}
