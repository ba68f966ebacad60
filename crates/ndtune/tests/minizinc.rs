//! The MiniZinc export solves, with the real `minizinc` (Gecode), to exactly the configurations
//! ndtune's own pruner lists, on several small spaces and devices.

mod common;
use common::*;
use std::collections::BTreeSet;
use std::process::Command;

type Configs = BTreeSet<Vec<(String, i64)>>;

fn ndtune_configs(spec: &str, device: &[&str]) -> Configs {
    let mut args = vec!["space", spec, "--list", "--json"];
    args.extend_from_slice(device);
    let out = ndtune().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(l).unwrap();
            v.into_iter()
                .map(|(k, v)| (k, v.as_i64().unwrap()))
                .collect()
        })
        .collect()
}

fn minizinc_configs(spec: &str, device: &[&str]) -> Configs {
    let dir = tempfile::tempdir().unwrap();
    let mzn = dir.path().join("model");
    let mut args = vec!["space", spec, "--mzn", mzn.to_str().unwrap()];
    args.extend_from_slice(device);
    ndtune().args(&args).assert().success();
    let mut files: Vec<String> = std::fs::read_dir(&mzn)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    files.sort_by_key(|f| f.ends_with(".dzn")); // models first, then data
    let out = Command::new("minizinc")
        .arg("--all-solutions")
        .args(&files)
        .output()
        .expect("minizinc is installed (Debian package `minizinc`)");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "minizinc failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter(|l| l.contains('=') && !l.starts_with("=="))
        .map(|l| {
            l.split_whitespace()
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap();
                    (k.to_string(), v.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

fn agree(spec: &str, device: &[&str]) -> usize {
    let ours = ndtune_configs(spec, device);
    let theirs = minizinc_configs(spec, device);
    assert_eq!(ours, theirs, "{spec} {device:?}");
    ours.len()
}

#[test]
fn paper_examples_agree_on_every_paper_device() {
    let dir = tempfile::tempdir().unwrap();
    // The matmul at 64 x 64 (so MiniZinc's domains stay small) and the conv of the paper.
    let matmul = std::fs::read_to_string(examples().join("matmul.toml"))
        .unwrap()
        .replace("N = 1024", "N = 64")
        .replace("source = \"matmul.cl\"", "source = \"../matmul.cl\"");
    let matmul = write(dir.path(), "matmul64.toml", &matmul);
    let conv = examples().join("conv1d.toml");
    for profile in ["i7-4770", "hd4600", "gt550m", "gtx-titan"] {
        assert!(agree(&matmul, &["--profile", profile]) > 0);
        assert!(agree(conv.to_str().unwrap(), &["--profile", profile]) > 0);
    }
}

#[test]
fn three_dimensional_launch_with_tricky_constraints_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "cube.toml",
        r#"
[kernel]
name = "cube"
[constants]
G = 48
[params]
LX = { divisors = "G" }
LY = { pow2 = [1, 64] }
LZ = [1, 2, 3, 4]
V = { range = [0, 6], step = 2 }
[launch]
global = ["G", "G / 2", "G / 4"]
local = ["LX", "LY", "LZ"]
local_mem = "LX * LY * LZ * (V + 1) * 4"
[space]
constraints = [
  "V == 0 || G % (LX * V) == 0",
  "!(LX > 8 && LY > 8)",
  "min(LX, LY) <= max(LZ * 4, 2) <= 16",
  "(LX * LY) / (LZ - 1) < 200",
]
"#,
    );
    for profile in ["hd4600", "gt550m", "tahiti-7970"] {
        assert!(agree(&spec, &["--profile", profile]) > 0);
    }
}

#[test]
fn space_without_launch_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "plain.toml",
        r#"
[kernel]
name = "plain"
[params]
A = { range = [-3, 9] }
B = [1, 2, 4, 8, 16]
C = { range = [0, 12], step = 3 }
[space]
constraints = ["A * B - C >= -4", "A % B != 1 || C / B == 1", "-A <= C"]
"#,
    );
    assert!(agree(&spec, &[]) > 0);
}

#[test]
fn the_legal_platform_model_agrees_and_keeps_a_single_work_group() {
    let dir = tempfile::tempdir().unwrap();
    // One work-group of 1 to 1024 work-items: eq. 3 leaves nothing on a device of 2 compute units.
    let spec = |platform: &str| {
        write(
            dir.path(),
            &format!("{platform}.toml"),
            &format!(
                "[kernel]\nname = \"one\"\n[params]\nWG = {{ pow2 = [1, 1024] }}\n[launch]\nglobal = [\"WG\"]\nlocal = [\"WG\"]\n[space]\nplatform = \"{platform}\"\n"
            ),
        )
    };
    assert_eq!(agree(&spec("legal"), &["--profile", "gt550m"]), 11);
    let erdem = spec("erdem");
    let mzn = dir.path().join("erdem-model");
    let e = fails(&[
        "space",
        &erdem,
        "--profile",
        "gt550m",
        "--mzn",
        mzn.to_str().unwrap(),
    ]);
    let model = std::fs::read_to_string(mzn.join("one.mzn")).unwrap();
    assert!(model.contains("constraint ndtune_platform(["), "{model}");
    assert!(
        e.contains("eq. 3 removed 11 configurations") && e.contains("platform = \"legal\""),
        "{e}"
    );
}
