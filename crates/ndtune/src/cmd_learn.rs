//! `ndtune learn`: features of kernels and scenarios, and the evaluation of work-group size
//! prediction on collected data (Cummins et al. 2016, §3.2, §4, §7).

use crate::cli::{LearnCommand, LearnEvalArgs, LearnFeaturesArgs};
use anyhow::{anyhow, bail, Context, Result};
use ndtune_learn::data::Data;
use ndtune_learn::eval::{evaluate, Fallback, Method, Protocol};
use ndtune_learn::features::{kernel_features, scenario_features, Dataset};
use ndtune_learn::models::ClassifierKind;

pub fn run(cmd: &LearnCommand) -> Result<()> {
    match cmd {
        LearnCommand::Features(a) => features(a),
        LearnCommand::Eval(a) => eval(a),
    }
}

fn features(a: &LearnFeaturesArgs) -> Result<()> {
    let path = &a.kernel;
    let named: Vec<(String, f64)> = if path.to_string_lossy().ends_with(".stencil.toml") {
        let stencil = ndtune_stencil::Stencil::load(path)?;
        let (rows, cols) = parse_size(&a.size)?;
        let profile = crate::targets::resolve(&a.device, true)?
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("no device"))?
            .profile;
        let b = &stencil.border;
        let dataset = Dataset {
            rows,
            cols,
            input: stencil.input.c_name().into(),
            output: stencil.output.c_name().into(),
            border: [b.north, b.south, b.east, b.west],
        };
        let f = scenario_features(&profile, &stencil.device_source(), "", &dataset)
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        f.names.into_iter().zip(f.values).collect()
    } else {
        let source = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        kernel_features(&source, &a.options).map_err(|e| anyhow!("{}: {e}", path.display()))?
    };
    if a.json {
        let map: serde_json::Map<String, serde_json::Value> =
            named.into_iter().map(|(k, v)| (k, v.into())).collect();
        println!("{}", serde_json::to_string_pretty(&map)?);
    } else {
        for (k, v) in named {
            println!("{k:<40} {v}");
        }
    }
    Ok(())
}

/// `512x256` as (rows, cols): the first number is the width (columns).
fn parse_size(s: &str) -> Result<(u64, u64)> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| anyhow!("--size {s}: WIDTHxHEIGHT, e.g. 1024x1024"))?;
    let n = |v: &str| {
        v.trim()
            .parse::<u64>()
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| anyhow!("--size {s}: `{v}` is not a positive number"))
    };
    let (cols, rows) = (n(w)?, n(h)?);
    Ok((rows, cols))
}

fn eval(a: &LearnEvalArgs) -> Result<()> {
    let protocol = Protocol::parse(&a.protocol).ok_or_else(|| {
        let names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
        anyhow!("--protocol {}: one of {}", a.protocol, names.join(", "))
    })?;
    let data = Data::load(&a.data)?;
    let methods: Vec<Method> = match &a.models {
        None => Method::all(),
        Some(list) => {
            let mut m = Vec::new();
            for name in list.split(',').map(str::trim) {
                match name {
                    "forest-runtime" => m.push(Method::RegressRuntime),
                    "forest-speedup" => m.push(Method::RegressSpeedup),
                    "baseline" => m.push(Method::Baseline),
                    _ => {
                        let kind = ClassifierKind::parse(name).ok_or_else(|| {
                            let kinds: Vec<&str> =
                                ClassifierKind::ALL.iter().map(|k| k.name()).collect();
                            anyhow!(
                                "--models: unknown model `{name}`; one of {}, forest-runtime, forest-speedup, baseline",
                                kinds.join(", ")
                            )
                        })?;
                        m.extend(Fallback::ALL.into_iter().map(|f| Method::Classify(kind, f)));
                    }
                }
            }
            m
        }
    };
    if methods.is_empty() {
        bail!("--models names no model");
    }
    let report = evaluate(&data, protocol, &methods, a.seed);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{} scenarios, {} folds ({}), {} features; mean spread (slowest / fastest legal size) {}",
        report.scenarios,
        report.folds,
        report.protocol,
        data.feature_names.len(),
        report
            .mean_spread
            .map_or("-".into(), |x| format!("{x:.2}x"))
    );
    if let Some(b) = &report.baseline {
        println!(
            "best fixed size over all data {}x{}: {:.1}% of the oracle",
            b.size[0],
            b.size[1],
            100.0 * b.performance_geomean
        );
    }
    println!(
        "  {:<16} {:<13} {:>8} {:>8} {:>8} {:>11} {:>8} {:>10} {:>10} {:>10}",
        "model",
        "fallback",
        "accuracy",
        "valid",
        "refused",
        "perf (geo)",
        "min",
        "vs base",
        "vs 32x4",
        "predict"
    );
    for r in &report.results {
        println!(
            "  {:<16} {:<13} {:>8.3} {:>8.3} {:>8.3} {:>11.3} {:>8.3} {:>9.3}x {:>10} {:>8.1}µs",
            r.model,
            r.fallback,
            r.accuracy,
            r.validity,
            r.refused,
            r.performance_geomean,
            r.performance_quantiles[0],
            r.speedup_over_baseline_median,
            r.speedup_over_expert_median
                .map_or("-".into(), |x| format!("{x:.3}x")),
            r.predict_us
        );
    }
    Ok(())
}
