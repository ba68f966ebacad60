//! Trained models behind a small, stable API (Cummins et al. 2016, §4): classifiers from a
//! scenario's features to a class, the oracle work-group size (§4.1), and a random-forest
//! regressor from features to a number, a runtime or a speedup over the baseline (§4.2-4.3).
//!
//! The learning itself is smartcore's. This module owns what surrounds it: checking the
//! training data, standardising features with statistics of the training set, mapping the
//! caller's class indices (not necessarily contiguous) to smartcore's labels and back, a
//! constant model when only one class was seen, one-vs-rest for the SVM, and serde, so that a
//! trained model can be saved as JSON and loaded again with identical predictions (this crate
//! builds serde_json with `float_roundtrip`: without it, parsing may move a float by one ulp).
//!
//! ```
//! use ndtune_learn::models::{Classifier, ClassifierKind};
//! let x: Vec<Vec<f64>> = (0..20).map(|i| vec![i as f64, 1.0]).collect();
//! let y: Vec<usize> = (0..20).map(|i| if i < 10 { 3 } else { 7 }).collect();
//! let tree = Classifier::fit(ClassifierKind::DecisionTree, &x, &y, 1).unwrap();
//! assert_eq!(tree.predict(&[2.0, 1.0]).unwrap(), 3);
//! assert_eq!(tree.predict(&[17.0, 1.0]).unwrap(), 7);
//! ```

use serde::{Deserialize, Serialize};
use smartcore::ensemble::random_forest_classifier::{
    RandomForestClassifier, RandomForestClassifierParameters,
};
use smartcore::ensemble::random_forest_regressor::{
    RandomForestRegressor, RandomForestRegressorParameters,
};
use smartcore::error::Failed;
use smartcore::linalg::basic::matrix::DenseMatrix;
use smartcore::linear::logistic_regression::{LogisticRegression, LogisticRegressionParameters};
use smartcore::naive_bayes::gaussian::{GaussianNB, GaussianNBParameters};
use smartcore::svm::svc::{SVCParameters, SVC};
use smartcore::svm::Kernels;
use smartcore::tree::decision_tree_classifier::{
    DecisionTreeClassifier, DecisionTreeClassifierParameters, SplitCriterion,
};
use std::fmt;

/// Trees in each random forest (Weka's default).
pub const FOREST_TREES: u16 = 100;
/// L2 penalty of logistic regression, `alpha/2 * |w|^2` added to the summed log loss
/// (scikit-learn's default strength). Classes that hyperplanes separate, the rule with few
/// training scenarios per size, have no unpenalised optimum (the weights grow without bound),
/// so the model would be wherever L-BFGS happened to stop.
pub const LOGISTIC_ALPHA: f64 = 1.0;
/// Soft-margin penalty C of each binary SVM (Weka SMO's default).
pub const SVM_C: f64 = 1.0;
/// Passes of smartcore's online SVM solver (LASVM) over the training rows; two give an
/// accuracy close to an exact solver's (smartcore's documentation, after Bordes et al. 2005).
pub const SVM_EPOCHS: usize = 2;
/// Variance added to every feature of every class by naive Bayes, in standardised units.
pub const BAYES_VAR_SMOOTHING: f64 = 1e-2;
/// The largest standardised value a model sees: a feature further than this many standard
/// deviations of the training set from its mean counts as this far (see [`Scaler`]).
pub const MAX_STANDARD_SCORE: f64 = 1e3;

/// Classifier kinds of Cummins et al. §4.1 (the Weka classifier each stands for in
/// parentheses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ClassifierKind {
    /// A single decision tree (J48): entropy splits, at least 2 rows per leaf, no depth
    /// limit. Unlike J48 it is not pruned afterwards.
    #[serde(rename = "tree")]
    DecisionTree,
    /// A random forest of [`FOREST_TREES`] Gini trees, sqrt(features) candidates per split.
    #[serde(rename = "forest")]
    RandomForest,
    /// Gaussian naive Bayes (NaiveBayes), variances smoothed by [`BAYES_VAR_SMOOTHING`].
    #[serde(rename = "bayes")]
    NaiveBayes,
    /// Multinomial logistic regression (Logistic), ridge [`LOGISTIC_ALPHA`], L-BFGS.
    #[serde(rename = "logistic")]
    Logistic,
    /// Linear support vector machines (SMO), one per class against the rest; the class with
    /// the largest decision value wins.
    #[serde(rename = "svm")]
    Svm,
}

impl ClassifierKind {
    pub const ALL: [ClassifierKind; 5] = [
        ClassifierKind::DecisionTree,
        ClassifierKind::RandomForest,
        ClassifierKind::NaiveBayes,
        ClassifierKind::Logistic,
        ClassifierKind::Svm,
    ];

    /// The short name used on the command line and in saved models.
    pub fn name(self) -> &'static str {
        match self {
            ClassifierKind::DecisionTree => "tree",
            ClassifierKind::RandomForest => "forest",
            ClassifierKind::NaiveBayes => "bayes",
            ClassifierKind::Logistic => "logistic",
            ClassifierKind::Svm => "svm",
        }
    }

    /// The kind of a short name (exact, lower case).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl fmt::Display for ClassifierKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// Why a model could not be trained.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("empty training set")]
    Empty,
    #[error("{rows} feature rows but {targets} targets")]
    LengthMismatch { rows: usize, targets: usize },
    #[error("the training rows have no features")]
    NoFeatures,
    #[error("ragged features: row {row} has {len} values, row 0 has {expected}")]
    Ragged {
        row: usize,
        len: usize,
        expected: usize,
    },
    #[error("feature {col} of row {row} is not finite ({value})")]
    NonFinite { row: usize, col: usize, value: f64 },
    #[error("target of row {row} is not finite ({value})")]
    NonFiniteTarget { row: usize, value: f64 },
    #[error("training the {model} failed: {message}")]
    Fit {
        model: &'static str,
        message: String,
    },
    #[error("a row of {len} features for a model trained on {expected}")]
    Width { len: usize, expected: usize },
    #[error("the {model} could not predict: {message}")]
    Predict {
        model: &'static str,
        message: String,
    },
}

type Matrix = DenseMatrix<f64>;
/// smartcore's class labels: 0..k, indices into [`Classifier::classes`].
type Labels = Vec<u32>;

/// A trained classifier: features (rows of f64, all the width of the training rows) to a class
/// index, one of those it was trained on.
#[derive(Debug, Serialize, Deserialize)]
pub struct Classifier {
    kind: ClassifierKind,
    scaler: Scaler,
    /// The caller's class index of each label, ascending.
    classes: Vec<usize>,
    model: ClassModel,
}

#[derive(Debug, Serialize, Deserialize)]
enum ClassModel {
    /// Trained on one class only, which it always predicts (smartcore needs two).
    Constant,
    Tree(DecisionTreeClassifier<f64, u32, Matrix, Labels>),
    Forest(RandomForestClassifier<f64, u32, Matrix, Labels>),
    Bayes(GaussianNB<f64, u32, Matrix, Labels>),
    Logistic(LogisticRegression<f64, u32, Matrix, Labels>),
    /// One hyperplane per label.
    Svm(Vec<Hyperplane>),
}

impl Classifier {
    /// Trains a classifier of `kind` on rows `x` labelled with the class indices `y`.
    /// `seed` makes the random forest and the SVM's visiting order reproducible; the other
    /// kinds are deterministic anyway.
    pub fn fit(
        kind: ClassifierKind,
        x: &[Vec<f64>],
        y: &[usize],
        seed: u64,
    ) -> Result<Classifier, ModelError> {
        check_features(x, y.len())?;
        let mut classes = y.to_vec();
        classes.sort_unstable();
        classes.dedup();
        let labels: Labels = y
            .iter()
            .map(|c| classes.binary_search(c).expect("every class is listed") as u32)
            .collect();
        let scaler = Scaler::fit(x);
        let k = classes.len();
        let model = if k == 1 {
            ClassModel::Constant
        } else {
            let z = scaler.matrix(x)?;
            let fail = |e: Failed| ModelError::Fit {
                model: kind.name(),
                message: e.to_string(),
            };
            match kind {
                ClassifierKind::DecisionTree => {
                    let params = DecisionTreeClassifierParameters {
                        seed: Some(seed),
                        ..DecisionTreeClassifierParameters::default()
                            .with_criterion(SplitCriterion::Entropy)
                            .with_min_samples_leaf(2)
                    };
                    ClassModel::Tree(
                        DecisionTreeClassifier::fit(&z, &labels, params).map_err(fail)?,
                    )
                }
                ClassifierKind::RandomForest => {
                    let params = RandomForestClassifierParameters::default()
                        .with_n_trees(FOREST_TREES)
                        .with_seed(seed);
                    ClassModel::Forest(
                        RandomForestClassifier::fit(&z, &labels, params).map_err(fail)?,
                    )
                }
                ClassifierKind::NaiveBayes => {
                    let (z2, labels2) = mirrored(&scaler, x, &labels)?;
                    let params = GaussianNBParameters::default();
                    ClassModel::Bayes(GaussianNB::fit(&z2, &labels2, params).map_err(fail)?)
                }
                ClassifierKind::Logistic => {
                    let params = LogisticRegressionParameters::default().with_alpha(LOGISTIC_ALPHA);
                    ClassModel::Logistic(
                        LogisticRegression::fit(&z, &labels, params).map_err(fail)?,
                    )
                }
                ClassifierKind::Svm => ClassModel::Svm(fit_svm(&scaler, x, &labels, k, seed)?),
            }
        };
        Ok(Classifier {
            kind,
            scaler,
            classes,
            model,
        })
    }

    /// The class of one row: an error where the row's width differs from the training rows', a
    /// value is not finite, or the model (a corrupt file) cannot predict.
    pub fn predict(&self, x: &[f64]) -> Result<usize, ModelError> {
        let labels = self.labels_of(vec![self.scaler.apply(x, 0)?])?;
        self.class_of(labels[0])
    }

    /// The class of each row (see [`Classifier::predict`]).
    pub fn predict_many(&self, x: &[Vec<f64>]) -> Result<Vec<usize>, ModelError> {
        if x.is_empty() {
            return Ok(Vec::new());
        }
        let z = self.scaler.apply_all(x)?;
        self.labels_of(z)?
            .into_iter()
            .map(|l| self.class_of(l))
            .collect()
    }

    /// The caller's class of a label.
    fn class_of(&self, label: u32) -> Result<usize, ModelError> {
        self.classes
            .get(label as usize)
            .copied()
            .ok_or_else(|| self.failed(format!("label {label} of {} classes", self.classes.len())))
    }

    fn failed(&self, message: String) -> ModelError {
        ModelError::Predict {
            model: self.kind.name(),
            message,
        }
    }

    /// The number of features it was trained on.
    pub fn width(&self) -> usize {
        self.scaler.width()
    }

    pub fn kind(&self) -> ClassifierKind {
        self.kind
    }

    /// The classes seen in training, ascending.
    pub fn classes(&self) -> &[usize] {
        &self.classes
    }

    /// The labels of standardised rows (at least one).
    fn labels_of(&self, z: Vec<Vec<f64>>) -> Result<Labels, ModelError> {
        let predicted = match &self.model {
            ClassModel::Constant => return Ok(vec![0; z.len()]),
            ClassModel::Svm(planes) => {
                return z
                    .iter()
                    .map(|row| {
                        best_plane(planes, row)
                            .ok_or_else(|| self.failed("a decision value is not a number".into()))
                    })
                    .collect()
            }
            ClassModel::Tree(m) => m.predict(&matrix(z)),
            ClassModel::Forest(m) => m.predict(&matrix(z)),
            ClassModel::Bayes(m) => m.predict(&matrix(z)),
            ClassModel::Logistic(m) => m.predict(&matrix(z)),
        };
        predicted.map_err(|e| self.failed(e.to_string()))
    }

    /// Whether its own parameters are sound for rows of `width` features: the scaler's
    /// statistics finite and positive, the SVM's hyperplanes (one per class, finite) and, for a
    /// model trained on one class, that class alone. What smartcore's models hold is checked by
    /// predicting (see [`crate::model::Model::check`]).
    pub fn check(&self, width: usize) -> Result<(), String> {
        self.scaler.check(width)?;
        if self.classes.is_empty() || self.classes.windows(2).any(|w| w[0] >= w[1]) {
            return Err("its classes are not distinct and ascending".into());
        }
        match &self.model {
            ClassModel::Constant if self.classes.len() != 1 => Err(format!(
                "a constant model of {} classes",
                self.classes.len()
            )),
            ClassModel::Svm(planes) => {
                if planes.len() != self.classes.len() {
                    return Err(format!(
                        "{} hyperplanes for {} classes",
                        planes.len(),
                        self.classes.len()
                    ));
                }
                match planes.iter().find(|p| {
                    p.w.len() != width || !p.b.is_finite() || p.w.iter().any(|w| !w.is_finite())
                }) {
                    Some(_) => Err(format!("a hyperplane that is not {width} finite numbers")),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }
}

/// Random-forest regression (Cummins §4.2-4.3): features to a number (a runtime, or a speedup
/// over the baseline). [`FOREST_TREES`] trees grown in full, a third of the features as
/// candidates per split (Breiman's default for regression).
#[derive(Debug, Serialize, Deserialize)]
pub struct Regressor {
    scaler: Scaler,
    forest: RandomForestRegressor<f64, f64, Matrix, Vec<f64>>,
}

impl Regressor {
    /// Trains on rows `x` with targets `y`; `seed` fixes bootstrap samples and split candidates.
    pub fn fit(x: &[Vec<f64>], y: &[f64], seed: u64) -> Result<Regressor, ModelError> {
        check_features(x, y.len())?;
        if let Some((row, &value)) = y.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(ModelError::NonFiniteTarget { row, value });
        }
        let scaler = Scaler::fit(x);
        let params = RandomForestRegressorParameters::default()
            .with_n_trees(usize::from(FOREST_TREES))
            .with_m((scaler.width() / 3).max(1))
            .with_seed(seed);
        let forest =
            RandomForestRegressor::fit(&scaler.matrix(x)?, &y.to_vec(), params).map_err(|e| {
                ModelError::Fit {
                    model: "random-forest regressor",
                    message: e.to_string(),
                }
            })?;
        Ok(Regressor { scaler, forest })
    }

    /// The prediction for one row (errors as [`Classifier::predict`]).
    pub fn predict(&self, x: &[f64]) -> Result<f64, ModelError> {
        Ok(self.values_of(matrix(vec![self.scaler.apply(x, 0)?]))?[0])
    }

    /// The prediction for each row (see [`Regressor::predict`]).
    pub fn predict_many(&self, x: &[Vec<f64>]) -> Result<Vec<f64>, ModelError> {
        if x.is_empty() {
            return Ok(Vec::new());
        }
        self.values_of(matrix(self.scaler.apply_all(x)?))
    }

    fn values_of(&self, z: Matrix) -> Result<Vec<f64>, ModelError> {
        self.forest.predict(&z).map_err(|e| ModelError::Predict {
            model: "random-forest regressor",
            message: e.to_string(),
        })
    }
}

/// Refuses training data that no model can use: empty, counts that disagree, no features,
/// rows of different widths, values that are not finite.
fn check_features(x: &[Vec<f64>], targets: usize) -> Result<(), ModelError> {
    if x.is_empty() {
        return Err(ModelError::Empty);
    }
    if x.len() != targets {
        return Err(ModelError::LengthMismatch {
            rows: x.len(),
            targets,
        });
    }
    let expected = x[0].len();
    if expected == 0 {
        return Err(ModelError::NoFeatures);
    }
    for (row, values) in x.iter().enumerate() {
        if values.len() != expected {
            return Err(ModelError::Ragged {
                row,
                len: values.len(),
                expected,
            });
        }
        if let Some((col, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(ModelError::NonFinite { row, col, value });
        }
    }
    Ok(())
}

/// Per-column standardisation with the training set's mean and standard deviation. Any finite
/// value is fine: statistics that would overflow (values near the largest `f64`) are computed on
/// the column divided by its largest magnitude, and a standardised value beyond
/// [`MAX_STANDARD_SCORE`] is clamped to it, so every model sees finite numbers of a bounded size
/// (a naive Bayes likelihood of a value 1e308 away from every class mean would be NaN).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Scaler {
    mean: Vec<f64>,
    scale: Vec<f64>,
}

impl Scaler {
    /// Statistics of checked rows (non-empty, rectangular, finite).
    fn fit(x: &[Vec<f64>]) -> Scaler {
        let width = x[0].len();
        let (mean, scale) = (0..width)
            .map(|j| {
                let column: Vec<f64> = x.iter().map(|row| row[j]).collect();
                let (mean, sd) = match mean_and_sd(&column) {
                    (mean, sd) if mean.is_finite() && sd.is_finite() => (mean, sd),
                    _ => {
                        // Only values near f64::MAX overflow: their largest magnitude is >= 1.
                        let big = column.iter().fold(0f64, |m, v| m.max(v.abs()));
                        let scaled: Vec<f64> = column.iter().map(|v| v / big).collect();
                        let (mean, sd) = mean_and_sd(&scaled);
                        (mean * big, sd * big)
                    }
                };
                // A constant column keeps scale 1: dividing by a spread that is only rounding
                // error would blow that error up to values of order 1.
                let scale = if sd > 1e-12 * mean.abs().max(1.0) {
                    sd
                } else {
                    1.0
                };
                (mean, scale)
            })
            .unzip();
        Scaler { mean, scale }
    }

    fn width(&self) -> usize {
        self.mean.len()
    }

    /// Statistics a model can have been trained with.
    fn check(&self, width: usize) -> Result<(), String> {
        if self.mean.len() != width || self.scale.len() != width {
            return Err(format!(
                "the scaler has {} means and {} scales for {width} features",
                self.mean.len(),
                self.scale.len()
            ));
        }
        if self.mean.iter().any(|m| !m.is_finite())
            || self.scale.iter().any(|s| !(s.is_finite() && *s > 0.0))
        {
            return Err("the scaler's statistics are not finite and positive".into());
        }
        Ok(())
    }

    /// Row `row` (named so in errors) standardised and clamped to [`MAX_STANDARD_SCORE`]; an
    /// error where its width is not the training rows' or a value is not finite.
    fn apply(&self, values: &[f64], row: usize) -> Result<Vec<f64>, ModelError> {
        if values.len() != self.width() {
            return Err(ModelError::Width {
                len: values.len(),
                expected: self.width(),
            });
        }
        if let Some((col, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(ModelError::NonFinite { row, col, value });
        }
        // `v - m` of two finite numbers may overflow to an infinity, never to NaN.
        Ok(values
            .iter()
            .zip(self.mean.iter().zip(&self.scale))
            .map(|(v, (m, s))| ((v - m) / s).clamp(-MAX_STANDARD_SCORE, MAX_STANDARD_SCORE))
            .collect())
    }

    /// Every row standardised (see [`Scaler::apply`]).
    fn apply_all(&self, x: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, ModelError> {
        x.iter()
            .enumerate()
            .map(|(i, row)| self.apply(row, i))
            .collect()
    }

    /// The standardised matrix of checked rows.
    fn matrix(&self, x: &[Vec<f64>]) -> Result<Matrix, ModelError> {
        Ok(matrix(self.apply_all(x)?))
    }
}

/// The mean and the population standard deviation of a non-empty column (infinite or NaN where
/// the sums overflow).
fn mean_and_sd(column: &[f64]) -> (f64, f64) {
    let n = column.len() as f64;
    let mean = column.iter().sum::<f64>() / n;
    let var = column.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// Rows (at least one, all the same width) as a smartcore matrix, column-major as smartcore
/// builds its own.
fn matrix(z: Vec<Vec<f64>>) -> Matrix {
    let (rows, width) = (z.len(), z[0].len());
    let values = if rows == 1 {
        // One row reads the same in either order: no copy.
        z.into_iter().next().expect("one row")
    } else {
        (0..width)
            .flat_map(|j| z.iter().map(move |row| row[j]))
            .collect()
    };
    DenseMatrix::new(rows, width, values, true).expect("the shape matches the values")
}

/// The training rows for naive Bayes, each twice: standardised, plus and minus
/// sqrt([`BAYES_VAR_SMOOTHING`]) in every feature. smartcore's Gaussian naive Bayes has no
/// variance smoothing, and a feature that is constant within a class (any class seen once,
/// any device feature of a class seen on one device) has variance 0 there, which makes that
/// class's likelihood NaN and the class unpredictable. The mirrored pair keeps every class
/// mean and class proportion and adds exactly the smoothing to every variance.
fn mirrored(
    scaler: &Scaler,
    x: &[Vec<f64>],
    labels: &[u32],
) -> Result<(Matrix, Labels), ModelError> {
    let delta = BAYES_VAR_SMOOTHING.sqrt();
    let mut rows = Vec::with_capacity(2 * x.len());
    let mut doubled = Vec::with_capacity(2 * x.len());
    for (row, &label) in x.iter().zip(labels) {
        let z = scaler.apply(row, doubled.len() / 2)?;
        for sign in [1.0, -1.0] {
            rows.push(z.iter().map(|v| v + sign * delta).collect());
            doubled.push(label);
        }
    }
    Ok((matrix(rows), doubled))
}

/// A linear decision function `w . z + b` over standardised features.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Hyperplane {
    w: Vec<f64>,
    b: f64,
}

impl Hyperplane {
    fn value(&self, z: &[f64]) -> f64 {
        self.b + self.w.iter().zip(z).map(|(w, z)| w * z).sum::<f64>()
    }
}

/// The label whose hyperplane gives the largest value (the lowest label on a tie); none where a
/// value is NaN.
fn best_plane(planes: &[Hyperplane], z: &[f64]) -> Option<u32> {
    let mut best = (0, f64::NEG_INFINITY);
    for (label, plane) in planes.iter().enumerate() {
        let v = plane.value(z);
        if v.is_nan() {
            return None;
        }
        if v > best.1 {
            best = (label, v);
        }
    }
    Some(best.0 as u32)
}

/// One linear SVM per label against all the others (smartcore's SVC is binary).
///
/// Two limits of smartcore's SVC shape this. A fitted SVC cannot predict after a serde round
/// trip (its parameters, with the kernel, are not serialised), so each one is turned into its
/// hyperplane, which for the linear kernel is the whole model: smartcore's own decision
/// function evaluated at the origin gives `b` and at each unit vector `b + w_j`. And its
/// solver truncates training rows to as many features as there are rows (it then panics when
/// predicting), so with fewer rows than features every row is repeated r times and C divided
/// by r, which leaves the soft-margin optimum unchanged.
fn fit_svm(
    scaler: &Scaler,
    x: &[Vec<f64>],
    labels: &[u32],
    k: usize,
    seed: u64,
) -> Result<Vec<Hyperplane>, ModelError> {
    let width = scaler.width();
    let repeats = width.div_ceil(x.len()).max(1);
    let rows: Vec<Vec<f64>> = (0..repeats).flat_map(|_| x.iter().cloned()).collect();
    let z = scaler.matrix(&rows)?;
    let probe: Vec<Vec<f64>> = std::iter::once(vec![0.0; width])
        .chain((0..width).map(|j| {
            let mut e = vec![0.0; width];
            e[j] = 1.0;
            e
        }))
        .collect();
    let probe = matrix(probe);
    let params = SVCParameters::default()
        .with_kernel(Kernels::linear())
        .with_c(SVM_C / repeats as f64)
        .with_epoch(SVM_EPOCHS)
        .with_seed(Some(seed));
    let fail = |e: Failed| ModelError::Fit {
        model: ClassifierKind::Svm.name(),
        message: e.to_string(),
    };
    (0..k as u32)
        .map(|class| {
            // Label 1 is the class: smartcore's decision value is positive for the larger label.
            let ovr: Labels = (0..repeats)
                .flat_map(|_| labels.iter().map(|&l| u32::from(l == class)))
                .collect();
            let values = SVC::fit(&z, &ovr, &params)
                .and_then(|svc| svc.decision_function(&probe))
                .map_err(fail)?;
            let b = values[0];
            Ok(Hyperplane {
                w: values[1..].iter().map(|v| v - b).collect(),
                b,
            })
        })
        .collect()
}
