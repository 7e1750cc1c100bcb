//! The SVG of the scaling workload's figures: throughput and CPU per operation against
//! threads, a line per case and peer.

use std::path::Path;

use super::report::Report;
use super::Failure;

/// The line of the plot a point belongs to: its case and peer.
fn series_name(point: &Report) -> String {
    format!(
        "{} {}",
        point.text("case").unwrap_or(""),
        point.text("peer").unwrap_or("")
    )
}

/// A point's threads, throughput and CPU per operation.
type Figures = (f64, f64, f64);

/// Writes an SVG of `mops` and `cpu_ns_per_op` against threads, a line per case and peer.
pub(super) fn plot(path: &Path, points: &[Report], cpus: usize) -> Result<(), Failure> {
    use plotters::prelude::*;

    let fail = |error: &dyn std::fmt::Display| {
        Failure::new(format!("cannot write the plot {}: {error}", path.display()))
    };
    let series: Vec<(String, Vec<Figures>)> = {
        let mut names: Vec<String> = Vec::new();
        for p in points {
            if !names.contains(&series_name(p)) {
                names.push(series_name(p));
            }
        }
        names
            .into_iter()
            .map(|name| {
                let line = points
                    .iter()
                    .filter(|p| series_name(p) == name)
                    .filter_map(|p| {
                        Some((
                            p.number("threads")?,
                            p.number("mops")?,
                            p.number("cpu_ns_per_op")?,
                        ))
                    })
                    .collect();
                (name, line)
            })
            .collect()
    };
    let max_threads = points
        .iter()
        .filter_map(|p| p.number("threads"))
        .fold(1.0, f64::max);
    let max_mops = points
        .iter()
        .filter_map(|p| p.number("mops"))
        .fold(1.0, f64::max);
    let max_cpu = points
        .iter()
        .filter_map(|p| p.number("cpu_ns_per_op"))
        .fold(1.0, f64::max);
    let root = SVGBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (left, right) = root.split_horizontally(600);
    let panels = [
        (left, "throughput (M ops/s)", max_mops * 1.1, 1usize),
        (right, "CPU per operation (ns)", max_cpu * 1.1, 2usize),
    ];
    for (area, title, top, column) in panels {
        let mut chart = ChartBuilder::on(&area)
            .caption(format!("{title}, {cpus} cpus"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..max_threads * 1.05, 0.0..top)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc("threads")
            .draw()
            .map_err(|e| fail(&e))?;
        for (index, (name, line)) in series.iter().enumerate() {
            let color = Palette99::pick(index).to_rgba();
            let values: Vec<(f64, f64)> = line
                .iter()
                .map(|&(t, m, c)| (t, if column == 1 { m } else { c }))
                .collect();
            chart
                .draw_series(LineSeries::new(values.clone(), color.stroke_width(2)))
                .map_err(|e| fail(&e))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            chart
                .draw_series(
                    values
                        .into_iter()
                        .map(|v| Circle::new(v, 3, color.filled())),
                )
                .map_err(|e| fail(&e))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))
}
