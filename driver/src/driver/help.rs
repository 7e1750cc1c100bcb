//! The text of `--help`: the title, the usage, what each workload does and reports, and the
//! notes on flags, output and units.

/// The first line of `--help`.
pub(super) const ABOUT: &str =
    "shardwheel workload driver: measures the timer engine on five server workloads.";

/// The usage lines of `--help` (clap prints them after "Usage: ").
pub(super) const USAGE: &str = "\
shardwheel [WORKLOAD] [FLAGS]
       cargo run --release -- [WORKLOAD] [FLAGS]";

/// The layout of `--help`: the title and usage, what each workload does, then the arguments
/// and the notes.
pub(super) const TEMPLATE: &str = "\
{about-with-newline}
{usage-heading} {usage}

{before-help}Arguments:
{positionals}

Flags:
{options}{after-help}";

/// The workloads' section of `--help`, between the usage and the flags.
pub(super) const WORKLOADS: &str = "\
Workloads (with no WORKLOAD all five run, in this order, each in its own process and at its
default sizes unless a flag below overrides them):
  rpc-churn      T threads, each doing N iterations over a ring of its last W handles:
                 take the handle in slot n mod W, cancel it unless n is a multiple of 100,
                 schedule a no-op timeout due in 1-30 s and store its handle there. Timed from
                 a common start until every thread is done.
                 Flags: --threads (2) --ops (5000000) --window (1000).
                 Keys: workload threads ops(T x N) secs mops peak_rss_mb cpu_ns_per_op
                 shard_cpu_ns_per_op window
  conn-idle      M no-op timers due in 60-120 s inserted from T threads (M/T each), timed;
                 wait until all M are pending and linked into the wheels, measure the resident
                 set; cancel all M from one thread, timed; wait until nothing is pending or
                 linked in a wheel (reclaim_ms); drop the handles and measure the resident set.
                 Flags: --timers (1000000) --threads (2).
                 Keys: workload timers insert_mops bytes_per_timer cancel_mops reclaim_ms
                       rss_after_cancel_mb threads
  accuracy       K timers due in 0-1000 ms (1 us steps) scheduled from one thread as fast as it
                 can; each callback records how late it ran (the instant it starts minus the
                 instant it was due). Engine tick 1 ms unless --tick-us sets it.
                 Flags: --timers (100000).
                 Keys: workload timers p50_ms p99_ms p999_ms max_ms early engine_p99_ms
                       (the engine's own p99, from Stats::lateness)
  slow-callback  As accuracy, after S timers due in 0-1000 ms whose callbacks sleep 100 ms
                 (scheduled first); lateness is recorded for the K normal timers only.
                 Flags: --timers (100000) --slow (20).
                 Keys: as accuracy (without engine_p99_ms), plus slow
  idle-hold      M no-op timers due in 10-20 min inserted from T threads, timed; wait until all
                 are linked, measure the resident set; then the CPU time (user + sys) the whole
                 process spends over a 5 s idle window, and the tick threads' context switches.
                 Flags: --timers (10000000) --threads (2).
                 Keys: workload timers insert_mops bytes_per_timer idle_cpu_pct
                       shard_wakeups_per_sec threads

Workloads that run only when named:
  sleeping-tasks M tasks spawned from one thread onto a tokio multi-thread runtime of 2
                 worker threads (fixed: --threads does not change it), each awaiting a 60 s
                 sleep: shardwheel::sleep on the default engine (set by --shards etc.), then
                 tokio::time::sleep, each peer in a process of its own (--peer runs one here).
                 Timed from the first spawn until every task has started (its sleep's first
                 poll, which takes a timer, follows at once); wait until the engine has linked
                 every timer (shardwheel), pause 100 ms, measure the resident set; then drop
                 the runtime, which drops (cancels) every sleep.
                 Flags: --timers (1000000: the tasks, one sleep each) --peer (both).
                 Keys: workload tasks shardwheel_bytes_per_task
                       shardwheel_spawn_mtasks_per_sec tokio_bytes_per_task
                       tokio_spawn_mtasks_per_sec (with --peer, tasks and that peer's two)

  scaling        How throughput and CPU per operation grow with threads, beside tokio::time.
                 For each thread count T: churn (rpc-churn with T threads, N iterations each;
                 peers shardwheel and tokio, whose T tasks on a T-worker runtime register each
                 sleep by one poll and drop it to cancel) and timeout (a T-worker tokio runtime,
                 64 tasks per worker looping timeout(5 s, yield_now()), T x N in all; peers
                 shardwheel, tokio, pingora-timeout (its fast_timeout: lazy timers in 10 ms
                 buckets per thread), and none: the loop with no timer). With --cfg
                 tokio_unstable, tokio's per-worker timer too (peer tokio-alt).
                 Flags: --threads-list (1,2,4,...,cpus,2 x cpus) --ops (1000000) --plot FILE.
                 Keys, a JSON line per point: workload case peer threads ops secs mops
                       cpu_ns_per_op cpus; the last line the summary (case summary) at the
                       cpu count: churn_mops churn_speedup churn_cpu_ratio (over 1 thread)
                       churn_no_knee churn_twice_cpus_ratio timeout_cpu_over_floor_ns
                       timeout_vs_tokio timeout_vs_tokio_alt timeout_vs_pingora.

  storm          N timers all due at one instant T0 = start + 600 ms, scheduled from T
                 threads (N/T each), and 300 sentinels due every 1 ms from T0 - 100 ms to
                 T0 + 199 ms (scheduled first, from the main thread); each callback stores
                 the instant it ran and nothing else. Fails if scheduling ends after
                 T0 - 50 ms. Waits until every callback ran, or 30 s past the last deadline:
                 those not run by then are counted missing. --peer tokio: a runtime of T
                 workers, a task per timer awaiting tokio::time::sleep_until (the storm's
                 tasks spawned by T tasks on the runtime).
                 Flags: --timers (1000000) --threads (2) --peer (shardwheel) --inline.
                 Keys: workload timers threads first_ms drain_ms p50_ms p99_ms
                       sentinel_p99_ms sentinel_max_ms fire_mops early missing peer
                       schedule_ms (first_ms and drain_ms: the first and the last storm
                       callback after T0; p50/p99: the storm's lateness after T0;
                       sentinel_*: the lateness of the sentinels due at or after T0;
                       fire_mops = N / drain_ms; early and missing count both kinds)

  spike          M no-op timers due in 10-20 min scheduled from 2 threads (M/2 each) that
                 then exit, handing their handles back; all cancelled from one thread, the
                 handles dropped, and a wait until nothing is pending; then 3 s of light
                 churn on another thread (batches of 100 timeouts due in 1-30 s, scheduled
                 then cancelled, a 1 ms pause after each), then 2 s idle. The resident set
                 is read before, once the spike is linked, after the cancelling, after the
                 churn (once nothing is pending) and after the idle time.
                 Flags: --timers (4000000).
                 Keys: workload timers base_mb spike_mb cancelled_mb calm_mb idle_mb
                       allocator (mimalloc; system in a --no-default-features build)

A probe of the machine, not of the engine (it runs only when named):
  host-stalls    One thread per cpu, pinned, reads the monotonic clock in a loop and counts
                 the gaps between two reads over 1 ms (stalls) and over 4 ms (long stalls):
                 times its cpu ran something else or, on a virtual machine, was not run by
                 the host. A timer due on a stalled cpu fires late by as much, whatever the
                 engine does; run it before measuring accuracy or slow-callback.
                 Flags: --seconds (5).
                 Keys: workload cpus pinned seconds stalls_per_sec long_stalls_per_sec
                       max_stall_ms lost_pct (the stalls' time, of the cpus' time)";

/// The notes at the end of `--help`.
pub(super) const NOTES: &str = "\
A flag's value follows it as the next argument or after '=' (--ops=1000000). Numbers are
decimal integers; '_' may separate digits (5_000_000). When a flag is given twice the last one
counts. A flag a workload does not use is accepted and ignored. With no WORKLOAD, a size flag
applies to every workload that uses it (--timers 100000 sets the timers of all four that
have timers).

With no WORKLOAD, each workload runs in a child process of its own: the driver runs itself
once per workload, with the workload's name, the same flags and --json, and takes the figures
from the child's last line of stdout. A workload that fails is reported on stderr (after the
child's own messages) and the others still run. sleeping-tasks without --peer likewise runs
itself once per peer, with --peer, and joins the two children's figures into one report.

Output: a table on stdout, one row per workload, each row printed when its workload finishes;
with --json the JSON lines follow the table. While a long phase runs, a progress line is drawn
on stderr, only when stderr is a terminal.
Units: secs and *_ms are wall-clock; mops is millions of operations per second; MB is 2^20
bytes; RSS is VmRSS of /proc/self/status (peak_rss_mb: VmHWM, reset at the start of
rpc-churn where the system allows). bytes_per_timer = (RSS once all timers are linked - RSS
before inserting) / timers, with the handles' array allocated before the first reading;
bytes_per_task likewise, per task (the driver keeps no join handles); spawn_mtasks_per_sec is
millions of tasks per second.
cpu_ns_per_op = the whole process's CPU time (user + sys, getrusage) from the start of
rpc-churn until the shards have taken in what the producers queued, over its ops;
shard_cpu_ns_per_op = the tick threads' share of it (/proc/self/task/*/schedstat).
idle_cpu_pct = CPU seconds (user + sys, getrusage, in microseconds) in the idle window / its
length x 100. shard_wakeups_per_sec = context switches, voluntary and not, of the engine's tick
threads over the idle window (/proc/self/task/*/status), per second and per tick thread.
Each workload has a process of its own because memory an earlier workload freed but the
allocator kept would be reused without growing the resident set, and so go uncounted.
early counts callbacks that ran before they were due (any value but 0 is a bug).

Exit status: 0 on success, 1 if a workload failed (for instance timed out waiting for the
engine; with no WORKLOAD, once all five have been tried), 2 for a bad command line.";
