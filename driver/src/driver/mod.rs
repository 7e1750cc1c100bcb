//! The heart of the driver: which workloads exist, how one is run, and how failures are reported.

mod accuracy;
#[cfg(feature = "mimalloc")]
pub(crate) mod alloc;
mod args;
mod child;
mod conn_idle;
mod fill;
mod help;
mod host_stalls;
mod idle_hold;
mod lateness;
mod parallel;
mod plot;
mod proc;
mod progress;
mod report;
mod rng;
mod rpc_churn;
mod scaling;
mod sleeping_tasks;
mod slow_callback;
mod spike;
mod storm;
mod wait;

use std::ffi::OsString;
use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

use shardwheel::{engine::Builder, ScheduleError, TimerEngine};

use args::{Command, Options};
use progress::Progress;
use report::{Report, Table};

/// The exit status for a bad command line (clap's for a usage error).
const USAGE_EXIT: u8 = 2;

/// The engine's tick for every workload unless `--tick-us` says otherwise (the engine's
/// default, set explicitly because the accuracy workloads are defined at it).
const TICK: Duration = Duration::from_millis(1);

/// The five workloads, in the order a full run takes them, then the workloads and the probe of
/// the machine that run only when named. On the command line each is named as [`Workload::name`] says (clap's
/// names for the variants: kebab-case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Workload {
    RpcChurn,
    ConnIdle,
    Accuracy,
    SlowCallback,
    IdleHold,
    /// Not one of the five: a tokio runtime's sleeping tasks (`sleeping_tasks`).
    SleepingTasks,
    /// Not one of the five: rpc-churn and a timeout in tasks over thread counts (`scaling`).
    Scaling,
    /// Not one of the five: timers all due at one instant, and sentinels around it (`storm`).
    Storm,
    /// Not one of the five: the resident set after a spike of timers is cancelled (`spike`).
    Spike,
    /// Not a workload of the engine: how long the machine's cpus stall (`host_stalls`).
    HostStalls,
}

impl Workload {
    /// Every workload, in the order a full run takes them (each in a child process of its own).
    pub(crate) const ALL: [Workload; 5] = [
        Workload::RpcChurn,
        Workload::ConnIdle,
        Workload::Accuracy,
        Workload::SlowCallback,
        Workload::IdleHold,
    ];

    /// The name on the command line and in the reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::RpcChurn => "rpc-churn",
            Workload::ConnIdle => "conn-idle",
            Workload::Accuracy => "accuracy",
            Workload::SlowCallback => "slow-callback",
            Workload::IdleHold => "idle-hold",
            Workload::SleepingTasks => "sleeping-tasks",
            Workload::Scaling => "scaling",
            Workload::Storm => "storm",
            Workload::Spike => "spike",
            Workload::HostStalls => "host-stalls",
        }
    }

    fn run(self, ctx: &Context) -> Result<Report, Failure> {
        match self {
            Workload::RpcChurn => rpc_churn::run(ctx),
            Workload::ConnIdle => conn_idle::run(ctx),
            Workload::Accuracy => accuracy::run(ctx),
            Workload::SlowCallback => slow_callback::run(ctx),
            Workload::IdleHold => idle_hold::run(ctx),
            Workload::SleepingTasks => sleeping_tasks::run(ctx),
            Workload::Scaling => scaling::run(ctx),
            Workload::Storm => storm::run(ctx),
            Workload::Spike => spike::run(ctx),
            Workload::HostStalls => host_stalls::run(ctx),
        }
    }
}

/// What every workload is given: the command line's options and the progress line.
pub(crate) struct Context {
    pub(crate) options: Options,
    pub(crate) progress: Progress,
}

impl Context {
    /// A fresh engine as the options ask for (engine defaults where they say nothing).
    pub(crate) fn engine(&self) -> Result<TimerEngine, Failure> {
        self.engine_builder()
            .build()
            .map_err(|error| Failure::new(format!("could not start the timer engine: {error}")))
    }

    /// An engine's settings as the options ask for them.
    pub(crate) fn engine_builder(&self) -> Builder {
        let mut builder = TimerEngine::builder()
            .tick(self.options.tick_us.map_or(TICK, Duration::from_micros))
            .pin_threads(self.options.pin);
        if let Some(shards) = self.options.shards {
            builder = builder.shards(shards);
        }
        if let Some(threads) = self.options.callback_threads {
            builder = builder.callback_threads(threads);
        }
        // Last: inline callbacks take the place of any callback pool.
        if self.options.inline {
            builder = builder.inline_callbacks();
        }
        builder
    }
}

/// Why a workload could not finish.
#[derive(Debug)]
pub(crate) struct Failure(String);

impl Failure {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Failure(message.into())
    }

    /// The engine refused a timer (none of the workloads expects it to).
    pub(crate) fn schedule<F>(error: ScheduleError<F>) -> Self {
        Failure(format!("the engine refused a timer: {error}"))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Runs the driver on the command-line arguments (without the program name).
pub(crate) fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let options = match args::parse(args) {
        Ok(Command::Help) => return print_help(),
        Ok(Command::Run(options)) => options,
        Err(error) => {
            // clap's message names the argument and what is wrong with it, and points to
            // --help; its exit status for a usage error is 2.
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(USAGE_EXIT));
        }
    };
    let ctx = Context {
        options,
        progress: Progress::new(),
    };
    match run(&ctx) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            ctx.progress.clear();
            eprintln!("shardwheel: {failure}");
            ExitCode::FAILURE
        }
    }
}

fn print_help() -> ExitCode {
    use std::io::Write;
    match std::io::stdout().lock().write_all(args::help().as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Runs the workload the options name, or all of them (each in a child process of its own),
/// printing the table as it goes.
fn run(ctx: &Context) -> Result<(), Failure> {
    let Some(workload) = ctx.options.workload else {
        return child::run_all(ctx);
    };
    let mut table = Table::start(ctx.options.json)?;
    ctx.progress
        .show(format_args!("{}: starting", workload.name()));
    let report = workload.run(ctx)?;
    ctx.progress.clear();
    table.push(report)?;
    table.finish()
}

/// A vector of `len` values made by `make`, every one written before it returns (so the memory
/// is resident), or a failure instead of an abort if the memory cannot be had.
pub(crate) fn slots<T>(len: usize, make: impl FnMut() -> T) -> Result<Vec<T>, Failure> {
    let mut slots = Vec::new();
    slots.try_reserve_exact(len).map_err(|_| {
        Failure::new(format!(
            "cannot allocate {len} slots of {} bytes",
            std::mem::size_of::<T>()
        ))
    })?;
    slots.resize_with(len, make);
    Ok(slots)
}

/// Millions of operations per second.
pub(crate) fn mops(operations: u64, elapsed: Duration) -> f64 {
    operations as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE) / 1e6
}

/// Kibibytes (as /proc reports them) in mebibytes.
pub(crate) fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// A size as the reports' integer type.
pub(crate) fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_names_every_workload_by_its_name() {
        use clap::ValueEnum;
        let names: Vec<String> = Workload::value_variants()
            .iter()
            .filter_map(ValueEnum::to_possible_value)
            .map(|value| value.get_name().to_owned())
            .collect();
        let mut expected: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
        // The workloads and the probe of the machine that a full run leaves out.
        expected.push(Workload::SleepingTasks.name());
        expected.push(Workload::Scaling.name());
        expected.push(Workload::Storm.name());
        expected.push(Workload::Spike.name());
        expected.push(Workload::HostStalls.name());
        assert_eq!(names, expected);
    }

    #[test]
    fn rates_are_in_millions_per_second() {
        assert!((mops(3_000_000, Duration::from_secs(2)) - 1.5).abs() < 1e-9);
        assert!(mops(1, Duration::ZERO).is_finite());
    }
}
