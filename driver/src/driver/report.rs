//! A workload's figures, as a row of the human table and as one line of JSON.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::io::{self, Write};

use super::json::{self, Scalar};
use super::{Failure, Workload};

/// The width of the table's first column: the longest workload name and a gap.
const NAME_WIDTH: usize = 15;

/// One figure.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Count(u64),
    /// A number printed with this many decimals.
    Fixed(f64, usize),
    /// A figure read back from another process's JSON line (a number or `null`), printed as
    /// the text it was read from.
    Verbatim(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Count(n) => write!(f, "{n}"),
            // JSON has no NaN or infinity.
            Value::Fixed(x, _) if !x.is_finite() => f.write_str("null"),
            Value::Fixed(x, decimals) => write!(f, "{x:.decimals$}"),
            Value::Verbatim(ref text) => f.write_str(text),
        }
    }
}

/// The figures of one workload run, in the order they were added.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    workload: Workload,
    figures: Vec<(Cow<'static, str>, Value)>,
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
        self.figures.push((key.into(), Value::Count(n)));
        self
    }

    /// Adds a number to be printed with `decimals` decimals.
    pub(crate) fn fixed(mut self, key: &'static str, x: f64, decimals: usize) -> Self {
        self.figures.push((key.into(), Value::Fixed(x, decimals)));
        self
    }

    /// The report `workload` printed as its JSON line (in another process), read back: its row
    /// and JSON line are the ones that process would print. The object must name `workload`
    /// first, then hold only numbers or `null` under plain keys (letters, digits and '_').
    pub(crate) fn from_json(workload: Workload, line: &str) -> Result<Self, String> {
        let fields =
            json::parse_object(line).map_err(|error| format!("not a JSON object: {error}"))?;
        let mut fields = fields.into_iter();
        match fields.next() {
            Some((key, Scalar::Str(name))) if key == "workload" && name == workload.name() => {}
            _ => {
                return Err(format!(
                    "the object does not start with \"workload\":\"{}\"",
                    workload.name()
                ))
            }
        }
        let mut report = Report::new(workload);
        for (key, value) in fields {
            let plain =
                !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !plain {
                return Err(format!("unexpected key {key:?}"));
            }
            let text = match value {
                Scalar::Number(text) => text,
                Scalar::Null => "null".to_owned(),
                Scalar::Str(_) => return Err(format!("\"{key}\" is not a number")),
            };
            report.figures.push((key.into(), Value::Verbatim(text)));
        }
        Ok(report)
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

    #[test]
    fn a_report_read_back_prints_as_the_original() {
        let report = Report::new(Workload::ConnIdle)
            .count("timers", 1_000_000)
            .fixed("insert_mops", 12.3456, 3)
            .fixed("bytes_per_timer", 0.0, 1)
            .fixed("reclaim_ms", f64::INFINITY, 1);
        let read = Report::from_json(Workload::ConnIdle, &report.json()).unwrap();
        assert_eq!(read.json(), report.json());
        assert_eq!(read.row(), report.row());
        assert_eq!(
            read.row(),
            "conn-idle      timers=1000000  insert_mops=12.346  bytes_per_timer=0.0  reclaim_ms=null"
        );
        let bare = Report::from_json(Workload::IdleHold, r#" {"workload":"idle-hold"} "#).unwrap();
        assert_eq!(bare.json(), r#"{"workload":"idle-hold"}"#);
    }

    #[test]
    fn a_line_that_is_not_the_workloads_report_is_refused() {
        for bad in [
            "",
            "workload       figures",
            r#"{"workload":"accuracy","timers":5"#,
            r#"{"timers":5,"workload":"accuracy"}"#,
            r#"{"workload":"conn-idle","timers":5}"#,
            r#"{"workload":"accuracy","note":"x"}"#,
            r#"{"workload":"accuracy","a b":1}"#,
            r#"{"workload":"accuracy","":1}"#,
            r#"{"workload":"accuracy","timers":5,"workload":"accuracy"}"#,
        ] {
            assert!(
                Report::from_json(Workload::Accuracy, bad).is_err(),
                "{bad:?} was accepted"
            );
        }
    }
}
