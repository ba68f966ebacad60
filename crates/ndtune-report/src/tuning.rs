//! The tuning section of the page: per tuned campaign (kernel, constants, device) its
//! convergence in the order the configurations were evaluated, the distribution of its measured
//! values with every outcome counted, and the effect of each parameter (per value the best and the
//! median value, as small multiples; a heatmap where there are exactly two parameters); then, per
//! kernel tuned on several devices, a comparison across them. Values are those of the campaign's
//! objective (the time, unless its last run named a metric), and every title, axis and table
//! says which, with its unit. Every figure has alt text and its numbers are in a table, so the
//! page reads without the figures.
//!
//! A campaign of thousands of evaluations keeps the page small: its convergence draws at most
//! [`MAX_POINTS`] points (every improvement among them) and says so; the other figures and every
//! table are aggregates of all evaluations.

use crate::document::{config, constants, median, times, with_constants, Builder};
use crate::figures::{
    Bar, BarKind, Bars, Cell, Convergence, Effect, Effects, Figure, FrontScatter, Heatmap,
    Histogram, Timeline,
};
use crate::model::{Campaign, DeviceSection, Evaluation, Report};
use ndtune_core::OutcomeKind;
use ndtune_core::Value;
use std::collections::BTreeMap;

/// The most evaluations a convergence figure draws as points (measured, and refused or failed).
pub const MAX_POINTS: usize = 400;
/// The most values of either parameter for which the two-parameter heatmap is drawn.
pub const MAX_HEATMAP_VALUES: usize = 40;
/// Bins of the distribution of measured values.
const BINS: usize = 24;

/// A tuned campaign with its device and the device's number on the page (1-based).
type Tuned<'a> = (usize, &'a DeviceSection, &'a Campaign);

/// The section: every tuned campaign, then the comparison across devices.
pub(crate) fn section(b: &mut Builder, r: &Report) {
    b.heading(2, "tuning", "Tuning campaigns");
    let tuned: Vec<Tuned> = r
        .devices
        .iter()
        .enumerate()
        .flat_map(|(i, d)| {
            d.campaigns
                .iter()
                .filter(|c| !c.collected && !c.evaluations.is_empty())
                .map(move |c| (i + 1, d, c))
        })
        .collect();
    if tuned.is_empty() {
        b.missing("The store holds no tuning campaign: run `ndtune tune SPEC --db STORE`.");
        return;
    }
    b.para(
        "Per kernel and device: the best value of the campaign's objective found against the \
         evaluations in the order they ran (the campaign's convergence), the distribution of the \
         measured values with every outcome counted, and the effect of each parameter: for each \
         of its values, the best and the median value of the configurations with that value. The \
         objective is the time unless the campaign's last run named another (`ndtune tune \
         --objective`, `[objective]`); its metrics are computed from the stored measurements with \
         the formulas of that run.",
    );
    for (k, t) in tuned.iter().enumerate() {
        campaign(b, k + 1, t);
    }
    across(b, &tuned);
}

/// The heading: kernel, constants, the device's number on the page and its name.
fn title((n, d, c): &Tuned) -> String {
    format!("{} ({})", short(&(*n, *d, *c)), d.name)
}

/// What figure titles say: kernel, constants and the device's number (and the setup of an
/// earlier campaign).
fn short((n, _, c): &Tuned) -> String {
    let earlier = match c.earlier {
        Some(_) => format!(", earlier campaign (setup {})", c.setup),
        None => String::new(),
    };
    format!(
        "{}{} on device {n}{earlier}",
        c.kernel,
        with_constants(&c.constants)
    )
}

/// `measured 20, refused 3`.
fn outcome_counts(c: &Campaign) -> String {
    c.outcomes
        .iter()
        .map(|(k, n)| format!("{} {n}", k.as_str().replace('_', " ")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn campaign(b: &mut Builder, k: usize, t: &Tuned) {
    let (_, _, c) = *t;
    b.heading(3, &format!("tuning-{k}"), title(t));
    let name = short(t);
    let n = c.evaluations.len();
    let (better, worse) = if c.by_time() {
        ("faster", "slowest")
    } else {
        ("better", "worst")
    };
    let best = match &c.best {
        Some((cfg, v)) => format!(
            " The best is {} at {}, {} {better} than the median and {} than the {worse} \
             measured configuration.",
            config(cfg),
            c.show(*v),
            times(c.speedups().map(|s| s.1)),
            times(c.speedups().map(|s| s.0))
        ),
        None => String::new(),
    };
    let objective = if c.by_time() {
        String::new()
    } else {
        format!(" Objective: {}, {}.", c.label(), c.objective.direction())
    };
    if let Some(e) = &c.earlier {
        b.para(format!(
            "An earlier campaign: this kernel with these constants was tuned on this device again \
             under setup {}, which did not reuse these results. From this campaign's setup to \
             that one: {}.",
            e.newest,
            e.differences.join("; ")
        ));
    }
    b.para(format!(
        "{n} configurations evaluated: {}.{objective}{best}",
        outcome_counts(c)
    ));
    if !c.best_metrics.is_empty() {
        b.para("The best configuration's energy, power and metrics:");
        b.table(
            &["metric", "value"],
            c.best_metrics
                .iter()
                .map(|(name, v)| {
                    let unit = c.units.get(name).map_or(String::new(), |u| format!(" {u}"));
                    vec![
                        name.clone(),
                        format!("{}{unit}", crate::document::value(*v)),
                    ]
                })
                .collect(),
        );
    }
    if c.best.is_none() {
        b.missing(
            "No configuration was measured, so there is nothing to draw: the counts above say \
             what happened to each.",
        );
        return;
    }
    front(b, &name, c);
    convergence(b, &name, c);
    histogram(b, &name, c);
    effects(b, &name, c);
    for view in by_other_objectives(c) {
        effects(b, &name, &view);
    }
    timeline(b, &name, c);
}

/// With several objectives, the campaign as each objective after the first sees it (its values
/// in place of the first objective's), so that each parameter's effect shows per objective.
fn by_other_objectives(c: &Campaign) -> Vec<Campaign> {
    let Some(f) = &c.front else {
        return Vec::new();
    };
    let values: BTreeMap<String, &Vec<f64>> = f
        .points
        .iter()
        .map(|(config, v)| (ndtune_core::config_key(config), v))
        .collect();
    (1..f.objectives.len())
        .map(|k| {
            let objective = f.objectives[k].clone();
            let evaluations: Vec<Evaluation> = c
                .evaluations
                .iter()
                .map(|e| Evaluation {
                    value: values
                        .get(&ndtune_core::config_key(&e.config))
                        .map(|v| v[k]),
                    ..e.clone()
                })
                .collect();
            let mut ranked: Vec<(&ndtune_core::Config, f64)> = evaluations
                .iter()
                .filter_map(|e| Some((&e.config, e.value?)))
                .collect();
            ranked.sort_by(|a, b| {
                let (a, b) = (objective.cost(a.1), objective.cost(b.1));
                a.unwrap_or(f64::INFINITY)
                    .total_cmp(&b.unwrap_or(f64::INFINITY))
            });
            Campaign {
                best: ranked.first().map(|(config, v)| ((*config).clone(), *v)),
                median: ranked.get(ranked.len() / 2).map(|r| r.1),
                worst: ranked.last().map(|r| r.1),
                best_metrics: BTreeMap::new(),
                objective,
                evaluations,
                front: None,
                ..c.clone()
            }
        })
        .collect()
}

/// With several objectives: the front as a table, and a scatter per pair of objectives.
fn front(b: &mut Builder, name: &str, c: &Campaign) {
    let Some(f) = &c.front else {
        return;
    };
    let labels: Vec<String> = f.objectives.iter().map(|o| c.labelled(&o.metric)).collect();
    let said: Vec<String> = f
        .objectives
        .iter()
        .zip(&labels)
        .map(|(o, l)| format!("{l}, {}", o.direction()))
        .collect();
    b.para(format!(
        "Several objectives ({}): {} of the {} configurations measured with a value of each are \
         on the Pareto front, where none is better in every objective, best by the first \
         objective first:",
        said.join("; "),
        f.members.len(),
        f.points.len()
    ));
    let mut head: Vec<&str> = vec!["configuration"];
    head.extend(labels.iter().map(String::as_str));
    b.table(
        &head,
        f.members
            .iter()
            .map(|&i| {
                let (cfg, values) = &f.points[i];
                let mut row = vec![config(cfg)];
                row.extend(values.iter().map(|v| crate::document::value(*v)));
                row
            })
            .collect(),
    );
    for x in 0..f.objectives.len() {
        for y in x + 1..f.objectives.len() {
            let pair = |v: &Vec<f64>| (v[x], v[y]);
            let mut on: Vec<(f64, f64)> = f.members.iter().map(|&i| pair(&f.points[i].1)).collect();
            on.sort_by(|a, b| a.0.total_cmp(&b.0));
            let direction = |k: usize| {
                if f.objectives[k].higher_is_better {
                    "higher"
                } else {
                    "lower"
                }
            };
            b.figure(
                Figure::Front(FrontScatter {
                    title: format!(
                        "{name}: {} against {}",
                        f.objectives[y].metric, f.objectives[x].metric
                    ),
                    x_label: format!("{}, {} is better", labels[x], direction(x)),
                    y_label: format!("{}, {} is better", labels[y], direction(y)),
                    points: f.points.iter().map(|(_, v)| pair(v)).collect(),
                    front: on,
                    higher_is_better: (
                        f.objectives[x].higher_is_better,
                        f.objectives[y].higher_is_better,
                    ),
                }),
                format!(
                    "The front of {name}: {} against {}",
                    f.objectives[y].metric, f.objectives[x].metric
                ),
                format!(
                    "Every measured configuration of {name} by {} and {}; the configurations on \
                     the Pareto front of all the objectives are marked{}.",
                    labels[x],
                    labels[y],
                    if f.objectives.len() > 2 {
                        " (with three or more objectives some lie behind others in this pair)"
                    } else {
                        ""
                    }
                ),
            );
        }
    }
}

/// Where workers shared the campaign: what each evaluated when.
fn timeline(b: &mut Builder, name: &str, c: &Campaign) {
    let mut lanes: Vec<String> = c.timeline.iter().map(|s| s.worker.clone()).collect();
    lanes.sort();
    lanes.dedup();
    if lanes.len() < 2 {
        return;
    }
    let Some(first) = c.timeline.iter().map(|s| s.start_ms).min() else {
        return;
    };
    let seconds = |ms: i64| (ms - first) as f64 / 1000.0;
    let spans = c
        .timeline
        .iter()
        .map(|s| {
            let lane = lanes
                .binary_search(&s.worker)
                .expect("every worker has a lane");
            (lane, seconds(s.start_ms), seconds(s.end_ms), s.outcome)
        })
        .collect();
    let busy: Vec<String> = lanes
        .iter()
        .map(|w| {
            let mine = c.timeline.iter().filter(|s| &s.worker == w);
            let (n, ms) = mine.fold((0, 0), |(n, ms), s| (n + 1, ms + (s.end_ms - s.start_ms)));
            format!("{w} {n} in {:.1} s", ms as f64 / 1000.0)
        })
        .collect();
    let caption = format!(
        "What each of the {} workers that shared the campaign evaluated when: a bar from an \
         evaluation's start to its result (waiting for its build, launches, verification), \
         coloured by its outcome. Evaluations per worker and their time: {}.",
        lanes.len(),
        busy.join("; ")
    );
    b.figure(
        Figure::Timeline(Timeline {
            title: format!("{name}: workers"),
            lanes,
            spans,
            x_label: "seconds from the campaign's first evaluation".into(),
        }),
        format!("Timeline of the workers of {name}"),
        caption,
    );
}

/// (evaluation number from 1, best value so far) at each improvement of the objective.
fn improvements(c: &Campaign) -> Vec<(usize, f64)> {
    let mut best: Option<f64> = None;
    let mut out = Vec::new();
    for (i, e) in c.evaluations.iter().enumerate() {
        if let Some(v) = e.value {
            if best.is_none_or(|b| c.objective.better(v, b)) {
                best = Some(v);
                out.push((i + 1, v));
            }
        }
    }
    out
}

/// At most `max` of `items`, evenly spread, and every item `keep` says must stay.
fn subsample<T: Copy>(items: &[T], max: usize, keep: impl Fn(&T) -> bool) -> Vec<T> {
    if items.len() <= max {
        return items.to_vec();
    }
    let stride = items.len().div_ceil(max);
    items
        .iter()
        .enumerate()
        .filter(|(i, x)| i % stride == 0 || keep(x))
        .map(|(_, x)| *x)
        .collect()
}

fn convergence(b: &mut Builder, name: &str, c: &Campaign) {
    let n = c.evaluations.len();
    let best = improvements(c);
    let measured: Vec<(usize, f64)> = c
        .evaluations
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.value.map(|t| (i + 1, t)))
        .collect();
    let failed: Vec<usize> = c
        .evaluations
        .iter()
        .enumerate()
        .filter(|(_, e)| e.value.is_none() && e.outcome != OutcomeKind::Pruned)
        .map(|(i, _)| i + 1)
        .collect();
    let drawn = subsample(&measured, MAX_POINTS, |p| best.contains(p));
    let drawn_failed = subsample(&failed, MAX_POINTS, |_| false);
    let (last_i, last_t) = *best.last().expect("something was measured");
    let shown: Vec<String> = best
        .iter()
        .take(12)
        .map(|(i, t)| format!("{} at {i}", c.show(*t)))
        .collect();
    let alt = format!(
        "Convergence of {name}: the best {} improved {} times over {n} evaluations, to {} at \
         evaluation {last_i} ({}{}).",
        c.label(),
        best.len(),
        c.show(last_t),
        shown.join(", "),
        if best.len() > shown.len() {
            ", ..."
        } else {
            ""
        }
    );
    b.figure(
        Figure::Convergence(Convergence {
            title: format!("{name}: convergence of {}", c.objective.metric),
            axis: c.label(),
            evaluations: n,
            measured: drawn.clone(),
            failed: drawn_failed.clone(),
            best,
        }),
        alt,
        format!(
            "Every measured configuration's {} (dots) in the order evaluated, and the best found \
             so far (the line, a dot at each improvement); refused or failed evaluations are \
             ticked along the bottom. The axis is logarithmic.",
            c.label()
        ),
    );
    if drawn.len() < measured.len() || drawn_failed.len() < failed.len() {
        b.para(format!(
            "The convergence draws {} of the {} measured and {} of the {} refused or failed \
             evaluations, evenly spread with every improvement kept, so that the page stays \
             small: a subsample of the points, not of the data. The best-so-far line, the other \
             figures and the tables use every evaluation.",
            drawn.len(),
            measured.len(),
            drawn_failed.len(),
            failed.len()
        ));
    }
}

fn histogram(b: &mut Builder, name: &str, c: &Campaign) {
    let mut times: Vec<f64> = c.evaluations.iter().filter_map(|e| e.value).collect();
    times.sort_by(f64::total_cmp);
    let (lo, hi) = (times[0], times[times.len() - 1]);
    let (a, z) = if hi > lo {
        (lo.ln(), hi.ln())
    } else {
        ((lo * 0.95).ln(), (hi * 1.05).ln())
    };
    let width = (z - a) / BINS as f64;
    let mut bins: Vec<(f64, f64, usize)> = (0..BINS)
        .map(|i| {
            (
                (a + i as f64 * width).exp(),
                (a + (i + 1) as f64 * width).exp(),
                0,
            )
        })
        .collect();
    for t in &times {
        let i = (((t.ln() - a) / width).floor().max(0.0) as usize).min(BINS - 1);
        bins[i].2 += 1;
    }
    let q = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    let alt = format!(
        "Distribution of the {} measured values of {} of {name}: from {} to {}, quartiles {}, {} \
         and {}. Outcomes: {}.",
        times.len(),
        c.label(),
        c.show(lo),
        c.show(hi),
        c.show(q(0.25)),
        c.show(q(0.5)),
        c.show(q(0.75)),
        outcome_counts(c)
    );
    b.figure(
        Figure::Histogram(Histogram {
            title: format!("{name}: measured {}", c.objective.metric),
            axis: c.label(),
            bins,
            outcomes: c.outcomes.iter().map(|(k, n)| (*k, *n)).collect(),
        }),
        alt,
        format!(
            "How many configurations measured in each band of {} (bands of equal width on a \
             logarithmic axis), and how many evaluations ended in each outcome: measured, \
             refused by the driver, or failed (build, wrong result, crash, timeout).",
            c.label()
        ),
    );
}

/// Per parameter, per value (ascending): evaluations, measured values of the objective.
type ByValue = BTreeMap<String, BTreeMap<Value, (usize, Vec<f64>)>>;

fn by_value(c: &Campaign) -> ByValue {
    let mut out: ByValue = BTreeMap::new();
    for e in &c.evaluations {
        for (p, v) in &e.config {
            let slot = out
                .entry(p.clone())
                .or_default()
                .entry(v.clone())
                .or_default();
            slot.0 += 1;
            slot.1.extend(e.value);
        }
    }
    out
}

/// The best (by the objective) and the median of some values.
fn best_and_median(c: &Campaign, values: &[f64]) -> Option<(f64, f64)> {
    let best = values
        .iter()
        .copied()
        .reduce(|a, b| if c.objective.better(b, a) { b } else { a })?;
    Some((best, median(values)?))
}

fn effects(b: &mut Builder, name: &str, c: &Campaign) {
    let params = by_value(c);
    if params.is_empty() {
        return;
    }
    let panels: Vec<Effect> = params
        .iter()
        .map(|(p, values)| Effect {
            param: p.clone(),
            values: values
                .iter()
                .map(|(v, (_, t))| (v.to_string(), best_and_median(c, t)))
                .collect(),
        })
        .collect();
    let alt = format!(
        "Effect of each parameter on {name}, the value with the best {}: {}.",
        c.label(),
        panels
            .iter()
            .map(|p| {
                p.values
                    .iter()
                    .filter_map(|(v, x)| x.map(|x| (v, x.0)))
                    .reduce(|a, b| if c.objective.better(b.1, a.1) { b } else { a })
                    .map_or(format!("{} -", p.param), |(v, t)| {
                        format!("{}={v} ({})", p.param, c.show(t))
                    })
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    b.figure(
        Figure::Effects(Effects {
            title: format!("{name}: effect of each parameter on {}", c.objective.metric),
            axis: c.label(),
            panels,
        }),
        alt,
        format!(
            "One panel per parameter: for each of its values, the best (blue) and the median \
             (orange) measured {} of the configurations with that value; one logarithmic axis \
             for all panels, so that the parameters compare. Where the lines are flat, the \
             parameter matters little.",
            c.label()
        ),
    );
    let (best_head, median_head) = (
        format!("best {}", c.label()),
        format!("median {}", c.label()),
    );
    b.table(
        &[
            "parameter",
            "value",
            "evaluated",
            "measured",
            &best_head,
            &median_head,
        ],
        params
            .iter()
            .flat_map(|(p, values)| {
                values.iter().map(move |(v, (n, t))| {
                    let bm = best_and_median(c, t);
                    vec![
                        p.clone(),
                        v.to_string(),
                        n.to_string(),
                        t.len().to_string(),
                        bm.map_or("-".into(), |x| crate::document::value(x.0)),
                        bm.map_or("-".into(), |x| crate::document::value(x.1)),
                    ]
                })
            })
            .collect(),
    );
    if params.len() == 2 {
        pair(b, name, c, &params);
    }
}

/// The heatmap of a campaign with two parameters: the first across, the second down.
fn pair(b: &mut Builder, name: &str, c: &Campaign, params: &ByValue) {
    let mut it = params.iter();
    let (px, xs) = it.next().expect("two parameters");
    let (py, ys) = it.next().expect("two parameters");
    if xs.len() > MAX_HEATMAP_VALUES || ys.len() > MAX_HEATMAP_VALUES {
        b.para(format!(
            "No heatmap of {px} against {py}: {} by {} values is more than {MAX_HEATMAP_VALUES} \
             a side; the panels and the table above show each parameter.",
            xs.len(),
            ys.len()
        ));
        return;
    }
    let xs: Vec<Value> = xs.keys().cloned().collect();
    let ys: Vec<Value> = ys.keys().cloned().collect();
    let mut cell: BTreeMap<(Value, Value), Vec<&Evaluation>> = BTreeMap::new();
    for e in &c.evaluations {
        if let (Some(x), Some(y)) = (e.config.get(px), e.config.get(py)) {
            cell.entry((x.clone(), y.clone())).or_default().push(e);
        }
    }
    let (best_cfg, best) = c.best.clone().expect("something was measured");
    let worst = c.worst.unwrap_or(best);
    let cost = |v: f64| c.objective.cost(v).expect("measured values have a cost");
    let span = (cost(worst) / cost(best)).ln();
    let cells: Vec<Cell> = ys
        .iter()
        .flat_map(|y| xs.iter().map(move |x| (x.clone(), y.clone())))
        .map(|key| {
            let es = cell.get(&key).map_or(&[][..], Vec::as_slice);
            let best_here = es.iter().filter_map(|e| e.value).reduce(|a, b| {
                if c.objective.better(b, a) {
                    b
                } else {
                    a
                }
            });
            if let Some(t) = best_here {
                Cell::Value {
                    shade: if span > 0.0 {
                        1.0 - (cost(t) / cost(best)).ln() / span
                    } else {
                        1.0
                    },
                    text: crate::document::value(t),
                }
            } else if es.iter().any(|e| e.outcome == OutcomeKind::Refused) {
                Cell::Refused
            } else if es
                .iter()
                .any(|e| !matches!(e.outcome, OutcomeKind::Pruned | OutcomeKind::Measured))
            {
                Cell::Failed
            } else {
                Cell::Illegal
            }
        })
        .collect();
    let circled = match (best_cfg.get(px), best_cfg.get(py)) {
        (Some(x), Some(y)) => xs
            .iter()
            .position(|v| v == x)
            .zip(ys.iter().position(|v| v == y)),
        _ => None,
    };
    let count = |f: fn(&Cell) -> bool| cells.iter().filter(|c| f(c)).count();
    let alt = format!(
        "Best {} of {name} per pair of {px} (across, {} values) and {py} (down, {} values): the \
         best is {} at {}; {} pairs measured, {} refused, {} failed, {} not evaluated.",
        c.label(),
        xs.len(),
        ys.len(),
        config(&best_cfg),
        c.show(best),
        count(|c| matches!(c, Cell::Value { .. })),
        count(|c| *c == Cell::Refused),
        count(|c| *c == Cell::Failed),
        count(|c| *c == Cell::Illegal)
    );
    b.figure(
        Figure::Heatmap(Heatmap {
            title: format!("{name}: {px} x {py}"),
            columns: xs.iter().map(Value::to_string).collect(),
            x_label: px.clone(),
            rows: ys.iter().map(Value::to_string).collect(),
            y_label: py.clone(),
            cells,
            circled,
            circled_label: "best".into(),
            illegal_label: "pruned or not evaluated".into(),
            scale: (
                format!(
                    "{:.2}x {}",
                    cost(worst) / cost(best),
                    if c.by_time() { "slower" } else { "worse" }
                ),
                "best".into(),
            ),
        }),
        alt,
        format!(
            "The best {} of each pair of {px} and {py}, like the work-group heatmaps of Cummins \
             et al. 2016, Fig. 1. Colour: relative to the best on a logarithmic scale (yellow: \
             the best, dark: the worst); grey ×: refused by the driver; red !: failed; struck \
             out: pruned or not evaluated; circled: the best.",
            c.label()
        ),
    );
}

/// Per kernel, constants and objective tuned on several devices: best and median value per
/// device, and how each device's best configuration does on the others.
fn across(b: &mut Builder, tuned: &[Tuned]) {
    b.heading(3, "tuning-across", "Across devices");
    let mut groups: BTreeMap<(String, String, String), Vec<&Tuned>> = BTreeMap::new();
    for t in tuned
        .iter()
        .filter(|t| t.2.best.is_some() && t.2.earlier.is_none())
    {
        let objective = format!("{}, {}", t.2.label(), t.2.objective.direction());
        groups
            .entry((t.2.kernel.clone(), constants(&t.2.constants), objective))
            .or_default()
            .push(t);
    }
    groups.retain(|_, ts| ts.len() > 1);
    if groups.is_empty() {
        b.para(
            "Every kernel here was measured on one device: tune it on another \
             (`ndtune tune SPEC --device SEL --db STORE`) to compare devices here.",
        );
        return;
    }
    for ((kernel, consts, _), ts) in groups {
        let label = if consts.is_empty() {
            kernel.clone()
        } else {
            format!("{kernel} {consts}")
        };
        let first = ts[0].2;
        let axis = first.label();
        let bars: Vec<Bar> = ts
            .iter()
            .flat_map(|(n, _, c)| {
                let (_, best) = c.best.clone().expect("measured");
                [
                    Bar {
                        label: format!("device {n}\nbest"),
                        value: best,
                        kind: BarKind::Best,
                    },
                    Bar {
                        label: format!("device {n}\nmedian"),
                        value: c.median.unwrap_or(best),
                        kind: BarKind::Median,
                    },
                ]
            })
            .collect();
        let alt = format!(
            "{label} across {} devices, best and median {axis}: {}.",
            ts.len(),
            ts.iter()
                .map(|(n, _, c)| format!(
                    "device {n} {} and {}",
                    c.show(c.best.as_ref().expect("measured").1),
                    c.median.map_or("-".into(), |m| c.show(m))
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        b.figure(
            Figure::Bars(Bars {
                title: format!("{label}: across devices"),
                y_label: axis.clone(),
                bars,
            }),
            alt,
            format!(
                "Per device, the best {axis} tuning found (dark) and the median measured one \
                 (light)."
            ),
        );
        // How each device's best configuration does on every device: its value there, and how
        // much worse than that device's own best.
        let mut head: Vec<String> = [
            "device".to_string(),
            "best configuration".to_string(),
            format!("best {axis}"),
            format!("median {axis}"),
        ]
        .to_vec();
        head.extend(ts.iter().map(|(n, _, _)| format!("on device {n}")));
        let rows = ts
            .iter()
            .map(|(n, d, c)| {
                let (cfg, best) = c.best.clone().expect("measured");
                let mut row = vec![
                    format!("{n}: {}", d.name),
                    config(&cfg),
                    crate::document::value(best),
                    c.median.map_or("-".into(), crate::document::value),
                ];
                row.extend(ts.iter().map(|(_, _, other)| {
                    let there = other
                        .evaluations
                        .iter()
                        .find(|e| e.config == cfg)
                        .map(|e| (e.outcome, e.value));
                    let own = other.best.as_ref().expect("measured").1;
                    let o = &other.objective;
                    match there {
                        Some((_, Some(t))) => format!(
                            "{} ({})",
                            other.show(t),
                            times(o.cost(t).zip(o.cost(own)).map(|(t, own)| t / own))
                        ),
                        Some((k, None)) => k.as_str().replace('_', " "),
                        None => "not evaluated".into(),
                    }
                }));
                row
            })
            .collect();
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        b.para(format!(
            "Each device's best configuration of {label} on every device: its {axis} there and \
             how much worse it is than that device's own best (1.00x: the same)."
        ));
        b.table(&head, rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{document, Block};
    use ndtune_core::{Config, Outcome, Timing};
    use ndtune_store::{Record, ResultKey, Store};

    /// A store with `kernel` tuned on each of `devices` (built-in profiles): every configuration
    /// of `params` (name, values), in order, its time from `time` (`None`: refused).
    fn tuned(
        dir: &std::path::Path,
        devices: &[&str],
        params: &[(&str, &[i64])],
        time: impl Fn(usize, &Config) -> Option<f64>,
    ) -> Store {
        let store = Store::open(dir.join("t.db")).unwrap();
        let mut configs: Vec<Config> = vec![Config::new()];
        for (p, values) in params {
            configs = configs
                .iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(p.to_string(), (*v).into());
                        c
                    })
                })
                .collect();
        }
        for (d, name) in devices.iter().enumerate() {
            let fp = store
                .put_device(&ndtune_device::builtin::find(name).unwrap())
                .unwrap();
            for (i, cfg) in configs.iter().enumerate() {
                let outcome = match time(d, cfg) {
                    Some(ms) => Outcome::Measured(Timing::new(vec![ms], 1)),
                    None => Outcome::Refused {
                        error: "-54".into(),
                    },
                };
                store
                    .insert(&Record {
                        key: ResultKey {
                            device: fp.clone(),
                            kernel: "k".into(),
                            source_hash: "h".into(),
                            setup: "5e7a5e7a5e7a5e7a".into(),
                            constants: ndtune_core::int_config([("N", 64)]),
                            config: cfg.clone(),
                        },
                        outcome,
                        ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
                        // Evaluated in reverse of the insertion order.
                        started_at: 10_000 - i as i64,
                        finished_at: 10_001 - i as i64,
                    })
                    .unwrap();
            }
        }
        store
    }

    fn figures(store: &Store) -> Vec<Figure> {
        let r = Report::read(store).unwrap();
        document(&r).figures().map(|(_, f)| f.clone()).collect()
    }

    #[test]
    fn two_parameters_give_convergence_distribution_effects_and_a_heatmap_of_the_pair() {
        let dir = tempfile::tempdir().unwrap();
        let xs: &[i64] = &[1, 2, 4, 8];
        let store = tuned(
            dir.path(),
            &["gt550m"],
            &[("X", xs), ("Y", &[1, 2, 4])],
            |_, c| {
                let int = |n: &str| c[n].as_int().unwrap();
                let (x, y) = (int("X"), int("Y"));
                (x * y <= 16).then(|| 1.0 + ((x - 4).abs() + (y - 2).abs()) as f64)
            },
        );
        let f = figures(&store);
        assert_eq!(f.len(), 4, "{f:?}");
        let Figure::Convergence(conv) = &f[0] else {
            panic!("{:?}", f[0])
        };
        assert_eq!(conv.evaluations, 12);
        // Evaluation order is by `started_at`: the last configuration inserted ran first.
        // X=8 Y=4 first (refused), then X=8 Y=2.
        assert_eq!(
            (conv.failed.clone(), conv.measured[0]),
            (vec![1], (2, 1.0 + 4.0))
        );
        assert_eq!(conv.best.last().unwrap().1, 1.0);
        let Figure::Histogram(h) = &f[1] else {
            panic!("{:?}", f[1])
        };
        assert_eq!(h.bins.iter().map(|b| b.2).sum::<usize>(), 11);
        assert_eq!(
            h.outcomes,
            vec![(OutcomeKind::Measured, 11), (OutcomeKind::Refused, 1)]
        );
        let Figure::Effects(e) = &f[2] else {
            panic!("{:?}", f[2])
        };
        let x = &e.panels[0];
        assert_eq!((x.param.as_str(), x.values.len()), ("X", 4));
        assert_eq!(x.values[2], ("4".into(), Some((1.0, 2.0))));
        let Figure::Heatmap(m) = &f[3] else {
            panic!("{:?}", f[3])
        };
        assert_eq!((m.x_label.as_str(), m.y_label.as_str()), ("X", "Y"));
        assert_eq!(m.circled, Some((2, 1)), "the best, X=4 Y=2");
        assert_eq!(m.cells[2 * 4 + 3], Cell::Refused, "X=8 Y=4");
        // One device only: no comparison, and nothing reported missing.
        let doc = document(&Report::read(&store).unwrap());
        let text = format!("{:?}", doc.blocks);
        assert!(text.contains("measured on one device"), "{text}");
        assert!(!doc.blocks.iter().any(
            |b| matches!(b, Block::Missing(_)) && format!("{b:?}").contains("tuning campaign")
        ));
    }

    #[test]
    fn thousands_of_evaluations_on_two_devices_stay_a_small_page_that_says_it_subsampled() {
        let dir = tempfile::tempdir().unwrap();
        let v: Vec<i64> = (1..=16).collect();
        let w: Vec<i64> = (1..=12).collect();
        let store = tuned(
            dir.path(),
            &["gt550m", "hd4600"],
            &[("A", &v), ("B", &w), ("C", &[1, 2, 4])],
            |d, c| {
                let int = |n: &str| c[n].as_int().unwrap();
                let x = (int("A") * 7 + int("B") * 13 + int("C") * 5) % 97;
                (x % 11 != 0).then(|| (d + 1) as f64 * (0.5 + x as f64 / 10.0))
            },
        );
        let r = Report::read(&store).unwrap();
        assert_eq!(r.devices[0].campaigns[0].evaluations.len(), 16 * 12 * 3);
        let doc = document(&r);
        let kinds: Vec<&str> = doc
            .figures()
            .map(|(_, f)| match f {
                Figure::Convergence(c) => {
                    assert!(
                        c.measured.len() <= MAX_POINTS + c.best.len(),
                        "{}",
                        c.measured.len()
                    );
                    "convergence"
                }
                Figure::Histogram(_) => "histogram",
                Figure::Effects(e) => {
                    assert_eq!(e.panels.len(), 3, "small multiples of three parameters");
                    "effects"
                }
                Figure::Bars(b) => {
                    assert_eq!(b.bars.len(), 4, "best and median of two devices");
                    "across"
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "convergence",
                "histogram",
                "effects",
                "convergence",
                "histogram",
                "effects",
                "across"
            ]
        );
        let page = crate::html::render(&doc).unwrap();
        assert!(page.len() < 3_000_000, "{} bytes", page.len());
        assert!(page.contains("a subsample of the points, not of the data"));
        // Each device's best configuration, timed on the other.
        assert!(page.contains("<th>on device 2</th>"));
        assert!(page.contains("role=\"img\" aria-label=\"Convergence of k N=64 on device 1"));
    }

    #[test]
    fn a_campaign_with_an_objective_is_drawn_and_ranked_by_it_with_its_unit() {
        let dir = tempfile::tempdir().unwrap();
        // Time grows with X, and a rate of X * X / time with it: its best is the slowest.
        let xs: &[i64] = &[1, 2, 4, 8];
        let store = tuned(dir.path(), &["gt550m"], &[("X", xs)], |_, c| {
            Some(c["X"].as_int().unwrap() as f64)
        });
        let g = store.groups().unwrap().remove(0);
        let defs = ndtune_metrics::Definitions {
            metrics: vec![ndtune_metrics::MetricDef::new(
                "rate",
                "X * X / time",
                Some("X/ms"),
            )],
            objective: ndtune_metrics::Objective {
                metric: "rate".into(),
                higher_is_better: true,
            },
            more_objectives: Vec::new(),
        };
        store.put_metrics(&g, &defs).unwrap();
        let r = Report::read(&store).unwrap();
        let c = &r.devices[0].campaigns[0];
        assert_eq!(c.best, Some((ndtune_core::int_config([("X", 8)]), 8.0)));
        assert_eq!((c.worst, c.label()), (Some(1.0), "rate (X/ms)".to_string()));
        assert_eq!(
            c.speedups(),
            Some((8.0, 4.0)),
            "best / worst and best / median rate"
        );
        assert_eq!(c.best_metrics["rate"], 8.0);
        let doc = document(&r);
        let Some((_, Figure::Convergence(conv))) = doc.figures().next() else {
            panic!("a convergence first")
        };
        assert_eq!(conv.axis, "rate (X/ms)");
        // Evaluated from X = 8 down: the first is the best, a running maximum.
        assert_eq!(conv.best, vec![(1, 8.0)]);
        let page = crate::html::render(&doc).unwrap();
        assert!(
            page.contains("Objective: rate (X/ms), higher is better."),
            "objective named"
        );
        assert!(page.contains("at 8.000 X/ms"), "the best with its unit");
        assert!(
            page.contains("<th>best rate (X/ms)</th>"),
            "tables say which values"
        );
    }

    fn eval(value: Option<f64>) -> Evaluation {
        Evaluation {
            config: Default::default(),
            outcome: if value.is_some() {
                OutcomeKind::Measured
            } else {
                OutcomeKind::Refused
            },
            value,
        }
    }

    fn campaign(objective: ndtune_metrics::Objective, values: &[Option<f64>]) -> Campaign {
        Campaign {
            kernel: "k".into(),
            constants: Default::default(),
            setup: String::new(),
            earlier: None,
            collected: false,
            objective,
            units: Default::default(),
            evaluations: values.iter().copied().map(eval).collect(),
            outcomes: Default::default(),
            best: None,
            best_metrics: Default::default(),
            median: None,
            worst: None,
            timeline: Vec::new(),
            front: None,
        }
    }

    #[test]
    fn improvements_are_the_running_best_in_evaluation_order() {
        let values = [Some(3.0), None, Some(4.0), Some(1.0), Some(1.0), Some(0.5)];
        let by_time = campaign(ndtune_metrics::Objective::time(), &values);
        assert_eq!(improvements(&by_time), vec![(1, 3.0), (4, 1.0), (6, 0.5)]);
        let rate = ndtune_metrics::Objective {
            metric: "gflops".into(),
            higher_is_better: true,
        };
        assert_eq!(
            improvements(&campaign(rate, &values)),
            vec![(1, 3.0), (3, 4.0)]
        );
    }

    #[test]
    fn a_subsample_is_spread_evenly_and_keeps_what_must_stay() {
        let items: Vec<usize> = (0..1000).collect();
        let s = subsample(&items, 100, |&x| x == 999);
        assert_eq!(s.len(), 101);
        assert_eq!((s[0], s[1], s[100]), (0, 10, 999));
        assert_eq!(subsample(&items[..50], 100, |_| false).len(), 50);
    }
}
