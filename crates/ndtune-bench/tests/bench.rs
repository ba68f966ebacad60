//! The in-process evaluator on the real PoCL device: every outcome a configuration can reach
//! without killing its process, and the errors that stop a campaign.

use ndtune_bench::evaluate::{Bench, Fatal, Front, FrontCheck};
use ndtune_bench::worker::OwnCheck;
use ndtune_core::{Outcome, OutcomeKind};
use ndtune_spec::Spec;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// WG = 4 does not build, WG = 8 computes a wrong result, the others are right.
const KERNEL: &str = r#"
__kernel void scale(__global const float *x, __global float *y) {
    size_t i = get_global_id(0);
#if WG == 4
#error four is not allowed
#endif
    float v = 2.0f * x[i];
    if (WG == 8) v = 0.0f;
    y[i] = v;
}
"#;

fn spec(dir: &Path, reference: &str, kernel_name: &str, args: &str) -> Spec {
    std::fs::write(dir.join("scale.cl"), KERNEL).unwrap();
    let text = format!(
        r#"
[kernel]
name = "{kernel_name}"
source = "scale.cl"
[constants]
N = 256
[params]
WG = [1, 2, 3, 4, 8, 16]
[launch]
global = ["N"]
local = ["WG"]
{args}
[verify]
outputs = ["y"]
reference = {reference}
[measure]
warmup = 0
runs = 3
best_of = 2
"#
    );
    let path = dir.join("scale.toml");
    std::fs::write(&path, text).unwrap();
    Spec::load(&path).unwrap()
}

const ARGS: &str = r#"
[[args]]
name = "x"
kind = "buffer"
type = "float"
len = "N"
init = "random"
access = "read"
[[args]]
name = "y"
kind = "buffer"
type = "float"
len = "N"
access = "write"
"#;

fn bench(spec: Spec) -> Bench {
    let device = ndtune_backend::discover().unwrap().remove(0);
    Bench::new(spec, &device, 42).unwrap()
}

#[test]
fn every_configuration_ends_as_one_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = bench(spec(dir.path(), "{ config = { WG = 1 } }", "scale", ARGS));
    let kind = |b: &mut Bench, wg: i64| b.evaluate(&[wg], Front::default()).unwrap();
    match kind(&mut b, 16) {
        Outcome::Measured(t) => assert_eq!((t.times_ms.len(), t.best_of), (3, 2)),
        o => panic!("WG 16: {o:?}"),
    }
    assert_eq!(kind(&mut b, 2).kind(), OutcomeKind::Measured);
    match kind(&mut b, 4) {
        Outcome::BuildFailed { log } => assert!(log.contains("four is not allowed"), "{log}"),
        o => panic!("WG 4: {o:?}"),
    }
    match kind(&mut b, 8) {
        Outcome::WrongResult { detail } => assert!(detail.starts_with("y: "), "{detail}"),
        o => panic!("WG 8: {o:?}"),
    }
    // 256 is not a multiple of 3: the driver refuses the launch (pruning would have removed it).
    match kind(&mut b, 3) {
        Outcome::Refused { error } => {
            assert!(error.contains("CL_INVALID_WORK_GROUP_SIZE"), "{error}")
        }
        o => panic!("WG 3: {o:?}"),
    }
    // A work-group over the kernel's own limit is refused before launching.
    match kind(&mut b, 1 << 20) {
        Outcome::Refused { error } => {
            assert!(error.contains("CL_KERNEL_WORK_GROUP_SIZE"), "{error}")
        }
        o => panic!("huge WG: {o:?}"),
    }
}

#[test]
fn one_run_reads_every_buffer_back_or_ends_as_its_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = bench(spec(dir.path(), "{ config = { WG = 1 } }", "scale", ARGS));
    let buffers = b.run_once(&[16]).unwrap().unwrap();
    let floats = |bytes: &[u8]| -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let (x, y) = (
        floats(buffers[0].as_ref().unwrap()),
        floats(buffers[1].as_ref().unwrap()),
    );
    assert_eq!((x.len(), y.len()), (256, 256));
    assert!(x.iter().any(|&v| v != 0.0), "random inputs");
    assert!(
        x.iter().zip(&y).all(|(x, y)| *y == 2.0 * x),
        "y = 2x: {y:?}"
    );
    // No verification: WG 8's wrong outputs come back as they are.
    let wrong = b.run_once(&[8]).unwrap().unwrap();
    assert!(floats(wrong[1].as_ref().unwrap()).iter().all(|&v| v == 0.0));
    match b.run_once(&[4]).unwrap() {
        Err(Outcome::BuildFailed { log }) => assert!(log.contains("four is not allowed"), "{log}"),
        other => panic!("WG 4: {other:?}"),
    }
}

#[test]
fn inputs_of_fixed_size_go_on_the_device_first_and_are_the_ones_evaluations_use() {
    let dir = tempfile::tempdir().unwrap();
    // y's length names a parameter: it is made for each configuration, as before.
    let per_config = ARGS.replace(
        "len = \"N\"\naccess = \"write\"",
        "len = \"N * WG / WG\"\naccess = \"write\"",
    );
    assert_ne!(per_config, ARGS);
    let loaded = bench(spec(
        dir.path(),
        "{ config = { WG = 1 } }",
        "scale",
        &per_config,
    ));
    assert_eq!(loaded.load_inputs(), 1, "x alone");
    let mut loaded = loaded;
    let fresh_dir = tempfile::tempdir().unwrap();
    let mut fresh = bench(spec(
        fresh_dir.path(),
        "{ config = { WG = 1 } }",
        "scale",
        ARGS,
    ));
    assert_eq!(fresh.load_inputs(), 2, "x and y");
    let mut fresh_again = bench(spec(
        fresh_dir.path(),
        "{ config = { WG = 1 } }",
        "scale",
        ARGS,
    ));
    // The same inputs as a bench that made them at its first evaluation, checked against the
    // reference (WG = 1) that the loaded inputs fed too.
    let outputs = |b: &mut Bench| b.run_once(&[16]).unwrap().unwrap();
    assert_eq!(outputs(&mut loaded), outputs(&mut fresh_again));
    assert_eq!(outputs(&mut fresh), outputs(&mut fresh_again));
    measures_16_and_finds_8_wrong(&mut loaded);
    measures_16_and_finds_8_wrong(&mut fresh);
    // The evaluations used the inputs loaded first: none was uploaded again (y, whose length
    // names a parameter, once, when first evaluated).
    assert_eq!(loaded.inputs_on_device(), 2);
    assert_eq!(fresh.inputs_on_device(), 2);
}

/// WG = 16 is measured and WG = 8's output is found wrong (the kernel zeroes it).
fn measures_16_and_finds_8_wrong(b: &mut Bench) {
    let kind = |b: &mut Bench, wg: i64| b.evaluate(&[wg], Front::default()).unwrap().kind();
    assert_eq!(kind(b, 16), OutcomeKind::Measured);
    assert_eq!(kind(b, 8), OutcomeKind::WrongResult);
}

#[test]
fn configurations_share_builds_when_the_code_ignores_a_parameter() {
    let dir = tempfile::tempdir().unwrap();
    // Comments may name the parameter: the code does not use it.
    let kernel = "// y = x, WG work-items a group\n__kernel void copy(__global const float *x, __global float *y) { /* any WG */ size_t i = get_global_id(0); y[i] = x[i]; }";
    std::fs::write(dir.path().join("copy.cl"), kernel).unwrap();
    let text = format!(
        "[kernel]\nname = \"copy\"\nsource = \"copy.cl\"\n[constants]\nN = 64\n[params]\nWG = [1, 2, 4]\n[launch]\nglobal = [\"N\"]\nlocal = [\"WG\"]\n{ARGS}[verify]\noutputs = [\"y\"]\nreference = {{ config = {{ WG = 1 }} }}\n"
    );
    std::fs::write(dir.path().join("copy.toml"), text).unwrap();
    let mut b = bench(Spec::load(&dir.path().join("copy.toml")).unwrap());
    for wg in [1, 2, 4] {
        assert_eq!(
            b.evaluate(&[wg], Front::default()).unwrap().kind(),
            OutcomeKind::Measured
        );
    }
    assert_eq!(
        b.builds(),
        1,
        "WG is only a launch parameter: one build serves all"
    );
}

#[test]
fn a_failing_reference_configuration_is_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = bench(spec(dir.path(), "{ config = { WG = 4 } }", "scale", ARGS));
    let e = b.evaluate(&[16], Front::default()).unwrap_err().to_string();
    assert!(
        e.contains("the reference configuration")
            && e.contains("build failed")
            && e.contains("nothing was measured"),
        "{e}"
    );
}

#[test]
fn a_missing_kernel_or_mismatched_arguments_are_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = bench(spec(dir.path(), "{ config = { WG = 1 } }", "scael", ARGS));
    let e = b.evaluate(&[16], Front::default()).unwrap_err().to_string();
    assert!(
        e.contains("no kernel `scael`") && e.contains("scale"),
        "{e}"
    );

    let one_arg = ARGS
        .split("[[args]]")
        .take(2)
        .collect::<Vec<_>>()
        .join("[[args]]");
    let one_arg = one_arg.replace("access = \"read\"", "access = \"read_write\"");
    let dir = tempfile::tempdir().unwrap();
    let text_spec = spec(
        dir.path(),
        "{ config = { WG = 1 } }",
        "scale",
        &one_arg.replace("name = \"x\"", "name = \"y\""),
    );
    let mut b = bench(text_spec);
    let e = b.evaluate(&[16], Front::default()).unwrap_err().to_string();
    assert!(
        e.contains("do not match kernel `scale`")
            && e.contains("takes 2 arguments, but 1 are given"),
        "{e}"
    );
}

#[test]
fn a_reference_kernel_gives_the_gold_outputs() {
    let dir = tempfile::tempdir().unwrap();
    // One work-item per 4 outputs: its own global size, N / 4.
    std::fs::write(
        dir.path().join("ref.cl"),
        "__kernel void ref_scale(__global const float *x, __global float *y) {
            size_t i = 4 * get_global_id(0);
            for (int k = 0; k < 4; ++k) y[i + k] = 2.0f * x[i + k]; }",
    )
    .unwrap();
    let reference = r#"{ kernel = "ref.cl", name = "ref_scale", global = ["N / 4"] }"#;
    let mut b = bench(spec(dir.path(), reference, "scale", ARGS));
    measures_16_and_finds_8_wrong(&mut b);

    std::fs::write(
        dir.path().join("ref.cl"),
        "__kernel void ref_scale(__global float *y) { y[0] = oops; }",
    )
    .unwrap();
    let mut b = bench(spec(dir.path(), reference, "scale", ARGS));
    let e = b.evaluate(&[16], Front::default()).unwrap_err().to_string();
    assert!(
        e.contains("reference kernel `ref_scale`") && e.contains("oops"),
        "{e}"
    );
}

/// E = 0 exact, 1 off by less than the tolerance everywhere, 2 off by more in every 7th element,
/// 3 NaN in element 5; for float and int outputs.
const NEAR: &str = r#"
__kernel void near(__global const T *x, __global T *y) {
    size_t i = get_global_id(0);
    float v = 2.0f * x[i];
    if (E == 1) v += 1e-4f;
    if (E == 2 && i % 7 == 0) v += 3.0f;
    if (E == 3 && i == 5) v = NAN;
    y[i] = (T)v;
}
"#;

#[test]
fn outputs_compared_on_the_device_give_the_hosts_verdicts_and_details() {
    for ty in ["float", "int"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("near.cl"), NEAR).unwrap();
        let args = ARGS.replace("\"float\"", &format!("\"{ty}\""));
        let text = format!(
            "[kernel]\nname = \"near\"\nsource = \"near.cl\"\nbuild_options = [\"-DT={ty}\"]\n[constants]\nN = 4096\n[params]\nE = [0, 1, 2, 3]\n[launch]\nglobal = [\"N\"]\nlocal = [\"64\"]\n{args}[verify]\noutputs = [\"y\"]\nreference = {{ config = {{ E = 0 }} }}\ntolerance = 0\natol = 1e-3\n[measure]\nwarmup = 0\nruns = 1\nbest_of = 1\n"
        );
        std::fs::write(dir.path().join("near.toml"), text).unwrap();
        let load = || Spec::load(&dir.path().join("near.toml")).unwrap();
        let (mut on_device, mut on_host) = (bench(load()), bench(load()));
        on_device.check_on_device(true);
        on_host.check_on_device(false);
        let verdict = |o: Outcome| match o {
            Outcome::Measured(_) => "measured".to_string(),
            Outcome::WrongResult { detail } => detail,
            o => panic!("{ty}: {o:?}"),
        };
        let mut wrong = 0;
        for e in [0, 1, 2, 3, 0] {
            let device = verdict(on_device.evaluate(&[e], Front::default()).unwrap());
            let host = verdict(on_host.evaluate(&[e], Front::default()).unwrap());
            assert_eq!(device, host, "{ty}, E = {e}");
            wrong += usize::from(device != "measured");
        }
        // E = 2 and 3 (an int output rounds E = 1's small error away).
        assert_eq!(wrong, 2, "{ty}");
        assert!(on_device.compares_on_device() && !on_host.compares_on_device());
    }
}

/// `y = TS * x` in work-groups of `WG`: 15 configurations, every one right.
const TIMES_TS: &str = r#"
__kernel void times(__global const float *x, __global float *y) {
    size_t i = get_global_id(0);
    y[i] = (float)TS * x[i];
}
"#;

#[test]
fn a_reference_that_depends_on_a_parameter_is_computed_for_each_of_its_values() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("times.cl"), TIMES_TS).unwrap();
    // The reference reads TS too, and nothing of WG: three references for fifteen configurations.
    std::fs::write(
        dir.path().join("ref.cl"),
        "__kernel void ref_times(__global const float *x, __global float *y) {
            size_t i = get_global_id(0); y[i] = x[i] * TS; }",
    )
    .unwrap();
    let text = format!(
        "[kernel]\nname = \"times\"\nsource = \"times.cl\"\n[constants]\nN = 256\n[params]\nTS = [1, 2, 3]\nWG = [1, 2, 4, 8, 16]\n[launch]\nglobal = [\"N\"]\nlocal = [\"WG\"]\n{ARGS}[verify]\noutputs = [\"y\"]\nreference = {{ kernel = \"ref.cl\", name = \"ref_times\" }}\n[measure]\nwarmup = 0\nruns = 1\nbest_of = 1\n"
    );
    std::fs::write(dir.path().join("times.toml"), &text).unwrap();
    let mut b = bench(Spec::load(&dir.path().join("times.toml")).unwrap());
    for wg in [1, 2, 4, 8, 16] {
        for ts in [1, 2, 3] {
            let o = b.evaluate(&[ts, wg], Front::default()).unwrap();
            assert_eq!(o.kind(), OutcomeKind::Measured, "TS {ts} WG {wg}: {o:?}");
        }
    }
    assert_eq!(b.references_computed(), 3);

    // A reference that depends on no parameter is computed once.
    std::fs::write(
        dir.path().join("ref.cl"),
        "__kernel void ref_times(__global const float *x, __global float *y) {
            size_t i = get_global_id(0); y[i] = x[i] * 2.0f; }",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("times.toml"),
        text.replace("TS = [1, 2, 3]", "TS = [2]"),
    )
    .unwrap();
    let mut b = bench(Spec::load(&dir.path().join("times.toml")).unwrap());
    for wg in [1, 2, 4, 8, 16] {
        assert_eq!(
            b.evaluate(&[2, wg], Front::default()).unwrap().kind(),
            OutcomeKind::Measured
        );
    }
    assert_eq!(b.references_computed(), 1);
}

#[test]
fn a_host_check_decides_from_inputs_outputs_and_parameters_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("twice.c"),
        r#"#include <stdio.h>
int twice(const ndtune_args *a, char *message, size_t size) {
    const ndtune_buffer *x = ndtune_buffer_named(a, "x"), *y = ndtune_buffer_named(a, "y");
    const float *in = x->initial, *out = y->data;
    for (size_t i = 0; i < y->len; ++i)
        if (out[i] != 2.0f * in[i]) {
            snprintf(message, size, "y[%zu] = %g, not twice %g (WG = %lld, N = %lld)", i, out[i],
                     in[i], ndtune_value_named(a, "WG")->i, ndtune_value_named(a, "N")->i);
            return 1;
        }
    return 0;
}
"#,
    )
    .unwrap();
    let with_reference = spec(dir.path(), "{ config = { WG = 1 } }", "scale", ARGS);
    let text = std::fs::read_to_string(with_reference.path).unwrap();
    let text = text.replace(
        "reference = { config = { WG = 1 } }",
        "check = { host = \"twice.c\", function = \"twice\" }",
    );
    std::fs::write(dir.path().join("scale.toml"), text).unwrap();
    let mut b = bench(Spec::load(&dir.path().join("scale.toml")).unwrap());
    assert_eq!(
        b.evaluate(&[16], Front::default()).unwrap().kind(),
        OutcomeKind::Measured
    );
    match b.evaluate(&[8], Front::default()).unwrap() {
        Outcome::WrongResult { detail } => assert!(
            detail.starts_with("check `twice`: y[0] = 0, not twice ")
                && detail.ends_with("(WG = 8, N = 256)"),
            "{detail}"
        ),
        o => panic!("WG 8: {o:?}"),
    }
    assert_eq!(
        b.references_computed(),
        0,
        "no reference: the check decides"
    );
}

#[test]
fn a_worker_refuses_a_spec_whose_files_changed_since_the_campaign_started() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(dir.path(), "{ config = { WG = 1 } }", "scale", ARGS);
    let setup = s.setup(&s.kernel_source().unwrap().unwrap(), 7).unwrap();
    let job = ndtune_bench::worker::Job {
        spec: s.path.clone(),
        overrides: Default::default(),
        device: 0,
        at: None,
        sub: None,
        seed: 7,
        setup: setup.digest.clone(),
        energy: false,
        profile: None,
    };
    assert!(Bench::open(&job).is_ok());
    // The random input follows the seed: another seed is another setup.
    let other_seed = ndtune_bench::worker::Job {
        seed: 8,
        ..job.clone()
    };
    assert!(Bench::open(&other_seed).is_err());
    std::fs::write(dir.path().join("scale.cl"), KERNEL.replace("2.0f", "3.0f")).unwrap();
    let err = Bench::open(&job).err().unwrap().0;
    assert!(
        err.contains("changed since the campaign started")
            && err.contains(&format!("(setup {}, now ", setup.digest)),
        "{err}"
    );
}

#[test]
fn a_front_end_checks_the_outputs_it_names_before_the_timed_runs() {
    let dir = tempfile::tempdir().unwrap();
    let s = spec(dir.path(), "{ config = { WG = 1 } }", "scale", ARGS);
    let text = std::fs::read_to_string(&s.path).unwrap();
    let text = text.replace(
        "[verify]\noutputs = [\"y\"]\nreference = { config = { WG = 1 } }\n",
        "",
    );
    std::fs::write(&s.path, text).unwrap();
    let mut b = bench(Spec::load(&s.path).unwrap());
    let own = OwnCheck {
        dir: dir.path().to_path_buf(),
        outputs: vec!["y".into()],
    };
    let mut seen = Vec::new();
    let mut verdict = |files: BTreeMap<String, PathBuf>| {
        let y = std::fs::read(&files["y"]).unwrap();
        seen.push((files.keys().cloned().collect::<Vec<_>>(), y.len()));
        let zeros = y.iter().all(|&byte| byte == 0);
        Ok(zeros.then(|| "y is all zeros".to_string()))
    };
    let mut evaluate = |wg: i64| {
        let check = FrontCheck {
            own: &own,
            verdict: &mut verdict,
        };
        b.evaluate(
            &[wg],
            Front {
                check: Some(check),
                observe: None,
            },
        )
        .unwrap()
    };
    match evaluate(16) {
        Outcome::Measured(t) => assert_eq!(t.times_ms.len(), 3),
        o => panic!("WG 16: {o:?}"),
    }
    match evaluate(8) {
        Outcome::WrongResult { detail } => assert_eq!(detail, "y is all zeros"),
        o => panic!("WG 8: {o:?}"),
    }
    assert_eq!(seen, vec![(vec!["y".to_string()], 256 * 4); 2]);
    // A check of what is no buffer argument is the front end's error: fatal.
    let wrong = OwnCheck {
        dir: dir.path().to_path_buf(),
        outputs: vec!["z".into()],
    };
    let mut never = |_| -> Result<Option<String>, Fatal> { panic!("nothing to check") };
    let check = FrontCheck {
        own: &wrong,
        verdict: &mut never,
    };
    let e = b
        .evaluate(
            &[16],
            Front {
                check: Some(check),
                observe: None,
            },
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("`z`"), "{e}");
}

#[test]
fn a_front_ends_observers_are_told_each_moment_of_the_timed_runs_only() {
    use ndtune_bench::evaluate::Moment;
    let dir = tempfile::tempdir().unwrap();
    let mut b = bench(spec(dir.path(), "{ config = { WG = 1 } }", "scale", ARGS));
    let mut moments = Vec::new();
    let mut observe = |m: Moment| {
        moments.push(m);
        Ok(())
    };
    let front = Front {
        check: None,
        observe: Some(&mut observe),
    };
    match b.evaluate(&[16], front).unwrap() {
        Outcome::Measured(t) => assert_eq!(t.times_ms.len(), 3),
        o => panic!("WG 16: {o:?}"),
    }
    // The verified run before the timed runs is not observed; each of the 3 timed runs is.
    let run = [Moment::BeforeStart, Moment::AfterStart, Moment::AfterFinish];
    let mut expected = vec![Moment::Start];
    expected.extend(run.iter().cycle().take(9));
    expected.push(Moment::End);
    assert_eq!(moments, expected);
    // A configuration that never reaches its timed runs tells nothing; an observer's error is
    // fatal.
    moments.clear();
    let mut observe = |m: Moment| {
        moments.push(m);
        Ok(())
    };
    let o = b.evaluate(
        &[8],
        Front {
            check: None,
            observe: Some(&mut observe),
        },
    );
    assert_eq!(o.unwrap().kind(), OutcomeKind::WrongResult);
    assert!(moments.is_empty());
    let mut failing = |m: Moment| match m {
        Moment::AfterStart => Err(Fatal("the sensor is gone".into())),
        _ => Ok(()),
    };
    let e = b
        .evaluate(
            &[16],
            Front {
                check: None,
                observe: Some(&mut failing),
            },
        )
        .unwrap_err();
    assert_eq!(e.to_string(), "the sensor is gone");
}

/// A measurement worker's job: the spec at `path` with integer constants `overrides`, on
/// device 0, seed 7.
fn job_of(path: &Path, overrides: &[(&str, i64)]) -> ndtune_bench::worker::Job {
    let overrides: BTreeMap<String, ndtune_core::Value> = overrides
        .iter()
        .map(|&(name, v)| (name.to_string(), ndtune_core::Value::Int(v)))
        .collect();
    let spec = Spec::load_with(path, &overrides).unwrap();
    let setup = spec
        .setup(&spec.kernel_source().unwrap().unwrap(), 7)
        .unwrap();
    ndtune_bench::worker::Job {
        spec: path.to_path_buf(),
        overrides,
        device: 0,
        at: None,
        sub: None,
        seed: 7,
        setup: setup.digest,
        energy: false,
        profile: None,
    }
}

#[test]
fn a_bench_switched_to_another_job_keeps_only_builds_the_new_job_can_use() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = "__kernel void times(__global const float *x, __global float *y) { size_t i = get_global_id(0); y[i] = K * x[i]; }";
    std::fs::write(dir.path().join("times.cl"), kernel).unwrap();
    let text = format!(
        "[kernel]\nname = \"times\"\nsource = \"times.cl\"\n[constants]\nN = 64\nK = 2\n[params]\nWG = [1, 2, 4]\n[launch]\nglobal = [\"N\"]\nlocal = [\"WG\"]\n{ARGS}[verify]\noutputs = [\"y\"]\nreference = {{ config = {{ WG = 1 }} }}\n"
    );
    let path = dir.path().join("times.toml");
    std::fs::write(&path, text).unwrap();
    let job = |n: i64, k: i64| job_of(&path, &[("N", n), ("K", k)]);
    let measure_all = |b: &mut Bench| {
        for wg in [1, 2, 4] {
            let outcome = b.evaluate(&[wg], Front::default()).unwrap();
            assert_eq!(outcome.kind(), OutcomeKind::Measured, "{outcome:?}");
        }
    };
    let mut b = Bench::open(&job(64, 2)).unwrap();
    measure_all(&mut b);
    assert_eq!(b.builds(), 1);
    // N is no define of this source: the build serves the next job as it is.
    let mut b = b.switch(&job(128, 2)).unwrap();
    assert_eq!(b.builds(), 1);
    measure_all(&mut b);
    assert_eq!(b.builds(), 1, "N=128 built again");
    // K is: no build of K=2 is one of K=3, none is kept.
    let mut b = b.switch(&job(128, 3)).unwrap();
    assert_eq!(b.builds(), 0);
    measure_all(&mut b);
    assert_eq!(b.builds(), 1);
}

/// A bench switched to a job over the same data (a Python session's next call over the same
/// arrays, with another scalar) keeps its inputs on the device; one whose file changed meanwhile
/// reads it again, and computes with what the file holds now.
#[test]
fn a_bench_switched_to_a_job_over_the_same_data_keeps_its_inputs_on_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = "__kernel void times(__global const float *x, __global float *y, const float s) { size_t i = get_global_id(0); y[i] = s * x[i]; }";
    std::fs::write(dir.path().join("times.cl"), kernel).unwrap();
    let x_path = dir.path().join("x.npy");
    let xs = |k: f32| (0..64).map(move |i| k * i as f32);
    npyz::to_file_1d(&x_path, xs(1.0)).unwrap();
    let text = r#"
[kernel]
name = "times"
source = "times.cl"
[constants]
N = 64
S = 2
[params]
WG = [1, 2, 4]
[launch]
global = ["N"]
local = ["WG"]
[[args]]
name = "x"
kind = "buffer"
type = "float"
len = "N"
init = { npy = "x.npy" }
access = "read"
[[args]]
name = "y"
kind = "buffer"
type = "float"
len = "N"
access = "write"
[[args]]
name = "s"
kind = "scalar"
type = "float"
value = "S"
"#;
    let path = dir.path().join("times.toml");
    std::fs::write(&path, text).unwrap();
    let job = |s: i64| job_of(&path, &[("S", s)]);
    let y = |b: &mut Bench| -> Vec<f32> {
        let outputs = b.run_once(&[2]).unwrap().unwrap();
        let bytes = outputs[1].as_ref().unwrap();
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let b = Bench::open(&job(2)).unwrap();
    assert_eq!(b.load_inputs(), 2, "x and y");
    let mut b = b.switch(&job(3)).unwrap();
    assert_eq!(b.inputs_on_device(), 2, "x and y kept");
    assert_eq!(y(&mut b), xs(3.0).collect::<Vec<_>>());
    assert_eq!(b.inputs_on_device(), 2, "the run uploaded its inputs again");
    // A new x (of the same size) is read, y's zeros are kept.
    npyz::to_file_1d(&x_path, xs(5.0)).unwrap();
    let mut b = b.switch(&job(2)).unwrap();
    assert_eq!(b.inputs_on_device(), 1, "y alone kept");
    assert_eq!(y(&mut b), xs(10.0).collect::<Vec<_>>());
    assert_eq!(b.inputs_on_device(), 2);
}
