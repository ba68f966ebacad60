//! The co-execution schedulers for a host program that drives its own devices: one thread (or
//! queue) per device asks [`ndtune_schedule_next`] for the range it computes next, as
//! `ndtune split --schedule` does inside ndtune (docs/split.md). `static` hands out the plan of
//! [`crate::ndtune_split_plan`], one part per device; `dynamic` equal chunks on demand;
//! `hguided` chunks that shrink as the work runs out, sized by each device's speed. A device
//! that fails gives its chunk back ([`ndtune_schedule_fail`]) and the others compute it.

use crate::{guard, ndtune_status, non_null, status, text, Failure};
use ndtune_split::schedule::{for_program, Dispenser, Scheduler};

/// One run's range, handed out to devices on demand. Safe to share between the host threads of
/// the devices: each asks for its own device's next chunk.
pub struct ndtune_schedule(Dispenser);

/// Makes a schedule of `global` items of the split dimension for `n_devices` devices, device
/// `i` launching work-groups of `work_group[i]` items and taking `time_ms[i]` for the whole
/// range alone. `scheduler` is `"static"`, `"dynamic"` (at most `chunks` equal chunks; 0 for 8
/// per device) or `"hguided"`. Writes `*out` (free it with [`ndtune_schedule_free`]).
///
/// # Safety
/// `scheduler` is NULL or a NUL-terminated string; `work_group` and `time_ms` are NULL or point
/// to `n_devices` elements; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ndtune_schedule_new(
    scheduler: *const std::ffi::c_char,
    global: usize,
    n_devices: usize,
    work_group: *const usize,
    time_ms: *const f64,
    chunks: usize,
    out: *mut *mut ndtune_schedule,
) -> ndtune_status {
    status(guard(|| {
        let name = unsafe { text(scheduler, "scheduler") }?;
        let scheduler: Scheduler = name.parse().map_err(Failure::argument)?;
        if n_devices == 0 {
            return Err(Failure::argument("n_devices is 0: no device to schedule"));
        }
        non_null(work_group, "work_group")?;
        non_null(time_ms, "time_ms")?;
        non_null(out, "out")?;
        let (wgs, times) = unsafe {
            (
                std::slice::from_raw_parts(work_group, n_devices),
                std::slice::from_raw_parts(time_ms, n_devices),
            )
        };
        let wgs: Vec<u64> = wgs.iter().map(|&w| w as u64).collect();
        let d = for_program(scheduler, global as u64, &wgs, times, chunks as u64)
            .map_err(Failure::argument)?;
        unsafe { *out = Box::into_raw(Box::new(ndtune_schedule(d))) };
        Ok(())
    }))
}

/// The next range device `device` computes, its previous one done: `[*offset, *offset +
/// *size)`, of which the first `*overlap` items an earlier part also computes (a static plan
/// whose work-group sizes are not multiples of each other: compare, do not gather them).
/// `*size` is 0 once there is nothing left for this device. Waits while another device still
/// computes a chunk that may come back to it.
///
/// # Safety
/// `schedule` is a live handle; `offset`, `size` and `overlap` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ndtune_schedule_next(
    schedule: *const ndtune_schedule,
    device: usize,
    offset: *mut usize,
    size: *mut usize,
    overlap: *mut usize,
) -> ndtune_status {
    status(guard(|| {
        non_null(schedule, "schedule")?;
        non_null(offset, "offset")?;
        non_null(size, "size")?;
        let s = unsafe { &*schedule };
        check_device(s, device)?;
        let chunk = s.0.take(device).unwrap_or_default();
        unsafe {
            *offset = chunk.offset as usize;
            *size = chunk.size as usize;
            if !overlap.is_null() {
                *overlap = chunk.overlap as usize;
            }
        }
        Ok(())
    }))
}

/// Device `device` failed: the range it was computing, and any part still assigned to it, go
/// to the devices that ask next; it gets nothing more. Writes into `*given_back` (unless NULL)
/// how many items it gave back.
///
/// # Safety
/// `schedule` is a live handle; `given_back` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ndtune_schedule_fail(
    schedule: *const ndtune_schedule,
    device: usize,
    given_back: *mut usize,
) -> ndtune_status {
    status(guard(|| {
        non_null(schedule, "schedule")?;
        let s = unsafe { &*schedule };
        check_device(s, device)?;
        let back: u64 = s.0.fail(device).iter().map(|c| c.size).sum();
        if !given_back.is_null() {
            unsafe { *given_back = back as usize };
        }
        Ok(())
    }))
}

/// Frees a schedule; NULL is ignored.
///
/// # Safety
/// `schedule` is NULL or a handle [`ndtune_schedule_new`] made, not freed yet and not in use.
#[no_mangle]
pub unsafe extern "C" fn ndtune_schedule_free(schedule: *mut ndtune_schedule) {
    if !schedule.is_null() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(unsafe { Box::from_raw(schedule) })
        }));
    }
}

fn check_device(s: &ndtune_schedule, device: usize) -> Result<(), Failure> {
    if device >= s.0.devices() {
        return Err(Failure::argument(format!(
            "device {device}: the schedule has {} devices",
            s.0.devices()
        )));
    }
    Ok(())
}
