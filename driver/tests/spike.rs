//! spike run whole, as `cargo run --release -- spike` runs it, at a small size.

mod support;
use support::{assert_keys_in_order, run_json};

#[test]
fn a_small_spike_reports_the_resident_set_after_each_step() {
    let (line, report) = run_json(&["spike", "--timers", "20000", "--json"]);
    assert_keys_in_order(
        &line,
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
