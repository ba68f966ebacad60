//! Where a device sits on the PCI bus, as its driver tells it: what ties an OpenCL device to
//! the same GPU in another library (NVML).

use std::fmt;

/// A PCI address: domain, bus and device number (the function is 0 for GPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PciAddress {
    /// `None` where the driver does not tell the domain (then any domain matches).
    pub domain: Option<u32>,
    pub bus: u32,
    pub device: u32,
}

impl PciAddress {
    /// Whether `other`, with every field known, is this address.
    pub fn matches(&self, domain: u32, bus: u32, device: u32) -> bool {
        self.domain.is_none_or(|d| d == domain) && self.bus == bus && self.device == device
    }
}

/// As `lspci` writes it: `0000:3b:00.0` (`?:3b:00.0` where the domain is unknown).
impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.domain {
            Some(d) => write!(f, "{d:04x}:{:02x}:{:02x}.0", self.bus, self.device),
            None => write!(f, "?:{:02x}:{:02x}.0", self.bus, self.device),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_without_domain_matches_any_domain() {
        let a = PciAddress {
            domain: None,
            bus: 0x3b,
            device: 0,
        };
        assert!(a.matches(0, 0x3b, 0) && a.matches(1, 0x3b, 0));
        assert!(!a.matches(0, 0x3c, 0));
        assert_eq!(a.to_string(), "?:3b:00.0");
        let b = PciAddress {
            domain: Some(0),
            ..a
        };
        assert!(!b.matches(1, 0x3b, 0));
        assert_eq!(b.to_string(), "0000:3b:00.0");
    }
}
