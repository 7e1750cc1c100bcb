//! The SVG of the scaling workload's figures: a row of panels per case, throughput and CPU per
//! operation against threads, both axes logarithmic, a line per peer.

use std::path::Path;

use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{BackendCoord, DrawingErrorKind};

use super::report::Report;
use super::Failure;

/// The measures, a column of panels each: the key, the panel's name and the y axis's unit.
const MEASURES: [(&str, &str, &str); 2] = [
    ("mops", "throughput", "M ops/s"),
    ("cpu_ns_per_op", "CPU per operation", "CPU ns per op"),
];

/// Room at the right of each panel for its legend, in pixels.
const LEGEND_WIDTH: u32 = 200;

/// Writes an SVG of `mops` and `cpu_ns_per_op` against threads: a row per case, a column per
/// measure, a line per peer.
pub(super) fn plot(path: &Path, points: &[Report], cpus: usize) -> Result<(), Failure> {
    let fail = |error: &dyn std::fmt::Display| {
        Failure::new(format!("cannot write the plot {}: {error}", path.display()))
    };
    let cases = distinct(points, "case");
    let peers = distinct(points, "peer");
    let rows = cases.len().max(1);
    let root = SVGBackend::new(path, (1400, 60 + 420 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let title = format!("shardwheel scaling on {cpus} cpus: a line per peer, log scales");
    let root = root
        .titled(&title, ("sans-serif", 30))
        .map_err(|e| fail(&e))?;
    let panels = cases
        .iter()
        .flat_map(|case| MEASURES.iter().map(move |measure| (*case, *measure)));
    for (area, (case, measure)) in root.split_evenly((rows, MEASURES.len())).iter().zip(panels) {
        panel(area, points, case, &peers, measure).map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))
}

/// A peer's line in one panel: its (threads, value) points.
type Line<'p> = (&'p str, Vec<(f64, f64)>);

/// The lines of `key` in `case`, one per peer that has points there (on a log axis: above 0).
fn lines<'p>(points: &[Report], case: &str, peers: &[&'p str], key: &str) -> Vec<Line<'p>> {
    peers
        .iter()
        .map(|&peer| {
            let line = points
                .iter()
                .filter(|p| p.text("case") == Some(case) && p.text("peer") == Some(peer))
                .filter_map(|p| Some((p.number("threads")?, p.number(key)?)))
                .filter(|&(threads, value)| threads > 0.0 && value > 0.0)
                .collect();
            (peer, line)
        })
        .filter(|(_, line): &Line| !line.is_empty())
        .collect()
}

/// One panel: `measure` against threads in `case`, a line per peer that has points there, and
/// their legend at the right.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[Report],
    case: &str,
    peers: &[&str],
    (key, name, unit): (&str, &str, &str),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let lines = lines(points, case, peers, key);
    let all = || lines.iter().flat_map(|(_, line)| line.iter().copied());
    let mut threads: Vec<f64> = all().map(|(threads, _)| threads).collect();
    threads.sort_by(f64::total_cmp);
    threads.dedup();
    let (Some(&first), Some(&last)) = (threads.first(), threads.last()) else {
        return Ok(());
    };
    let (low, high) = all().fold((f64::INFINITY, 0.0_f64), |(low, high), (_, value)| {
        (low.min(value), high.max(value))
    });
    let (low, high) = (low / 1.5, high * 1.5);
    let (labelled, every_digit) = ticks(low, high);
    let (plot_area, legend_area) = area.split_horizontally(area.dim_in_pixel().0 - LEGEND_WIDTH);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(format!("{case}: {name}"), ("sans-serif", 24))
        .margin(10)
        .x_label_area_size(52)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (first / 1.3..last * 1.3)
                .log_scale()
                .with_key_points(threads),
            (low..high)
                .log_scale()
                .with_key_points(labelled)
                .with_light_points(every_digit),
        )?;
    chart
        .configure_mesh()
        .x_desc("threads (log scale)")
        .y_desc(format!("{unit} (log scale)"))
        .x_label_formatter(&|threads| format!("{threads}"))
        .y_label_formatter(&|value| tick_label(*value))
        .label_style(("sans-serif", 17))
        .axis_desc_style(("sans-serif", 17))
        .draw()?;
    for (peer, line) in &lines {
        let look = look(peer);
        let stroke = look.color.stroke_width(2);
        if look.dashed {
            chart.draw_series(DashedLineSeries::new(line.clone(), 8, 5, stroke))?;
        } else {
            chart.draw_series(LineSeries::new(line.clone(), stroke))?;
        }
        let markers = line.iter().map(|&at| Marker {
            at,
            look,
            sample: false,
        });
        chart.draw_series(markers)?;
    }
    let top = chart.plotting_area().get_base_pixel().1 - legend_area.get_base_pixel().1;
    legend(&legend_area, top, lines.iter().map(|(peer, _)| *peer))
}

/// A legend at `top` in `area`: a row per peer, its line and marker, then its name.
fn legend<'p, DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    top: i32,
    peers: impl ExactSizeIterator<Item = &'p str>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    const ROW: i32 = 26;
    let bottom = top + ROW * peers.len() as i32 + 8;
    area.draw(&Rectangle::new(
        [(4, top), (LEGEND_WIDTH as i32 - 8, bottom)],
        BLACK.mix(0.4),
    ))?;
    let style =
        TextStyle::from(("sans-serif", 18).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (row, peer) in peers.enumerate() {
        let y = top + 16 + ROW * row as i32;
        let sample = Marker {
            at: (30, y),
            look: look(peer),
            sample: true,
        };
        area.draw(&sample)?;
        area.draw(&Text::new(peer, (56, y), &style))?;
    }
    Ok(())
}

/// The values of `key` in the order the points first show them.
fn distinct<'p>(points: &'p [Report], key: &str) -> Vec<&'p str> {
    let mut seen = Vec::new();
    for value in points.iter().filter_map(|p| p.text(key)) {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen
}

/// Which digits (1 to 9) of each power of ten a log axis marks.
type Digits = fn(&u32) -> bool;

/// The ticks of a log axis over `low..high`: those labelled, at 1, 2 and 5 times a power of ten
/// where that gives four, else at 1, 2, 3 and 5 where that gives three, else at every digit;
/// and a light line at every digit.
fn ticks(low: f64, high: f64) -> (Vec<f64>, Vec<f64>) {
    let digits = |keep: Digits| -> Vec<f64> {
        (low.log10().floor() as i32..=high.log10().ceil() as i32)
            .flat_map(|exp| (1..10).filter(keep).map(move |m| times_ten_to(m, exp)))
            .filter(|value| (low..=high).contains(value))
            .collect()
    };
    let every: Digits = |_| true;
    let sparser: [(Digits, usize); 2] = [
        (|m| matches!(m, 1 | 2 | 5), 4),
        (|m| matches!(m, 1 | 2 | 3 | 5), 3),
    ];
    let labelled = sparser
        .into_iter()
        .map(|(keep, enough)| (digits(keep), enough))
        .find(|(labelled, enough)| labelled.len() >= *enough)
        .map_or_else(|| digits(every), |(labelled, _)| labelled);
    (labelled, digits(every))
}

/// `m` times ten to `exp`, rounded once (0.9, not 0.9000000000000001).
fn times_ten_to(m: u32, exp: i32) -> f64 {
    if exp < 0 {
        f64::from(m) / 10f64.powi(-exp)
    } else {
        f64::from(m) * 10f64.powi(exp)
    }
}

/// A tick's label: plain digits, thousands as k (`20k`).
fn tick_label(value: f64) -> String {
    let plain = |value: f64| {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if value >= 1000.0 {
        format!("{}k", plain(value / 1000.0))
    } else {
        plain(value)
    }
}

/// A marker's shape.
#[derive(Clone, Copy)]
enum Shape {
    Circle,
    Triangle,
    Square,
    Diamond,
    Cross,
}

/// How a peer's line looks, the same in every panel: no two peers share a colour or a marker.
#[derive(Clone, Copy)]
struct Look {
    color: RGBColor,
    shape: Shape,
    dashed: bool,
}

/// The peers' looks: dark colours that stay apart for most colour-blind readers (Okabe and
/// Ito's blue, vermilion and green), each with its own marker; tokio's other timer and the loop
/// with no timer dashed. A peer not named here is drawn in black, dashed.
fn look(peer: &str) -> Look {
    let (color, shape, dashed) = match peer {
        "shardwheel" => (RGBColor(0, 114, 178), Shape::Circle, false),
        "tokio" => (RGBColor(213, 94, 0), Shape::Triangle, false),
        "tokio-alt" => (RGBColor(136, 34, 85), Shape::Square, true),
        "pingora-timeout" => (RGBColor(0, 158, 115), Shape::Diamond, false),
        "none" => (RGBColor(64, 64, 64), Shape::Cross, true),
        _ => (BLACK, Shape::Circle, true),
    };
    Look {
        color,
        shape,
        dashed,
    }
}

/// A peer's marker at a point; in a legend, on a stretch of the peer's line.
struct Marker<C> {
    at: C,
    look: Look,
    sample: bool,
}

impl<'a, C> PointCollection<'a, C> for &'a Marker<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for Marker<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut at: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = at.next() else {
            return Ok(());
        };
        let Look { color, shape, .. } = self.look;
        if self.sample {
            let stretches: &[(i32, i32)] = if self.look.dashed {
                &[(-18, -11), (-4, 4), (11, 18)]
            } else {
                &[(-18, 18)]
            };
            for &(from, to) in stretches {
                backend.draw_line((x + from, y), (x + to, y), &color.stroke_width(2))?;
            }
        }
        let fill = color.filled();
        match shape {
            Shape::Circle => backend.draw_circle((x, y), 5, &fill, true),
            Shape::Triangle => {
                backend.fill_polygon([(x, y - 7), (x + 6, y + 4), (x - 6, y + 4)], &fill)
            }
            Shape::Square => backend.draw_rect((x - 5, y - 5), (x + 5, y + 5), &fill, true),
            Shape::Diamond => {
                backend.fill_polygon([(x, y - 7), (x + 7, y), (x, y + 7), (x - 7, y)], &fill)
            }
            Shape::Cross => {
                let stroke = color.stroke_width(3);
                backend.draw_line((x - 5, y - 5), (x + 5, y + 5), &stroke)?;
                backend.draw_line((x - 5, y + 5), (x + 5, y - 5), &stroke)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Workload;
    use super::*;

    #[test]
    fn the_plot_has_a_panel_per_case_and_measure_and_names_every_peer() {
        let point = |case: &str, peer: &str, threads: u64, mops: f64, cpu: f64| {
            Report::new(Workload::Scaling)
                .label("case", case)
                .label("peer", peer)
                .count("threads", threads)
                .fixed("mops", mops, 3)
                .fixed("cpu_ns_per_op", cpu, 1)
        };
        let mut points = Vec::new();
        for threads in [1, 2, 4] {
            let t = threads as f64;
            points.push(point("churn", "shardwheel", threads, 10.0 * t, 50.0));
            points.push(point("churn", "tokio", threads, 5.0 / t, 25_000.0));
            points.push(point("churn", "tokio-alt", threads, 3.0 * t, 300.0));
            for (peer, mops) in [
                ("shardwheel", 8.0),
                ("pingora-timeout", 6.0),
                ("none", 15.0),
            ] {
                points.push(point("timeout", peer, threads, mops * t, 1000.0 / mops));
            }
        }
        let path = std::env::temp_dir().join(format!("shardwheel-plot-{}.svg", std::process::id()));
        plot(&path, &points, 2).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        for text in [
            "2 cpus",
            "churn: throughput",
            "churn: CPU per operation",
            "timeout: throughput",
            "timeout: CPU per operation",
            "\nshardwheel\n",
            "\ntokio\n",
            "\ntokio-alt\n",
            "\npingora-timeout\n",
            "\nnone\n",
            "threads (log scale)",
            "M ops/s (log scale)",
            "CPU ns per op (log scale)",
        ] {
            assert!(svg.contains(text), "no {text:?} in the plot");
        }
    }

    #[test]
    fn a_log_axis_labels_one_two_five_or_more_and_thousands_as_k() {
        let (labelled, every_digit) = ticks(30.0, 30_000.0);
        let labels: Vec<String> = labelled.into_iter().map(tick_label).collect();
        assert_eq!(
            labels,
            ["50", "100", "200", "500", "1k", "2k", "5k", "10k", "20k"]
        );
        assert_eq!(every_digit.len(), 7 + 9 + 9 + 3);
        let labels: Vec<String> = ticks(24.0, 210.0).0.into_iter().map(tick_label).collect();
        assert_eq!(labels, ["30", "50", "100", "200"]);
        let labels: Vec<String> = ticks(44.0, 250.0).0.into_iter().map(tick_label).collect();
        assert_eq!(labels, ["50", "100", "200"]);
        let labels: Vec<String> = ticks(0.25, 0.9).0.into_iter().map(tick_label).collect();
        assert_eq!(labels, ["0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]);
    }
}
