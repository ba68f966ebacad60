use super::*;
use ndtune_core::Value;
use ndtune_device::builtin;

/// A tiled kernel: the tile must divide N, and the work-group (TS x TS) must fit the device.
const SPEC: &str = r#"
[kernel]
name = "tiled"
source = "tiled.cl"
build_options = ["-cl-mad-enable"]

[constants]
N = 1024

[params]
TS = [4, 8, 16, 32]
UNROLL = [1, 2, 4]

[launch]
global = ["N", "N / UNROLL"]
local = ["TS", "TS / UNROLL"]

[space]
constraints = ["N % TS == 0", "TS % UNROLL == 0"]
"#;

fn config(ts: i64, unroll: i64) -> Config {
    [("TS", ts), ("UNROLL", unroll)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), Value::Int(v)))
        .collect()
}

fn n(v: i64) -> Constants {
    [("N".to_string(), Value::Int(v))].into_iter().collect()
}

fn entry(device: &str, size: i64, ts: i64, unroll: i64, objective: f64) -> Entry {
    Entry {
        device: builtin::find(device).unwrap(),
        constants: n(size),
        config: config(ts, unroll),
        objective,
        setup: "0123456789abcdef".into(),
        measured: 12,
        ranked: vec![Ranked {
            config: config(ts, unroll),
            objective,
        }],
        front: Vec::new(),
    }
}

fn kernel(entries: Vec<Entry>) -> KernelWisdom {
    KernelWisdom {
        kernel: "tiled".into(),
        spec_file: "tiled.toml".into(),
        spec: SPEC.into(),
        defines: vec!["N".into(), "TS".into(), "UNROLL".into()],
        objective: ObjectiveInfo {
            metric: "time".into(),
            unit: Some("ms".into()),
            higher_is_better: false,
        },
        more_objectives: Vec::new(),
        entries,
    }
}

fn tuned() -> KernelWisdom {
    kernel(vec![
        entry("gtx-titan", 1024, 32, 2, 1.5),
        entry("gtx-titan", 4096, 32, 4, 20.0),
        entry("gt550m", 1024, 16, 1, 9.0),
        entry("gt550m", 4096, 16, 2, 150.0),
    ])
}

#[test]
fn an_exact_entry_comes_with_its_build_options_and_launch_sizes() {
    let picker = Picker::new(&tuned(), "w.json").unwrap();
    let titan = builtin::find("gtx-titan").unwrap();
    let p = picker.pick(&titan, &n(4096)).unwrap();
    assert_eq!(p.how, How::Exact);
    assert_eq!(p.config, config(32, 4));
    assert_eq!(
        p.build_options,
        "-cl-mad-enable -D N=4096 -D TS=32 -D UNROLL=4"
    );
    assert_eq!(p.global, [4096, 1024]);
    assert_eq!(p.local, [32, 8]);
    assert_eq!(p.tuned_objective, Some(20.0));
    // Unset constants keep the spec's: N = 1024.
    let p = picker.pick(&titan, &Constants::new()).unwrap();
    assert_eq!((p.how, p.config), (How::Exact, config(32, 2)));
}

#[test]
fn an_untuned_size_gets_the_nearest_tuned_size_that_is_valid_there() {
    let picker = Picker::new(&tuned(), "w.json").unwrap();
    let titan = builtin::find("gtx-titan").unwrap();
    // 3072 is nearer 4096 than 1024, and 4096's TS=32 UNROLL=4 divides it.
    let p = picker.pick(&titan, &n(3072)).unwrap();
    assert_eq!(p.how, How::Nearest);
    assert_eq!(p.config, config(32, 4), "{}", p.reason);
    assert!(p.reason.contains("N=4096"), "{}", p.reason);
    // TS=32 divides no N of 1500: neither tuned entry is valid, the prediction takes over.
    let p = picker.pick(&titan, &n(1500)).unwrap();
    assert_eq!(p.how, How::Predicted, "{}", p.reason);
    let values = p
        .config
        .values()
        .map(|v| v.as_int().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(1500 % values[0], 0, "the tile divides N: {:?}", p.config);
}

#[test]
fn a_device_never_tuned_gets_a_prediction_valid_on_it() {
    let picker = Picker::new(&tuned(), "w.json").unwrap();
    // The GTX 690's limits are the Titan's family: the tree takes the Titan's choice.
    let other = builtin::find("gtx-690").unwrap();
    let p = picker.pick(&other, &n(4096)).unwrap();
    assert_eq!(p.how, How::Predicted);
    assert!(p.reason.contains("decision tree"), "{}", p.reason);
    // HD 4600: its work-groups hold at most 512 items; whatever is picked fits.
    let hd = builtin::find("hd4600").unwrap();
    let p = picker.pick(&hd, &n(2048)).unwrap();
    assert_eq!(p.how, How::Predicted);
    assert!(p.local.iter().product::<usize>() as u64 <= hd.max_work_group_size);
}

#[test]
fn no_valid_configuration_and_unknown_constants_are_errors_not_guesses() {
    let picker = Picker::new(&tuned(), "w.json").unwrap();
    let titan = builtin::find("gtx-titan").unwrap();
    let e = picker.pick(&titan, &n(1023)).unwrap_err();
    assert!(e.0.contains("no configuration is valid"), "{e}");
    let mut m = n(1024);
    m.insert("M".into(), Value::Int(3));
    let e = picker.pick(&titan, &m).unwrap_err();
    assert!(e.0.contains('M'), "{e}");
}

#[test]
fn corrupt_newer_and_foreign_files_are_refused_with_the_file_named() {
    let good = wisdom(vec![tuned()]).to_json();
    let back = Wisdom::parse(&good, "w.json").unwrap();
    assert_eq!(back.kernels[0].entries.len(), 4);
    let e = Wisdom::parse(&good[..good.len() / 2], "w.json").unwrap_err();
    assert!(matches!(e, WisdomError::Corrupt { .. }), "{e}");
    assert!(e.to_string().starts_with("w.json:"), "{e}");
    let newer = good.replacen(&format!("\"schema\": {SCHEMA}"), "\"schema\": 99", 1);
    let e = Wisdom::parse(&newer, "w.json").unwrap_err();
    assert_eq!(
        e,
        WisdomError::Newer {
            path: "w.json".into(),
            found: 99
        }
    );
    let e = back.kernel("sgemm", "w.json").unwrap_err();
    assert_eq!(
        e.to_string(),
        "w.json: no kernel `sgemm` in this wisdom (it holds `tiled`)"
    );
    let mut broken = tuned();
    broken.spec = "[kernel\nname = 1".into();
    let e = Picker::new(&broken, "w.json").err().unwrap();
    assert!(e.to_string().contains("tiled.toml"), "{e}");
}

#[test]
fn the_header_compiles_and_finds_each_row() {
    let k = tuned();
    let picker = Picker::new(&k, "w.json").unwrap();
    let h = header::header(&k, &picker).unwrap();
    assert!(h.contains("\"GeForce GTX TITAN\", \"N=4096\", \"-cl-mad-enable -D N=4096 -D TS=32 -D UNROLL=4\", 2, {4096, 1024, 1}, {32, 8, 1}, {128, 128, 1}"), "{h}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiled_wisdom.h"), &h).unwrap();
    let main = r#"#include "tiled_wisdom.h"
#include <stdio.h>
int main(void) {
    const ndtune_tiled_config *c = ndtune_tiled_find("GeForce GTX TITAN", "N=4096");
    if (!c || ndtune_tiled_find("GeForce GTX TITAN", "N=8") != NULL) return 1;
    printf("%s|%zu|%zu|%zu|%zu\n", c->build_options, c->local[0], c->local[1], c->grid[0],
           c->grid[1]);
    return 0;
}
"#;
    std::fs::write(dir.path().join("main.c"), main).unwrap();
    let exe = dir.path().join("main");
    let cc = std::process::Command::new("cc")
        .args(["-std=c99", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(dir.path().join("main.c"))
        .status()
        .unwrap();
    assert!(cc.success());
    let out = std::process::Command::new(&exe).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "-cl-mad-enable -D N=4096 -D TS=32 -D UNROLL=4|32|8|128|128\n"
    );
}

#[test]
fn a_runtime_captures_each_question_once_even_without_usable_wisdom() {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captured");
    let missing = Runtime::open_with(
        &dir.path().join("none.json"),
        Some(std::sync::Arc::new(capture::Capture::to(&captures))),
    );
    let titan = builtin::find("gtx-titan").unwrap();
    let e = missing.pick("tiled", &titan, &n(2048)).unwrap_err();
    assert!(
        matches!(e, RuntimeError::Wisdom(WisdomError::Read { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("none.json"), "{e}");

    let path = dir.path().join("w.json");
    std::fs::write(&path, wisdom(vec![tuned()]).to_json()).unwrap();
    let runtime = Runtime::open_with(
        &path,
        Some(std::sync::Arc::new(capture::Capture::to(&captures))),
    );
    for _ in 0..3 {
        assert_eq!(
            runtime.pick("tiled", &titan, &n(4096)).unwrap().how,
            How::Exact
        );
    }
    let e = runtime.pick("other", &titan, &n(4096)).unwrap_err();
    assert!(e.to_string().contains("no kernel `other`"), "{e}");
    let seen = capture::read(&captures).unwrap();
    let asked: Vec<(&str, i64)> = seen
        .iter()
        .map(|c| (c.kernel.as_str(), c.constants["N"].as_int().unwrap()))
        .collect();
    assert_eq!(asked, [("tiled", 2048), ("tiled", 4096), ("other", 4096)]);
    assert_eq!(seen[0].device.name, titan.name);

    std::fs::write(captures.join("zz.jsonl"), "{\"kernel\": 1}\n").unwrap();
    let e = capture::read(&captures).unwrap_err();
    assert!(e.contains("zz.jsonl:1: not a capture"), "{e}");
}

#[test]
fn a_size_between_two_tuned_ones_gets_what_does_best_at_both() {
    // At N=1024 TS=32 UNROLL=1 is best and TS=16 UNROLL=2 close; at N=4096 TS=8 UNROLL=4 is
    // best and TS=16 UNROLL=2 close: at N=2048, between them, TS=16 UNROLL=2 is the safe choice.
    let ranked = |list: &[(i64, i64, f64)]| {
        list.iter()
            .map(|&(ts, u, ms)| Ranked {
                config: config(ts, u),
                objective: ms,
            })
            .collect::<Vec<_>>()
    };
    let mut small = entry("gtx-titan", 1024, 32, 1, 1.0);
    small.ranked = ranked(&[(32, 1, 1.0), (16, 2, 1.05), (8, 4, 2.0)]);
    let mut large = entry("gtx-titan", 4096, 8, 4, 10.0);
    large.ranked = ranked(&[(8, 4, 10.0), (16, 2, 10.4), (32, 1, 25.0)]);
    let picker = Picker::new(&kernel(vec![small, large]), "w.json").unwrap();
    let titan = builtin::find("gtx-titan").unwrap();
    let p = picker.pick(&titan, &n(2048)).unwrap();
    assert_eq!(
        (p.how, p.config.clone()),
        (How::Nearest, config(16, 2)),
        "{}",
        p.reason
    );
    assert!(
        p.reason.contains("between the tuned sizes N=1024"),
        "{}",
        p.reason
    );
    // Beyond both (N=16384), the nearer (4096) weighs most: its best.
    let p = picker.pick(&titan, &n(16384)).unwrap();
    assert_eq!(p.config, config(8, 4), "{}", p.reason);
}

#[test]
fn unknown_kernels_and_endless_questions_do_not_grow_what_a_runtime_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.json");
    std::fs::write(&path, wisdom(vec![tuned()]).to_json()).unwrap();
    let runtime = Runtime::open_with(&path, None);
    let titan = builtin::find("gtx-titan").unwrap();
    for i in 0..300 {
        let name = format!("{}{i}", "k".repeat(10_000));
        let e = runtime.pick(&name, &titan, &n(4096)).unwrap_err();
        assert!(e.to_string().contains("`tiled`"), "{e}");
    }
    assert_eq!(runtime.pickers(), 0, "unknown kernels were kept");
    runtime.pick("tiled", &titan, &n(4096)).unwrap();
    assert_eq!(runtime.pickers(), 1);
    // Ever new questions of a known kernel: answered, and what is kept stays bounded.
    let picker = Picker::new(&tuned(), "w.json").unwrap();
    let big = "x".repeat(100_000);
    for i in 0..(pick::MAX_ANSWERS + 100) as i64 {
        let mut constants = n(1024);
        if i % 2 == 0 {
            constants.insert(big.clone(), Value::Int(i));
        } else {
            constants.insert("N".into(), Value::Int(1024 * (1 + i % 4)));
        }
        let _ = picker.pick(&titan, &constants);
        let kept = picker.remembered();
        assert!(
            kept.0 <= pick::MAX_ANSWERS && kept.1 <= pick::MAX_ANSWER_BYTES,
            "{kept:?}"
        );
    }
}

#[test]
fn headers_of_hostile_names_compile_as_c89_c99_c11_and_cpp_and_find_their_rows() {
    let hostile_device = "Evil ??/ GPU ??= \"quoted\" \\ back */ /* é\n";
    let mut k = tuned();
    k.kernel = "tiled */ int injected(void) { return 42; } /*".into();
    k.objective.metric = "gflops ??/".into();
    k.objective.unit = Some("*/ #error injected /*".into());
    let mut device = builtin::find("gtx-titan").unwrap();
    device.name = hostile_device.into();
    k.entries[0].device = device.clone();
    let picker = Picker::new(&k, "w.json").unwrap();
    let h = header::header(&k, &picker).unwrap();
    assert!(!h.contains("??"), "a trigraph could form: {h}");
    assert_eq!(
        h.matches("/*").count(),
        h.matches("*/").count(),
        "a name opened or closed a comment: {h}"
    );
    let id: String = k
        .kernel
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.h"), &h).unwrap();
    let main = format!(
        r#"#include "w.h"
#include <stdio.h>
int main(int argc, char **argv) {{
    const ndtune_{id}_config *c;
    if (argc != 3) return 2;
    c = ndtune_{id}_find(argv[1], argv[2]);
    if (!c) {{ printf("none\n"); return 1; }}
    printf("%s|%lu|%lu\n", c->build_options, (unsigned long)c->local[0], (unsigned long)c->local[1]);
    return 0;
}}
"#
    );
    std::fs::write(dir.path().join("main.c"), &main).unwrap();
    std::fs::write(dir.path().join("main.cpp"), &main).unwrap();
    for (compiler, standard, file) in [
        ("cc", "-std=c89", "main.c"),
        ("cc", "-std=c99", "main.c"),
        ("cc", "-std=c11", "main.c"),
        ("c++", "-std=c++11", "main.cpp"),
        ("c++", "-std=c++17", "main.cpp"),
    ] {
        let exe = dir.path().join(format!("main{standard}"));
        let cc = std::process::Command::new(compiler)
            .args([
                standard,
                "-pedantic",
                "-Wall",
                "-Werror",
                "-trigraphs",
                "-o",
            ])
            .arg(&exe)
            .arg(dir.path().join(file))
            .output()
            .unwrap();
        assert!(
            cc.status.success(),
            "{compiler} {standard}: {}\n{h}",
            String::from_utf8_lossy(&cc.stderr)
        );
        let out = std::process::Command::new(&exe)
            .args([hostile_device, "N=1024"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "-cl-mad-enable -D N=1024 -D TS=32 -D UNROLL=2|32|16\n",
            "{compiler} {standard}"
        );
        let miss = std::process::Command::new(&exe)
            .args(["Evil ?? GPU", "N=1024"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&miss.stdout), "none\n");
    }
}

#[test]
fn preferences_read_as_people_write_them() {
    let p = crate::Preference::parse("energy_j, time<=1.05x ,power_w<=200").unwrap();
    assert_eq!(p.best_by, "energy_j");
    let limits: Vec<(&str, bool, f64, bool)> = p
        .limits
        .iter()
        .map(|l| (l.metric.as_str(), l.at_most, l.bound, l.of_best))
        .collect();
    assert_eq!(
        limits,
        [("time", true, 1.05, true), ("power_w", true, 200.0, false)]
    );
    assert_eq!(p.to_string(), "energy_j,time<=1.05x,power_w<=200");
    assert!(
        !crate::Preference::parse("gflops,power_w>=0.9x")
            .unwrap()
            .limits[0]
            .at_most
    );
    for (bad, says) in [
        ("power_w<=200", "first the objective"),
        ("time,power_w=200", "is not NAME<=VALUE"),
        ("time,power_w<=lots", "is not a number"),
        ("", "first the objective"),
    ] {
        let e = crate::Preference::parse(bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
}
