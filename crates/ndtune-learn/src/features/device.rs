//! Device features: the numeric OpenCL properties of a [`DeviceProfile`].
//!
//! The list is fixed here rather than taken from `ndtune_device::PROPERTY_NAMES`, so that a
//! property added there for the constraint language does not shift the feature columns.

use ndtune_device::DeviceProfile;

/// The `device.*` properties used, each as feature `f_dev_<property>`, in column order.
const PROPERTIES: [&str; 17] = [
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
];

/// The device feature names: one per property, then the global memory size's log2, which spans
/// orders of magnitude across devices.
pub(super) const NAMES: [&str; 18] = [
    "f_dev_max_work_group_size",
    "f_dev_max_work_item_size_x",
    "f_dev_max_work_item_size_y",
    "f_dev_max_work_item_size_z",
    "f_dev_max_work_item_dimensions",
    "f_dev_compute_units",
    "f_dev_max_clock_frequency",
    "f_dev_local_mem_size",
    "f_dev_global_mem_size",
    "f_dev_global_mem_cache_size",
    "f_dev_global_mem_cacheline_size",
    "f_dev_max_mem_alloc_size",
    "f_dev_max_constant_buffer_size",
    "f_dev_preferred_work_group_size_multiple",
    "f_dev_is_cpu",
    "f_dev_is_gpu",
    "f_dev_has_fp64",
    "f_dev_log2_global_mem_size",
];

/// A device's features, in column order. Sizes are in bytes, the clock in MHz, flags 0 or 1.
pub fn device_features(profile: &DeviceProfile) -> Vec<(String, f64)> {
    let properties = PROPERTIES.iter().map(|&p| {
        let value = profile
            .property(p)
            .expect("ndtune-device knows every property listed here");
        value as f64
    });
    let log2_global = (profile.global_mem_size.max(1) as f64).log2();
    NAMES
        .iter()
        .map(|n| n.to_string())
        .zip(properties.chain([log2_global]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_properties_prefixed() {
        for (property, name) in PROPERTIES.iter().zip(NAMES) {
            assert_eq!(format!("f_dev_{property}"), name);
        }
    }

    #[test]
    fn every_builtin_profile_knows_every_property() {
        for key in ndtune_device::builtin::keys() {
            let profile = ndtune_device::builtin::find(key).unwrap();
            assert_eq!(device_features(&profile).len(), NAMES.len(), "{key}");
        }
    }
}
