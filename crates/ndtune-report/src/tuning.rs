//! The tuning section of the page: per tuned campaign (kernel, constants, device) its
//! convergence in the order the configurations were evaluated, the distribution of its measured
//! times with every outcome counted, and the effect of each parameter (per value the best and the
//! median time, as small multiples; a heatmap where there are exactly two parameters); then, per
//! kernel tuned on several devices, a comparison across them. Every figure has alt text and its
//! numbers are in a table, so the page reads without the figures.
//!
//! A campaign of thousands of evaluations keeps the page small: its convergence draws at most
//! [`MAX_POINTS`] points (every improvement among them) and says so; the other figures and every
//! table are aggregates of all evaluations.

use crate::document::{config, constants, median, ms, times, with_constants, Builder};
use crate::figures::{
    Bar, BarKind, Bars, Cell, Convergence, Effect, Effects, Figure, Heatmap, Histogram,
};
use crate::model::{Campaign, DeviceSection, Evaluation, Report};
use ndtune_core::OutcomeKind;
use ndtune_core::Value;
use std::collections::BTreeMap;

/// The most evaluations a convergence figure draws as points (measured, and refused or failed).
pub const MAX_POINTS: usize = 400;
/// The most values of either parameter for which the two-parameter heatmap is drawn.
pub const MAX_HEATMAP_VALUES: usize = 40;
/// Bins of the distribution of measured times.
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
        "Per kernel and device: the best time found against the evaluations in the order they \
         ran (the campaign's convergence), the distribution of the measured times with every \
         outcome counted, and the effect of each parameter: for each of its values, the best and \
         the median time of the configurations with that value.",
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
    let best = match &c.best {
        Some((cfg, t)) => format!(
            " The best is {} at {} ms, {} faster than the median and {} than the slowest \
             measured configuration.",
            config(cfg),
            ms(*t),
            times(c.speedups().map(|s| s.1)),
            times(c.speedups().map(|s| s.0))
        ),
        None => String::new(),
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
        "{n} configurations evaluated: {}.{best}",
        outcome_counts(c)
    ));
    if c.best.is_none() {
        b.missing(
            "No configuration was measured, so there is nothing to draw: the counts above say \
             what happened to each.",
        );
        return;
    }
    convergence(b, &name, c);
    histogram(b, &name, c);
    effects(b, &name, c);
}

/// (evaluation number from 1, best ms so far) at each improvement.
fn improvements(evaluations: &[Evaluation]) -> Vec<(usize, f64)> {
    let mut best = f64::INFINITY;
    let mut out = Vec::new();
    for (i, e) in evaluations.iter().enumerate() {
        if let Some(t) = e.ms.filter(|t| *t < best) {
            best = t;
            out.push((i + 1, t));
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
    let best = improvements(&c.evaluations);
    let measured: Vec<(usize, f64)> = c
        .evaluations
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.ms.map(|t| (i + 1, t)))
        .collect();
    let failed: Vec<usize> = c
        .evaluations
        .iter()
        .enumerate()
        .filter(|(_, e)| e.ms.is_none() && e.outcome != OutcomeKind::Pruned)
        .map(|(i, _)| i + 1)
        .collect();
    let drawn = subsample(&measured, MAX_POINTS, |p| best.contains(p));
    let drawn_failed = subsample(&failed, MAX_POINTS, |_| false);
    let (last_i, last_t) = *best.last().expect("something was measured");
    let shown: Vec<String> = best
        .iter()
        .take(12)
        .map(|(i, t)| format!("{} ms at {i}", ms(*t)))
        .collect();
    let alt = format!(
        "Convergence of {name}: the best time fell {} times over {n} evaluations, to {} ms at \
         evaluation {last_i} ({}{}).",
        best.len(),
        ms(last_t),
        shown.join(", "),
        if best.len() > shown.len() {
            ", ..."
        } else {
            ""
        }
    );
    b.figure(
        Figure::Convergence(Convergence {
            title: format!("{name}: convergence"),
            evaluations: n,
            measured: drawn.clone(),
            failed: drawn_failed.clone(),
            best,
        }),
        alt,
        "Every measured configuration's time (dots) in the order evaluated, and the best found \
         so far (the line, a dot at each improvement); refused or failed evaluations are ticked \
         along the bottom. The time axis is logarithmic.",
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
    let mut times: Vec<f64> = c.evaluations.iter().filter_map(|e| e.ms).collect();
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
        "Distribution of the {} measured times of {name}: from {} to {} ms, quartiles {}, {} and \
         {} ms. Outcomes: {}.",
        times.len(),
        ms(lo),
        ms(hi),
        ms(q(0.25)),
        ms(q(0.5)),
        ms(q(0.75)),
        outcome_counts(c)
    );
    b.figure(
        Figure::Histogram(Histogram {
            title: format!("{name}: measured times"),
            bins,
            outcomes: c.outcomes.iter().map(|(k, n)| (*k, *n)).collect(),
        }),
        alt,
        "How many configurations ran in each band of time (bands of equal width on a \
         logarithmic axis), and how many evaluations ended in each outcome: measured, refused \
         by the driver, or failed (build, wrong result, crash, timeout).",
    );
}

/// Per parameter, per value (ascending): evaluations, measured times.
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
            slot.1.extend(e.ms);
        }
    }
    out
}

fn best_and_median(times: &[f64]) -> Option<(f64, f64)> {
    let best = times.iter().copied().fold(f64::INFINITY, f64::min);
    Some((best, median(times)?))
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
                .map(|(v, (_, t))| (v.to_string(), best_and_median(t)))
                .collect(),
        })
        .collect();
    let alt = format!(
        "Effect of each parameter on {name}, the value with the best time: {}.",
        panels
            .iter()
            .map(|p| {
                p.values
                    .iter()
                    .filter_map(|(v, x)| x.map(|x| (v, x.0)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map_or(format!("{} -", p.param), |(v, t)| {
                        format!("{}={v} ({} ms)", p.param, ms(t))
                    })
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    b.figure(
        Figure::Effects(Effects {
            title: format!("{name}: effect of each parameter"),
            panels,
        }),
        alt,
        "One panel per parameter: for each of its values, the best (blue) and the median \
         (orange) measured time of the configurations with that value; one logarithmic time \
         axis for all panels, so that the parameters compare. Where the lines are flat, the \
         parameter matters little.",
    );
    b.table(
        &[
            "parameter",
            "value",
            "evaluated",
            "measured",
            "best ms",
            "median ms",
        ],
        params
            .iter()
            .flat_map(|(p, values)| {
                values.iter().map(move |(v, (n, t))| {
                    let bm = best_and_median(t);
                    vec![
                        p.clone(),
                        v.to_string(),
                        n.to_string(),
                        t.len().to_string(),
                        bm.map_or("-".into(), |x| ms(x.0)),
                        bm.map_or("-".into(), |x| ms(x.1)),
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
    let worst = c.worst_ms.unwrap_or(best);
    let span = (worst / best).ln();
    let cells: Vec<Cell> = ys
        .iter()
        .flat_map(|y| xs.iter().map(move |x| (x.clone(), y.clone())))
        .map(|key| {
            let es = cell.get(&key).map_or(&[][..], Vec::as_slice);
            let t = es.iter().filter_map(|e| e.ms).fold(f64::INFINITY, f64::min);
            if t.is_finite() {
                Cell::Value {
                    shade: if span > 0.0 {
                        1.0 - (t / best).ln() / span
                    } else {
                        1.0
                    },
                    text: ms(t),
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
        "Best time of {name} per pair of {px} (across, {} values) and {py} (down, {} values): the \
         best is {} at {} ms; {} pairs measured, {} refused, {} failed, {} not evaluated.",
        xs.len(),
        ys.len(),
        config(&best_cfg),
        ms(best),
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
            scale: (format!("{:.2}x slower", worst / best), "best".into()),
        }),
        alt,
        format!(
            "The time of each pair of {px} and {py}, like the work-group heatmaps of Cummins et \
             al. 2016, Fig. 1. Colour: performance relative to the best on a logarithmic scale \
             (yellow: the best, dark: the slowest; cells show ms); grey ×: refused by the driver; \
             red !: failed; struck out: pruned or not evaluated; circled: the best."
        ),
    );
}

/// Per kernel and constants tuned on several devices: best and median time per device, and how
/// each device's best configuration does on the others.
fn across(b: &mut Builder, tuned: &[Tuned]) {
    b.heading(3, "tuning-across", "Across devices");
    let mut groups: BTreeMap<(String, String), Vec<&Tuned>> = BTreeMap::new();
    for t in tuned
        .iter()
        .filter(|t| t.2.best.is_some() && t.2.earlier.is_none())
    {
        groups
            .entry((t.2.kernel.clone(), constants(&t.2.constants)))
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
    for ((kernel, consts), ts) in groups {
        let label = if consts.is_empty() {
            kernel.clone()
        } else {
            format!("{kernel} {consts}")
        };
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
                        value: c.median_ms.unwrap_or(best),
                        kind: BarKind::Median,
                    },
                ]
            })
            .collect();
        let alt = format!(
            "{label} across {} devices, best and median time: {}.",
            ts.len(),
            ts.iter()
                .map(|(n, _, c)| format!(
                    "device {n} {} and {} ms",
                    ms(c.best.as_ref().expect("measured").1),
                    c.median_ms.map_or("-".into(), ms)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        b.figure(
            Figure::Bars(Bars {
                title: format!("{label}: across devices"),
                y_label: "time (ms)".into(),
                bars,
            }),
            alt,
            "Per device, the best time tuning found (dark) and the median measured time (light).",
        );
        // How each device's best configuration does on every device: its time there, and how
        // much slower than that device's own best.
        let mut head: Vec<String> = ["device", "best configuration", "best ms", "median ms"]
            .map(String::from)
            .to_vec();
        head.extend(ts.iter().map(|(n, _, _)| format!("on device {n}")));
        let rows = ts
            .iter()
            .map(|(n, d, c)| {
                let (cfg, best) = c.best.clone().expect("measured");
                let mut row = vec![
                    format!("{n}: {}", d.name),
                    config(&cfg),
                    ms(best),
                    c.median_ms.map_or("-".into(), ms),
                ];
                row.extend(ts.iter().map(|(_, _, other)| {
                    let there = other
                        .evaluations
                        .iter()
                        .find(|e| e.config == cfg)
                        .map(|e| (e.outcome, e.ms));
                    let own = other.best.as_ref().expect("measured").1;
                    match there {
                        Some((_, Some(t))) => format!("{} ms ({})", ms(t), times(Some(t / own))),
                        Some((k, None)) => k.as_str().replace('_', " "),
                        None => "not evaluated".into(),
                    }
                }));
                row
            })
            .collect();
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        b.para(format!(
            "Each device's best configuration of {label} on every device: its time there and how \
             much slower it is than that device's own best (1.00x: the same)."
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

    fn eval(ms: Option<f64>) -> Evaluation {
        Evaluation {
            config: Default::default(),
            outcome: if ms.is_some() {
                OutcomeKind::Measured
            } else {
                OutcomeKind::Refused
            },
            ms,
        }
    }

    #[test]
    fn improvements_are_the_running_minimum_in_evaluation_order() {
        let e: Vec<Evaluation> = [Some(3.0), None, Some(4.0), Some(1.0), Some(1.0), Some(0.5)]
            .into_iter()
            .map(eval)
            .collect();
        assert_eq!(improvements(&e), vec![(1, 3.0), (4, 1.0), (6, 0.5)]);
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
