//! slow-callback: a slow callback must not delay the others. As accuracy, after S timers whose
//! callbacks sleep 100 ms; lateness is recorded for the K normal timers only.

use std::thread;
use std::time::Duration;

use shardwheel::TimerEngine;

use super::report::Report;
use super::rng::{Delays, Rng};
use super::{count, lateness, Context, Failure, Workload};

/// Normal timers, unless `--timers` says otherwise.
const DEFAULT_TIMERS: usize = 100_000;

/// Slow timers, unless `--slow` says otherwise.
const DEFAULT_SLOW: usize = 20;

/// The slow timers' delays: 0–1000 ms at microsecond granularity.
const SLOW_DELAYS: Delays = Delays::millis(0, 1000);

/// How long a slow callback takes.
const SLOW_SLEEP: Duration = Duration::from_millis(100);

/// The seed stream of the slow timers' delays (the normal ones use accuracy's).
const SLOW_STREAM: u64 = 4;

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let timers = ctx.options.timers.unwrap_or(DEFAULT_TIMERS);
    let slow = ctx.options.slow.unwrap_or(DEFAULT_SLOW);
    let engine = ctx.engine()?;
    schedule_slow(&engine, slow)?;
    let lateness = lateness::measure(ctx, &engine, timers)?;
    let report = Report::new(Workload::SlowCallback)
        .count("timers", count(timers))
        .count("slow", count(slow));
    // Dropping the engine waits for any slow callback still sleeping.
    Ok(lateness.add_to(report))
}

fn schedule_slow(engine: &TimerEngine, slow: usize) -> Result<(), Failure> {
    let mut rng = Rng::new(SLOW_STREAM, 0);
    for _ in 0..slow {
        engine
            .schedule(rng.delay(SLOW_DELAYS), || thread::sleep(SLOW_SLEEP))
            .map_err(Failure::schedule)?;
    }
    Ok(())
}
