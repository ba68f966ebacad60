//! The identities records are keyed by: device fingerprints and kernel source hashes (the
//! setup digest is [`ndtune_core::setup`]'s).

use ndtune_core::text::short_sha256;
use ndtune_device::{DeviceProfile, DeviceType};
use serde::Serialize;

/// The fields of a [`DeviceProfile`] that identify a device, in a fixed order. Changing this
/// struct changes every fingerprint, so every stored record would stop matching its device.
#[derive(Serialize)]
struct Identity<'a> {
    name: &'a str,
    vendor: &'a str,
    device_type: DeviceType,
    version: &'a str,
    driver_version: &'a str,
    platform_name: &'a str,
    compute_units: u64,
    max_work_group_size: u64,
    max_work_item_sizes: &'a [u64],
    local_mem_size: u64,
}

/// A stable 16-hex-digit id of a device: the first 8 bytes of the SHA-256 of the compact JSON
/// object of its identity fields, in this order: name, vendor, device_type, version,
/// driver_version, platform_name, compute_units, max_work_group_size, max_work_item_sizes,
/// local_mem_size. Fields that may vary between runs of the same device are not part of it:
/// the clock, the extensions, and the global memory size, which PoCL derives from the memory
/// free when it starts. Nor is anything that tells identical devices apart (the profile holds
/// no PCI bus id, UUID or device index): the four GPUs of one model in a node, or the same GPU
/// in several machines with the same driver, share one fingerprint, so workers on them pool
/// their claims and results, while devices of another kind keep their own.
pub fn fingerprint(profile: &DeviceProfile) -> String {
    let identity = Identity {
        name: &profile.name,
        vendor: &profile.vendor,
        device_type: profile.device_type,
        version: &profile.version,
        driver_version: &profile.driver_version,
        platform_name: &profile.platform_name,
        compute_units: profile.compute_units,
        max_work_group_size: profile.max_work_group_size,
        max_work_item_sizes: &profile.max_work_item_sizes,
        local_mem_size: profile.local_mem_size,
    };
    let text = serde_json::to_string(&identity).expect("plain fields serialise");
    short_sha256(text.as_bytes())
}

/// A 16-hex-digit id of a kernel source: the start of its SHA-256.
pub fn source_hash(source: &str) -> String {
    short_sha256(source.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_stable_and_ignore_volatile_fields() {
        let p = ndtune_device::builtin::find("gt550m").unwrap();
        let fp = fingerprint(&p);
        assert_eq!(fp.len(), 16);
        assert!(fp.chars().all(|c| c.is_ascii_hexdigit()));
        let mut clocked = p.clone();
        clocked.max_clock_frequency += 100;
        clocked.extensions.push("cl_khr_fp64".into());
        // PoCL reports the memory free at its start as global memory.
        clocked.global_mem_size /= 2;
        assert_eq!(fingerprint(&clocked), fp);
        let mut other = p;
        other.compute_units += 1;
        assert_ne!(fingerprint(&other), fp);
        other.driver_version.push_str(".1");
        assert_ne!(fingerprint(&other), fp);
    }

    #[test]
    fn a_fingerprint_never_changes() {
        // Stored records are keyed by fingerprints: this value must never change.
        let p = DeviceProfile {
            name: "GeForce GT 550M".into(),
            vendor: "NVIDIA Corporation".into(),
            device_type: DeviceType::Gpu,
            version: "OpenCL 1.1 CUDA".into(),
            driver_version: "390.144".into(),
            platform_name: "NVIDIA CUDA".into(),
            compute_units: 2,
            max_clock_frequency: 1480,
            max_work_group_size: 1024,
            max_work_item_sizes: vec![1024, 1024, 64],
            local_mem_size: 49152,
            global_mem_size: 1 << 31,
            global_mem_cache_size: 32768,
            global_mem_cacheline_size: 128,
            max_mem_alloc_size: 1 << 29,
            max_constant_buffer_size: 65536,
            preferred_work_group_size_multiple: 32,
            extensions: vec!["cl_khr_fp64".into()],
            cuda: None,
        };
        // = sha256(r#"{"name":"GeForce GT 550M",...,"local_mem_size":49152}"#)[..16]
        assert_eq!(fingerprint(&p), "66beae1eac95f41a");
    }

    #[test]
    fn source_hash_is_the_start_of_sha256() {
        // SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223...
        assert_eq!(source_hash("abc"), "ba7816bf8f01cfea");
    }
}
