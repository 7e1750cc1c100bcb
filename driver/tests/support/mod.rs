//! What the driver's tests share: running the driver and reading its JSON line.

use std::process::Command;

/// Runs the driver with `args` and returns its last line of stdout, read as JSON, with the
/// line; fails the test if the driver fails.
pub fn run_json(args: &[&str]) -> (String, serde_json::Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_shardwheel"))
        .args(args)
        .output()
        .expect("the driver runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout.lines().next_back().unwrap_or("").to_owned();
    let report = serde_json::from_str(&line).expect("a JSON line last");
    (line, report)
}

/// Checks that `report` (read from `line`) holds exactly `keys`, in that order in `line`.
#[allow(dead_code)]
pub fn assert_keys_in_order(line: &str, report: &serde_json::Value, keys: &[&str]) {
    assert_eq!(
        report.as_object().map(|o| o.len()),
        Some(keys.len()),
        "{line}"
    );
    let at: Vec<Option<usize>> = keys
        .iter()
        .map(|key| line.find(&format!("\"{key}\":")))
        .collect();
    assert!(at.iter().all(Option::is_some), "{keys:?} in {line}");
    assert!(
        at.windows(2).all(|pair| pair[0] < pair[1]),
        "{keys:?} in {line}"
    );
}
