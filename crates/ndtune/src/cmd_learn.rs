//! `ndtune learn`: features of kernels and scenarios, and the evaluation of work-group size
//! prediction on collected data (Cummins et al. 2016, §3.2, §4, §7).

use crate::cli::{
    LearnCommand, LearnEvalArgs, LearnFeaturesArgs, LearnPredictArgs, LearnTrainArgs,
};
use anyhow::{anyhow, bail, Context, Result};
use ndtune_learn::data::Data;
use ndtune_learn::eval::{evaluate, Method, Options, Protocol, Step};
use ndtune_learn::features::kernel_features;
use ndtune_learn::model::Model;
use ndtune_learn::models::ClassifierKind;
use ndtune_serve::limits::{LimitOverrides, Limits};

pub fn run(cmd: &LearnCommand) -> Result<()> {
    match cmd {
        LearnCommand::Features(a) => features(a),
        LearnCommand::Eval(a) => eval(a),
        LearnCommand::Train(a) => train(a),
        LearnCommand::Predict(a) => predict(a),
    }
}

fn train(a: &LearnTrainArgs) -> Result<()> {
    let kind = classifier_kind(&a.model, "--model")?;
    let data = Data::load(&a.data)?;
    let started = std::time::Instant::now();
    let model = Model::train(&data, kind, a.seed)?;
    model
        .save(&a.out)
        .with_context(|| format!("cannot write {}", a.out.display()))?;
    eprintln!(
        "trained {} on {} scenarios ({} features, {} classes, best sizes by {}) in {:.2} s: {}",
        kind.name(),
        data.scenarios.len(),
        data.feature_names.len(),
        model.classes.len(),
        data.objective.as_deref().unwrap_or("run time"),
        started.elapsed().as_secs_f64(),
        a.out.display()
    );
    Ok(())
}

fn predict(a: &LearnPredictArgs) -> Result<()> {
    let model = Model::load(&a.model)?;
    let stencil = ndtune_collect::stencil_named(&a.kernel).map_err(|e| anyhow!("--kernel {e}"))?;
    let (rows, cols) = parse_size(&a.size)?;
    stencil.check(rows, cols)?;
    let profile = one_profile(&a.device)?;
    let started = std::time::Instant::now();
    let f = ndtune_collect::stencil_features(&stencil, rows, cols, &profile)
        .map_err(|e| anyhow!("{}: {e}", a.kernel))?;
    let features_s = started.elapsed().as_secs_f64();
    // Legal on this device: its work-group and work-item limits and the tile's local memory.
    let limits = Limits::from_features(|n| f.get(n), &LimitOverrides::default())
        .map_err(|e| anyhow!("{}: {e}", a.kernel))?;
    let legal = |wg| limits.allows(wg);
    let named: Vec<(String, f64)> = f.names.into_iter().zip(f.values).collect();
    let classified = std::time::Instant::now();
    let p = model
        .predict(&named, legal)
        .map_err(|e| anyhow!("{}: {e}", a.model.display()))?
        .ok_or_else(|| anyhow!("no size the model knows is legal on {}", profile.name))?;
    let predict_us = classified.elapsed().as_secs_f64() * 1e6;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"wg": [p.wg.0, p.wg.1], "fell_back": p.fell_back,
                "features_ms": features_s * 1e3, "predict_us": predict_us})
        );
    } else {
        println!(
            "{}x{}{}  (features {:.1} ms, prediction {:.1} µs)",
            p.wg.0,
            p.wg.1,
            if p.fell_back {
                " (nearest legal size to the model's choice)"
            } else {
                ""
            },
            features_s * 1e3,
            predict_us
        );
    }
    Ok(())
}

fn features(a: &LearnFeaturesArgs) -> Result<()> {
    let path = &a.kernel;
    let named: Vec<(String, f64)> = if path.to_string_lossy().ends_with(".stencil.toml") {
        let stencil = ndtune_stencil::Stencil::load(path)?;
        let (rows, cols) = parse_size(&a.size)?;
        let f = ndtune_collect::stencil_features(&stencil, rows, cols, &one_profile(&a.device)?)
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        f.names.into_iter().zip(f.values).collect()
    } else {
        let source = ndtune_core::input::read_text(path, ndtune_core::input::SOURCE)?;
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

/// The progress of `learn eval` on stderr, a step per fold and model: a bar on a terminal,
/// otherwise a line per step (a log shows where a long evaluation is).
enum EvalProgress {
    Bar(indicatif::ProgressBar),
    Lines(std::time::Instant),
}

impl EvalProgress {
    fn new() -> EvalProgress {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return EvalProgress::Lines(std::time::Instant::now());
        }
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix("learn eval");
        EvalProgress::Bar(bar)
    }

    fn step(&mut self, step: Step<'_>) {
        let what = format!("fold {}/{}: {}", step.fold, step.folds, step.model);
        match self {
            EvalProgress::Bar(bar) => {
                bar.set_length(step.total as u64);
                bar.set_position(step.done as u64);
                bar.set_message(what);
            }
            EvalProgress::Lines(started) => eprintln!(
                "learn eval: {}/{} steps done at {:.1} s; starting {what}",
                step.done,
                step.total,
                started.elapsed().as_secs_f64()
            ),
        }
    }

    fn finish(&self) {
        if let EvalProgress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

/// The profile of the device arguments (device 0 when none is given).
fn one_profile(args: &crate::cli::DeviceArgs) -> Result<ndtune_device::DeviceProfile> {
    let mut devices = args.targets(true)?;
    match devices.len() {
        1 => Ok(devices.remove(0).profile),
        n => Err(anyhow!(
            "a prediction is for one device: --device picks {n}"
        )),
    }
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

/// The classifier kind called `name`, given with `flag`; the error lists the kinds.
fn classifier_kind(name: &str, flag: &str) -> Result<ClassifierKind> {
    ClassifierKind::parse(name).ok_or_else(|| {
        let names: Vec<&str> = ClassifierKind::ALL.iter().map(|k| k.name()).collect();
        anyhow!(
            "{flag}: unknown model `{name}`; one of {}",
            names.join(", ")
        )
    })
}

fn eval(a: &LearnEvalArgs) -> Result<()> {
    let protocol = Protocol::parse(&a.protocol).ok_or_else(|| {
        let names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
        anyhow!("--protocol {}: one of {}", a.protocol, names.join(", "))
    })?;
    let data = Data::load(&a.data)?;
    let methods = match &a.models {
        None => Method::all(),
        Some(list) => Method::parse_list(list).map_err(|e| anyhow!("--models: {e}"))?,
    };
    if methods.is_empty() {
        bail!("--models names no model");
    }
    // Opened first: a store that cannot be used fails before the evaluation, not after it.
    let store = a.db.as_deref().map(ndtune_store::Store::open).transpose()?;
    let report = {
        let mut progress = EvalProgress::new();
        let jobs = match a.jobs {
            Some(0) => bail!("--jobs 0: at least one model must be trained at a time"),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let options = Options {
            seed: a.seed,
            jobs,
            max_training: a.max_training.0,
        };
        let report = evaluate(&data, protocol, &methods, &options, &mut |step| {
            progress.step(step)
        });
        progress.finish();
        report.with_context(|| a.data.display().to_string())?
    };
    if let Some(store) = &store {
        ndtune_learn::eval::keep(store, &report, &a.data, a.models.as_deref())?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print!(
        "{}",
        ndtune_learn::text::evaluation(&report, data.feature_names.len())
    );
    Ok(())
}
