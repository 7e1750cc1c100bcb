//! host-stalls: not a workload of the engine but a probe of the machine under it, run apart
//! from the five. One thread per cpu, pinned to it, reads the monotonic clock in a loop for
//! `--seconds` and counts the gaps between two reads longer than 1 ms and 4 ms: the spans in
//! which its cpu ran something else or, on a virtual machine whose host takes the cpu away,
//! nothing of this machine at all. On an otherwise idle machine the gaps are the host's.
//!
//! Why it is here: a timer on a stalled cpu fires late by as much as the stall, whatever the
//! engine does, and the tail of `accuracy` and `slow-callback` (100 timers a millisecond over a
//! second: a p99.9 is a hundred timers) moves with the host's stalls from one hour to the next.
//! Run it just before a measurement to tell a calm hour from a noisy one.

use std::thread;
use std::time::{Duration, Instant};

use super::report::Report;
use super::{Context, Failure, Workload};

/// How long the probe runs, unless `--seconds` says otherwise.
const DEFAULT_SECONDS: u64 = 5;

/// A gap between two clock reads longer than this counts as a stall.
const STALL: Duration = Duration::from_millis(1);

/// A stall longer than this makes, on its own, a hundred timers of `accuracy` on a two-shard
/// engine (fifty a millisecond on the stalled shard) more than 2 ms late.
const LONG_STALL: Duration = Duration::from_millis(4);

/// What one cpu's thread saw.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Gaps {
    /// Gaps longer than [`STALL`].
    stalls: u64,
    /// Gaps longer than [`LONG_STALL`].
    long: u64,
    /// The longest gap.
    longest: Duration,
    /// The gaps longer than [`STALL`], added up.
    lost: Duration,
}

impl Gaps {
    /// Counts one gap between two clock reads.
    fn add(&mut self, gap: Duration) {
        if gap > STALL {
            self.stalls += 1;
            self.lost += gap;
        }
        if gap > LONG_STALL {
            self.long += 1;
        }
        self.longest = self.longest.max(gap);
    }

    fn merge(&mut self, other: Gaps) {
        self.stalls += other.stalls;
        self.long += other.long;
        self.longest = self.longest.max(other.longest);
        self.lost += other.lost;
    }
}

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let seconds = ctx.options.seconds.unwrap_or(DEFAULT_SECONDS);
    let length = Duration::from_secs(seconds);
    let cpus = core_affinity::get_core_ids().unwrap_or_default();
    if cpus.is_empty() {
        return Err(Failure::new("cannot list the cpus to probe"));
    }
    ctx.progress.show(format_args!(
        "host-stalls: {} cpus for {seconds} s",
        cpus.len()
    ));
    let mut all = Gaps::default();
    let mut pinned = 0;
    thread::scope(|scope| {
        let probes: Vec<_> = cpus
            .iter()
            .map(|&cpu| scope.spawn(move || (core_affinity::set_for_current(cpu), probe(length))))
            .collect();
        for probe in probes {
            // A probe's thread only reads the clock: it does not panic.
            let (was_pinned, gaps) = probe.join().unwrap_or_default();
            pinned += u64::from(was_pinned);
            all.merge(gaps);
        }
    });
    if pinned < cpus.len() as u64 {
        ctx.progress.show(format_args!(
            "host-stalls: pinning refused for {} of {} threads; a thread the kernel moves \
             between cpus may miss a stall of the cpu it left",
            cpus.len() as u64 - pinned,
            cpus.len()
        ));
    }
    let cpu_seconds = length.as_secs_f64() * cpus.len() as f64;
    Ok(Report::new(Workload::HostStalls)
        .count("cpus", cpus.len() as u64)
        .count("pinned", pinned)
        .count("seconds", seconds)
        .fixed("stalls_per_sec", all.stalls as f64 / cpu_seconds, 2)
        .fixed("long_stalls_per_sec", all.long as f64 / cpu_seconds, 2)
        .fixed("max_stall_ms", all.longest.as_secs_f64() * 1e3, 2)
        .fixed("lost_pct", all.lost.as_secs_f64() / cpu_seconds * 100.0, 3))
}

/// Reads the clock in a loop for `length`, counting the gaps.
fn probe(length: Duration) -> Gaps {
    let mut gaps = Gaps::default();
    let start = Instant::now();
    let mut last = start;
    loop {
        let now = Instant::now();
        gaps.add(now - last);
        last = now;
        if now - start >= length {
            return gaps;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_count_as_stalls_by_their_length() {
        let mut gaps = Gaps::default();
        for micros in [10, 1_000, 1_500, 4_000, 4_001, 9_000] {
            gaps.add(Duration::from_micros(micros));
        }
        assert_eq!(gaps.stalls, 4);
        assert_eq!(gaps.long, 2);
        assert_eq!(gaps.longest, Duration::from_millis(9));
        assert_eq!(
            gaps.lost,
            Duration::from_micros(1_500 + 4_000 + 4_001 + 9_000)
        );
        let mut both = gaps;
        both.merge(Gaps {
            stalls: 1,
            long: 1,
            longest: Duration::from_millis(12),
            lost: Duration::from_millis(12),
        });
        assert_eq!((both.stalls, both.long), (5, 3));
        assert_eq!(both.longest, Duration::from_millis(12));
    }

    #[test]
    fn a_short_probe_ends_on_time_and_sees_its_own_stalls_only() {
        let started = Instant::now();
        let gaps = probe(Duration::from_millis(20));
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert!(gaps.longest <= started.elapsed());
        assert!(gaps.lost <= started.elapsed());
    }
}
