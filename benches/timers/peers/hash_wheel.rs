//! hierarchical_hash_wheel_timer's thread-backed timer as a peer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hierarchical_hash_wheel_timer::thread_timer::{TimerRef, TimerWithThread};
use hierarchical_hash_wheel_timer::{
    ClosureTimer, OneShotClosureState, PeriodicClosureState, Timer,
};

use crate::{wait_fired, Local, Peer, FIRED};

pub(crate) type WheelTimer =
    TimerWithThread<u64, OneShotClosureState<u64>, PeriodicClosureState<u64>>;
pub(crate) type WheelRef = TimerRef<u64, OneShotClosureState<u64>, PeriodicClosureState<u64>>;

pub(crate) struct HashWheel {
    timer: WheelTimer,
    /// Hands each local handle its own range of timer ids.
    next_range: AtomicU64,
}

impl HashWheel {
    pub(crate) fn start() -> Self {
        HashWheel {
            timer: WheelTimer::new().expect("start the timer thread"),
            next_range: AtomicU64::new(0),
        }
    }

    fn id_range(&self) -> u64 {
        self.next_range.fetch_add(1 << 40, Ordering::Relaxed)
    }
}

pub(crate) struct HashWheelLocal {
    timer: WheelRef,
    next_id: u64,
}

impl Local for HashWheelLocal {
    type Handle = u64;

    fn schedule(&mut self, delay: Duration) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.timer.schedule_action_once(id, delay, |_| {});
        id
    }

    fn cancel(&mut self, id: u64) {
        self.timer.cancel(&id);
    }
}

impl Peer for HashWheel {
    type Local = HashWheelLocal;

    fn local(&self) -> HashWheelLocal {
        HashWheelLocal {
            timer: self.timer.timer_ref(),
            next_id: self.id_range(),
        }
    }

    fn settle(&self, _live: usize) {
        // The timer thread takes messages in order, and runs a zero-delay timer as it takes it
        // in: once this one has run, everything sent before it has been taken in.
        let (done, ran) = mpsc::channel();
        self.timer
            .timer_ref()
            .schedule_action_once(self.id_range(), Duration::ZERO, move |_| {
                let _ = done.send(());
            });
        ran.recv_timeout(Duration::from_secs(60))
            .expect("the timer thread drains its queue");
    }

    fn fire(&self, delays: &[Duration]) {
        let mut timer = self.timer.timer_ref();
        let first = self.id_range();
        for (id, &delay) in (first..).zip(delays) {
            timer.schedule_action_once(id, delay, |_| {
                FIRED.fetch_add(1, Ordering::Release);
            });
        }
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        let mut timer = self.timer.timer_ref();
        let first = self.id_range();
        for id in first..first + n as u64 {
            let delay = due.saturating_duration_since(Instant::now());
            timer.schedule_action_once(id, delay, |_| {
                FIRED.fetch_add(1, Ordering::Release);
            });
        }
        let scheduled = Instant::now();
        wait_fired(n);
        scheduled
    }

    fn shutdown(self) {
        self.timer.shutdown().expect("stop the timer thread");
    }
}
