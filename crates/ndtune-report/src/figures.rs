//! The figures, as data ready to draw ([`Figure`]) and drawn with plotters on any backend: SVG for
//! the HTML page, PNG for Markdown. Text uses the embedded DejaVu Sans ([`FONT`]), registered with
//! plotters so that no system font is needed. Times and other values of an objective spanning
//! orders of magnitude are drawn on a log axis (values in `ln` space, labels in their unit).

use ndtune_core::OutcomeKind;
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
pub(crate) fn register_fonts() {
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
const LIGHT_BLUE: RGBColor = RGBColor(158, 188, 218);

/// One figure of the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    Heatmap(Heatmap),
    Bars(Bars),
    Sweep(Sweep),
    Distribution(Distribution),
    Convergence(Convergence),
    Histogram(Histogram),
    Effects(Effects),
    Timeline(Timeline),
    Front(FrontScatter),
}

/// Two objectives of a campaign of several: every measured configuration a point, those on the
/// Pareto front marked and joined by its staircase. Both axes are logarithmic (values span
/// orders of magnitude); an axis whose objective is better higher is read as it is, the better
/// end being the upper one.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontScatter {
    pub title: String,
    /// What each axis is, with its unit and direction.
    pub x_label: String,
    pub y_label: String,
    /// Every measured configuration's (x, y) values, all positive.
    pub points: Vec<(f64, f64)>,
    /// The front's members' (x, y), in the order of x.
    pub front: Vec<(f64, f64)>,
    /// Whether higher is better along each axis: the legend goes to the worst corner, away
    /// from the front.
    pub higher_is_better: (bool, bool),
}

/// A value per cell of a plane of two variables (columns across, rows down): the work-group
/// plane of a stencil, or two tuning parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    pub title: String,
    /// Column labels, left to right, and what they are.
    pub columns: Vec<String>,
    pub x_label: String,
    /// Row labels, top to bottom, and what they are.
    pub rows: Vec<String>,
    pub y_label: String,
    /// Row-major: `cells[r * columns.len() + c]`.
    pub cells: Vec<Cell>,
    /// The cell circled (column, row index): the oracle, the best.
    pub circled: Option<(usize, usize)>,
    /// The legend's word for the circle.
    pub circled_label: String,
    /// The legend's words for [`Cell::Illegal`].
    pub illegal_label: String,
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
    /// Beyond the scenario's limits, or pruned: never run.
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
    /// A campaign's best time (across devices).
    Best,
    /// A campaign's median measured time.
    Median,
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

/// A tuning campaign's convergence: every measured value of its objective (the time, by
/// default) in evaluation order and the best found so far, as Kernel Tuner's and most
/// autotuners' first picture.
#[derive(Debug, Clone, PartialEq)]
pub struct Convergence {
    pub title: String,
    /// What the values are, with their unit: `time (ms)`, `gflops (GFLOP/s)`.
    pub axis: String,
    /// Evaluations in all: the x axis runs from 1 to it.
    pub evaluations: usize,
    /// (evaluation, value) of measured evaluations drawn as dots (a subsample where there are
    /// many).
    pub measured: Vec<(usize, f64)>,
    /// Evaluations that were refused or failed, ticked along the bottom (a subsample likewise).
    pub failed: Vec<usize>,
    /// (evaluation, best value so far) at each improvement, in order.
    pub best: Vec<(usize, f64)>,
}

/// The distribution of a campaign's measured values of its objective (bins over their log) and
/// the count of each outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub title: String,
    /// What the values are, with their unit.
    pub axis: String,
    /// (low, high, configurations), bins of equal width in `ln` space, ascending.
    pub bins: Vec<(f64, f64, usize)>,
    /// Every outcome that occurred, with its count.
    pub outcomes: Vec<(OutcomeKind, usize)>,
}

/// What each lane did when: each worker of a shared campaign (a bar per evaluation from its
/// start to its result, coloured by its outcome), or each device of a co-execution (a bar per
/// chunk).
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub title: String,
    /// The lanes, top to bottom.
    pub lanes: Vec<String>,
    /// (lane, start, end, outcome), in the unit of `x_label` from the first start.
    pub spans: Vec<(usize, f64, f64, OutcomeKind)>,
    pub x_label: String,
}

/// Small multiples: per tuning parameter, per value, the best and the median measured value of
/// the objective over the configurations with that value.
#[derive(Debug, Clone, PartialEq)]
pub struct Effects {
    pub title: String,
    /// What the values are, with their unit.
    pub axis: String,
    pub panels: Vec<Effect>,
}

/// One parameter's panel of [`Effects`].
#[derive(Debug, Clone, PartialEq)]
pub struct Effect {
    pub param: String,
    /// Per value, ascending: its label and (best, median), `None` where nothing was measured.
    pub values: Vec<(String, Option<(f64, f64)>)>,
}

type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

impl Figure {
    pub fn title(&self) -> &str {
        match self {
            Figure::Heatmap(f) => &f.title,
            Figure::Bars(f) => &f.title,
            Figure::Sweep(f) => &f.title,
            Figure::Distribution(f) => &f.title,
            Figure::Convergence(f) => &f.title,
            Figure::Histogram(f) => &f.title,
            Figure::Effects(f) => &f.title,
            Figure::Timeline(f) => &f.title,
            Figure::Front(f) => &f.title,
        }
    }

    /// Width and height in pixels.
    pub fn size(&self) -> (u32, u32) {
        match self {
            Figure::Heatmap(h) => {
                let (w, hh) = h.cell_size();
                (
                    (90 + w * h.columns.len() as u32 + 110).max(420),
                    60 + hh * h.rows.len() as u32 + 70,
                )
            }
            Figure::Bars(b) => ((160 + 110 * b.bars.len() as u32).max(480), 380),
            Figure::Sweep(_) => (640, 400),
            Figure::Distribution(d) => (760, 90 + 30 * d.rows.len() as u32),
            Figure::Convergence(_) => (680, 380),
            Figure::Histogram(_) => (680, 340),
            Figure::Effects(e) => (
                PANEL.0 * e.panels.len().clamp(1, PANELS_PER_ROW) as u32,
                40 + PANEL.1 * e.panels.len().div_ceil(PANELS_PER_ROW).max(1) as u32,
            ),
            Figure::Timeline(t) => (760, 110 + 34 * t.lanes.len() as u32),
            Figure::Front(_) => (640, 440),
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
            Figure::Convergence(f) => f.draw(root),
            Figure::Histogram(f) => f.draw(root),
            Figure::Effects(f) => f.draw(root),
            Figure::Timeline(f) => f.draw(root),
            Figure::Front(f) => f.draw(root),
        }
    }
}

/// Panels of [`Effects`] per row, and each panel's size in pixels.
const PANELS_PER_ROW: usize = 3;
const PANEL: (u32, u32) = (300, 250);

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
        let w = (640 / self.columns.len().max(1) as u32).clamp(22, 64);
        let h = (420 / self.rows.len().max(1) as u32).clamp(18, 40);
        (w, h)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let (cw, ch) = self.cell_size();
        let (cw, ch) = (cw as i32, ch as i32);
        let (x0, y0) = (90, 50);
        let centre = Pos::new(HPos::Center, VPos::Center);
        for (r, label) in self.rows.iter().enumerate() {
            let y = y0 + r as i32 * ch;
            text(
                root,
                label,
                (x0 - 6, y + ch / 2),
                font(11).pos(Pos::new(HPos::Right, VPos::Center)),
            )?;
            for c in 0..self.columns.len() {
                let x = x0 + c as i32 * cw;
                let rect = [(x, y), (x + cw, y + ch)];
                let mid = (x + cw / 2, y + ch / 2);
                match &self.cells[r * self.columns.len() + c] {
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
        let bottom = y0 + self.rows.len() as i32 * ch;
        for (c, label) in self.columns.iter().enumerate() {
            text(
                root,
                label,
                (x0 + c as i32 * cw + cw / 2, bottom + 10),
                font(11).pos(centre),
            )?;
        }
        let right = x0 + self.columns.len() as i32 * cw;
        text(
            root,
            &self.x_label,
            ((x0 + right) / 2, bottom + 28),
            font(12).pos(centre),
        )?;
        text(
            root,
            &self.y_label,
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
        let present = |f: fn(&Cell) -> bool| self.cells.iter().any(f);
        let legend = [
            ("refused", Some(REFUSED), present(|c| *c == Cell::Refused)),
            ("failed", Some(FAILED), present(|c| *c == Cell::Failed)),
            (
                self.illegal_label.as_str(),
                None,
                present(|c| *c == Cell::Illegal),
            ),
        ];
        for (label, colour, _) in legend.into_iter().filter(|l| l.2) {
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
            text(root, &self.circled_label, (lx + 16, ly), font(11).pos(left))?;
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
                BarKind::Alone | BarKind::Best => BLUE,
                BarKind::Coexec => ORANGE,
                BarKind::Theoretical => GREEN,
                BarKind::Median => LIGHT_BLUE,
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

/// A time in ms with about three significant digits, for axis labels.
pub fn ms_label(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else if x >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.1e}")
    }
}

/// The span of an axis in `ln` space for positive times, with some room on each side.
fn log_span(times: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = times
        .filter(|t| t.is_finite() && *t > 0.0)
        .map(f64::ln)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
            (a.min(t), b.max(t))
        });
    if lo > hi {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08).max(0.05);
    (lo - pad, hi + pad)
}

/// An axis label at whole numbers only (ticks between them stay bare).
fn whole(v: f64) -> Option<i64> {
    ((v - v.round()).abs() < 1e-9).then_some(v.round() as i64)
}

/// The colour of an outcome: blue measured, grey refused or pruned, red every failure.
fn outcome_colour(k: OutcomeKind) -> RGBColor {
    match k {
        OutcomeKind::Measured => BLUE,
        OutcomeKind::Refused | OutcomeKind::Pruned => REFUSED,
        _ => FAILED,
    }
}

impl Convergence {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let area = root.margin(30, 10, 10, 20);
        let (lo, hi) = log_span(self.measured.iter().chain(&self.best).map(|&(_, t)| t));
        let n = self.evaluations.max(1) as f64;
        let mut chart = ChartBuilder::on(&area)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.5..n + 0.5, lo..hi)?;
        chart
            .configure_mesh()
            .x_desc("evaluation, in the order run")
            .y_desc(format!("{}, log scale", self.axis))
            .x_label_formatter(&|v| whole(*v).map_or(String::new(), |i| i.to_string()))
            .y_label_formatter(&|v| ms_label(v.exp()))
            .label_style(font(11))
            .axis_desc_style(font(12))
            .light_line_style(WHITE)
            .draw()?;
        chart
            .draw_series(
                self.measured
                    .iter()
                    .map(|&(i, t)| Circle::new((i as f64, t.ln()), 2, ORANGE.mix(0.6).filled())),
            )?
            .label("a measured configuration")
            .legend(|(x, y)| Circle::new((x + 9, y), 3, ORANGE.filled()));
        let mut steps: Vec<(f64, f64)> = Vec::new();
        for (k, &(i, t)) in self.best.iter().enumerate() {
            if k > 0 {
                steps.push((i as f64, self.best[k - 1].1.ln()));
            }
            steps.push((i as f64, t.ln()));
        }
        if let Some(&(_, t)) = self.best.last() {
            steps.push((n, t.ln()));
        }
        chart
            .draw_series(std::iter::once(PathElement::new(
                steps,
                BLUE.stroke_width(2),
            )))?
            .label("best so far")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLUE.stroke_width(2)));
        chart.draw_series(
            self.best
                .iter()
                .map(|&(i, t)| Circle::new((i as f64, t.ln()), 4, BLUE.filled())),
        )?;
        if !self.failed.is_empty() {
            let tick = (hi - lo) * 0.04;
            chart
                .draw_series(self.failed.iter().map(|&i| {
                    PathElement::new(
                        vec![(i as f64, lo), (i as f64, lo + tick)],
                        FAILED.stroke_width(2),
                    )
                }))?
                .label("refused or failed")
                .legend(|(x, y)| {
                    PathElement::new(vec![(x + 9, y - 5), (x + 9, y + 5)], FAILED.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .label_font(font(11))
            .background_style(WHITE.mix(0.85))
            .border_style(GRID)
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;
        Ok(())
    }
}

impl FrontScatter {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let area = root.margin(30, 10, 10, 20);
        let (x0, x1) = log_span(self.points.iter().map(|p| p.0));
        let (y0, y1) = log_span(self.points.iter().map(|p| p.1));
        let mut chart = ChartBuilder::on(&area)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(format!("{}, log scale", self.x_label))
            .y_desc(format!("{}, log scale", self.y_label))
            .x_label_formatter(&|v| ms_label(v.exp()))
            .y_label_formatter(&|v| ms_label(v.exp()))
            .label_style(font(11))
            .axis_desc_style(font(12))
            .light_line_style(WHITE)
            .draw()?;
        let ln = |&(x, y): &(f64, f64)| (x.ln(), y.ln());
        chart
            .draw_series(
                self.points
                    .iter()
                    .map(|p| Circle::new(ln(p), 2, ORANGE.mix(0.5).filled())),
            )?
            .label("a measured configuration")
            .legend(|(x, y)| Circle::new((x + 9, y), 3, ORANGE.filled()));
        chart
            .draw_series(std::iter::once(PathElement::new(
                self.front.iter().map(ln).collect::<Vec<_>>(),
                BLUE.stroke_width(2),
            )))?
            .label("the Pareto front: none better in both")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLUE.stroke_width(2)));
        chart.draw_series(
            self.front
                .iter()
                .map(|p| Circle::new(ln(p), 4, BLUE.filled())),
        )?;
        let worst = match self.higher_is_better {
            (false, false) => SeriesLabelPosition::UpperRight,
            (false, true) => SeriesLabelPosition::LowerRight,
            (true, false) => SeriesLabelPosition::UpperLeft,
            (true, true) => SeriesLabelPosition::LowerLeft,
        };
        chart
            .configure_series_labels()
            .label_font(font(11))
            .background_style(WHITE.mix(0.85))
            .border_style(GRID)
            .position(worst)
            .draw()?;
        Ok(())
    }
}

impl Histogram {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let area = root.margin(30, 10, 10, 160);
        let (lo, hi) = match (self.bins.first(), self.bins.last()) {
            (Some(a), Some(b)) => (a.0.ln(), b.1.ln()),
            _ => (0.0, 1.0),
        };
        let most = self.bins.iter().map(|b| b.2).max().unwrap_or(0);
        let mut chart = ChartBuilder::on(&area)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(lo..hi, 0.0..axis_top(most as f64))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc(format!("measured {}, log scale", self.axis))
            .y_desc("configurations")
            .x_label_formatter(&|v| ms_label(v.exp()))
            .y_label_formatter(&|v| whole(*v).map_or(String::new(), |i| i.to_string()))
            .label_style(font(11))
            .axis_desc_style(font(12))
            .light_line_style(WHITE)
            .draw()?;
        chart.draw_series(self.bins.iter().filter(|b| b.2 > 0).map(|&(a, b, n)| {
            Rectangle::new([(a.ln(), 0.0), (b.ln(), n as f64)], BLUE.filled())
        }))?;
        chart.draw_series(self.bins.iter().filter(|b| b.2 > 0).map(|&(a, b, n)| {
            Rectangle::new([(a.ln(), 0.0), (b.ln(), n as f64)], WHITE.stroke_width(1))
        }))?;
        // The outcomes, counted, on the right.
        let x = root.dim_in_pixel().0 as i32 - 140;
        let left = Pos::new(HPos::Left, VPos::Center);
        text(root, "outcomes", (x, 56), font(12).pos(left))?;
        for (k, (kind, n)) in self.outcomes.iter().enumerate() {
            let y = 80 + 20 * k as i32;
            root.draw(&Rectangle::new(
                [(x, y - 6), (x + 12, y + 6)],
                outcome_colour(*kind).filled(),
            ))?;
            text(
                root,
                &format!("{} {n}", kind.as_str().replace('_', " ")),
                (x + 18, y),
                font(11).pos(left),
            )?;
        }
        Ok(())
    }
}

impl Timeline {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let area = root.margin(30, 10, 10, 20);
        let end = self.spans.iter().map(|s| s.2).fold(0.0, f64::max);
        let lanes = self.lanes.len().max(1);
        let mut chart = ChartBuilder::on(&area)
            .x_label_area_size(40)
            .y_label_area_size(150)
            .build_cartesian_2d(0.0..axis_top(end), (0..lanes - 1).into_segmented())?;
        // The first lane on top.
        let row = |lane: usize| lanes - 1 - lane;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(&self.x_label)
            .y_labels(lanes)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) if *i < lanes => self.lanes[row(*i)].clone(),
                _ => String::new(),
            })
            .label_style(font(11))
            .axis_desc_style(font(12))
            .light_line_style(WHITE)
            .draw()?;
        // Bars of at least a pixel's width, so that an evaluation of microseconds shows, and
        // two pixels apart, so that back-to-back chunks show as two.
        let pixel = axis_top(end) / f64::from(area.dim_in_pixel().0.max(1));
        chart.draw_series(self.spans.iter().map(|&(lane, start, stop, kind)| {
            let stop = if stop - start > 4.0 * pixel {
                stop - 2.0 * pixel
            } else {
                stop
            };
            let mut bar = Rectangle::new(
                [
                    (start, SegmentValue::Exact(row(lane))),
                    (stop.max(start + pixel), SegmentValue::Exact(row(lane) + 1)),
                ],
                outcome_colour(kind).filled(),
            );
            bar.set_margin(5, 5, 0, 0);
            bar
        }))?;
        Ok(())
    }
}

impl Effects {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        title(root, &self.title)?;
        let left = Pos::new(HPos::Left, VPos::Center);
        for (k, (label, colour)) in [("best", BLUE), ("median", ORANGE)].into_iter().enumerate() {
            let x = 12 + 80 * k as i32;
            root.draw(&Circle::new((x, 34), 4, colour.filled()))?;
            text(root, label, (x + 9, 34), font(11).pos(left))?;
        }
        let body = root.margin(40, 0, 0, 0);
        let rows = self.panels.len().div_ceil(PANELS_PER_ROW).max(1);
        let columns = self.panels.len().clamp(1, PANELS_PER_ROW);
        let areas = body.split_evenly((rows, columns));
        // One time axis for every panel, so that the parameters compare.
        let (lo, hi) = log_span(
            self.panels
                .iter()
                .flat_map(|p| p.values.iter().filter_map(|v| v.1))
                .flat_map(|(b, m)| [b, m]),
        );
        for (panel, area) in self.panels.iter().zip(&areas) {
            let k = panel.values.len().max(1);
            let every = k.div_ceil(8);
            let mut chart = ChartBuilder::on(area)
                .caption(&panel.param, font(13))
                .margin(6)
                .x_label_area_size(28)
                .y_label_area_size(52)
                .build_cartesian_2d(-0.5..k as f64 - 0.5, lo..hi)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(k + 1)
                .x_label_formatter(&|v| {
                    whole(*v)
                        .filter(|&i| {
                            i >= 0 && (i as usize) < k && (i as usize).is_multiple_of(every)
                        })
                        .map_or(String::new(), |i| panel.values[i as usize].0.clone())
                })
                .y_label_formatter(&|v| ms_label(v.exp()))
                .y_desc(self.axis.as_str())
                .label_style(font(10))
                .axis_desc_style(font(11))
                .light_line_style(WHITE)
                .draw()?;
            for (pick, colour) in [(0, BLUE), (1, ORANGE)] {
                let points: Vec<(f64, f64)> = panel
                    .values
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (_, v))| {
                        v.map(|(best, median)| (i as f64, [best, median][pick].ln()))
                    })
                    .collect();
                chart.draw_series(std::iter::once(PathElement::new(
                    points.clone(),
                    colour.stroke_width(2),
                )))?;
                chart.draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, colour.filled())),
                )?;
            }
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
                columns: vec!["2".into(), "4".into()],
                x_label: "wc".into(),
                rows: vec!["2".into()],
                y_label: "wr".into(),
                circled_label: "oracle".into(),
                illegal_label: "beyond limits".into(),
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
            Figure::Convergence(Convergence {
                title: "c".into(),
                axis: "time (ms)".into(),
                evaluations: 4,
                measured: vec![(1, 3.0), (2, 1.0), (4, 2.0)],
                failed: vec![3],
                best: vec![(1, 3.0), (2, 1.0)],
            }),
            Figure::Histogram(Histogram {
                title: "t".into(),
                axis: "time (ms)".into(),
                bins: vec![(1.0, 2.0, 2), (2.0, 4.0, 0), (4.0, 8.0, 1)],
                outcomes: vec![(OutcomeKind::Measured, 3), (OutcomeKind::Refused, 1)],
            }),
            Figure::Effects(Effects {
                title: "e".into(),
                axis: "gflops (GFLOP/s)".into(),
                panels: ["A", "B", "C", "D"]
                    .iter()
                    .map(|p| Effect {
                        param: p.to_string(),
                        values: vec![
                            ("1".into(), Some((1.0, 2.0))),
                            ("2".into(), None),
                            ("4".into(), Some((0.5, 3.0))),
                        ],
                    })
                    .collect(),
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
