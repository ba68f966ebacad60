//! The [`DeviceProfile`] type, its JSON form and the `device.*` properties it exposes.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// The kind of device, as `CL_DEVICE_TYPE` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceType {
    Cpu,
    Gpu,
    Accelerator,
    Custom,
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceType::Cpu => "CPU",
            DeviceType::Gpu => "GPU",
            DeviceType::Accelerator => "ACCELERATOR",
            DeviceType::Custom => "CUSTOM",
        })
    }
}

/// One device's identity and limits. Field names follow `clGetDeviceInfo`'s `CL_DEVICE_*`
/// names in lower case (`compute_units` is `CL_DEVICE_MAX_COMPUTE_UNITS`); sizes are in bytes,
/// the clock in MHz. Every field without a default is required in a profile file, so a profile
/// saved by hand cannot silently lack a limit the pruner needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    pub name: String,
    pub vendor: String,
    pub device_type: DeviceType,
    /// `CL_DEVICE_VERSION`, e.g. "OpenCL 3.0 PoCL ...".
    pub version: String,
    #[serde(default)]
    pub driver_version: String,
    #[serde(default)]
    pub platform_name: String,
    pub compute_units: u64,
    /// MHz.
    pub max_clock_frequency: u64,
    pub max_work_group_size: u64,
    /// One entry per dimension (`CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS` of them, usually 3).
    pub max_work_item_sizes: Vec<u64>,
    pub local_mem_size: u64,
    pub global_mem_size: u64,
    pub global_mem_cache_size: u64,
    #[serde(default)]
    pub global_mem_cacheline_size: u64,
    #[serde(default)]
    pub max_mem_alloc_size: u64,
    #[serde(default)]
    pub max_constant_buffer_size: u64,
    /// `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` of a trivial kernel: the SIMD width the
    /// driver wants work-groups to be a multiple of.
    pub preferred_work_group_size_multiple: u64,
    #[serde(default)]
    pub extensions: Vec<String>,
    /// A CUDA device's limits beyond those OpenCL names (absent for an OpenCL device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<CudaLimits>,
}

/// What a CUDA device reports beyond the limits it shares with OpenCL (threads per block is
/// `max_work_group_size`, block dimensions `max_work_item_sizes`, static shared memory per
/// block `local_mem_size`, the warp `preferred_work_group_size_multiple`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaLimits {
    /// `MAJOR.MINOR`, e.g. "9.0": the architecture NVRTC compiles for (`sm_90`).
    pub compute_capability: String,
    /// Blocks per grid, per dimension.
    pub max_grid_size: Vec<u64>,
    /// Shared memory a block may have once it opts in (static and dynamic together).
    pub shared_mem_per_block_optin: u64,
    /// 32-bit registers a block may use, all its threads together.
    pub registers_per_block: u64,
    pub registers_per_multiprocessor: u64,
    pub max_threads_per_multiprocessor: u64,
}

/// The `device.*` names a constraint expression may use, in the order they are documented.
pub const PROPERTY_NAMES: &[&str] = &[
    "max_work_group_size",
    "max_work_item_size_x",
    "max_work_item_size_y",
    "max_work_item_size_z",
    "max_work_item_dimensions",
    "compute_units",
    "max_clock_frequency",
    "local_mem_size",
    "global_mem_size",
    "global_mem_cache_size",
    "global_mem_cacheline_size",
    "max_mem_alloc_size",
    "max_constant_buffer_size",
    "preferred_work_group_size_multiple",
    "is_cpu",
    "is_gpu",
    "has_fp64",
    "is_cuda",
    "compute_capability",
    "max_grid_size_x",
    "max_grid_size_y",
    "max_grid_size_z",
    "shared_mem_per_block_optin",
    "registers_per_block",
];

/// Why a profile could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profile file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: not a device profile: {message}")]
    Parse {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: holds {count} profiles; a profile file must hold exactly one (save one with `ndtune devices --json --device SEL`)")]
    NotOne { path: String, count: usize },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl DeviceProfile {
    /// The value of a `device.*` property, or `None` for an unknown name.
    pub fn property(&self, name: &str) -> Option<i64> {
        let item = |d: usize| self.max_work_item_sizes.get(d).copied().unwrap_or(1);
        let v = match name {
            "max_work_group_size" => self.max_work_group_size,
            "max_work_item_size_x" => item(0),
            "max_work_item_size_y" => item(1),
            "max_work_item_size_z" => item(2),
            "max_work_item_dimensions" => self.max_work_item_sizes.len() as u64,
            "compute_units" => self.compute_units,
            "max_clock_frequency" => self.max_clock_frequency,
            "local_mem_size" => self.local_mem_size,
            "global_mem_size" => self.global_mem_size,
            "global_mem_cache_size" => self.global_mem_cache_size,
            "global_mem_cacheline_size" => self.global_mem_cacheline_size,
            "max_mem_alloc_size" => self.max_mem_alloc_size,
            "max_constant_buffer_size" => self.max_constant_buffer_size,
            "preferred_work_group_size_multiple" => self.preferred_work_group_size_multiple,
            "is_cpu" => u64::from(self.device_type == DeviceType::Cpu),
            "is_gpu" => u64::from(self.device_type == DeviceType::Gpu),
            "has_fp64" => {
                u64::from(self.cuda.is_some() || self.extensions.iter().any(|e| e == "cl_khr_fp64"))
            }
            // CUDA's own limits: 0 for an OpenCL device, whose model has no such limit.
            "is_cuda" => u64::from(self.cuda.is_some()),
            "compute_capability" => self.cuda.as_ref().map_or(0, |c| {
                let (major, minor) = c.compute_capability.split_once('.').unwrap_or(("0", "0"));
                major.parse::<u64>().unwrap_or(0) * 10 + minor.parse::<u64>().unwrap_or(0)
            }),
            "max_grid_size_x" | "max_grid_size_y" | "max_grid_size_z" => {
                let d = usize::from(name.as_bytes()[name.len() - 1] - b'x');
                self.cuda
                    .as_ref()
                    .map_or(0, |c| c.max_grid_size.get(d).copied().unwrap_or(1))
            }
            "shared_mem_per_block_optin" => self
                .cuda
                .as_ref()
                .map_or(0, |c| c.shared_mem_per_block_optin),
            "registers_per_block" => self.cuda.as_ref().map_or(0, |c| c.registers_per_block),
            _ => return None,
        };
        Some(i64::try_from(v).unwrap_or(i64::MAX))
    }

    /// All `device.*` properties with their values, in [`PROPERTY_NAMES`] order.
    pub fn properties(&self) -> Vec<(&'static str, i64)> {
        PROPERTY_NAMES
            .iter()
            .map(|&n| (n, self.property(n).expect("every listed property is known")))
            .collect()
    }

    /// The maximum work-item size of dimension `d` (0-based); 1 beyond the device's dimensions.
    pub fn max_work_item_size(&self, d: usize) -> u64 {
        self.max_work_item_sizes.get(d).copied().unwrap_or(1)
    }

    /// Checks the limits a profile must have to be usable: no zero limit, 1 to 3 dimensions.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_work_item_sizes.is_empty() || self.max_work_item_sizes.len() > 3 {
            return Err(format!(
                "max_work_item_sizes has {} entries; OpenCL devices have 1 to 3",
                self.max_work_item_sizes.len()
            ));
        }
        for (field, v) in [
            ("compute_units", self.compute_units),
            ("max_work_group_size", self.max_work_group_size),
            ("local_mem_size", self.local_mem_size),
        ] {
            if v == 0 {
                return Err(format!("{field} is 0"));
            }
        }
        if let Some(d) = self.max_work_item_sizes.iter().position(|&s| s == 0) {
            return Err(format!("max_work_item_sizes[{d}] is 0"));
        }
        Ok(())
    }

    /// Reads one profile from a JSON file: a `DeviceProfile` object, or an array holding exactly
    /// one (the output of `ndtune devices --json --device SEL`).
    pub fn load(path: &Path) -> Result<DeviceProfile, ProfileError> {
        let shown = path.display().to_string();
        let text =
            ndtune_core::input::read_text(path, ndtune_core::input::PROFILE).map_err(|e| {
                ProfileError::Read {
                    path: shown.clone(),
                    source: e.into(),
                }
            })?;
        Self::from_json(&text, &shown)
    }

    /// Parses [`DeviceProfile::load`]'s format from text; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<DeviceProfile, ProfileError> {
        let parse_error = |e: serde_json::Error| ProfileError::Parse {
            path: origin.to_string(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(parse_error)?;
        let profile: DeviceProfile = match value {
            serde_json::Value::Array(items) if items.len() != 1 => {
                return Err(ProfileError::NotOne {
                    path: origin.to_string(),
                    count: items.len(),
                })
            }
            serde_json::Value::Array(mut items) => {
                serde_json::from_value(items.remove(0)).map_err(parse_error)?
            }
            other => serde_json::from_value(other).map_err(parse_error)?,
        };
        profile
            .validate()
            .map_err(|message| ProfileError::Invalid {
                path: origin.to_string(),
                message,
            })?;
        Ok(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_field_is_named() {
        let mut v = serde_json::to_value(crate::builtin::find("gt550m").unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("local_mem_size");
        let err = DeviceProfile::from_json(&v.to_string(), "p.json").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("p.json") && msg.contains("missing field `local_mem_size`"),
            "{msg}"
        );
    }

    #[test]
    fn array_of_one_is_accepted_and_of_two_refused() {
        let p = crate::builtin::find("i7-4770").unwrap();
        let one = serde_json::to_string(&vec![p.clone()]).unwrap();
        assert_eq!(DeviceProfile::from_json(&one, "f").unwrap(), p);
        let two = serde_json::to_string(&vec![p.clone(), p]).unwrap();
        let msg = DeviceProfile::from_json(&two, "f").unwrap_err().to_string();
        assert!(msg.contains("holds 2 profiles"), "{msg}");
    }

    #[test]
    fn malformed_json_reports_line_and_column() {
        let msg = DeviceProfile::from_json("{\n  \"name\": }", "bad.json")
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("bad.json:2:"), "{msg}");
    }

    #[test]
    fn zero_limit_is_invalid() {
        let mut p = crate::builtin::find("hd4600").unwrap();
        p.compute_units = 0;
        let text = serde_json::to_string(&p).unwrap();
        let msg = DeviceProfile::from_json(&text, "z.json")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("compute_units is 0"), "{msg}");
    }

    #[test]
    fn properties_cover_every_listed_name() {
        let p = crate::builtin::find("gt550m").unwrap();
        assert_eq!(p.properties().len(), PROPERTY_NAMES.len());
        assert_eq!(p.property("max_work_item_size_z"), Some(64));
        assert_eq!(p.property("is_gpu"), Some(1));
        assert_eq!(p.property("nope"), None);
    }
}
