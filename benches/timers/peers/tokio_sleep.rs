//! tokio's `sleep` on a multi-thread runtime as a peer.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::FutureExt;

use crate::{wait_fired, Local, Peer, FIRED};

pub(crate) struct Tokio {
    runtime: tokio::runtime::Runtime,
}

impl Tokio {
    pub(crate) fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_time()
            .build()
            .expect("build the runtime");
        Tokio { runtime }
    }
}

pub(crate) struct TokioLocal;

impl Local for TokioLocal {
    type Handle = Pin<Box<tokio::time::Sleep>>;

    fn schedule(&mut self, delay: Duration) -> Self::Handle {
        let mut sleep = Box::pin(tokio::time::sleep(delay));
        // The first poll inserts the entry into the runtime's wheel.
        let ready = sleep.as_mut().now_or_never();
        debug_assert!(ready.is_none());
        sleep
    }

    fn cancel(&mut self, handle: Self::Handle) {
        drop(handle);
    }
}

impl Peer for Tokio {
    type Local = TokioLocal;

    fn local(&self) -> TokioLocal {
        TokioLocal
    }

    fn enter<R>(&self, body: impl FnOnce() -> R) -> R {
        self.runtime.block_on(async move { body() })
    }

    fn fire(&self, delays: &[Duration]) {
        for &delay in delays {
            self.runtime.spawn(async move {
                tokio::time::sleep(delay).await;
                FIRED.fetch_add(1, Ordering::Release);
            });
        }
        wait_fired(delays.len());
    }

    fn fire_burst(&self, due: Instant, n: usize) -> Instant {
        let due = tokio::time::Instant::from_std(due);
        for _ in 0..n {
            self.runtime.spawn(async move {
                tokio::time::sleep_until(due).await;
                FIRED.fetch_add(1, Ordering::Release);
            });
        }
        let scheduled = Instant::now();
        wait_fired(n);
        scheduled
    }

    fn shutdown(self) {
        self.runtime.shutdown_timeout(Duration::from_secs(5));
    }
}
