//! storm run whole, as `cargo run --release -- storm` runs it, at a small size, on each peer.

use std::process::Command;

/// Runs storm with `args` and returns its JSON line, checked for every key.
fn storm(args: &[&str]) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_shardwheel"))
        .args(["storm", "--timers", "20000", "--json"])
        .args(args)
        .output()
        .expect("the driver runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout.lines().next_back().unwrap_or("");
    let report: serde_json::Value = serde_json::from_str(line).expect("a JSON line last");
    assert_keys_in_order(
        line,
        &report,
        &[
            "workload",
            "timers",
            "threads",
            "first_ms",
            "drain_ms",
            "p50_ms",
            "p99_ms",
            "sentinel_p99_ms",
            "sentinel_max_ms",
            "fire_mops",
            "early",
            "missing",
            "peer",
            "schedule_ms",
        ],
    );
    assert_eq!(report["workload"], "storm", "{line}");
    assert_eq!(report["timers"], 20_000, "{line}");
    assert_eq!(report["early"], 0, "{line}");
    assert_eq!(report["missing"], 0, "{line}");
    for key in ["first_ms", "drain_ms", "p99_ms", "sentinel_max_ms"] {
        let ms = report[key].as_f64();
        assert!(ms.is_some_and(|ms| ms >= 0.0), "{key}: {line}");
    }
    report
}

#[test]
fn a_small_storm_runs_every_callback_on_time_or_after() {
    assert_eq!(storm(&[])["peer"], "shardwheel");
}

#[test]
fn a_small_storm_on_tokio_runs_every_task() {
    assert_eq!(storm(&["--peer", "tokio"])["peer"], "tokio");
}

/// Checks that `report` (read from `line`) holds exactly `keys`, in that order in `line`.
fn assert_keys_in_order(line: &str, report: &serde_json::Value, keys: &[&str]) {
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
