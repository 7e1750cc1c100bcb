//! accuracy: firing on time. K timers due within a second, scheduled from one thread; every
//! callback records how late it ran.

use super::report::Report;
use super::{count, lateness, Context, Failure, Workload};

/// Timers, unless `--timers` says otherwise.
const DEFAULT_TIMERS: usize = 100_000;

pub(crate) fn run(ctx: &Context) -> Result<Report, Failure> {
    let timers = ctx.options.timers.unwrap_or(DEFAULT_TIMERS);
    let engine = ctx.engine()?;
    let lateness = lateness::measure(ctx, &engine, timers)?;
    let report = Report::new(Workload::Accuracy).count("timers", count(timers));
    Ok(lateness.add_to(report))
}
