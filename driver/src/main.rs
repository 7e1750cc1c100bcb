//! The workload driver: runs the workloads the engine is measured by and reports their figures.
//!
//! `shardwheel <workload> [flags]` runs one workload; with no workload it runs all five, in the
//! order `rpc-churn`, `conn-idle`, `accuracy`, `slow-callback`, `idle-hold`, each at its default
//! size unless a flag overrides it, and each in its own process: the driver re-executes itself
//! once per workload with that workload's name, the same flags and `--json`, and takes the
//! workload's figures from the child's last line of stdout. (In one process, memory an earlier
//! workload freed but the allocator kept would be reused without growing the resident set, and
//! the memory figures would be wrong.) Children inherit stderr. Each workload builds its own
//! engine from the crate's public API (shard count and callback pool size from `--shards` and
//! `--callback-threads`) and drives it as the workload's definition says.
//!
//! - `rpc-churn`: producer threads each keep a ring of recent handles, cancel the oldest (all but
//!   one in a hundred) and schedule a fresh 1–30 s timeout; reports the operation rate and the
//!   peak resident set.
//! - `conn-idle`: a million 60–120 s timers inserted from several threads; reports the insert
//!   rate, the resident bytes per timer once all are linked, the cancel rate from one thread,
//!   how long the engine takes to unlink them all, and the resident set afterwards.
//! - `accuracy`: timers due within a second, scheduled from one thread; every callback records
//!   how late it ran; reports the lateness percentiles and any callback that ran early.
//! - `slow-callback`: as `accuracy`, with a few callbacks that sleep 100 ms scheduled first.
//! - `idle-hold`: ten million timers due in 10–20 minutes; reports the insert rate, the resident
//!   bytes per timer and the process's CPU use over five idle seconds.
//!
//! `shardwheel scaling` runs only when named: rpc-churn's loop and a timeout in tokio tasks at
//! a list of thread counts, beside tokio's timer (and, for the timeout, pingora-timeout's);
//! `--plot` draws the curves (`driver/plot.rs`).
//!
//! `shardwheel sleeping-tasks` runs only when named: a million tasks on a two-worker tokio
//! runtime, each awaiting a 60 s sleep, shardwheel's and then tokio's (each peer in a child
//! process of its own); reports the resident bytes per sleeping task and the spawn rate.
//!
//! `shardwheel storm` runs only when named: a million timers due at one instant, scheduled from
//! two threads, and sentinels due every millisecond around it; reports when the storm's
//! callbacks start and end after that instant, their lateness and the sentinels', and any
//! callback early or missing (`--peer tokio`: the same on `tokio::time`).
//!
//! `shardwheel spike` runs only when named: four million idle timeouts scheduled from two
//! threads that then exit, all cancelled, then light churn, then idle; reports the resident set
//! after each step and the allocator.
//!
//! `shardwheel host-stalls` is not a workload of the engine and a full run leaves it out: it
//! measures how often, and how long, the machine's cpus stall (see `driver/host_stalls.rs`),
//! to tell a calm hour from a noisy one before measuring lateness.
//!
//! Output is a table on stdout with one row per workload; `--json` adds one JSON object per
//! workload on its own line after the table. Progress is drawn on stderr only when stderr is a
//! terminal. Run with `--help` for every flag.
//!
//! The command line is parsed by clap (`driver/args.rs`: the flags and their ranges;
//! `driver/help.rs`: the help text); the JSON lines are written, and a full run reads its children's back, with
//! serde_json (`driver/report.rs`), every figure keeping its decimals; idle-hold's CPU time
//! comes from `getrusage`, to the microsecond, and the resident set from `/proc/self/status`
//! (`driver/proc.rs`). With the `mimalloc` feature (on by default) the driver allocates through
//! mimalloc (`driver/alloc.rs`).
//!
//! A bad command line exits with status 2 (clap's message on stderr), a workload that fails (a
//! timeout, an unreadable `/proc` file) with status 1; in a run of all five, a failed workload
//! is reported on stderr, the others still run, and the exit status is 1 at the end.

mod driver;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: driver::alloc::Mimalloc = driver::alloc::Mimalloc;

fn main() -> std::process::ExitCode {
    driver::main(std::env::args_os().skip(1))
}
