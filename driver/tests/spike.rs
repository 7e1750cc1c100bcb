//! spike run whole, as `cargo run --release -- spike` runs it, at a small size.

use std::process::Command;

#[test]
fn a_small_spike_reports_the_resident_set_after_each_step() {
    let output = Command::new(env!("CARGO_BIN_EXE_shardwheel"))
        .args(["spike", "--timers", "20000", "--json"])
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
            "base_mb",
            "spike_mb",
            "cancelled_mb",
            "calm_mb",
            "idle_mb",
            "allocator",
        ],
    );
    assert_eq!(report["workload"], "spike", "{line}");
    assert_eq!(report["timers"], 20_000, "{line}");
    for key in ["base_mb", "spike_mb", "cancelled_mb", "calm_mb", "idle_mb"] {
        let mb = report[key].as_f64();
        assert!(mb.is_some_and(|mb| mb > 0.0), "{key}: {line}");
    }
    let allocator = report["allocator"].as_str();
    assert!(matches!(allocator, Some("mimalloc" | "system")), "{line}");
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
