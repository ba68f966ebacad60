//! A Gaussian process regression model for model-based search (Rasmussen and Williams 2006,
//! ch. 2 and 5): a Matérn 5/2 kernel with a length scale per input (automatic relevance
//! determination), a constant mean, and a nugget for noise. Inputs are points' domain indices
//! scaled to [0, 1] (Willemsen et al. 2021 model GPU tuning spaces this way); outputs are
//! standardised. Hyper-parameters (the log length scales and the log nugget) maximise the
//! marginal likelihood with the signal variance profiled out, plus a weak normal prior on
//! each, by gradient descent in log space. Linear algebra: nalgebra's Cholesky factorisation.

use nalgebra::{Cholesky, DMatrix, DVector, Dyn};

/// The kernel's hyper-parameters, in log space.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hyper {
    /// ln(length scale) per input.
    pub log_scale: Vec<f64>,
    /// ln(nugget), the noise variance relative to the signal's.
    pub log_noise: f64,
}

/// Where the prior on every ln(length scale) is centred, and its spread: inputs span [0, 1],
/// so a length scale of the whole span is the prior guess, with 0.1 to 10 within two spreads.
/// (It was half the span; the whole span did better on `bo`'s fitting datasets, see
/// [`crate::Bayes`].)
const SCALE_PRIOR: (f64, f64) = (0.0, 1.15);
/// The prior on ln(nugget): a hundredth of the signal, 1e-4 to 1 within two spreads.
const NOISE_PRIOR: (f64, f64) = (-4.6, 2.3);
/// Bounds of the hyper-parameters in log space.
const SCALE_BOUNDS: (f64, f64) = (-3.9, 3.0);
const NOISE_BOUNDS: (f64, f64) = (-13.8, 0.0);

impl Hyper {
    /// The prior's centre for `dims` inputs.
    pub fn prior(dims: usize) -> Hyper {
        Hyper {
            log_scale: vec![SCALE_PRIOR.0; dims],
            log_noise: NOISE_PRIOR.0,
        }
    }

    fn clamp(mut self) -> Hyper {
        for s in &mut self.log_scale {
            *s = s.clamp(SCALE_BOUNDS.0, SCALE_BOUNDS.1);
        }
        self.log_noise = self.log_noise.clamp(NOISE_BOUNDS.0, NOISE_BOUNDS.1);
        self
    }
}

/// Matérn 5/2 correlation at scaled distance `r`.
fn matern(r: f64) -> f64 {
    let s = 5f64.sqrt() * r;
    (1.0 + s + s * s / 3.0) * (-s).exp()
}

/// The scaled squared distance between two inputs.
fn distance2(a: &[f64], b: &[f64], inv_scale2: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .zip(inv_scale2)
        .map(|((x, y), w)| (x - y) * (x - y) * w)
        .sum()
}

/// A Gaussian process fitted to observations.
pub(crate) struct Gp {
    x: Vec<Vec<f64>>,
    inv_scale2: Vec<f64>,
    chol: Cholesky<f64, Dyn>,
    /// K⁻¹ (y − mean), standardised.
    alpha: DVector<f64>,
    y_mean: f64,
    y_sd: f64,
    /// The profiled signal variance, in standardised units.
    signal: f64,
}

/// A prediction: the posterior mean and standard deviation of the latent function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Prediction {
    pub mean: f64,
    pub sd: f64,
}

impl Gp {
    /// The posterior given observations `y` at inputs `x` under `hyper`; `None` where the
    /// kernel matrix is not positive definite (it is, with a nugget, barring NaN).
    pub fn fit(x: Vec<Vec<f64>>, y: &[f64], hyper: &Hyper) -> Option<Gp> {
        let n = x.len();
        if n == 0 {
            return None;
        }
        let (y_mean, y_sd) = standardise(y);
        let ys = DVector::from_iterator(n, y.iter().map(|v| (v - y_mean) / y_sd));
        let inv_scale2: Vec<f64> = hyper.log_scale.iter().map(|l| (-2.0 * l).exp()).collect();
        let k = kernel_matrix(&x, &inv_scale2, hyper.log_noise.exp());
        let chol = Cholesky::new(k)?;
        let alpha = chol.solve(&ys);
        let signal = (ys.dot(&alpha) / n as f64).max(1e-12);
        Some(Gp {
            x,
            inv_scale2,
            chol,
            alpha,
            y_mean,
            y_sd,
            signal,
        })
    }

    /// The prediction at input `at`, in the observations' units.
    pub fn predict(&self, at: &[f64]) -> Prediction {
        let k = DVector::from_iterator(
            self.x.len(),
            self.x
                .iter()
                .map(|xi| matern(distance2(xi, at, &self.inv_scale2).sqrt())),
        );
        let mean = k.dot(&self.alpha);
        let v = self
            .chol
            .l_dirty()
            .solve_lower_triangular(&k)
            .unwrap_or_else(|| DVector::zeros(k.len()));
        let var = self.signal * (1.0 - v.norm_squared()).max(0.0);
        Prediction {
            mean: self.y_mean + self.y_sd * mean,
            sd: self.y_sd * var.sqrt(),
        }
    }

    /// The kernel's correlation between two inputs, as fitted.
    pub fn correlation(&self, a: &[f64], b: &[f64]) -> f64 {
        matern(distance2(a, b, &self.inv_scale2).sqrt())
    }
}

/// Mean and standard deviation of `y` (1 where it has no spread).
fn standardise(y: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let mean = y.iter().sum::<f64>() / n;
    let var = y.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let sd = var.sqrt();
    (mean, if sd > 1e-12 { sd } else { 1.0 })
}

fn kernel_matrix(x: &[Vec<f64>], inv_scale2: &[f64], noise: f64) -> DMatrix<f64> {
    let n = x.len();
    let mut k = DMatrix::zeros(n, n);
    for a in 0..n {
        k[(a, a)] = 1.0 + noise;
        for b in 0..a {
            let v = matern(distance2(&x[a], &x[b], inv_scale2).sqrt());
            k[(a, b)] = v;
            k[(b, a)] = v;
        }
    }
    k
}

/// The hyper-parameters that maximise the posterior of `y` at `x`, by at most `steps` steps
/// of gradient descent from `start` (adaptive step length, each step an improvement).
pub(crate) fn optimise(x: &[Vec<f64>], y: &[f64], start: Hyper, steps: usize) -> Hyper {
    let n = x.len();
    if n < 3 {
        return start.clamp();
    }
    let dims = start.log_scale.len();
    let (y_mean, y_sd) = standardise(y);
    let ys = DVector::from_iterator(n, y.iter().map(|v| (v - y_mean) / y_sd));
    // Squared differences per input, once: the kernel and its gradient come from them.
    let diff2: Vec<Vec<f64>> = (0..dims)
        .map(|j| {
            let mut d = vec![0.0; n * n];
            for a in 0..n {
                for b in 0..a {
                    let v = (x[a][j] - x[b][j]).powi(2);
                    d[a * n + b] = v;
                    d[b * n + a] = v;
                }
            }
            d
        })
        .collect();
    let mut at = start.clamp();
    let Some((mut value, Some(mut grad))) = objective(&diff2, n, &ys, &at, true) else {
        return at;
    };
    let mut step = 0.5;
    for _ in 0..steps {
        let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
        if norm < 1e-6 {
            break;
        }
        let mut moved = false;
        for _ in 0..8 {
            let mut next = at.clone();
            for (s, g) in next.log_scale.iter_mut().zip(&grad) {
                *s -= step * g / norm;
            }
            next.log_noise -= step * grad[dims] / norm;
            let next = next.clamp();
            // Trial steps need the value only; the gradient is computed where one is taken.
            match objective(&diff2, n, &ys, &next, false) {
                Some((v, _)) if v < value => {
                    let Some((_, Some(g))) = objective(&diff2, n, &ys, &next, true) else {
                        return next;
                    };
                    (at, value, grad) = (next, v, g);
                    step *= 1.5;
                    moved = true;
                    break;
                }
                _ => step *= 0.3,
            }
        }
        if !moved || step < 1e-3 {
            break;
        }
    }
    at
}

/// The objective's value, and its gradient where asked for.
type Objective = (f64, Option<Vec<f64>>);

/// −2 ln p(y | hyper) − 2 ln p(hyper) up to a constant, the signal variance profiled out, and
/// with `gradient` its gradient (length scales, then the nugget). `diff2[j]` holds the squared
/// differences of input `j` between every two observations.
fn objective(
    diff2: &[Vec<f64>],
    n: usize,
    y: &DVector<f64>,
    h: &Hyper,
    gradient: bool,
) -> Option<Objective> {
    let dims = h.log_scale.len();
    let inv2: Vec<f64> = h.log_scale.iter().map(|l| (-2.0 * l).exp()).collect();
    let noise = h.log_noise.exp();
    let mut r = vec![0.0; n * n];
    for (d, w) in diff2.iter().zip(&inv2) {
        for (ri, di) in r.iter_mut().zip(d) {
            *ri += di * w;
        }
    }
    let mut k = DMatrix::zeros(n, n);
    for a in 0..n {
        for b in 0..n {
            k[(a, b)] = if a == b {
                1.0 + noise
            } else {
                matern(r[a * n + b].sqrt())
            };
        }
    }
    let chol = Cholesky::new(k)?;
    let alpha = chol.solve(y);
    let s2 = (y.dot(&alpha) / n as f64).max(1e-12);
    let logdet: f64 = chol.l_dirty().diagonal().iter().map(|d| 2.0 * d.ln()).sum();
    let prior = |v: f64, (mu, sd): (f64, f64)| ((v - mu) / sd).powi(2);
    let value = n as f64 * s2.ln()
        + logdet
        + h.log_scale
            .iter()
            .map(|&l| prior(l, SCALE_PRIOR))
            .sum::<f64>()
        + prior(h.log_noise, NOISE_PRIOR);
    if !gradient {
        return Some((value, None));
    }
    // d/dθ = tr(W ∂K/∂θ) with W = K⁻¹ − α αᵀ / s².
    let mut w = chol.inverse();
    for a in 0..n {
        for b in 0..n {
            w[(a, b)] -= alpha[a] * alpha[b] / s2;
        }
    }
    let mut grad = vec![0.0; dims + 1];
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            let rr = r[a * n + b].sqrt();
            let s = 5f64.sqrt() * rr;
            // ∂k/∂ln(scale_j) = 5/3 (1 + √5 r) e^(−√5 r) · d_j² / scale_j².
            let common = w[(a, b)] * 5.0 / 3.0 * (1.0 + s) * (-s).exp();
            for j in 0..dims {
                grad[j] += common * diff2[j][a * n + b] * inv2[j];
            }
        }
    }
    grad[dims] = noise * w.trace();
    for (g, &l) in grad.iter_mut().zip(&h.log_scale) {
        *g += 2.0 * (l - SCALE_PRIOR.0) / (SCALE_PRIOR.1 * SCALE_PRIOR.1);
    }
    grad[dims] += 2.0 * (h.log_noise - NOISE_PRIOR.0) / (NOISE_PRIOR.1 * NOISE_PRIOR.1);
    Some((value, Some(grad)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_what_it_saw_and_is_unsure_far_from_it() {
        let x: Vec<Vec<f64>> = (0..8).map(|i| vec![i as f64 / 7.0]).collect();
        let y: Vec<f64> = x.iter().map(|v| (6.0 * v[0]).sin()).collect();
        let hyper = optimise(&x, &y, Hyper::prior(1), 50);
        let gp = Gp::fit(x.clone(), &y, &hyper).unwrap();
        for (xi, yi) in x.iter().zip(&y) {
            let p = gp.predict(xi);
            assert!((p.mean - yi).abs() < 0.05, "{xi:?}: {p:?} against {yi}");
        }
        let between = gp.predict(&[0.5 / 7.0]);
        assert!(
            (between.mean - (6.0f64 * 0.5 / 7.0).sin()).abs() < 0.1,
            "{between:?}"
        );
        assert!(
            gp.predict(&[3.0]).sd > 5.0 * between.sd,
            "far away it does not know"
        );
    }

    #[test]
    fn learns_which_input_matters() {
        // y depends on the first input only; the second is noise-free irrelevance.
        let mut x = Vec::new();
        for i in 0..6 {
            for j in 0..6 {
                x.push(vec![i as f64 / 5.0, j as f64 / 5.0]);
            }
        }
        let y: Vec<f64> = x.iter().map(|v| (3.0 * v[0]).cos()).collect();
        let hyper = optimise(&x, &y, Hyper::prior(2), 100);
        assert!(
            hyper.log_scale[1] > hyper.log_scale[0] + 1.0,
            "the irrelevant input gets the longer length scale: {hyper:?}"
        );
    }

    #[test]
    fn the_gradient_matches_finite_differences() {
        let x: Vec<Vec<f64>> = (0..7)
            .map(|i| vec![(i as f64 * 0.37) % 1.0, (i as f64 * 0.61) % 1.0])
            .collect();
        let y: Vec<f64> = x.iter().map(|v| v[0] * 2.0 - v[1] * v[1]).collect();
        let n = x.len();
        let (m, sd) = standardise(&y);
        let ys = DVector::from_iterator(n, y.iter().map(|v| (v - m) / sd));
        let diff2: Vec<Vec<f64>> = (0..2)
            .map(|j| {
                (0..n * n)
                    .map(|ab| (x[ab / n][j] - x[ab % n][j]).powi(2))
                    .collect()
            })
            .collect();
        let h = Hyper {
            log_scale: vec![-0.5, 0.2],
            log_noise: -3.0,
        };
        let grad = objective(&diff2, n, &ys, &h, true).unwrap().1.unwrap();
        let eps = 1e-5;
        for (i, analytic) in grad.iter().enumerate() {
            let shift = |e: f64| {
                let mut h = h.clone();
                if i < 2 {
                    h.log_scale[i] += e;
                } else {
                    h.log_noise += e;
                }
                objective(&diff2, n, &ys, &h, false).unwrap().0
            };
            let numeric = (shift(eps) - shift(-eps)) / (2.0 * eps);
            assert!(
                (numeric - analytic).abs() < 1e-4 * (1.0 + numeric.abs()),
                "parameter {i}: {numeric} against {analytic}"
            );
        }
    }
}
