//! A co-execution study (Erdem et al. 2018, §2.2 and §3): each device alone, the plan from their
//! speeds, the co-execution measured and verified against the best single device, the metrics of
//! Table 3 and Fig. 5, an optional sweep of split factors (Fig. 6-7), and the decision whether
//! co-execution is worth it at all.
//!
//! Speeds come from each device's whole-range run through the same runtime (host clock, transfers
//! included), so the plan balances what is measured, not the kernels alone.
//!
//! Beside the static plan a study can measure the on-demand schedulers ([`crate::schedule`]):
//! each device's fixed costs are measured first (from a run of one row of its work-groups:
//! launch, the inputs every item reads, synchronisation; and what one more chunk costs), a
//! prediction of whether co-executing pays is made from them and the speeds, and every scheduler
//! asked for runs and is verified. The decision keeps the fastest verified one, or the best device alone.

use crate::runtime::{
    ChunkRun, CoExecutor, DeviceFailure, ExecError, Execution, PartTiming, Schedule,
};
use crate::schedule::{equal_chunk, least_chunk, predict, Prediction, ScheduleChoice, Scheduler};
use crate::{optimal_factors, plan_factors, plan_with, Device, Part, Plan, Residue};
use ndtune_bench::data::from_bytes;
use ndtune_bench::verify::compare;
use ndtune_core::Config;
use ndtune_spec::{ArgKind, Spec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The measured co-execution of one split.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measured {
    /// Host-clock score of the whole run (mean of the best runs), transfers included.
    pub ms: f64,
    pub parts: Vec<PartTiming>,
    pub balance: f64,
    /// The gathered outputs match the best single device's (and overlaps agree).
    pub verified: bool,
    /// Why not, where not.
    pub mismatch: Option<String>,
}

/// One point of a sweep: device 0 at `factor`, the others sharing the rest by speed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepPoint {
    pub factor: f64,
    /// Adjusted factors per device after rounding to whole work-groups.
    pub factors: Vec<f64>,
    pub coexec_ms: f64,
    /// Algorithm 1 on the adjusted factors: what this split would take without overhead.
    pub theoretical_ms: f64,
    pub verified: bool,
    /// This is the planner's split.
    pub planner: bool,
}

/// Run co-executed or on one device alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Coexec,
    Single,
}

/// What to run from now on, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Decision {
    pub mode: Mode,
    /// The device that runs alone (mode single).
    pub device: Option<usize>,
    /// The scheduler that co-executes (mode coexec; absent from studies stored before there was
    /// a choice, which were static).
    #[serde(default)]
    pub scheduler: Option<Scheduler>,
    /// The device the chosen co-execution leaves out, where running without it was faster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without: Option<usize>,
    pub reason: String,
    /// The time of what was chosen.
    pub ms: f64,
}

/// Everything a study measured and concluded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Study {
    /// Each device alone over the whole range (host clock, transfers included).
    pub single_ms: Vec<f64>,
    /// Each device's kernel time alone (profiling events).
    pub single_kernel_ms: Vec<f64>,
    pub best_single: usize,
    #[serde(flatten)]
    pub plan: Plan,
    /// The plan the other residue rule makes from the same times, for Table 3 under both rules
    /// (not run); absent from studies stored before there was a choice.
    #[serde(default)]
    pub other_rule: Option<Plan>,
    /// The co-execution of the plan.
    pub coexec_ms: f64,
    /// `coexec / theoretical - 1`.
    pub overhead: f64,
    /// `Σ speed / max speed`.
    pub ideal_speedup: f64,
    /// `best single / coexec`.
    pub speedup: f64,
    /// `speedup / ideal speedup`.
    pub efficiency: f64,
    pub balance: f64,
    pub verified: bool,
    pub mismatch: Option<String>,
    pub parts: Vec<PartTiming>,
    pub decision: Decision,
    pub sweep: Option<Vec<SweepPoint>>,
    /// Each device's fixed costs (absent from studies stored before they were measured).
    #[serde(default)]
    pub fixed: Vec<FixedCost>,
    /// The cost of running together: a co-execution of one granule per device over the
    /// slowest of them alone.
    #[serde(default)]
    pub together_ms: f64,
    /// Before running: whether co-executing was expected to pay.
    #[serde(default)]
    pub prediction: Option<Prediction>,
    /// Every scheduler measured, static first.
    #[serde(default)]
    pub schedules: Vec<ScheduleRun>,
    /// The earlier times the static plan and hguided's speeds were made from, where given.
    #[serde(default)]
    pub plan_ms: Option<Vec<f64>>,
    /// The times the static plan and hguided's speeds were made from: `plan_ms` where given,
    /// else each device's time alone, devices alike taking their mean (absent from studies
    /// stored before).
    #[serde(default)]
    pub planned_ms: Vec<f64>,
}

/// What a device pays whatever its share.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FixedCost {
    pub device: usize,
    /// What a run costs beyond its work: its launch, the inputs every item reads, the
    /// synchronisation (host clock; from a run of one row of work-groups and the whole range).
    pub run_ms: f64,
    /// What one more chunk costs beyond its work: a launch and its synchronisation.
    pub chunk_ms: f64,
}

/// One scheduler's measured co-execution.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScheduleRun {
    pub scheduler: Scheduler,
    /// The device this run left out (the static plan without the slowest device), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without: Option<usize>,
    pub ms: f64,
    /// `best single / ms`.
    pub speedup: f64,
    /// `speedup / ideal speedup`.
    pub efficiency: f64,
    pub balance: f64,
    pub verified: bool,
    pub mismatch: Option<String>,
    pub parts: Vec<PartTiming>,
    /// What each device computed when (the timed run of median time).
    pub timeline: Vec<ChunkRun>,
    /// Devices that failed during it; their chunks were run by the others.
    pub failures: Vec<DeviceFailure>,
}

impl ScheduleRun {
    /// How reports name the run: its scheduler, and the device it left out.
    pub fn label(&self) -> String {
        match self.without {
            Some(d) => format!("{} without device {d}", self.scheduler),
            None => self.scheduler.to_string(),
        }
    }
}

/// What a study measures and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The step of a factor sweep of the static plan.
    pub sweep: Option<f64>,
    pub residue: Residue,
    pub schedule: ScheduleChoice,
    /// `dynamic`: chunks in all, at most (default: 8 per device).
    pub chunks: Option<u64>,
    /// Each device's whole-range time from an earlier measurement: the static plan and the
    /// hguided speeds are made from these instead of this run's (a plan made once and kept
    /// while devices slow down). Efficiency is still against this run's times.
    pub plan_ms: Option<Vec<f64>>,
}

/// One device of a co-execution as `ndtune split` reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceRow {
    pub device: String,
    pub config: Config,
    /// The kernel's time in the store (profiling events, tuning's protocol).
    pub tuned_ms: f64,
    /// Work-group size along the split dimension.
    pub wg: u64,
    /// Alone over the whole range, host clock, transfers included.
    pub single_ms: f64,
    pub single_kernel_ms: f64,
}

/// A study with the devices it ran on: what `ndtune split --json` prints and keeps in the store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub kernel: String,
    /// The problem's constants (sizes), by name.
    #[serde(default)]
    pub constants: BTreeMap<String, ndtune_core::Value>,
    pub dim: usize,
    pub devices: Vec<DeviceRow>,
    #[serde(flatten)]
    pub study: Study,
}

/// Measures and plans a co-execution with `exec` as `options` say. `progress` hears what is
/// measured next.
pub fn study(
    exec: &mut CoExecutor,
    spec: &Spec,
    options: &Options,
    progress: &mut dyn FnMut(String),
) -> Result<Study, ExecError> {
    let (sweep, residue) = (options.sweep, options.residue);
    if options.chunks == Some(0) {
        return Err(ExecError::Invalid("--chunks 0: at least one chunk".into()));
    }
    if let Some(step) = sweep {
        if !(step > 0.0 && step <= 1.0) {
            return Err(ExecError::Invalid(format!(
                "--sweep {step}: the step must be in (0, 1]"
            )));
        }
    }
    let global = exec.global();
    let wgs = exec.work_groups();
    let n = wgs.len();
    if n < 2 {
        return Err(ExecError::Invalid(
            "co-execution needs at least two devices".into(),
        ));
    }
    let measure = &spec.measure;
    let mut singles: Vec<Execution> = Vec::new();
    for (i, &wg) in wgs.iter().enumerate() {
        let whole = plan_factors(global, &[Device { wg, time_ms: 1.0 }], &[1.0])
            .map_err(|e| ExecError::Invalid(e.to_string()))?;
        let mut part = whole.parts[0].clone();
        part.device = i;
        progress(format!("device {i} alone"));
        singles.push(exec.execute(&[part], measure)?);
    }
    let single_ms: Vec<f64> = singles.iter().map(|e| e.timing.score_ms()).collect();
    let best_single = (0..n)
        .min_by(|&a, &b| single_ms[a].total_cmp(&single_ms[b]))
        .expect("at least one device");
    let reference = &singles[best_single].outputs;
    let tol = spec
        .verify
        .as_ref()
        .map_or((0.0, 0.0), |v| (v.rtol, v.atol));
    let check = |e: &Execution| -> Option<String> {
        e.overlap_mismatch
            .as_ref()
            .map(ToString::to_string)
            .or_else(|| mismatch(spec, reference, &e.outputs, tol))
    };
    // Devices that disagree alone make every split unverifiable: say which.
    let disagree = (0..n).find_map(|i| {
        mismatch(spec, reference, &singles[i].outputs, tol)
            .map(|m| format!("device {i} alone differs from device {best_single} alone: {m}"))
    });
    let plan_ms = match &options.plan_ms {
        Some(t) if t.len() != n => {
            return Err(ExecError::Invalid(format!(
                "--plan-ms gives {} times for {n} devices",
                t.len()
            )))
        }
        Some(t) if t.iter().any(|x| !(*x > 0.0 && x.is_finite())) => {
            return Err(ExecError::Invalid(format!(
                "--plan-ms {t:?}: every time must be positive"
            )))
        }
        Some(t) => t.clone(),
        None => one_speed_for_alike(&single_ms, &exec.alike()),
    };
    let devices: Vec<Device> = wgs
        .iter()
        .zip(&plan_ms)
        .map(|(&wg, &time_ms)| Device { wg, time_ms })
        .collect();
    let plan_by =
        |rule| plan_with(global, &devices, rule).map_err(|e| ExecError::Invalid(e.to_string()));
    let the_plan = plan_by(residue)?;
    let other_rule = plan_by(residue.other())?;
    let (fixed, together_ms) = fixed_costs(exec, measure, &single_ms, progress)?;
    let fixed_run: Vec<f64> = fixed.iter().map(|f| f.run_ms).collect();
    let granule_share = exec.granule()? as f64 / global as f64;
    let prediction = predict(&single_ms, &fixed_run, together_ms, granule_share);
    // A plan of one part is that device alone: already measured.
    let coexec = match &the_plan.parts[..] {
        [alone] => singles[alone.device].clone(),
        parts => {
            progress("co-execution of the plan (static)".into());
            exec.execute(parts, measure)?
        }
    };
    let best_ms = single_ms[best_single];
    let speeds: f64 = single_ms.iter().map(|t| 1.0 / t).sum();
    let ideal_speedup = speeds * best_ms;
    let measured = |scheduler: Scheduler, e: &Execution| {
        let mismatch = disagree.clone().or_else(|| check(e));
        let ms = e.timing.score_ms();
        ScheduleRun {
            scheduler,
            without: None,
            ms,
            speedup: best_ms / ms,
            efficiency: best_ms / ms / ideal_speedup,
            balance: e.balance,
            verified: mismatch.is_none(),
            mismatch,
            parts: e.parts.clone(),
            timeline: e.timeline.clone(),
            failures: e.failures.clone(),
        }
    };
    let mut schedules = vec![measured(Scheduler::Static, &coexec)];
    // The devices worth using by the prediction; all of them where it expects none to help.
    let members = if prediction.devices.len() > 1 {
        prediction.devices.clone()
    } else {
        exec.alive()
    };
    for scheduler in options.schedule.measured().into_iter().skip(1) {
        let schedule = on_demand(
            exec,
            scheduler,
            &plan_ms,
            &fixed,
            options.chunks,
            members.clone(),
        )?;
        progress(format!("co-execution on demand ({scheduler})"));
        let e = exec.run(&schedule, measure)?;
        schedules.push(measured(scheduler, &e));
    }
    // A device that shares the run costs the others what no device alone shows (transfers
    // through the host they share, a CPU's threads beside the GPUs' queues): with three devices
    // or more the static plan also runs without the slowest, and the decision takes the faster.
    if n >= 3 {
        let slowest = (0..n)
            .max_by(|&a, &b| plan_ms[a].total_cmp(&plan_ms[b]))
            .expect("three devices or more");
        let kept: Vec<usize> = (0..n).filter(|&i| i != slowest).collect();
        let subset: Vec<Device> = kept.iter().map(|&i| devices[i]).collect();
        let plan =
            plan_with(global, &subset, residue).map_err(|e| ExecError::Invalid(e.to_string()))?;
        if plan.parts.len() > 1 {
            let parts: Vec<Part> = plan
                .parts
                .iter()
                .map(|p| Part {
                    device: kept[p.device],
                    ..p.clone()
                })
                .collect();
            progress(format!(
                "co-execution of the plan without device {slowest} (static)"
            ));
            let e = exec.execute(&parts, measure)?;
            schedules.push(ScheduleRun {
                without: Some(slowest),
                ..measured(Scheduler::Static, &e)
            });
        }
    }
    let mismatch_text = schedules[0].mismatch.clone();
    let verified = mismatch_text.is_none();
    let coexec_ms = schedules[0].ms;
    let speedup = schedules[0].speedup;
    let alone = |reason: String| Decision {
        mode: Mode::Single,
        device: Some(best_single),
        scheduler: None,
        without: None,
        reason,
        ms: best_ms,
    };
    let fastest = schedules
        .iter()
        .filter(|r| r.verified && r.parts.len() > 1)
        .min_by(|a, b| a.ms.total_cmp(&b.ms));
    let decision = match fastest {
        Some(r) if r.ms < best_ms => Decision {
            mode: Mode::Coexec,
            device: None,
            scheduler: Some(r.scheduler),
            without: r.without,
            reason: if schedules.len() > 1 {
                format!(
                    "co-execution by `{}` is {:.2}x the best single device ({})",
                    r.label(),
                    r.speedup,
                    schedules
                        .iter()
                        .map(|o| format!("{} {:.4} ms", o.label(), o.ms))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                format!("co-execution is {:.2}x the best single device", r.speedup)
            },
            ms: r.ms,
        },
        Some(r) => alone(format!(
            "co-execution ({:.4} ms{}) is no faster than device {best_single} alone ({best_ms:.4} ms), so device {best_single} runs alone: {}",
            r.ms,
            if schedules.len() > 1 { format!(", its fastest scheduler `{}`", r.label()) } else { String::new() },
            too_small(best_ms, the_plan.theoretical_ms, r.ms)
        )),
        None if schedules.iter().any(|r| !r.verified) => alone(format!(
            "the co-executed output is wrong, so device {best_single} runs alone; check that [split.buffers] (stride, before, after) matches how the kernel indexes each buffer"
        )),
        None => alone(format!(
            "every other device's share is less than one of its work-groups: device {best_single} runs alone"
        )),
    };
    let sweep = match sweep {
        None => None,
        Some(step) => {
            let rest = optimal_factors(&devices[1..]);
            let mut points = Vec::new();
            let steps = (1.0 / step).round() as usize;
            for k in 0..=steps {
                let f = (k as f64 * step).min(1.0);
                let mut factors = vec![f];
                factors.extend(rest.iter().map(|r| r * (1.0 - f)));
                let p = plan_factors(global, &devices, &factors)
                    .map_err(|e| ExecError::Invalid(e.to_string()))?;
                progress(format!("sweep: device 0 at {f:.3}"));
                let e = exec.execute(&p.parts, measure)?;
                points.push(SweepPoint {
                    factor: f,
                    factors: adjusted(&p, n),
                    coexec_ms: e.timing.score_ms(),
                    theoretical_ms: p.theoretical_ms,
                    verified: check(&e).is_none(),
                    planner: false,
                });
            }
            let planned = adjusted(&the_plan, n);
            points.push(SweepPoint {
                factor: planned[0],
                factors: planned,
                coexec_ms,
                theoretical_ms: the_plan.theoretical_ms,
                verified,
                planner: true,
            });
            points.sort_by(|a, b| a.factor.total_cmp(&b.factor));
            Some(points)
        }
    };
    Ok(Study {
        single_kernel_ms: singles.iter().map(|e| e.parts[0].kernel_ms).collect(),
        single_ms,
        best_single,
        overhead: coexec_ms / the_plan.theoretical_ms - 1.0,
        plan: the_plan,
        other_rule: Some(other_rule),
        coexec_ms,
        ideal_speedup,
        speedup,
        efficiency: speedup / ideal_speedup,
        balance: coexec.balance,
        verified,
        mismatch: mismatch_text,
        parts: coexec.parts,
        decision,
        sweep,
        fixed,
        together_ms,
        prediction: Some(prediction),
        schedules,
        plan_ms: options.plan_ms.clone(),
        planned_ms: plan_ms,
    })
}

/// The times to plan with: devices alike (`alike[i]`: the first member alike to member `i`,
/// [`CoExecutor::alike`]) take the mean of their times alone. Alike devices run at one speed;
/// what their times alone differ by is noise of that measurement (four H200 timed conv1d alone
/// at 5.5-7.8 ms, and a plan from those times gave one a fifth of the range and another 28%).
fn one_speed_for_alike(single_ms: &[f64], alike: &[usize]) -> Vec<f64> {
    alike
        .iter()
        .map(|&kind| {
            let times: Vec<f64> = (0..single_ms.len())
                .filter(|&j| alike[j] == kind)
                .map(|j| single_ms[j])
                .collect();
            times.iter().sum::<f64>() / times.len() as f64
        })
        .collect()
}

/// Each device's fixed costs, and the cost of running together. A device runs one row of its
/// work-groups alone (a share `s` of the work): with `T(s) = f + s·(t − f)` and its whole-range
/// time `t`, its fixed cost is `f = (T(s) − s·t) / (1 − s)`. One more chunk costs that run's time
/// less its transfers and its kernel (the launch and its synchronisation). Then every device
/// runs one granule at once: what that takes beyond the slowest of them alone is the price of
/// running together (threads, gather, contention).
fn fixed_costs(
    exec: &mut CoExecutor,
    measure: &ndtune_spec::Measure,
    single_ms: &[f64],
    progress: &mut dyn FnMut(String),
) -> Result<(Vec<FixedCost>, f64), ExecError> {
    let wgs = exec.work_groups();
    let global = exec.global();
    let mut fixed = Vec::new();
    for (device, &wg) in wgs.iter().enumerate() {
        progress(format!(
            "device {device}: fixed costs (one row of work-groups)"
        ));
        let e = exec.execute(&[Part::range(device, 0, wg)], measure)?;
        let s = wg as f64 / global as f64;
        let t = single_ms[device];
        let run_ms = if s < 1.0 {
            ((e.timing.score_ms() - s * t) / (1.0 - s)).clamp(0.0, t)
        } else {
            t
        };
        let chunk_ms = e.timeline.first().map_or(run_ms, |c| {
            (c.end_ms - c.start_ms - c.transfer_ms - c.kernel_ms).max(0.0)
        });
        fixed.push(FixedCost {
            device,
            run_ms,
            chunk_ms,
        });
    }
    let granule = exec.granule()?;
    if wgs.len() as u64 * granule > global {
        return Ok((fixed, 0.0));
    }
    progress("fixed cost of running together".into());
    let parts: Vec<Part> = (0..wgs.len())
        .map(|d| Part::range(d, d as u64 * granule, granule))
        .collect();
    let e = exec.execute(&parts, measure)?;
    // What each device alone would take for its granule, by the same linear model.
    let s = granule as f64 / global as f64;
    let slowest = fixed
        .iter()
        .zip(single_ms)
        .map(|(f, t)| f.run_ms + s * (t - f.run_ms))
        .fold(0.0, f64::max);
    Ok((fixed, (e.timing.score_ms() - slowest).max(0.0)))
}

/// The on-demand schedule of `scheduler` from the measured speeds and fixed costs.
fn on_demand(
    exec: &CoExecutor,
    scheduler: Scheduler,
    times_ms: &[f64],
    fixed: &[FixedCost],
    chunks: Option<u64>,
    devices: Vec<usize>,
) -> Result<Schedule, ExecError> {
    let global = exec.global();
    let granule = exec.granule()?;
    Ok(match scheduler {
        Scheduler::Static => unreachable!("the static plan is measured first"),
        Scheduler::Dynamic => Schedule::Dynamic {
            chunk: equal_chunk(global, granule, chunks, devices.len()),
            devices,
        },
        Scheduler::Hguided => Schedule::Hguided {
            speeds: times_ms.iter().map(|t| 1.0 / t).collect(),
            least: times_ms
                .iter()
                .zip(fixed)
                .map(|(&t, f)| least_chunk(global, granule, t, f.chunk_ms, devices.len()))
                .collect(),
            devices,
        },
    })
}

/// Why a co-execution that measured `coexec_ms` did not beat the best device alone (`best_ms`)
/// though its plan predicts `theoretical_ms`: every device pays fixed costs (its launch, its
/// transfers, the threads' synchronisation) that do not shrink with its share, while the gain is
/// a share of the work. The gain grows with the problem and the fixed costs do not, so the
/// ratio says how much more work would break even.
pub fn too_small(best_ms: f64, theoretical_ms: f64, coexec_ms: f64) -> String {
    let gain = best_ms - theoretical_ms;
    let fixed = coexec_ms - theoretical_ms;
    if gain <= 0.0 {
        return format!(
            "the plan itself predicts no gain ({theoretical_ms:.4} ms against {best_ms:.4} ms)"
        );
    }
    format!(
        "splitting saves at most {gain:.4} ms of work here (the plan's {theoretical_ms:.4} ms against {best_ms:.4} ms), while co-executing costs {fixed:.4} ms of fixed costs per run (each device's launch, transfers and the synchronisation, which do not shrink with its share); the problem is too small: with about {:.1}x the work the gain would cover them",
        fixed / gain
    )
}

/// Each device's adjusted factor in a plan (0 where it has no part).
fn adjusted(p: &Plan, n: usize) -> Vec<f64> {
    let mut f = vec![0.0; n];
    for q in &p.parts {
        f[q.device] = q.factor;
    }
    f
}

/// The first output of `actual` that differs from `expected`, described.
fn mismatch(
    spec: &Spec,
    expected: &BTreeMap<String, Vec<u8>>,
    actual: &BTreeMap<String, Vec<u8>>,
    (rtol, atol): (f64, f64),
) -> Option<String> {
    expected.iter().find_map(|(name, want)| {
        let ty = spec.args.iter().find_map(|a| match &a.kind {
            ArgKind::Buffer { ty, .. } if &a.name == name => Some(*ty),
            _ => None,
        })?;
        let got = actual.get(name).map_or(&[][..], Vec::as_slice);
        compare(
            name,
            &from_bytes(ty, want),
            &from_bytes(ty, got),
            rtol,
            atol,
        )
        .err()
        .map(|m| m.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::too_small;

    #[test]
    fn a_small_problem_is_explained_by_its_fixed_costs_against_its_gain() {
        // The main job's matmul at N = 128 on two CPU halves: 1.50 ms alone, a plan of 0.76 ms,
        // 1.56 ms co-executed: 0.80 ms of fixed costs against 0.74 ms of gain.
        let why = too_small(1.50, 0.76, 1.56);
        assert!(why.contains("saves at most 0.7400 ms"), "{why}");
        assert!(why.contains("0.8000 ms of fixed costs"), "{why}");
        assert!(why.contains("about 1.1x the work"), "{why}");
        assert!(too_small(1.0, 1.2, 1.5).contains("predicts no gain"));
    }
}
