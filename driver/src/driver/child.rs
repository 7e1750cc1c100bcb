//! A full run: every workload in a child process of its own.
//!
//! A workload's memory figures are right only when it has the process to itself: memory an
//! earlier workload freed but the allocator kept is reused without growing the resident set.
//! So with no workload named the driver runs itself once per workload, with that workload's
//! name, the same flags and `--json`, and reads the figures back from the child's last line of
//! stdout. Children inherit stderr, so their progress lines and error messages show as in a
//! run of one workload.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::report::{Report, Table};
use super::{Context, Failure, Workload};

/// Runs the five workloads, each in a child process, printing the table as it goes. A
/// workload that fails is reported on stderr and the others still run; the run fails at the
/// end if any did.
pub(crate) fn run_all(ctx: &Context) -> Result<(), Failure> {
    let exe = this_program()?;
    let mut table = Table::start(ctx.options.json)?;
    let mut failed = Vec::new();
    for workload in Workload::ALL {
        match run_again(&exe, ctx.options.child_args(workload), workload) {
            Ok(report) => table.push(report)?,
            Err(failure) => {
                // A child that was killed may have left its progress line behind.
                ctx.progress.clear();
                eprintln!("shardwheel: {}: {failure}", workload.name());
                failed.push(workload.name());
            }
        }
    }
    table.finish()?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "{} of {} workloads failed: {}",
            failed.len(),
            Workload::ALL.len(),
            failed.join(", ")
        )))
    }
}

/// This program, to run again in child processes.
pub(crate) fn this_program() -> Result<PathBuf, Failure> {
    env::current_exe().map_err(|error| {
        Failure::new(format!(
            "cannot find this program to run it in child processes: {error}"
        ))
    })
}

/// Runs `exe` (this program) in a child process with `args`, which run `workload` alone with
/// `--json`, and reads its report back.
pub(crate) fn run_again(
    exe: &Path,
    args: Vec<String>,
    workload: Workload,
) -> Result<Report, Failure> {
    let mut command = Command::new(exe);
    command.args(args);
    run_child(command, workload)
}

/// Runs `command` (a child process that runs `workload` with `--json`) to its end, with stdin
/// closed and stderr inherited, and reads `workload`'s report from its last line of stdout.
fn run_child(mut command: Command, workload: Workload) -> Result<Report, Failure> {
    let output = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| Failure::new(format!("cannot start a child process: {error}")))?;
    if !output.status.success() {
        return Err(Failure::new(format!(
            "the child process failed ({})",
            output.status
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().next_back().unwrap_or("");
    Report::from_json(workload, line).map_err(|error| {
        Failure::new(format!(
            "the child process's last line of output, {line:?}, is not its report: {error}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    #[test]
    fn the_report_is_the_last_line_of_stdout() {
        let script = r#"echo 'workload       figures'; echo 'accuracy       timers=5'
            echo '{"workload":"accuracy","timers":5,"p50_ms":0.500}'"#;
        let report = run_child(shell(script), Workload::Accuracy).unwrap();
        assert_eq!(
            report.json().unwrap(),
            r#"{"workload":"accuracy","timers":5,"p50_ms":0.500}"#
        );
    }

    #[test]
    fn a_failed_or_silent_child_is_a_failure() {
        let report = r#"echo '{"workload":"accuracy","timers":5}'"#;
        for script in [
            // Its report, but a failure status.
            &format!("{report}; exit 1")[..],
            // Killed.
            "kill -9 $$",
            "true",
            "echo '{\"workload\":\"accuracy\"'",
            // Another workload's report.
            r#"echo '{"workload":"idle-hold","timers":5}'"#,
            // The report, not last.
            &format!("{report}; echo done"),
        ] {
            assert!(
                run_child(shell(script), Workload::Accuracy).is_err(),
                "{script:?} was taken for a report"
            );
        }
        let missing = Command::new("/nonexistent/shardwheel");
        let error = run_child(missing, Workload::Accuracy).unwrap_err();
        assert!(error
            .to_string()
            .starts_with("cannot start a child process"));
    }
}
