//! accuracy: firing on time. K timers due within a second, scheduled from one thread; every
//! callback records how late it ran. Beside the measured percentiles, `engine_p99_ms` is the
//! engine's own figure (`Stats::lateness`, a power-of-two histogram kept by the tick threads):
//! the two should agree within a bucket.

use super::report::Report;
use super::{count, lateness, Context, Failure, Workload};

/// Timers, unless `--timers` says otherwise.
const DEFAULT_TIMERS: usize = 100_000;

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let timers = ctx.options.timers.unwrap_or(DEFAULT_TIMERS);
    let engine = ctx.engine()?;
    let lateness = lateness::measure(ctx, &engine, timers)?;
    let report = Report::new(Workload::Accuracy).count("timers", count(timers));
    let engine_p99 = engine.stats().lateness.p99().unwrap_or_default();
    Ok(lateness
        .add_to(report)
        .fixed("engine_p99_ms", engine_p99.as_secs_f64() * 1e3, 3))
}
