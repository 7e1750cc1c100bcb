//! The engine's statistics through the [`metrics`] facade (the `metrics` feature).
//!
//! A [`Publisher`] starts no thread and costs the timers nothing: each
//! [`publish`](Publisher::publish) takes [`TimerEngine::stats`] and sets every series below to
//! it. Call it where the values are read: in a Prometheus scrape handler just before the
//! exporter renders, or every few seconds from a thread or task of your own.
//!
//! ```
//! use shardwheel::metrics::Publisher;
//! let engine = shardwheel::TimerEngine::builder().build()?;
//! let publisher = Publisher::new().label("engine", "rpc");
//! // With a recorder installed (e.g. `metrics-exporter-prometheus`), before each scrape:
//! publisher.publish(&engine);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Series
//!
//! Every series carries the publisher's labels ([`Publisher::label`]: give two engines
//! different ones). Counters are set to the engine's totals, so they start at zero with the
//! engine. Lateness is a Prometheus summary: `_count` and `_sum` since the engine started
//! (mean: `rate(..._sum[5m]) / rate(..._count[5m])`), and quantiles and the max of the timers
//! fired since the previous `publish`, NaN if none fired. A quantile is an upper bound: the top
//! of its power-of-two bucket (see [`Lateness`]).
//!
//! | name | type | unit | value |
//! | --- | --- | --- | --- |
//! | `shardwheel_timers_scheduled_total` | counter | timers | [`Stats::scheduled`] |
//! | `shardwheel_timers_fired_total` | counter | timers | [`Stats::fired`] |
//! | `shardwheel_timers_cancelled_total` | counter | timers | [`Stats::cancelled`] |
//! | `shardwheel_timers_handed_back_total` | counter | timers | [`Stats::handed_back`] (by shutdown) |
//! | `shardwheel_timers_rejected_total` | counter | timers | by label `reason`: `full`, `too_long`, `shutdown` |
//! | `shardwheel_callbacks_panicked_total` | counter | callbacks | [`Stats::panicked`] |
//! | `shardwheel_timers_pending` | gauge | timers | [`Stats::pending`] |
//! | `shardwheel_timers_pending_by_age` | gauge | timers | [`Stats::pending_ages`], by label `age`: `under_1s`, `under_1m`, `under_1h`, `older`; only with [`track_sites`](crate::engine::Builder::track_sites) |
//! | `shardwheel_callbacks_queued` | gauge | callbacks | [`Stats::callbacks_queued`] |
//! | `shardwheel_callbacks_running` | gauge | callbacks | [`Stats::callbacks_running`] |
//! | `shardwheel_entry_bytes` | gauge | bytes | [`Stats::entry_bytes`] |
//! | `shardwheel_timer_lateness_seconds_count` | counter | timers | [`Lateness::count`] |
//! | `shardwheel_timer_lateness_seconds_sum` | gauge | seconds | [`Lateness::sum`]; only rises (a gauge: the facade's counters are integers) |
//! | `shardwheel_timer_lateness_seconds` | gauge | seconds | by label `quantile`: `0.5`, `0.9`, `0.99`, `0.999`; since the previous publish |
//! | `shardwheel_timer_lateness_max_seconds` | gauge | seconds | since the previous publish; see [`Lateness::since`] |
//! | `shardwheel_shard_timers_pending` | gauge | timers | [`ShardStats::pending`](crate::stats::ShardStats::pending), by label `shard` |
//! | `shardwheel_shard_late_turns_total` | counter | turns | [`ShardStats::late_turns`](crate::stats::ShardStats::late_turns), by label `shard` |

use ::metrics::{counter, describe_counter, describe_gauge, gauge, Label, SharedString, Unit};

use crate::engine::stats::{Lateness, Stats};
use crate::engine::TimerEngine;
use crate::sync::Mutex;

const SCHEDULED: &str = "shardwheel_timers_scheduled_total";
const FIRED: &str = "shardwheel_timers_fired_total";
const CANCELLED: &str = "shardwheel_timers_cancelled_total";
const HANDED_BACK: &str = "shardwheel_timers_handed_back_total";
const REJECTED: &str = "shardwheel_timers_rejected_total";
const PANICKED: &str = "shardwheel_callbacks_panicked_total";
const PENDING: &str = "shardwheel_timers_pending";
const PENDING_BY_AGE: &str = "shardwheel_timers_pending_by_age";
const QUEUED: &str = "shardwheel_callbacks_queued";
const RUNNING: &str = "shardwheel_callbacks_running";
const ENTRY_BYTES: &str = "shardwheel_entry_bytes";
const LATENESS_COUNT: &str = "shardwheel_timer_lateness_seconds_count";
const LATENESS_SUM: &str = "shardwheel_timer_lateness_seconds_sum";
const LATENESS: &str = "shardwheel_timer_lateness_seconds";
const LATENESS_MAX: &str = "shardwheel_timer_lateness_max_seconds";
const SHARD_PENDING: &str = "shardwheel_shard_timers_pending";
const SHARD_LATE_TURNS: &str = "shardwheel_shard_late_turns_total";

/// The lateness quantiles published, with their label values.
const QUANTILES: [(f64, &str); 4] = [(0.5, "0.5"), (0.9, "0.9"), (0.99, "0.99"), (0.999, "0.999")];

/// Publishes an engine's [`Stats`] to the installed `metrics` recorder (see the module docs).
/// Use one publisher per engine: it keeps the lateness of its last publish for the window.
pub struct Publisher {
    labels: Vec<Label>,
    /// The lateness at the previous publish; the lock also orders concurrent publishes.
    last: Mutex<Option<Lateness>>,
}

impl Default for Publisher {
    fn default() -> Self {
        Publisher::new()
    }
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

impl Publisher {
    /// A publisher whose series carry no labels.
    pub fn new() -> Self {
        Publisher {
            labels: Vec::new(),
            last: Mutex::new(None),
        }
    }

    /// Adds the label `key="value"` to every series, e.g. `("engine", "rpc")`.
    #[must_use]
    pub fn label(mut self, key: impl Into<SharedString>, value: impl Into<SharedString>) -> Self {
        self.labels.push(Label::new(key, value));
        self
    }

    /// Takes `engine`'s [`stats`](TimerEngine::stats) and sets every series to it.
    pub fn publish(&self, engine: &TimerEngine) {
        let mut last = self.last.lock();
        let stats = engine.stats();
        let window = match last.as_ref() {
            Some(earlier) => stats.lateness.since(earlier),
            None => stats.lateness.clone(),
        };
        describe();
        self.totals(&stats);
        let labels = || self.labels.clone();
        counter!(LATENESS_COUNT, labels()).absolute(stats.lateness.count());
        gauge!(LATENESS_SUM, labels()).set(stats.lateness.sum().as_secs_f64());
        for (q, name) in QUANTILES {
            let value = window.quantile(q).map_or(f64::NAN, |d| d.as_secs_f64());
            gauge!(LATENESS, self.with("quantile", name)).set(value);
        }
        let max = match window.count() {
            0 => f64::NAN,
            _ => window.max().as_secs_f64(),
        };
        gauge!(LATENESS_MAX, labels()).set(max);
        for (i, shard) in stats.shards.iter().enumerate() {
            let shard_labels = || self.with("shard", i.to_string());
            gauge!(SHARD_PENDING, shard_labels()).set(shard.pending as f64);
            counter!(SHARD_LATE_TURNS, shard_labels()).absolute(shard.late_turns);
        }
        *last = Some(stats.lateness);
    }

    /// The engine-wide counters and gauges.
    fn totals(&self, stats: &Stats) {
        let labels = || self.labels.clone();
        counter!(SCHEDULED, labels()).absolute(stats.scheduled);
        counter!(FIRED, labels()).absolute(stats.fired);
        counter!(CANCELLED, labels()).absolute(stats.cancelled);
        counter!(HANDED_BACK, labels()).absolute(stats.handed_back);
        for (reason, count) in [
            ("full", stats.rejected_full),
            ("too_long", stats.rejected_too_long),
            ("shutdown", stats.rejected_shutdown),
        ] {
            counter!(REJECTED, self.with("reason", reason)).absolute(count);
        }
        counter!(PANICKED, labels()).absolute(stats.panicked);
        gauge!(PENDING, labels()).set(stats.pending as f64);
        if let Some(ages) = &stats.pending_ages {
            for (age, count) in [
                ("under_1s", ages.under_a_second),
                ("under_1m", ages.under_a_minute),
                ("under_1h", ages.under_an_hour),
                ("older", ages.older),
            ] {
                gauge!(PENDING_BY_AGE, self.with("age", age)).set(count as f64);
            }
        }
        gauge!(QUEUED, labels()).set(stats.callbacks_queued as f64);
        gauge!(RUNNING, labels()).set(stats.callbacks_running as f64);
        gauge!(ENTRY_BYTES, labels()).set(stats.entry_bytes as f64);
    }

    /// The publisher's labels and `key="value"`.
    fn with(&self, key: &'static str, value: impl Into<SharedString>) -> Vec<Label> {
        let mut labels = self.labels.clone();
        labels.push(Label::new(key, value));
        labels
    }
}

/// Gives the recorder each series' unit and help text.
fn describe() {
    for (name, help) in [
        (SCHEDULED, "Timers accepted by schedule."),
        (FIRED, "Timers whose callbacks were handed to the executor."),
        (CANCELLED, "Timers stopped by a successful cancel."),
        (HANDED_BACK, "Timers handed back by shutdown."),
        (REJECTED, "Timers refused, by reason."),
        (PANICKED, "Callbacks that panicked."),
        (LATENESS_COUNT, "Timers whose lateness was recorded."),
        (
            SHARD_LATE_TURNS,
            "Turns of the shard's tick thread that began late.",
        ),
    ] {
        describe_counter!(name, Unit::Count, help);
    }
    for (name, help) in [
        (PENDING, "Timers neither fired, cancelled nor handed back."),
        (
            PENDING_BY_AGE,
            "Pending timers by how long ago they were scheduled.",
        ),
        (QUEUED, "Callbacks fired that have not begun to run."),
        (RUNNING, "Callbacks running now."),
        (
            SHARD_PENDING,
            "Timers routed to the shard and still pending.",
        ),
    ] {
        describe_gauge!(name, Unit::Count, help);
    }
    describe_gauge!(
        ENTRY_BYTES,
        Unit::Bytes,
        "Bytes of the chunks holding timer entries."
    );
    for (name, help) in [
        (LATENESS_SUM, "Lateness of the timers fired, added up."),
        (LATENESS, "Lateness quantiles since the previous publish."),
        (LATENESS_MAX, "Largest lateness since the previous publish."),
    ] {
        describe_gauge!(name, Unit::Seconds, help);
    }
}
