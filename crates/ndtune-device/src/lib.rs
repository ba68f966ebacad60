//! Device profiles: the limits and properties of one OpenCL device, as `clGetDeviceInfo` reports
//! them, in a form that can be saved, loaded and studied offline.
//!
//! This crate owns [`DeviceProfile`] (serialised with OpenCL's own names, lower-case),
//! the built-in profiles of the seed papers' devices ([`builtin`]), the `device.*` properties
//! that constraint expressions may name ([`DeviceProfile::properties`]), device selectors
//! ([`Selector`]) and PCI addresses ([`PciAddress`]). It never links OpenCL: `ndtune-cl` fills
//! profiles from live devices.
//!
//! ```
//! let hd = ndtune_device::builtin::find("HD4600").unwrap();
//! assert_eq!(hd.max_work_group_size, 512);
//! assert_eq!(hd.property("max_work_item_size_y"), Some(512));
//! ```

pub mod builtin;
mod pci;
mod profile;
mod selector;

pub use pci::PciAddress;
pub use profile::{DeviceProfile, DeviceType, ProfileError, PROPERTY_NAMES};
pub use selector::{Selector, SelectorError};
