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
use ndtune_core::pareto::{hypervolume, reference_point};
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
/// values, [`Metrics::objective_values`]) for `metrics`' objectives; `None` with one objective
/// or where nothing has a value of each.
pub fn front_of(
    metrics: &Metrics,
    measured: impl IntoIterator<Item = (Config, f64, Vec<f64>)>,
) -> Option<FrontReport> {
    if !metrics.several() {
        return None;
    }
    let objectives = metrics.objectives();
    let measured: Vec<(Config, f64, Vec<f64>)> = measured.into_iter().collect();
    let values: Vec<Vec<f64>> = measured.iter().map(|m| m.2.clone()).collect();
    // Every value has a cost ([`Metrics::objective_values`]): its ln is the coordinate.
    let coordinates: Vec<Vec<f64>> = values
        .iter()
        .map(|v| {
            objectives
                .iter()
                .zip(v)
                .map(|(o, v)| o.cost(*v).expect("a value with a cost").ln())
                .collect()
        })
        .collect();
    let reference = reference_point(&coordinates)?;
    let members = metrics
        .front(&values)
        .into_iter()
        .map(|i| {
            let (config, time_ms, values) = &measured[i];
            FrontMember {
                config: config.clone(),
                time_ms: *time_ms,
                values: values.clone(),
            }
        })
        .collect();
    Some(FrontReport {
        objectives: ObjectiveReport::all(metrics),
        members,
        hypervolume: hypervolume(&coordinates, &reference),
        reference: objectives
            .iter()
            .zip(&reference)
            .map(|(o, ln)| value_of(o, ln.exp()))
            .collect(),
        measured: measured.len(),
    })
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
