//! futures-timer's `Delay` as a peer, driven on the benchmark thread.

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;

use crate::{wait_fired, Local, Peer, FIRED};

/// futures-timer's global timer: its helper thread starts on first use and is never stopped.
pub(crate) struct FuturesTimer;

pub(crate) struct FuturesTimerLocal;

impl Local for FuturesTimerLocal {
    type Handle = futures_timer::Delay;

    fn schedule(&mut self, delay: Duration) -> futures_timer::Delay {
        // `Delay::new` hands the timer to the helper thread; the first poll sets its waker.
        let mut timer = futures_timer::Delay::new(delay);
        let ready = (&mut timer).now_or_never();
        debug_assert!(ready.is_none());
        timer
    }

    fn cancel(&mut self, handle: futures_timer::Delay) {
        drop(handle);
    }
}

impl Peer for FuturesTimer {
    type Local = FuturesTimerLocal;

    fn local(&self) -> FuturesTimerLocal {
        FuturesTimerLocal
    }

    fn settle(&self, _live: usize) {
        // The helper thread offers no way to ask whether it is idle; give it a moment.
        thread::sleep(Duration::from_millis(2));
    }

    fn fire(&self, delays: &[Duration]) {
        futures::executor::block_on(async {
            let mut pending: FuturesUnordered<_> = delays
                .iter()
                .map(|&delay| futures_timer::Delay::new(delay))
                .collect();
            while pending.next().await.is_some() {
                FIRED.fetch_add(1, Ordering::Release);
            }
        });
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        futures::executor::block_on(async {
            let mut pending: FuturesUnordered<_> = (0..n)
                .map(|_| futures_timer::Delay::new(due.saturating_duration_since(Instant::now())))
                .collect();
            let scheduled = Instant::now();
            while pending.next().await.is_some() {
                FIRED.fetch_add(1, Ordering::Release);
            }
            scheduled
        })
    }

    fn shutdown(self) {}
}
