//! sleeping-tasks run whole, as `cargo run --release -- sleeping-tasks` runs it (each peer in a
//! child process of its own), at a small size.

mod support;
use support::run_json;

#[test]
fn a_small_run_reports_both_peers() {
    let (line, report) = run_json(&["sleeping-tasks", "--timers", "20000", "--json"]);
    assert_eq!(report["workload"], "sleeping-tasks", "{line}");
    assert_eq!(report["tasks"], 20_000, "{line}");
    for peer in ["shardwheel", "tokio"] {
        let bytes = report[format!("{peer}_bytes_per_task")].as_f64();
        assert!(bytes.is_some_and(|bytes| bytes > 0.0), "{line}");
        let rate = report[format!("{peer}_spawn_mtasks_per_sec")].as_f64();
        assert!(rate.is_some_and(|rate| rate > 0.0), "{line}");
    }
}
