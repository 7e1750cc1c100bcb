//! shardwheel's `TimerEngine` as a peer, its callbacks on the pool or inline.

use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{TimerEngine, TimerHandle};

use crate::{wait_fired, Local, Peer, FIRED};

pub(crate) struct Shardwheel {
    engine: Arc<TimerEngine>,
}

impl Shardwheel {
    pub(crate) fn start(inline_callbacks: bool) -> Self {
        let builder = TimerEngine::builder();
        let builder = if inline_callbacks {
            builder.inline_callbacks()
        } else {
            builder
        };
        Shardwheel {
            engine: Arc::new(builder.build().expect("build the engine")),
        }
    }

    /// The default engine, keeping each timer's origin (`track_sites`).
    pub(crate) fn tracked() -> Self {
        let builder = TimerEngine::builder().track_sites(true);
        Shardwheel {
            engine: Arc::new(builder.build().expect("build the engine")),
        }
    }
}

pub(crate) struct ShardwheelLocal(Arc<TimerEngine>);

impl Local for ShardwheelLocal {
    type Handle = TimerHandle;

    fn schedule(&mut self, delay: Duration) -> TimerHandle {
        self.0.schedule(delay, || {}).expect("schedule")
    }

    fn cancel(&mut self, handle: TimerHandle) {
        black_box(handle.cancel());
    }
}

impl Peer for Shardwheel {
    type Local = ShardwheelLocal;

    fn local(&self) -> ShardwheelLocal {
        ShardwheelLocal(self.engine.clone())
    }

    fn settle(&self, live: usize) {
        // A shard takes its queues in once a tick; after that its wheel holds exactly the
        // timers still pending.
        thread::sleep(self.engine.tick());
        let give_up = Instant::now() + Duration::from_secs(5);
        loop {
            let in_wheel: u64 = self.engine.stats().shards.iter().map(|s| s.in_wheel).sum();
            if in_wheel == live as u64 {
                return;
            }
            if Instant::now() > give_up {
                eprintln!("shardwheel: {in_wheel} timers in the wheels, {live} expected");
                return;
            }
            thread::sleep(Duration::from_micros(200));
        }
    }

    fn fire(&self, delays: &[Duration]) {
        for &delay in delays {
            let handle = self.engine.schedule(delay, || {
                FIRED.fetch_add(1, Ordering::Release);
            });
            drop(handle.expect("schedule"));
        }
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        for _ in 0..n {
            let handle = self.engine.schedule_at(due, || {
                FIRED.fetch_add(1, Ordering::Release);
            });
            drop(handle.expect("schedule"));
        }
        let scheduled = Instant::now();
        wait_fired(n);
        scheduled
    }

    fn shutdown(self) {
        drop(self.engine.shutdown());
    }
}
