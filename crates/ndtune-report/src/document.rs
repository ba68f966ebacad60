//! The report as a format-free document ([`Document`]): headings, paragraphs, tables and figures
//! with their captions, in the order of the page. All the wording lives here; the renderers only
//! format it.

use crate::figures::{Bar, BarKind, Bars, Cell, Distribution, Figure, Heatmap, Sweep, Timeline};
use crate::model::{Collection, DeviceSection, Named, Report, Scenario, MAX_HEATMAPS};
use ndtune_core::OutcomeKind;
use ndtune_learn::oracle::Status;
use std::collections::{BTreeMap, BTreeSet};

/// One piece of the page.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Level 2 (a section) or 3; `id` is the anchor.
    Heading {
        level: u8,
        id: String,
        text: String,
    },
    Paragraph(String),
    /// What the store does not hold for a section, and how to get it.
    Missing(String),
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    Figure {
        id: String,
        figure: Box<Figure>,
        /// What the figure shows, in words, for readers who do not see it (alt text).
        alt: String,
        caption: String,
    },
}

/// The whole report.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Document {
    /// Every figure with its id, in page order.
    pub fn figures(&self) -> impl Iterator<Item = (&str, &Figure)> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Figure { id, figure, .. } => Some((id.as_str(), figure.as_ref())),
            _ => None,
        })
    }
}

pub(crate) struct Builder {
    blocks: Vec<Block>,
    figures: usize,
}

impl Builder {
    pub(crate) fn heading(&mut self, level: u8, id: &str, text: impl Into<String>) {
        self.blocks.push(Block::Heading {
            level,
            id: id.into(),
            text: text.into(),
        });
    }

    pub(crate) fn para(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Paragraph(text.into()));
    }

    pub(crate) fn missing(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Missing(text.into()));
    }

    pub(crate) fn table(&mut self, head: &[&str], rows: Vec<Vec<String>>) {
        self.blocks.push(Block::Table {
            head: head.iter().map(|h| h.to_string()).collect(),
            rows,
        });
    }

    pub(crate) fn figure(
        &mut self,
        figure: Figure,
        alt: impl Into<String>,
        caption: impl Into<String>,
    ) {
        self.figures += 1;
        self.blocks.push(Block::Figure {
            id: format!("fig-{}", self.figures),
            figure: Box::new(figure),
            alt: alt.into(),
            caption: caption.into(),
        });
    }
}

/// Lays out a report.
pub fn document(r: &Report) -> Document {
    let mut b = Builder {
        blocks: Vec::new(),
        figures: 0,
    };
    b.para(format!(
        "What the ndtune store {} holds, as the tables and figures of the seed papers: Erdem et al. 2018 \
         (pruning, Tables 1-2; co-execution, Fig. 5-7 and Table 3) and Cummins et al. 2016 \
         (work-group sizes of stencils, Fig. 1-2; learning, Fig. 4-6), and the pictures of each \
         tuning campaign. Written by ndtune {}.",
        r.store.display(),
        ndtune_store::NDTUNE_VERSION
    ));
    devices(&mut b, r);
    crate::tuning::section(&mut b, r);
    heatmaps(&mut b, r.collection.as_ref());
    splits(&mut b, &r.splits);
    learning(&mut b, &r.learning);
    Document {
        title: format!("ndtune report: {}", r.store.display()),
        blocks: b.blocks,
    }
}

/// `1,234,567`.
pub fn digits(n: u128) -> String {
    let s = n.to_string();
    let head = match s.len() % 3 {
        0 => 3.min(s.len()),
        r => r,
    };
    let mut out = s[..head].to_string();
    for group in s.as_bytes()[head..].chunks(3) {
        out.push(',');
        out.push_str(std::str::from_utf8(group).expect("ASCII digits"));
    }
    out
}

/// A time with 4 significant digits.
pub(crate) fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// Any value (an objective's, a metric's) with about 4 significant digits: a time as
/// [`ms`] writes it, very small or very large values in scientific notation.
pub(crate) fn value(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) {
        format!("{x:.3e}")
    } else {
        ms(x)
    }
}

pub(crate) fn constants(c: &ndtune_core::Constants) -> String {
    c.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn config(c: &ndtune_core::Config) -> String {
    constants(c)
}

fn wg((c, r): (u64, u64)) -> String {
    format!("{c}x{r}")
}

fn percent(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}%", 100.0 * x)
    } else {
        "-".into()
    }
}

pub(crate) fn times(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite())
        .map_or("-".into(), |x| format!("{x:.2}x"))
}

fn devices(b: &mut Builder, r: &Report) {
    b.heading(2, "devices", "Devices: pruning and tuning");
    if r.devices.is_empty() {
        b.missing(
            "The store holds no tuning results: run `ndtune tune SPEC --db STORE` (or `ndtune collect`).",
        );
        return;
    }
    b.para(
        "Per device: the size of each tuned space before and after pruning (Erdem et al. 2018, \
         Table 1: configurations within the device's per-dimension work-item limits; Table 2: \
         configurations that satisfy every constraint), what each constraint removed, and each \
         campaign's best configuration with how much faster it is than the median and the \
         slowest measured configuration.",
    );
    for (i, d) in r.devices.iter().enumerate() {
        device(b, i, d);
    }
}

fn device(b: &mut Builder, i: usize, d: &DeviceSection) {
    b.heading(
        3,
        &format!("device-{}", i + 1),
        format!(
            "{}: {} compute units, fingerprint {}",
            d.name, d.compute_units, d.fingerprint
        ),
    );
    if d.spaces.is_empty() {
        b.missing(
            "No pruned space is recorded for this device: its results were tuned by an ndtune \
             that did not keep spaces; tune again (results are reused) to add them.",
        );
    } else {
        b.table(
            &[
                "kernel",
                "constants",
                "declared",
                "bounded (Table 1)",
                "pruned (Table 2)",
                "kept",
            ],
            d.spaces
                .iter()
                .map(|s| {
                    vec![
                        s.kernel.clone(),
                        constants(&s.constants),
                        digits(s.declared),
                        digits(s.bounded),
                        digits(s.pruned),
                        percent(s.pruned as f64 / s.declared.max(1) as f64),
                    ]
                })
                .collect(),
        );
        let removals: Vec<Vec<String>> = d
            .spaces
            .iter()
            .flat_map(|s| {
                s.constraints
                    .iter()
                    .filter(|c| c.removed > 0)
                    .map(move |c| {
                        vec![
                            s.kernel.clone(),
                            constants(&s.constants),
                            c.constraint.clone(),
                            c.origin.clone(),
                            digits(c.removed),
                        ]
                    })
            })
            .collect();
        if !removals.is_empty() {
            b.para("What each constraint removed (each configuration counted once, for the first constraint that rejects it):");
            b.table(
                &["kernel", "constants", "constraint", "origin", "removed"],
                removals,
            );
        }
    }
    if d.campaigns.is_empty() {
        b.missing("No configuration was evaluated on this device.");
        return;
    }
    b.table(
        &[
            "kernel",
            "constants",
            "setup",
            "measured",
            "objective",
            "best configuration",
            "best",
            "over median",
            "over worst",
            "other outcomes",
        ],
        d.campaigns
            .iter()
            .map(|c| {
                let others: Vec<String> = c
                    .outcomes
                    .iter()
                    .filter(|(k, _)| **k != OutcomeKind::Measured)
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect();
                let (worst, median) = c.speedups().unzip();
                vec![
                    c.kernel.clone(),
                    constants(&c.constants),
                    match &c.earlier {
                        Some(e) => format!("{} (earlier than {})", c.setup, e.newest),
                        None => c.setup.clone(),
                    },
                    c.measured().to_string(),
                    format!("{}, {}", c.label(), c.objective.direction()),
                    c.best
                        .as_ref()
                        .map_or("none".into(), |(cfg, _)| config(cfg)),
                    c.best.as_ref().map_or("-".into(), |(_, v)| c.show(*v)),
                    times(median),
                    times(worst),
                    others.join(", "),
                ]
            })
            .collect(),
    );
}

fn heatmaps(b: &mut Builder, c: Option<&Collection>) {
    b.heading(2, "heatmaps", "Work-group sizes of stencils");
    let Some(c) = c else {
        b.missing(
            "The store holds no collected work-group scenario: run `ndtune collect CAMPAIGN.toml --db STORE`.",
        );
        return;
    };
    let a = &c.analysis;
    let mut summary = format!(
        "{} scenarios (stencil, dataset, device), each measured at every size of its work-group grid \
         (Cummins et al. 2016). {} sizes are legal in every scenario (W_safe). ",
        c.scenarios.len(),
        a.safe.len()
    );
    match &a.baseline {
        Some(base) => summary.push_str(&format!(
            "The baseline {} reaches {} of the oracle's performance (geometric mean over {} scenarios{}). ",
            wg(base.wg),
            percent(base.performance),
            base.scenarios,
            if base.safe { "" } else { "; W_safe is empty, so it is the best of the sizes legal in the most scenarios" }
        )),
        None => summary.push_str("Nothing was measured, so there is no baseline. "),
    }
    match a.expert.performance {
        Some(p) => summary.push_str(&format!(
            "The human expert's {} is legal in {} scenarios and reaches {} there. ",
            wg(a.expert.wg),
            a.expert.legal_in,
            percent(p)
        )),
        None => summary.push_str(&format!(
            "The human expert's {} is legal in no scenario. ",
            wg(a.expert.wg)
        )),
    }
    summary.push_str(&format!(
        "{} distinct oracle sizes; the oracle is {} faster than the worst legal size on average.",
        a.distinct_oracles,
        times(a.mean_spread)
    ));
    b.para(summary);
    b.table(
        &[
            "scenario",
            "legal",
            "refused",
            "beyond limits",
            "oracle",
            "oracle ms",
            "oracle over worst",
        ],
        c.scenarios
            .iter()
            .zip(&a.scenarios)
            .map(|(s, st)| {
                vec![
                    s.info.label.clone(),
                    st.legal.to_string(),
                    st.refused.to_string(),
                    st.illegal.to_string(),
                    st.oracle.map_or("-".into(), |o| wg(o.0)),
                    st.oracle.map_or("-".into(), |o| ms(o.1)),
                    times(st.spread),
                ]
            })
            .collect(),
    );
    if let Some(f) = oracle_frequency(c) {
        let alt = match &f {
            Figure::Heatmap(h) => {
                format!("{}: the table above gives each scenario's oracle.", h.title)
            }
            _ => unreachable!("the oracle frequency is a heatmap"),
        };
        b.figure(
            f,
            alt,
            "How often each work-group size is the oracle (the fastest legal size) across the \
             scenarios, as in Cummins et al. 2016, Fig. 2; the most frequent is circled.",
        );
    }
    if c.scenarios.len() > c.shown.len() {
        b.para(format!(
            "Heatmaps of {} of the {} scenarios (at most {MAX_HEATMAPS}): those with the largest spread \
             between the slowest and the fastest legal size, where the choice matters most.",
            c.shown.len(),
            c.scenarios.len()
        ));
    }
    for &i in &c.shown {
        let s = &c.scenarios[i];
        if let Some(f) = scenario_heatmap(s) {
            let st = &a.scenarios[i];
            b.figure(
                f,
                format!(
                    "Runtime of {} over its work-group plane: oracle {} at {} ms, {} legal sizes, {} refused.",
                    s.info.label,
                    st.oracle.map_or("-".into(), |o| wg(o.0)),
                    st.oracle.map_or("-".into(), |o| ms(o.1)),
                    st.legal,
                    st.refused
                ),
                format!(
                    "{}: runtime over the work-group plane (wc x wr), as in Cummins et al. 2016, \
                     Fig. 1. Colour: performance relative to the oracle (yellow: the oracle, dark: \
                     slow; cells show ms); grey ×: refused by the driver; red !: wrong result, \
                     crash or timeout; struck out: beyond the scenario's limits (W_max = {}); \
                     circled: the oracle.",
                    s.info.label, s.info.wmax
                ),
            );
        }
    }
}

/// A scenario's runtimes on its grid; `None` where nothing was measured.
fn scenario_heatmap(s: &Scenario) -> Option<Figure> {
    let measured: Vec<((u64, u64), f64)> = s
        .cells
        .iter()
        .filter_map(|(w, (_, t))| t.map(|t| (*w, t)))
        .collect();
    let (oracle, best) = measured
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))?;
    let worst = measured.iter().map(|m| m.1).fold(best, f64::max);
    // Shade by log of performance relative to the oracle: 1 at the oracle, 0 at the worst.
    let span = (worst / best).ln();
    let cells = s
        .info
        .wr
        .iter()
        .flat_map(|&r| s.info.wc.iter().map(move |&c| (c, r)))
        .map(|w| match s.cells.get(&w) {
            Some((Status::Measured, Some(t))) => Cell::Value {
                shade: if span > 0.0 {
                    1.0 - (t / best).ln() / span
                } else {
                    1.0
                },
                text: ms(*t),
            },
            Some((Status::Refused, _)) => Cell::Refused,
            Some((Status::Illegal, _)) | None => Cell::Illegal,
            Some(_) => Cell::Failed,
        })
        .collect();
    Some(Figure::Heatmap(Heatmap {
        title: s.info.label.clone(),
        circled: position(&s.info.wc, &s.info.wr, oracle),
        columns: labels(&s.info.wc),
        x_label: "work-group columns wc".into(),
        rows: labels(&s.info.wr),
        y_label: "rows wr".into(),
        cells,
        circled_label: "oracle".into(),
        illegal_label: "beyond limits".into(),
        scale: (format!("{:.2}x slower", worst / best), "oracle".into()),
    }))
}

fn labels(values: &[u64]) -> Vec<String> {
    values.iter().map(u64::to_string).collect()
}

fn position(wc: &[u64], wr: &[u64], (c, r): (u64, u64)) -> Option<(usize, usize)> {
    Some((
        wc.iter().position(|&x| x == c)?,
        wr.iter().position(|&x| x == r)?,
    ))
}

/// The oracle frequency over the union of the scenarios' grids (Cummins Fig. 2).
fn oracle_frequency(c: &Collection) -> Option<Figure> {
    let mut count: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for s in &c.analysis.scenarios {
        if let Some((w, _)) = s.oracle {
            *count.entry(w).or_default() += 1;
        }
    }
    let (&top, &most) = count
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
    let wc: Vec<u64> = c
        .scenarios
        .iter()
        .flat_map(|s| s.info.wc.iter().copied())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let wr: Vec<u64> = c
        .scenarios
        .iter()
        .flat_map(|s| s.info.wr.iter().copied())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let cells = wr
        .iter()
        .flat_map(|&r| wc.iter().map(move |&col| (col, r)))
        .map(|w| match count.get(&w) {
            Some(&n) => Cell::Value {
                shade: n as f64 / most as f64,
                text: n.to_string(),
            },
            None => Cell::Empty,
        })
        .collect();
    Some(Figure::Heatmap(Heatmap {
        title: format!(
            "Oracle sizes over {} scenarios ({} distinct)",
            c.scenarios.len(),
            count.len()
        ),
        circled: position(&wc, &wr, top),
        columns: labels(&wc),
        x_label: "work-group columns wc".into(),
        rows: labels(&wr),
        y_label: "rows wr".into(),
        cells,
        circled_label: "most frequent".into(),
        illegal_label: "beyond limits".into(),
        scale: ("oracle nowhere".into(), format!("oracle in {most}")),
    }))
}

/// The fixed costs, the prediction, each scheduler side by side and what each device computed
/// when under each (studies stored before there were schedulers have none of it).
fn schedules(b: &mut Builder, r: &ndtune_split::study::Report) {
    let s = &r.study;
    if let Some(p) = &s.prediction {
        let fixed: Vec<String> = s
            .fixed
            .iter()
            .map(|f| {
                format!(
                    "device {} {} ms a run, {} ms a chunk",
                    f.device,
                    ms(f.run_ms),
                    ms(f.chunk_ms)
                )
            })
            .collect();
        b.para(format!(
            "Fixed costs, paid whatever a device's share: {}; running together {} ms more. \
             Predicted before running: {} ms ({}), measured {} ms. {}",
            fixed.join(", "),
            ms(s.together_ms),
            ms(p.ms),
            if p.pays {
                "co-execution pays"
            } else {
                "co-execution does not pay"
            },
            ms(s.decision.ms),
            p.reason
        ));
    }
    if s.schedules.len() < 2 {
        return;
    }
    b.para("Each scheduler on the same devices in the same run (efficiency: speedup over the best device alone, divided by the ideal speedup).".to_string());
    b.table(
        &[
            "scheduler",
            "ms",
            "speedup",
            "efficiency",
            "balance",
            "chunks",
            "verified",
            "failed devices",
        ],
        s.schedules
            .iter()
            .map(|x| {
                vec![
                    x.label(),
                    ms(x.ms),
                    format!("{:.3}", x.speedup),
                    format!("{:.3}", x.efficiency),
                    format!("{:.3}", x.balance),
                    x.timeline.len().to_string(),
                    if x.verified {
                        "yes".into()
                    } else {
                        "NO".into()
                    },
                    x.failures
                        .iter()
                        .map(|f| format!("{}: {}", f.device, f.message))
                        .collect::<Vec<_>>()
                        .join("; "),
                ]
            })
            .collect(),
    );
    let mut lanes = Vec::new();
    let mut spans = Vec::new();
    for x in &s.schedules {
        for p in &x.parts {
            let lane = lanes.len();
            lanes.push(format!(
                "{} · {}",
                x.label(),
                r.devices
                    .get(p.device)
                    .map_or(p.device.to_string(), |d| selector(&d.device).to_string())
            ));
            spans.extend(
                x.timeline
                    .iter()
                    .filter(|c| c.device == p.device)
                    .map(|c| (lane, c.start_ms, c.end_ms, OutcomeKind::Measured)),
            );
        }
    }
    b.figure(
        Figure::Timeline(Timeline {
            title: format!(
                "{}{}: chunks per device",
                r.kernel,
                with_constants(&r.constants)
            ),
            lanes,
            spans,
            x_label: "ms from the start of the run".into(),
        }),
        format!(
            "Timeline of the chunks of each device under {}",
            s.schedules
                .iter()
                .map(|x| x.label())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "What each device computed when under each scheduler, in the timed run of median time: \
         a bar per chunk from its first transfer to its last byte back. Devices that end together \
         are balanced; a lane that ends late is what the run waited for.",
    );
}

fn splits(b: &mut Builder, studies: &[Named<ndtune_split::study::Report>]) {
    b.heading(2, "coexec", "Co-execution");
    if studies.is_empty() {
        b.missing(
            "The store holds no co-execution study: run `ndtune split SPEC --devices A,B --sweep 0.1 --db STORE`.",
        );
        return;
    }
    for (i, st) in studies.iter().enumerate() {
        let r = &st.body;
        let s = &r.study;
        b.heading(3, &format!("coexec-{}", i + 1), st.name.clone());
        let verdict = match &s.mismatch {
            None => format!("the gathered output matches device {} alone", s.best_single),
            Some(m) => format!("NOT verified: {m}"),
        };
        b.para(format!(
            "`{}` split along dimension {} ({} items) over {} devices. Co-execution {} ms against \
             {} ms theoretical (overhead {:+.1}%); speedup {:.3} over the best device alone, ideal \
             {:.3}, efficiency {:.3}, balance {:.3}; {verdict}. Decision: {}",
            r.kernel,
            r.dim,
            s.plan.global,
            r.devices.len(),
            ms(s.coexec_ms),
            ms(s.plan.theoretical_ms),
            s.overhead * 100.0,
            s.speedup,
            s.ideal_speedup,
            s.efficiency,
            s.balance,
            s.decision.reason
        ));
        let mut bars: Vec<Bar> = r
            .devices
            .iter()
            .enumerate()
            .map(|(k, d)| Bar {
                label: format!("device {k} alone\n{}", selector(&d.device)),
                value: d.single_ms,
                kind: BarKind::Alone,
            })
            .collect();
        bars.push(Bar {
            label: "co-execution".into(),
            value: s.coexec_ms,
            kind: BarKind::Coexec,
        });
        bars.push(Bar {
            label: "theoretical".into(),
            value: s.plan.theoretical_ms,
            kind: BarKind::Theoretical,
        });
        let alt = format!(
            "Execution times: {}.",
            bars.iter()
                .map(|b| format!("{} {} ms", b.label.replace('\n', " "), ms(b.value)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        b.figure(
            Figure::Bars(Bars {
                title: format!("{}{}: execution times", r.kernel, with_constants(&r.constants)),
                y_label: "time (ms, host clock, transfers included)".into(),
                bars,
            }),
            alt,
            "Each device alone with its best configuration, the co-execution of the planner's \
             split, and the theoretical time of that split (Algorithm 1), as in Erdem et al. 2018, Fig. 5.",
        );
        b.para(format!(
            "Table 3: the planner's split, per device (residue rule `{}`).",
            s.plan.residue
        ));
        b.table(
            &[
                "device",
                "configuration",
                "work-group",
                "offset",
                "size",
                "groups",
                "adjusted factor",
                "optimal factor",
                "finish ms",
                "kernel ms",
            ],
            s.plan
                .parts
                .iter()
                .map(|p| {
                    let d = r.devices.get(p.device);
                    let t = s.parts.iter().find(|t| t.device == p.device);
                    vec![
                        format!("{}: {}", p.device, d.map_or("", |d| d.device.as_str())),
                        d.map_or("-".into(), |d| config(&d.config)),
                        d.map_or("-".into(), |d| d.wg.to_string()),
                        p.offset.to_string(),
                        p.size.to_string(),
                        p.work_groups.to_string(),
                        format!("{:.3}", p.factor),
                        format!("{:.3}", p.optimal_factor),
                        t.map_or("-".into(), |t| ms(t.finish_ms)),
                        t.map_or("-".into(), |t| ms(t.kernel_ms)),
                    ]
                })
                .collect(),
        );
        schedules(b, r);
        if let Some(other) = &s.other_rule {
            b.para(format!(
                "Under the `{}` residue rule (planned from the same times, not run) the split \
                 would finish in {} ms by Algorithm 1, against {} ms for the split above.",
                other.residue,
                ms(other.theoretical_ms),
                ms(s.plan.theoretical_ms)
            ));
            b.table(
                &[
                    "device",
                    "offset",
                    "size",
                    "groups",
                    "adjusted factor",
                    "optimal factor",
                    "predicted finish ms",
                ],
                other
                    .parts
                    .iter()
                    .map(|p| {
                        vec![
                            p.device.to_string(),
                            p.offset.to_string(),
                            p.size.to_string(),
                            p.work_groups.to_string(),
                            format!("{:.3}", p.factor),
                            format!("{:.3}", p.optimal_factor),
                            s.single_ms
                                .get(p.device)
                                .map_or("-".into(), |t| ms(p.factor * t)),
                        ]
                    })
                    .collect(),
            );
        }
        match &s.sweep {
            Some(points) if !points.is_empty() => {
                let planner = points
                    .iter()
                    .find(|p| p.planner)
                    .map_or((0.0, s.coexec_ms), |p| (p.factor, p.coexec_ms));
                let alt = format!(
                    "Co-execution time over device 0's split factor: {}; the planner's split {:.3} at {} ms.",
                    points
                        .iter()
                        .filter(|p| !p.planner)
                        .map(|p| format!("{:.3}: {} ms", p.factor, ms(p.coexec_ms)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    planner.0,
                    ms(planner.1)
                );
                b.figure(
                    Figure::Sweep(Sweep {
                        title: format!(
                            "{}{}: split factor sweep",
                            r.kernel,
                            with_constants(&r.constants)
                        ),
                        x_label: "split factor of device 0 (the rest shared by speed)".into(),
                        measured: points
                            .iter()
                            .filter(|p| !p.planner)
                            .map(|p| (p.factor, p.coexec_ms, p.verified))
                            .collect(),
                        theoretical: points
                            .iter()
                            .filter(|p| !p.planner)
                            .map(|p| (p.factor, p.theoretical_ms))
                            .collect(),
                        planner,
                    }),
                    alt,
                    "Co-execution time as device 0's share of the range goes from 0 to 1 (solid, \
                     measured; red dots: outputs that did not verify) and the theoretical time of \
                     the same splits (dashed); the planner's split is circled, as in Erdem et al. \
                     2018, Fig. 6-7. The gap between the lines is the overhead of co-execution. \
                     Shares are as requested; each is rounded to whole work-groups of its device \
                     when run.",
                );
            }
            _ => b.missing(
                "No sweep of split factors: run `ndtune split` with `--sweep STEP` for Fig. 6-7.",
            ),
        }
    }
}

/// The selector of a device label (`0:1/2` of `0:1/2: name`), to fit under a bar.
fn selector(label: &str) -> &str {
    label.split(": ").next().unwrap_or(label)
}

/// ` N=128` (with a leading space), or nothing.
pub(crate) fn with_constants(c: &ndtune_core::Constants) -> String {
    c.iter().map(|(k, v)| format!(" {k}={v}")).collect()
}

fn learning(b: &mut Builder, studies: &[Named<ndtune_learn::eval::Report>]) {
    b.heading(2, "learning", "Learning work-group sizes");
    if studies.is_empty() {
        b.missing(
            "The store holds no learning evaluation: run `ndtune learn eval --data CSV --db STORE`.",
        );
        return;
    }
    for (i, st) in studies.iter().enumerate() {
        let r = &st.body;
        b.heading(3, &format!("learning-{}", i + 1), st.name.clone());
        let base = r.baseline.as_ref().map_or(String::new(), |x| {
            format!(
                " The best fixed size over all data, {}x{}, reaches {} of the oracle.",
                x.size[0],
                x.size[1],
                percent(x.performance_geomean)
            )
        });
        b.para(format!(
            "Protocol {}: {} scenarios in {} folds; the oracle is {} faster than the worst legal \
             size on average.{base} Accuracy: the prediction was the oracle; validity: it was \
             legal (before Algorithm 1's fallback); performance: oracle time / chosen size's \
             time (geometric mean); speedups are medians.",
            r.protocol,
            r.scenarios,
            r.folds,
            times(r.mean_spread)
        ));
        b.table(
            &[
                "model",
                "fallback",
                "accuracy",
                "validity",
                "refused",
                "performance",
                "over baseline",
                "over expert",
                "predict µs",
            ],
            r.results
                .iter()
                .map(|m| {
                    vec![
                        m.model.clone(),
                        m.fallback.clone(),
                        percent(m.accuracy),
                        percent(m.validity),
                        percent(m.refused),
                        percent(m.performance_geomean),
                        times(Some(m.speedup_over_baseline_median)),
                        times(m.speedup_over_expert_median),
                        format!("{:.1}", m.predict_us),
                    ]
                })
                .collect(),
        );
        let rows =
            |f: fn(&ndtune_learn::eval::MethodResult) -> &Vec<f64>| -> Vec<(String, Vec<f64>)> {
                r.results
                    .iter()
                    .map(|m| (format!("{} / {}", m.model, m.fallback), f(m).clone()))
                    .collect()
            };
        let panels = [
            (
                rows(|m| &m.performance),
                "performance relative to the oracle",
                None,
                "Performance relative to the oracle per test scenario, per model and fallback \
                 handler (box: quartiles; whiskers: minimum and maximum; red: median; dots: \
                 scenarios), as in Cummins et al. 2016, Fig. 4.",
            ),
            (
                rows(|m| &m.speedups_over_baseline),
                "speedup over the baseline",
                None,
                "Speedup of each method's choice over the baseline size per test scenario (1: as \
                 fast, dashed), as in Cummins et al. 2016, Fig. 5.",
            ),
            (
                rows(|m| &m.speedups_over_expert),
                "speedup over the human expert (32x4)",
                Some(2.5),
                "Speedup over the human expert's 32x4 where it is legal (1: as fast, dashed); the \
                 axis ends at 2.5 as in Cummins et al. 2016, Fig. 6, so larger speedups are drawn at 2.5.",
            ),
        ];
        if panels.iter().all(|p| p.0.iter().all(|(_, v)| v.is_empty())) {
            b.missing(
                "This evaluation was kept without per-scenario values: run `ndtune learn eval --db` again for the distributions.",
            );
            continue;
        }
        for (rows, x_label, clip, caption) in panels {
            if rows.iter().all(|(_, v)| v.is_empty()) {
                b.missing(format!("No scenario has a value of {x_label}."));
                continue;
            }
            let alt = format!(
                "{x_label}, median per method: {}.",
                rows.iter()
                    .map(|(m, v)| format!(
                        "{m} {}",
                        median(v).map_or("-".into(), |x| format!("{x:.3}"))
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            b.figure(
                Figure::Distribution(Distribution {
                    title: format!("{}: {x_label}", st.name),
                    x_label: x_label.into(),
                    rows,
                    reference: Some(1.0),
                    clip,
                }),
                alt,
                caption,
            );
        }
    }
}

/// The median of finite values (the upper one of an even count), `None` where there are none.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    #[test]
    fn digits_are_grouped_by_thousands() {
        assert_eq!(super::digits(0), "0");
        assert_eq!(super::digits(999), "999");
        assert_eq!(super::digits(1000), "1,000");
        assert_eq!(super::digits(19_660_800), "19,660,800");
    }
}
