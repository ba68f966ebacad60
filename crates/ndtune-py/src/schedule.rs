//! `ndtune.Schedule`: the co-execution schedulers of `ndtune split --schedule` for a Python
//! host program that drives its own devices (one thread per device asks for its next range), as
//! the C API's `ndtune_schedule_*` (crates/ndtune-capi/src/schedule.rs).

use ndtune_split::schedule::{for_program, Dispenser, Scheduler};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// One run's range of the split dimension, handed out to devices on demand. `scheduler` is
/// "static" (the plan of Erdem et al. eq. 4-9, one part per device), "dynamic" (at most
/// `chunks` equal chunks; 0 for 8 per device) or "hguided" (chunks that shrink as the work runs
/// out, sized by each device's speed). Device `i` launches work-groups of `work_groups[i]`
/// items and takes `times_ms[i]` for the whole range alone. Safe to share between threads.
#[pyclass(frozen, module = "ndtune")]
pub struct Schedule {
    dispenser: Dispenser,
    scheduler: Scheduler,
}

#[pymethods]
impl Schedule {
    #[new]
    #[pyo3(signature = (scheduler, global_size, work_groups, times_ms, chunks=0))]
    fn new(
        scheduler: &str,
        global_size: u64,
        work_groups: Vec<u64>,
        times_ms: Vec<f64>,
        chunks: u64,
    ) -> PyResult<Schedule> {
        let parsed: Scheduler = scheduler.parse().map_err(PyValueError::new_err)?;
        if work_groups.len() != times_ms.len() {
            return Err(PyValueError::new_err(format!(
                "work_groups names {} devices but times_ms {}",
                work_groups.len(),
                times_ms.len()
            )));
        }
        let dispenser = for_program(parsed, global_size, &work_groups, &times_ms, chunks)
            .map_err(PyValueError::new_err)?;
        Ok(Schedule {
            dispenser,
            scheduler: parsed,
        })
    }

    /// The next range device `device` computes, its previous one done: `(offset, size,
    /// overlap)`, the first `overlap` items also computed by an earlier part (compare them, do
    /// not gather them); `None` once nothing is left for it. Waits (without the GIL) while
    /// another device still computes a chunk that may come back.
    fn next(&self, py: Python<'_>, device: usize) -> PyResult<Option<(u64, u64, u64)>> {
        self.check(device)?;
        Ok(py
            .detach(|| self.dispenser.take(device))
            .map(|c| (c.offset, c.size, c.overlap)))
    }

    /// Device `device` failed: what it was computing (and any part still assigned to it) goes
    /// to the devices that ask next. Returns those ranges as `(offset, size)`.
    fn fail(&self, device: usize) -> PyResult<Vec<(u64, u64)>> {
        self.check(device)?;
        Ok(self
            .dispenser
            .fail(device)
            .iter()
            .map(|c| (c.offset, c.size))
            .collect())
    }

    #[getter]
    fn scheduler(&self) -> String {
        self.scheduler.to_string()
    }

    #[getter]
    fn devices(&self) -> usize {
        self.dispenser.devices()
    }

    fn __repr__(&self) -> String {
        format!(
            "Schedule({:?}, {} devices)",
            self.scheduler.to_string(),
            self.dispenser.devices()
        )
    }
}

impl Schedule {
    fn check(&self, device: usize) -> PyResult<()> {
        if device >= self.dispenser.devices() {
            return Err(PyValueError::new_err(format!(
                "device {device}: the schedule has {} devices",
                self.dispenser.devices()
            )));
        }
        Ok(())
    }
}
