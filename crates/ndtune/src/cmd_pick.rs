//! `ndtune pick`: the configuration a program should build and launch with, from a wisdom file,
//! for one device (live, or a profile) and the problem's constants: how it was chosen (`exact`,
//! `nearest`, `predicted`) and why, the configuration, its build options and launch sizes;
//! with `--prefer`, from the tuned Pareto front.

use crate::cli::PickArgs;
use anyhow::{bail, Result};
use ndtune_wisdom::{Picker, Wisdom};

pub fn run(args: &PickArgs) -> Result<()> {
    let path = args.wisdom.display().to_string();
    let wisdom = Wisdom::load(&args.wisdom)?;
    let kernel = match (&args.kernel, wisdom.kernels.as_slice()) {
        (Some(name), _) => wisdom.kernel(name, &path)?,
        (None, [one]) => one,
        (None, kernels) => {
            let names: Vec<&str> = kernels.iter().map(|k| k.kernel.as_str()).collect();
            bail!(
                "{path}: the wisdom holds {} kernels ({}): say which with --kernel",
                names.len(),
                names.join(", ")
            )
        }
    };
    let devices = args.device.targets(true)?;
    let [device] = devices.as_slice() else {
        bail!(
            "pick answers for one device: --device matches {}",
            devices.len()
        );
    };
    let constants = args.constants.single()?;
    let picker = Picker::new(kernel, &path)?;
    let pick = picker.pick_preferring(&device.profile, &constants, args.prefer.as_ref())?;
    if args.json {
        let out = serde_json::json!({
            "kernel": kernel.kernel,
            "device": device.profile.name,
            "constants": constants,
            "pick": pick,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    print!(
        "{}",
        pick.text(kernel, &device.label, &constants, args.prefer.is_some())
    );
    Ok(())
}
