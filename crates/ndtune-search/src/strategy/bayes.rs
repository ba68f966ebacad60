//! Bayesian optimisation with a Gaussian process (after Willemsen et al. 2021, "Bayesian
//! Optimization for auto-tuning GPU kernels"): a space-filling first batch over the valid
//! points, then one point at a time where the model expects the most improvement, discounted
//! by how likely the point is to fail.

use super::expected_improvement;
use super::rng;
use crate::gp::{optimise, Gp, Hyper};
use crate::session::Session;
use crate::space::{neighbours, Neighbourhood};
use crate::{Evaluator, Point, Run, SearchSpace, Strategy, Trace};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, HashSet};

/// Bayesian optimisation over the valid points.
///
/// - Start: the warm-start points, then a maximin design of [`INITIAL`] points: from
///   [`DESIGN_SAMPLE`] random valid points per point wanted, each next one the farthest from
///   those chosen and measured, so the first batch covers the space. It is promised to the
///   evaluator ([`Evaluator::will_ask`]), which may build it in any order.
/// - Model: a Gaussian process ([`crate::gp`]) of the cost ln(ms). Its inputs per parameter
///   with more than one value: the domain index scaled to [0, 1] (Willemsen et al.), and where
///   the values are positive integers of more than one power-of-two alignment, the number of
///   times 2 divides the value (scaled likewise): on GPUs a work-group of 128 is usually far
///   faster than one of 112 or 144 beside it, so alignment is a dimension of its own. (On the
///   fitting datasets of the strategy benchmark this input took `bo` from 0.83 to 0.87 of the
///   optimum after 50 evaluations on the convolution spaces.) The model is fitted to at most
///   [`MODEL_POINTS`] measurements, the cheapest and the latest; its hyper-parameters are
///   re-estimated after every evaluation up to [`REFIT_ALL_UNTIL`] measurements, then after
///   every [`REFIT_EVERY`], from the [`HYPER_POINTS`] cheapest. Costs above the
///   [`COST_CAP`] quantile of those fitted are lowered to it, so the model spends its
///   flexibility on telling the fast points apart rather than on how slow the slow ones are.
/// - Failures (build_failed, refused, ...) stay out of the regression: a point's chance of
///   success is the share of successes among the points evaluated near it, weighted by the
///   model's correlation and shrunk towards the overall share ([`FEASIBILITY_PRIOR`]
///   pseudo-observations); a launch beyond the driver's advice counts as a likely refusal
///   ([`Evaluator::exceeds_advice`]).
/// - Acquisition: the expected improvement over the best measured cost times the chance of
///   success, maximised over [`POOL`] random valid points not evaluated yet (all of them in a
///   smaller space), the Hamming neighbours of the best measured point, and a greedy walk on
///   the acquisition from it. The best is measured; the next [`ANNOUNCE`] by acquisition are
///   announced to the evaluator ([`Evaluator::upcoming`]) so their builds start.
///
/// The default budget is min(points, 100).
///
/// Fitting datasets: the six convolution spaces of the strategy benchmark (Kernel Tuner's
/// benchmark_hub); the dedispersion spaces and CLTune's SGEMM are held out. On the fitting
/// datasets, 64 seeds, the cap on costs, the length-scale prior centred on the whole span
/// ([`crate::gp`]) and a first batch chosen from 128 random points per point instead of 32 took
/// `bo` from 0.773 to 0.803 of the optimum after 25 evaluations and from 0.868 to 0.889 after 50.
#[derive(Debug, Clone, Copy)]
pub struct Bayes {
    pub seed: u64,
}

/// Points of the first, space-filling batch.
pub const INITIAL: usize = 10;
/// Random valid points drawn per point of the first batch, to choose it from.
pub const DESIGN_SAMPLE: usize = 128;
/// Random candidate points per acquisition.
pub const POOL: usize = 1024;
/// Steps of the greedy walk on the acquisition, and neighbours scored per step at most.
pub const WALK_STEPS: usize = 10;
pub const WALK_NEIGHBOURS: usize = 32;
/// Measurements up to which the hyper-parameters are re-estimated after every evaluation.
pub const REFIT_ALL_UNTIL: usize = 64;
/// After that, evaluations between re-estimations.
pub const REFIT_EVERY: usize = 8;
/// Measurements the hyper-parameters are estimated from at most (the cheapest).
pub const HYPER_POINTS: usize = 64;
/// Measurements the model is fitted to at most: half the cheapest, the rest the latest. It
/// bounds a proposal's cost (the fit is cubic in them, each prediction quadratic).
pub const MODEL_POINTS: usize = 200;
/// The quantile of the fitted costs above which costs are lowered to it.
pub const COST_CAP: f64 = 0.75;
/// Pseudo-observations of the overall success rate in a point's chance of success.
pub const FEASIBILITY_PRIOR: f64 = 0.5;
/// Points announced to the evaluator after the one measured next.
pub const ANNOUNCE: usize = 7;
const DEFAULT_BUDGET: usize = 100;
/// Gradient steps of a hyper-parameter estimate.
const HYPER_STEPS: usize = 30;

impl Strategy for Bayes {
    fn name(&self) -> &'static str {
        "bo"
    }

    /// Nothing in a run depends on its budget: not the first batch, not the acquisition.
    fn anytime(&self) -> bool {
        true
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        bayes_search(space, eval, run, self.seed, Scalar::Cost)
    }
}

/// ParEGO (Knowles 2006): `bo` for several objectives. Each step draws random weights of the
/// objectives (uniform on the simplex), scalarises every measured point's costs by the augmented
/// Tchebycheff function of those weights over its ln costs normalised to the range measured
/// (max_i w_i f_i + [`AUGMENTATION`] sum_i w_i f_i), fits `bo`'s model to the scalarised values
/// and measures where the model expects the most improvement of them: each step aims at another
/// part of the front, with everything `bo` knows (the space-filling start, the alignment inputs,
/// the failure model, the acquisition's walk). With one objective it is `bo`. The default
/// budget is min(points, 100).
#[derive(Debug, Clone, Copy)]
pub struct ParEgo {
    pub seed: u64,
}

/// The weight of the weighted sum in ParEGO's augmented Tchebycheff scalarisation.
pub const AUGMENTATION: f64 = 0.05;

impl Strategy for ParEgo {
    fn name(&self) -> &'static str {
        "parego"
    }

    fn anytime(&self) -> bool {
        true
    }

    fn search(&mut self, space: &dyn SearchSpace, eval: &mut dyn Evaluator, run: &Run) -> Trace {
        bayes_search(space, eval, run, self.seed, Scalar::RandomWeights)
    }
}

/// What the model of a step learns from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scalar {
    /// The cost ([`Evaluator::cost`]).
    Cost,
    /// ParEGO's scalarisation of the costs ([`Evaluator::costs`]) by weights drawn anew.
    RandomWeights,
}

/// Every point evaluated, in evaluation order, with what the model learns of it this step: its
/// ln cost, or ParEGO's scalarisation by weights drawn from `rng`; +inf for a failure.
fn scalar_costs(session: &Session, scalar: Scalar, rng: &mut ChaCha8Rng) -> Vec<(Point, f64)> {
    if scalar == Scalar::Cost || session.objectives() < 2 {
        return session.evaluated().map(|(p, c)| (p.clone(), c)).collect();
    }
    let k = session.objectives();
    let all: Vec<(Point, Option<Vec<f64>>)> = session
        .evaluated_costs()
        .map(|(p, c)| (p.clone(), c.cloned()))
        .collect();
    let (mut lo, mut hi) = (vec![f64::INFINITY; k], vec![f64::NEG_INFINITY; k]);
    for c in all.iter().filter_map(|(_, c)| c.as_ref()) {
        for d in 0..k {
            lo[d] = lo[d].min(c[d]);
            hi[d] = hi[d].max(c[d]);
        }
    }
    let draws: Vec<f64> = (0..k).map(|_| -(1.0 - rng.random::<f64>()).ln()).collect();
    let total: f64 = draws.iter().sum();
    let weights: Vec<f64> = draws.iter().map(|d| d / total).collect();
    all.into_iter()
        .map(|(p, c)| {
            let value = c.map_or(f64::INFINITY, |c| {
                let normalised = (0..k).map(|d| {
                    if hi[d] > lo[d] {
                        (c[d] - lo[d]) / (hi[d] - lo[d])
                    } else {
                        0.0
                    }
                });
                let weighted: Vec<f64> = normalised.zip(&weights).map(|(f, w)| f * w).collect();
                let max = weighted.iter().copied().fold(0.0, f64::max);
                max + AUGMENTATION * weighted.iter().sum::<f64>()
            });
            (p, value)
        })
        .collect()
}

/// `bo`'s search, its model learning `scalar` of the costs.
fn bayes_search(
    space: &dyn SearchSpace,
    eval: &mut dyn Evaluator,
    run: &Run,
    seed: u64,
    scalar: Scalar,
) -> Trace {
    let mut rng = rng(seed);
    let mut session = Session::new(space, eval, run, DEFAULT_BUDGET);
    let enc = Encoder::new(space);
    let design = initial_design(
        &session,
        &enc,
        INITIAL.saturating_sub(session.used()),
        &mut rng,
    );
    session.promise(design.iter().cloned());
    for p in &design {
        session.evaluate(p);
    }
    let mut hyper: Option<Hyper> = None;
    let mut fitted_at = 0;
    while !session.done() {
        // In evaluation order: the latest last.
        let costs = scalar_costs(&session, scalar, &mut rng);
        let measured: Vec<(Vec<f64>, f64)> = costs
            .iter()
            .filter(|(_, c)| c.is_finite())
            .map(|(p, c)| (enc.encode(space, p), *c))
            .collect();
        let n = measured.len();
        let gp = (n >= 2)
            .then(|| {
                if hyper.is_none() || n <= REFIT_ALL_UNTIL || n >= fitted_at + REFIT_EVERY {
                    let start = hyper.clone().unwrap_or_else(|| Hyper::prior(enc.dims()));
                    let (x, y) = cheapest_and_latest(&measured, HYPER_POINTS, 0);
                    hyper = Some(optimise(&x, &capped(y), start, HYPER_STEPS));
                    fitted_at = n;
                }
                let (x, y) = cheapest_and_latest(&measured, MODEL_POINTS / 2, MODEL_POINTS / 2);
                Gp::fit(x, &capped(y), hyper.as_ref().expect("estimated above"))
            })
            .flatten();
        let ranked = match &gp {
            Some(gp) => Acquire::new(&session, &enc, gp, &costs).ranked(&mut session, &mut rng),
            None => session.fresh(&mut rng).into_iter().collect(),
        };
        let Some(next) = ranked.first().cloned() else {
            break;
        };
        session.upcoming(ranked.into_iter().take(1 + ANNOUNCE));
        session.evaluate(&next);
    }
    session.finish()
}

/// How points become the model's inputs: per parameter with more than one value, its domain
/// index, and where its values are positive and not all equally aligned, the number of times
/// 2 divides the value; each scaled to [0, 1] over the domain. (For consecutive powers of two
/// the two agree; keeping both weighs such a parameter more, which did slightly better on the
/// fitting datasets than one input.)
#[derive(Debug, Clone)]
struct Encoder {
    inputs: Vec<Input>,
}

#[derive(Debug, Clone, Copy)]
struct Input {
    param: usize,
    alignment: bool,
    offset: f64,
    span: f64,
}

impl Encoder {
    fn new(space: &dyn SearchSpace) -> Encoder {
        let mut inputs = Vec::new();
        for param in 0..space.names().len() {
            let len = space.domain_len(param);
            if len < 2 {
                continue;
            }
            inputs.push(Input {
                param,
                alignment: false,
                offset: 0.0,
                span: (len - 1) as f64,
            });
            if space.domain_value(param, 0) > 0 {
                let twos = (0..len).map(|i| space.domain_value(param, i).trailing_zeros());
                let (lo, hi) = twos.fold((u32::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
                if hi > lo {
                    inputs.push(Input {
                        param,
                        alignment: true,
                        offset: f64::from(lo),
                        span: f64::from(hi - lo),
                    });
                }
            }
        }
        Encoder { inputs }
    }

    fn dims(&self) -> usize {
        self.inputs.len()
    }

    fn encode(&self, space: &dyn SearchSpace, point: &[i64]) -> Vec<f64> {
        self.inputs
            .iter()
            .map(|i| {
                let v = point[i.param];
                let raw = if i.alignment {
                    f64::from(v.trailing_zeros())
                } else {
                    space.domain_index(i.param, v).unwrap_or(0) as f64
                };
                (raw - i.offset) / i.span
            })
            .collect()
    }
}

/// The `cheapest` cheapest of `measured` (in evaluation order) and the `latest` latest of the
/// others, as inputs and costs.
fn cheapest_and_latest(
    measured: &[(Vec<f64>, f64)],
    cheapest: usize,
    latest: usize,
) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut order: Vec<usize> = (0..measured.len()).collect();
    order.sort_by(|&a, &b| measured[a].1.total_cmp(&measured[b].1));
    let mut keep = vec![false; measured.len()];
    for &i in order.iter().take(cheapest) {
        keep[i] = true;
    }
    let mut more = latest;
    for i in (0..measured.len()).rev() {
        if more == 0 {
            break;
        }
        if !keep[i] {
            keep[i] = true;
            more -= 1;
        }
    }
    measured
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(m, _)| m.clone())
        .unzip()
}

/// `costs` with those above their [`COST_CAP`] quantile lowered to it.
fn capped(mut costs: Vec<f64>) -> Vec<f64> {
    if costs.is_empty() {
        return costs;
    }
    let mut sorted = costs.clone();
    sorted.sort_by(f64::total_cmp);
    let cap = sorted[((sorted.len() - 1) as f64 * COST_CAP).round() as usize];
    for c in &mut costs {
        *c = c.min(cap);
    }
    costs
}

/// `count` valid points not evaluated yet that spread over the space: greedy maximin over a
/// random sample, measured from the points evaluated already too.
fn initial_design(
    session: &Session,
    enc: &Encoder,
    count: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Point> {
    let space = session.space();
    let mut sample: Vec<Point> = random_unseen(session, count * DESIGN_SAMPLE, rng);
    let mut chosen: Vec<Point> = Vec::with_capacity(count);
    let mut nearest: Vec<f64> = sample
        .iter()
        .map(|p| {
            let x = enc.encode(space, p);
            session
                .evaluated()
                .map(|(q, _)| squared(&x, &enc.encode(space, q)))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    while chosen.len() < count && !sample.is_empty() {
        // The first point, with nothing to keep away from, is the sample's first (random).
        let far = (0..sample.len())
            .max_by(|&a, &b| nearest[a].total_cmp(&nearest[b]).then(b.cmp(&a)))
            .expect("a sample");
        let p = sample.swap_remove(far);
        nearest.swap_remove(far);
        let x = enc.encode(space, &p);
        for (q, d) in sample.iter().zip(nearest.iter_mut()) {
            *d = d.min(squared(&x, &enc.encode(space, q)));
        }
        chosen.push(p);
    }
    chosen
}

fn squared(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Up to `count` distinct random valid points not evaluated yet, in the order drawn (all of
/// them, shuffled, where the space has no more).
fn random_unseen(session: &Session, count: usize, rng: &mut ChaCha8Rng) -> Vec<Point> {
    let space = session.space();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    if space.len() <= count as u128 {
        let mut ranks: Vec<u128> = (0..space.len()).collect();
        rand::seq::SliceRandom::shuffle(ranks.as_mut_slice(), rng);
        out.extend(
            ranks
                .into_iter()
                .filter_map(|r| space.nth(r))
                .filter(|p| !session.seen(p)),
        );
        return out;
    }
    for _ in 0..count * 2 {
        if out.len() >= count {
            break;
        }
        let p = space
            .nth(rng.random_range(0..space.len()))
            .expect("a rank below the length");
        if !session.seen(&p) && seen.insert(p.clone()) {
            out.push(p);
        }
    }
    out
}

/// One acquisition: the model, what was evaluated, and the scores given so far.
struct Acquire<'g> {
    gp: &'g Gp,
    enc: &'g Encoder,
    /// The best measured cost, and its point.
    incumbent: f64,
    best: Option<Point>,
    /// Every evaluated point as the model's input, and whether it was measured.
    evaluated: Vec<(Vec<f64>, bool)>,
    /// The share of evaluated points that were measured, smoothed.
    success_rate: f64,
    improvements: HashMap<Point, f64>,
    scores: HashMap<Point, f64>,
}

impl<'g> Acquire<'g> {
    /// `costs`: every point evaluated with the cost the model learnt (+inf for a failure).
    fn new(session: &Session, enc: &'g Encoder, gp: &'g Gp, costs: &[(Point, f64)]) -> Acquire<'g> {
        let space = session.space();
        let evaluated: Vec<(Vec<f64>, bool)> = costs
            .iter()
            .map(|(p, c)| (enc.encode(space, p), c.is_finite()))
            .collect();
        let ok = evaluated.iter().filter(|(_, m)| *m).count();
        // The cheapest, the earliest on ties.
        let best = costs.iter().filter(|(_, c)| c.is_finite()).fold(
            None::<&(Point, f64)>,
            |b, x| match b {
                Some(b) if b.1 <= x.1 => Some(b),
                _ => Some(x),
            },
        );
        Acquire {
            gp,
            enc,
            incumbent: best.map_or(f64::INFINITY, |b| b.1),
            best: best.map(|b| b.0.clone()),
            success_rate: (ok as f64 + 1.0) / (evaluated.len() as f64 + 2.0),
            evaluated,
            improvements: HashMap::new(),
            scores: HashMap::new(),
        }
    }

    /// The chance that the point at input `x` is measured rather than failing.
    fn feasibility(&self, x: &[f64]) -> f64 {
        let (mut ok, mut all) = (0.0, 0.0);
        for (e, measured) in &self.evaluated {
            let w = self.gp.correlation(x, e);
            all += w;
            if *measured {
                ok += w;
            }
        }
        (ok + FEASIBILITY_PRIOR * self.success_rate) / (all + FEASIBILITY_PRIOR)
    }

    /// The expected improvement at `p`, and its input.
    fn improvement(&mut self, space: &dyn SearchSpace, p: &Point) -> (f64, Vec<f64>) {
        let x = self.enc.encode(space, p);
        if let Some(&ei) = self.improvements.get(p) {
            return (ei, x);
        }
        let pred = self.gp.predict(&x);
        let ei = expected_improvement(pred.mean, pred.sd, self.incumbent);
        self.improvements.insert(p.clone(), ei);
        (ei, x)
    }

    /// Higher is better: expected improvement times the chance of success (of the points
    /// evaluated near it, and of a launch beyond the driver's advice). Never above the
    /// expected improvement.
    fn score(&mut self, session: &mut Session, p: &Point) -> f64 {
        if let Some(&s) = self.scores.get(p) {
            return s;
        }
        let (ei, x) = self.improvement(session.space(), p);
        let s = ei * self.feasibility(&x) * (1.0 - session.refusal_risk(p));
        self.scores.insert(p.clone(), s);
        s
    }

    /// The best [`ANNOUNCE`] + 1 candidates not evaluated yet, best first.
    fn ranked(&mut self, session: &mut Session, rng: &mut ChaCha8Rng) -> Vec<Point> {
        let space = session.space();
        let mut pool: HashSet<Point> = random_unseen(session, POOL, rng).into_iter().collect();
        if let Some(best) = self.best.clone() {
            pool.extend(
                neighbours(space, &best, Neighbourhood::Hamming)
                    .into_iter()
                    .filter(|n| !session.seen(n)),
            );
            pool.extend(self.walk(session, &best, rng));
        }
        // A set's order is not deterministic: sort before scoring, so ties break the same way.
        // Launches the driver's advice says are likely refused are not worth a measurement.
        let mut pool: Vec<(f64, Point)> = pool
            .into_iter()
            .filter(|p| !session.likely_refused(p))
            .map(|p| (self.improvement(space, &p).0, p))
            .collect();
        pool.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        // The chance of success costs a pass over every evaluated point: it is worked out by
        // falling expected improvement, which bounds the score, until no other can make it.
        let want = ANNOUNCE + 1;
        let mut top: Vec<(f64, Point)> = Vec::with_capacity(want + 1);
        for (ei, p) in pool {
            if top.len() == want && ei < top[want - 1].0 {
                break;
            }
            let s = self.score(session, &p);
            top.push((s, p));
            top.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            top.truncate(want);
        }
        top.into_iter().map(|(_, p)| p).collect()
    }

    /// A greedy walk on the acquisition from `start` over Hamming neighbours; the points it
    /// scored that were not evaluated.
    fn walk(&mut self, session: &mut Session, start: &Point, rng: &mut ChaCha8Rng) -> Vec<Point> {
        let space = session.space();
        let mut found = Vec::new();
        let mut at = start.clone();
        let mut at_score = f64::NEG_INFINITY;
        for _ in 0..WALK_STEPS {
            let mut around = neighbours(space, &at, Neighbourhood::Hamming);
            if around.len() > WALK_NEIGHBOURS {
                rand::seq::SliceRandom::shuffle(around.as_mut_slice(), rng);
                around.truncate(WALK_NEIGHBOURS);
            }
            around.retain(|n| !session.seen(n));
            around.sort_unstable();
            let mut next: Option<(f64, Point)> = None;
            for n in around {
                let s = self.score(session, &n);
                found.push(n.clone());
                if next.as_ref().is_none_or(|(b, _)| s > *b) {
                    next = Some((s, n));
                }
            }
            match next {
                Some((s, n)) if s > at_score => (at, at_score) = (n, s),
                _ => break,
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_above_the_cap_quantile_are_lowered_to_it() {
        // Nine costs: the 0.75 quantile is the seventh smallest, 7.
        let costs = vec![9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0];
        assert_eq!(
            capped(costs),
            vec![7.0, 1.0, 7.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0]
        );
        assert_eq!(capped(vec![2.0, 1.0]), vec![2.0, 1.0], "too few to cap");
        assert!(capped(Vec::new()).is_empty());
    }
}
