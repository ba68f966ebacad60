//! A trained predictor saved to a file: a classifier of the oracle work-group size with the
//! feature list it was trained on, its classes, the sizes of the training data best fixed
//! choice first (for the nearest-neighbour fallback), and its training rows (so that it can be
//! trained again with what programs observed later: online learning). The file has a format
//! version; a file of another version, or features other than the scenario's, is refused with a
//! clear error.

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
            kind,
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
            self.classifier.kind(),
            seed,
        )
    }

    fn fit(
        feature_names: Vec<String>,
        training: Vec<TrainingRow>,
        ranking: Vec<Wg>,
        kind: ClassifierKind,
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
        Ok(Model {
            format: FORMAT,
            ndtune_version: env!("CARGO_PKG_VERSION").to_string(),
            feature_names,
            classes,
            ranking,
            classifier,
            training,
        })
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(
            path,
            serde_json::to_string(self).expect("a model serialises"),
        )
    }

    pub fn load(path: &Path) -> Result<Model, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
            path: path.to_path_buf(),
            source,
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
        serde_json::from_value(value).map_err(|e| not_a_model(e.to_string()))
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
        Ok(self.predict_row(&row, legal))
    }

    /// [`Model::predict`] for a row of values already in [`Model::feature_names`] order.
    pub fn predict_row(&self, row: &[f64], legal: impl Fn(Wg) -> bool) -> Option<Prediction> {
        let wg = self.classes[self.classifier.predict(row)];
        if legal(wg) {
            return Some(Prediction {
                wg,
                fell_back: false,
            });
        }
        let d = |w: &Wg| {
            let (dc, dr) = (w.0 as f64 - wg.0 as f64, w.1 as f64 - wg.1 as f64);
            dc * dc + dr * dr
        };
        self.ranking
            .iter()
            .copied()
            .filter(|&w| legal(w))
            .min_by(|a, b| d(a).total_cmp(&d(b)).then(a.cmp(b)))
            .map(|wg| Prediction {
                wg,
                fell_back: true,
            })
    }
}
