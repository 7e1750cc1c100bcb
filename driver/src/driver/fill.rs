//! Filling an engine with long no-op timers from several threads, and what that costs: the
//! insert rate and the resident bytes per timer (shared by conn-idle and idle-hold).

use std::time::Duration;

use shardwheel::{TimerEngine, TimerHandle};

use super::rng::{Delays, Rng};
use super::{count, mops, parallel, proc, slots, wait, Context, Failure};

/// Workers report their progress every this many timers.
const PROGRESS_STEP: usize = 1 << 16;

/// An engine full of timers, their handles, and what filling it cost.
pub(crate) struct Filled {
    /// One handle per timer, in the order the threads' shares were laid out.
    pub(crate) handles: Vec<Option<TimerHandle>>,
    /// Timers inserted per second, in millions, from the common start until every inserting
    /// thread was done.
    pub(crate) insert_mops: f64,
    /// (RSS once every timer is linked into a wheel − RSS before inserting) / timers.
    pub(crate) bytes_per_timer: f64,
}

/// Inserts `timers` timers with delays drawn from `delays`, from `threads` threads (thread i
/// draws from seed (`stream`, i)), then waits until the engine has linked them all.
pub(crate) fn fill(
    ctx: &Context,
    engine: &TimerEngine,
    timers: usize,
    threads: usize,
    delays: Delays,
    stream: u64,
) -> Result<Filled, Failure> {
    // Every slot is written before the first reading, so the handles' array is not counted.
    let mut handles = slots(timers, || None)?;
    let before_kb = proc::rss_kb()?;
    let elapsed = insert(ctx, engine, &mut handles, threads, delays, stream)?;
    wait::until_in_wheels(ctx, engine, count(timers), "linking timers")?;
    let after_kb = proc::rss_kb()?;
    let grown_bytes = (after_kb as f64 - before_kb as f64) * 1024.0;
    Ok(Filled {
        handles,
        insert_mops: mops(count(timers), elapsed),
        bytes_per_timer: grown_bytes / timers.max(1) as f64,
    })
}

/// Fills `handles` from `threads` threads, one even share each; returns the time taken.
fn insert(
    ctx: &Context,
    engine: &TimerEngine,
    handles: &mut [Option<TimerHandle>],
    threads: usize,
    delays: Delays,
    stream: u64,
) -> Result<Duration, Failure> {
    let total = count(handles.len());
    let shares = split_even(handles, threads);
    parallel::run_timed(ctx, "inserting timers", total, shares, |index, share| {
        insert_share(ctx, engine, share, Rng::new(stream, index), delays)
    })
}

fn insert_share(
    ctx: &Context,
    engine: &TimerEngine,
    share: &mut [Option<TimerHandle>],
    mut rng: Rng,
    delays: Delays,
) -> Result<(), Failure> {
    for (i, slot) in share.iter_mut().enumerate() {
        let handle = engine
            .schedule(rng.delay(delays), || {})
            .map_err(Failure::schedule)?;
        *slot = Some(handle);
        if i % PROGRESS_STEP == PROGRESS_STEP - 1 {
            ctx.progress.add(count(PROGRESS_STEP));
        }
    }
    Ok(())
}

/// Splits `items` into `parts` consecutive shares whose lengths differ by at most one (fewer
/// shares if there are fewer items than parts, but always at least one).
fn split_even<T>(items: &mut [T], parts: usize) -> Vec<&mut [T]> {
    let parts = parts.clamp(1, items.len().max(1));
    let (base, extra) = (items.len() / parts, items.len() % parts);
    let mut shares = Vec::with_capacity(parts);
    let mut rest = items;
    for part in 0..parts {
        let (share, tail) = rest.split_at_mut(base + usize::from(part < extra));
        shares.push(share);
        rest = tail;
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_even_and_cover_everything() {
        let mut items: Vec<usize> = (0..10).collect();
        let lengths: Vec<usize> = split_even(&mut items, 4).iter().map(|s| s.len()).collect();
        assert_eq!(lengths, [3, 3, 2, 2]);
        let lengths: Vec<usize> = split_even(&mut items, 20).iter().map(|s| s.len()).collect();
        assert_eq!(lengths, [1; 10]);
        let mut none: Vec<usize> = Vec::new();
        assert_eq!(split_even(&mut none, 2).len(), 1);
    }
}
