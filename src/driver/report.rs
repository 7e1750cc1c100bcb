//! A workload's figures, as a row of the human table and as one line of JSON.

use std::fmt::{self, Write as _};
use std::io::{self, Write};

use super::{Failure, Workload};

/// The width of the table's first column: the longest workload name and a gap.
const NAME_WIDTH: usize = 15;

/// One figure.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Count(u64),
    /// A number printed with this many decimals.
    Fixed(f64, usize),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Count(n) => write!(f, "{n}"),
            // JSON has no NaN or infinity.
            Value::Fixed(x, _) if !x.is_finite() => f.write_str("null"),
            Value::Fixed(x, decimals) => write!(f, "{x:.decimals$}"),
        }
    }
}

/// The figures of one workload run, in the order they were added.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    workload: Workload,
    figures: Vec<(&'static str, Value)>,
}

impl Report {
    pub(crate) fn new(workload: Workload) -> Self {
        Report {
            workload,
            figures: Vec::new(),
        }
    }

    /// Adds a whole number.
    pub(crate) fn count(mut self, key: &'static str, n: u64) -> Self {
        self.figures.push((key, Value::Count(n)));
        self
    }

    /// Adds a number to be printed with `decimals` decimals.
    pub(crate) fn fixed(mut self, key: &'static str, x: f64, decimals: usize) -> Self {
        self.figures.push((key, Value::Fixed(x, decimals)));
        self
    }

    /// The report as one line of JSON: `workload` first, then the figures.
    pub(crate) fn json(&self) -> String {
        let mut line = format!("{{\"workload\":\"{}\"", self.workload.name());
        for (key, value) in &self.figures {
            // Writing to a String cannot fail.
            let _ = write!(line, ",\"{key}\":{value}");
        }
        line.push('}');
        line
    }

    /// The report as a row of the human table.
    pub(crate) fn row(&self) -> String {
        let figures: Vec<String> = self
            .figures
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        format!(
            "{:<NAME_WIDTH$}{}",
            self.workload.name(),
            figures.join("  ")
        )
    }
}

/// The table on stdout: a header at the start, a row as each workload finishes, and with
/// `--json` the JSON lines at the end.
pub(crate) struct Table {
    json: bool,
    reports: Vec<Report>,
}

impl Table {
    /// Prints the header.
    pub(crate) fn start(json: bool) -> Result<Self, Failure> {
        print_line(&format!("{:<NAME_WIDTH$}figures", "workload"))?;
        Ok(Table {
            json,
            reports: Vec::new(),
        })
    }

    /// Prints `report`'s row.
    pub(crate) fn push(&mut self, report: Report) -> Result<(), Failure> {
        print_line(&report.row())?;
        self.reports.push(report);
        Ok(())
    }

    /// Prints the JSON lines, if asked for.
    pub(crate) fn finish(self) -> Result<(), Failure> {
        if self.json {
            for report in &self.reports {
                print_line(&report.json())?;
            }
        }
        Ok(())
    }
}

fn print_line(line: &str) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|error| Failure::new(format!("cannot write to stdout: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_workload_first_and_fixed_decimals() {
        let report = Report::new(Workload::Accuracy)
            .count("timers", 5)
            .fixed("p50_ms", 0.51234, 3)
            .fixed("bad", f64::NAN, 1);
        assert_eq!(
            report.json(),
            r#"{"workload":"accuracy","timers":5,"p50_ms":0.512,"bad":null}"#
        );
        assert_eq!(
            report.row(),
            "accuracy       timers=5  p50_ms=0.512  bad=null"
        );
    }
}
