//! The rayon pool an engine runs its callbacks on: one it starts and joins at shutdown, or the
//! one shared by every engine in the process that asks for no pool of its own (started when
//! an engine first hands it a callback, never joined: an engine whose timers are all
//! cancelled, as a server's timeouts nearly all are, starts no pool thread).

use std::sync::OnceLock;
use std::thread::JoinHandle;

use rayon::ThreadPool;

use super::counts::ShardCallbacks;
use super::relay::{Inflight, Job, Relay, Spawn};
use crate::sync::{Arc, StdArc};

/// The pool shared by engines that bring none, once started (`None`: the system refused its
/// threads).
static SHARED: OnceLock<Option<ThreadPool>> = OnceLock::new();

/// What the callback threads are called (15 bytes at most: Linux cuts a name there).
const NAME: &str = "sw-callback";

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
    /// The engine's own pool; `None`: the shared one.
    pool: Option<StdArc<ThreadPool>>,
    threads: Vec<JoinHandle<()>>,
    /// The relay that starts runners on the pool, closed before the pool is joined.
    relay: Option<StdArc<Relay>>,
}

impl CallbackPool {
    /// Starts a pool of `threads` threads for one engine.
    pub(crate) fn start(threads: usize) -> std::io::Result<Self> {
        let (pool, handles) = start_pool(threads)?;
        Ok(CallbackPool {
            pool: Some(StdArc::new(pool)),
            threads: handles,
            relay: None,
        })
    }

    /// The process's shared pool, started when first handed a job.
    pub(crate) fn shared() -> Self {
        CallbackPool {
            pool: None,
            threads: Vec::new(),
            relay: None,
        }
    }

    /// How many threads the pool has: the most runners its relay starts at once.
    pub(crate) fn threads(&self) -> usize {
        self.pool
            .as_ref()
            .map_or_else(shared_pool_threads, |pool| pool.current_num_threads())
    }

    /// The relay through which `shards` (in shard order) hand their callbacks to this pool,
    /// with as many runners at most as the pool has threads.
    pub(crate) fn relay_for(
        &mut self,
        shards: Vec<Arc<ShardCallbacks>>,
        inflight: Arc<Inflight>,
    ) -> StdArc<Relay> {
        let spawn: Spawn = match self.pool.clone() {
            Some(pool) => StdArc::new(move |job: Job| pool.spawn(job)),
            None => StdArc::new(spawn_shared),
        };
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
        if let Some(Ok(pool)) = self.pool.map(StdArc::try_unwrap) {
            drop(pool);
            for thread in self.threads {
                let _ = thread.join();
            }
        }
    }
}

/// Runs `job` on the shared pool, starting it first if this is its first job; where the system
/// refuses its threads, on a thread of its own, or at last on the caller's.
fn spawn_shared(job: Job) {
    let pool = SHARED.get_or_init(|| start_pool(shared_pool_threads()).ok().map(|(pool, _)| pool));
    match pool {
        Some(pool) => pool.spawn(job),
        None => {
            let job = StdArc::new(std::sync::Mutex::new(Some(job)));
            let theirs = job.clone();
            let on_its_own = std::thread::Builder::new().name(NAME.into());
            if on_its_own.spawn(move || run_once(&theirs)).is_err() {
                run_once(&job);
            }
        }
    }
}

/// Runs the job in `job` unless it ran already.
fn run_once(job: &std::sync::Mutex<Option<Job>>) {
    let taken = job.lock().map_or(None, |mut job| job.take());
    if let Some(job) = taken {
        job();
    }
}

/// Starts a rayon pool of `threads` threads named `sw-callback-<i>`, with their handles. The
/// error is the system's own when it refuses a thread (rayon's error type stays out of the API).
fn start_pool(threads: usize) -> std::io::Result<(ThreadPool, Vec<JoinHandle<()>>)> {
    let mut handles = Vec::with_capacity(threads);
    let mut refused = None;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{NAME}-{i}"))
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
