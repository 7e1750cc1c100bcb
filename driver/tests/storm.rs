//! storm run whole, as `cargo run --release -- storm` runs it, at a small size, on each peer.

mod support;
use support::{assert_keys_in_order, run_json};

/// Runs storm with `args` and returns its JSON line, checked for every key.
fn storm(args: &[&str]) -> serde_json::Value {
    let args: Vec<&str> = ["storm", "--timers", "20000", "--json"]
        .iter()
        .chain(args)
        .copied()
        .collect();
    let (line, report) = run_json(&args);
    assert_keys_in_order(
        &line,
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
