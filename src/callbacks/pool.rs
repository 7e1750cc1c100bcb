//! The rayon pool an engine runs its callbacks on: one it starts and joins at shutdown, or the
//! one shared by every engine in the process that asks for no pool of its own (started on
//! first use, never joined).

use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

use rayon::ThreadPool;

use super::counts::ShardCallbacks;
use super::relay::{Inflight, Job, Relay, Spawn};
use crate::sync::{Arc, StdArc};

/// The pool shared by engines that bring none, once started.
static SHARED: Mutex<Option<StdArc<ThreadPool>>> = Mutex::new(None);

/// The number of threads of the shared pool: one per cpu the process may use, at least eight,
/// so that a few callbacks that block do not hold up the rest.
fn shared_pool_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(8)
}

/// A rayon pool an engine hands callbacks to, with the handles of its threads if the engine
/// started it for itself (so shutdown can join them).
pub(crate) struct CallbackPool {
    pool: StdArc<ThreadPool>,
    threads: Vec<JoinHandle<()>>,
    /// The relay that starts runners on the pool, closed before the pool is joined.
    relay: Option<StdArc<Relay>>,
}

impl CallbackPool {
    /// Starts a pool of `threads` threads for one engine.
    pub(crate) fn start(threads: usize) -> std::io::Result<Self> {
        let (pool, handles) = start_pool(threads, "shardwheel-callback")?;
        Ok(CallbackPool {
            pool: StdArc::new(pool),
            threads: handles,
            relay: None,
        })
    }

    /// The process's shared pool, started if this is its first use.
    pub(crate) fn shared() -> std::io::Result<Self> {
        let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        let pool = match &*shared {
            Some(pool) => pool.clone(),
            None => {
                let (pool, _) = start_pool(shared_pool_threads(), "shardwheel-shared-callback")?;
                shared.insert(StdArc::new(pool)).clone()
            }
        };
        Ok(CallbackPool {
            pool,
            threads: Vec::new(),
            relay: None,
        })
    }

    /// How many threads the pool has: the most runners its relay starts at once.
    pub(crate) fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The relay through which `shards` (in shard order) hand their callbacks to this pool,
    /// with as many runners at most as the pool has threads.
    pub(crate) fn relay_for(
        &mut self,
        shards: Vec<Arc<ShardCallbacks>>,
        inflight: Arc<Inflight>,
    ) -> StdArc<Relay> {
        let pool = self.pool.clone();
        let spawn: Spawn = StdArc::new(move |job: Job| pool.spawn(job));
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let relay = Relay::new(shards, spawn, (self.threads(), cpus), inflight);
        self.relay = Some(relay.clone());
        relay
    }

    /// Closes the relay, and ends and joins the pool if the engine started it. Called once no
    /// shard can hand it more work.
    pub(crate) fn join(self) {
        if let Some(relay) = &self.relay {
            relay.close();
        }
        if self.threads.is_empty() {
            return;
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

/// Starts a rayon pool of `threads` threads named `name-<i>`, with their handles. The error is
/// the system's own when it refuses a thread (rayon's error type stays out of the API).
fn start_pool(threads: usize, name: &str) -> std::io::Result<(ThreadPool, Vec<JoinHandle<()>>)> {
    let mut handles = Vec::with_capacity(threads);
    let mut refused = None;
    let name = name.to_owned();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
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
        .map_err(|e| refused.take().unwrap_or_else(|| std::io::Error::other(e)))?;
    Ok((pool, handles))
}
