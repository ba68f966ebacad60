//! `ndtune collect`: exhaustive work-group data collection over stencil scenarios (Cummins et
//! al. 2016, §3.3, §5, §6). A campaign file names devices, stencil kernels and datasets; every
//! (device, kernel, dataset) scenario gets a spec of its own (the stencil skeleton with WG_C x
//! WG_R as launch-only parameters, so one build serves every size) and is measured by the tuning
//! engine into the store. `--summary` derives W_legal, W_safe, the oracles, the baseline and the
//! expert's standing; `--export` writes the long CSV that `ndtune learn` reads.

use crate::cli::{CampaignArgs, CollectArgs, RaceArgs, SearchArgs};
use crate::cmd_tune::{outcome_counts, tune_device};
use crate::targets;
use anyhow::{anyhow, bail, Context, Result};
use indicatif::{MultiProgress, ProgressDrawTarget};
use ndtune_engine::group;
use ndtune_learn::collected::{self, ScenarioInfo};
use ndtune_learn::features::scenario_features;
use ndtune_learn::oracle::{analyse, Observation, Status};
use ndtune_space::problem::Target;
use ndtune_spec::Spec;
use ndtune_stencil::Stencil;
use ndtune_store::Store;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn run(args: &CollectArgs) -> Result<()> {
    let db = &args.store.db;
    if let Some(out) = &args.export {
        return export(&args.store.open_read_only()?, out);
    }
    if args.summary {
        return summary(&args.store.open_read_only()?, args.json);
    }
    let path = args
        .campaign
        .as_ref()
        .ok_or_else(|| anyhow!("collect needs a campaign file (or --summary / --export)"))?;
    let campaign = Campaign::load(path)?;
    let devices = campaign.devices()?;
    let work = args
        .work
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.stencils", db.display())));
    // Everything is checked before anything is measured.
    let mut scenarios = Vec::new();
    for d in 0..devices.len() {
        for stencil in &campaign.kernels {
            for &(rows, cols) in &campaign.datasets {
                stencil
                    .check(rows, cols)
                    .map_err(|e| anyhow!("{}: {e}", path.display()))?;
                scenarios.push((d, stencil, rows, cols));
            }
        }
    }
    let store = args.store.open()?;
    // Every scenario's files, limits, grid and features first: a bad one stops the campaign
    // before anything is measured.
    let mut limits: BTreeMap<(usize, String), u64> = BTreeMap::new();
    let mut prepared = Vec::new();
    for (d, stencil, rows, cols) in scenarios {
        let device = &devices[d];
        let label = format!(
            "{} {rows}x{cols} @ {}",
            stencil.name,
            targets::label(device)
        );
        let source = stencil.device_source();
        let wmax = match limits.get(&(d, stencil.name.clone())) {
            Some(&w) => w,
            None => {
                let w = kernel_wmax(device, &source).with_context(|| {
                    format!("{}: stencil `{}`", targets::label(device), stencil.name)
                })?;
                limits.insert((d, stencil.name.clone()), w);
                w
            }
        };
        let (wc, wr) = campaign.grid.axes(device, wmax);
        let spec_path = (!wc.is_empty() && !wr.is_empty())
            .then(|| {
                stencil.write_scenario(
                    &work.join(&stencil.name),
                    &device_tag(device),
                    rows,
                    cols,
                    &wc,
                    &wr,
                    wmax,
                    &campaign.measure,
                )
            })
            .transpose()
            .with_context(|| format!("writing the files of {label} under {}", work.display()))?;
        let legal = match &spec_path {
            None => None,
            Some(p) => {
                let spec = Spec::load(p)?;
                let pruning = spec
                    .problem
                    .prune(&[Target::from_profile(&label, &device.profile)])
                    .map_err(|e| spec.locate(&e))?;
                (pruning.stats.pruned > 0).then_some(spec)
            }
        };
        let Some(spec) = legal else {
            bail!(
                "{}: {label}: the work-group grid has no size within W_max = {wmax} and the device's limits (per dimension {:?}, local memory {} bytes)",
                path.display(),
                device.profile.max_work_item_sizes,
                device.profile.local_mem_size
            );
        };
        let dataset = crate::cmd_learn::dataset_of(stencil, rows, cols);
        let features = scenario_features(&device.profile, &source, "", &dataset)
            .map_err(|e| anyhow!("{label}: features: {e}"))?;
        let info = ScenarioInfo {
            label: label.clone(),
            kernel: stencil.name.clone(),
            device: targets::label(device),
            dataset: format!("{rows}x{cols}"),
            wc,
            wr,
            wmax,
            feature_names: features.names,
            features: features.values,
        };
        prepared.push((device, label, spec, info));
    }
    let progress = MultiProgress::new();
    if args.json {
        progress.set_draw_target(ProgressDrawTarget::hidden());
    }
    for (device, label, spec, info) in prepared {
        let source = spec
            .kernel_source()?
            .ok_or_else(|| anyhow!("{label}: the scenario's spec names no source"))?;
        let g = group(&spec, &source, args.seed, device, &store)?;
        store.put_scenario(&g, &serde_json::to_value(&info)?)?;
        let campaign = CampaignArgs {
            store: args.store.clone(),
            strategy: "exhaustive".into(),
            budget: None,
            seed: args.seed,
            constants: Default::default(),
            build_jobs: None,
            // Learning needs every size's time by the protocol, not only the best's.
            race: RaceArgs {
                race: Some(false),
                ..RaceArgs::default()
            },
        };
        let report = tune_device(
            &campaign,
            args.timeout,
            &spec,
            &BTreeMap::new(),
            device,
            &label,
            &store,
            &progress,
            &SearchArgs::default(),
            None,
            None,
        )?
        .report;
        let (evaluated, per_s, overhead) = report.throughput();
        // On stderr: stdout is the summary (or its JSON).
        eprintln!(
            "{label}: {}; best {}; {evaluated} evaluated now, {per_s:.0} configurations/s besides launches, overhead {overhead:.2} ms per configuration",
            outcome_counts(&report.outcomes),
            report
                .best_ms()
                .map_or("none".to_string(), |ms| format!("{ms:.4} ms"))
        );
    }
    summary(&store, args.json)
}

/// Names a device in generated file names.
fn device_tag(device: &ndtune_cl::ClDevice) -> String {
    match device.sub {
        Some((k, n)) => format!("d{}-{k}of{n}", device.index),
        None => format!("d{}", device.index),
    }
}

/// The W_max of a stencil kernel on a device: the device's limit and the build's
/// CL_KERNEL_WORK_GROUP_SIZE (one build: the work-group size is no define).
fn kernel_wmax(device: &ndtune_cl::ClDevice, source: &str) -> Result<u64> {
    let mut session = ndtune_cl::Session::new(device)?;
    let kernel = session.kernel(source, "stencil", "")?;
    let limits = session.limits(&kernel)?;
    Ok(limits
        .work_group_size
        .min(device.profile.max_work_group_size))
}

/// The campaign file.
struct Campaign {
    path: PathBuf,
    devices: Vec<String>,
    kernels: Vec<Stencil>,
    datasets: Vec<(u64, u64)>,
    grid: Grid,
    measure: ndtune_stencil::Measure,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCampaign {
    #[serde(default)]
    devices: Vec<String>,
    #[serde(default)]
    kernels: Vec<String>,
    synthetic: Option<RawSynthetic>,
    datasets: Option<Vec<[u64; 2]>>,
    #[serde(default)]
    grid: Grid,
    #[serde(default)]
    measure: ndtune_stencil::Measure,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSynthetic {
    seed: u64,
    count: usize,
}

/// The work-group grid: each axis a list, a stepped range or powers of two; by default even
/// sizes (multiples of 2, as the paper) up to the scenario's limit.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Grid {
    wc: Option<Axis>,
    wr: Option<Axis>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum Axis {
    List(Vec<u64>),
    Range { range: [u64; 2], step: Option<u64> },
    Pow2 { pow2: [u64; 2] },
}

impl Axis {
    fn values(&self, limit: u64) -> Vec<u64> {
        let mut v: Vec<u64> = match self {
            Axis::List(v) => v.clone(),
            Axis::Range {
                range: [a, b],
                step,
            } => (*a..=*b)
                .step_by(step.unwrap_or(1).max(1) as usize)
                .collect(),
            Axis::Pow2 { pow2: [a, b] } => (0..63)
                .map(|k| 1u64 << k)
                .filter(|v| (*a..=*b).contains(v))
                .collect(),
        };
        v.retain(|&x| x >= 1 && x <= limit);
        v.sort_unstable();
        v.dedup();
        v
    }
}

impl Grid {
    /// Both axes on a device whose stencil kernel allows `wmax` work-items per group.
    fn axes(&self, device: &ndtune_cl::ClDevice, wmax: u64) -> (Vec<u64>, Vec<u64>) {
        let item = |d: usize| {
            device
                .profile
                .max_work_item_sizes
                .get(d)
                .copied()
                .unwrap_or(1)
        };
        let axis = |a: &Option<Axis>, d: usize| {
            let limit = item(d).min(wmax);
            match a {
                Some(a) => a.values(limit),
                None => Axis::Range {
                    range: [2, limit],
                    step: Some(2),
                }
                .values(limit),
            }
        };
        (axis(&self.wc, 0), axis(&self.wr, 1))
    }
}

impl Campaign {
    fn load(path: &Path) -> Result<Campaign> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let raw: RawCampaign = toml::from_str(&text).map_err(|e| {
            let (line, col) = e
                .span()
                .map_or((0, 0), |s| ndtune_core::text::line_col(&text, s.start));
            anyhow!("{}:{line}:{col}: {}", path.display(), e.message().trim())
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut kernels = Vec::new();
        for k in &raw.kernels {
            let stencil = if k.ends_with(".toml") {
                Stencil::load(&dir.join(k))?
            } else {
                ndtune_stencil::reference(k).ok_or_else(|| {
                    let names = ndtune_stencil::reference_names();
                    let hint = ndtune_space::resolve::closest(k, names.iter().map(String::as_str))
                        .map(|n| format!(" (did you mean `{n}`?)"))
                        .unwrap_or_default();
                    anyhow!(
                        "{}: unknown kernel `{k}`{hint}: a kernel is a reference stencil ({}) or a .stencil.toml file",
                        path.display(),
                        names.join(", ")
                    )
                })?
            };
            kernels.push(stencil);
        }
        if let Some(s) = &raw.synthetic {
            kernels.extend(ndtune_stencil::generate(s.seed, s.count));
        }
        if kernels.is_empty() {
            bail!("{}: the campaign names no kernel (kernels = [...] or synthetic = {{ seed, count }})", path.display());
        }
        let datasets = match &raw.datasets {
            Some(d) => d.iter().map(|[r, c]| (*r, *c)).collect(),
            None => [512, 1024, 2048, 4096].iter().map(|&n| (n, n)).collect(),
        };
        Ok(Campaign {
            path: path.to_path_buf(),
            devices: if raw.devices.is_empty() {
                vec!["0".into()]
            } else {
                raw.devices
            },
            kernels,
            datasets,
            grid: raw.grid,
            measure: raw.measure,
        })
    }

    fn devices(&self) -> Result<Vec<ndtune_cl::ClDevice>> {
        let all = targets::discover()?;
        self.devices
            .iter()
            .map(|sel| {
                targets::pick(&all, sel)
                    .with_context(|| format!("{}: devices", self.path.display()))
            })
            .collect()
    }
}

/// Every recorded scenario's info and its observations on the grid.
fn observations(store: &Store) -> Result<(Vec<ScenarioInfo>, Vec<Observation>)> {
    let c = collected::read(store)?;
    Ok((
        c.scenarios.into_iter().map(|(_, info)| info).collect(),
        c.observations,
    ))
}

fn summary(store: &Store, json: bool) -> Result<()> {
    let (scenarios, obs) = observations(store)?;
    if scenarios.is_empty() {
        bail!(
            "{}: no collected scenario (run `ndtune collect CAMPAIGN.toml` first)",
            store.path().display()
        );
    }
    let a = analyse(scenarios.len(), &obs);
    // Per device: scenarios, and the share of the sizes tried (not illegal) that were refused.
    let mut per_device: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for (i, info) in scenarios.iter().enumerate() {
        let e = per_device.entry(&info.device).or_default();
        e.0 += 1;
        for o in obs.iter().filter(|o| o.scenario == i) {
            if o.status != Status::Illegal {
                e.1 += 1;
            }
            if o.status == Status::Refused {
                e.2 += 1;
            }
        }
    }
    if json {
        let devices: Vec<_> = per_device
            .iter()
            .map(|(d, (n, tried, refused))| {
                serde_json::json!({"device": d, "scenarios": n, "tried": tried, "refused": refused,
                    "refused_ratio": *refused as f64 / (*tried).max(1) as f64})
            })
            .collect();
        let labels: Vec<&str> = scenarios.iter().map(|i| i.label.as_str()).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "labels": labels, "devices": devices, "analysis": a,
            }))?
        );
        return Ok(());
    }
    println!(
        "{} scenarios in {}",
        scenarios.len(),
        store.path().display()
    );
    println!(
        "  {:<56} {:>6} {:>8} {:>8} {:>10} {:>11} {:>8}",
        "scenario", "legal", "refused", "illegal", "oracle", "oracle ms", "spread"
    );
    for (s, info) in a.scenarios.iter().zip(&scenarios) {
        let (oracle, ms) = s
            .oracle
            .map_or(("-".to_string(), "-".to_string()), |((c, r), ms)| {
                (format!("{c}x{r}"), format!("{ms:.4}"))
            });
        println!(
            "  {:<56} {:>6} {:>8} {:>8} {:>10} {:>11} {:>8}",
            info.label,
            s.legal,
            s.refused,
            s.illegal,
            oracle,
            ms,
            s.spread.map_or("-".into(), |x| format!("{x:.2}x"))
        );
    }
    for (d, (n, tried, refused)) in &per_device {
        println!(
            "  {d}: {n} scenarios, {refused} of {tried} sizes tried refused ({:.1}%)",
            100.0 * *refused as f64 / (*tried).max(1) as f64
        );
    }
    let show = |v: &[(u64, u64)]| {
        v.iter()
            .map(|(c, r)| format!("{c}x{r}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "  W_safe: {} sizes legal in every scenario{}",
        a.safe.len(),
        if a.safe.len() <= 12 && !a.safe.is_empty() {
            format!(": {}", show(&a.safe))
        } else {
            String::new()
        }
    );
    match &a.baseline {
        Some(b) if b.safe => println!(
            "  baseline {}x{}: {:.1}% of the oracle's performance (geometric mean over {} scenarios)",
            b.wg.0, b.wg.1, 100.0 * b.performance, b.scenarios
        ),
        Some(b) => println!(
            "  baseline {}x{}: W_safe is empty, so this is the best of the sizes legal in the most scenarios ({} of {}): {:.1}% of the oracle's performance there",
            b.wg.0, b.wg.1, b.scenarios, scenarios.len(), 100.0 * b.performance
        ),
        None => println!("  baseline: none (nothing measured)"),
    }
    match a.expert.performance {
        Some(p) => println!(
            "  human expert {}x{}: legal in {} of {} scenarios, {:.1}% of the oracle's performance there",
            a.expert.wg.0, a.expert.wg.1, a.expert.legal_in, scenarios.len(), 100.0 * p
        ),
        None => println!("  human expert {}x{}: legal in no scenario", a.expert.wg.0, a.expert.wg.1),
    }
    println!(
        "  {} distinct oracle sizes; oracle over worst size {} on average",
        a.distinct_oracles,
        a.mean_spread.map_or("-".into(), |x| format!("{x:.2}x"))
    );
    Ok(())
}

/// The long CSV: one row per (scenario, grid size).
fn export(store: &Store, out: &Path) -> Result<()> {
    let (scenarios, obs) = observations(store)?;
    if scenarios.is_empty() {
        bail!(
            "{}: no collected scenario to export",
            store.path().display()
        );
    }
    let names = &scenarios[0].feature_names;
    if let Some(other) = scenarios.iter().find(|i| &i.feature_names != names) {
        bail!(
            "{}: scenario `{}` has other features than `{}` (collected by another ndtune?): re-collect it",
            store.path().display(),
            other.label,
            scenarios[0].label
        );
    }
    let mut text = String::new();
    let mut header = vec!["scenario", "device", "kernel", "dataset"];
    header.extend(names.iter().map(String::as_str));
    header.extend(["wg_c", "wg_r", "runtime_ms", "status"]);
    text.push_str(
        &header
            .iter()
            .map(|h| csv_field(h))
            .collect::<Vec<_>>()
            .join(","),
    );
    text.push('\n');
    for o in &obs {
        let info = &scenarios[o.scenario];
        let mut row = vec![
            csv_field(&info.label),
            csv_field(&info.device),
            csv_field(&info.kernel),
            csv_field(&info.dataset),
        ];
        row.extend(info.features.iter().map(|v| v.to_string()));
        row.push(o.wg.0.to_string());
        row.push(o.wg.1.to_string());
        row.push(o.runtime_ms.map_or(String::new(), |t| t.to_string()));
        row.push(o.status.as_str().to_string());
        text.push_str(&row.join(","));
        text.push('\n');
    }
    std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!(
        "wrote {} rows ({} scenarios, {} features) to {}",
        obs.len(),
        scenarios.len(),
        names.len(),
        out.display()
    );
    Ok(())
}

/// A CSV field, quoted where it must be (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
