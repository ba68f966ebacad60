//! A trained predictor saved to a file: a classifier of the oracle work-group size with the
//! feature list it was trained on, its classes, the sizes of the training data best fixed
//! choice first (for the nearest-neighbour fallback), and its training rows (so that it can be
//! trained again with what programs observed later: online learning). The file has a format
//! version; a file of another version, or features other than the scenario's, is refused with a
//! clear error. Every model is checked before it is used, trained or loaded ([`Model::check`]):
//! it must predict a size it knows for each of its own training rows. Its [`Reach`] says how far
//! beyond its training data a scenario may lie for the model to learn from it.

use crate::data::Data;
use crate::eval::{fixed_ranking, oracles};
use crate::models::{Classifier, ClassifierKind, ModelError};
use crate::oracle::Wg;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The model file format this ndtune writes and reads.
pub const FORMAT: u32 = 2;

#[derive(Debug, Serialize, Deserialize)]
pub struct Model {
    pub format: u32,
    pub ndtune_version: String,
    pub feature_names: Vec<String>,
    /// Class index -> work-group size.
    pub classes: Vec<Wg>,
    /// Every training size, best fixed choice first.
    pub ranking: Vec<Wg>,
    pub classifier: Classifier,
    /// What the classifier learnt from: one row per scenario.
    pub training: Vec<TrainingRow>,
    /// The objective its oracle sizes are best for (`energy_j (lower is better)`, from the
    /// collection's `objective` column); `None`: the run time, which programs' observations
    /// are, so only then can they teach it.
    #[serde(default)]
    pub objective: Option<String>,
}

/// One training scenario: its features (in the model's feature order) and its oracle size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingRow {
    pub features: Vec<f64>,
    pub oracle: Wg,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not an ndtune model file: {message}")]
    NotAModel { path: PathBuf, message: String },
    #[error("{path}: model format {found}, but this ndtune reads format {FORMAT}: train the model again")]
    Format { path: PathBuf, found: u32 },
    #[error("{path}: a broken model: {message}")]
    Broken { path: PathBuf, message: String },
}

/// A prediction and how it was reached.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub wg: Wg,
    /// The classifier's own choice was not legal here: the nearest legal size was taken.
    pub fell_back: bool,
}

impl Model {
    /// Trains a classifier of the oracle size on every scenario of `data`.
    pub fn train(data: &Data, kind: ClassifierKind, seed: u64) -> Result<Model, ModelError> {
        let rows = data
            .scenarios
            .iter()
            .zip(oracles(data))
            .map(|(s, oracle)| TrainingRow {
                features: s.features.clone(),
                oracle,
            })
            .collect();
        Model::fit(
            data.feature_names.clone(),
            rows,
            fixed_ranking(data),
            (kind, data.objective.clone()),
            seed,
        )
    }

    /// This model's classifier trained again on its training rows and `observed` ones (same
    /// feature order): a row with the same features as a training row replaces it, being the
    /// newer knowledge of that scenario. Sizes new to the model join the end of its ranking.
    pub fn retrained(&self, observed: &[TrainingRow], seed: u64) -> Result<Model, ModelError> {
        let mut rows: Vec<TrainingRow> = self
            .training
            .iter()
            .filter(|t| !observed.iter().any(|o| o.features == t.features))
            .cloned()
            .collect();
        rows.extend_from_slice(observed);
        let mut ranking = self.ranking.clone();
        for o in observed {
            if !ranking.contains(&o.oracle) {
                ranking.push(o.oracle);
            }
        }
        Model::fit(
            self.feature_names.clone(),
            rows,
            ranking,
            (self.classifier.kind(), self.objective.clone()),
            seed,
        )
    }

    fn fit(
        feature_names: Vec<String>,
        training: Vec<TrainingRow>,
        ranking: Vec<Wg>,
        (kind, objective): (ClassifierKind, Option<String>),
        seed: u64,
    ) -> Result<Model, ModelError> {
        let mut classes: Vec<Wg> = training.iter().map(|t| t.oracle).collect();
        classes.sort();
        classes.dedup();
        let x: Vec<Vec<f64>> = training.iter().map(|t| t.features.clone()).collect();
        let y: Vec<usize> = training
            .iter()
            .map(|t| classes.binary_search(&t.oracle).expect("a class"))
            .collect();
        let classifier = Classifier::fit(kind, &x, &y, seed)?;
        let model = Model {
            format: FORMAT,
            ndtune_version: env!("CARGO_PKG_VERSION").to_string(),
            feature_names,
            classes,
            ranking,
            classifier,
            training,
            objective,
        };
        model.check().map_err(|message| ModelError::Fit {
            model: kind.name(),
            message: format!("the trained model does not check out: {message}"),
        })?;
        Ok(model)
    }

    /// Whether the model is sound: its parts agree in their widths and classes (every class a
    /// work-group size of two positive sides), its statistics are finite, and it predicts one of
    /// its classes for each of its training rows. A trained model that fails is not used; a
    /// file that fails is refused.
    pub fn check(&self) -> Result<(), String> {
        let width = self.feature_names.len();
        if width == 0 {
            return Err("no features".into());
        }
        self.classifier.check(width)?;
        if self.classes.is_empty() || self.classes.iter().any(|&(c, r)| c == 0 || r == 0) {
            return Err("its classes are not work-group sizes".into());
        }
        if let Some(&c) = self.classifier.classes().last() {
            if c >= self.classes.len() {
                return Err(format!(
                    "the classifier knows class {c} of {}",
                    self.classes.len()
                ));
            }
        }
        if self.training.is_empty() {
            return Err("no training rows".into());
        }
        if let Some(i) = self
            .training
            .iter()
            .position(|t| t.features.len() != width || t.features.iter().any(|v| !v.is_finite()))
        {
            return Err(format!("training row {i} is not {width} finite numbers"));
        }
        // What smartcore's models hold is only seen by using them; a corrupt file may make
        // them panic rather than fail.
        let rows: Vec<Vec<f64>> = self.training.iter().map(|t| t.features.clone()).collect();
        let predicted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.classifier.predict_many(&rows)
        }))
        .map_err(|_| "predicting its own training rows panicked".to_string())?
        .map_err(|e| format!("predicting its own training rows: {e}"))?;
        match predicted.iter().position(|&c| c >= self.classes.len()) {
            Some(i) => Err(format!("training row {i} predicts an unknown class")),
            None => Ok(()),
        }
    }

    /// The range of each feature that the model can learn from (see [`Reach`]).
    pub fn reach(&self) -> Reach {
        Reach::of(&self.training, self.feature_names.len())
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text)
    }

    pub fn load(path: &Path) -> Result<Model, LoadError> {
        let text = ndtune_core::input::read_text(path, ndtune_core::input::MODEL).map_err(|e| {
            LoadError::Io {
                path: path.to_path_buf(),
                source: e.into(),
            }
        })?;
        let not_a_model = |message: String| LoadError::NotAModel {
            path: path.to_path_buf(),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| not_a_model(e.to_string()))?;
        match value.get("format").and_then(|f| f.as_u64()) {
            Some(f) if f == u64::from(FORMAT) => {}
            Some(f) => {
                return Err(LoadError::Format {
                    path: path.to_path_buf(),
                    found: f as u32,
                })
            }
            None => return Err(not_a_model("no `format` field".into())),
        }
        let model: Model = serde_json::from_value(value).map_err(|e| not_a_model(e.to_string()))?;
        model.check().map_err(|message| LoadError::Broken {
            path: path.to_path_buf(),
            message,
        })?;
        Ok(model)
    }

    /// The predicted size for a scenario with `features` (named, in any order); `legal` says
    /// whether a size can run there. Where the classifier's size cannot, the legal size of the
    /// training data nearest to it in (wc, wr) is taken (Algorithm 1's nearest neighbour).
    pub fn predict(
        &self,
        features: &[(String, f64)],
        legal: impl Fn(Wg) -> bool,
    ) -> Result<Option<Prediction>, String> {
        if features.len() != self.feature_names.len()
            || features
                .iter()
                .zip(&self.feature_names)
                .any(|((a, _), b)| a != b)
        {
            let first = self
                .feature_names
                .iter()
                .zip(features.iter().map(|(n, _)| n))
                .find(|(a, b)| a != b)
                .map_or("their number".to_string(), |(a, b)| {
                    format!("`{a}` against `{b}`")
                });
            return Err(format!(
                "the model was trained on {} features and the scenario has {}; they differ first at {first}: train the model again with this ndtune",
                self.feature_names.len(),
                features.len()
            ));
        }
        let row: Vec<f64> = features.iter().map(|(_, v)| *v).collect();
        self.predict_row(&row, legal).map_err(|e| e.to_string())
    }

    /// [`Model::predict`] for a row of values already in [`Model::feature_names`] order: none
    /// where no size it knows is legal; an error where the row is not of the model's width or
    /// not finite, or the classifier fails.
    pub fn predict_row(
        &self,
        row: &[f64],
        legal: impl Fn(Wg) -> bool,
    ) -> Result<Option<Prediction>, ModelError> {
        let class = self.classifier.predict(row)?;
        let wg = *self.classes.get(class).ok_or_else(|| ModelError::Predict {
            model: self.classifier.kind().name(),
            message: format!("class {class} of {}", self.classes.len()),
        })?;
        if legal(wg) {
            return Ok(Some(Prediction {
                wg,
                fell_back: false,
            }));
        }
        let d = |w: &Wg| {
            let (dc, dr) = (w.0 as f64 - wg.0 as f64, w.1 as f64 - wg.1 as f64);
            dc * dc + dr * dr
        };
        Ok(self
            .ranking
            .iter()
            .copied()
            .filter(|&w| legal(w))
            .min_by(|a, b| d(a).total_cmp(&d(b)).then(a.cmp(b)))
            .map(|wg| Prediction {
                wg,
                fell_back: true,
            }))
    }
}

/// How far beyond its training data a scenario may lie for a model to learn from it, as a
/// multiple of the largest magnitude a feature has in the training rows (at least 1).
pub const REACH: f64 = 10.0;

/// The range of each feature that a model learns from: its training rows' range widened on
/// both sides by [`REACH`] times the largest magnitude there (at least 1), except that a feature
/// never negative in training stays at or above 0. A scenario outside it (a feature of 1e308,
/// say) would dominate the standardisation of every feature it is trained with again and move
/// the answers for every other scenario, so the service does not learn from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reach {
    bounds: Vec<(f64, f64)>,
}

impl Reach {
    /// The reach of `rows` (finite, `width` features each).
    pub fn of(rows: &[TrainingRow], width: usize) -> Reach {
        let bounds = (0..width)
            .map(|j| {
                let (lo, hi) = rows
                    .iter()
                    .filter_map(|r| r.features.get(j))
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                        (lo.min(v), hi.max(v))
                    });
                if lo > hi {
                    return (f64::NEG_INFINITY, f64::INFINITY);
                }
                let margin = REACH * lo.abs().max(hi.abs()).max(1.0);
                let floor = if lo >= 0.0 { 0.0 } else { lo - margin };
                (floor, hi + margin)
            })
            .collect();
        Reach { bounds }
    }

    /// The bounds of feature `j`.
    pub fn bounds(&self, j: usize) -> Option<(f64, f64)> {
        self.bounds.get(j).copied()
    }

    /// Whether `value` of feature `j` is outside its bounds (or not finite).
    pub fn outside_at(&self, j: usize, value: f64) -> bool {
        self.bounds
            .get(j)
            .is_some_and(|&(lo, hi)| !(value.is_finite() && lo <= value && value <= hi))
    }

    /// The first feature of `row` (in the model's order) outside its bounds (or not finite),
    /// with the bounds.
    pub fn outside(&self, row: &[f64]) -> Option<(usize, (f64, f64))> {
        (0..row.len().min(self.bounds.len()))
            .find(|&j| self.outside_at(j, row[j]))
            .map(|j| (j, self.bounds[j]))
    }
}
