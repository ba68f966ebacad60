//! One spec tuned on one device, as every front end does it (`ndtune tune`, `collect` and
//! `split`, the Python package's `tune_kernel`): the space pruned for the device and its counts
//! kept in the store (a study of kind `space`), `--strategy auto` resolved for the pruned space
//! (what it chose told as an [`Event::Warning`]), then the [`Campaign`].

use crate::space::SpaceReport;
use crate::tunable_source;
use crate::{
    group, Campaign, CampaignError, DeviceReport, Event, Observer, Options, PerConfig, Worker,
};
use ndtune_backend::AnyDevice;
use ndtune_core::text::show_constants;
use ndtune_search::{AutoChoice, Budget};
use ndtune_space::problem::{Pruning, Target};
use ndtune_spec::Spec;
use ndtune_store::{Group, Store};
use std::collections::BTreeMap;
use std::time::Instant;

/// A spec to tune on one device.
pub struct Tuning<'a> {
    pub spec: &'a Spec,
    /// Constants replaced on the command line (`--set`), passed on to the workers.
    pub overrides: &'a BTreeMap<String, ndtune_core::Value>,
    pub device: &'a AnyDevice,
    /// How the device is named in messages and in the store's studies.
    pub label: &'a str,
    pub store: &'a Store,
    /// The strategy may be `auto`, resolved here for the pruned space.
    pub options: Options,
    /// The measurement worker, where started ahead ([`Worker::start`]).
    pub worker: Option<Worker>,
}

/// What a [`Tuning`] gave.
pub struct Tuned {
    pub report: DeviceReport,
    /// Seconds spent pruning the space and recording its counts.
    pub prune_s: f64,
}

impl Tuning<'_> {
    /// Prunes, records the space, resolves the strategy and runs the campaign, with
    /// `per_config` where the front end works out each configuration ([`Campaign::run_with`]).
    pub fn run(
        self,
        observer: &mut dyn Observer,
        per_config: Option<&mut dyn PerConfig>,
    ) -> Result<Tuned, CampaignError> {
        self.run_handing_on(observer, per_config, false)
            .map(|(tuned, _)| tuned)
    }

    /// [`Tuning::run`]; to `hand_on` its workers, giving them back for the next campaign on the
    /// device ([`Campaign::run_handing_on`]).
    pub fn run_handing_on(
        self,
        observer: &mut dyn Observer,
        per_config: Option<&mut dyn PerConfig>,
        hand_on: bool,
    ) -> Result<(Tuned, Option<Worker>), CampaignError> {
        let started = Instant::now();
        let spec = self.spec;
        let pruning = spec
            .problem
            .prune(&[Target::from_profile(self.label, self.device.profile())])
            .map_err(|e| CampaignError::Spec(spec.locate(&e).to_string()))?;
        let source = tunable_source(spec)?;
        let group = group(spec, &source, self.options.seed, self.device, self.store)?;
        record_space(spec, self.label, &pruning, &group, self.store)?;
        let mut options = self.options;
        let given = Budget {
            evaluations: options.budget,
            time: options.time,
        };
        if options.configs.is_empty() {
            let patient_warm = options.warm_start && options.patience.is_some();
            let resolved = resolve_strategy(
                &options.strategy,
                given,
                pruning.stats.pruned,
                true,
                patient_warm,
                spec.metrics.objectives().len(),
            );
            if let Some(choice) = &resolved.auto {
                observer.event(Event::Warning(format!("strategy auto: {choice}")));
            }
            options.strategy = resolved.strategy;
            options.budget = resolved.budget.evaluations;
            options.time = resolved.budget.time;
        } else {
            // The listed configurations are the search (`Listed`).
            options.strategy = "listed".into();
            options.budget = Some(options.configs.len());
        }
        let prune_s = started.elapsed().as_secs_f64();
        let campaign = Campaign {
            spec,
            overrides: self.overrides,
            device: self.device,
            label: self.label,
            pruning,
            store: self.store,
            options,
            worker: self.worker,
        };
        let (report, worker) = campaign.run_handing_on(observer, per_config, hand_on)?;
        Ok((Tuned { report, prune_s }, worker))
    }
}

/// The strategy and budget a search runs with.
pub struct Resolved {
    pub strategy: String,
    pub budget: Budget,
    /// What `auto` chose, to tell the user.
    pub auto: Option<AutoChoice>,
}

/// The strategy and budget of a search of a pruned space of `valid` configurations: `auto`
/// resolved ([`ndtune_search::auto_choice`]; `live` where the campaign measures, so that auto
/// may judge by the time its first evaluations take: it then runs as `auto` and decides during
/// the run); any other strategy as given. `patient_warm`: the campaign warm-starts with a
/// patience, so `auto` decides in the search, where it knows whether the warm start found
/// anything (then it climbs from it: `ndtune_search::AUTO_CLIMB`). `objectives`: how many the
/// campaign has (several: a front strategy).
pub fn resolve_strategy(
    strategy: &str,
    given: Budget,
    valid: u128,
    live: bool,
    patient_warm: bool,
    objectives: usize,
) -> Resolved {
    if strategy != "auto" || patient_warm {
        return Resolved {
            strategy: strategy.to_string(),
            budget: given,
            auto: None,
        };
    }
    let choice = ndtune_search::auto_choice(valid, given, live, objectives);
    let (strategy, budget) = if choice.probe {
        ("auto", given)
    } else {
        (choice.strategy, choice.budget)
    };
    Resolved {
        strategy: strategy.to_string(),
        budget,
        auto: Some(choice),
    }
}

/// Keeps what pruning made of the spec's space on this device in the store (a study of kind
/// `space`, named `kernel N=... on device`), for `ndtune show` and the report.
pub fn record_space(
    spec: &Spec,
    label: &str,
    pruning: &Pruning,
    group: &Group,
    store: &Store,
) -> Result<(), CampaignError> {
    let space = serde_json::to_value(SpaceReport::new(spec, Some(label.to_string()), pruning))
        .map_err(|e| CampaignError::Spec(format!("the pruning counts do not fit JSON: {e}")))?;
    store.put_study(&ndtune_store::Study {
        kind: "space".into(),
        name: format!(
            "{}{} on {}",
            group.kernel,
            show_constants(&group.constants),
            group.device
        ),
        body: serde_json::json!({
            "device": group.device,
            "constants": group.constants,
            "space": space,
        }),
        created_at: ndtune_store::now_ms(),
    })?;
    Ok(())
}
