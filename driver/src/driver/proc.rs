//! What the process costs, read from Linux's `/proc/self`: resident memory and CPU time.

use std::fs;
use std::process::Command;
use std::sync::OnceLock;

use super::Failure;

/// Clock ticks per second when `getconf CLK_TCK` cannot say: 100 on every common Linux
/// platform. (The system call behind it is out of reach without a dependency.)
const FALLBACK_TICKS_PER_SECOND: u64 = 100;

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

/// The CPU time (user + system) of the whole process so far, in clock ticks.
pub(crate) fn cpu_ticks() -> Result<u64, Failure> {
    let stat = read("/proc/self/stat")?;
    parse_cpu_ticks(&stat)
        .ok_or_else(|| Failure::new("cannot find utime and stime in /proc/self/stat"))
}

/// Clock ticks per second, the unit of [`cpu_ticks`]: asked of `getconf CLK_TCK` once, or
/// [`FALLBACK_TICKS_PER_SECOND`].
pub(crate) fn ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .filter(|output| output.status.success())
            .and_then(|output| String::from_utf8(output.stdout).ok())
            .and_then(|text| text.trim().parse::<u64>().ok())
            .filter(|&ticks| ticks > 0)
            .unwrap_or(FALLBACK_TICKS_PER_SECOND)
    })
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

/// utime + stime (fields 14 and 15) of /proc/self/stat. The command name (field 2) is in
/// parentheses and may hold spaces or parentheses itself, so fields are counted from the last
/// ')': the first one after it is field 3.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(14 - 3);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_are_parsed_in_kb() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t    1234 kB\n";
        assert_eq!(parse_status_kb(status, "VmRSS"), Some(1234));
        assert_eq!(parse_status_kb(status, "VmHWM"), Some(2048));
        assert_eq!(parse_status_kb(status, "VmSwap"), None);
    }

    #[test]
    fn cpu_ticks_are_counted_after_the_command_name() {
        let stat = "42 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 70 30 0 0 20 0 1";
        assert_eq!(parse_cpu_ticks(stat), Some(100));
        assert_eq!(parse_cpu_ticks("42 (x) S 1"), None);
    }

    #[test]
    fn this_process_can_be_measured() {
        assert!(rss_kb().is_ok_and(|kb| kb > 0));
        assert!(peak_rss_kb().is_ok());
        assert!(cpu_ticks().is_ok());
        assert!(ticks_per_second() > 0);
    }
}
