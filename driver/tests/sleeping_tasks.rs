//! sleeping-tasks run whole, as `cargo run --release -- sleeping-tasks` runs it (each peer in a
//! child process of its own), at a small size.

use std::process::Command;

#[test]
fn a_small_run_reports_both_peers() {
    let output = Command::new(env!("CARGO_BIN_EXE_shardwheel"))
        .args(["sleeping-tasks", "--timers", "20000", "--json"])
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
    assert_eq!(report["workload"], "sleeping-tasks", "{line}");
    assert_eq!(report["tasks"], 20_000, "{line}");
    for peer in ["shardwheel", "tokio"] {
        let bytes = report[format!("{peer}_bytes_per_task")].as_f64();
        assert!(bytes.is_some_and(|bytes| bytes > 0.0), "{line}");
        let rate = report[format!("{peer}_spawn_mtasks_per_sec")].as_f64();
        assert!(rate.is_some_and(|rate| rate > 0.0), "{line}");
    }
}
