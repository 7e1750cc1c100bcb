//! What the examples share: a seeded generator, percentiles, the command line's checks and the
//! verdict at the end. Each example uses part of it.
#![allow(dead_code)]

use std::future::Future;
use std::process::ExitCode;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use clap::error::ErrorKind;
use clap::Parser;

/// SplitMix64's increment: its state's step, and the first step of its output function.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's mixing of a stepped state.
fn finish(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64's output function: a well-mixed hash of `x`.
pub fn mix(x: u64) -> u64 {
    finish(x.wrapping_add(GOLDEN))
}

/// A small seeded generator (SplitMix64): reproducible choices without a dependency.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        finish(self.0)
    }
}

/// The bound a uniform 64-bit draw falls below with probability `p`.
pub fn threshold(p: f64) -> u64 {
    if p >= 1.0 {
        u64::MAX
    } else {
        (p * 2f64.powi(64)) as u64
    }
}

/// The nearest-rank percentile `p` (0 < p <= 1) of sorted `values`.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Locks a mutex, ignoring poisoning (a panicking task already reported itself).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The command line, parsed and then checked by `check`; a bad one exits with status 2
/// (clap's for a usage error).
pub fn config<A: Parser, C>(check: impl FnOnce(A) -> Result<C, String>) -> C {
    check(A::parse()).unwrap_or_else(|message| {
        A::command()
            .error(ErrorKind::ArgumentConflict, message)
            .exit()
    })
}

/// Runs `run` on a new multi-thread tokio runtime with every driver enabled.
pub fn on_tokio<T>(run: impl Future<Output = Result<T, String>>) -> Result<T, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?
        .block_on(run)
}

/// The exit status of a run that returned the checks that failed, or why it could not finish;
/// each failure is printed on stderr under the `example`'s name.
pub fn verdict(example: &str, outcome: Result<Vec<String>, String>) -> ExitCode {
    match outcome {
        Ok(failures) if failures.is_empty() => {
            println!("all checks passed");
            ExitCode::SUCCESS
        }
        Ok(failures) => {
            for failure in failures {
                eprintln!("{example}: check failed: {failure}");
            }
            ExitCode::FAILURE
        }
        Err(message) => {
            eprintln!("{example}: {message}");
            ExitCode::FAILURE
        }
    }
}
