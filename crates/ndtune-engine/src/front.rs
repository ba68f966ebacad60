//! The Pareto front of a campaign of several objectives (`--objective time,energy_j`): the
//! measured configurations no other beats in every objective, each with its values, and the
//! hypervolume they cover.
//!
//! The hypervolume is computed over the logarithms of the costs (each objective's value, its
//! reciprocal where higher is better): tuned values span orders of magnitude, and in linear
//! units the box of the slowest configurations would make almost any front look whole. Its
//! reference point lies a tenth of the range beyond the worst of the configurations it is
//! computed over ([`ndtune_core::pareto::reference_point`]), and reports state it in the
//! objectives' own units. The strategy benchmark and replays score a search by the fraction of
//! the true front's hypervolume it found ([`hypervolume_fraction`]).

use crate::report::ObjectiveReport;
use ndtune_core::pareto::{front, hypervolume, reference_point};
use ndtune_core::Config;
use ndtune_metrics::{Metrics, Objective};
use serde::Serialize;

/// A campaign's front.
#[derive(Debug, Clone, Serialize)]
pub struct FrontReport {
    /// The objectives, in order: each member's values follow it.
    pub objectives: Vec<ObjectiveReport>,
    /// The configurations on the front, best by the first objective first.
    pub members: Vec<FrontMember>,
    /// The hypervolume the front covers, of the ln costs, against `reference`.
    pub hypervolume: f64,
    /// The reference point, in the objectives' units.
    pub reference: Vec<f64>,
    /// The measured configurations (with a value of every objective) it is drawn from.
    pub measured: usize,
}

/// One configuration on the front.
#[derive(Debug, Clone, Serialize)]
pub struct FrontMember {
    pub config: Config,
    pub time_ms: f64,
    /// Each objective's value, in the order of [`FrontReport::objectives`].
    pub values: Vec<f64>,
}

impl ObjectiveReport {
    /// Every objective of `metrics`, with its unit.
    pub fn all(metrics: &Metrics) -> Vec<ObjectiveReport> {
        metrics
            .objectives()
            .into_iter()
            .map(|o| ObjectiveReport {
                metric: o.metric.clone(),
                unit: metrics.unit(&o.metric).map(str::to_string),
                higher_is_better: o.higher_is_better,
            })
            .collect()
    }
}

/// The front of the measured configurations `measured` (each with its time and its objectives'
/// values, `None` where one has none) for `metrics`' objectives; `None` with one objective or
/// where nothing has a value of each.
pub fn front_of(
    metrics: &Metrics,
    measured: impl IntoIterator<Item = (Config, f64, Vec<Option<f64>>)>,
) -> Option<FrontReport> {
    if !metrics.several() {
        return None;
    }
    let objectives = metrics.objectives();
    let complete: Vec<(Config, f64, Vec<f64>, Vec<f64>)> = measured
        .into_iter()
        .filter_map(|(config, time_ms, values)| {
            let values: Vec<f64> = values.into_iter().collect::<Option<_>>()?;
            let costs = log_costs(&objectives, &values)?;
            Some((config, time_ms, values, costs))
        })
        .collect();
    let coordinates: Vec<Vec<f64>> = complete.iter().map(|c| c.3.clone()).collect();
    let reference = reference_point(&coordinates)?;
    let mut members: Vec<(f64, FrontMember)> = front(&coordinates)
        .into_iter()
        .map(|i| {
            let (config, time_ms, values, costs) = &complete[i];
            let member = FrontMember {
                config: config.clone(),
                time_ms: *time_ms,
                values: values.clone(),
            };
            (costs[0], member)
        })
        .collect();
    members.sort_by(|a, b| a.0.total_cmp(&b.0));
    Some(FrontReport {
        objectives: ObjectiveReport::all(metrics),
        members: members.into_iter().map(|(_, m)| m).collect(),
        hypervolume: hypervolume(&coordinates, &reference),
        reference: objectives
            .iter()
            .zip(&reference)
            .map(|(o, ln)| value_of(o, ln.exp()))
            .collect(),
        measured: complete.len(),
    })
}

/// The ln of each objective's cost of `values`; `None` where one has none.
fn log_costs(objectives: &[&Objective], values: &[f64]) -> Option<Vec<f64>> {
    objectives
        .iter()
        .zip(values)
        .map(|(o, v)| o.cost(*v).map(f64::ln))
        .collect()
}

/// The value whose cost is `cost`.
fn value_of(objective: &Objective, cost: f64) -> f64 {
    if objective.higher_is_better {
        1.0 / cost
    } else {
        cost
    }
}

/// The fraction of the hypervolume of `all`'s front that `found`'s front covers, both costs
/// (one per objective, positive), over their logarithms against the reference point of `all`;
/// `None` where `all` has no point.
pub fn hypervolume_fraction(found: &[Vec<f64>], all: &[Vec<f64>]) -> Option<f64> {
    let ln =
        |points: &[Vec<f64>]| -> Vec<Vec<f64>> { points.iter().map(|p| ln_costs(p)).collect() };
    let all = ln(all);
    let reference = reference_point(&all)?;
    let whole = hypervolume(&all, &reference);
    (whole > 0.0).then(|| hypervolume(&ln(found), &reference) / whole)
}

/// The natural logarithm of each cost: the coordinates fronts are measured in.
pub fn ln_costs(costs: &[f64]) -> Vec<f64> {
    costs.iter().map(|c| c.ln()).collect()
}
