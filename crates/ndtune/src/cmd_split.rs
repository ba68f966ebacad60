//! `ndtune split --plan-only`: the split of one NDRange across devices (Erdem et al. 2018, §2.2)
//! from each device's best work-group size and time.

use crate::cli::SplitArgs;
use anyhow::{bail, Result};
use ndtune_split::{plan, Device};

pub fn run(args: &SplitArgs) -> Result<()> {
    if args.wg.len() != args.time.len() {
        bail!(
            "--wg names {} devices but --time {}",
            args.wg.len(),
            args.time.len()
        );
    }
    let devices: Vec<Device> = args
        .wg
        .iter()
        .zip(&args.time)
        .map(|(&wg, &time_ms)| Device { wg, time_ms })
        .collect();
    let p = plan(args.global, &devices)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&p)?);
        return Ok(());
    }
    println!(
        "split of {} items across {} devices",
        p.global,
        devices.len()
    );
    println!(
        "  {:>6} {:>10} {:>10} {:>8} {:>11} {:>9} {:>9}",
        "device", "offset", "size", "groups", "work-group", "adjusted", "optimal"
    );
    for part in &p.parts {
        println!(
            "  {:>6} {:>10} {:>10} {:>8} {:>11} {:>9.3} {:>9.3}",
            part.device,
            part.offset,
            part.size,
            part.work_groups,
            devices[part.device].wg,
            part.factor,
            part.optimal_factor
        );
    }
    for (i, _) in devices
        .iter()
        .enumerate()
        .filter(|(i, _)| !p.parts.iter().any(|q| q.device == *i))
    {
        println!("  device {i} gets nothing: its share is less than one of its work-groups");
    }
    if p.overlap > 0 {
        println!("  {} items are computed by two devices (work-group sizes are not multiples of each other)", p.overlap);
    }
    println!(
        "  theoretical {:.4} ms (Algorithm 1 on the adjusted factors), ideal {:.4} ms",
        p.theoretical_ms, p.ideal_ms
    );
    Ok(())
}
