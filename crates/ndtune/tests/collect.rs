//! `ndtune stencil` and `ndtune collect` end to end on real OpenCL (PoCL): the shipped small
//! campaign measured into a store, resumed, summarised and exported; bad campaigns refused.

mod common;

use common::{examples, fails, json, ndtune, write};

#[test]
fn the_small_campaign_is_collected_resumed_summarised_and_exported() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("stencils.db");
    let db = db.to_str().unwrap();
    let campaign = examples().join("campaign-small.toml");
    let out = ndtune()
        .args(["collect", campaign.to_str().unwrap(), "--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("10 scenarios") && text.contains("W_safe"),
        "{text}"
    );

    // Everything is in the store: a second run measures nothing again.
    let again = ndtune()
        .args(["collect", campaign.to_str().unwrap(), "--db", db])
        .output()
        .unwrap();
    assert!(again.status.success());
    let log = String::from_utf8_lossy(&again.stderr);
    assert_eq!(log.matches("0 evaluated now").count(), 10, "{log}");

    let v = json(&["collect", "--db", db, "--summary", "--json"]);
    let scenarios = v["analysis"]["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 10);
    for s in scenarios {
        let n = |k: &str| s[k].as_u64().unwrap();
        assert!(n("legal") > 0, "{s}");
        assert!(n("legal") + n("refused") + n("illegal") <= 24, "{s}");
        assert!(s["spread"].as_f64().unwrap() >= 1.0);
        assert!(s["oracle"].is_array());
    }
    let baseline = &v["analysis"]["baseline"];
    assert!(baseline["performance"].as_f64().unwrap() <= 1.0);

    let csv = dir.path().join("s.csv");
    let out = ndtune()
        .args(["collect", "--db", db, "--export", csv.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..4], ["scenario", "device", "kernel", "dataset"]);
    assert_eq!(
        &header[header.len() - 4..],
        ["wg_c", "wg_r", "runtime_ms", "status"]
    );
    let features = header.iter().filter(|h| h.starts_with("f_")).count();
    assert!(features > 50, "{features} features");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 10 * 24, "one row per scenario and grid size");
    for r in &rows {
        assert_eq!(r.len(), header.len());
        let (runtime, status) = (r[r.len() - 2], r[r.len() - 1]);
        assert!([
            "measured",
            "refused",
            "illegal",
            "wrong_result",
            "build_failed",
            "crashed",
            "timed_out"
        ]
        .contains(&status));
        assert_eq!(status == "measured", !runtime.is_empty(), "{r:?}");
    }
}

#[test]
fn stencil_gen_writes_distinct_kernels_and_list_names_the_references() {
    let dir = tempfile::tempdir().unwrap();
    let out = ndtune()
        .args(["stencil", "gen", "--seed", "3", "--count", "4", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".stencil.toml"))
        .collect();
    assert_eq!(files.len(), 4);
    let texts: std::collections::BTreeSet<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    assert_eq!(texts.len(), 4, "distinct kernels");
    let list = ndtune().args(["stencil", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    for name in [
        "gaussian-1",
        "gaussian-10",
        "gol",
        "he",
        "sobel",
        "nms",
        "threshold",
    ] {
        assert!(list.contains(name), "{name} missing in {list}");
    }
}

#[test]
fn bad_campaigns_are_refused_before_anything_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let db = db.to_str().unwrap();
    let run = |name: &str, text: &str| {
        let p = write(dir.path(), name, text);
        fails(&["collect", &p, "--db", db])
    };
    let err = run(
        "unknown.toml",
        "kernels = [\"gausian-1\"]\ndatasets = [[32, 32]]\n",
    );
    assert!(
        err.contains("unknown kernel `gausian-1`") && err.contains("did you mean `gaussian-1`"),
        "{err}"
    );
    let err = run(
        "device.toml",
        "devices = [\"nosuchdevice\"]\nkernels = [\"gol\"]\ndatasets = [[32, 32]]\n",
    );
    assert!(err.contains("no device matches `nosuchdevice`"), "{err}");
    let err = run(
        "border.toml",
        "kernels = [\"gaussian-10\"]\ndatasets = [[8, 8]]\n",
    );
    assert!(err.contains("gaussian-10") && err.contains("8"), "{err}");
    let err = run(
        "grid.toml",
        "kernels = [\"gol\"]\ndatasets = [[32, 32]]\n[grid]\nwc = [3]\nwr = [100000]\n",
    );
    assert!(err.contains("no size"), "{err}");
    let err = run("typo.toml", "kernels = [\"gol\"]\ndatasetz = [[32, 32]]\n");
    assert!(err.contains("typo.toml:2:1"), "{err}");
    // A customising function that does not compile: the build log names the problem.
    write(
        dir.path(),
        "broken.stencil.toml",
        "name = \"broken\"\nborder = { north = 1, south = 1, east = 1, west = 1 }\ninput = \"float\"\noutput = \"float\"\npadding = 0.0\nfunction = \"return get(0, 0) +* 2;\"\n",
    );
    let err = run(
        "broken.toml",
        "kernels = [\"broken.stencil.toml\"]\ndatasets = [[32, 32]]\n",
    );
    assert!(err.contains("broken") && err.contains("error"), "{err}");
    assert!(
        !std::path::Path::new(db).exists() || {
            let v = fails(&["collect", "--db", db, "--summary"]);
            v.contains("no collected scenario")
        }
    );
}
