//! User metrics and the objective of a campaign, as Kernel Tuner users know them (`metrics`,
//! `objective`, `objective_higher_is_better`).
//!
//! - A metric ([`MetricDef`]) is an expression of the measured quantities — [`TIME`] (ms, the
//!   configuration's score, as Kernel Tuner's `p["time"]`), [`ENERGY`] (joules per run),
//!   [`POWER`] (watts) and the means of the GPU's sensors over the same window
//!   ([`TEMPERATURE`], [`CORE_CLOCK`], [`MEM_CLOCK`]) — the constants, the parameters and the
//!   metrics defined before it,
//!   computed in double precision (a real context of the constraint language: `/` divides
//!   exactly). `gflops = "2 * N**3 / time / 1e6"`.
//! - The [`Objective`] is one metric (or `time`, the default), minimised or maximised.
//!   Strategies never see it: they minimise a positive cost, [`Objective::cost`] of its value
//!   (the value, or its reciprocal where higher is better). A campaign may have several
//!   objectives ([`Definitions::objectives`]: Kernel Tuner's `objective=[...]`): the first is
//!   the one a single best is ranked by, and together they define the Pareto front
//!   ([`Metrics::costs`], [`ndtune_core::pareto`]).
//! - [`Metrics`] are [`Definitions`] checked against a problem's names, and evaluated for one
//!   configuration from what was measured ([`Metrics::evaluate`]). Values are never stored:
//!   the store keeps the measurements, so a changed formula shows new values at once and
//!   never needs a measurement again.
//!
//! ```
//! use ndtune_core::{int_config, Outcome, Timing};
//! use ndtune_metrics::{Definitions, Inputs, MetricDef, Metrics, Objective};
//! use ndtune_space::resolve::Scope;
//!
//! let defs = Definitions {
//!     metrics: vec![MetricDef::new("gflops", "2 * N**3 / time / 1e6", Some("GFLOP/s"))],
//!     objective: Objective { metric: "gflops".into(), higher_is_better: true },
//!     more_objectives: Vec::new(),
//! };
//! let metrics = Metrics::check(defs, &Scope::ints(&["TS"], &[("N", 1000)]), &[]).unwrap();
//! let measured = Outcome::Measured(Timing::new(vec![4.0], 1));
//! let constants = int_config([("N", 1000)]);
//! let config = int_config([("TS", 16)]);
//! let values = metrics.evaluate(&Inputs::new(&constants, &config, &measured));
//! assert_eq!(values.get("gflops"), Some(500.0));
//! assert_eq!(metrics.objective().cost(500.0), Some(1.0 / 500.0));
//! ```

use ndtune_core::text::is_identifier;
use ndtune_core::{Config, Constants, Outcome, Value};
use ndtune_space::expr::{Expr, ExprError};
use ndtune_space::resolve::{resolve, Scope, Type};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The measured time in metrics: the configuration's score in milliseconds (the mean of the
/// best runs of `[measure]`).
pub const TIME: &str = "time";
/// The measured energy in metrics: joules per run.
pub const ENERGY: &str = "energy_j";
/// The measured power in metrics: watts, the mean over the runs.
pub const POWER: &str = "power_w";

/// The measured GPU temperature in metrics: degrees Celsius, the mean over the energy window.
pub const TEMPERATURE: &str = "temperature_c";
/// The measured graphics (core) clock in metrics: MHz, the mean over the energy window.
pub const CORE_CLOCK: &str = "core_clock_mhz";
/// The measured memory clock in metrics: MHz, the mean over the energy window.
pub const MEM_CLOCK: &str = "mem_clock_mhz";

/// The measured quantities metrics are built on, with their units.
pub const MEASURED: [(&str, &str); 6] = [
    (TIME, "ms"),
    (ENERGY, "J"),
    (POWER, "W"),
    (TEMPERATURE, "°C"),
    (CORE_CLOCK, "MHz"),
    (MEM_CLOCK, "MHz"),
];

/// The measured quantities the device's power source reads over the energy window: a
/// campaign that needs one measures the energy.
pub const FROM_THE_POWER_SOURCE: [&str; 5] = [ENERGY, POWER, TEMPERATURE, CORE_CLOCK, MEM_CLOCK];

/// Each measured quantity of a timing by name, `None` where it was not read (no energy window,
/// or a sensor the GPU does not read) or is not finite.
pub fn measured(timing: &ndtune_core::Timing) -> Vec<(&'static str, Option<f64>)> {
    let energy = timing.energy.as_deref();
    let read = |f: fn(&ndtune_core::Energy) -> Option<f64>| energy.and_then(f);
    [
        (TIME, Some(timing.score_ms())),
        (ENERGY, read(|e| Some(e.joules))),
        (POWER, read(|e| Some(e.watts))),
        (TEMPERATURE, read(|e| e.temperature_c)),
        (CORE_CLOCK, read(|e| e.core_clock_mhz)),
        (MEM_CLOCK, read(|e| e.mem_clock_mhz)),
    ]
    .into_iter()
    .map(|(n, v)| (n, v.filter(|v| v.is_finite())))
    .collect()
}

/// A metric as written: its name, its expression and the unit its values are shown in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDef {
    pub name: String,
    pub expr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl MetricDef {
    pub fn new(name: &str, expr: &str, unit: Option<&str>) -> MetricDef {
        MetricDef {
            name: name.to_string(),
            expr: expr.to_string(),
            unit: unit.map(str::to_string),
        }
    }

    /// `NAME=EXPR` or `NAME[UNIT]=EXPR`, as a command line gives a metric (`--metric`).
    pub fn parse_assignment(s: &str) -> Result<MetricDef, String> {
        let (head, expr) = s.split_once('=').ok_or_else(|| {
            format!(
                "`{s}` is not NAME=EXPR (or NAME[UNIT]=EXPR), e.g. gflops[GFLOP/s]=2*N**3/time/1e6"
            )
        })?;
        let head = head.trim();
        let (name, unit) = match head.strip_suffix(']').and_then(|h| h.split_once('[')) {
            Some((name, unit)) => (name.trim(), Some(unit.trim())),
            None => (head, None),
        };
        if !ndtune_core::text::is_identifier(name) || unit.is_some_and(|u| u.contains(['[', ']'])) {
            return Err(format!(
                "`{s}`: `{head}` is not NAME or NAME[UNIT] (a name of letters, digits and `_`), e.g. gflops[GFLOP/s]=2*N**3/time/1e6"
            ));
        }
        Ok(MetricDef::new(
            name,
            expr.trim(),
            unit.filter(|u| !u.is_empty()),
        ))
    }
}

/// What strategies optimise: a metric, minimised or maximised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    pub metric: String,
    /// Kernel Tuner's `objective_higher_is_better`.
    pub higher_is_better: bool,
}

impl Default for Objective {
    fn default() -> Self {
        Objective::time()
    }
}

impl Objective {
    /// The default objective: the time, minimised.
    pub fn time() -> Objective {
        Objective {
            metric: TIME.into(),
            higher_is_better: false,
        }
    }

    /// Whether higher is better for `metric` without being told: never for the measured time,
    /// energy, power and temperature (lower is better); `None` for the clocks and any other
    /// metric, whose direction the user must say (minimising a GFLOP/s by default would be
    /// silently wrong).
    pub fn default_direction(metric: &str) -> Option<bool> {
        [TIME, ENERGY, POWER, TEMPERATURE]
            .contains(&metric)
            .then_some(false)
    }

    /// The cost strategies minimise for a value of the objective: the value where lower is
    /// better, its reciprocal where higher is; `None` unless the value is positive and finite
    /// (a cost is positive: strategies compare them on a logarithmic scale).
    pub fn cost(&self, value: f64) -> Option<f64> {
        if !(value.is_finite() && value > 0.0) {
            return None;
        }
        let cost = if self.higher_is_better {
            1.0 / value
        } else {
            value
        };
        cost.is_finite().then_some(cost)
    }

    /// The value as a coordinate of the Pareto front, where every coordinate is minimised
    /// ([`ndtune_core::pareto`]): the value, negated where higher is better. Unlike the cost it
    /// keeps the value's own scale, so a hypervolume is in the units people read.
    pub fn oriented(&self, value: f64) -> f64 {
        if self.higher_is_better {
            -value
        } else {
            value
        }
    }

    /// Objectives as written on a command line: `NAME[:min|:max]`, comma-separated
    /// (`time,gflops:max`). A direction may be left out where it is known
    /// ([`Objective::default_direction`]); a metric of the user's must say it.
    pub fn parse_list(text: &str) -> Result<Vec<Objective>, String> {
        let mut out: Vec<Objective> = Vec::new();
        for item in text.split(',').map(str::trim) {
            let (metric, said) = match item.rsplit_once(':') {
                Some((m, "max")) => (m.trim(), Some(true)),
                Some((m, "min")) => (m.trim(), Some(false)),
                Some((_, other)) => {
                    return Err(format!(
                        "objective `{item}`: `{other}` is no direction; write `:min` or `:max`"
                    ))
                }
                None => (item, None),
            };
            if metric.is_empty() {
                return Err(format!("objective list `{text}`: an objective has no name"));
            }
            let Some(higher_is_better) = said.or_else(|| Objective::default_direction(metric))
            else {
                return Err(format!(
                    "objective `{metric}`: say `{metric}:max` (higher is better, a GFLOP/s) or `{metric}:min` (lower is better); ndtune does not guess"
                ));
            };
            out.push(Objective {
                metric: metric.to_string(),
                higher_is_better,
            });
        }
        Ok(out)
    }

    /// Whether value `a` is better than value `b`.
    pub fn better(&self, a: f64, b: f64) -> bool {
        if self.higher_is_better {
            a > b
        } else {
            a < b
        }
    }

    /// `higher is better` or `lower is better`.
    pub fn direction(&self) -> &'static str {
        if self.higher_is_better {
            "higher is better"
        } else {
            "lower is better"
        }
    }
}

/// A campaign's metrics, in order, and its objectives: what the store keeps beside the results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Definitions {
    pub metrics: Vec<MetricDef>,
    /// The first objective: the one a single best is ranked by.
    pub objective: Objective,
    /// The objectives after the first, where a campaign has several (its Pareto front).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_objectives: Vec<Objective>,
}

impl Definitions {
    /// These definitions with `more` metrics (one of a name already defined replaces that
    /// definition where it stands, the others come last) and, where given (not empty), other
    /// objectives.
    pub fn with(mut self, more: Vec<MetricDef>, objectives: Vec<Objective>) -> Definitions {
        for def in more {
            match self.metrics.iter_mut().find(|m| m.name == def.name) {
                Some(slot) => *slot = def,
                None => self.metrics.push(def),
            }
        }
        let mut objectives = objectives.into_iter();
        if let Some(first) = objectives.next() {
            self.objective = first;
            self.more_objectives = objectives.collect();
        }
        self
    }

    /// Every objective, the first first.
    pub fn objectives(&self) -> impl Iterator<Item = &Objective> {
        std::iter::once(&self.objective).chain(&self.more_objectives)
    }
}

/// Where a definition is wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    /// The metric at this index of [`Definitions::metrics`].
    Metric(usize),
    Objective,
}

/// A metric or objective that cannot be used, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricError {
    pub place: Place,
    /// The metric's name (the objective's metric).
    pub name: String,
    pub message: String,
}

impl fmt::Display for MetricError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.place {
            Place::Metric(_) => write!(f, "metric `{}`: {}", self.name, self.message),
            Place::Objective => write!(f, "objective `{}`: {}", self.name, self.message),
        }
    }
}

impl std::error::Error for MetricError {}

/// Checked definitions, ready to evaluate.
#[derive(Debug, Clone)]
pub struct Metrics {
    defs: Definitions,
    exprs: Vec<Expr>,
    /// Per metric: whether it needs the energy or the power (itself or through an earlier
    /// metric).
    energy: Vec<bool>,
}

/// A value standing for a measured quantity while definitions are checked.
const PLACEHOLDER: f64 = 1.234_567;

impl Metrics {
    /// No metric, the time minimised: what a campaign optimises by default.
    pub fn time() -> Metrics {
        Metrics {
            defs: Definitions::default(),
            exprs: Vec::new(),
            energy: Vec::new(),
        }
    }

    /// Checks `defs` against recorded results (a store's campaign, a Kernel Tuner cache):
    /// parameters `names` typed by the values `configs` hold, `constants`, and `recorded`
    /// metric values ([`Metrics::check`]).
    pub fn check_recorded<'a>(
        defs: Definitions,
        names: Vec<String>,
        configs: impl IntoIterator<Item = &'a Config>,
        constants: &Constants,
        recorded: &[String],
    ) -> Result<Metrics, MetricError> {
        let codec = ndtune_core::Codec::infer(names.clone(), configs);
        let scope = Scope {
            params: names,
            codings: codec.codings().to_vec(),
            constants: constants.clone(),
            device: None,
        };
        Metrics::check(defs, &scope, recorded)
    }

    /// Checks `defs` against a problem's names: `scope`'s parameters and constants, the
    /// measured quantities, the metrics defined before each one, and `recorded`: values
    /// recorded with every configuration (a Kernel Tuner cache's metrics), which metrics may
    /// use and the objective may name.
    pub fn check(
        defs: Definitions,
        scope: &Scope,
        recorded: &[String],
    ) -> Result<Metrics, MetricError> {
        let mut known = scope.constants.clone();
        for name in recorded.iter().filter(|n| is_identifier(n)) {
            known.insert(name.clone(), Value::Real(PLACEHOLDER));
        }
        let mut exprs = Vec::new();
        let mut energy: Vec<bool> = Vec::new();
        for (i, def) in defs.metrics.iter().enumerate() {
            let err = |message: String| MetricError {
                place: Place::Metric(i),
                name: def.name.clone(),
                message,
            };
            check_name(&def.name, scope, &defs.metrics[..i]).map_err(err)?;
            let expr = Expr::parse(&def.expr).map_err(|e| err(e.to_string()))?;
            for (name, span) in expr.names() {
                let measured = MEASURED.iter().any(|(m, _)| *m == name);
                if measured
                    && (scope.params.iter().any(|p| p == name)
                        || scope.constants.contains_key(name))
                {
                    let e = ExprError {
                        message: format!("`{name}` is both a parameter or constant and a measured quantity: a metric cannot tell them apart"),
                        source: def.expr.clone(),
                        span,
                        help: Some(format!("rename the parameter or constant `{name}`")),
                    };
                    return Err(err(e.to_string()));
                }
            }
            let mut names = known.clone();
            for (m, _) in MEASURED {
                names.insert(m.into(), Value::Real(PLACEHOLDER));
            }
            let scope = Scope {
                constants: names,
                ..scope.clone()
            };
            resolve(&expr, &def.expr, &scope, Type::Real).map_err(|mut e| {
                let guessed = e
                    .help
                    .as_deref()
                    .is_some_and(|h| h.starts_with("did you mean"));
                if e.message.starts_with("unknown name") && !guessed {
                    e.help = Some(help_names(&scope, &defs.metrics[..i]));
                }
                err(e.to_string())
            })?;
            let needs = expr.names().iter().any(|(n, _)| {
                FROM_THE_POWER_SOURCE.contains(n)
                    || defs.metrics[..i]
                        .iter()
                        .zip(&energy)
                        .any(|(m, e)| *e && m.name == *n)
            });
            energy.push(needs);
            if is_identifier(&def.name) {
                known.insert(def.name.clone(), Value::Real(PLACEHOLDER));
            }
            exprs.push(expr);
        }
        for (i, objective) in defs.objectives().enumerate() {
            let name = &objective.metric;
            let defined = defs.metrics.iter().any(|m| &m.name == name)
                || MEASURED.iter().any(|(m, _)| m == name)
                || recorded.contains(name);
            if !defined {
                let mut names: Vec<&str> = MEASURED.iter().map(|(m, _)| *m).collect();
                names.extend(defs.metrics.iter().map(|m| m.name.as_str()));
                names.extend(recorded.iter().map(String::as_str));
                return Err(MetricError {
                    place: Place::Objective,
                    name: name.clone(),
                    message: format!("is no metric; the metrics are: {}", names.join(", ")),
                });
            }
            if defs.objectives().take(i).any(|o| &o.metric == name) {
                return Err(MetricError {
                    place: Place::Objective,
                    name: name.clone(),
                    message: "is an objective twice".into(),
                });
            }
        }
        Ok(Metrics {
            defs,
            exprs,
            energy,
        })
    }

    pub fn definitions(&self) -> &Definitions {
        &self.defs
    }

    /// The first objective: the one a single best is ranked by.
    pub fn objective(&self) -> &Objective {
        &self.defs.objective
    }

    /// Every objective, the first first.
    pub fn objectives(&self) -> Vec<&Objective> {
        self.defs.objectives().collect()
    }

    /// Whether the campaign has several objectives: a Pareto front rather than one best.
    pub fn several(&self) -> bool {
        !self.defs.more_objectives.is_empty()
    }

    /// Whether the objective is the time, minimised, with no metric besides.
    pub fn is_time(&self) -> bool {
        self.defs.metrics.is_empty() && self.defs.objective == Objective::time() && !self.several()
    }

    /// The metrics that need the energy or the power, by name, and the objective where it does.
    pub fn needing_energy(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .defs
            .metrics
            .iter()
            .zip(&self.energy)
            .filter(|(_, e)| **e)
            .map(|(m, _)| m.name.as_str())
            .collect();
        for objective in self.defs.objectives() {
            let objective = objective.metric.as_str();
            if FROM_THE_POWER_SOURCE.contains(&objective) && !out.contains(&objective) {
                out.push(objective);
            }
        }
        out
    }

    /// The quantities of the power source ([`FROM_THE_POWER_SOURCE`]) that the metrics or the
    /// objective use: what a stored measurement needs to be reused.
    pub fn power_source_quantities(&self) -> Vec<&'static str> {
        FROM_THE_POWER_SOURCE
            .into_iter()
            .filter(|q| {
                self.defs.objectives().any(|o| o.metric == *q)
                    || self
                        .exprs
                        .iter()
                        .any(|e| e.names().iter().any(|(n, _)| n == q))
            })
            .collect()
    }

    /// The unit of every measured quantity and of each metric that has one, by name.
    pub fn units(&self) -> BTreeMap<String, String> {
        MEASURED
            .iter()
            .map(|(n, u)| (n.to_string(), u.to_string()))
            .chain(
                self.defs
                    .metrics
                    .iter()
                    .filter_map(|m| Some((m.name.clone(), m.unit.clone()?))),
            )
            .collect()
    }

    /// The unit of a metric or measured quantity, where known.
    pub fn unit(&self, name: &str) -> Option<&str> {
        if let Some(m) = self.defs.metrics.iter().find(|m| m.name == name) {
            return m.unit.as_deref();
        }
        MEASURED.iter().find(|(m, _)| *m == name).map(|(_, u)| *u)
    }

    /// `name (unit)`, or the name where the unit is unknown.
    pub fn label(&self, name: &str) -> String {
        match self.unit(name) {
            Some(unit) => format!("{name} ({unit})"),
            None => name.to_string(),
        }
    }

    /// The objectives as people read them: `gflops (GFLOP/s), higher is better`, several
    /// joined by `; `.
    pub fn describe_objective(&self) -> String {
        self.defs
            .objectives()
            .map(|o| format!("{}, {}", self.label(&o.metric), o.direction()))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Every metric's value and the objective's for one evaluated configuration. Only a
    /// measured configuration has values; a metric is undefined (`None`) where what it needs
    /// was not measured (the energy, on a device without a power source) or its expression is
    /// (a division by zero).
    pub fn evaluate(&self, inputs: &Inputs) -> Values {
        let Outcome::Measured(timing) = inputs.outcome else {
            return Values {
                measured: Vec::new(),
                metrics: self
                    .defs
                    .metrics
                    .iter()
                    .map(|m| (m.name.clone(), None))
                    .collect(),
                objective: None,
                objectives: vec![None; 1 + self.defs.more_objectives.len()],
            };
        };
        let measured: Vec<(String, Option<f64>)> = measured(timing)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        let mut known: Constants = inputs
            .recorded
            .into_iter()
            .flatten()
            .filter(|(n, _)| is_identifier(n))
            .map(|(n, v)| (n.clone(), Value::Real(*v)))
            .collect();
        known.extend(inputs.constants.iter().map(|(k, v)| (k.clone(), v.clone())));
        known.extend(inputs.config.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (name, v) in &measured {
            if let Some(v) = v {
                known.insert(name.clone(), Value::Real(*v));
            }
        }
        let mut metrics = Vec::with_capacity(self.exprs.len());
        for (def, expr) in self.defs.metrics.iter().zip(&self.exprs) {
            let scope = Scope {
                constants: known.clone(),
                ..Scope::default()
            };
            let value = resolve(expr, &def.expr, &scope, Type::Real)
                .ok()
                .and_then(|node| node.eval_real(&[]));
            if let (Some(v), true) = (value, is_identifier(&def.name)) {
                known.insert(def.name.clone(), Value::Real(v));
            }
            metrics.push((def.name.clone(), value));
        }
        let mut values = Values {
            measured,
            metrics,
            objective: None,
            objectives: Vec::new(),
        };
        values.objectives = self
            .defs
            .objectives()
            .map(|o| {
                values
                    .get(&o.metric)
                    .or_else(|| inputs.recorded.and_then(|r| r.get(&o.metric)).copied())
            })
            .collect();
        values.objective = values.objectives[0];
        values
    }

    /// Each objective's value of `values`, in order; `None` where one has none (or one that
    /// has no cost: not positive and finite).
    pub fn objective_values(&self, values: &Values) -> Option<Vec<f64>> {
        self.defs
            .objectives()
            .zip(&values.objectives)
            .map(|(o, v)| v.filter(|v| o.cost(*v).is_some()))
            .collect()
    }

    /// The indices of `points` (each objective's value, in order) on the Pareto front of the
    /// objectives, best by the first objective first.
    pub fn front(&self, points: &[Vec<f64>]) -> Vec<usize> {
        let objectives: Vec<&Objective> = self.defs.objectives().collect();
        let oriented: Vec<Vec<f64>> = points
            .iter()
            .map(|p| {
                objectives
                    .iter()
                    .zip(p)
                    .map(|(o, v)| o.oriented(*v))
                    .collect()
            })
            .collect();
        let mut on = ndtune_core::pareto::front(&oriented);
        on.sort_by(|&a, &b| oriented[a][0].total_cmp(&oriented[b][0]));
        on
    }

    /// The costs strategies minimise for one evaluated configuration, one per objective
    /// ([`Objective::cost`] of each value); `None` where one has none.
    pub fn costs(&self, inputs: &Inputs) -> Option<Vec<f64>> {
        if !self.several() {
            return self.cost(inputs).map(|c| vec![c]);
        }
        let values = self.evaluate(inputs);
        self.defs
            .objectives()
            .zip(&values.objectives)
            .map(|(o, v)| o.cost((*v)?))
            .collect()
    }

    /// The cost strategies minimise for one evaluated configuration ([`Objective::cost`] of its
    /// objective's value); `None` where it has none.
    pub fn cost(&self, inputs: &Inputs) -> Option<f64> {
        if self.is_time() {
            return inputs
                .outcome
                .score_ms()
                .and_then(|t| self.objective().cost(t));
        }
        self.evaluate(inputs)
            .objective
            .and_then(|v| self.objective().cost(v))
    }
}

/// Why a metric cannot have this name; `earlier`: the metrics defined before it.
fn check_name(name: &str, scope: &Scope, earlier: &[MetricDef]) -> Result<(), String> {
    if name.trim().is_empty()
        || name.trim() != name
        || name.chars().any(|c| c.is_control() || c == '=')
    {
        return Err("a metric's name is not empty, has no `=`, no control character and no space at either end".into());
    }
    if MEASURED.iter().any(|(m, _)| *m == name) {
        return Err(format!("`{name}` is measured: a metric cannot redefine it"));
    }
    if scope.params.iter().any(|p| p == name) {
        return Err(format!("`{name}` is a parameter"));
    }
    if scope.constants.contains_key(name) {
        return Err(format!("`{name}` is a constant"));
    }
    if earlier.iter().any(|m| m.name == name) {
        return Err("is defined twice".into());
    }
    Ok(())
}

/// The names a metric may use, for an unknown name's help.
fn help_names(scope: &Scope, earlier: &[MetricDef]) -> String {
    let names: Vec<&str> = MEASURED.iter().map(|(n, _)| *n).collect();
    let (last, first) = names.split_last().expect("quantities are measured");
    let mut out = format!("a metric uses the measured {} and {last}", first.join(", "));
    if !scope.params.is_empty() {
        out.push_str(&format!(", the parameters ({})", scope.params.join(", ")));
    }
    out.push_str(", the constants");
    let named: Vec<&str> = earlier
        .iter()
        .map(|m| m.name.as_str())
        .filter(|n| is_identifier(n))
        .collect();
    if !named.is_empty() {
        out.push_str(&format!(
            " and the metrics defined before it ({})",
            named.join(", ")
        ));
    }
    out
}

/// What one configuration's metrics are computed from.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub constants: &'a Constants,
    pub config: &'a Config,
    pub outcome: &'a Outcome,
    /// Values recorded with the configuration (a Kernel Tuner cache's metrics), by name.
    pub recorded: Option<&'a BTreeMap<String, f64>>,
}

impl<'a> Inputs<'a> {
    pub fn new(constants: &'a Constants, config: &'a Config, outcome: &'a Outcome) -> Inputs<'a> {
        Inputs {
            constants,
            config,
            outcome,
            recorded: None,
        }
    }

    /// With values recorded beside the outcome.
    pub fn recorded(self, recorded: Option<&'a BTreeMap<String, f64>>) -> Inputs<'a> {
        Inputs { recorded, ..self }
    }
}

/// One configuration's values: the measured quantities and the metrics, in order, and the
/// objective's value.
#[derive(Debug, Clone, PartialEq)]
pub struct Values {
    /// Every measured quantity ([`MEASURED`]), `None` where it was not read.
    pub measured: Vec<(String, Option<f64>)>,
    /// Every metric, in definition order.
    pub metrics: Vec<(String, Option<f64>)>,
    /// The first objective's value.
    pub objective: Option<f64>,
    /// Each objective's value, in order (the first is [`Values::objective`]).
    pub objectives: Vec<Option<f64>>,
}

impl Values {
    /// The value of a measured quantity or metric, where defined.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.measured
            .iter()
            .chain(&self.metrics)
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| *v)
    }

    /// The quantities of the power source, where read, then every metric that has a value: what
    /// reports show beside the time.
    pub fn shown(&self) -> BTreeMap<String, f64> {
        self.measured
            .iter()
            .filter(|(n, _)| n != TIME)
            .chain(&self.metrics)
            .filter_map(|(n, v)| v.map(|v| (n.clone(), v)))
            .collect()
    }
}

#[cfg(test)]
mod tests;
