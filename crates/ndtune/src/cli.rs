//! The command line, with clap derive.

use clap::{Args, Parser, Subcommand};
use ndtune_core::{Config, Constants, Value};
use ndtune_metrics::{MetricDef, Objective};
use ndtune_store::{Store, StoreError};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "ndtune",
    version,
    about = "Autotuner and co-execution runtime for OpenCL kernels"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// List every OpenCL platform and device (or the built-in offline profiles).
    Devices(DevicesArgs),
    /// Count, explain and list the launch configurations of a spec that can run on a device.
    Space(SpaceArgs),
    /// Measure a spec's configurations on live devices (or replay recorded results) and keep
    /// every result in the store.
    Tune(TuneArgs),
    /// Write a recorded campaign as a Kernel Tuner cache or in the T4 results schema; or a
    /// kernel's best configuration per device and constants as wisdom (JSON) or a C header.
    Export(ExportArgs),
    /// The configuration a program should use, from a wisdom file: for a device and constants,
    /// the exact tuned entry, the nearest tuned size, or a prediction; with its build options
    /// and launch sizes.
    Pick(PickArgs),
    /// Print stored results whole: the full outcome (build log, every run time, the advice, the
    /// mismatch), when and by which ndtune; selected by spec or kernel, device and configuration.
    Show(ShowArgs),
    /// Co-execute one NDRange across several devices, each with its own best configuration,
    /// and report the plan, the metrics and the decision (or only plan, with --plan-only).
    Split(SplitArgs),
    /// Stencil kernels: the reference stencils and the synthetic generator (Cummins et al. 2016).
    #[command(subcommand)]
    Stencil(StencilCommand),
    /// Measure every work-group size of every stencil scenario of a campaign into the store;
    /// summarise (`--summary`) or export (`--export`) what was collected.
    Collect(CollectArgs),
    /// Features of kernels and scenarios; evaluation of work-group size prediction on collected
    /// data (Cummins et al. 2016).
    #[command(subcommand)]
    Learn(LearnCommand),
    /// Write the seed papers' tables and figures for what a store holds: one self-contained HTML
    /// page (or Markdown with PNG files beside it).
    Report(ReportArgs),
    /// A shared campaign's progress per worker: configurations claimed, done and expired, and
    /// each worker's last heartbeat.
    Status(StatusArgs),
    /// Serve work-group size predictions over HTTP to programs at run time, take back what they
    /// measured and learn from it (POST /v1/predict, POST /v1/observe, GET /v1/health, GET /metrics).
    Serve(ServeArgs),
    /// Replay recorded spaces (Kernel Tuner caches, ndtune stores) with every search strategy
    /// over many seeds and budgets: the mean fraction of the optimum per budget and the
    /// evaluations to reach 90% and 95% of it, as a table, JSON and an SVG figure.
    BenchStrategies(BenchStrategiesArgs),
    /// The evaluation worker the tuner supervises (internal).
    #[command(name = "__worker", hide = true)]
    Worker,
    /// A build worker that compiles configurations ahead of measurement (internal).
    #[command(name = "__builder", hide = true)]
    Builder,
    /// A pool's worker, tuning its share of one campaign on one device (internal).
    #[command(name = "__campaign", hide = true)]
    PoolWorker,
}

/// Where device limits come from: a live device, a built-in profile or a saved profile file.
#[derive(Args, Clone, Default)]
pub struct DeviceArgs {
    /// Device from `ndtune devices`: an index, a case-insensitive part of its name, or `all`.
    #[arg(long, value_name = "SEL", conflicts_with_all = ["profile", "profile_file"])]
    pub device: Option<String>,
    /// A built-in offline profile (`ndtune devices --builtin` lists them), e.g. hd4600.
    #[arg(long, value_name = "NAME", conflicts_with = "profile_file")]
    pub profile: Option<String>,
    /// A saved DeviceProfile JSON file (`ndtune devices --json --device SEL > F`).
    #[arg(long, value_name = "F")]
    pub profile_file: Option<PathBuf>,
}

impl DeviceArgs {
    /// The devices these flags name ([`ndtune_engine::devices::targets`]); with none given,
    /// device 0 where `default_live`, else none.
    pub fn targets(
        &self,
        default_live: bool,
    ) -> anyhow::Result<Vec<ndtune_engine::devices::Target>> {
        ndtune_engine::devices::targets(
            self.profile.as_deref(),
            self.profile_file.as_deref(),
            self.device.as_deref(),
            default_live,
        )
        .map_err(anyhow::Error::msg)
    }
}

#[derive(Args)]
pub struct DevicesArgs {
    /// Print DeviceProfile objects as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only this device (index or part of the name).
    #[arg(long, value_name = "SEL")]
    pub device: Option<String>,
    /// List the built-in offline profiles instead of live devices.
    #[arg(long)]
    pub builtin: bool,
    /// Write the MiniZinc platform model (platform.mzn) and one .dzn per device to DIR.
    #[arg(long, value_name = "DIR")]
    pub mzn: Option<PathBuf>,
}

#[derive(Args)]
pub struct SpaceArgs {
    /// The spec file (TOML).
    pub spec: PathBuf,
    #[command(flatten)]
    pub device: DeviceArgs,
    #[command(flatten)]
    pub constants: SetArgs,
    /// Print JSON (with --list: one JSON object per line).
    #[arg(long)]
    pub json: bool,
    /// Stream every valid configuration, one per line.
    #[arg(long)]
    pub list: bool,
    /// Write the full MiniZinc model (platform.mzn, the spec's model, the device's .dzn) to DIR.
    #[arg(long, value_name = "DIR")]
    pub mzn: Option<PathBuf>,
    /// On a live device, build each valid configuration to check its own kernel work-group
    /// limit when there are at most N of them (0: never).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub kernel_check: u128,
    /// Remove the configurations whose work-group exceeds their build's
    /// CL_KERNEL_WORK_GROUP_SIZE (by default only counted: the driver's query is advice).
    #[arg(long)]
    pub prune_by_query: bool,
}

/// Spec constants replaced on the command line, as every command that reads a spec or selects
/// a campaign takes them.
#[derive(Args, Clone, Default)]
pub struct SetArgs {
    /// Replace a spec constant, e.g. `--set N=256` (repeatable); with a spec it is what the
    /// spec is read with, with a store it selects campaigns of that value. `tune` also sweeps:
    /// `--set N=256,512` runs one campaign per value (the product for several names).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = ndtune_core::parse_values)]
    pub set: Vec<(String, Vec<Value>)>,
}

impl SetArgs {
    /// One value per name, by name; several values, or a name given twice, are an error.
    pub fn single(&self) -> anyhow::Result<Constants> {
        let sweep = self.sweep()?;
        match sweep.as_slice() {
            [one] => Ok(one.clone()),
            _ => anyhow::bail!(
                "--set gives {} combinations of values: only `tune` sweeps over several",
                sweep.len()
            ),
        }
    }

    /// Every combination of the values, by name: the product over names, the first name
    /// varying slowest; one empty map without `--set`.
    pub fn sweep(&self) -> anyhow::Result<Vec<Constants>> {
        ndtune_core::sweep(&self.set).map_err(|e| anyhow::anyhow!("--set {e}"))
    }
}

/// Metrics and the objective given on the command line (`tune`, `tune --replay`, `export`).
#[derive(Args, Clone, Default)]
pub struct MetricArgs {
    /// A metric, `NAME=EXPR` or `NAME[UNIT]=EXPR`: an expression of the measured `time` (ms),
    /// `energy_j`, `power_w` and the GPU's `temperature_c`, `core_clock_mhz` and
    /// `mem_clock_mhz` (NVIDIA), the constants, the parameters and earlier metrics, e.g.
    /// `gflops[GFLOP/s]=2*N**3/time/1e6`; after the spec's, replacing one of the same name
    /// (repeatable).
    #[arg(long = "metric", value_name = "NAME=EXPR", value_parser = MetricDef::parse_assignment)]
    pub metrics: Vec<MetricDef>,
    /// What strategies optimise and reports rank by: `time` (the default), `energy_j`,
    /// `power_w`, another measured quantity or a metric; several, `NAME[:min|:max],...`
    /// (`time,gflops:max`), make a Pareto front. A metric of yours needs its direction.
    #[arg(long, value_name = "NAME[:min|:max],...")]
    pub objective: Option<String>,
    /// Higher is better for a single --objective (Kernel Tuner's objective_higher_is_better).
    #[arg(long, requires = "objective", conflicts_with = "minimize")]
    pub maximize: bool,
    /// Lower is better for a single --objective (the default for time, energy_j, power_w and
    /// temperature_c).
    #[arg(long, requires = "objective")]
    pub minimize: bool,
}

impl MetricArgs {
    /// The objectives given (none: the spec's), each with its direction: said (`:max`, or
    /// --maximize / --minimize for a single one), or lower is better for the measured
    /// quantities; a metric of the user's must say it.
    pub fn objectives(&self) -> anyhow::Result<Vec<Objective>> {
        let Some(text) = &self.objective else {
            return Ok(Vec::new());
        };
        let said = (self.maximize || self.minimize).then_some(self.maximize);
        if said.is_some() && text.contains(',') {
            anyhow::bail!("--objective {text}: --maximize and --minimize are for a single objective; give each of several its `:max` or `:min`");
        }
        if let Some(higher_is_better) = said {
            if text.contains(':') {
                anyhow::bail!("--objective {text}: give the direction once, as `:max`/`:min` or as --maximize/--minimize");
            }
            return Ok(vec![Objective {
                metric: text.trim().to_string(),
                higher_is_better,
            }]);
        }
        Objective::parse_list(text).map_err(|e| {
            anyhow::anyhow!(
                "--objective: {e}{}",
                if text.contains(',') {
                    ""
                } else {
                    " (or --maximize / --minimize)"
                }
            )
        })
    }
}

/// A duration as people write it: `90s`, `10m`, `1h 30m`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if let Ok(seconds) = s.trim().parse::<f64>() {
        return Duration::try_from_secs_f64(seconds)
            .map_err(|_| format!("`{s}` is not a duration of zero or more seconds"));
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration (`90s`, `10m`, `1h 30m`): {e}"))
}

#[derive(Args)]
pub struct TuneArgs {
    /// The spec file (TOML); optional with --replay of a Kernel Tuner cache.
    pub spec: Option<PathBuf>,
    /// Devices: `all`, an index or part of a name, or a comma list of those (`0,1`).
    #[arg(long, value_name = "SEL")]
    pub device: Option<String>,
    #[command(flatten)]
    pub campaign: CampaignArgs,
    /// Per-evaluation timeout in seconds (default: 10 x the slowest evaluation so far, at least 60).
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Replay recorded results instead of running: an ndtune store or a Kernel Tuner cache.
    #[arg(long, value_name = "PATH")]
    pub replay: Option<PathBuf>,
    /// Tune what programs asked for at run time (`NDTUNE_CAPTURE=DIR`): the spec's kernel at
    /// each captured set of constants, on each captured device this machine has.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["replay", "pool"])]
    pub captured: Option<PathBuf>,
    /// With --replay of a store: the campaign of this setup (the start of its digest), where
    /// the kernel was tuned under several.
    #[arg(long, value_name = "DIGEST", requires = "replay")]
    pub setup: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub share: ShareArgs,
    #[command(flatten)]
    pub metrics: MetricArgs,
}

/// How long a live search goes on and where it starts (`tune`).
#[derive(Args, Clone, Default)]
pub struct SearchArgs {
    /// Propose no configuration after this much time per device (`90s`, `10m`, `1h 30m`);
    /// without --budget, the space is searched until then.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub time: Option<Duration>,
    /// Measure first the configurations that did best for the same kernel source on other
    /// devices or constants in the store, the nearest constants' best first. The campaigns of
    /// a sweep (`--set N=a,b,...`) always do.
    #[arg(long)]
    pub warm_start: bool,
    /// Stop a campaign after N evaluations in a row (after the warm start) found nothing better
    /// than its best so far. With a sweep's warm start the best is usually among the first
    /// few, so this makes a sweep cheap; the report says when it stopped a campaign.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub patience: Option<u32>,
    /// Let strategies measure configurations beyond their build's queried work-group size or
    /// local memory as readily as any other (by default such launches count as likely refused
    /// until this run's launches show otherwise).
    #[arg(long)]
    pub no_advice_prior: bool,
    /// Reuse stored `timed_out` outcomes (by default they are measured again: a timeout may
    /// have come from the machine's load, not from the configuration).
    #[arg(long)]
    pub keep_timed_out: bool,
    /// Measure this configuration, every parameter named (`--config WG=64,TS=8`), instead of
    /// searching; repeatable, to time a few side by side. Each must be in the pruned space
    /// (an error says why not). A stored result is reused as always: a new --db measures again.
    #[arg(
        long = "config",
        value_name = "NAME=VALUE,...",
        value_parser = ndtune_core::parse_config,
        conflicts_with_all = ["strategy", "budget", "patience", "replay"]
    )]
    pub configs: Vec<Config>,
}

/// Sharing one campaign among workers (docs/scale.md).
#[derive(Args, Clone)]
pub struct ShareArgs {
    /// Be one worker of a campaign shared through the store (run one per device, on any number
    /// of machines, all with the same spec, --db, --strategy and --seed): configurations are
    /// claimed, so none is measured twice, and a dead worker's are taken over.
    #[arg(long)]
    pub worker: bool,
    /// Run one worker process per device of --device (identical devices) on this machine,
    /// sharing one campaign; works with either store.
    #[arg(long, conflicts_with = "worker")]
    pub pool: bool,
    /// This worker's name in the store (default: host name, process id and device).
    #[arg(long, value_name = "NAME", requires = "worker")]
    pub worker_id: Option<String>,
    /// How long a claim outlives a worker that stopped beating: after it, another worker
    /// takes the configuration over (`30s`, `2m`).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub lease: Duration,
}

/// The results store, as every command that reads or writes one takes it.
#[derive(Args, Clone)]
pub struct StoreArgs {
    /// The results store: an SQLite file, or a PostgreSQL URL (postgres://user:password@host/db)
    /// or key/value connection string ('host=... dbname=... user=... password=...').
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "NDTUNE_DB",
        hide_env_values = true,
        default_value = "ndtune.db"
    )]
    pub db: PathBuf,
    /// How long to keep connecting again when the connection to a PostgreSQL store breaks (a
    /// server restart) before failing; 0: once, at once.
    #[arg(
        long,
        value_name = "DURATION",
        env = "NDTUNE_DB_RETRY",
        default_value = "60s",
        value_parser = parse_duration
    )]
    pub db_retry: Duration,
}

impl StoreArgs {
    /// The store, for a command that writes to it.
    pub fn open(&self) -> Result<Store, StoreError> {
        Ok(Store::open(&self.db)?.reconnect_for(self.db_retry))
    }

    /// The store, for a command that only reads it: works where it cannot be written.
    pub fn open_read_only(&self) -> Result<Store, StoreError> {
        Ok(Store::open_read_only(&self.db)?.reconnect_for(self.db_retry))
    }
}

/// Where results go and how a device is tuned (`tune`, and `split` for untuned devices).
#[derive(Args, Clone)]
pub struct CampaignArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Search strategy: auto, exhaustive, random, anneal, anneal-jump, ga, ils, ils-adjacent,
    /// mls, mls-adjacent, forest or bo (docs/tuning.md, "Strategies"). `auto` measures a space
    /// of up to 200 configurations whole and searches a larger one with `bo` (100 evaluations
    /// unless --budget or --time says otherwise); with a warm start and --patience (a sweep's
    /// later sizes) it climbs from the warm start (`ils-adjacent`).
    #[arg(long, default_value = "auto")]
    pub strategy: String,
    /// At most this many configurations per device.
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
    /// Seed of the strategy and of the input data.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub constants: SetArgs,
    /// Build worker processes that compile configurations ahead of measurement (default: the
    /// machine's cores less one, at least 2); 1 builds each configuration in the measurement
    /// worker.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub build_jobs: Option<u16>,
    #[command(flatten)]
    pub race: RaceArgs,
}

/// Racing (docs/tuning.md, "Racing"): overrides the spec's `[measure] race`, `race_margin` and
/// `race_confidence`.
#[derive(Args, Clone, Default)]
pub struct RaceArgs {
    /// Stop timing a configuration once it cannot be the best (`on`, the default unless the
    /// spec says `race = false`), or time every configuration in full (`off`).
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub race: Option<bool>,
    /// Racing stops a configuration only if it is slower than the best by this fraction beyond
    /// the measurement noise (default 0.5, or the spec's `race_margin`).
    #[arg(long, value_name = "M")]
    pub race_margin: Option<f64>,
    /// How sure the noise allowance of racing is (default 0.99, or the spec's
    /// `race_confidence`).
    #[arg(long, value_name = "C")]
    pub race_confidence: Option<f64>,
}

impl RaceArgs {
    /// The racing the flags ask for, over the spec's ([`ndtune_engine::RaceChoice::rule`]).
    pub fn choice(&self) -> ndtune_engine::RaceChoice {
        ndtune_engine::RaceChoice {
            on: self.race,
            margin: self.race_margin,
            confidence: self.race_confidence,
        }
    }
}

/// `on` or `off`.
fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("`{s}`: say `on` or `off`")),
    }
}

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// `kt` (Kernel Tuner cache JSON) or `t4` (T4 results JSON) of one campaign; `wisdom`
    /// (JSON) or `header` (C) of every campaign of --spec's kernel.
    #[arg(long, value_parser = ["kt", "t4", "wisdom", "header"])]
    pub format: String,
    /// Where to write.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The spec of the kernel whose wisdom to write (`wisdom`: repeatable, one kernel each;
    /// `header`: one).
    #[arg(long, value_name = "SPEC")]
    pub spec: Vec<PathBuf>,
    #[command(flatten)]
    pub campaign: SelectArgs,
    /// Metrics and objective besides (or instead of) those the campaign was tuned with.
    #[command(flatten)]
    pub metrics: MetricArgs,
}

#[derive(Args)]
pub struct PickArgs {
    /// The wisdom file (`ndtune export --format wisdom`).
    #[arg(long, value_name = "FILE")]
    pub wisdom: PathBuf,
    /// The kernel, where the wisdom holds several.
    #[arg(long)]
    pub kernel: Option<String>,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// The problem's constants (`--set N=768`, repeatable); the others keep the spec's values.
    #[command(flatten)]
    pub constants: SetArgs,
    /// For a kernel tuned for several objectives: pick from the tuned front, the best by one
    /// objective within limits on others, `time,power_w<=200` (the fastest under 200 W) or
    /// `energy_j,time<=1.05x` (the least energy within 5% of the fastest).
    #[arg(long, value_name = "OBJECTIVE,LIMIT...", value_parser = ndtune_wisdom::Preference::parse)]
    pub prefer: Option<ndtune_wisdom::Preference>,
    /// Print the pick as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Which recorded campaign of a store (`export`, `tune --replay`).
#[derive(Args, Clone, Default)]
pub struct SelectArgs {
    /// The kernel, where the store holds several.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Part of the device name, where the store holds several devices.
    #[arg(long, value_name = "SEL")]
    pub device: Option<String>,
    /// The campaign with these constants (`--set N=256`, repeatable).
    #[command(flatten)]
    pub constants: SetArgs,
    /// The campaign of this setup (the start of its digest, as `ndtune status` shows it),
    /// where the kernel was tuned under several.
    #[arg(long, value_name = "DIGEST")]
    pub setup: Option<String>,
}

#[derive(Args)]
pub struct ShowArgs {
    /// A spec file: its kernel, source and constants (with --set) select the campaign.
    pub spec: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// The kernel, without a spec.
    #[arg(long, conflicts_with = "spec")]
    pub kernel: Option<String>,
    /// Part of the device name.
    #[arg(long, value_name = "SEL")]
    pub device: Option<String>,
    /// The campaigns of these constants (with a spec: what it is read with).
    #[command(flatten)]
    pub constants: SetArgs,
    /// The configuration, or part of it: `--config WG=64,TS=8` (every result without).
    #[arg(long, value_name = "NAME=VALUE,...", value_delimiter = ',', value_parser = ndtune_core::parse_assignment)]
    pub config: Vec<(String, Value)>,
    /// Only the configurations on the Pareto front of a campaign tuned for several
    /// objectives (`--objective time,power_w`), best by the first objective first.
    #[arg(long)]
    pub front: bool,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct SplitArgs {
    /// The spec file (TOML) with a [split] section: co-execute its kernel across --devices.
    #[arg(required_unless_present = "plan_only", conflicts_with = "plan_only")]
    pub spec: Option<PathBuf>,
    /// Devices to split across: selectors, comma-separated (`0,1`, `0:0/2,0:1/2`), or `all`
    /// (every device of every platform: all GPUs of the node and the CPU).
    #[arg(long, value_name = "SEL,SEL", required_unless_present = "plan_only")]
    pub devices: Option<String>,
    /// How the range is handed out: `static` (the seed's plan, eq. 4-9), `dynamic` (equal
    /// chunks on demand), `hguided` (chunks that shrink as the work runs out, sized by each
    /// device's speed) or `auto` (each measured, the fastest verified kept). The static plan is
    /// always measured too, for comparison.
    #[arg(long, value_name = "S", default_value_t = ndtune_split::schedule::ScheduleChoice::Static)]
    pub schedule: ndtune_split::schedule::ScheduleChoice,
    /// `dynamic`: how many equal chunks, at most (default: 8 per device).
    #[arg(long, value_name = "N")]
    pub chunks: Option<u64>,
    /// Plan from these whole-range times of each device (ms, from an earlier run's
    /// `single_ms`) instead of this run's: the static plan and hguided's speeds stay as they
    /// were while a device slows down. Efficiency is against this run's times.
    #[arg(
        long,
        value_name = "T0,T1",
        value_delimiter = ',',
        conflicts_with = "plan_only"
    )]
    pub plan_ms: Option<Vec<f64>>,
    /// Run each part or chunk in this many pipelined slices (the next slice's inputs written
    /// and the last one's outputs read while a kernel runs; at most one per work-group).
    /// Default: one per 8 MiB moved, up to 4, on GPUs; one on CPUs. `--slices 1` runs each
    /// part as one write, one launch, one read.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub slices: Option<u32>,
    /// The NDRange dimension to split (0-based; default: [split] dim).
    #[arg(long, value_name = "D")]
    pub dim: Option<usize>,
    /// The same kernel in the other language (a spec of the same parameters, constants, launch
    /// and arguments): the devices of its API run it, so one range spans a CUDA GPU and an
    /// OpenCL device, each through its own backend.
    #[arg(long, value_name = "SPEC", conflicts_with = "plan_only")]
    pub twin: Option<PathBuf>,
    /// Also measure co-execution at fixed split factors of the first device, 0 to 1 by STEP.
    #[arg(long, value_name = "STEP", value_parser = parse_step)]
    pub sweep: Option<f64>,
    /// The store (`--db`) gives each device's best configuration; a device it has none for is
    /// tuned first (`--strategy`, `--budget`); `--seed` also makes the input data.
    #[command(flatten)]
    pub campaign: CampaignArgs,
    /// Only plan (eq. 4-9 and Algorithm 1 of Erdem et al. 2018) from given sizes and times.
    #[arg(long, requires_all = ["global", "wg", "time"])]
    pub plan_only: bool,
    /// --plan-only: global size along the split dimension.
    #[arg(long, value_name = "G")]
    pub global: Option<u64>,
    /// --plan-only: each device's best work-group size along the split dimension.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub wg: Vec<u64>,
    /// --plan-only: each device's best time in ms for the whole range, same order.
    #[arg(long, value_name = "TA,TB", value_delimiter = ',')]
    pub time: Vec<f64>,
    /// How shares become whole work-groups: `finish`, the rounding with the least predicted
    /// time, or `paper`, eq. 9's residue to the device with the least extra work.
    #[arg(long, value_name = "RULE", default_value_t = ndtune_split::Residue::Finish)]
    pub residue: ndtune_split::Residue,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A sweep step: a number in (0, 1].
fn parse_step(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not in (0, 1]"))
    }
}

#[derive(Subcommand)]
pub enum StencilCommand {
    /// Write synthetic stencil kernels, one `.stencil.toml` (and its OpenCL source) per kernel.
    Gen {
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 10)]
        count: usize,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// List the reference stencils (the paper's Table 2).
    List,
}

#[derive(Args)]
pub struct CollectArgs {
    /// The campaign file (TOML): devices, kernels, datasets, grid, measure.
    pub campaign: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Where the scenarios' generated files go (default: next to the store, `DB.stencils/`).
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// Seed of the input data.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Per-evaluation timeout in seconds (default: 10 x the slowest so far, at least 60).
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Print the derived figures of what the store holds (W_legal, W_safe, oracles, baseline).
    #[arg(long, conflicts_with = "campaign")]
    pub summary: bool,
    /// Write the long CSV (one row per scenario and work-group size) that `ndtune learn` reads.
    #[arg(long, value_name = "FILE.csv", conflicts_with_all = ["campaign", "summary"])]
    pub export: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum LearnCommand {
    /// Print the features of an OpenCL kernel (`.cl`: kernel features) or of a stencil scenario
    /// (`.stencil.toml` with --size and a device: device, kernel and dataset features).
    Features(LearnFeaturesArgs),
    /// Evaluate classifiers (with Algorithm 1's fallbacks), regressors (Algorithm 2) and the best
    /// fixed size on a collected CSV under a protocol.
    Eval(LearnEvalArgs),
    /// Train a classifier of the oracle work-group size on a collected CSV and save it.
    Train(LearnTrainArgs),
    /// Predict a legal work-group size for a stencil on a device with a saved model.
    Predict(LearnPredictArgs),
}

#[derive(Args)]
pub struct LearnTrainArgs {
    /// The long CSV of `ndtune collect --export` (or .csv.gz).
    #[arg(long, value_name = "CSV")]
    pub data: PathBuf,
    /// tree, forest, bayes, logistic or svm.
    #[arg(long, default_value = "forest")]
    pub model: String,
    /// Where to write the model (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Args)]
pub struct LearnPredictArgs {
    /// A model written by `ndtune learn train`.
    #[arg(long, value_name = "FILE")]
    pub model: PathBuf,
    /// The stencil: a `.stencil.toml`, a `.cl` next to its `.stencil.toml` (as `ndtune stencil
    /// gen` writes them), or a reference stencil's name.
    #[arg(long, value_name = "K")]
    pub kernel: String,
    /// The matrix, WIDTHxHEIGHT.
    #[arg(long, value_name = "WxH")]
    pub size: String,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct LearnFeaturesArgs {
    /// An OpenCL C file, or a `.stencil.toml`.
    pub kernel: PathBuf,
    /// Build options for a `.cl` file (e.g. `-D N=1024`).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub options: String,
    /// For a stencil: the matrix, WIDTHxHEIGHT.
    #[arg(long, default_value = "1024x1024")]
    pub size: String,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct LearnEvalArgs {
    /// The long CSV of `ndtune collect --export` (or .csv.gz).
    #[arg(long, value_name = "CSV")]
    pub data: PathBuf,
    /// cv10, synthetic-real, loo-device, loo-kernel or loo-dataset.
    #[arg(long, default_value = "cv10")]
    pub protocol: String,
    /// Models, comma-separated: tree, forest, bayes, logistic, svm, forest-runtime,
    /// forest-speedup, baseline (default: all).
    #[arg(long, value_name = "A,B")]
    pub models: Option<String>,
    /// Seed of the folds, the random fallback and the forests.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Models trained and tested at once, each on a core (default: the cores); 1 measures
    /// prediction times with nothing else running.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// The most training scenarios of a fold that logistic regression, the SVM and the
    /// regressors train on (a seeded sample where a fold has more), or `all`.
    #[arg(long, value_name = "N|all", default_value = "300", value_parser = max_training)]
    pub max_training: MaxTraining,
    /// Also keep the evaluation in this results store, for `ndtune report`.
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "NDTUNE_DB",
        hide_env_values = true
    )]
    pub db: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only campaigns of this kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Only campaigns with these constants.
    #[command(flatten)]
    pub constants: SetArgs,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only the tuning campaigns and pruned spaces with these constants.
    #[command(flatten)]
    pub constants: SetArgs,
    /// The file to write (Markdown: its figures are written beside it as STEM-fig-N.png).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// html: one self-contained page; md: Markdown with PNG figures.
    #[arg(long, value_name = "FORMAT", default_value = "html", value_parser = ["html", "md"])]
    pub format: String,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("address").required(true).args(["listen", "socket"])))]
pub struct ServeArgs {
    /// The model to serve (`ndtune learn train`); reloaded when the file changes or on SIGHUP.
    #[arg(long, value_name = "M.json")]
    pub model: PathBuf,
    /// Answer `POST /v1/config` from this wisdom file (`ndtune export --format wisdom`).
    #[arg(long, value_name = "W.json")]
    pub wisdom: Option<PathBuf>,
    /// Keep observations in this store (and learn from those it already holds); without it they
    /// are kept in memory only.
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "NDTUNE_DB",
        hide_env_values = true
    )]
    pub db: Option<PathBuf>,
    /// Listen on TCP, e.g. 127.0.0.1:8080 (port 0: any free port; the address is printed).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// Listen on a Unix socket.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Train the model again once this many observations arrived that it has not learnt from.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub retrain_after: usize,
    /// Seconds from a request's headers to its answer; a slower request gets 408.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub request_timeout: f64,
    /// Seconds a client may take to send a request's headers before it is disconnected.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub header_timeout: f64,
    /// Largest request body in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub max_body: usize,
}

#[derive(Args)]
pub struct BenchStrategiesArgs {
    /// Kernel Tuner caches (.json, .json.gz) and CLTune CSV files (.csv, .csv.gz: parameter
    /// columns, then run times `... (ms)`), a dataset each, or ndtune stores (a dataset per
    /// recorded campaign).
    #[arg(required = true, value_name = "RECORDING")]
    pub recordings: Vec<PathBuf>,
    /// Strategies to compare.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "random,anneal,anneal-jump,ga,ils,ils-adjacent,mls,mls-adjacent,forest,bo"
    )]
    pub strategies: Vec<String>,
    /// Evaluation budgets.
    #[arg(long, value_delimiter = ',', default_value = "25,50,100,200,400")]
    pub budgets: Vec<usize>,
    /// Runs per strategy and budget, with seeds 0 to N-1.
    #[arg(long, default_value_t = 32)]
    pub seeds: u64,
    /// Measure first the best configurations of the other datasets of the same kernel.
    #[arg(long)]
    pub warm_start: bool,
    /// How many configurations a warm start measures first.
    #[arg(long, default_value_t = ndtune_search::WARM_POINTS, value_name = "N")]
    pub warm: usize,
    /// Kernel Tuner's results on the same datasets (bench/kt_strategies.py's JSON: its
    /// fractions, or the configurations each run evaluated, scored here), shown beside.
    #[arg(long, value_name = "JSON")]
    pub kt: Option<PathBuf>,
    /// What runs minimise (default: the time); several objectives (`--objective
    /// time,energy_j`) score each run by the hypervolume of the front it found.
    #[command(flatten)]
    pub metrics: MetricArgs,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw the mean fraction of the optimum per budget as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// `--max-training`: a number of scenarios, or none for `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxTraining(pub Option<usize>);

fn max_training(s: &str) -> Result<MaxTraining, String> {
    match s.trim() {
        "all" => Ok(MaxTraining(None)),
        n => match n.parse::<usize>() {
            Ok(n) if n >= 2 => Ok(MaxTraining(Some(n))),
            _ => Err(format!(
                "`{s}`: a number of scenarios (at least 2), or `all`"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_subcommand_names_each_argument_once() {
        // clap checks a command's definition when it is parsed; this checks every subcommand's.
        Cli::command().debug_assert();
    }

    #[test]
    fn set_takes_one_value_or_a_sweep_over_several() {
        let set = |args: &[&str]| SetArgs {
            set: args
                .iter()
                .map(|a| ndtune_core::parse_values(a).unwrap())
                .collect(),
        };
        let n = |v: i64, m: Option<i64>| {
            let mut c = ndtune_core::int_config([("N", v)]);
            c.extend(m.map(|m| ("M".to_string(), Value::Int(m))));
            c
        };
        assert_eq!(set(&["N=256"]).single().unwrap(), n(256, None));
        assert_eq!(set(&[]).sweep().unwrap(), vec![Constants::new()]);
        let typed = set(&["TYPE=float,half", "ALPHA=0.5"]).sweep().unwrap();
        assert_eq!(typed[1]["TYPE"], Value::from("half"));
        assert_eq!(typed[1]["ALPHA"], Value::Real(0.5));
        assert_eq!(
            set(&["N = 1, 2", "M=3,4"]).sweep().unwrap(),
            vec![n(1, Some(3)), n(1, Some(4)), n(2, Some(3)), n(2, Some(4))]
        );
        assert!(set(&["N=1,2"])
            .single()
            .unwrap_err()
            .to_string()
            .contains("2 combinations"));
        assert!(set(&["N=1", "N=2"])
            .sweep()
            .unwrap_err()
            .to_string()
            .contains("`N` twice"));
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("-1").unwrap_err().contains("zero or more"));
        assert!(parse_duration("soon")
            .unwrap_err()
            .contains("`soon` is not a duration"));
    }

    #[test]
    fn show_reads_one_value_per_name() {
        let cli = Cli::try_parse_from(["ndtune", "show", "--kernel", "k", "--config", "WG=8,TS=2"])
            .unwrap();
        let Command::Show(args) = cli.command else {
            panic!("show")
        };
        assert_eq!(
            args.config,
            [
                ("WG".to_string(), Value::Int(8)),
                ("TS".to_string(), Value::Int(2))
            ]
        );
    }

    #[test]
    fn objectives_read_as_people_write_them() {
        let args = |objective: &str, maximize: bool, minimize: bool| MetricArgs {
            objective: Some(objective.into()),
            maximize,
            minimize,
            ..MetricArgs::default()
        };
        let o = |metric: &str, higher_is_better: bool| Objective {
            metric: metric.into(),
            higher_is_better,
        };
        assert_eq!(
            args("gflops", true, false).objectives().unwrap(),
            vec![o("gflops", true)]
        );
        assert_eq!(
            args("energy_j", false, false).objectives().unwrap(),
            vec![o("energy_j", false)]
        );
        assert_eq!(
            args("time, gflops:max,cost:min", false, false)
                .objectives()
                .unwrap(),
            vec![o("time", false), o("gflops", true), o("cost", false)]
        );
        for (bad, says) in [
            (args("gflops", false, false), "say `gflops:max`"),
            (args("time,gflops", false, false), "say `gflops:max`"),
            (args("time,gflops:up", false, false), "`up` is no direction"),
            (args("time,gflops", true, false), "for a single objective"),
            (args("gflops:max", true, false), "give the direction once"),
            (args("time,", false, false), "has no name"),
        ] {
            let e = bad.objectives().unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        assert!(MetricArgs::default().objectives().unwrap().is_empty());
    }
}
