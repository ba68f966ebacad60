//! The figures, as data ready to draw ([`Figure`]) and drawn with plotters on any backend: SVG for
//! the HTML page, PNG for Markdown. Text uses the embedded DejaVu Sans ([`FONT`]), registered with
//! plotters so that no system font is needed.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::sync::Once;

/// DejaVu Sans (Bitstream Vera licence: fonts/LICENSE-DejaVu.txt).
pub const FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
/// The family name figures use, and the HTML page's `@font-face` defines.
pub const FAMILY: &str = "DejaVu Sans";

/// Registers [`FONT`] with plotters (once), under [`FAMILY`] and plotters' default `sans-serif`.
fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for name in [FAMILY, "sans-serif"] {
            if plotters::style::register_font(name, FontStyle::Normal, FONT).is_err() {
                unreachable!("the embedded font is a valid TrueType font");
            }
        }
    });
}

const INK: RGBColor = RGBColor(34, 34, 34);
const GRID: RGBColor = RGBColor(200, 200, 200);
const REFUSED: RGBColor = RGBColor(150, 150, 150);
const FAILED: RGBColor = RGBColor(214, 39, 40);
const BLUE: RGBColor = RGBColor(52, 101, 164);
const ORANGE: RGBColor = RGBColor(230, 126, 34);
const GREEN: RGBColor = RGBColor(46, 139, 87);

/// One figure of the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    Heatmap(Heatmap),
    Bars(Bars),
    Sweep(Sweep),
    Distribution(Distribution),
}

/// A value per cell of the work-group plane (columns wc across, rows wr down).
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub wc: Vec<u64>,
    pub wr: Vec<u64>,
    /// Row-major: `cells[r * wc.len() + c]`.
    pub cells: Vec<Cell>,
    /// The cell circled (column, row index): the oracle.
    pub circled: Option<(usize, usize)>,
    /// What shade 0 and shade 1 mean, for the colour bar.
    pub scale: (String, String),
}

/// One cell of a [`Heatmap`].
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// `shade` in [0, 1] (1: the best), with the text written in the cell where it fits.
    Value { shade: f64, text: String },
    /// The driver refused the size.
    Refused,
    /// Beyond the scenario's limits: never run.
    Illegal,
    /// Ran and failed: wrong result, crash, timeout, build failure.
    Failed,
    /// Nothing to show.
    Empty,
}

/// Bars of times (Erdem Fig. 5).
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    pub title: String,
    pub y_label: String,
    pub bars: Vec<Bar>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub kind: BarKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarKind {
    Alone,
    Coexec,
    Theoretical,
}

/// Co-execution time over the first device's split factor (Erdem Fig. 6-7).
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    pub title: String,
    pub x_label: String,
    /// (factor, ms, verified), by factor.
    pub measured: Vec<(f64, f64, bool)>,
    /// (factor, ms): Algorithm 1 at the same factors.
    pub theoretical: Vec<(f64, f64)>,
    /// The planner's split (factor, ms), circled.
    pub planner: (f64, f64),
}

/// Distributions of a ratio, one row per method (Cummins Fig. 4-6): box (quartiles), whiskers
/// (minimum and maximum), median and every value as a dot.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub title: String,
    pub x_label: String,
    pub rows: Vec<(String, Vec<f64>)>,
    /// A dashed vertical line (e.g. 1.0: as good as the reference).
    pub reference: Option<f64>,
    /// Values beyond it are drawn at it (the axis ends there).
    pub clip: Option<f64>,
}

type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

impl Figure {
    pub fn title(&self) -> &str {
        match self {
            Figure::Heatmap(f) => &f.title,
            Figure::Bars(f) => &f.title,
            Figure::Sweep(f) => &f.title,
            Figure::Distribution(f) => &f.title,
        }
    }

    /// Width and height in pixels.
    pub fn size(&self) -> (u32, u32) {
        match self {
            Figure::Heatmap(h) => {
                let (w, hh) = h.cell_size();
                (
                    (90 + w * h.wc.len() as u32 + 110).max(420),
                    60 + hh * h.wr.len() as u32 + 70,
                )
            }
            Figure::Bars(b) => ((160 + 110 * b.bars.len() as u32).max(480), 380),
            Figure::Sweep(_) => (640, 400),
            Figure::Distribution(d) => (760, 90 + 30 * d.rows.len() as u32),
        }
    }

    /// The figure as an SVG document.
    pub fn svg(&self) -> Result<String, String> {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, self.size()).into_drawing_area();
            self.draw(&root).map_err(|e| e.to_string())?;
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(out)
    }

    /// The figure as a PNG file.
    pub fn png(&self, path: &std::path::Path) -> Result<(), String> {
        let root = BitMapBackend::new(path, self.size()).into_drawing_area();
        self.draw(&root).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        register_fonts();
        root.fill(&WHITE)?;
        match self {
            Figure::Heatmap(f) => f.draw(root),
            Figure::Bars(f) => f.draw(root),
            Figure::Sweep(f) => f.draw(root),
            Figure::Distribution(f) => f.draw(root),
        }
    }
}

fn font(size: u32) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&INK)
}

fn text<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    s: &str,
    at: (i32, i32),
    style: TextStyle,
) -> Drawn<DB> {
    root.draw(&Text::new(s.to_string(), at, style))
}

fn title<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, s: &str) -> Drawn<DB> {
    let w = root.dim_in_pixel().0 as i32;
    text(
        root,
        s,
        (w / 2, 16),
        font(15).pos(Pos::new(HPos::Center, VPos::Center)),
    )
}

/// A colour of the viridis scale, `t` in [0, 1] from dark purple (0) to yellow (1).
pub fn viridis(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [
        (68, 1, 84),
        (59, 82, 139),
        (33, 145, 140),
        (94, 201, 98),
        (253, 231, 37),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

impl Heatmap {
    fn cell_size(&self) -> (u32, u32) {
        let w = (640 / self.wc.len().max(1) as u32).clamp(22, 64);
        let h = (420 / self.wr.len().max(1) as u32).clamp(18, 40);
        (w, h)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let (cw, ch) = self.cell_size();
        let (cw, ch) = (cw as i32, ch as i32);
        let (x0, y0) = (90, 50);
        let centre = Pos::new(HPos::Center, VPos::Center);
        for (r, wr) in self.wr.iter().enumerate() {
            let y = y0 + r as i32 * ch;
            text(
                root,
                &wr.to_string(),
                (x0 - 6, y + ch / 2),
                font(11).pos(Pos::new(HPos::Right, VPos::Center)),
            )?;
            for (c, _) in self.wc.iter().enumerate() {
                let x = x0 + c as i32 * cw;
                let rect = [(x, y), (x + cw, y + ch)];
                let mid = (x + cw / 2, y + ch / 2);
                match &self.cells[r * self.wc.len() + c] {
                    Cell::Value { shade, text: t } => {
                        root.draw(&Rectangle::new(rect, viridis(*shade).filled()))?;
                        if !t.is_empty() && (t.len() as i32) * 6 + 4 <= cw {
                            let ink = if *shade > 0.55 { INK } else { WHITE };
                            text(root, t, mid, font(9).color(&ink).pos(centre))?;
                        }
                    }
                    Cell::Refused => {
                        root.draw(&Rectangle::new(rect, REFUSED.filled()))?;
                        text(root, "×", mid, font(12).color(&WHITE).pos(centre))?;
                    }
                    Cell::Failed => {
                        root.draw(&Rectangle::new(rect, FAILED.filled()))?;
                        text(root, "!", mid, font(12).color(&WHITE).pos(centre))?;
                    }
                    Cell::Illegal => {
                        root.draw(&PathElement::new(
                            vec![(x + 3, y + ch - 3), (x + cw - 3, y + 3)],
                            GRID,
                        ))?;
                    }
                    Cell::Empty => {}
                }
                root.draw(&Rectangle::new(rect, GRID))?;
            }
        }
        let bottom = y0 + self.wr.len() as i32 * ch;
        for (c, wc) in self.wc.iter().enumerate() {
            text(
                root,
                &wc.to_string(),
                (x0 + c as i32 * cw + cw / 2, bottom + 10),
                font(11).pos(centre),
            )?;
        }
        let right = x0 + self.wc.len() as i32 * cw;
        text(
            root,
            "work-group columns wc",
            ((x0 + right) / 2, bottom + 28),
            font(12).pos(centre),
        )?;
        text(
            root,
            "rows wr",
            (x0 - 40, y0 - 14),
            font(12).pos(Pos::new(HPos::Center, VPos::Center)),
        )?;
        if let Some((c, r)) = self.circled {
            let mid = (x0 + c as i32 * cw + cw / 2, y0 + r as i32 * ch + ch / 2);
            let radius = cw.min(ch) / 2 + 2;
            root.draw(&Circle::new(mid, radius, RED.stroke_width(3)))?;
        }
        // Colour bar and legend on the right.
        let (bx, bh) = (right + 24, (bottom - y0).max(60));
        for i in 0..bh {
            let t = 1.0 - i as f64 / (bh - 1).max(1) as f64;
            root.draw(&Rectangle::new(
                [(bx, y0 + i), (bx + 14, y0 + i + 1)],
                viridis(t).filled(),
            ))?;
        }
        let left = Pos::new(HPos::Left, VPos::Center);
        text(root, &self.scale.1, (bx + 18, y0 + 5), font(10).pos(left))?;
        text(
            root,
            &self.scale.0,
            (bx + 18, y0 + bh - 5),
            font(10).pos(left),
        )?;
        let ly = bottom + 50;
        let mut lx = x0;
        for (label, colour) in [
            ("refused", Some(REFUSED)),
            ("failed", Some(FAILED)),
            ("beyond limits", None),
        ] {
            let rect = [(lx, ly - 6), (lx + 12, ly + 6)];
            match colour {
                Some(c) => root.draw(&Rectangle::new(rect, c.filled()))?,
                None => root.draw(&PathElement::new(
                    vec![(lx, ly + 6), (lx + 12, ly - 6)],
                    GRID,
                ))?,
            }
            root.draw(&Rectangle::new(rect, GRID))?;
            text(root, label, (lx + 16, ly), font(11).pos(left))?;
            lx += 30 + 7 * label.len() as i32;
        }
        if self.circled.is_some() {
            root.draw(&Circle::new((lx + 6, ly), 6, RED.stroke_width(2)))?;
            text(root, "oracle", (lx + 16, ly), font(11).pos(left))?;
        }
        Ok(())
    }
}

/// The top of a value axis: the largest value with some headroom (1 where all are zero).
fn axis_top(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.15
    } else {
        1.0
    }
}

impl Bars {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let area = root.margin(30, 10, 10, 20);
        let n = self.bars.len().max(1);
        let top = axis_top(self.bars.iter().map(|b| b.value).fold(0.0, f64::max));
        let mut chart = ChartBuilder::on(&area)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .light_line_style(RGBColor(235, 235, 235))
            .y_desc(self.y_label.as_str())
            .label_style(font(11))
            .axis_desc_style(font(12))
            .draw()?;
        for (i, b) in self.bars.iter().enumerate() {
            let colour = match b.kind {
                BarKind::Alone => BLUE,
                BarKind::Coexec => ORANGE,
                BarKind::Theoretical => GREEN,
            };
            let x = i as f64;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x - 0.32, 0.0), (x + 0.32, b.value)],
                colour.filled(),
            )))?;
            let (px, py) = chart.backend_coord(&(x, b.value));
            text(
                root,
                &format!("{:.4}", b.value),
                (px, py - 8),
                font(10).pos(Pos::new(HPos::Center, VPos::Center)),
            )?;
            let (px, py) = chart.backend_coord(&(x, 0.0));
            for (k, line) in b.label.lines().enumerate() {
                text(
                    root,
                    line,
                    (px, py + 12 + 13 * k as i32),
                    font(11).pos(Pos::new(HPos::Center, VPos::Center)),
                )?;
            }
        }
        Ok(())
    }
}

impl Sweep {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let area = root.margin(30, 10, 10, 20);
        let max = self
            .measured
            .iter()
            .map(|p| p.1)
            .chain(self.theoretical.iter().map(|p| p.1))
            .fold(self.planner.1, f64::max);
        let mut chart = ChartBuilder::on(&area)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..1.0, 0.0..axis_top(max))?;
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc("time (ms)")
            .label_style(font(11))
            .axis_desc_style(font(12))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                self.measured.iter().map(|p| (p.0, p.1)).collect::<Vec<_>>(),
                GREEN.stroke_width(2),
            )))?
            .label("co-execution, measured")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], GREEN.stroke_width(2)));
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                self.theoretical.clone(),
                6,
                4,
                BLUE.stroke_width(2),
            )))?
            .label("theoretical (Algorithm 1)")
            .legend(|(x, y)| {
                DashedPathElement::new(vec![(x, y), (x + 18, y)], 5, 3, BLUE.stroke_width(2))
            });
        chart.draw_series(self.measured.iter().map(|&(f, ms, ok)| {
            Circle::new((f, ms), 3, if ok { GREEN } else { FAILED }.filled())
        }))?;
        chart
            .draw_series(std::iter::once(Circle::new(
                self.planner,
                9,
                RED.stroke_width(2),
            )))?
            .label("the planner's split")
            .legend(|(x, y)| Circle::new((x + 9, y), 6, RED.stroke_width(2)));
        chart
            .configure_series_labels()
            .label_font(font(11))
            .background_style(WHITE.mix(0.85))
            .border_style(GRID)
            .position(SeriesLabelPosition::UpperMiddle)
            .draw()?;
        Ok(())
    }
}

impl Distribution {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let area = root.margin(30, 10, 10, 20);
        let n = self.rows.len().max(1);
        let max = self
            .rows
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .filter(|v| v.is_finite())
            .fold(self.reference.unwrap_or(0.0), f64::max);
        let top = self.clip.map_or(axis_top(max), |c| c.min(axis_top(max)));
        let mut chart = ChartBuilder::on(&area)
            .x_label_area_size(40)
            .y_label_area_size(190)
            .build_cartesian_2d(0.0..top, -0.5..n as f64 - 0.5)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(self.x_label.as_str())
            .label_style(font(11))
            .axis_desc_style(font(12))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        if let Some(r) = self.reference {
            chart.draw_series(std::iter::once(DashedPathElement::new(
                vec![(r, -0.5), (r, n as f64 - 0.5)],
                5,
                4,
                INK.stroke_width(1),
            )))?;
        }
        for (i, (label, values)) in self.rows.iter().enumerate() {
            // Row 0 at the top.
            let y = (n - 1 - i) as f64;
            let (px, py) = chart.backend_coord(&(0.0, y));
            text(
                root,
                label,
                (px - 8, py),
                font(11).pos(Pos::new(HPos::Right, VPos::Center)),
            )?;
            let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            let clip = |x: f64| x.min(top);
            let q = |p: f64| clip(v[((v.len() - 1) as f64 * p).round() as usize]);
            let (lo, q1, med, q3, hi) = (q(0.0), q(0.25), q(0.5), q(0.75), q(1.0));
            chart.draw_series([
                PathElement::new(vec![(lo, y), (hi, y)], INK.stroke_width(1)),
                PathElement::new(vec![(lo, y - 0.15), (lo, y + 0.15)], INK.stroke_width(1)),
                PathElement::new(vec![(hi, y - 0.15), (hi, y + 0.15)], INK.stroke_width(1)),
            ])?;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(q1, y - 0.3), (q3, y + 0.3)],
                BLUE.mix(0.35).filled(),
            )))?;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(q1, y - 0.3), (q3, y + 0.3)],
                BLUE.stroke_width(1),
            )))?;
            chart.draw_series(v.iter().enumerate().map(|(k, &x)| {
                // Spread the dots over the row so that equal values stay visible.
                let jitter = ((k * 7919) % 13) as f64 / 13.0 * 0.4 - 0.2;
                Circle::new((clip(x), y + jitter), 2, ORANGE.mix(0.6).filled())
            }))?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(med, y - 0.34), (med, y + 0.34)],
                RED.stroke_width(2),
            )))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_figure_draws_to_svg_with_the_embedded_font() {
        let figures = [
            Figure::Heatmap(Heatmap {
                title: "h".into(),
                wc: vec![2, 4],
                wr: vec![2],
                cells: vec![
                    Cell::Value {
                        shade: 1.0,
                        text: "0.1".into(),
                    },
                    Cell::Refused,
                ],
                circled: Some((0, 0)),
                scale: ("slow".into(), "fast".into()),
            }),
            Figure::Bars(Bars {
                title: "b".into(),
                y_label: "ms".into(),
                bars: vec![Bar {
                    label: "a".into(),
                    value: 2.0,
                    kind: BarKind::Alone,
                }],
            }),
            Figure::Sweep(Sweep {
                title: "s".into(),
                x_label: "f".into(),
                measured: vec![(0.0, 2.0, true), (1.0, 1.0, false)],
                theoretical: vec![(0.0, 1.5), (1.0, 1.0)],
                planner: (0.5, 0.8),
            }),
            Figure::Distribution(Distribution {
                title: "d".into(),
                x_label: "x".into(),
                rows: vec![("m".into(), vec![0.5, 1.0, 3.0])],
                reference: Some(1.0),
                clip: Some(2.5),
            }),
        ];
        for f in &figures {
            let svg = f.svg().unwrap();
            assert!(svg.starts_with("<svg"), "{svg}");
            assert!(svg.contains(FAMILY), "{svg}");
            assert!(svg.matches("<rect").count() + svg.matches("<circle").count() >= 2);
        }
    }

    #[test]
    fn viridis_runs_from_purple_to_yellow() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
    }
}
