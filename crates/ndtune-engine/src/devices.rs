//! Picking the live devices a front end tunes on, by selector (`0`, a name, `D:K/N` for sub-device
//! K of N equal parts of device D, `all`, or a comma list of them): from the devices' names
//! alone, so that their measurement workers start before the devices are opened
//! ([`crate::Worker::start`]), then [`open_picked`]. `ndtune tune` (one device, several, or a
//! pool of them) picks this way; the Python package numbers devices as Kernel Tuner does.

use ndtune_cl::ClDevice;
use ndtune_device::Selector;

/// A live device a selector picked, not opened yet: its index and, for a sub-device, which
/// part of how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Picked {
    pub index: usize,
    pub sub: Option<(usize, usize)>,
}

/// The live devices `selectors` picks (`all`, one selector, or a comma list of selectors;
/// device 0 when none); an error names the list and what is wrong with it.
pub fn pick_live(selectors: Option<&str>) -> Result<Vec<Picked>, String> {
    let names = ndtune_cl::names().map_err(|e| e.to_string())?;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    match selectors.map(str::trim) {
        None => Ok(vec![Picked {
            index: 0,
            sub: None,
        }]),
        Some("all") => Ok((0..names.len())
            .map(|index| Picked { index, sub: None })
            .collect()),
        Some(list) => {
            let mut picked: Vec<Picked> = Vec::new();
            for one in list.split(',') {
                let selector = one
                    .parse::<Selector>()
                    .map_err(|e| format!("{list}: {e}"))?;
                let index = selector.pick(&names).map_err(|e| format!("{list}: {e}"))?;
                let sub = match selector {
                    Selector::Sub { k, n, .. } => Some((k, n)),
                    _ => None,
                };
                let p = Picked { index, sub };
                if picked.contains(&p) {
                    return Err(format!("{list}: device {index} is named twice"));
                }
                picked.push(p);
            }
            Ok(picked)
        }
    }
}

/// Opens picked devices with their whole profiles.
pub fn open_picked(picked: &[Picked]) -> Result<Vec<ClDevice>, String> {
    picked
        .iter()
        .map(|p| {
            let device = ndtune_cl::open(p.index).map_err(|e| e.to_string())?;
            match p.sub {
                Some((k, n)) => device
                    .sub_device(k, n)
                    .map_err(|e| format!("sub-device {}:{k}/{n}: {e}", p.index)),
                None => Ok(device),
            }
        })
        .collect()
}
