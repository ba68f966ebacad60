//! A device's profile as `ndtune devices` shows it: one card of its name, kind, version,
//! compute units, work-group limits, memories and CUDA limits.

use crate::DeviceProfile;
use std::fmt::Write;

impl DeviceProfile {
    /// The profile's card, headed `[key]` (the device's selector or a built-in profile's key).
    pub fn card(&self, key: &str) -> String {
        let p = self;
        let mut out = String::new();
        let items: Vec<String> = p.max_work_item_sizes.iter().map(u64::to_string).collect();
        writeln!(
            out,
            "  [{key}] {} ({}, {})",
            p.name, p.vendor, p.device_type
        )
        .unwrap();
        writeln!(
            out,
            "      version              {}  driver {}",
            p.version, p.driver_version
        )
        .unwrap();
        writeln!(
            out,
            "      compute units        {} at {} MHz",
            p.compute_units, p.max_clock_frequency
        )
        .unwrap();
        writeln!(
            out,
            "      work-group           max {}, work-items {}, preferred multiple {}",
            p.max_work_group_size,
            items.join(" x "),
            p.preferred_work_group_size_multiple
        )
        .unwrap();
        writeln!(
            out,
            "      memory               local {}, global {}, global cache {} (line {} B)",
            bytes(p.local_mem_size),
            bytes(p.global_mem_size),
            bytes(p.global_mem_cache_size),
            p.global_mem_cacheline_size
        )
        .unwrap();
        if let Some(c) = &p.cuda {
            let grid: Vec<String> = c.max_grid_size.iter().map(u64::to_string).collect();
            writeln!(out,
                "      CUDA                 compute capability {}, grid {}, shared opt-in {}, registers {} a block",
                c.compute_capability,
                grid.join(" x "),
                bytes(c.shared_mem_per_block_optin),
                c.registers_per_block
            ).unwrap();
        }
        out
    }
}

/// Bytes with a binary unit: `48 KiB`, `7.1 GiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_card_shows_the_platform_models_inputs() {
        let hd4600 = crate::builtin::find("hd4600").unwrap();
        assert_eq!(
            hd4600.card("hd4600"),
            "  [hd4600] Intel(R) HD Graphics 4600 (Intel(R) Corporation, GPU)\n\
             \x20     version              OpenCL 1.2 (built-in profile)  driver \n\
             \x20     compute units        20 at 1200 MHz\n\
             \x20     work-group           max 512, work-items 512 x 512 x 512, preferred multiple 16\n\
             \x20     memory               local 64 KiB, global 1.5 GiB, global cache 512 KiB (line 64 B)\n"
        );
    }

    #[test]
    fn bytes_pick_a_unit() {
        assert_eq!(super::bytes(49152), "48 KiB");
        assert_eq!(super::bytes(7610781696), "7.1 GiB");
        assert_eq!(super::bytes(64), "64 B");
    }
}
