//! Held-out devices (issue 36, bench/heldout_devices.sh): from the Kernel Tuner caches of six
//! GPUs (shared/data/kt-benchmark-hub: every configuration of a kernel measured on each), hold
//! one GPU out, make the wisdom of the other five ([`ndtune_wisdom::entry_from_kt_cache`]), and
//! ask the [`Picker`] for the held-out GPU (its built-in profile: a device model never tuned, so
//! the answer is `predicted`). The pick's time on the held-out GPU, from its own cache, against
//! its optimum there, is the figure; beside it, each other GPU's best used as is (the least,
//! geometric mean and largest fraction: what the BAT paper reports as 58.5-99.9%), and the
//! configuration that does best across all five (the largest geometric mean of its fractions of
//! their optima, over every configuration all five measured: it needs their whole caches, more
//! than a wisdom file keeps).
//!
//!   cargo run --release -p ndtune-wisdom --example heldout_devices -- HUB SPECS [--json OUT]
//!
//! HUB is the benchmark hub folder (its `cachefiles/`), SPECS the folder of the kernels' specs
//! (bench/heldout/).

use ndtune_core::Config;
use ndtune_spec::Spec;
use ndtune_store::kt::{read_kt_cache, KtCache};
use ndtune_wisdom::{entry_from_kt_cache, kernel_wisdom, Picker};
use serde_json::json;
use std::path::{Path, PathBuf};

/// The caches' file stems and the built-in profiles of their GPUs.
const GPUS: [(&str, &str); 6] = [
    ("A100", "a100-pcie-40gb"),
    ("A4000", "rtx-a4000"),
    ("A6000", "rtx-a6000"),
    ("MI250X", "mi250x"),
    ("W6600", "w6600"),
    ("W7800", "w7800"),
];

const KERNELS: [&str; 2] = ["convolution_milo", "dedispersion_milo"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(hub), Some(specs)) = (args.first(), args.get(1)) else {
        eprintln!("usage: heldout_devices HUB SPECS [--json OUT]");
        std::process::exit(2);
    };
    let json_out = args
        .iter()
        .position(|a| a == "--json")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let mut report = Vec::new();
    for kernel in KERNELS {
        let spec_path = Path::new(specs).join(format!("{kernel}.toml"));
        let spec = Spec::load(&spec_path).unwrap_or_else(|e| fail(&e.to_string()));
        let caches: Vec<KtCache> = std::thread::scope(|s| {
            let handles: Vec<_> = GPUS
                .iter()
                .map(|(stem, _)| {
                    let path = Path::new(hub)
                        .join("cachefiles")
                        .join(kernel)
                        .join(format!("{stem}.json.gz"));
                    s.spawn(move || read_kt_cache(&path).unwrap_or_else(|e| fail(&e.to_string())))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let profiles: Vec<_> = GPUS
            .iter()
            .map(|(_, key)| ndtune_device::builtin::find(key).expect("a built-in profile"))
            .collect();
        let optimum: Vec<f64> = caches.iter().map(best_time).collect();
        let bests: Vec<Config> = caches
            .iter()
            .zip(&profiles)
            .map(|(c, p)| {
                entry_from_kt_cache(c, &spec, p.clone(), "")
                    .expect("every cache measured something")
                    .config
            })
            .collect();
        println!(
            "{kernel}: a GPU held out, picked from the other five's wisdom (fraction of its optimum)"
        );
        println!(
            "  {:<8} {:>6} {:>9}   {:>37}   {:>9}   picked",
            "held out", "pick", "how", "others' bests as is (min / geo / max)", "consensus"
        );
        let mut rows = Vec::new();
        for (h, (stem, _)) in GPUS.iter().enumerate() {
            let others: Vec<usize> = (0..GPUS.len()).filter(|&g| g != h).collect();
            let entries = others
                .iter()
                .filter_map(|&g| {
                    entry_from_kt_cache(
                        &caches[g],
                        &spec,
                        profiles[g].clone(),
                        &format!("Kernel Tuner cache {}", GPUS[g].0),
                    )
                })
                .collect();
            let wisdom = kernel_wisdom(&spec, Vec::new(), entries);
            let picker = Picker::new(&wisdom, &spec_path.display().to_string())
                .unwrap_or_else(|e| fail(&e.to_string()));
            let pick = picker
                .pick(&profiles[h], &spec.problem.constants)
                .unwrap_or_else(|e| fail(&e.to_string()));
            let fraction = |config: &Config| {
                caches[h]
                    .entries
                    .get(config)
                    .and_then(|o| o.score_ms())
                    .map_or(0.0, |t| optimum[h] / t)
            };
            let picked = fraction(&pick.config);
            let as_is: Vec<(String, f64)> = others
                .iter()
                .map(|&g| (GPUS[g].0.to_string(), fraction(&bests[g])))
                .collect();
            let fractions: Vec<f64> = as_is.iter().map(|a| a.1).collect();
            let (least, most) = (
                fractions.iter().copied().fold(f64::INFINITY, f64::min),
                fractions.iter().copied().fold(0.0, f64::max),
            );
            let geo = geomean(&fractions);
            let agreed = consensus(&caches, &optimum, &others).map_or(0.0, |c| fraction(&c));
            println!(
                "  {:<8} {:>6.3} {:>9}   {:>37}   {:>9.3}   {}",
                stem,
                picked,
                pick.how.word(),
                format!("{least:.3} / {geo:.3} / {most:.3}"),
                agreed,
                ndtune_core::config_key(&pick.config)
            );
            rows.push(json!({
                "held_out": stem,
                "device": profiles[h].name,
                "optimum_ms": optimum[h],
                "how": pick.how.word(),
                "picked": pick.config,
                "reason": pick.reason,
                "fraction": picked,
                "others_as_is": as_is.iter().map(|(g, f)| json!({"gpu": g, "fraction": f})).collect::<Vec<_>>(),
                "others_least": least,
                "others_geomean": geo,
                "others_largest": most,
                "consensus": agreed,
            }));
        }
        let column = |key: &str| -> f64 {
            geomean(
                &rows
                    .iter()
                    .map(|r| r[key].as_f64().unwrap())
                    .collect::<Vec<_>>(),
            )
        };
        let (picked, others, agreed) = (
            column("fraction"),
            column("others_geomean"),
            column("consensus"),
        );
        println!(
            "  geometric mean over the held-out GPUs: pick {picked:.3}, others' bests as is {others:.3}, consensus {agreed:.3}\n"
        );
        report.push(json!({
            "kernel": kernel,
            "rows": rows,
            "pick_geomean": picked,
            "others_geomean": others,
            "consensus_geomean": agreed,
        }));
    }
    if let Some(out) = json_out {
        std::fs::write(&out, serde_json::to_string_pretty(&report).unwrap())
            .unwrap_or_else(|e| fail(&format!("{}: {e}", out.display())));
    }
}

/// The least mean time of a cache's measured configurations, ms.
fn best_time(cache: &KtCache) -> f64 {
    cache
        .entries
        .values()
        .filter_map(|o| o.score_ms())
        .fold(f64::INFINITY, f64::min)
}

/// Of the configurations measured on every GPU of `gpus`, the one with the largest geometric
/// mean of its fractions of their optima.
fn consensus(caches: &[KtCache], optimum: &[f64], gpus: &[usize]) -> Option<Config> {
    let first = &caches[gpus[0]];
    first
        .entries
        .keys()
        .filter_map(|config| {
            let logs: Option<Vec<f64>> = gpus
                .iter()
                .map(|&g| {
                    let t = caches[g].entries.get(config)?.score_ms()?;
                    Some((optimum[g] / t).ln())
                })
                .collect();
            Some((config, logs?.iter().sum::<f64>()))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c.clone())
}

/// The geometric mean (0 where any is 0: a configuration that failed on the device).
fn geomean(values: &[f64]) -> f64 {
    if values.iter().any(|v| *v <= 0.0) {
        return 0.0;
    }
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

fn fail(message: &str) -> ! {
    eprintln!("heldout_devices: {message}");
    std::process::exit(1);
}
