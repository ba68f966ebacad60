//! Device profiles: the limits and properties of one device, as its API reports them
//! (`clGetDeviceInfo`'s names), in a form that can be saved, loaded and studied offline; and the
//! device backend boundary ([`backend`]) every API implements.
//!
//! This crate owns [`DeviceProfile`] (serialised with OpenCL's own names, lower-case),
//! the built-in profiles of the seed papers' devices ([`builtin`]), the `device.*` properties
//! that constraint expressions may name ([`DeviceProfile::properties`]), device selectors
//! ([`Selector`]), PCI addresses ([`PciAddress`]) and the traits a backend implements. It never
//! links a device API: `ndtune-cl` (OpenCL) and `ndtune-cuda` (CUDA) fill profiles from live
//! devices and open sessions on them.
//!
//! ```
//! let hd = ndtune_device::builtin::find("HD4600").unwrap();
//! assert_eq!(hd.max_work_group_size, 512);
//! assert_eq!(hd.property("max_work_item_size_y"), Some(512));
//! ```

pub mod backend;
pub mod builtin;
mod card;
mod pci;
mod profile;
mod selector;

pub use pci::PciAddress;
pub use profile::{CudaLimits, DeviceProfile, DeviceType, ProfileError, PROPERTY_NAMES};
pub use selector::{Selector, SelectorError};
