//! Learning in ndtune: predicting good launch configurations from what is known about a
//! scenario before anything is measured (Cummins et al. 2016, §3).
//!
//! This crate owns the features of a scenario ([`features`]): a fixed, named list of numbers
//! describing the device, the kernel and the dataset, in a stable order so that they can be
//! stored as CSV columns; what a collection campaign kept in a results store ([`collected`]);
//! what exhaustive measurements say ([`oracle`]: legal and safe sizes,
//! oracles, the baseline); and the models that learn from those features and predict from them.
//!
//! ```
//! use ndtune_learn::features::{self, Dataset};
//! let gpu = ndtune_device::builtin::find("gt550m").unwrap();
//! let data = Dataset {
//!     rows: 1024,
//!     cols: 1024,
//!     input: "float".into(),
//!     output: "float".into(),
//!     border: [1, 1, 1, 1],
//! };
//! let source = "kernel void copy(global float *a, global float *b) { b[0] = a[0]; }";
//! let f = features::scenario_features(&gpu, source, "", &data).unwrap();
//! assert_eq!(f.names, features::feature_names());
//! assert_eq!(f.get("f_dev_compute_units"), Some(2.0));
//! assert_eq!(f.get("f_data_stencil_area"), Some(9.0));
//! ```

pub mod collected;
pub mod data;
pub mod eval;
pub mod features;
pub mod model;
pub mod models;
pub mod oracle;
pub mod text;
