//! The command line: at most one workload name and `--flag value` pairs, parsed by hand.

use std::ffi::OsString;
use std::fmt;

use super::Workload;

/// The `--help` text.
pub(crate) const HELP: &str = "\
shardwheel workload driver: measures the timer engine on five server workloads.

Usage: shardwheel [WORKLOAD] [FLAGS]
       cargo run --release -- [WORKLOAD] [FLAGS]

Workloads (with no WORKLOAD all five run, in this order, each in its own process and at its
default sizes unless a flag below overrides them):
  rpc-churn      T threads, each doing N iterations over a ring of its last W handles:
                 take the handle in slot n mod W, cancel it unless n is a multiple of 100,
                 schedule a no-op timeout due in 1-30 s and store its handle there. Timed from
                 a common start until every thread is done.
                 Flags: --threads (2) --ops (5000000) --window (1000).
                 Keys: workload threads ops(T x N) secs mops peak_rss_mb window
  conn-idle      M no-op timers due in 60-120 s inserted from T threads (M/T each), timed;
                 wait until all M are pending and placed in the wheels, measure the resident
                 set; cancel all M from one thread, timed; wait until nothing is pending or
                 linked in a wheel (reclaim_ms); drop the handles and measure the resident set.
                 Flags: --timers (1000000) --threads (2).
                 Keys: workload timers insert_mops bytes_per_timer cancel_mops reclaim_ms
                       rss_after_cancel_mb threads
  accuracy       K timers due in 0-1000 ms (1 us steps) scheduled from one thread as fast as it
                 can; each callback records how late it ran (the instant it starts minus the
                 instant it was due). Engine tick 1 ms.
                 Flags: --timers (100000).
                 Keys: workload timers p50_ms p99_ms p999_ms max_ms early
  slow-callback  As accuracy, after S timers due in 0-1000 ms whose callbacks sleep 100 ms
                 (scheduled first); lateness is recorded for the K normal timers only.
                 Flags: --timers (100000) --slow (20).
                 Keys: as accuracy, plus slow
  idle-hold      M no-op timers due in 10-20 min inserted from T threads, timed; wait until all
                 are placed, measure the resident set; then the CPU time (user + sys) the whole
                 process spends over a 5 s idle window.
                 Flags: --timers (10000000) --threads (2).
                 Keys: workload timers insert_mops bytes_per_timer idle_cpu_pct threads

Flags:
  --threads T            producer/inserting threads (rpc-churn, conn-idle, idle-hold), 1-1024
  --ops N                iterations per producer thread (rpc-churn), at least 1
  --window W             handles each producer thread keeps (rpc-churn), at least 1
  --timers M             timers (conn-idle, accuracy, slow-callback, idle-hold), at least 1
  --slow S               slow timers (slow-callback), 0 or more
  --shards N             engine shards, 1-1024 (default: the engine's, one per core)
  --callback-threads N   threads of the engine's callback pool, 1-1024 (default: the engine's)
  --json                 after the table, print each workload's figures as one JSON object on
                         its own line, in run order (with one workload, the last line of stdout)
  -h, --help             print this text

A flag's value follows it as the next argument or after '=' (--ops=1000000). Numbers are
decimal integers; '_' may separate digits (5_000_000). When a flag is given twice the last one
counts. A flag a workload does not use is accepted and ignored. With no WORKLOAD, a size flag
applies to every workload that uses it (--timers 100000 sets the timers of all four that
have timers).

With no WORKLOAD, each workload runs in a child process of its own: the driver runs itself
once per workload, with the workload's name, the same flags and --json, and takes the figures
from the child's last line of stdout. A workload that fails is reported on stderr (after the
child's own messages) and the others still run.

Output: a table on stdout, one row per workload, each row printed when its workload finishes;
with --json the JSON lines follow the table. While a long phase runs, a progress line is drawn
on stderr, only when stderr is a terminal.
Units: secs and *_ms are wall-clock; mops is millions of operations per second; MB is 2^20
bytes; RSS is VmRSS of /proc/self/status (peak_rss_mb: VmHWM, reset at the start of
rpc-churn where the system allows). bytes_per_timer = (RSS once all timers are placed - RSS
before inserting) / timers, with the handles' array allocated before the first reading.
idle_cpu_pct = CPU seconds (user + sys, /proc/self/stat) in the idle window / its length x 100.
Each workload has a process of its own because memory an earlier workload freed but the
allocator kept would be reused without growing the resident set, and so go uncounted.
early counts callbacks that ran before they were due (any value but 0 is a bug).

Exit status: 0 on success, 1 if a workload failed (for instance timed out waiting for the
engine; with no WORKLOAD, once all five have been tried), 2 for a bad command line.
";

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Command {
    Help,
    Run(Options),
}

/// The command line's settings; `None` means the workload's (or the engine's) default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Options {
    pub(crate) workload: Option<Workload>,
    pub(crate) threads: Option<usize>,
    pub(crate) ops: Option<u64>,
    pub(crate) window: Option<usize>,
    pub(crate) timers: Option<usize>,
    pub(crate) slow: Option<usize>,
    pub(crate) shards: Option<usize>,
    pub(crate) callback_threads: Option<usize>,
    pub(crate) json: bool,
}

impl Options {
    /// The arguments that run `workload` alone with these options' flags and `--json`: the
    /// command line of a full run's child process for that workload.
    pub(crate) fn child_args(&self, workload: Workload) -> Vec<String> {
        let flags = [
            ("threads", self.threads.map(|n| n.to_string())),
            ("ops", self.ops.map(|n| n.to_string())),
            ("window", self.window.map(|n| n.to_string())),
            ("timers", self.timers.map(|n| n.to_string())),
            ("slow", self.slow.map(|n| n.to_string())),
            ("shards", self.shards.map(|n| n.to_string())),
            (
                "callback-threads",
                self.callback_threads.map(|n| n.to_string()),
            ),
        ];
        let mut args = vec![workload.name().to_owned()];
        for (name, value) in flags {
            if let Some(value) = value {
                args.push(format!("--{name}={value}"));
            }
        }
        args.push("--json".to_owned());
        args
    }
}

/// A command line the driver cannot run.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UsageError(String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A numeric flag: its name and the values it accepts.
struct Numeric {
    name: &'static str,
    min: u64,
    max: u64,
}

/// Thread counts are capped so a typo cannot ask the system for a million threads.
const MAX_THREADS: u64 = 1024;

const NUMERIC: [Numeric; 7] = [
    Numeric {
        name: "threads",
        min: 1,
        max: MAX_THREADS,
    },
    Numeric {
        name: "ops",
        min: 1,
        max: 1 << 40,
    },
    Numeric {
        name: "window",
        min: 1,
        max: 1 << 32,
    },
    Numeric {
        name: "timers",
        min: 1,
        max: 1 << 40,
    },
    Numeric {
        name: "slow",
        min: 0,
        max: 1 << 32,
    },
    Numeric {
        name: "shards",
        min: 1,
        max: MAX_THREADS,
    },
    Numeric {
        name: "callback-threads",
        min: 1,
        max: MAX_THREADS,
    },
];

/// Parses the arguments (without the program name). `-h` or `--help` anywhere asks for help.
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, UsageError> {
    let args = args
        .into_iter()
        .map(|arg| {
            arg.into_string()
                .map_err(|arg| UsageError(format!("argument {arg:?} is not valid UTF-8")))
        })
        .collect::<Result<Vec<String>, UsageError>>()?;
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        return Ok(Command::Help);
    }
    let mut options = Options::default();
    let mut rest = args.into_iter();
    while let Some(arg) = rest.next() {
        if let Some(flag) = arg.strip_prefix("--") {
            apply_flag(&mut options, flag, &mut rest)?;
        } else if arg.starts_with('-') {
            return Err(UsageError(format!("unknown flag '{arg}'")));
        } else {
            set_workload(&mut options, &arg)?;
        }
    }
    Ok(Command::Run(options))
}

fn set_workload(options: &mut Options, name: &str) -> Result<(), UsageError> {
    let Some(workload) = Workload::from_name(name) else {
        let known: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
        return Err(UsageError(format!(
            "unknown workload '{name}' (the workloads are {})",
            known.join(", ")
        )));
    };
    if let Some(first) = options.workload {
        return Err(UsageError(format!(
            "only one workload can be given, got '{}' and '{name}' (give none to run all five)",
            first.name()
        )));
    }
    options.workload = Some(workload);
    Ok(())
}

/// Applies `--flag` (given without its dashes, possibly with `=value`), taking its value from
/// `rest` when it has none inline.
fn apply_flag(
    options: &mut Options,
    flag: &str,
    rest: &mut impl Iterator<Item = String>,
) -> Result<(), UsageError> {
    let (name, inline) = match flag.split_once('=') {
        Some((name, value)) => (name, Some(value.to_owned())),
        None => (flag, None),
    };
    if name == "json" {
        if inline.is_some() {
            return Err(UsageError("--json takes no value".to_owned()));
        }
        options.json = true;
        return Ok(());
    }
    let Some(spec) = NUMERIC.iter().find(|spec| spec.name == name) else {
        return Err(UsageError(format!("unknown flag '--{name}'")));
    };
    let text = match inline {
        Some(text) => text,
        None => rest
            .next()
            .ok_or_else(|| UsageError(format!("--{name} needs a value")))?,
    };
    let value = parse_number(spec, &text)?;
    store(options, spec.name, value)
}

/// Parses a decimal integer (digits, optionally separated by '_') within the flag's range.
fn parse_number(spec: &Numeric, text: &str) -> Result<u64, UsageError> {
    let name = spec.name;
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    let well_formed = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !text.starts_with('_')
        && !text.ends_with('_');
    if !well_formed {
        return Err(UsageError(format!(
            "--{name} needs a whole number, got '{text}'"
        )));
    }
    match digits.parse::<u64>() {
        Ok(value) if (spec.min..=spec.max).contains(&value) => Ok(value),
        _ => Err(UsageError(format!(
            "--{name} must be between {} and {}, got '{text}'",
            spec.min, spec.max
        ))),
    }
}

fn store(options: &mut Options, name: &str, value: u64) -> Result<(), UsageError> {
    if name == "ops" {
        options.ops = Some(value);
        return Ok(());
    }
    let size = usize::try_from(value)
        .map_err(|_| UsageError(format!("--{name} {value} is too large for this platform")))?;
    let slot = match name {
        "threads" => &mut options.threads,
        "window" => &mut options.window,
        "timers" => &mut options.timers,
        "slow" => &mut options.slow,
        "shards" => &mut options.shards,
        "callback-threads" => &mut options.callback_threads,
        _ => return Err(UsageError(format!("unknown flag '--{name}'"))),
    };
    *slot = Some(size);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Command, UsageError> {
        parse(args.iter().map(OsString::from))
    }

    fn options(args: &[&str]) -> Options {
        match parse_strs(args) {
            Ok(Command::Run(options)) => options,
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    #[test]
    fn no_arguments_run_everything_at_defaults() {
        assert_eq!(options(&[]), Options::default());
    }

    #[test]
    fn a_workload_and_flags_in_either_form() {
        let parsed = options(&["rpc-churn", "--ops", "2_000", "--threads=4", "--json"]);
        assert_eq!(parsed.workload, Some(Workload::RpcChurn));
        assert_eq!(parsed.ops, Some(2000));
        assert_eq!(parsed.threads, Some(4));
        assert!(parsed.json);
        assert_eq!(options(&["--slow", "0"]).slow, Some(0));
        assert_eq!(options(&["--timers", "1", "--timers", "7"]).timers, Some(7));
    }

    #[test]
    fn a_childs_command_line_reads_back_as_the_same_options() {
        let full = Options {
            workload: None,
            threads: Some(3),
            ops: Some(1 << 40),
            window: Some(7),
            timers: Some(20_000),
            slow: Some(0),
            shards: Some(2),
            callback_threads: Some(1024),
            json: false,
        };
        for given in [full, Options::default()] {
            for workload in Workload::ALL {
                let args = given.child_args(workload);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let expected = Options {
                    workload: Some(workload),
                    json: true,
                    ..given.clone()
                };
                assert_eq!(options(&args), expected);
            }
        }
        assert_eq!(
            Options::default().child_args(Workload::IdleHold),
            ["idle-hold", "--json"]
        );
    }

    #[test]
    fn help_wins_anywhere() {
        assert!(matches!(parse_strs(&["--bogus", "-h"]), Ok(Command::Help)));
        assert!(matches!(
            parse_strs(&["accuracy", "--help"]),
            Ok(Command::Help)
        ));
    }

    #[test]
    fn bad_command_lines_are_refused() {
        for bad in [
            &["nope"][..],
            &["accuracy", "conn-idle"],
            &["--nope"],
            &["-x"],
            &["--ops"],
            &["--ops", "ten"],
            &["--ops", "-5"],
            &["--ops", "1.5"],
            &["--ops", "_1"],
            &["--ops", ""],
            &["--ops", "99999999999999999999999"],
            &["--threads", "0"],
            &["--threads", "5000"],
            &["--timers", "0"],
            &["--window=0"],
            &["--json=yes"],
        ] {
            assert!(parse_strs(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
