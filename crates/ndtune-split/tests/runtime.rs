//! The co-execution runtime as a Rust host program uses it, on real OpenCL: the two halves of the
//! PoCL CPU (sub-devices 0:0/2 and 0:1/2), the shipped matmul and conv1d kernels, equal, unequal
//! and overlapping partitions, outputs checked against the float64 host references.

use ndtune_backend::AnyDevice;
use ndtune_bench::data::{from_bytes, spec_inputs};
use ndtune_bench::verify::compare;
use ndtune_spec::{ArgKind, Spec};
use ndtune_split::runtime::{CoExecutor, ExecError, Member, Schedule};
use ndtune_split::schedule::{ScheduleChoice, Scheduler};
use ndtune_split::study::{study, Mode, Options};
use ndtune_split::{plan, Device, Part, Residue};
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn halves() -> Vec<AnyDevice> {
    let cpu = &ndtune_backend::discover().expect("PoCL is installed")[0];
    (0..2)
        .map(|k| cpu.sub_device(k, 2).expect("PoCL makes sub-devices"))
        .collect()
}

fn load(path: &Path, n: i64) -> Spec {
    Spec::load_with(path, &ndtune_core::int_config([("N", n)])).unwrap()
}

/// Sets up both halves with the given configurations and the spec's deterministic inputs.
fn executor(spec: &Spec, configs: [Vec<i64>; 2]) -> CoExecutor {
    let members: Vec<Member> = halves()
        .into_iter()
        .zip(configs)
        .map(|(device, config)| Member {
            device,
            config,
            twin: None,
        })
        .collect();
    let labels = vec!["0:0/2".to_string(), "0:1/2".to_string()];
    let inputs = spec_inputs(spec, &members[0].config, 1).unwrap();
    let dim = spec.split.as_ref().unwrap().dim;
    CoExecutor::new(spec, &members, &labels, dim, &inputs).unwrap()
}

/// The built-in float64 reference's output for the spec's inputs.
fn reference(spec: &Spec, config: &[i64], name: &str, output: &str) -> Vec<f64> {
    let inputs = spec_inputs(spec, config, 1).unwrap();
    let values = inputs
        .iter()
        .map(|(k, bytes)| {
            let ty = spec
                .args
                .iter()
                .find_map(|a| match &a.kind {
                    ArgKind::Buffer { ty, .. } if &a.name == k => Some(*ty),
                    _ => None,
                })
                .unwrap();
            (k.clone(), from_bytes(ty, bytes))
        })
        .collect();
    let f = ndtune_kernels::builtin(name).unwrap();
    f(&values, &spec.problem.constants).unwrap()[output].clone()
}

fn part(device: usize, offset: u64, size: u64) -> Part {
    Part::range(device, offset, size)
}

fn assert_matches(spec: &Spec, expected: &[f64], out: &[u8]) {
    let v = spec.verify.as_ref().unwrap();
    compare(
        "out",
        expected,
        &from_bytes(ndtune_spec::ElemType::Float, out),
        v.rtol,
        v.atol,
    )
    .unwrap_or_else(|m| panic!("{m}"));
}

#[test]
fn matmul_rows_split_equally_and_unequally_match_the_host_reference() {
    let spec = load(&example("matmul.toml"), 64);
    let expected = reference(&spec, &[8, 8], "matmul", "C");
    let mut exec = executor(&spec, [vec![8, 8], vec![16, 16]]);
    assert_eq!(exec.global(), 64);
    assert_eq!(exec.work_groups(), vec![8, 16]);
    for parts in [
        vec![part(0, 0, 32), part(1, 32, 32)],
        vec![part(0, 0, 16), part(1, 16, 48)],
        vec![part(1, 0, 48), part(0, 48, 16)],
    ] {
        let e = exec.execute(&parts, &spec.measure).unwrap();
        assert_matches(&spec, &expected, &e.outputs["C"]);
        assert!(e.overlap_mismatch.is_none());
        assert_eq!(e.timing.times_ms.len(), spec.measure.runs as usize);
        assert_eq!(e.parts.len(), 2);
        assert!(e.balance > 0.0 && e.balance <= 1.0, "{}", e.balance);
        for p in &e.parts {
            assert!(p.kernel_ms > 0.0 && p.finish_ms >= p.kernel_ms, "{p:?}");
        }
    }
    // Parts that are not whole work-groups of their device are refused before anything runs.
    let err = exec
        .execute(&[part(0, 0, 20), part(1, 20, 44)], &spec.measure)
        .unwrap_err();
    assert!(matches!(err, ExecError::Invalid(_)), "{err}");
    assert!(err.to_string().contains("whole work-groups of 8"), "{err}");
}

/// conv1d over 1200 items planned for work-groups of 24 and 40, which are not multiples of each
/// other: the plan overlaps, and the run's output and overlap items match the reference.
fn run_overlapping_plan(spec: &Spec, exec: &mut CoExecutor, expected: &[f64]) {
    let devices = [
        Device {
            wg: 24,
            time_ms: 2.0,
        },
        Device {
            wg: 40,
            time_ms: 2.5,
        },
    ];
    let overlapping = plan(1200, &devices).unwrap();
    assert!(overlapping.overlap > 0, "{overlapping:?}");
    let e = exec.execute(&overlapping.parts, &spec.measure).unwrap();
    assert!(e.overlap_mismatch.is_none(), "{:?}", e.overlap_mismatch);
    assert_matches(spec, expected, &e.outputs["out"]);
}

#[test]
fn conv1d_parts_with_halo_and_an_overlap_match_the_host_reference() {
    // Work-groups of 24 and 40 are not multiples of each other: this plan overlaps.
    let spec = load(&example("conv1d.toml"), 1200);
    let expected = reference(&spec, &[24], "conv1d", "out");
    let mut exec = executor(&spec, [vec![24], vec![40]]);
    run_overlapping_plan(&spec, &mut exec, &expected);
    // Unequal parts: a quarter and three quarters.
    let e = exec
        .execute(&[part(0, 0, 240), part(1, 240, 960)], &spec.measure)
        .unwrap();
    assert_matches(&spec, &expected, &e.outputs["out"]);
}

#[test]
fn a_halo_missing_from_the_split_declaration_is_caught_by_verification() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["conv1d.toml", "conv1d.cl"] {
        std::fs::copy(example(f), dir.path().join(f)).unwrap();
    }
    let path = dir.path().join("conv1d.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let wrong = text.replace("after = \"MASK - 1\"", "after = 0");
    assert_ne!(text, wrong, "the example declares the halo");
    std::fs::write(&path, wrong).unwrap();
    let spec = load(&path, 2048);
    let mut exec = executor(&spec, [vec![16], vec![16]]);
    let options = Options {
        residue: Residue::Paper,
        schedule: ScheduleChoice::Auto,
        ..Options::default()
    };
    let s = study(&mut exec, &spec, &options, &mut |_| {}).unwrap();
    // No scheduler's output is right: each is measured and named wrong.
    assert_eq!(s.schedules.len(), 3);
    assert!(s.schedules.iter().all(|r| !r.verified));
    assert!(!s.verified);
    let why = s.mismatch.unwrap();
    assert!(why.starts_with("out:"), "{why}");
    assert_eq!(s.decision.mode, Mode::Single);
    assert!(
        s.decision.reason.contains("[split.buffers]"),
        "{}",
        s.decision.reason
    );
}

#[test]
fn a_study_measures_each_device_plans_co_executes_and_sweeps() {
    let spec = load(&example("matmul.toml"), 64);
    let mut exec = executor(&spec, [vec![8, 8], vec![8, 8]]);
    let mut heard = Vec::new();
    let options = Options {
        sweep: Some(0.5),
        ..Options::default()
    };
    let s = study(&mut exec, &spec, &options, &mut |m| heard.push(m)).unwrap();
    // `static` alone: the seed's study, with the fixed costs and the prediction beside it.
    assert_eq!(s.schedules.len(), 1);
    assert_eq!(s.fixed.len(), 2);
    // A device's fixed cost of a run is what one row of work-groups takes beyond its share of
    // the whole: none where the row ran as fast as its share (on a loaded machine it may).
    assert!(s
        .fixed
        .iter()
        .all(|f| { (0.0..=s.single_ms[f.device]).contains(&f.run_ms) && f.chunk_ms >= 0.0 }));
    let p = s.prediction.as_ref().unwrap();
    assert!(p.ms > 0.0 && p.ms <= s.single_ms[s.best_single], "{p:?}");
    assert!(s.verified, "{:?}", s.mismatch);
    // Table 3 under both rules: the one run and the other one planned from the same times.
    let other = s.other_rule.as_ref().unwrap();
    assert_eq!(
        (s.plan.residue, other.residue),
        (Residue::Finish, Residue::Paper)
    );
    assert!(s.plan.theoretical_ms <= other.theoretical_ms);
    assert_eq!(s.single_ms.len(), 2);
    assert_eq!(s.plan.parts.iter().map(|p| p.size).sum::<u64>(), 64);
    // The halves run one configuration: alike, so planned at one speed (the mean of their
    // times alone, which differ by noise), each half of the range.
    let mean = (s.single_ms[0] + s.single_ms[1]) / 2.0;
    assert_eq!(s.planned_ms, [mean, mean]);
    let sizes: Vec<u64> = s.plan.parts.iter().map(|p| p.size).collect();
    assert_eq!(sizes, [32, 32], "{:?}", s.plan);
    let best = s.single_ms[s.best_single];
    assert!(s.single_ms.iter().all(|&t| t >= best));
    assert!((s.speedup - best / s.coexec_ms).abs() < 1e-9);
    assert!((s.efficiency - s.speedup / s.ideal_speedup).abs() < 1e-9);
    assert!(s.ideal_speedup > 1.0 && s.ideal_speedup <= 2.0);
    // Whatever was decided, it is never slower than the best device alone.
    assert!(s.decision.ms <= best);
    let sweep = s.sweep.unwrap();
    assert_eq!(sweep.iter().filter(|p| p.planner).count(), 1);
    assert_eq!(
        sweep
            .iter()
            .filter(|p| !p.planner)
            .map(|p| p.factor)
            .collect::<Vec<_>>(),
        vec![0.0, 0.5, 1.0]
    );
    assert!(sweep.iter().all(|p| p.verified && p.coexec_ms > 0.0));
    assert!(heard.iter().any(|m| m.contains("alone")) && heard.iter().any(|m| m.contains("sweep")));
}

#[test]
fn buffers_the_kernel_writes_must_follow_the_split() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["matmul.toml", "matmul.cl"] {
        std::fs::copy(example(f), dir.path().join(f)).unwrap();
    }
    let path = dir.path().join("matmul.toml");
    // Splitting the columns: [split.buffers] only says how rows follow, and C is written.
    let spec = load(&path, 64);
    let members: Vec<Member> = halves()
        .into_iter()
        .map(|device| Member {
            device,
            config: vec![8, 8],
            twin: None,
        })
        .collect();
    let inputs = spec_inputs(&spec, &[8, 8], 1).unwrap();
    let labels = vec!["a".to_string(), "b".to_string()];
    let err = CoExecutor::new(&spec, &members, &labels, 0, &inputs)
        .err()
        .expect("C cannot be gathered by columns");
    assert!(
        err.to_string().contains("`C` is written by the kernel")
            && err.to_string().contains("dimension 0"),
        "{err}"
    );
    let err = CoExecutor::new(&spec, &members, &labels, 2, &inputs)
        .err()
        .unwrap();
    assert!(err.to_string().contains("2 dimension(s)"), "{err}");
}

/// On both halves: the static halves of `2 · half` items, dynamic chunks of `chunk`, hguided
/// with these speeds and least chunks.
fn every_scheduler(half: u64, chunk: u64, speeds: [f64; 2], least: u64) -> [Schedule; 3] {
    [
        Schedule::Static(vec![part(0, 0, half), part(1, half, half)]),
        Schedule::Dynamic {
            chunk,
            devices: vec![0, 1],
        },
        Schedule::Hguided {
            speeds: speeds.to_vec(),
            least: vec![least; 2],
            devices: vec![0, 1],
        },
    ]
}

/// The chunks of a timeline in offset order cover `[0, global)` exactly once.
fn covered_exactly_once(timeline: &[ndtune_split::runtime::ChunkRun], global: u64) {
    let mut chunks: Vec<(u64, u64)> = timeline.iter().map(|c| (c.offset, c.size)).collect();
    chunks.sort_unstable();
    let mut at = 0;
    for (offset, size) in &chunks {
        assert_eq!(*offset, at, "a gap or an overlap at {at}: {chunks:?}");
        at += size;
    }
    assert_eq!(at, global, "{chunks:?}");
}

#[test]
fn every_scheduler_covers_the_range_once_and_matches_the_host_reference() {
    // Work-groups of 24 and 40: dynamic chunks are whole granules of 120, each device runs them
    // with its own work-group size.
    let spec = load(&example("conv1d.toml"), 2400);
    let expected = reference(&spec, &[24], "conv1d", "out");
    let mut exec = executor(&spec, [vec![24], vec![40]]);
    assert_eq!(exec.granule().unwrap(), 120);
    for schedule in every_scheduler(1200, 250, [1.0, 3.0], 120) {
        let e = exec.run(&schedule, &spec.measure).unwrap();
        assert_matches(&spec, &expected, &e.outputs["out"]);
        covered_exactly_once(&e.timeline, 2400);
        assert!(e.failures.is_empty());
        for c in &e.timeline {
            assert!(c.end_ms > c.start_ms && c.kernel_ms > 0.0, "{c:?}");
            if !matches!(schedule, Schedule::Static(_)) {
                assert_eq!(c.size % 120, 0, "{c:?}");
            }
        }
        match schedule.scheduler() {
            // 2400 / 240 (250 rounded down to granules) = 10 equal chunks.
            Scheduler::Dynamic => {
                assert_eq!(e.timeline.len(), 10);
                assert!(e.timeline.iter().all(|c| c.size == 240));
            }
            // The first chunk of each device is its speed's share of half the work or less.
            Scheduler::Hguided => {
                assert!(e.timeline.len() > 2, "{:?}", e.timeline);
                let first = e.timeline.iter().min_by_key(|c| c.offset).unwrap();
                assert!(first.size <= 900, "{first:?}");
            }
            Scheduler::Static => assert_eq!(e.timeline.len(), 2),
        }
    }
}

#[test]
fn chunks_run_in_pipelined_slices_match_the_host_reference() {
    // Each chunk in three slices (inputs of the next written while one runs, outputs read back
    // as each finishes): conv1d's halo, the overlap of groups 24 and 40, and matmul's B that
    // every slice reads, written once.
    let spec = load(&example("conv1d.toml"), 1200);
    let expected = reference(&spec, &[24], "conv1d", "out");
    let mut exec = executor(&spec, [vec![24], vec![40]]);
    exec.slices(3).unwrap();
    run_overlapping_plan(&spec, &mut exec, &expected);
    for schedule in every_scheduler(600, 240, [1.0, 2.0], 120) {
        let e = exec.run(&schedule, &spec.measure).unwrap();
        assert_matches(&spec, &expected, &e.outputs["out"]);
        covered_exactly_once(&e.timeline, 1200);
    }
    let spec = load(&example("matmul.toml"), 96);
    let expected = reference(&spec, &[8, 8], "matmul", "C");
    let mut exec = executor(&spec, [vec![8, 8], vec![16, 16]]);
    // More slices than a chunk has work-groups: one per work-group.
    exec.slices(100).unwrap();
    for schedule in every_scheduler(48, 48, [1.0, 1.0], 48) {
        let e = exec.run(&schedule, &spec.measure).unwrap();
        assert_matches(&spec, &expected, &e.outputs["C"]);
        covered_exactly_once(&e.timeline, 96);
    }
}

#[test]
fn a_device_that_fails_mid_run_is_reported_and_its_chunks_run_elsewhere() {
    let spec = load(&example("matmul.toml"), 128);
    let expected = reference(&spec, &[8, 8], "matmul", "C");
    for schedule in every_scheduler(64, 16, [1.0, 1.0], 8) {
        let mut exec = executor(&spec, [vec![8, 8], vec![16, 16]]);
        // Device 1 fails at its second chunk: under `static`, its part in the second run.
        exec.fail_after(1, 1).unwrap();
        let e = exec.run(&schedule, &spec.measure).unwrap();
        assert_matches(&spec, &expected, &e.outputs["C"]);
        assert_eq!(e.failures.len(), 1, "{:?}", e.failures);
        let f = &e.failures[0];
        assert_eq!((f.device, f.label.as_str()), (1, "0:1/2"));
        assert!(
            f.message.contains("CL_INVALID_WORK_GROUP_SIZE")
                || f.message.contains("clEnqueueNDRangeKernel"),
            "{}",
            f.message
        );
        assert!(!f.given_back.is_empty());
        assert_eq!(exec.alive(), vec![0]);
        // Later runs go to the device that is left, and still cover everything.
        let again = exec.run(&schedule, &spec.measure).unwrap();
        assert_matches(&spec, &expected, &again.outputs["C"]);
        assert!(again.timeline.iter().all(|c| c.device == 0));
        covered_exactly_once(&again.timeline, 128);
    }
}

#[test]
fn when_no_device_is_left_the_items_nobody_ran_are_named() {
    let spec = load(&example("matmul.toml"), 64);
    let mut exec = executor(&spec, [vec![8, 8], vec![8, 8]]);
    exec.fail_after(0, 0).unwrap();
    exec.fail_after(1, 0).unwrap();
    let err = exec
        .run(
            &Schedule::Dynamic {
                chunk: 16,
                devices: vec![0, 1],
            },
            &spec.measure,
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("no device is left to run items"), "{err}");
    assert!(err.contains("0:0/2") && err.contains("0:1/2"), "{err}");
}

#[test]
fn auto_measures_every_scheduler_side_by_side_and_is_never_slower_than_one_device() {
    let spec = load(&example("matmul.toml"), 128);
    let mut exec = executor(&spec, [vec![8, 8], vec![16, 16]]);
    let options = Options {
        schedule: ScheduleChoice::Auto,
        chunks: Some(4),
        ..Options::default()
    };
    let s = study(&mut exec, &spec, &options, &mut |_| {}).unwrap();
    let names: Vec<Scheduler> = s.schedules.iter().map(|r| r.scheduler).collect();
    assert_eq!(names, Scheduler::ALL);
    for r in &s.schedules {
        assert!(r.verified, "{}: {:?}", r.scheduler, r.mismatch);
        assert!((r.speedup - s.single_ms[s.best_single] / r.ms).abs() < 1e-9);
        assert!((r.efficiency - r.speedup / s.ideal_speedup).abs() < 1e-9);
        covered_exactly_once(&r.timeline, 128);
    }
    assert_eq!(s.schedules[1].timeline.len(), 4);
    let best = s.single_ms[s.best_single];
    assert!(s.decision.ms <= best);
    match s.decision.mode {
        Mode::Coexec => {
            let chosen = s.decision.scheduler.unwrap();
            let fastest = s
                .schedules
                .iter()
                .map(|r| r.ms)
                .fold(f64::INFINITY, f64::min);
            assert_eq!(
                s.schedules
                    .iter()
                    .find(|r| r.scheduler == chosen)
                    .unwrap()
                    .ms,
                fastest
            );
        }
        Mode::Single => assert!(
            s.decision.reason.contains("no faster"),
            "{}",
            s.decision.reason
        ),
    }
}

#[test]
fn with_three_devices_the_static_plan_also_runs_without_the_slowest() {
    // The whole CPU beside its two halves: three devices, one of them the slowest (work-groups
    // of 1 item make the whole device slowest here whatever its cores).
    let spec = load(&example("matmul.toml"), 128);
    let cpu = ndtune_backend::discover()
        .expect("PoCL is installed")
        .remove(0);
    let mut devices = halves();
    devices.push(cpu);
    let configs = [vec![8, 8], vec![16, 16], vec![1, 1]];
    let members: Vec<Member> = devices
        .into_iter()
        .zip(configs)
        .map(|(device, config)| Member {
            device,
            config,
            twin: None,
        })
        .collect();
    let labels = vec!["0:0/2".to_string(), "0:1/2".to_string(), "0".to_string()];
    let inputs = spec_inputs(&spec, &members[0].config, 1).unwrap();
    let dim = spec.split.as_ref().unwrap().dim;
    let mut exec = CoExecutor::new(&spec, &members, &labels, dim, &inputs).unwrap();
    let s = study(&mut exec, &spec, &Options::default(), &mut |_| {}).unwrap();
    // Three configurations: no two members alike, each planned at its own time.
    assert_eq!(s.planned_ms, s.single_ms);
    let slowest = (0..3)
        .max_by(|&a, &b| s.single_ms[a].total_cmp(&s.single_ms[b]))
        .unwrap();
    let without: Vec<_> = s.schedules.iter().filter(|r| r.without.is_some()).collect();
    assert_eq!(without.len(), 1, "{:?}", s.schedules);
    let run = without[0];
    assert_eq!(run.without, Some(slowest));
    assert_eq!(run.scheduler, Scheduler::Static);
    assert_eq!(run.label(), format!("static without device {slowest}"));
    assert!(run.verified, "{:?}", run.mismatch);
    assert!(
        run.parts.iter().all(|p| p.device != slowest),
        "{:?}",
        run.parts
    );
    covered_exactly_once(&run.timeline, 128);
    // The decision takes the fastest verified co-execution, with the device it leaves out.
    let fastest = s
        .schedules
        .iter()
        .filter(|r| r.verified && r.parts.len() > 1)
        .min_by(|a, b| a.ms.total_cmp(&b.ms))
        .unwrap();
    match s.decision.mode {
        Mode::Coexec => {
            assert_eq!(s.decision.ms, fastest.ms);
            assert_eq!(s.decision.without, fastest.without);
            assert!(
                s.decision.reason.contains(&fastest.label()),
                "{}",
                s.decision.reason
            );
        }
        Mode::Single => assert!(fastest.ms >= s.single_ms[s.best_single]),
    }
}

/// A member with a twin builds the twin's kernel (another source, another kernel name) and runs
/// its part of the one range: here an OpenCL twin on PoCL (CI has no CUDA; `scripts/test-gpu.sh`
/// splits a CUDA twin with an OpenCL device). A spec that differs in what the devices share is
/// no twin, named by its section.
#[test]
fn a_member_runs_its_twins_kernel_and_a_spec_that_differs_is_no_twin() {
    let dir = tempfile::tempdir().unwrap();
    let source = std::fs::read_to_string(example("conv1d.cl")).unwrap();
    std::fs::write(
        dir.path().join("twin.cl"),
        source.replace("__kernel void conv1d(", "__kernel void conv1d_twin("),
    )
    .unwrap();
    let spec_text = std::fs::read_to_string(example("conv1d.toml")).unwrap();
    let twin_text = spec_text
        .replace("name = \"conv1d\"", "name = \"conv1d_twin\"")
        .replace("source = \"conv1d.cl\"", "source = \"twin.cl\"");
    assert_ne!(twin_text, spec_text);
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        load(&path, 1200)
    };
    let spec = load(&example("conv1d.toml"), 1200);
    let twin = std::sync::Arc::new(write("twin.toml", &twin_text));
    assert_eq!(ndtune_split::runtime::twin_mismatch(&spec, &twin), None);
    let expected = reference(&spec, &[24], "conv1d", "out");
    let members: Vec<Member> = halves()
        .into_iter()
        .zip([(vec![24], None), (vec![40], Some(twin))])
        .map(|(device, (config, twin))| Member {
            device,
            config,
            twin,
        })
        .collect();
    let labels = vec!["0:0/2".to_string(), "0:1/2".to_string()];
    let inputs = spec_inputs(&spec, &members[0].config, 1).unwrap();
    let mut exec = CoExecutor::new(&spec, &members, &labels, 0, &inputs).unwrap();
    run_overlapping_plan(&spec, &mut exec, &expected);
    drop(exec);
    // The twin's own kernel runs: one that doubles its outputs doubles the second part alone.
    std::fs::write(
        dir.path().join("twin.cl"),
        source
            .replace("__kernel void conv1d(", "__kernel void conv1d_twin(")
            .replace("out[gid] = acc;", "out[gid] = 2.0f * acc;"),
    )
    .unwrap();
    let doubling = std::sync::Arc::new(write("twin.toml", &twin_text));
    let mut members = members;
    members[1].twin = Some(doubling);
    let mut exec = CoExecutor::new(&spec, &members, &labels, 0, &inputs).unwrap();
    let e = exec
        .execute(&[part(0, 0, 600), part(1, 600, 600)], &spec.measure)
        .unwrap();
    let out = from_bytes(ndtune_spec::ElemType::Float, &e.outputs["out"]);
    let doubled: Vec<f64> = expected[600..].iter().map(|x| 2.0 * x).collect();
    let v = spec.verify.as_ref().unwrap();
    compare("out", &expected[..600], &out[..600], v.rtol, v.atol).unwrap();
    compare("out", &doubled, &out[600..], v.rtol, v.atol).unwrap();
    for (from, to, section) in [
        ("MASK = 625", "MASK = 627", "[constants]"),
        ("global = [\"N\"]", "global = [\"N * 1\"]", "[launch]"),
        ("len = \"MASK\"", "len = \"MASK + 1\"", "[[args]]"),
        (
            "WG = { range = [1, 65536] }",
            "WG = [8, 24, 40]",
            "[params]",
        ),
    ] {
        let other = write("other.toml", &twin_text.replace(from, to));
        let why = ndtune_split::runtime::twin_mismatch(&spec, &other).expect(section);
        assert!(why.contains(&format!("their {section} differ")), "{why}");
    }
}
