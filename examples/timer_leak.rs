//! A timer leak, found by the line that scheduled it.
//!
//! An RPC client puts a deadline on every call and cancels it when the answer comes; the last
//! [`IN_FLIGHT`] calls of each thread wait for theirs. One path does not cancel: a call that is
//! retried schedules a second deadline for the retry and drops its handle, so every retry
//! leaves a timer due an hour later. Nothing fails; the engine's pending count only grows.
//! The example runs the calls from a few threads on an engine built with
//! `track_sites(true)`, takes a snapshot of the pending timers (`pending_timers`), counts them
//! by the line that scheduled them (`by_site`), and prints the table, the oldest age per line,
//! the ages from `stats()`, and how long the snapshot took.
//!
//! It checks that the line with the most pending timers is the retry's, holding one timer per
//! retry, and exits with status 1 if not (status 2 for a bad command line).
//!
//! ```text
//! cargo run --release --example timer_leak -- --help
//! cargo run --release --example timer_leak -- --calls 200000 --threads 2 --retry-every 10
//! ```

use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

mod support;

use clap::Parser;
use shardwheel::{ScheduleError, TimerEngine, TimerHandle};

/// The command line.
#[derive(Parser)]
#[command(
    name = "timer_leak",
    about = "timer_leak: RPC deadlines leaked by the retry path, found by their line",
    args_override_self = true
)]
struct Args {
    /// calls made from each thread
    #[arg(long, value_name = "N", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    calls: u64,
    /// threads making calls
    #[arg(long, value_name = "N", default_value_t = 2,
          value_parser = clap::value_parser!(u64).range(1..=64))]
    threads: u64,
    /// one call in this many is retried (and leaks its retry's deadline)
    #[arg(long = "retry-every", value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    retry_every: u64,
}

/// Calls of each thread still waiting for their answers when the snapshot is taken.
const IN_FLIGHT: u64 = 100;

/// The line of the leaking `schedule`, recorded as it runs.
static LEAK_LINE: AtomicU32 = AtomicU32::new(0);

/// One call: its deadline, for the caller to cancel when the answer comes. A retried call's
/// second deadline is dropped, never cancelled: the leak.
fn call(
    engine: &TimerEngine,
    n: u64,
    retry_every: u64,
) -> Result<TimerHandle, ScheduleError<fn()>> {
    let deadline = engine.schedule(Duration::from_secs(5), timed_out as fn())?;
    if n % retry_every == 0 {
        let _retry = engine.schedule(Duration::from_secs(3600), timed_out as fn())?;
        LEAK_LINE.store(line!() - 1, Ordering::Relaxed);
    }
    Ok(deadline)
}

/// A thread's calls: each answered at once (its deadline cancelled) but the last
/// [`IN_FLIGHT`], whose deadlines it returns.
fn calls(engine: &TimerEngine, args: &Args) -> Result<Vec<TimerHandle>, ScheduleError<fn()>> {
    let mut waiting = Vec::new();
    for n in 0..args.calls {
        let deadline = call(engine, n, args.retry_every)?;
        if n + IN_FLIGHT >= args.calls {
            waiting.push(deadline);
        } else {
            deadline.cancel();
        }
    }
    Ok(waiting)
}

fn timed_out() {}

fn main() -> ExitCode {
    support::verdict("timer_leak", run(Arc::new(Args::parse())))
}

/// Makes the calls, takes the snapshot and prints it by site; the failed check, if the leaking
/// line is not the first with one timer per retry.
fn run(args: Arc<Args>) -> Result<Vec<String>, String> {
    let engine = TimerEngine::builder()
        .track_sites(true)
        .build()
        .map_err(|error| error.to_string())?;
    let start = Instant::now();
    let threads: Vec<_> = (0..args.threads)
        .map(|_| {
            let (engine, args) = (engine.clone(), args.clone());
            thread::spawn(move || calls(&engine, &args))
        })
        .collect();
    let mut waiting = Vec::new();
    for thread in threads {
        let deadlines = thread.join().map_err(|_| "a caller panicked")?;
        waiting.extend(deadlines.map_err(|error| format!("a call was refused: {error}"))?);
    }
    let calls = args.calls * args.threads;
    println!(
        "{calls} calls in {:.2?}; the engine holds {} timers",
        start.elapsed(),
        engine.pending()
    );

    let begun = Instant::now();
    let snapshot = engine.pending_timers().map_err(|error| error.to_string())?;
    let took = begun.elapsed();
    println!("snapshot of {} timers in {took:.2?}", snapshot.timers.len());
    println!("{:>10}  {:>12}  site", "pending", "oldest");
    let rows = snapshot.by_site();
    for &(site, count, oldest) in &rows {
        let site = site.map_or_else(|| String::from("(unknown)"), ToString::to_string);
        println!("{count:>10}  {:>12.2?}  {site}", oldest.unwrap_or_default());
    }
    if let Some(ages) = engine.stats().pending_ages {
        println!(
            "by age: {} under a second, {} under a minute, {} under an hour, {} older",
            ages.under_a_second, ages.under_a_minute, ages.under_an_hour, ages.older
        );
    }

    drop(waiting); // the calls in flight stayed so until the snapshot was taken
    let retries = args.threads * (args.calls.div_ceil(args.retry_every));
    let leak = LEAK_LINE.load(Ordering::Relaxed);
    match rows.first() {
        Some(&(Some(site), count, _)) if site.line() == leak && count as u64 == retries => {
            println!("found: line {leak} holds one timer per retry ({retries})");
            Ok(Vec::new())
        }
        first => Ok(vec![format!(
            "expected line {leak} first with {retries} timers, got {first:?}"
        )]),
    }
}
