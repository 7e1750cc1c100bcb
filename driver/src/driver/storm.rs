//! storm: a million deadlines run out at once. N timers due at one instant T0, scheduled from
//! T threads, and 300 sentinels due every millisecond around T0; each callback stores the
//! instant it ran. Not one of the five: it runs only when named.
//!
//! The peers: shardwheel (the engine the options ask for) and, with `--peer tokio`, a task per
//! timer sleeping on `tokio::time` in a runtime of T workers.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shardwheel::TimerEngine;
use tokio::runtime::Runtime;

use super::args::Peer;
use super::lateness::nearest_rank;
use super::report::Report;
use super::{count, parallel, slots, wait, Context, Failure, Workload};

/// Storm timers, unless `--timers` says otherwise.
const DEFAULT_TIMERS: usize = 1_000_000;

/// Scheduling threads (tokio: workers), unless `--threads` says otherwise.
const DEFAULT_THREADS: usize = 2;

/// T0, the instant every storm timer is due, after the start.
const LEAD: Duration = Duration::from_millis(600);

/// Scheduling must be over this long before T0, or the timers would not run out together.
const MARGIN: Duration = Duration::from_millis(50);

/// The sentinels: one due every [`SENTINEL_STEP`], the first [`SENTINELS_BEFORE`] before T0.
const SENTINELS: usize = 300;
const SENTINELS_BEFORE: Duration = Duration::from_millis(100);
const SENTINEL_STEP: Duration = Duration::from_millis(1);

/// How long to wait beyond the last deadline; callbacks not run by then are reported missing.
const GRACE: Duration = Duration::from_secs(30);

/// A slot's value until its callback runs.
const NOT_RUN: u64 = u64::MAX;

/// Workers report their progress every this many timers.
const PROGRESS_STEP: usize = 1 << 16;

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let timers = ctx.options.timers.unwrap_or(DEFAULT_TIMERS);
    let threads = ctx.options.threads.unwrap_or(DEFAULT_THREADS);
    let peer = ctx.options.peer.unwrap_or(Peer::Shardwheel);
    let slots = slots(timers + SENTINELS, || AtomicU64::new(NOT_RUN))?;
    // Started before the start, so their threads' start-up is not in the 600 ms.
    let timer = match peer {
        Peer::Shardwheel => Timer::Engine(ctx.engine()?),
        Peer::Tokio => Timer::Runtime(runtime(threads)?),
    };
    let start = Instant::now();
    // Leaked: a callback that never ran within the wait may still run after the report, and
    // the callbacks share no reference count in the drain being measured.
    let recorder: &'static Recorder = Box::leak(Box::new(Recorder {
        origin: start,
        ran_at_ns: slots,
    }));
    ctx.progress
        .show(format_args!("storm: scheduling {timers} timers"));
    match &timer {
        Timer::Engine(engine) => on_engine(ctx, engine, recorder, timers, threads)?,
        Timer::Runtime(runtime) => on_runtime(runtime, recorder, timers, threads)?,
    }
    let scheduled = start.elapsed();
    if scheduled > LEAD - MARGIN {
        return Err(Failure::new(format!(
            "scheduling {timers} timers took {} ms, past T0 - {} ms (T0 = start + {} ms): \
             the timers would not run out together; run fewer timers (--timers)",
            scheduled.as_millis(),
            MARGIN.as_millis(),
            LEAD.as_millis()
        )));
    }
    wait_for_all(ctx, recorder);
    let summary = summarize(&recorder.ran_at_ns(), timers);
    drop(timer);
    Ok(summary
        .add_to(Report::new(Workload::Storm), timers, threads)
        .label("peer", peer.name())
        .fixed("schedule_ms", scheduled.as_secs_f64() * 1e3, 1))
}

/// Whose timers the storm runs on.
enum Timer {
    Engine(TimerEngine),
    Runtime(Runtime),
}

/// Callback `index`'s deadline after the start: T0 for the storm's timers (indices below
/// `timers`), then the sentinels' in order.
fn due(index: usize, timers: usize) -> Duration {
    match index.checked_sub(timers) {
        None => LEAD,
        Some(sentinel) => LEAD - SENTINELS_BEFORE + SENTINEL_STEP * sentinel as u32,
    }
}

/// `total` indices in `parts` consecutive ranges whose lengths differ by at most one.
fn shares(total: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let (base, extra) = (total / parts, total % parts);
    let mut next = 0;
    (0..parts)
        .map(|part| {
            let len = base + usize::from(part < extra);
            next += len;
            next - len..next
        })
        .collect()
}

/// Where the callbacks store the instant they ran.
struct Recorder {
    /// The start: every instant is stored as nanoseconds after it.
    origin: Instant,
    /// Each callback's run instant, or [`NOT_RUN`].
    ran_at_ns: Vec<AtomicU64>,
}

impl Recorder {
    /// All callback `index` does.
    fn record(&self, index: usize) {
        let ran = Instant::now().saturating_duration_since(self.origin);
        if let Some(slot) = self.ran_at_ns.get(index) {
            // Release: pairs with the Acquire loads below. A slot each, so no cache line is
            // shared by every callback (as a counter would be).
            slot.store(nanos(ran), Ordering::Release);
        }
    }

    /// Advances `next` past the slots filled in from it on; returns it.
    fn seen_through(&self, next: &mut usize) -> usize {
        while let Some(slot) = self.ran_at_ns.get(*next) {
            if slot.load(Ordering::Acquire) == NOT_RUN {
                break;
            }
            *next += 1;
        }
        *next
    }

    fn ran_at_ns(&self) -> Vec<u64> {
        self.ran_at_ns
            .iter()
            .map(|slot| slot.load(Ordering::Acquire))
            .collect()
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX - 1)
}

/// Schedules the sentinels from this thread, then the storm from `threads` threads.
fn on_engine(
    ctx: &Context,
    engine: &TimerEngine,
    recorder: &'static Recorder,
    timers: usize,
    threads: usize,
) -> Result<(), Failure> {
    for index in timers..timers + SENTINELS {
        engine
            .schedule_at(recorder.origin + due(index, timers), move || {
                recorder.record(index);
            })
            .map_err(Failure::schedule)?;
    }
    let t0 = recorder.origin + LEAD;
    let shares = shares(timers, threads);
    parallel::run_timed(
        ctx,
        "storm: scheduling",
        count(timers),
        shares,
        |_, share| schedule_share(ctx, engine, recorder, t0, share),
    )?;
    Ok(())
}

/// Schedules the storm timers of indices `share`, all due at `t0`.
fn schedule_share(
    ctx: &Context,
    engine: &TimerEngine,
    recorder: &'static Recorder,
    t0: Instant,
    share: Range<usize>,
) -> Result<(), Failure> {
    for (n, index) in share.enumerate() {
        // The handle is dropped: that neither cancels the timer nor leaks it.
        engine
            .schedule_at(t0, move || recorder.record(index))
            .map_err(Failure::schedule)?;
        if n % PROGRESS_STEP == PROGRESS_STEP - 1 {
            ctx.progress.add(count(PROGRESS_STEP));
        }
    }
    Ok(())
}

/// A multi-thread runtime of `workers` workers with tokio's timer.
fn runtime(workers: usize) -> Result<Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .map_err(|error| Failure::new(format!("could not start the tokio runtime: {error}")))
}

/// Spawns the sentinels' tasks from this thread, then the storm's from `threads` spawning
/// tasks on the runtime; returns once every task is spawned.
fn on_runtime(
    runtime: &Runtime,
    recorder: &'static Recorder,
    timers: usize,
    threads: usize,
) -> Result<(), Failure> {
    for index in timers..timers + SENTINELS {
        drop(runtime.spawn(sleeper(recorder, index, due(index, timers))));
    }
    let spawners: Vec<_> = shares(timers, threads)
        .into_iter()
        .map(|share| {
            runtime.spawn(async move {
                for index in share {
                    drop(tokio::spawn(sleeper(recorder, index, LEAD)));
                }
            })
        })
        .collect();
    runtime.block_on(async {
        for spawner in spawners {
            spawner
                .await
                .map_err(|error| Failure::new(format!("a spawning task failed: {error}")))?;
        }
        Ok(())
    })
}

/// A task that sleeps until `due` after the start, then records that it ran.
async fn sleeper(recorder: &'static Recorder, index: usize, due: Duration) {
    tokio::time::sleep_until((recorder.origin + due).into()).await;
    recorder.record(index);
}

/// Waits until every callback has run, or until [`GRACE`] after the last deadline; those
/// that have not run by then are counted missing, not failed on.
fn wait_for_all(ctx: &Context, recorder: &Recorder) {
    let total = recorder.ran_at_ns.len();
    let last_due = LEAD - SENTINELS_BEFORE + SENTINEL_STEP * SENTINELS as u32;
    let mut next = 0;
    let waited = wait::poll_until(ctx, "storm: callbacks to run", last_due + GRACE, || {
        let seen = recorder.seen_through(&mut next);
        (seen == total, format!("the first {seen} of {total} ran"))
    });
    if let Err(failure) = waited {
        eprintln!("storm: warning: {failure}; those not run are reported missing");
    }
}

/// What the recorded instants show.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Summary {
    /// The first and the last storm callback's run instant after T0 (negative: before).
    first_ns: Option<i64>,
    drain_ns: Option<i64>,
    /// The storm callbacks' lateness after T0 (0 for one that ran early).
    p50_ns: Option<u64>,
    p99_ns: Option<u64>,
    /// The lateness of the sentinels due at or after T0.
    sentinel_p99_ns: Option<u64>,
    sentinel_max_ns: Option<u64>,
    /// Callbacks, storm or sentinel, that ran before their deadline.
    early: u64,
    /// Callbacks that had not run.
    missing: u64,
}

/// Summarizes the run instants (ns after the start, or [`NOT_RUN`]) of `timers` storm
/// callbacks followed by the sentinels'.
fn summarize(ran_at_ns: &[u64], timers: usize) -> Summary {
    let t0 = nanos(LEAD);
    let mut storm = Vec::with_capacity(timers);
    let mut sentinels = Vec::with_capacity(SENTINELS);
    let (mut early, mut missing) = (0, 0);
    for (index, &ran) in ran_at_ns.iter().enumerate() {
        if ran == NOT_RUN {
            missing += 1;
            continue;
        }
        let due = nanos(due(index, timers));
        if ran < due {
            early += 1;
        }
        if index < timers {
            storm.push(ran);
        } else if due >= t0 {
            sentinels.push(ran.saturating_sub(due));
        }
    }
    storm.sort_unstable();
    sentinels.sort_unstable();
    let after_t0 = |ran: u64| ran as i64 - t0 as i64;
    let late: Vec<u64> = storm.iter().map(|ran| ran.saturating_sub(t0)).collect();
    let rank =
        |sorted: &[u64], per_mille| (!sorted.is_empty()).then(|| nearest_rank(sorted, per_mille));
    Summary {
        first_ns: storm.first().map(|&ran| after_t0(ran)),
        drain_ns: storm.last().map(|&ran| after_t0(ran)),
        p50_ns: rank(&late, 500),
        p99_ns: rank(&late, 990),
        sentinel_p99_ns: rank(&sentinels, 990),
        sentinel_max_ns: sentinels.last().copied(),
        early,
        missing,
    }
}

impl Summary {
    /// Adds the keys from `timers` to `missing`, in the order they are defined.
    fn add_to(&self, report: Report, timers: usize, threads: usize) -> Report {
        let ms = |ns: Option<u64>| ns.map_or(f64::NAN, |ns| ns as f64 / 1e6);
        let signed_ms = |ns: Option<i64>| ns.map_or(f64::NAN, |ns| ns as f64 / 1e6);
        report
            .count("timers", count(timers))
            .count("threads", count(threads))
            .fixed("first_ms", signed_ms(self.first_ns), 3)
            .fixed("drain_ms", signed_ms(self.drain_ns), 3)
            .fixed("p50_ms", ms(self.p50_ns), 3)
            .fixed("p99_ms", ms(self.p99_ns), 3)
            .fixed("sentinel_p99_ms", ms(self.sentinel_p99_ns), 3)
            .fixed("sentinel_max_ms", ms(self.sentinel_max_ns), 3)
            .fixed("fire_mops", fire_mops(timers, self.drain_ns), 3)
            .count("early", self.early)
            .count("missing", self.missing)
    }
}

/// `timers` over the drain, in millions a second (NaN when the drain took no time).
fn fire_mops(timers: usize, drain_ns: Option<i64>) -> f64 {
    match drain_ns {
        Some(drain) if drain > 0 => timers as f64 * 1e3 / drain as f64,
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Run instants where every callback ran `late` ns after its deadline.
    fn on_time(timers: usize, late: u64) -> Vec<u64> {
        (0..timers + SENTINELS)
            .map(|index| nanos(due(index, timers)) + late)
            .collect()
    }

    #[test]
    fn sentinels_are_due_every_millisecond_around_t0() {
        assert_eq!(due(0, 10), LEAD);
        assert_eq!(due(9, 10), LEAD);
        assert_eq!(due(10, 10), LEAD - Duration::from_millis(100));
        assert_eq!(due(110, 10), LEAD);
        assert_eq!(
            due(10 + SENTINELS - 1, 10),
            LEAD + Duration::from_millis(199)
        );
    }

    #[test]
    fn shares_cover_every_index_once() {
        assert_eq!(shares(10, 4), [0..3, 3..6, 6..8, 8..10]);
        assert_eq!(shares(1, 2), [0..1, 1..1]);
        assert_eq!(shares(5, 0).len(), 1);
        assert_eq!(shares(5, 0)[0], 0..5);
    }

    #[test]
    fn the_drain_runs_from_t0_to_the_last_storm_callback() {
        let timers = 4;
        let mut ran = on_time(timers, 0);
        let t0 = nanos(LEAD);
        ran[..timers].copy_from_slice(&[t0 + 3 * MS, t0 + MS, t0 + 2 * MS, t0 + 8 * MS]);
        // A sentinel due before T0, late by far: not among the sentinels reported.
        ran[timers] += 500 * MS;
        // One due at T0 + 10 ms, 4 ms late.
        ran[timers + 110] += 4 * MS;
        let summary = summarize(&ran, timers);
        assert_eq!(summary.first_ns, Some(1_000_000));
        assert_eq!(summary.drain_ns, Some(8_000_000));
        assert_eq!(summary.p50_ns, Some(2 * MS));
        assert_eq!(summary.p99_ns, Some(8 * MS));
        assert_eq!(summary.sentinel_max_ns, Some(4 * MS));
        assert_eq!(summary.sentinel_p99_ns, Some(0));
        assert_eq!((summary.early, summary.missing), (0, 0));
        let report = summary.add_to(Report::new(Workload::Storm), timers, 2);
        assert_eq!(report.number("first_ms"), Some(1.0));
        assert_eq!(report.number("drain_ms"), Some(8.0));
        assert_eq!(fire_mops(1_000_000, Some(250 * 1_000_000)), 4.0);
        assert!(fire_mops(1_000_000, Some(0)).is_nan());
    }

    #[test]
    fn early_and_missing_callbacks_are_counted_storm_or_sentinel() {
        let timers = 3;
        let mut ran = on_time(timers, 0);
        let t0 = nanos(LEAD);
        // A storm callback 1 ns early, a sentinel due before T0 1 ms early.
        ran[1] = t0 - 1;
        ran[timers + 5] -= MS;
        // A storm callback and a sentinel that never ran.
        ran[2] = NOT_RUN;
        ran[timers + SENTINELS - 1] = NOT_RUN;
        let summary = summarize(&ran, timers);
        assert_eq!(summary.early, 2);
        assert_eq!(summary.missing, 2);
        assert_eq!(summary.first_ns, Some(-1));
        assert_eq!(summary.drain_ns, Some(0));
        assert_eq!(summary.p99_ns, Some(0), "an early callback is 0 late");
        // On time to the nanosecond is not early.
        let summary = summarize(&on_time(timers, 0), timers);
        assert_eq!((summary.early, summary.missing), (0, 0));
    }

    #[test]
    fn nothing_run_is_all_missing_and_no_figures() {
        let summary = summarize(&[NOT_RUN; 2 + SENTINELS], 2);
        assert_eq!(summary.missing, count(2 + SENTINELS));
        assert_eq!((summary.first_ns, summary.p50_ns), (None, None));
        let report = summary.add_to(Report::new(Workload::Storm), 2, 1);
        assert_eq!(report.number("fire_mops"), None);
        assert_eq!(report.number("drain_ms"), None);
    }

    #[test]
    fn the_wait_sees_slots_in_order() {
        let recorder = Recorder {
            origin: Instant::now(),
            ran_at_ns: (0..3).map(|_| AtomicU64::new(NOT_RUN)).collect(),
        };
        let mut next = 0;
        recorder.record(1);
        assert_eq!(recorder.seen_through(&mut next), 0);
        recorder.record(0);
        assert_eq!(recorder.seen_through(&mut next), 2);
        recorder.record(2);
        assert_eq!(recorder.seen_through(&mut next), 3);
        assert!(recorder.ran_at_ns().iter().all(|&ns| ns != NOT_RUN));
    }
}
