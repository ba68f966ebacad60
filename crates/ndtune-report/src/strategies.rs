//! The figure of `ndtune bench-strategies` (Schoonhoven et al. 2022's methodology): for each
//! recorded space, the mean fraction of the optimum each strategy reached at each budget.

use crate::figures::register_fonts;
use crate::Error;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::collections::BTreeMap;

/// One strategy's results on one dataset.
pub struct Line<'a> {
    pub dataset: &'a str,
    pub strategy: &'a str,
    /// Per budget, the mean fraction of the optimum.
    pub mean: &'a BTreeMap<usize, f64>,
}

const COLOURS: [RGBColor; 10] = [
    RGBColor(52, 101, 164),
    RGBColor(230, 126, 34),
    RGBColor(46, 139, 87),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// One panel per dataset of `ids`: the mean fraction of the optimum at each budget (evenly
/// spaced), a line per strategy; Kernel Tuner's (`kt:`) dashed, coloured among themselves. SVG.
pub fn figure(ids: &[String], results: &[Line<'_>], budgets: &[usize]) -> Result<String, Error> {
    register_fonts();
    let mut strategies: Vec<&str> = results.iter().map(|r| r.strategy).collect();
    strategies.sort_by_key(|s| (s.starts_with("kt:"), *s));
    strategies.dedup();
    let theirs = |s: &str| s.starts_with("kt:");
    // Solid lines (ndtune) and dashed ones (Kernel Tuner) each take the colours from the start.
    let colour_of = |s: &str| {
        let i = strategies
            .iter()
            .filter(|o| theirs(o) == theirs(s))
            .position(|o| *o == s)
            .unwrap_or(0);
        COLOURS[i % COLOURS.len()]
    };
    let cols = ids.len().clamp(1, 3);
    let rows = ids.len().div_ceil(cols).max(1);
    let (pw, ph) = (420u32, 320u32);
    let legend = 22 * strategies.len().div_ceil(4) as u32 + 10;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (pw * cols as u32, ph * rows as u32 + legend))
            .into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (top, bottom) = root.split_vertically(ph * rows as u32);
        let last = budgets.len().saturating_sub(1).max(1) as f64;
        let at = |b: usize| budgets.iter().position(|&x| x == b).unwrap_or(0) as f64;
        for (panel, id) in top.split_evenly((rows, cols)).iter().zip(ids) {
            let ours: Vec<&Line> = results.iter().filter(|r| r.dataset == id).collect();
            let y_min = ours
                .iter()
                .flat_map(|r| r.mean.values())
                .fold(1.0f64, |a, &b| a.min(b))
                .clamp(0.0, 0.95);
            let mut chart = ChartBuilder::on(panel)
                .caption(id, ("sans-serif", 15))
                .margin(8)
                .x_label_area_size(32)
                .y_label_area_size(44)
                .build_cartesian_2d(-0.2..last + 0.2, (y_min - 0.01)..1.005)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc("evaluations")
                .y_desc("fraction of optimum")
                .x_labels(budgets.len())
                .max_light_lines(1)
                .x_label_formatter(&|x| {
                    budgets
                        .get(x.round().max(0.0) as usize)
                        .filter(|_| (x - x.round()).abs() < 1e-6)
                        .map_or(String::new(), |b| b.to_string())
                })
                .y_label_formatter(&|y| format!("{y:.2}"))
                .draw()
                .map_err(plot_err)?;
            for r in ours {
                let colour = colour_of(r.strategy);
                let points: Vec<(f64, f64)> = r.mean.iter().map(|(&b, &m)| (at(b), m)).collect();
                if theirs(r.strategy) {
                    chart
                        .draw_series(std::iter::once(DashedPathElement::new(
                            points,
                            6,
                            4,
                            colour.stroke_width(2),
                        )))
                        .map_err(plot_err)?;
                } else {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            points,
                            colour.stroke_width(2),
                        )))
                        .map_err(plot_err)?;
                }
            }
        }
        for (i, s) in strategies.iter().enumerate() {
            let x = 10 + (i % 4) as i32 * (pw as i32 * cols as i32 / 4);
            let y = 12 + (i / 4) as i32 * 22;
            let line = vec![(x, y), (x + 24, y)];
            let style = colour_of(s).stroke_width(3);
            if theirs(s) {
                bottom.draw(&DashedPathElement::new(line, 6, 4, style))
            } else {
                bottom.draw(&PathElement::new(line, style))
            }
            .map_err(plot_err)?;
            bottom
                .draw(&Text::new(
                    s.to_string(),
                    (x + 30, y - 7),
                    ("sans-serif", 13),
                ))
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

fn plot_err<E: std::fmt::Display>(e: E) -> Error {
    Error::Draw {
        figure: "strategies".into(),
        detail: e.to_string(),
    }
}
