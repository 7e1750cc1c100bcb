//! The patterns each group runs on every peer: schedule, cancel, churn, fire, burst.

use std::sync::atomic::Ordering;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Throughput};

use crate::{Local, Peer, BURST, BURST_LEAD, FIRED, RING};

pub(crate) type Group<'a> = BenchmarkGroup<'a, WallTime>;

pub(crate) fn bench_schedule<P: Peer>(
    group: &mut Group<'_>,
    name: &str,
    peer: P,
    delays: &[Duration],
) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            peer.enter(|| {
                let mut local = peer.local();
                let mut handles = Vec::with_capacity(delays.len());
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    for &delay in delays {
                        handles.push(local.schedule(delay));
                    }
                    total += start.elapsed();
                    for handle in handles.drain(..) {
                        local.cancel(handle);
                    }
                    peer.settle(0);
                }
                total
            })
        })
    });
    peer.shutdown();
}

pub(crate) fn bench_cancel<P: Peer>(
    group: &mut Group<'_>,
    name: &str,
    peer: P,
    delays: &[Duration],
) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            peer.enter(|| {
                let mut local = peer.local();
                let mut handles = Vec::with_capacity(delays.len());
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    handles.extend(delays.iter().map(|&delay| local.schedule(delay)));
                    peer.settle(delays.len());
                    let start = Instant::now();
                    for handle in handles.drain(..) {
                        local.cancel(handle);
                    }
                    total += start.elapsed();
                    peer.settle(0);
                }
                total
            })
        })
    });
    peer.shutdown();
}

/// One churn thread: fills its ring (untimed), waits for the others, runs `ops` ops, and
/// returns when it started and finished them.
pub(crate) fn churn_thread<P: Peer>(
    peer: &P,
    ops: u64,
    delays: &[Duration],
    start: &Barrier,
) -> (Instant, Instant) {
    peer.enter(|| {
        let mut local = peer.local();
        let mut ring: Vec<_> = delays[..RING]
            .iter()
            .map(|&delay| local.schedule(delay))
            .collect();
        let mask = delays.len() - 1;
        start.wait();
        let started = Instant::now();
        let mut slot = 0;
        for op in 0..ops as usize {
            let fresh = local.schedule(delays[op & mask]);
            let old = std::mem::replace(&mut ring[slot], fresh);
            local.cancel(old);
            slot += 1;
            if slot == RING {
                slot = 0;
            }
        }
        let finished = Instant::now();
        for handle in ring {
            local.cancel(handle);
        }
        (started, finished)
    })
}

pub(crate) fn bench_churn<P: Peer>(
    group: &mut Group<'_>,
    name: &str,
    peer: P,
    delays: &[Duration],
) {
    for threads in [1, 2] {
        let id = if threads == 1 {
            "1_thread".to_owned()
        } else {
            format!("{threads}_threads")
        };
        group.throughput(Throughput::Elements(threads as u64));
        group.bench_function(BenchmarkId::new(name, id), |b| {
            b.iter_custom(|iters| {
                let start = Barrier::new(threads);
                let spans: Vec<(Instant, Instant)> = thread::scope(|scope| {
                    let workers: Vec<_> = (0..threads)
                        .map(|_| scope.spawn(|| churn_thread(&peer, iters, delays, &start)))
                        .collect();
                    workers
                        .into_iter()
                        .map(|worker| worker.join().expect("churn thread"))
                        .collect()
                });
                peer.settle(0);
                let first = spans.iter().map(|span| span.0).min().expect("a thread");
                let last = spans.iter().map(|span| span.1).max().expect("a thread");
                last - first
            })
        });
    }
    peer.shutdown();
}

pub(crate) fn bench_fire<P: Peer>(group: &mut Group<'_>, name: &str, peer: P, delays: &[Duration]) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                FIRED.store(0, Ordering::Release);
                let start = Instant::now();
                peer.fire(delays);
                total += start.elapsed();
            }
            total
        })
    });
    peer.shutdown();
}

pub(crate) fn bench_fire_burst<P: Peer>(group: &mut Group<'_>, name: &str, peer: P) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                FIRED.store(0, Ordering::Release);
                let due = Instant::now() + BURST_LEAD;
                let scheduled = peer.fire_burst(due, BURST);
                assert!(
                    scheduled < due,
                    "{name}: scheduling {BURST} timers took longer than {BURST_LEAD:?}"
                );
                total += due.elapsed();
            }
            total
        })
    });
    peer.shutdown();
}
