//! The power source of a device ([`ndtune_energy::Meter`]), found from what its driver
//! tells: its name, vendor, PCI address and place among devices of the same name.

use ndtune_backend::AnyDevice;
use ndtune_energy::{DeviceId, Meter, Unavailable};

/// What identifies `device` to a power library.
pub fn device_id(device: &AnyDevice) -> DeviceId {
    DeviceId {
        name: device.profile().name.clone(),
        vendor: device.profile().vendor.clone(),
        pci: device.pci_address(),
        same_name_before: device.same_name_before(),
    }
}

/// The power source of `device`, or why it has none.
pub fn meter(device: &AnyDevice) -> Result<Meter, Unavailable> {
    if device.sub().is_some() {
        return Err(Unavailable(format!(
            "{} is a part of a device, and a power source reads the whole",
            device.profile().name
        )));
    }
    Meter::open(&device_id(device))
}
