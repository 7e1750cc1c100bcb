//! What the process costs: resident memory, read from Linux's `/proc/self/status`; CPU time,
//! from `getrusage`; and the context switches of the engine's tick threads, from
//! `/proc/self/task/*/status`.

use std::fs;
use std::time::Duration;

use super::Failure;

/// The resident set (`VmRSS`), in kB.
pub(crate) fn rss_kb() -> Result<u64, Failure> {
    status_kb("VmRSS")
}

/// The peak resident set (`VmHWM`), in kB.
pub(crate) fn peak_rss_kb() -> Result<u64, Failure> {
    status_kb("VmHWM")
}

/// Resets the peak resident set to the current one, where the system allows (Linux 4.0 and
/// later); returns whether it did.
pub(crate) fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The CPU time (user + system) of the whole process so far, every thread's, to the
/// microsecond (`getrusage(RUSAGE_SELF)`).
#[cfg(target_os = "linux")]
pub(crate) fn cpu_time() -> Result<Duration, Failure> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `usage` is writable memory the size and alignment of a `rusage`, which is all
    // `getrusage` writes to; `RUSAGE_SELF` is a valid `who`.
    let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if status != 0 {
        return Err(Failure::new(format!(
            "cannot read the CPU time (getrusage): {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: `getrusage` returned 0, so it filled in the whole `rusage`.
    let usage = unsafe { usage.assume_init() };
    Ok(duration(usage.ru_utime) + duration(usage.ru_stime))
}

/// Without Linux the CPU time is not read, and idle-hold fails (as the `/proc` readings do).
#[cfg(not(target_os = "linux"))]
pub(crate) fn cpu_time() -> Result<Duration, Failure> {
    Err(Failure::new("cannot read the CPU time: only on Linux"))
}

/// A `timeval` as a `Duration` (a negative field, which `getrusage` never gives, as 0).
#[cfg(target_os = "linux")]
fn duration(time: libc::timeval) -> Duration {
    let secs = u64::try_from(time.tv_sec).unwrap_or(0);
    let micros = u64::try_from(time.tv_usec).unwrap_or(0);
    Duration::from_secs(secs).saturating_add(Duration::from_micros(micros))
}

/// The name prefix of the engine's tick threads as `/proc` shows it (`sw-tick-0`, ...; the
/// callback pool's are `sw-callback-0`, ...).
const TICK_THREAD: &str = "sw-tick-";

/// The context switches, voluntary and not, of every tick thread of the process so far, and
/// how many tick threads there are.
pub(crate) fn tick_thread_switches() -> Result<(u64, usize), Failure> {
    let (mut switches, mut threads) = (0, 0);
    for_each_tick_thread("status", |status| {
        threads += 1;
        switches += parse_status_count(status, "voluntary_ctxt_switches").unwrap_or(0)
            + parse_status_count(status, "nonvoluntary_ctxt_switches").unwrap_or(0);
    })?;
    Ok((switches, threads))
}

/// The CPU time of every tick thread of the process so far, to the nanosecond (the first
/// field of each thread's `schedstat`).
pub(crate) fn tick_thread_cpu() -> Result<Duration, Failure> {
    let mut nanos = 0;
    for_each_tick_thread("schedstat", |schedstat| {
        nanos += parse_first_count(schedstat).unwrap_or(0);
    })?;
    Ok(Duration::from_nanos(nanos))
}

/// Calls `each` with the file `file` of every tick thread's `/proc/self/task` directory.
fn for_each_tick_thread(file: &str, mut each: impl FnMut(&str)) -> Result<(), Failure> {
    let tasks = fs::read_dir("/proc/self/task")
        .map_err(|error| Failure::new(format!("cannot read /proc/self/task: {error}")))?;
    for task in tasks.flatten() {
        let dir = task.path();
        // A thread that exited meanwhile has no files left: skip it.
        let Ok(name) = fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if !name.starts_with(TICK_THREAD) {
            continue;
        }
        if let Ok(text) = fs::read_to_string(dir.join(file)) {
            each(&text);
        }
    }
    Ok(())
}

/// The first number of a line of numbers.
fn parse_first_count(line: &str) -> Option<u64> {
    line.split_whitespace().next()?.parse().ok()
}

/// The value of a `field:\t1234` line of a status file.
fn parse_status_count(status: &str, field: &str) -> Option<u64> {
    let value = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?;
    value.trim().parse().ok()
}

fn read(path: &str) -> Result<String, Failure> {
    fs::read_to_string(path).map_err(|error| Failure::new(format!("cannot read {path}: {error}")))
}

fn status_kb(field: &str) -> Result<u64, Failure> {
    let status = read("/proc/self/status")?;
    parse_status_kb(&status, field)
        .ok_or_else(|| Failure::new(format!("cannot find {field} in /proc/self/status")))
}

/// The value of a `Field:   1234 kB` line of /proc/self/status.
fn parse_status_kb(status: &str, field: &str) -> Option<u64> {
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?;
    line.trim().strip_suffix("kB")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_switch_counts_are_read_from_a_status_file() {
        let status = "Name:\tshardwheel-shar\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(
            parse_status_count(status, "voluntary_ctxt_switches"),
            Some(12)
        );
        assert_eq!(
            parse_status_count(status, "nonvoluntary_ctxt_switches"),
            Some(3)
        );
        assert_eq!(parse_status_count(status, "Threads"), None);
    }

    #[test]
    fn a_schedstat_line_gives_its_cpu_time_first() {
        assert_eq!(parse_first_count("123456789 2000 17\n"), Some(123_456_789));
        assert_eq!(parse_first_count(""), None);
    }

    #[test]
    fn status_lines_are_parsed_in_kb() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t    1234 kB\n";
        assert_eq!(parse_status_kb(status, "VmRSS"), Some(1234));
        assert_eq!(parse_status_kb(status, "VmHWM"), Some(2048));
        assert_eq!(parse_status_kb(status, "VmSwap"), None);
    }

    #[test]
    fn this_process_can_be_measured() {
        assert!(rss_kb().is_ok_and(|kb| kb > 0));
        assert!(peak_rss_kb().is_ok());
        assert!(cpu_time().is_ok());
    }

    #[test]
    fn cpu_time_is_finer_than_a_clock_tick() {
        // Spins until the CPU time moves, then checks it moved by less than a 10 ms clock
        // tick of /proc/self/stat.
        let start = cpu_time().unwrap();
        let mut now = start;
        while now == start {
            std::hint::black_box(now);
            now = cpu_time().unwrap();
        }
        assert!(now - start < Duration::from_millis(5), "{:?}", now - start);
    }
}
