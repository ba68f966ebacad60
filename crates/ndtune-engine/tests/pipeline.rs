//! The build pipeline on PoCL, through the engine's API: build workers give the outcomes and
//! the best configuration of serial tuning and are stopped while the device is timed; a compiler
//! that crashes or hangs costs one configuration, not the campaign; a work-group is refused by
//! its launch, never by the driver's query; program binaries kept by one campaign spare the next
//! its builds.

mod common;
use common::*;
use ndtune_engine::TuneRequest;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// V = 1 does not build, V = 2 computes a wrong result; the others are right and take time
/// growing with WORK, so the best configuration is clear. V = 3 crashes the compiler (clang's
/// debug pragma) and V = 4 hangs it (it reads its own stdin) where FAULTS is defined.
const KERNEL: &str = r#"
#ifdef FAULTS
#if V == 3
#pragma clang __debug crash
#endif
#if V == 4
#include "/dev/stdin"
#endif
#endif
__kernel void work(__global const float *x, __global float *y) {
    size_t i = get_global_id(0);
#if V == 1
#error one does not build
#endif
    float acc = x[i];
    for (int k = 0; k < WORK * (V + 1); ++k) acc = acc * 0.999f + 0.001f * x[(i + k) % N];
    y[i] = 2.0f * x[i] + (acc < -1e30f ? 1.0f : 0.0f);
#if V == 2
    y[i] = -y[i];
#endif
}
"#;

/// The spec of kernel `kernel` in `source`: V takes `values`, WG is 8, 16 or 32 and is the
/// work-group where `local` says so; the reference is the configuration V = 0, WG = `ref_wg`.
struct Case<'a> {
    kernel: &'a str,
    source: &'a str,
    values: &'a str,
    work: i64,
    faults: bool,
    local: &'a str,
    ref_wg: i64,
}

fn spec(dir: &Path, c: Case) -> String {
    let Case {
        kernel,
        source,
        values,
        work,
        faults,
        local,
        ref_wg,
    } = c;
    std::fs::write(dir.join(format!("{kernel}.cl")), source).unwrap();
    let options = if faults {
        r#"build_options = ["-DFAULTS"]"#
    } else {
        ""
    };
    write(
        dir,
        &format!("{kernel}.toml"),
        &format!(
            r#"
[kernel]
name = "{kernel}"
source = "{kernel}.cl"
{options}
[constants]
N = 4096
WORK = {work}
[params]
V = {values}
WG = [8, 16, 32]
[launch]
global = ["N"]
local = [{local}]
{XY_ARGS}
[verify]
outputs = ["y"]
reference = {{ config = {{ V = 0, WG = {ref_wg} }} }}
[measure]
warmup = 1
runs = 5
best_of = 3
"#
        ),
    )
}

/// Tunes `spec` into `db` with `build_jobs` build workers (`how` sets the rest, `env` the
/// workers' environment) and returns the report and each configuration's stored outcome.
fn piped(
    spec: &str,
    db: &Path,
    build_jobs: usize,
    env: &[(&str, &Path)],
    how: impl FnOnce(&mut TuneRequest),
) -> (Value, BTreeMap<String, Value>) {
    let mut request = request(spec, db, env);
    request.search.build_jobs = Some(build_jobs);
    how(&mut request);
    let report = tune(&request);
    let name = |c: &ndtune_core::Config| format!("V={} WG={}", c["V"], c["WG"]);
    (report, outcomes(db, name).into_iter().collect())
}

#[test]
fn build_workers_give_the_outcomes_and_best_of_serial_tuning_and_stop_while_timed() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        dir.path(),
        Case {
            kernel: "work",
            source: KERNEL,
            values: "[0, 1, 2, 3, 4, 5]",
            work: 40,
            faults: false,
            local: r#""WG""#,
            ref_wg: 8,
        },
    );
    let (serial, serial_outcomes) = piped(&spec, &dir.path().join("serial.db"), 1, &[], |_| {});
    let (piped, piped_outcomes) = piped(&spec, &dir.path().join("piped.db"), 4, &[], |_| {});
    let kinds = |o: &BTreeMap<String, Value>| -> BTreeMap<String, Value> {
        o.iter()
            .map(|(k, v)| (k.clone(), v["outcome"].clone()))
            .collect()
    };
    assert_eq!(kinds(&piped_outcomes), kinds(&serial_outcomes));
    assert_eq!(piped_outcomes.len(), 18);
    let d = &piped["devices"][0];
    assert_eq!(
        (
            d["outcomes"]["measured"].as_u64(),
            d["outcomes"]["build_failed"].as_u64(),
            d["outcomes"]["wrong_result"].as_u64()
        ),
        (Some(12), Some(3), Some(3)),
        "{piped}"
    );
    assert_eq!(d["time"]["build_jobs"], 4);
    assert!(
        d["time"]["build_workers_s"].as_f64().unwrap() > 0.0,
        "{piped}"
    );
    // V = 0 does the least work: it is the best, whatever its work-group.
    assert_eq!(d["best"]["config"]["V"], 0, "{piped}");
    assert_eq!(serial["devices"][0]["best"]["config"]["V"], 0, "{serial}");

    // On a CPU device the build workers are stopped while a configuration is evaluated (a build
    // on the same cores would slow its timed runs): the time they were held stopped covers every
    // timed launch. Without build workers nothing is stopped. (Whether the times then match the
    // serial ones is a benchmark's question: bench/pipeline_timing.py, BENCHMARKS.md.)
    let stopped = d["time"]["build_workers_stopped_s"].as_f64().unwrap();
    let launched = d["time"]["launch_s"].as_f64().unwrap();
    assert!(launched > 0.0 && stopped >= launched, "{piped}");
    assert_eq!(
        serial["devices"][0]["time"]["build_workers_stopped_s"], 0.0,
        "{serial}"
    );
}

#[test]
fn a_compiler_that_crashes_or_hangs_costs_one_configuration() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        dir.path(),
        Case {
            kernel: "work",
            source: KERNEL,
            values: "[0, 3, 4, 5]",
            work: 1,
            faults: true,
            local: "16",
            ref_wg: 8,
        },
    );
    for jobs in [2, 1] {
        let db = dir.path().join(format!("jobs{jobs}.db"));
        let (report, outcomes) = piped(&spec, &db, jobs, &[], |r| {
            r.timeout = Some(Duration::from_secs(10))
        });
        let of = |v: i64| outcomes[&format!("V={v} WG=8")].clone();
        assert_eq!(of(0)["outcome"], "measured", "{report}");
        assert_eq!(of(5)["outcome"], "measured", "{report}");
        assert_eq!(of(4)["outcome"], "timed_out", "{report}");
        let crash = of(3);
        if jobs == 1 {
            // Built in the measurement worker: the worker itself died.
            assert_eq!(crash["outcome"], "crashed", "{crash}");
        } else {
            assert_eq!(crash["outcome"], "build_failed", "{crash}");
            assert!(
                crash["log"].as_str().unwrap().contains("compiler crashed"),
                "{crash}"
            );
        }
        assert_eq!(report["devices"][0]["evaluated"], 12);
    }
}

#[test]
fn a_work_group_is_refused_by_its_launch_not_by_the_drivers_query() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        dir.path(),
        Case {
            kernel: "reqd",
            source: r#"
__kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void reqd(__global const float *x, __global float *y) {
    size_t i = get_global_id(0);
    y[i] = 2.0f * x[i];
}
"#,
            values: "[0]",
            work: 1,
            faults: false,
            local: r#""WG""#,
            ref_wg: 16,
        },
    );
    for jobs in [1, 2] {
        let db = dir.path().join(format!("r{jobs}.db"));
        let (report, outcomes) = piped(&spec, &db, jobs, &[], |_| {});
        assert_eq!(outcomes["V=0 WG=16"]["outcome"], "measured", "{report}");
        let advice = &outcomes["V=0 WG=16"]["advice"];
        assert_eq!(advice["launched_work_group"], 16, "{advice}");
        for wg in [8, 32] {
            let o = &outcomes[&format!("V=0 WG={wg}")];
            assert_eq!(o["outcome"], "refused", "{o}");
            let error = o["error"].as_str().unwrap();
            assert!(
                error.contains("clEnqueueNDRangeKernel")
                    && error.contains("CL_INVALID_WORK_GROUP_SIZE"),
                "refused by the launch, with the driver's error: {error}"
            );
        }
    }
}

#[test]
fn kept_program_binaries_spare_the_next_campaign_its_builds() {
    let _one = alone();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        dir.path(),
        Case {
            kernel: "work",
            source: KERNEL,
            values: "[0, 3, 4]",
            work: 4,
            faults: false,
            local: r#""WG""#,
            ref_wg: 8,
        },
    );
    let cache = dir.path().join("cache");
    let run = |db: &str, cache: &Path, pocl_cache: &str| -> Value {
        let env = [
            ("NDTUNE_CACHE_DIR", cache),
            ("POCL_KERNEL_CACHE", Path::new(pocl_cache)),
        ];
        piped(&spec, &dir.path().join(db), 2, &env, |_| {}).0["devices"][0].clone()
    };
    let kept = |cache: &Path| -> Vec<u64> {
        std::fs::read_dir(cache.join("programs")).map_or(Vec::new(), |d| {
            d.map(|f| f.unwrap().metadata().unwrap().len()).collect()
        })
    };
    let first = run("first.db", &cache, "1");
    assert_eq!(first["outcomes"]["measured"], 9, "{first}");
    assert!(first["time"]["build_workers_s"].as_f64().unwrap() > 0.0);
    // One entry per define set (V and the work-group sizes it is primed with on a CPU). PoCL
    // keeps its builds in its own cache, where the measurement's build from source finds them:
    // the entries say so (empty), no binary was asked of the driver.
    assert_eq!(kept(&cache), [0; 9]);
    let second = run("second.db", &cache, "1");
    assert_eq!(second["outcomes"], first["outcomes"]);
    assert_eq!(second["best"]["config"]["V"], 0);
    assert_eq!(second["time"]["build_workers_s"], 0.0, "{second}");
    // Another cache folder: built again, the first one's entries as they were.
    let other = run("other.db", &dir.path().join("other"), "1");
    assert!(other["time"]["build_workers_s"].as_f64().unwrap() > 0.0);
    assert_eq!(kept(&cache).len(), 9);
    // With PoCL's cache off, the build workers hand program binaries over, as on a GPU, and
    // those are what is kept; a later campaign loads them.
    let binaries = dir.path().join("binaries");
    let handed = run("handed.db", &binaries, "0");
    assert_eq!(handed["outcomes"], first["outcomes"]);
    let sizes = kept(&binaries);
    assert!(
        sizes.len() == 9 && sizes.iter().all(|&n| n > 0),
        "{sizes:?}"
    );
    let loaded = run("loaded.db", &binaries, "0");
    assert_eq!(loaded["outcomes"], first["outcomes"]);
    assert_eq!(loaded["time"]["build_workers_s"], 0.0, "{loaded}");
}

/// PoCL compiles a work-group function per local size and grid class (a grid of fewer than
/// 65,535 work-items in its widest dimension is "small"); the build workers compile it ahead
/// (priming), and must compile the class the measurement launches, or every configuration is
/// compiled twice, the second time while it is timed. PoCL's kernel cache shows what was
/// compiled: one folder per local size and class.
#[test]
fn build_workers_compile_the_work_group_functions_the_measurement_launches() {
    let _one = alone();
    let dir = tempfile::tempdir().unwrap();
    let compiled = |n: u32, db: &str| -> Vec<String> {
        let case = dir.path().join(db);
        std::fs::create_dir(&case).unwrap();
        let spec = spec(
            &case,
            Case {
                kernel: "work",
                source: KERNEL,
                values: "[0]",
                work: 1,
                faults: false,
                local: r#""WG""#,
                ref_wg: 8,
            },
        );
        let pocl = case.join("pocl");
        let env = [
            ("POCL_CACHE_DIR", pocl.as_path()),
            ("NDTUNE_CACHE_DIR", &case.join("ndtune")),
        ];
        let n = ndtune_core::Constants::from([("N".into(), ndtune_core::Value::Int(n.into()))]);
        let (report, _) = piped(&spec, &case.join("s.db"), 2, &env, |r| r.sweep = vec![n]);
        assert_eq!(report["devices"][0]["outcomes"]["measured"], 3, "{report}");
        let mut folders = Vec::new();
        for program in std::fs::read_dir(&pocl).unwrap().flatten() {
            for hashed in std::fs::read_dir(program.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let kernel = hashed.path().join("work");
                for f in std::fs::read_dir(kernel).into_iter().flatten().flatten() {
                    let name = f.file_name().to_string_lossy().into_owned();
                    if name != "0-0-0" {
                        folders.push(name);
                    }
                }
            }
        }
        folders.sort_by_key(|f| f.split('-').next().unwrap().parse::<u32>().unwrap());
        folders
    };
    assert_eq!(
        compiled(65536, "wide"),
        ["8-1-1-goffs0", "16-1-1-goffs0", "32-1-1-goffs0"]
    );
    assert_eq!(
        compiled(4096, "small"),
        [
            "8-1-1-goffs0-smallgrid",
            "16-1-1-goffs0-smallgrid",
            "32-1-1-goffs0-smallgrid"
        ]
    );
}
