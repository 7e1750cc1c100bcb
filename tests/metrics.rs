//! `shardwheel::metrics::Publisher`: the documented series, rendered by a Prometheus recorder.
#![cfg(feature = "metrics")]

use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};
use shardwheel::metrics::Publisher;
use shardwheel::{ManualClock, TimerEngine};

const MS: Duration = Duration::from_millis(1);

/// The value of the series `series` (name and labels) in `text`.
fn value<'a>(text: &'a str, series: &str) -> &'a str {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

fn publish(recorder: &PrometheusRecorder, publisher: &Publisher, engine: &TimerEngine) -> String {
    metrics::with_local_recorder(recorder, || publisher.publish(engine));
    recorder.handle().render()
}

#[test]
fn publish_sets_the_documented_series() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(1)
        .max_pending(4)
        .build()
        .unwrap();
    for delay in [3 * MS, 5 * MS, 5 * MS] {
        engine.schedule(delay, || {}).unwrap();
    }
    assert!(engine.schedule(60 * MS, || {}).unwrap().cancel());
    clock.advance(10 * MS); // 8, 6 and 6 ms late
    let _held: Vec<_> = (0..4)
        .map(|_| engine.schedule(60 * MS, || {}).unwrap())
        .collect();
    assert!(engine.schedule(60 * MS, || {}).is_err());
    assert!(engine.schedule(engine.max_delay() * 2, || {}).is_err());

    let recorder = PrometheusBuilder::new().build_recorder();
    let publisher = Publisher::new().label("engine", "a");
    let text = publish(&recorder, &publisher, &engine);
    let engine_a = |name: &str| value(&text, &format!("{name}{{engine=\"a\"}}")).to_owned();
    assert_eq!(engine_a("shardwheel_timers_scheduled_total"), "8");
    assert_eq!(engine_a("shardwheel_timers_fired_total"), "3");
    assert_eq!(engine_a("shardwheel_timers_cancelled_total"), "1");
    assert_eq!(engine_a("shardwheel_timers_handed_back_total"), "0");
    assert_eq!(engine_a("shardwheel_callbacks_panicked_total"), "0");
    assert_eq!(engine_a("shardwheel_timers_pending"), "4");
    assert_eq!(engine_a("shardwheel_callbacks_queued"), "0");
    assert_eq!(engine_a("shardwheel_callbacks_running"), "0");
    assert_ne!(engine_a("shardwheel_entry_bytes"), "0");
    let rejected = |reason: &str| {
        value(
            &text,
            &format!("shardwheel_timers_rejected_total{{engine=\"a\",reason=\"{reason}\"}}"),
        )
    };
    assert_eq!(
        [rejected("full"), rejected("too_long"), rejected("shutdown")],
        ["1", "1", "0"]
    );
    assert_eq!(engine_a("shardwheel_timer_lateness_seconds_count"), "3");
    assert_eq!(engine_a("shardwheel_timer_lateness_seconds_sum"), "0.02");
    assert_eq!(engine_a("shardwheel_timer_lateness_max_seconds"), "0.008");
    for quantile in ["0.5", "0.9", "0.99", "0.999"] {
        let series =
            format!("shardwheel_timer_lateness_seconds{{engine=\"a\",quantile=\"{quantile}\"}}");
        assert_eq!(value(&text, &series), "0.008");
    }
    assert_eq!(
        value(
            &text,
            "shardwheel_shard_timers_pending{engine=\"a\",shard=\"0\"}"
        ),
        "4"
    );
    assert_eq!(
        value(
            &text,
            "shardwheel_shard_late_turns_total{engine=\"a\",shard=\"0\"}"
        ),
        "0"
    );
    assert!(text.contains("# TYPE shardwheel_timer_lateness_seconds_sum gauge"));
    assert!(text.contains("# HELP shardwheel_timers_rejected_total Timers refused, by reason."));

    // The quantiles and max cover the timers fired since the previous publish.
    let text = publish(&recorder, &publisher, &engine);
    let engine_a = |name: &str| value(&text, &format!("{name}{{engine=\"a\"}}")).to_owned();
    assert_eq!(engine_a("shardwheel_timer_lateness_max_seconds"), "NaN");
    assert_eq!(engine_a("shardwheel_timer_lateness_seconds_count"), "3");
    clock.advance(80 * MS); // the held timers fire, 21 ms late
    let text = publish(&recorder, &publisher, &engine);
    let engine_a = |name: &str| value(&text, &format!("{name}{{engine=\"a\"}}")).to_owned();
    assert_eq!(engine_a("shardwheel_timer_lateness_seconds_count"), "7");
    assert_eq!(engine_a("shardwheel_timer_lateness_seconds_sum"), "0.104");
    assert_eq!(engine_a("shardwheel_timer_lateness_max_seconds"), "0.021");
    let median = "shardwheel_timer_lateness_seconds{engine=\"a\",quantile=\"0.5\"}";
    assert_eq!(value(&text, median), "0.021");
}

#[test]
fn two_engines_publish_apart_by_their_labels() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let (one, two) = (
        TimerEngine::builder().build().unwrap(),
        TimerEngine::builder().build().unwrap(),
    );
    let _timer = one.schedule(Duration::from_secs(60), || {}).unwrap();
    publish(&recorder, &Publisher::new().label("engine", "one"), &one);
    let text = publish(&recorder, &Publisher::new().label("engine", "two"), &two);
    assert_eq!(
        value(&text, "shardwheel_timers_scheduled_total{engine=\"one\"}"),
        "1"
    );
    assert_eq!(
        value(&text, "shardwheel_timers_scheduled_total{engine=\"two\"}"),
        "0"
    );
}

#[test]
fn pending_ages_are_published_with_site_tracking_only() {
    let clock = ManualClock::new();
    let tracked = TimerEngine::builder()
        .manual_clock(&clock)
        .track_sites(true)
        .build()
        .unwrap();
    let untracked = TimerEngine::builder()
        .manual_clock(&clock)
        .track_sites(false)
        .build()
        .unwrap();
    for engine in [&tracked, &untracked] {
        engine.schedule(Duration::from_secs(600), || {}).unwrap();
        engine.schedule(Duration::from_secs(600), || {}).unwrap();
    }
    clock.advance(Duration::from_secs(90));
    tracked.schedule(Duration::from_secs(600), || {}).unwrap();
    let recorder = PrometheusBuilder::new().build_recorder();
    let text = publish(&recorder, &Publisher::new().label("engine", "t"), &tracked);
    let age = |age: &str| {
        value(
            &text,
            &format!("shardwheel_timers_pending_by_age{{engine=\"t\",age=\"{age}\"}}"),
        )
        .to_owned()
    };
    assert_eq!(
        [
            age("under_1s"),
            age("under_1m"),
            age("under_1h"),
            age("older")
        ],
        ["1", "0", "2", "0"]
    );
    let text = publish(
        &recorder,
        &Publisher::new().label("engine", "u"),
        &untracked,
    );
    assert!(!text.contains("shardwheel_timers_pending_by_age{engine=\"u\""));
}
