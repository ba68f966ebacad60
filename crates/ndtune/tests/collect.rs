//! `ndtune stencil` and `ndtune collect` end to end on real OpenCL (PoCL): the shipped small
//! campaign measured into a store, resumed, summarised and exported; bad campaigns refused.

mod common;

use common::{examples, fails, json, ndtune, succeeds, write};

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

/// One scenario's oracle size and its cost in the summary of `db`, and the summary's objective.
fn oracle_of(db: &str) -> ((u64, u64), f64, String) {
    let v = json(&["collect", "--db", db, "--summary", "--json"]);
    let o = &v["analysis"]["scenarios"][0]["oracle"];
    let wg = (o[0][0].as_u64().unwrap(), o[0][1].as_u64().unwrap());
    let metric = v["objective"]["metric"].as_str().unwrap().to_string();
    (wg, o[1].as_f64().unwrap(), metric)
}

#[test]
fn a_collection_ranks_sizes_by_its_objective_from_the_same_measurements() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    let campaign = |extra: &str| {
        write(
            dir.path(),
            "c.toml",
            &format!(
                "kernels = [\"gaussian-1\"]\ndatasets = [[64, 64]]\n[grid]\nwc = [2, 4, 8, 16]\nwr = [2, 4]\n[measure]\nwarmup = 1\nruns = 3\nbest_of = 2\n{extra}"
            ),
        )
    };
    let collect = |file: &str| {
        let out = ndtune()
            .args(["collect", file, "--db", db])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    collect(&campaign(""));
    let (by_time, ms, metric) = oracle_of(db);
    assert_eq!(metric, "time");
    let export = |name: &str| {
        let csv = dir.path().join(name);
        succeeds(&["collect", "--db", db, "--export", csv.to_str().unwrap()]);
        std::fs::read_to_string(csv).unwrap()
    };
    let times = export("time.csv");
    assert!(times
        .lines()
        .next()
        .unwrap()
        .ends_with(",runtime_ms,status"));

    // GB/s maximised over fixed bytes must agree with the time, from the same measurements.
    let log = collect(&campaign(
        "[objective]\nmetric = \"gbytes_per_s\"\nhigher_is_better = true\n",
    ));
    assert!(
        log.contains("0 evaluated now"),
        "nothing measured again: {log}"
    );
    let (by_rate, cost, metric) = oracle_of(db);
    assert_eq!((by_rate, metric.as_str()), (by_time, "gbytes_per_s"));
    let rates = export("rate.csv");
    let mut lines = rates.lines();
    assert!(lines.next().unwrap().ends_with(",cost,status,objective"));
    assert!(lines.all(|l| l.ends_with(",gbytes_per_s (higher is better)")));
    // The cost of a maximised objective is its reciprocal: GB/s of 64x64 floats read and
    // written, against the time.
    let gbps = 64.0 * 64.0 * 8.0 / ms / 1e6;
    assert!((cost * gbps - 1.0).abs() < 1e-9, "{cost} vs 1/{gbps}");

    // A metric that penalises the fastest size: the oracle is the fastest of the others.
    let (c, r) = by_time;
    let log = collect(&campaign(&format!(
        "[metrics]\npenalised = \"time * 1000 if WG_C == {c} and WG_R == {r} else time\"\n[objective]\nmetric = \"penalised\"\nhigher_is_better = false\n"
    )));
    assert!(log.contains("0 evaluated now"), "{log}");
    let (by_penalty, _, metric) = oracle_of(db);
    assert_eq!(metric, "penalised");
    assert_ne!(by_penalty, by_time);
    let second = times
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[f.len() - 1] == "measured")
        .map(|f| {
            let n = f.len();
            let size = (
                f[n - 4].parse::<u64>().unwrap(),
                f[n - 3].parse::<u64>().unwrap(),
            );
            (size, f[n - 2].parse::<f64>().unwrap())
        })
        .filter(|(size, _)| *size != by_time)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
        .0;
    assert_eq!(by_penalty, second);

    // An objective whose direction is unsaid is refused with the file, line and column.
    let bad = campaign("[objective]\nmetric = \"penalised\"\n[metrics]\npenalised = \"time\"\n");
    let err = fails(&["collect", &bad, "--db", db]);
    assert!(
        err.contains("c.toml:") && err.contains("higher_is_better"),
        "{err}"
    );
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
    // Devices are picked as every command picks them: a device and its own part are refused.
    let err = run(
        "twice.toml",
        "devices = [\"0\", \"0:0/2\"]\nkernels = [\"gol\"]\ndatasets = [[32, 32]]\n",
    );
    assert!(
        err.contains("twice.toml: devices: ")
            && err.contains("device 0 and a sub-device of it share compute units"),
        "{err}"
    );
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
