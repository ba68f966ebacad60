//! `--captured DIR`: the campaigns programs asked for at run time (`ndtune_wisdom::capture`):
//! the spec's kernel at each captured set of constants, on each captured device this machine
//! has.

use crate::devices;
use crate::request::{DeviceChoice, RequestError, RequestEvent, TuneRequest};
use ndtune_core::Constants;
use ndtune_device::{DeviceProfile, DeviceType};
use ndtune_spec::Spec;
use std::collections::{BTreeSet, HashSet};
use std::path::Path;

/// The captured questions of one kernel, as campaigns to run.
pub(crate) struct Captured {
    /// The captured sets of constants of the spec's kernel, in the order first asked.
    pub sweep: Vec<Constants>,
    /// The devices of this machine that were asked for, as a `--device` selector.
    pub devices: String,
    /// Each captured question as (constants as JSON, device model), for [`Captured::asked`].
    asked: HashSet<(String, (String, String, DeviceType, u64))>,
}

/// Constants as a key for hashing (their JSON: names in order).
fn constants_key(constants: &Constants) -> String {
    serde_json::to_string(constants).expect("constants serialise")
}

/// A device model as an owned key ([`ndtune_wisdom::model_of`]).
fn model_key(d: &DeviceProfile) -> (String, String, DeviceType, u64) {
    let (name, vendor, kind, units) = ndtune_wisdom::model_of(d);
    (name.to_string(), vendor.to_string(), kind, units)
}

impl Captured {
    /// What the programs captured in `dir` asked for of the request's kernel, on the devices
    /// the request narrows to; devices asked for that this machine lacks are told as a note.
    pub fn plan(
        dir: &Path,
        request: &TuneRequest,
        observer: &mut dyn FnMut(RequestEvent<'_>),
    ) -> Result<Captured, RequestError> {
        if request.sweep.iter().any(|c| !c.is_empty()) || request.sweep.len() > 1 {
            return Err(RequestError::Invalid(
                "--captured tunes the constants programs asked for: leave out --set".into(),
            ));
        }
        let spec = Spec::load(&request.spec)?;
        let (kernel, language) = (spec.kernel.name, spec.kernel.language);
        let all = ndtune_wisdom::capture::read(dir)
            .map_err(|e| RequestError::Invalid(format!("--captured {e}")))?;
        let asked: Vec<_> = all.iter().filter(|c| c.kernel == kernel).cloned().collect();
        if asked.is_empty() {
            let kernels: BTreeSet<&str> = all.iter().map(|c| c.kernel.as_str()).collect();
            return Err(RequestError::Invalid(format!(
                "--captured {}: no program asked for kernel `{kernel}` (it holds {})",
                dir.display(),
                kernels.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
        // The devices that run the kernel's language, by name (another API's are not "here").
        let names: Vec<String> = ndtune_backend::listing()
            .map_err(|e| RequestError::Device(e.to_string()))?
            .into_iter()
            .map(|d| {
                if d.api == language {
                    d.name
                } else {
                    String::new()
                }
            })
            .collect();
        // The devices --device narrows to, picked once.
        let narrowed: Option<Vec<usize>> = match &request.devices {
            DeviceChoice::Selector(Some(sel)) => Some(
                devices::pick_live(Some(language), Some(sel))
                    .map_err(|e| RequestError::Device(format!("--device {e}")))?
                    .iter()
                    .map(|d| d.index)
                    .collect(),
            ),
            _ => None,
        };
        let here: Vec<usize> = (0..names.len())
            .filter(|&i| {
                asked.iter().any(|c| c.device.name == names[i])
                    && narrowed.as_ref().is_none_or(|n| n.contains(&i))
            })
            .collect();
        let missing: BTreeSet<&str> = asked
            .iter()
            .map(|c| c.device.name.as_str())
            .filter(|n| !names.iter().any(|m| m == n))
            .collect();
        if !missing.is_empty() {
            observer(RequestEvent::Note(format!(
                "note: captured on {}, which this machine does not have: tune there",
                missing.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
        if here.is_empty() {
            return Err(RequestError::Invalid(format!(
                "--captured {}: none of the devices asked for is here",
                dir.display()
            )));
        }
        let mut distinct = HashSet::new();
        let sweep: Vec<Constants> = asked
            .iter()
            .filter(|c| distinct.insert(constants_key(&c.constants)))
            .map(|c| c.constants.clone())
            .collect();
        Ok(Captured {
            sweep,
            devices: here
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(","),
            asked: asked
                .iter()
                .map(|c| (constants_key(&c.constants), model_key(&c.device)))
                .collect(),
        })
    }

    /// Whether a program asked for the kernel at `constants` on a device of this model.
    pub fn asked(&self, constants: &Constants, device: &DeviceProfile) -> bool {
        self.asked
            .contains(&(constants_key(constants), model_key(device)))
    }
}
