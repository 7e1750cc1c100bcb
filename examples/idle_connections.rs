//! Idle timeouts and heartbeats for a large number of simulated connections.
//!
//! Each of C connections (default 1,000,000) has an idle timer (default 30 s) that is pushed
//! back with `TimerHandle::reset` on every read, and a heartbeat (default every 10 s) from
//! `repeating(..).schedule`. Time comes from a `ManualClock` moved in 1 s steps, so minutes of
//! simulated time pass in seconds. At each step a random subset of connections reads; a chosen
//! fraction of them goes silent at a chosen time and must then be closed by its idle timer.
//! When an idle timer fires, its callback marks the connection closed at the clock's time; the
//! main loop then cancels that connection's heartbeat.
//!
//! It reports the rate of `reset` calls (wall-clock time around the reset loop only), the
//! memory per connection (VmRSS before and after opening the connections, divided by C), how
//! many connections were closed, and the heartbeat counts, and it checks that:
//!
//! - every idle connection was closed exactly at its last read plus the idle timeout, and every
//!   connection still open at the end read within the last idle timeout;
//! - every `reset` of an open connection and every heartbeat `cancel` succeeded;
//! - each connection's heartbeat fired once per period until the end, or until its close;
//! - the engine fired exactly the closes plus the heartbeats, and nothing is left pending.
//!
//! It exits with status 1 if a check fails (status 2 for a bad command line).
//!
//! ```text
//! cargo run --release --example idle_connections -- --help
//! cargo run --release --example idle_connections -- --connections 50000
//! ```

mod support;

use std::fs;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::builder::RangedU64ValueParser;
use clap::Parser;
use shardwheel::{ManualClock, TimerEngine, TimerHandle};

use support::{threshold, SplitMix};

/// The command line.
#[derive(Parser)]
#[command(
    name = "idle_connections",
    about = "idle_connections: idle timeouts (reset on every read) and heartbeats for many\n\
             connections, under a manual clock",
    args_override_self = true
)]
struct Config {
    /// simulated connections
    #[arg(long, value_name = "N", default_value_t = 1_000_000,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=u64::from(u32::MAX)))]
    connections: usize,
    /// idle timeout, pushed back by every read
    #[arg(long, value_name = "SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..))]
    idle: u32,
    /// heartbeat period
    #[arg(long, value_name = "SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..))]
    heartbeat: u32,
    /// simulated time, in 1 s steps (at most a day)
    #[arg(long, value_name = "SECS", default_value_t = 90,
          value_parser = clap::value_parser!(u32).range(..=86_400))]
    duration: u32,
    /// chance that an open connection reads in a given second
    #[arg(long, value_name = "P", default_value_t = 0.2)]
    read_prob: f64,
    /// fraction of connections that stop reading at --silent-at
    #[arg(long, value_name = "F", default_value_t = 0.25)]
    silent_fraction: f64,
    /// when those connections go silent; --duration must be at least
    /// --silent-at plus --idle, so that all of them are closed
    #[arg(long, value_name = "SECS", default_value_t = 45, verbatim_doc_comment)]
    silent_at: u32,
    /// seed of the random choices
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
}

impl Config {
    /// The checks clap's value parsers do not make.
    fn check(&self) -> Result<(), String> {
        for (name, p) in [
            ("--read-prob", self.read_prob),
            ("--silent-fraction", self.silent_fraction),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} must be between 0 and 1"));
            }
        }
        let closed_by = u64::from(self.silent_at) + u64::from(self.idle);
        if self.silent_fraction > 0.0 && u64::from(self.duration) < closed_by {
            return Err(format!(
                "--duration {} is too short: connections that go silent at {} s close at \
                 {closed_by} s at the latest",
                self.duration, self.silent_at
            ));
        }
        Ok(())
    }
}

/// What the timer callbacks write, one slot per connection.
struct Records {
    clock: ManualClock,
    /// When the idle timer closed the connection, in simulated milliseconds; `OPEN` if not.
    closed_at_ms: Vec<AtomicU64>,
    /// How many times the connection's heartbeat ran.
    heartbeats: Vec<AtomicU32>,
    /// Connections closed since the main loop last looked, so it can cancel their heartbeats.
    just_closed: Mutex<Vec<u32>>,
}

const OPEN: u64 = u64::MAX;

impl Records {
    fn close(&self, connection: u32) {
        let at = u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        self.closed_at_ms[connection as usize].store(at, Ordering::SeqCst);
        self.just_closed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(connection);
    }

    fn closed_at_ms(&self, connection: usize) -> Option<u64> {
        Some(self.closed_at_ms[connection].load(Ordering::SeqCst)).filter(|&at| at != OPEN)
    }

    fn take_just_closed(&self) -> Vec<u32> {
        std::mem::take(&mut *self.just_closed.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The resident set size in bytes, from `/proc/self/status`.
fn rss_bytes() -> Result<u64, String> {
    let status = fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .ok_or("no VmRSS line in /proc/self/status")?;
    let kb: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .map_err(|e| format!("cannot parse {line:?}: {e}"))?;
    Ok(kb * 1024)
}

/// Failed checks, counted by kind, with the first few examples of each kept for the report.
#[derive(Default)]
struct Failures {
    kinds: Vec<(&'static str, u64, Vec<String>)>,
}

impl Failures {
    const EXAMPLES: usize = 5;

    fn add(&mut self, kind: &'static str, example: impl FnOnce() -> String) {
        let index = match self.kinds.iter().position(|(k, _, _)| *k == kind) {
            Some(index) => index,
            None => {
                self.kinds.push((kind, 0, Vec::new()));
                self.kinds.len() - 1
            }
        };
        let (_, count, examples) = &mut self.kinds[index];
        *count += 1;
        if examples.len() < Self::EXAMPLES {
            examples.push(example());
        }
    }

    fn check(&mut self, ok: bool, kind: &'static str, example: impl FnOnce() -> String) {
        if !ok {
            self.add(kind, example);
        }
    }

    fn failed(&self, kind: &str) -> bool {
        self.kinds.iter().any(|(k, _, _)| *k == kind)
    }

    fn report(&self) {
        for (kind, count, examples) in &self.kinds {
            eprintln!("idle_connections: check failed {count} times: {kind}");
            for example in examples {
                eprintln!("    {example}");
            }
        }
    }
}

fn yes_no(ok: bool) -> &'static str {
    if ok {
        "yes"
    } else {
        "NO"
    }
}

fn main() -> ExitCode {
    let config = support::config(|config: Config| config.check().map(|()| config));
    match run(&config) {
        Ok(failures) if failures.kinds.is_empty() => {
            println!("all checks passed");
            ExitCode::SUCCESS
        }
        Ok(failures) => {
            failures.report();
            ExitCode::FAILURE
        }
        Err(message) => {
            eprintln!("idle_connections: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(config: &Config) -> Result<Failures, String> {
    let wall = Instant::now();
    let n = config.connections;
    let idle = Duration::from_secs(config.idle.into());
    let heartbeat = Duration::from_secs(config.heartbeat.into());
    let mut failures = Failures::default();
    let mut rng = SplitMix(config.seed);

    println!(
        "{n} connections, idle timeout {} s, heartbeat every {} s, {} s simulated in 1 s steps; \
         each second an open connection reads with probability {}; {:.0}% go silent at {} s",
        config.idle,
        config.heartbeat,
        config.duration,
        config.read_prob,
        config.silent_fraction * 100.0,
        config.silent_at
    );

    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .build()
        .map_err(|e| format!("cannot start the timer engine: {e}"))?;

    // Open the connections: per-connection records, an idle timer and a heartbeat each. The
    // resident set is measured around this, records included.
    let rss_before = rss_bytes();
    let records = Arc::new(Records {
        clock: clock.clone(),
        closed_at_ms: (0..n).map(|_| AtomicU64::new(OPEN)).collect(),
        heartbeats: (0..n).map(|_| AtomicU32::new(0)).collect(),
        just_closed: Mutex::new(Vec::new()),
    });
    // Read only by this thread: the second of each connection's last read (opening counts).
    let mut last_read: Vec<u32> = vec![0; n];
    let silent_threshold = threshold(config.silent_fraction);
    let silent: Vec<bool> = (0..n).map(|_| rng.next_u64() < silent_threshold).collect();
    let mut idle_timers: Vec<TimerHandle> = Vec::with_capacity(n);
    let mut heartbeats: Vec<TimerHandle> = Vec::with_capacity(n);
    let open_start = Instant::now();
    for connection in 0..n as u32 {
        let r = records.clone();
        // Keyed by connection: a connection's idle timers always land on the same shard.
        let timer = engine
            .schedule_keyed(connection.into(), idle, move || r.close(connection))
            .map_err(|e| format!("cannot schedule an idle timer: {e}"))?;
        idle_timers.push(timer);
        let r = records.clone();
        let beat = move || {
            r.heartbeats[connection as usize].fetch_add(1, Ordering::Relaxed);
        };
        let timer = engine
            .repeating(heartbeat)
            .schedule(beat)
            .map_err(|e| format!("cannot schedule a heartbeat: {e}"))?;
        heartbeats.push(timer);
    }
    let open_time = open_start.elapsed();
    // Let the shards take in every timer, so their memory is counted too.
    clock.advance(Duration::ZERO);
    let rss_after = rss_bytes();
    let own_bytes = n
        * (std::mem::size_of::<AtomicU64>()
            + std::mem::size_of::<AtomicU32>()
            + std::mem::size_of::<u32>()
            + std::mem::size_of::<bool>()
            + 2 * std::mem::size_of::<TimerHandle>());

    let read_threshold = threshold(config.read_prob);
    let mut readers: Vec<u32> = Vec::with_capacity(n);
    let (mut resets, mut reset_time) = (0u64, Duration::ZERO);
    let (mut closed_silent, mut closed_other) = (0u64, 0u64);
    let idle_ms = u64::from(config.idle) * 1000;
    let sim_start = Instant::now();
    for second in 1..=config.duration {
        clock.advance(Duration::from_secs(1));

        // Closes: each must be exactly at its last read plus the idle timeout. Stop the
        // connection's heartbeat.
        for connection in records.take_just_closed() {
            let i = connection as usize;
            let expected = u64::from(last_read[i]) * 1000 + idle_ms;
            let closed = records.closed_at_ms(i);
            failures.check(closed == Some(expected), "closed at the wrong time", || {
                format!(
                    "connection {i}: last read at {} s, closed at {closed:?} ms, expected \
                     {expected} ms",
                    last_read[i]
                )
            });
            failures.check(heartbeats[i].cancel(), "heartbeat cancel refused", || {
                format!("connection {i}: cancelling its heartbeat at {second} s returned false")
            });
            if silent[i] {
                closed_silent += 1;
            } else {
                closed_other += 1;
            }
        }

        // Reads: choose which open connections read this second, then time the resets alone.
        readers.clear();
        let silence = second >= config.silent_at;
        for (i, last) in last_read.iter_mut().enumerate() {
            let quiet = silence && silent[i];
            if !quiet && rng.next_u64() < read_threshold && records.closed_at_ms(i).is_none() {
                readers.push(i as u32);
                *last = second;
            }
        }
        let start = Instant::now();
        let mut refused = 0u64;
        for &connection in &readers {
            if !idle_timers[connection as usize].reset(idle) {
                refused += 1;
            }
        }
        reset_time += start.elapsed();
        resets += readers.len() as u64;
        failures.check(refused == 0, "reset of an open connection refused", || {
            format!("{refused} resets refused at {second} s")
        });
    }
    let sim_time = sim_start.elapsed();

    // The end: every connection still open must not be due yet, and every heartbeat count must
    // match the time its connection was open.
    let end_ms = u64::from(config.duration) * 1000;
    let period_ms = u64::from(config.heartbeat) * 1000;
    let (mut open, mut silent_open, mut beats_total) = (0u64, 0u64, 0u64);
    for i in 0..n {
        let closed = records.closed_at_ms(i);
        let beats = u64::from(records.heartbeats[i].load(Ordering::SeqCst));
        beats_total += beats;
        let until_ms = closed.unwrap_or(end_ms);
        let expected_beats = until_ms / period_ms;
        failures.check(beats == expected_beats, "wrong heartbeat count", || {
            format!(
                "connection {i}: {beats} heartbeats, expected {expected_beats} (open until \
                 {until_ms} ms)"
            )
        });
        if closed.is_none() {
            open += 1;
            silent_open += u64::from(silent[i]);
            let due_ms = u64::from(last_read[i]) * 1000 + idle_ms;
            failures.check(due_ms > end_ms, "idle connection never closed", || {
                format!("connection {i}: idle since {} s, still open", last_read[i])
            });
        }
    }
    let silent_count = silent.iter().filter(|&&s| s).count() as u64;
    failures.check(
        config.silent_fraction == 0.0 || silent_open == 0,
        "silent connection still open",
        || format!("{silent_open} of {silent_count} silent connections are still open"),
    );

    // The engine fired the closes and the heartbeats, nothing else.
    let stats = engine.stats();
    let closes = closed_silent + closed_other;
    failures.check(
        stats.fired == closes + beats_total,
        "engine fired count",
        || {
            format!(
                "the engine fired {} callbacks, expected {closes} closes + {beats_total} \
                 heartbeats",
                stats.fired
            )
        },
    );

    // Close what is left; afterwards nothing may be pending.
    let mut cancel_refused = 0u64;
    for i in 0..n {
        if records.closed_at_ms(i).is_none() {
            cancel_refused += u64::from(!idle_timers[i].cancel());
            cancel_refused += u64::from(!heartbeats[i].cancel());
        }
    }
    failures.check(cancel_refused == 0, "cancel at the end refused", || {
        format!("{cancel_refused} cancels of open connections' timers returned false")
    });
    let pending = engine.pending();
    failures.check(pending == 0, "timers left pending", || {
        format!("{pending} timers pending after every connection was closed")
    });
    let unfired = engine.shutdown().len();
    failures.check(unfired == 0, "timers handed back at shutdown", || {
        format!("shutdown handed back {unfired} timers")
    });

    let per_second = |count: u64, time: Duration| count as f64 / time.as_secs_f64().max(1e-9);
    println!(
        "open:       {} timers scheduled in {:.3} s ({:.2} M/s)",
        2 * n,
        open_time.as_secs_f64(),
        per_second(2 * n as u64, open_time) / 1e6
    );
    match (rss_before, rss_after) {
        (Ok(before), Ok(after)) => println!(
            "memory:     VmRSS {:.1} MiB -> {:.1} MiB: {:.0} bytes per connection \
             ({:.0} of them this example's own records and handles)",
            before as f64 / 1048576.0,
            after as f64 / 1048576.0,
            after.saturating_sub(before) as f64 / n as f64,
            own_bytes as f64 / n as f64
        ),
        (Err(e), _) | (_, Err(e)) => println!("memory:     not measured: {e}"),
    }
    println!(
        "resets:     {resets} in {:.3} s of reset calls: {:.2} M resets/s",
        reset_time.as_secs_f64(),
        per_second(resets, reset_time) / 1e6
    );
    println!(
        "closed:     {closes} idle connections ({closed_silent} of the {silent_count} that went \
         silent, {closed_other} that happened to read nothing for {} s), each exactly {} s \
         after its last read: {}",
        config.idle,
        config.idle,
        yes_no(!failures.failed("closed at the wrong time"))
    );
    println!(
        "heartbeats: {beats_total} in all; {open} connections open to the end with {} each; \
         every count as expected (closed ones stopped at their close): {}",
        end_ms / period_ms,
        yes_no(!failures.failed("wrong heartbeat count"))
    );
    println!(
        "engine:     {} fired = {closes} closes + {beats_total} heartbeats; {pending} pending \
         after cleanup",
        stats.fired
    );
    println!(
        "wall time:  {:.2} s in all, {:.2} s for the {} simulated seconds",
        wall.elapsed().as_secs_f64(),
        sim_time.as_secs_f64(),
        config.duration
    );
    Ok(failures)
}
