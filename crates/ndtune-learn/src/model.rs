//! A trained predictor saved to a file: a classifier of the oracle work-group size with the
//! feature list it was trained on, its classes, and the sizes of the training data best fixed
//! choice first (for the nearest-neighbour fallback). The file has a format version; a file of
//! another version, or features other than the scenario's, is refused with a clear error.

use crate::data::Data;
use crate::eval::{fixed_ranking, oracles};
use crate::models::{Classifier, ClassifierKind, ModelError};
use crate::oracle::Wg;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The model file format this ndtune writes and reads.
pub const FORMAT: u32 = 1;

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
        let oracle = oracles(data);
        let mut classes: Vec<Wg> = oracle.clone();
        classes.sort();
        classes.dedup();
        let x: Vec<Vec<f64>> = data.scenarios.iter().map(|s| s.features.clone()).collect();
        let y: Vec<usize> = oracle
            .iter()
            .map(|w| classes.binary_search(w).expect("a class"))
            .collect();
        Ok(Model {
            format: FORMAT,
            ndtune_version: env!("CARGO_PKG_VERSION").to_string(),
            feature_names: data.feature_names.clone(),
            classes,
            ranking: fixed_ranking(data),
            classifier: Classifier::fit(kind, &x, &y, seed)?,
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
        let wg = self.classes[self.classifier.predict(&row)];
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
