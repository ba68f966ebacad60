//! Built-in offline profiles of the seed papers' devices, so their spaces can be studied without
//! the hardware.
//!
//! Erdem et al. 2018 (§3) give, per device, the maximum work-item sizes, maximum work-group size,
//! compute units and local memory used by their pruner. Cummins et al. 2016 (Table 1) give compute
//! units, clock, local memory, global cache and global memory. Values neither paper states (work-
//! group limits of the Cummins devices, global memory of the Erdem devices, the SIMD multiple) are
//! those the vendors' OpenCL runtimes of that generation report: Intel's CPU runtime 8192 work-items
//! in each dimension, AMD GCN 256, NVIDIA Fermi/Kepler 1024 x 1024 x 64 with a 1024 work-group.
//! The six GPUs of the Kernel Tuner caches in `shared/data/kt-benchmark-hub` (what a held-out
//! device is predicted for, bench/heldout_devices.sh) come from their vendors' data sheets.

use crate::{DeviceProfile, DeviceType};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// One built-in profile: the key it is looked up by, and its profile.
pub struct Builtin {
    pub key: &'static str,
    pub source: &'static str,
    pub profile: fn() -> DeviceProfile,
}

#[allow(clippy::too_many_arguments)]
fn profile(
    name: &str,
    vendor: &str,
    device_type: DeviceType,
    compute_units: u64,
    clock_mhz: u64,
    max_work_group_size: u64,
    max_work_item_sizes: [u64; 3],
    local_mem_size: u64,
    global_mem_cache_size: u64,
    global_mem_size: u64,
    simd: u64,
) -> DeviceProfile {
    DeviceProfile {
        name: name.to_string(),
        vendor: vendor.to_string(),
        device_type,
        version: "OpenCL 1.2 (built-in profile)".to_string(),
        driver_version: String::new(),
        platform_name: "ndtune built-in".to_string(),
        compute_units,
        max_clock_frequency: clock_mhz,
        max_work_group_size,
        max_work_item_sizes: max_work_item_sizes.to_vec(),
        local_mem_size,
        global_mem_size,
        global_mem_cache_size,
        global_mem_cacheline_size: 64,
        max_mem_alloc_size: global_mem_size / 4,
        max_constant_buffer_size: 64 * KIB,
        preferred_work_group_size_multiple: simd,
        extensions: vec!["cl_khr_fp64".to_string()],
        cuda: None,
    }
}

const INTEL_CPU: [u64; 3] = [8192, 8192, 8192];
const NVIDIA: [u64; 3] = [1024, 1024, 64];
const ERDEM: &str = "Erdem et al. 2018, §3";
const CUMMINS: &str = "Cummins et al. 2016, Table 1";
/// The GPUs of the Kernel Tuner caches in shared/data/kt-benchmark-hub, measured with CUDA and
/// HIP: the limits those report (1024-work-item blocks; 48 KiB of static shared memory per
/// block on NVIDIA, 64 KiB of LDS on AMD; warps of 32, wavefronts of 64 on CDNA and 32 on
/// RDNA) and the vendors' data sheets (SMs/CUs, boost clock, L2, memory; one MI250X die, as
/// HIP shows it).
const HUB: &str = "vendors' data sheets; CUDA/HIP limits";
const AMD_HIP: [u64; 3] = [1024, 1024, 1024];

/// Every built-in profile, papers' order.
pub const ALL: &[Builtin] = &[
    Builtin {
        key: "i7-4770",
        source: ERDEM,
        profile: || {
            profile(
                "Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz",
                "Intel(R) Corporation",
                DeviceType::Cpu,
                8,
                3400,
                8192,
                INTEL_CPU,
                32 * KIB,
                256 * KIB,
                16384 * MIB,
                128,
            )
        },
    },
    Builtin {
        key: "hd4600",
        source: ERDEM,
        profile: || {
            profile(
                "Intel(R) HD Graphics 4600",
                "Intel(R) Corporation",
                DeviceType::Gpu,
                20,
                1200,
                512,
                [512, 512, 512],
                64 * KIB,
                512 * KIB,
                1536 * MIB,
                16,
            )
        },
    },
    Builtin {
        key: "i7-2630qm",
        source: ERDEM,
        profile: || {
            profile(
                "Intel(R) Core(TM) i7-2630QM CPU @ 2.00GHz",
                "Intel(R) Corporation",
                DeviceType::Cpu,
                8,
                2000,
                8192,
                INTEL_CPU,
                32 * KIB,
                256 * KIB,
                8192 * MIB,
                128,
            )
        },
    },
    Builtin {
        key: "gt550m",
        source: ERDEM,
        profile: || {
            profile(
                "GeForce GT 550M",
                "NVIDIA Corporation",
                DeviceType::Gpu,
                2,
                1480,
                1024,
                NVIDIA,
                48 * KIB,
                128 * KIB,
                1024 * MIB,
                32,
            )
        },
    },
    Builtin {
        key: "i5-2430m",
        source: CUMMINS,
        profile: || {
            profile(
                "Intel(R) Core(TM) i5-2430M CPU @ 2.40GHz",
                "Intel(R) Corporation",
                DeviceType::Cpu,
                4,
                2400,
                8192,
                INTEL_CPU,
                32 * KIB,
                256 * KIB,
                7937 * MIB,
                128,
            )
        },
    },
    Builtin {
        key: "i5-4570",
        source: CUMMINS,
        profile: || {
            profile(
                "Intel(R) Core(TM) i5-4570 CPU @ 3.20GHz",
                "Intel(R) Corporation",
                DeviceType::Cpu,
                4,
                3200,
                8192,
                INTEL_CPU,
                32 * KIB,
                256 * KIB,
                7901 * MIB,
                128,
            )
        },
    },
    Builtin {
        key: "i7-3820",
        source: CUMMINS,
        profile: || {
            profile(
                "Intel(R) Core(TM) i7-3820 CPU @ 3.60GHz",
                "Intel(R) Corporation",
                DeviceType::Cpu,
                8,
                1200,
                8192,
                INTEL_CPU,
                32 * KIB,
                256 * KIB,
                7944 * MIB,
                128,
            )
        },
    },
    Builtin {
        key: "tahiti-7970",
        source: CUMMINS,
        profile: || {
            profile(
                "Tahiti",
                "Advanced Micro Devices, Inc.",
                DeviceType::Gpu,
                32,
                1000,
                256,
                [256, 256, 256],
                32 * KIB,
                16 * KIB,
                2959 * MIB,
                64,
            )
        },
    },
    Builtin {
        key: "gtx-590",
        source: CUMMINS,
        profile: || {
            profile(
                "GeForce GTX 590",
                "NVIDIA Corporation",
                DeviceType::Gpu,
                1,
                1215,
                1024,
                NVIDIA,
                48 * KIB,
                256 * KIB,
                1536 * MIB,
                32,
            )
        },
    },
    Builtin {
        key: "gtx-690",
        source: CUMMINS,
        profile: || {
            profile(
                "GeForce GTX 690",
                "NVIDIA Corporation",
                DeviceType::Gpu,
                8,
                1019,
                1024,
                NVIDIA,
                48 * KIB,
                128 * KIB,
                2048 * MIB,
                32,
            )
        },
    },
    Builtin {
        key: "gtx-titan",
        source: CUMMINS,
        profile: || {
            profile(
                "GeForce GTX TITAN",
                "NVIDIA Corporation",
                DeviceType::Gpu,
                14,
                980,
                1024,
                NVIDIA,
                48 * KIB,
                224 * KIB,
                6144 * MIB,
                32,
            )
        },
    },
    Builtin {
        key: "a100-pcie-40gb",
        source: HUB,
        profile: || {
            profile(
                "NVIDIA A100-PCIE-40GB",
                "NVIDIA Corporation",
                DeviceType::Gpu,
                108,
                1410,
                1024,
                NVIDIA,
                48 * KIB,
                40 * MIB,
                40960 * MIB,
                32,
            )
        },
    },
    Builtin {
        key: "rtx-a4000",
        source: HUB,
        profile: || {
            profile(
                "NVIDIA RTX A4000",
                "NVIDIA Corporation",
                DeviceType::Gpu,
                48,
                1560,
                1024,
                NVIDIA,
                48 * KIB,
                4 * MIB,
                16384 * MIB,
                32,
            )
        },
    },
    Builtin {
        key: "rtx-a6000",
        source: HUB,
        profile: || {
            profile(
                "NVIDIA RTX A6000",
                "NVIDIA Corporation",
                DeviceType::Gpu,
                84,
                1800,
                1024,
                NVIDIA,
                48 * KIB,
                6 * MIB,
                49152 * MIB,
                32,
            )
        },
    },
    Builtin {
        key: "mi250x",
        source: HUB,
        profile: || {
            profile(
                "AMD Instinct MI250X",
                "Advanced Micro Devices, Inc.",
                DeviceType::Gpu,
                110,
                1700,
                1024,
                AMD_HIP,
                64 * KIB,
                8 * MIB,
                65536 * MIB,
                64,
            )
        },
    },
    Builtin {
        key: "w6600",
        source: HUB,
        profile: || {
            profile(
                "AMD Radeon PRO W6600",
                "Advanced Micro Devices, Inc.",
                DeviceType::Gpu,
                28,
                2903,
                1024,
                AMD_HIP,
                64 * KIB,
                2 * MIB,
                8192 * MIB,
                32,
            )
        },
    },
    Builtin {
        key: "w7800",
        source: HUB,
        profile: || {
            profile(
                "AMD Radeon PRO W7800",
                "Advanced Micro Devices, Inc.",
                DeviceType::Gpu,
                70,
                2499,
                1024,
                AMD_HIP,
                64 * KIB,
                6 * MIB,
                32768 * MIB,
                32,
            )
        },
    },
];

/// Looks a built-in profile up by key, ignoring case and `-`/`_`/space (so `HD4600`,
/// `i7_4770` and `GTX Titan` all work).
pub fn find(key: &str) -> Option<DeviceProfile> {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let wanted = norm(key);
    ALL.iter()
        .find(|b| norm(b.key) == wanted)
        .map(|b| (b.profile)())
}

/// The keys of every built-in profile, for error messages and `--help`.
pub fn keys() -> Vec<&'static str> {
    ALL.iter().map(|b| b.key).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_valid_and_found_by_key() {
        for b in ALL {
            let p = find(b.key).unwrap();
            p.validate().unwrap();
            assert_eq!(p, (b.profile)());
        }
        assert!(find("GTX Titan").is_some());
        assert!(find("i7_4770").is_some());
        assert!(find("nonexistent").is_none());
    }

    #[test]
    fn erdem_limits_match_the_paper() {
        let gt = find("gt550m").unwrap();
        assert_eq!(
            (
                gt.max_work_item_sizes.clone(),
                gt.max_work_group_size,
                gt.compute_units,
                gt.local_mem_size
            ),
            (vec![1024, 1024, 64], 1024, 2, 48 * 1024)
        );
        let hd = find("hd4600").unwrap();
        assert_eq!(
            (hd.max_work_group_size, hd.compute_units, hd.local_mem_size),
            (512, 20, 65536)
        );
    }
}
