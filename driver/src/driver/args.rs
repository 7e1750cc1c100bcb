//! The command line: at most one workload name and the flags, parsed by clap.

use std::ffi::OsString;

use clap::{ArgAction, CommandFactory, Parser};

use super::help::{ABOUT, NOTES, TEMPLATE, USAGE, WORKLOADS};
use super::Workload;

/// Thread counts are capped so a typo cannot ask the system for a million threads.
const MAX_THREADS: u64 = 1024;

/// The largest `--ops` and `--timers`.
const MAX_SIZE: u64 = 1 << 40;

/// The largest `--window` and `--slow`.
const MAX_SMALL_SIZE: u64 = 1 << 32;

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Command {
    Help,
    Run(Options),
}

/// The whole command line: the options and the help flag.
#[derive(Debug, Parser)]
#[command(
    name = "shardwheel",
    about = ABOUT,
    override_usage = USAGE,
    help_template = TEMPLATE,
    before_help = WORKLOADS,
    after_help = NOTES,
    // The last of a flag given twice counts.
    args_override_self = true,
    // `-h` and `--help` both print the whole text, each flag on one line (see `help` below).
    disable_help_flag = true,
)]
struct Cli {
    #[command(flatten)]
    options: Options,

    /// print this text
    #[arg(short, long, action = ArgAction::Help)]
    help: Option<bool>,
}

/// The command line's settings; `None` means the workload's (or the engine's) default.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub(crate) struct Options {
    /// one of the workloads above; with none, all five run
    #[arg(value_enum, hide_possible_values = true)]
    pub(crate) workload: Option<Workload>,

    /// producer/inserting threads (rpc-churn, conn-idle, idle-hold), or
    /// scheduling threads and tokio workers (storm), 1-1024
    #[arg(long, value_name = "T", value_parser = number::<usize, 1, MAX_THREADS>)]
    pub(crate) threads: Option<usize>,

    /// iterations per producer thread (rpc-churn), at least 1
    #[arg(long, value_name = "N", value_parser = number::<u64, 1, MAX_SIZE>)]
    pub(crate) ops: Option<u64>,

    /// handles each producer thread keeps (rpc-churn), at least 1
    #[arg(long, value_name = "W", value_parser = number::<usize, 1, MAX_SMALL_SIZE>)]
    pub(crate) window: Option<usize>,

    /// timers (conn-idle, accuracy, slow-callback, idle-hold, storm,
    /// spike), or tasks of one sleep each (sleeping-tasks), at least 1
    #[arg(long, value_name = "M", value_parser = number::<usize, 1, MAX_SIZE>)]
    pub(crate) timers: Option<usize>,

    /// slow timers (slow-callback), 0 or more
    #[arg(long, value_name = "S", value_parser = number::<usize, 0, MAX_SMALL_SIZE>)]
    pub(crate) slow: Option<usize>,

    /// the peer to run here (sleeping-tasks, storm): shardwheel or tokio;
    /// with none, sleeping-tasks runs both, each in a child process,
    /// and storm shardwheel
    #[arg(long, value_name = "PEER", value_enum, hide_possible_values = true)]
    pub(crate) peer: Option<Peer>,

    /// the thread counts (scaling), comma-separated, each 1-1024
    /// (default 1, 2, 4, ... up to the cpu count, then it and twice it)
    #[arg(long, value_name = "A,B,...", value_delimiter = ',',
          value_parser = number::<usize, 1, MAX_THREADS>)]
    pub(crate) threads_list: Option<Vec<usize>>,

    /// write an SVG plot of the figures to FILE (scaling)
    #[arg(long, value_name = "FILE")]
    pub(crate) plot: Option<std::path::PathBuf>,

    /// how long the probe runs (host-stalls), 1-3600
    #[arg(long, value_name = "S", value_parser = number::<u64, 1, 3600>)]
    pub(crate) seconds: Option<u64>,

    /// engine shards, 1-1024 (default: the engine's, one per cpu)
    #[arg(long, value_name = "N", value_parser = number::<usize, 1, MAX_THREADS>)]
    pub(crate) shards: Option<usize>,

    /// threads of the engine's callback pool, 1-1024 (default: the engine's)
    #[arg(long, value_name = "N", value_parser = number::<usize, 1, MAX_THREADS>)]
    pub(crate) callback_threads: Option<usize>,

    /// the engine's tick in microseconds, 1-3600000000 (default 1000)
    #[arg(long, value_name = "N", value_parser = number::<u64, 1, 3_600_000_000>)]
    pub(crate) tick_us: Option<u64>,

    /// pin each of the engine's tick threads to a cpu (by default they run unpinned)
    #[arg(long)]
    pub(crate) pin: bool,

    /// run callbacks on the tick threads (the engine's inline_callbacks)
    #[arg(long)]
    pub(crate) inline: bool,

    /// after the table, print each workload's figures as one JSON object
    /// on its own line, in run order (with one workload, the last line of
    /// stdout)
    #[arg(long, verbatim_doc_comment)]
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
            ("peer", self.peer.map(|peer| peer.name().to_owned())),
            ("seconds", self.seconds.map(|n| n.to_string())),
            (
                "threads-list",
                self.threads_list.as_ref().map(|list| {
                    list.iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                }),
            ),
            (
                "plot",
                self.plot.as_ref().map(|path| path.display().to_string()),
            ),
            ("shards", self.shards.map(|n| n.to_string())),
            ("tick-us", self.tick_us.map(|n| n.to_string())),
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
        if self.pin {
            args.push("--pin".to_owned());
        }
        if self.inline {
            args.push("--inline".to_owned());
        }
        args.push("--json".to_owned());
        args
    }
}

/// Whose sleep the tasks of sleeping-tasks await, and whose timers storm runs on. On the
/// command line (`--peer`) each is named as [`Peer::name`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Peer {
    Shardwheel,
    Tokio,
}

impl Peer {
    /// Both peers, in the order a run takes them.
    pub(crate) const ALL: [Peer; 2] = [Peer::Shardwheel, Peer::Tokio];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Peer::Shardwheel => "shardwheel",
            Peer::Tokio => "tokio",
        }
    }
}

/// Parses the arguments (without the program name). `-h` or `--help` anywhere asks for help,
/// even after an argument clap would refuse first.
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, clap::Error> {
    let args: Vec<OsString> = args.into_iter().collect();
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        return Ok(Command::Help);
    }
    let program = OsString::from("shardwheel");
    let cli = Cli::try_parse_from(std::iter::once(program).chain(args))?;
    Ok(Command::Run(cli.options))
}

/// The whole `--help` text.
pub(crate) fn help() -> String {
    Cli::command().render_help().to_string()
}

/// A flag's value: a decimal whole number in `MIN..=MAX`, whose digits '_' may separate
/// (`5_000_000`).
fn number<T: TryFrom<u64>, const MIN: u64, const MAX: u64>(text: &str) -> Result<T, String> {
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    let well_formed = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !text.starts_with('_')
        && !text.ends_with('_');
    if !well_formed {
        return Err("expected a whole number (digits, which '_' may separate)".to_owned());
    }
    let value = digits
        .parse::<u64>()
        .ok()
        .filter(|value| (MIN..=MAX).contains(value))
        .ok_or_else(|| format!("must be between {MIN} and {MAX}"))?;
    T::try_from(value).map_err(|_| format!("{value} is too large for this platform"))
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Command, clap::Error> {
        parse(args.iter().map(OsString::from))
    }

    fn options(args: &[&str]) -> Options {
        match parse_strs(args) {
            Ok(Command::Run(options)) => options,
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    fn refusal(args: &[&str]) -> clap::Error {
        match parse_strs(args) {
            Err(error) => error,
            other => panic!("{args:?} was accepted: {other:?}"),
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
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
        assert_eq!(options(&["--callback-threads=8"]).callback_threads, Some(8));
        assert_eq!(options(&["--window=1_0_0"]).window, Some(100));
        // Flags before the workload, and flags the workload does not use.
        let parsed = options(&["--window", "7", "--slow=3", "accuracy"]);
        assert_eq!(parsed.workload, Some(Workload::Accuracy));
        assert_eq!((parsed.window, parsed.slow), (Some(7), Some(3)));
    }

    #[test]
    fn the_last_of_a_repeated_flag_counts() {
        assert_eq!(options(&["--timers", "1", "--timers", "7"]).timers, Some(7));
        assert_eq!(options(&["--ops=5", "--ops", "6_000"]).ops, Some(6000));
        assert!(options(&["--json", "--json"]).json);
    }

    #[test]
    fn ranges_end_where_the_help_says() {
        assert_eq!(options(&["--threads", "1"]).threads, Some(1));
        assert_eq!(options(&["--threads", "1024"]).threads, Some(1024));
        assert_eq!(options(&["--shards", "1_024"]).shards, Some(1024));
        assert_eq!(options(&["--ops", "1099511627776"]).ops, Some(1 << 40));
        let error = refusal(&["--threads", "1025"]);
        assert_eq!(error.kind(), ErrorKind::ValueValidation);
        assert!(error.to_string().contains("must be between 1 and 1024"));
        let error = refusal(&["--ops", "abc"]);
        assert!(error.to_string().contains("expected a whole number"));
    }

    #[test]
    fn every_workload_is_found_by_its_name() {
        let named_only = [
            Workload::SleepingTasks,
            Workload::Scaling,
            Workload::Storm,
            Workload::Spike,
            Workload::HostStalls,
        ];
        for workload in Workload::ALL.into_iter().chain(named_only) {
            assert_eq!(options(&[workload.name()]).workload, Some(workload));
        }
        let parsed = options(&["host-stalls", "--seconds", "2"]);
        assert_eq!(parsed.seconds, Some(2));
        assert!(refusal(&["--seconds", "0"])
            .to_string()
            .contains("must be between 1 and 3600"));
        let parsed = options(&["sleeping-tasks", "--peer", "tokio", "--timers=20_000"]);
        assert_eq!(parsed.workload, Some(Workload::SleepingTasks));
        assert_eq!(
            (parsed.peer, parsed.timers),
            (Some(Peer::Tokio), Some(20_000))
        );
        assert_eq!(options(&["--peer=shardwheel"]).peer, Some(Peer::Shardwheel));
        let parsed = options(&["storm", "--peer", "tokio", "--threads=4", "--inline"]);
        assert_eq!(parsed.workload, Some(Workload::Storm));
        assert_eq!(
            (parsed.peer, parsed.threads, parsed.inline),
            (Some(Peer::Tokio), Some(4), true)
        );
        let parsed = options(&["spike", "--timers", "400_000"]);
        assert_eq!(parsed.workload, Some(Workload::Spike));
        assert_eq!((parsed.timers, parsed.inline), (Some(400_000), false));
        let parsed = options(&["scaling", "--threads-list", "1,2,16", "--plot", "s.svg"]);
        assert_eq!(parsed.threads_list, Some(vec![1, 2, 16]));
        assert_eq!(parsed.plot, Some("s.svg".into()));
        assert!(refusal(&["scaling", "--threads-list", "1,0"])
            .to_string()
            .contains("must be between 1 and 1024"));
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
            peer: Some(Peer::Tokio),
            seconds: Some(9),
            threads_list: Some(vec![1, 3, 8]),
            plot: Some("out/scaling.svg".into()),
            shards: Some(2),
            callback_threads: Some(1024),
            tick_us: Some(100),
            pin: true,
            inline: true,
            json: false,
        };
        for given in [full, Options::default()] {
            for workload in Workload::ALL.into_iter().chain([
                Workload::SleepingTasks,
                Workload::Scaling,
                Workload::Storm,
                Workload::Spike,
            ]) {
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
        assert!(matches!(parse_strs(&["--ops", "-h"]), Ok(Command::Help)));
    }

    #[test]
    fn the_help_keeps_its_sections() {
        let help = help();
        for section in [
            ABOUT,
            "Usage: shardwheel [WORKLOAD] [FLAGS]",
            "Workloads (with no WORKLOAD",
            "Keys: workload timers insert_mops bytes_per_timer idle_cpu_pct",
            "shard_wakeups_per_sec threads",
            "tokio_spawn_mtasks_per_sec",
            "timeout_vs_tokio timeout_vs_tokio_alt timeout_vs_pingora.",
            "--callback-threads <N>",
            "--inline",
            "Keys: workload timers threads first_ms drain_ms p50_ms p99_ms",
            "Keys: workload timers base_mb spike_mb cancelled_mb calm_mb idle_mb",
            "-h, --help",
            "Exit status: 0 on success",
        ] {
            assert!(
                help.contains(section),
                "{section:?} is missing from:\n{help}"
            );
        }
    }

    #[test]
    fn bad_command_lines_are_refused_as_usage_errors() {
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
            &["--ops", "1_"],
            &["--ops", ""],
            &["--ops", "99999999999999999999999"],
            &["--ops", "1099511627777"],
            &["--ops", "0"],
            &["--threads", "0"],
            &["--threads", "5000"],
            &["--timers", "0"],
            &["--window=0"],
            &["--peer", "rust"],
            &["--peer"],
            &["--json=yes"],
        ] {
            assert_eq!(refusal(bad).exit_code(), 2, "{bad:?}");
        }
    }
}
