//! A workload's figures, as a row of the human table and as one line of JSON.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Number, Value};

use super::{Failure, Workload};

/// The width of the table's first column: the longest workload name and a gap.
const NAME_WIDTH: usize = 15;

/// One figure: a number, `null` for one JSON cannot hold (NaN, an infinity), or a label (the
/// scaling workload's case and peer). serde_json is built with `arbitrary_precision`, so a
/// `Number` keeps the text it was made from: a figure has the same decimals in the row and in
/// the JSON line, in this process and in the one that reads the line back.
type Figure = Value;

/// The figures of one workload run, in the order they were added.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    workload: Workload,
    figures: Vec<(Cow<'static, str>, Figure)>,
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
        self.figures
            .push((key.into(), Value::Number(Number::from(n))));
        self
    }

    /// Adds a label.
    pub(crate) fn label(mut self, key: &'static str, text: &str) -> Self {
        self.figures
            .push((key.into(), Value::String(text.to_owned())));
        self
    }

    /// The number under `key`, if there is one.
    pub(crate) fn number(&self, key: &str) -> Option<f64> {
        self.figures
            .iter()
            .find(|(seen, _)| seen == key)
            .and_then(|(_, figure)| figure.as_f64())
    }

    /// The label under `key`, if there is one.
    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        self.figures
            .iter()
            .find(|(seen, _)| seen == key)
            .and_then(|(_, figure)| figure.as_str())
    }

    /// Adds a number to be printed with `decimals` decimals.
    pub(crate) fn fixed(mut self, key: &'static str, x: f64, decimals: usize) -> Self {
        // A finite f64 printed with fixed decimals is always a JSON number.
        let figure = x
            .is_finite()
            .then(|| Number::from_str(&format!("{x:.decimals$}")).ok())
            .flatten()
            .map_or(Value::Null, Value::Number);
        self.figures.push((key.into(), figure));
        self
    }

    /// This report with `other`'s figures after its own, but for those under keys it already
    /// has (the reports of one workload run in parts, each in a process of its own).
    pub(crate) fn join(mut self, other: Report) -> Self {
        for (key, figure) in other.figures {
            if !self.figures.iter().any(|(seen, _)| *seen == key) {
                self.figures.push((key, figure));
            }
        }
        self
    }

    /// The report `workload` printed as its JSON line (in another process), read back: its row
    /// and JSON line are the ones that process would print. The object must name `workload`
    /// first, then hold only numbers or `null` under plain keys (letters, digits and '_'), each
    /// once.
    pub(crate) fn from_json(workload: Workload, line: &str) -> Result<Self, String> {
        let Line { name, figures } =
            serde_json::from_str(line).map_err(|error| format!("not a report: {error}"))?;
        if name != workload.name() {
            return Err(format!(
                "the object does not start with \"workload\":\"{}\"",
                workload.name()
            ));
        }
        let mut report = Report::new(workload);
        for (key, figure) in figures {
            let plain =
                !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !plain {
                return Err(format!("unexpected key {key:?}"));
            }
            report.figures.push((key.into(), figure));
        }
        Ok(report)
    }

    /// The report as one line of JSON: `workload` first, then the figures.
    pub(crate) fn json(&self) -> Result<String, Failure> {
        serde_json::to_string(self)
            .map_err(|error| Failure::new(format!("cannot write a report as JSON: {error}")))
    }

    /// The report as a row of the human table.
    pub(crate) fn row(&self) -> String {
        let figures: Vec<String> = self
            .figures
            .iter()
            .map(|(key, figure)| match figure {
                Value::Number(number) => format!("{key}={number}"),
                Value::String(text) => format!("{key}={text}"),
                _ => format!("{key}=null"),
            })
            .collect();
        format!(
            "{:<NAME_WIDTH$}{}",
            self.workload.name(),
            figures.join("  ")
        )
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = serializer.serialize_map(Some(1 + self.figures.len()))?;
        object.serialize_entry("workload", self.workload.name())?;
        for (key, figure) in &self.figures {
            object.serialize_entry(key, figure)?;
        }
        object.end()
    }
}

/// A report line as another process printed it: `"workload"` and the workload's name first,
/// then the figures, in order, each key once.
struct Line {
    name: String,
    figures: Vec<(String, Figure)>,
}

impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(LineVisitor)
    }
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = Line;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of \"workload\" and a name, then numbers or null")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut object: A) -> Result<Line, A::Error> {
        if object.next_key::<String>()?.as_deref() != Some("workload") {
            return Err(de::Error::custom(
                "the object does not start with \"workload\"",
            ));
        }
        let name = object.next_value()?;
        let mut figures: Vec<(String, Figure)> = Vec::new();
        while let Some(key) = object.next_key::<String>()? {
            if key == "workload" || figures.iter().any(|(seen, _)| *seen == key) {
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
            }
            let figure: Figure = object.next_value()?;
            // Labels are printed, never read back: a child's report holds figures only.
            if !(figure.is_number() || figure.is_null()) {
                return Err(de::Error::custom(format_args!(
                    "{key:?} is not a number or null"
                )));
            }
            figures.push((key, figure));
        }
        Ok(Line { name, figures })
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
                print_line(&report.json()?)?;
            }
        }
        Ok(())
    }
}

/// Writes `line` to stdout and flushes it.
pub(crate) fn print_line(line: &str) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|error| Failure::new(format!("cannot write to stdout: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(report: &Report) -> String {
        report.json().unwrap()
    }

    #[test]
    fn json_has_the_workload_first_and_fixed_decimals() {
        let report = Report::new(Workload::Accuracy)
            .count("timers", 5)
            .fixed("p50_ms", 0.51234, 3)
            .fixed("p99_ms", 1.1, 3)
            .fixed("bad", f64::NAN, 1);
        assert_eq!(
            json(&report),
            r#"{"workload":"accuracy","timers":5,"p50_ms":0.512,"p99_ms":1.100,"bad":null}"#
        );
        assert_eq!(
            report.row(),
            "accuracy       timers=5  p50_ms=0.512  p99_ms=1.100  bad=null"
        );
    }

    #[test]
    fn a_report_read_back_prints_as_the_original() {
        let report = Report::new(Workload::ConnIdle)
            .count("timers", 1_000_000)
            .fixed("insert_mops", 12.3456, 3)
            .fixed("bytes_per_timer", 0.0, 1)
            .fixed("reclaim_ms", f64::INFINITY, 1)
            .fixed("rss_after_cancel_mb", -0.04, 1)
            .count("threads", u64::MAX);
        let read = Report::from_json(Workload::ConnIdle, &json(&report)).unwrap();
        assert_eq!(json(&read), json(&report));
        assert_eq!(read.row(), report.row());
        assert_eq!(
            read.row(),
            "conn-idle      timers=1000000  insert_mops=12.346  bytes_per_timer=0.0  \
             reclaim_ms=null  rss_after_cancel_mb=-0.0  threads=18446744073709551615"
        );
        let bare =
            Report::from_json(Workload::IdleHold, " {\t\"workload\" : \"idle-hold\"}\r\n").unwrap();
        assert_eq!(json(&bare), r#"{"workload":"idle-hold"}"#);
    }

    #[test]
    fn a_joined_report_keeps_the_first_of_a_key() {
        let first = Report::new(Workload::SleepingTasks)
            .count("tasks", 5)
            .fixed("a_bytes", 1.5, 1);
        let second = Report::new(Workload::SleepingTasks)
            .count("tasks", 6)
            .fixed("b_bytes", 2.0, 1);
        let joined = Report::new(Workload::SleepingTasks)
            .join(first)
            .join(second);
        assert_eq!(
            json(&joined),
            r#"{"workload":"sleeping-tasks","tasks":5,"a_bytes":1.5,"b_bytes":2.0}"#
        );
    }

    #[test]
    fn numbers_read_back_keep_their_text() {
        let line = r#"{"workload":"accuracy","timers":5,"p50_ms":0.510,"big":-1.5e+3,"bad":null}"#;
        let read = Report::from_json(Workload::Accuracy, line).unwrap();
        assert_eq!(json(&read), line);
        assert_eq!(
            read.row(),
            "accuracy       timers=5  p50_ms=0.510  big=-1.5e+3  bad=null"
        );
    }

    #[test]
    fn a_line_that_is_not_the_workloads_report_is_refused() {
        for bad in [
            "",
            "workload       figures",
            "[]",
            "{}",
            r#"{"workload":"accuracy","timers":5"#,
            r#"{"timers":5,"workload":"accuracy"}"#,
            r#"{"workload":"conn-idle","timers":5}"#,
            r#"{"workload":5}"#,
            r#"{"workload":"accuracy","note":"x"}"#,
            r#"{"workload":"accuracy","a":true}"#,
            r#"{"workload":"accuracy","a":{}}"#,
            r#"{"workload":"accuracy","a":[1]}"#,
            r#"{"workload":"accuracy","a":01}"#,
            r#"{"workload":"accuracy","a":1.}"#,
            r#"{"workload":"accuracy","a":1,}"#,
            r#"{"workload":"accuracy","a b":1}"#,
            r#"{"workload":"accuracy","":1}"#,
            r#"{"workload":"accuracy","timers":5,"timers":6}"#,
            r#"{"workload":"accuracy","timers":5,"workload":"accuracy"}"#,
            r#"{"workload":"accuracy"}x"#,
            r#"{"workload":"accuracy"}{}"#,
        ] {
            assert!(
                Report::from_json(Workload::Accuracy, bad).is_err(),
                "{bad:?} was accepted"
            );
        }
    }
}
