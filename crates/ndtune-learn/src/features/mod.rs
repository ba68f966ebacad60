//! The features of a scenario (a device, a kernel with its build options, a dataset), after
//! Cummins et al. 2016 §3.2: OpenCL device properties, static instruction counts and densities of
//! the kernel's LLVM IR, and the dataset's size, types and stencil borders.
//!
//! This module owns the feature names and their order. Every name starts with `f_dev_`, `f_ker_`
//! or `f_data_`; [`feature_names`] is the full list, which does not depend on any scenario, so it
//! can head a CSV file whose rows are [`scenario_features`].

mod dataset;
mod device;
mod ir;
mod kernel;
pub mod untrusted;

pub use dataset::{dataset_features, Dataset};
pub use device::device_features;
#[cfg(feature = "unscanned")]
pub use kernel::request_kernel_features_unscanned;
pub use kernel::{client_sandbox, kernel_features, request_kernel_features};

use ndtune_device::DeviceProfile;

/// Why a scenario's features could not be extracted.
#[derive(Debug, thiserror::Error)]
pub enum FeatureError {
    #[error("cannot run clang to extract kernel features (is clang installed and on PATH, or NDTUNE_CLANG set?): {0}")]
    Clang(#[source] std::io::Error),
    #[error("clang cannot compile the kernel with build options `{options}`:\n{stderr}")]
    Compile { options: String, stderr: String },
    #[error("{0}")]
    Refused(String),
    #[error("the kernel's LLVM IR holds no instructions: the source defines no function")]
    NoInstructions,
    #[error("dataset {field} type `{name}` is not an OpenCL C scalar type (int, float, ...)")]
    UnknownType { field: &'static str, name: String },
}

/// One scenario's features, by name, in [`feature_names`] order.
#[derive(Debug, Clone, PartialEq)]
pub struct Features {
    pub names: Vec<String>,
    pub values: Vec<f64>,
}

impl Features {
    /// The value of the feature called `name`, or `None` for an unknown name.
    pub fn get(&self, name: &str) -> Option<f64> {
        let i = self.names.iter().position(|n| n == name)?;
        self.values.get(i).copied()
    }

    /// Every feature as (name, value), in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.names
            .iter()
            .map(String::as_str)
            .zip(self.values.iter().copied())
    }
}

impl FromIterator<(String, f64)> for Features {
    fn from_iter<I: IntoIterator<Item = (String, f64)>>(pairs: I) -> Self {
        let (names, values) = pairs.into_iter().unzip();
        Features { names, values }
    }
}

/// Every feature name, device then kernel then dataset: the CSV column order.
pub fn feature_names() -> Vec<String> {
    let mut names: Vec<String> = device::NAMES.iter().map(|n| n.to_string()).collect();
    names.extend(kernel::names());
    names.extend(dataset::NAMES.iter().map(|n| n.to_string()));
    names
}

/// All features of one scenario, in [`feature_names`] order. Unlike [`dataset_features`], which
/// gives NaN for a type it does not know, this refuses such a dataset: a misspelt type name
/// should not reach a model as a missing value.
pub fn scenario_features(
    profile: &DeviceProfile,
    source: &str,
    build_options: &str,
    dataset: &Dataset,
) -> Result<Features, FeatureError> {
    dataset.check_types()?;
    let kernel = kernel_features(source, build_options)?;
    Ok(device_features(profile)
        .into_iter()
        .chain(kernel)
        .chain(dataset_features(dataset))
        .collect())
}
