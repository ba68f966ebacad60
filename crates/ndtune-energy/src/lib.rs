//! The energy and power a device draws while kernels run.
//!
//! - [`Meter::open`] finds a device's power source: on an NVIDIA GPU, NVML (the NVIDIA
//!   Management Library, `libnvidia-ml.so.1`, loaded at run time by the `nvml-wrapper` crate),
//!   matched to the OpenCL device by PCI address where the driver tells it, else by name and
//!   order. Anything else — no NVIDIA GPU, no library, no permission, a GPU that reads neither
//!   energy nor power — is [`Unavailable`], with the reason people see.
//! - [`Meter::measure_runs`] repeats a run back to back, first for [`LEAD_IN`], then over a
//!   window while a thread samples the power, the temperature and the clocks every
//!   [`SAMPLE_PERIOD`], and says what the device drew over the window ([`Drawn`]): the
//!   difference of NVML's total energy counter where the GPU has one (Volta and later), else
//!   the integral of the power samples ([`integrate`]); and the mean of each sensor the GPU
//!   reads ([`Sensors`]).
//!
//! Other vendors' libraries and CPU package counters are not read: where there is no source,
//! there is no number.
//!
//! ```
//! let cpu = ndtune_energy::DeviceId {
//!     name: "pthread-haswell-AMD EPYC".into(),
//!     vendor: "AuthenticAMD".into(),
//!     pci: None,
//!     same_name_before: 0,
//! };
//! let why = ndtune_energy::Meter::open(&cpu).err().unwrap();
//! assert!(why.to_string().starts_with("energy and power are not available on this device"));
//! ```

use ndtune_device::PciAddress;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use std::ffi::OsStr;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the power is sampled while work runs.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(5);

/// How long the runs go on before the energy window opens. NVML's energy counter trails the
/// work it counts: read as a window opens on a GPU that was idle, it counts idle time before the
/// window and misses the window's last part (on an H200 a 200 ms window that began with the
/// timed runs read vector_add at 0.113 J per run, a 1 s window 0.16-0.17 J). With the GPU at
/// work before the window as in it, the trailing counter counts time like the window's: saxpy
/// of 64 M elements read 0.1887-0.1888 J per run over 200 ms windows after this lead-in,
/// 0.1865-0.1897 J over 1 s windows (BENCHMARKS.md).
pub const LEAD_IN: Duration = Duration::from_millis(100);

/// What identifies a device to a power library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceId {
    pub name: String,
    pub vendor: String,
    /// Where the driver tells it.
    pub pci: Option<PciAddress>,
    /// How many devices of the same name come before it on its platform.
    pub same_name_before: usize,
}

/// Why a device has no energy readings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "energy and power are not available on this device: {}",
            self.0
        )
    }
}

impl std::error::Error for Unavailable {}

/// What a device drew over one piece of work.
#[derive(Debug, Clone, PartialEq)]
pub struct Drawn {
    pub joules: f64,
    /// The work's wall time, in milliseconds.
    pub window_ms: f64,
    /// Power samples read while it ran.
    pub samples: u32,
    /// `nvml energy counter` or `nvml power samples`.
    pub source: &'static str,
    /// The means of the other sensors over the window.
    pub sensors: Sensors,
    /// How long the runs went on before the window opened, in milliseconds.
    pub lead_in_ms: f64,
}

/// The mean of what a GPU's sensors read over a window, where it reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sensors {
    /// The GPU's temperature, in degrees Celsius.
    pub temperature_c: Option<f64>,
    /// The graphics (core) clock, in MHz.
    pub core_clock_mhz: Option<f64>,
    /// The memory clock, in MHz.
    pub mem_clock_mhz: Option<f64>,
}

impl Drawn {
    /// The mean power over the window, in watts.
    pub fn watts(&self) -> f64 {
        self.joules / (self.window_ms / 1e3)
    }
}

/// A device's power source, open.
pub struct Meter {
    nvml: Nvml,
    index: u32,
    /// Whether the GPU has a total energy counter.
    counter: bool,
    description: String,
}

/// The names the NVML library goes by: the driver's runtime name, then the development link.
const NVML_LIBRARIES: [&str; 2] = ["libnvidia-ml.so.1", "libnvidia-ml.so"];

fn load_nvml() -> Result<Nvml, Unavailable> {
    let mut failures = Vec::new();
    for lib in NVML_LIBRARIES {
        match Nvml::builder().lib_path(OsStr::new(lib)).init() {
            Ok(nvml) => return Ok(nvml),
            Err(NvmlError::LibloadingError(e)) => failures.push(format!("{lib}: {e}")),
            Err(NvmlError::NoPermission) => {
                return Err(Unavailable(
                    "NVML has no permission to talk to the driver".into(),
                ))
            }
            Err(NvmlError::DriverNotLoaded) => {
                return Err(Unavailable("the NVIDIA driver is not loaded".into()))
            }
            Err(e) => return Err(Unavailable(format!("NVML did not start: {e}"))),
        }
    }
    Err(Unavailable(format!(
        "the NVIDIA Management Library could not be loaded ({})",
        failures.join("; ")
    )))
}

impl Meter {
    /// The power source of `device`: NVML, where it is an NVIDIA GPU that NVML knows and reads
    /// energy or power of.
    pub fn open(device: &DeviceId) -> Result<Meter, Unavailable> {
        if !device.vendor.to_lowercase().contains("nvidia") {
            return Err(Unavailable(format!(
                "{} ({}) is not an NVIDIA GPU; ndtune reads energy and power through NVML, on NVIDIA GPUs only",
                device.name, device.vendor
            )));
        }
        let nvml = load_nvml()?;
        let count = nvml
            .device_count()
            .map_err(|e| Unavailable(format!("NVML cannot count the GPUs: {e}")))?;
        let mut same_name = 0;
        let mut found = None;
        for index in 0..count {
            let Ok(gpu) = nvml.device_by_index(index) else {
                continue;
            };
            let matched = match &device.pci {
                Some(pci) => gpu
                    .pci_info()
                    .is_ok_and(|p| pci.matches(p.domain, p.bus, p.device)),
                None => {
                    let named = gpu.name().is_ok_and(|n| n == device.name);
                    if named {
                        same_name += 1;
                    }
                    named && same_name == device.same_name_before + 1
                }
            };
            if matched {
                found = Some(index);
                break;
            }
        }
        let index = found.ok_or_else(|| {
            Unavailable(match &device.pci {
                Some(pci) => format!("NVML knows no GPU at PCI address {pci}"),
                None => format!(
                    "NVML knows no GPU `{}` (number {} of that name), and the OpenCL driver does not tell its PCI address",
                    device.name,
                    device.same_name_before + 1
                ),
            })
        })?;
        let gpu = nvml
            .device_by_index(index)
            .map_err(|e| Unavailable(format!("NVML GPU {index}: {e}")))?;
        let counter = gpu.total_energy_consumption().is_ok();
        let power = gpu.power_usage().is_ok();
        if !counter && !power {
            return Err(Unavailable(format!(
                "NVML reads neither the energy nor the power of GPU {index} ({})",
                device.name
            )));
        }
        let description = format!(
            "NVML GPU {index}{}, {}",
            device.pci.map_or(String::new(), |p| format!(" at {p}")),
            if counter {
                "total energy counter and power samples"
            } else {
                "power samples"
            }
        );
        Ok(Meter {
            nvml,
            index,
            counter,
            description,
        })
    }

    /// Which GPU and which readings: `NVML GPU 0 at 0000:3b:00.0, total energy counter ...`.
    pub fn describe(&self) -> &str {
        &self.description
    }

    fn gpu(&self) -> Result<Device<'_>, String> {
        self.nvml
            .device_by_index(self.index)
            .map_err(|e| format!("NVML GPU {}: {e}", self.index))
    }

    /// Repeats `run` back to back: for [`LEAD_IN`] (the GPU at work, and NVML's counter, which
    /// trails the work, too), then over a window of at least `window` and one run while a
    /// thread samples the power and the sensors. Returns the runs in the window and what the
    /// device drew over it, or why that cannot be told (the counter did not move and too few
    /// samples were read: the window was too short); the first error of `run` ends it.
    pub fn measure_runs<E>(
        &self,
        window: Duration,
        mut run: impl FnMut() -> Result<(), E>,
    ) -> Result<(u32, Result<Drawn, String>), E> {
        let lead_in = Instant::now();
        while lead_in.elapsed() < LEAD_IN {
            run()?;
        }
        let lead_in_ms = lead_in.elapsed().as_secs_f64() * 1e3;
        let gpu = match self.gpu() {
            Ok(gpu) => gpu,
            Err(e) => return Ok((0, Err(e))),
        };
        let counter = |gpu: &Device| -> Option<u64> {
            self.counter
                .then(|| gpu.total_energy_consumption().ok())
                .flatten()
        };
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        let before = counter(&gpu);
        let (runs, samples) = std::thread::scope(|s| {
            let sampler = s.spawn(|| sample(&gpu, &stop, started));
            let mut runs = 0u32;
            let ran = loop {
                if runs > 0 && started.elapsed() >= window {
                    break Ok(runs);
                }
                if let Err(e) = run() {
                    break Err(e);
                }
                runs += 1;
            };
            stop.store(true, Ordering::Relaxed);
            (ran, sampler.join().unwrap_or_default())
        });
        let after = counter(&gpu);
        let runs = runs?;
        let window_s = started.elapsed().as_secs_f64();
        let window_ms = window_s * 1e3;
        let n = samples.power.len() as u32;
        let sensors = samples.means();
        let drawn = match (before, after) {
            (Some(a), Some(b)) if b > a => Ok(Drawn {
                joules: (b - a) as f64 / 1e3,
                window_ms,
                samples: n,
                source: "nvml energy counter",
                sensors,
                lead_in_ms,
            }),
            _ => match integrate(&samples.power, window_s) {
                Some(joules) => Ok(Drawn {
                    joules,
                    window_ms,
                    samples: n,
                    source: "nvml power samples",
                    sensors,
                    lead_in_ms,
                }),
                None => Err(format!(
                    "over {window_ms:.1} ms the energy counter did not move and {n} power samples were read: raise [measure] energy_ms"
                )),
            },
        };
        Ok((runs, drawn))
    }
}

/// What the sampling thread reads over a window.
#[derive(Default)]
struct Samples {
    /// (seconds since the window started, watts).
    power: Vec<(f64, f64)>,
    temperature_c: Vec<f64>,
    core_clock_mhz: Vec<f64>,
    mem_clock_mhz: Vec<f64>,
}

impl Samples {
    fn means(&self) -> Sensors {
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        Sensors {
            temperature_c: mean(&self.temperature_c),
            core_clock_mhz: mean(&self.core_clock_mhz),
            mem_clock_mhz: mean(&self.mem_clock_mhz),
        }
    }
}

/// Reads the power and the sensors every [`SAMPLE_PERIOD`] until `stop` (at least once).
fn sample(gpu: &Device, stop: &AtomicBool, started: Instant) -> Samples {
    let mut out = Samples::default();
    loop {
        if let Ok(mw) = gpu.power_usage() {
            out.power
                .push((started.elapsed().as_secs_f64(), f64::from(mw) / 1e3));
        }
        let readings = [
            (
                gpu.temperature(TemperatureSensor::Gpu),
                &mut out.temperature_c,
            ),
            (gpu.clock_info(Clock::Graphics), &mut out.core_clock_mhz),
            (gpu.clock_info(Clock::Memory), &mut out.mem_clock_mhz),
        ];
        for (reading, into) in readings {
            if let Ok(v) = reading {
                into.push(f64::from(v));
            }
        }
        if stop.load(Ordering::Relaxed) {
            return out;
        }
        std::thread::sleep(SAMPLE_PERIOD);
    }
}

/// The energy in joules of a window of `window_s` seconds from power samples (seconds into
/// the window, watts): the trapezoid rule between samples, the first and last sample held to
/// the window's ends. `None` with fewer than two samples.
pub fn integrate(samples: &[(f64, f64)], window_s: f64) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    if samples.len() < 2 {
        return None;
    }
    let inner: f64 = samples
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum();
    Some(first.0.max(0.0) * first.1 + inner + (window_s - last.0).max(0.0) * last.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_integrate_by_the_trapezoid_rule_to_the_window_ends() {
        // 100 W for the first 0.1 s, a ramp to 200 W over 0.1 s, 200 W held to 0.3 s.
        let samples = [(0.0, 100.0), (0.1, 100.0), (0.2, 200.0)];
        let joules = integrate(&samples, 0.3).unwrap();
        assert!((joules - (10.0 + 15.0 + 20.0)).abs() < 1e-9, "{joules}");
        assert_eq!(integrate(&[(0.0, 100.0)], 1.0), None);
        assert_eq!(integrate(&[], 1.0), None);
    }

    #[test]
    fn a_device_that_is_not_an_nvidia_gpu_says_so() {
        let cpu = DeviceId {
            name: "cpu".into(),
            vendor: "GenuineIntel".into(),
            pci: None,
            same_name_before: 0,
        };
        let e = Meter::open(&cpu).err().unwrap().to_string();
        assert_eq!(
            e,
            "energy and power are not available on this device: cpu (GenuineIntel) is not an NVIDIA GPU; ndtune reads energy and power through NVML, on NVIDIA GPUs only"
        );
    }

    #[test]
    fn without_the_nvidia_library_an_nvidia_device_says_why() {
        // Where NVML is there (a machine with an NVIDIA driver), this device is one it does
        // not know; where it is not, the reason is the library.
        let gpu = DeviceId {
            name: "no such GPU".into(),
            vendor: "NVIDIA Corporation".into(),
            pci: None,
            same_name_before: 0,
        };
        let e = Meter::open(&gpu).err().unwrap().to_string();
        assert!(
            e.contains("libnvidia-ml.so.1") || e.contains("NVML knows no GPU `no such GPU`"),
            "{e}"
        );
    }
}
