//! Picking a kernel's configuration at run time from its wisdom, for a device and the problem's
//! constants, in three steps, the first that gives a configuration valid on the device (the
//! spec's pruning: its constraints and the device's limits, at these constants):
//!
//! 1. `exact`: the entry tuned on this device model ([`crate::same_model`]) at these constants
//!    (of several drivers, the best).
//! 2. `nearest`: the entries of this device model at other constants, by the distance
//!    `sqrt(sum over numeric constants of (slog2(a) - slog2(b))^2)`, where
//!    `slog2(v) = sign(v) * log2(1 + |v|)` (a size twice as large is one step away whatever the
//!    size); an entry whose other (text) constants differ is not near at all. Between two tuned
//!    sizes (the nearest, and the nearest on the other side), the configuration measured at
//!    both that does best at both: the highest mean of the logarithm of its fraction of each
//!    one's best, weighted by nearness. Otherwise (beyond every tuned size, or nothing measured
//!    at both is valid here) the nearest entry's best, or its next best valid here.
//! 3. `predicted`: a decision tree learnt over every entry (the seed's work-group model,
//!    generalised: device features of `ndtune_learn::features::device_features` and `slog2` of
//!    each numeric constant, the class being the entry's configuration); where its choice is not
//!    valid here, the entries nearest in those features (standardised); where none is, the valid
//!    configuration nearest (in `slog2` of each parameter) to the tree's choice.
//!
//! With a [`Preference`] (a kernel tuned for several objectives), steps 1 and 2 choose from the
//! entry's Pareto front instead of taking its best: the exact entry's, else the nearest tuned
//! size's, among the front's configurations valid here. Nothing is predicted for a preference:
//! without a tuned front of this device model, the answer is an error that says so.
//!
//! Each answer carries the build options (`-D` of every define the kernel's source mentions;
//! the program adds its own `-I`) and the launch sizes of `[launch]`, and is remembered: the
//! same question is answered from memory next time. What is remembered is bounded
//! ([`MAX_ANSWERS`] answers, [`MAX_ANSWER_BYTES`] of questions): a service asked ever new
//! questions forgets its answers and starts again rather than grow. [`Pick::text`] is an answer
//! as `ndtune pick` prints it.

use crate::{constants_key, same_model, spec_path, Entry, KernelWisdom, WisdomError};
use ndtune_core::{Config, Constants, Value};
use ndtune_device::DeviceProfile;
use ndtune_learn::features::device_features;
use ndtune_learn::models::{Classifier, ClassifierKind};
use ndtune_space::lazy::ValidSpace;
use ndtune_space::problem::Target;
use ndtune_spec::Spec;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Mutex;

/// The most valid configurations looked at for the one nearest to a prediction.
const SCAN_LIMIT: u128 = 1_000_000;

/// Which step chose a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum How {
    Exact,
    Nearest,
    Predicted,
}

impl How {
    pub fn word(self) -> &'static str {
        match self {
            How::Exact => "exact",
            How::Nearest => "nearest",
            How::Predicted => "predicted",
        }
    }
}

/// A configuration to build and launch with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pick {
    pub how: How,
    pub config: Config,
    /// OpenCL build options: the spec's own, then `-D NAME=VALUE` for each define.
    pub build_options: String,
    /// `[launch] global` and `local` at these constants (empty where the spec has no `[launch]`).
    pub global: Vec<usize>,
    pub local: Vec<usize>,
    /// The objective's tuned value of the entry it comes from (`exact`, `nearest`).
    pub tuned_objective: Option<f64>,
    /// The constants of the entry it comes from (`exact`, `nearest`).
    pub tuned_constants: Option<Constants>,
    /// Why this configuration, in words.
    pub reason: String,
}

/// What to pick from a front: the best by one objective among the configurations within every
/// limit on the others.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preference {
    /// The objective to do best at.
    pub best_by: String,
    pub limits: Vec<Limit>,
}

/// A limit on one objective's value: `power_w<=200`, or relative to the front's best of it,
/// `time<=1.05x` (within 5% of the fastest).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limit {
    pub metric: String,
    /// `<=` (else `>=`).
    pub at_most: bool,
    pub bound: f64,
    /// Whether `bound` is a factor of the front's best value of `metric`.
    pub of_best: bool,
}

impl Preference {
    /// `OBJECTIVE[,NAME<=VALUE|NAME>=VALUE|NAME<=FACTORx|NAME>=FACTORx]...`:
    /// `time,power_w<=200` (the fastest under 200 W), `energy_j,time<=1.05x` (the least energy
    /// within 5% of the fastest).
    pub fn parse(text: &str) -> Result<Preference, String> {
        let mut parts = text.split(',').map(str::trim);
        let best_by = parts.next().unwrap_or_default();
        if best_by.is_empty() || best_by.contains(['<', '>', '=']) {
            return Err(format!(
                "preference `{text}`: first the objective to do best at, then limits: `time,power_w<=200`"
            ));
        }
        let limits = parts
            .map(|limit| {
                let (metric, at_most, bound) = if let Some((m, b)) = limit.split_once("<=") {
                    (m, true, b)
                } else if let Some((m, b)) = limit.split_once(">=") {
                    (m, false, b)
                } else {
                    return Err(format!(
                        "preference `{text}`: limit `{limit}` is not NAME<=VALUE or NAME>=VALUE"
                    ));
                };
                let bound = bound.trim();
                let (number, of_best) = match bound.strip_suffix('x') {
                    Some(factor) => (factor, true),
                    None => (bound, false),
                };
                let bound: f64 = number.trim().parse().ok().filter(|b: &f64| b.is_finite()).ok_or_else(|| {
                    format!("preference `{text}`: `{bound}` is not a number (or a factor such as 1.05x)")
                })?;
                Ok(Limit {
                    metric: metric.trim().to_string(),
                    at_most,
                    bound,
                    of_best,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Preference {
            best_by: best_by.to_string(),
            limits,
        })
    }
}

impl std::fmt::Display for Preference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.best_by)?;
        for l in &self.limits {
            let op = if l.at_most { "<=" } else { ">=" };
            let x = if l.of_best { "x" } else { "" };
            write!(f, ",{}{op}{}{x}", l.metric, l.bound)?;
        }
        Ok(())
    }
}

/// Why no configuration could be picked (the program keeps its own defaults).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PickError(pub String);

/// A kernel's wisdom, ready to answer.
pub struct Picker {
    wisdom: KernelWisdom,
    spec_path: PathBuf,
    /// Learnt at the first prediction (a program that is only ever answered `exact` or
    /// `nearest` never pays for it).
    model: std::sync::OnceLock<Option<Model>>,
    answers: Mutex<Answers>,
}

/// The most answers a picker remembers.
pub const MAX_ANSWERS: usize = 4096;
/// The most bytes of questions (device and constants) a picker remembers answers for.
pub const MAX_ANSWER_BYTES: usize = 4 << 20;

/// Answers by question, within [`MAX_ANSWERS`] and [`MAX_ANSWER_BYTES`].
#[derive(Default)]
struct Answers {
    by_question: HashMap<String, Result<Pick, PickError>>,
    bytes: usize,
}

impl Answers {
    fn keep(&mut self, question: String, answer: Result<Pick, PickError>) {
        if self.by_question.len() >= MAX_ANSWERS || self.bytes + question.len() > MAX_ANSWER_BYTES {
            self.by_question.clear();
            self.bytes = 0;
        }
        if question.len() <= MAX_ANSWER_BYTES {
            self.bytes += question.len();
            self.by_question.insert(question, answer);
        }
    }
}

/// The learnt part: a tree over the entries' features, and the features themselves.
struct Model {
    tree: Option<Classifier>,
    /// The numeric constants used as features, in order.
    sizes: Vec<String>,
    /// Each entry's features.
    rows: Vec<Vec<f64>>,
    /// Each feature's standard deviation over the entries (0: the feature is left out of
    /// distances).
    spread: Vec<f64>,
}

impl Picker {
    /// Checks `wisdom`'s spec (from file `path`, for messages) and learns its model.
    pub fn new(wisdom: &KernelWisdom, path: &str) -> Result<Picker, WisdomError> {
        let spec_path = spec_path(wisdom, path);
        Spec::parse(&wisdom.spec, &spec_path).map_err(|e| WisdomError::Kernel {
            path: path.to_string(),
            kernel: wisdom.kernel.clone(),
            message: format!("its spec: {e}"),
        })?;
        Ok(Picker {
            model: std::sync::OnceLock::new(),
            wisdom: wisdom.clone(),
            spec_path,
            answers: Mutex::new(Answers::default()),
        })
    }

    /// The configuration for `device` at `constants` (those of the spec not given keep the
    /// spec's values); see the module's documentation.
    pub fn pick(&self, device: &DeviceProfile, constants: &Constants) -> Result<Pick, PickError> {
        self.pick_preferring(device, constants, None)
    }

    /// [`Picker::pick`], from the tuned front by `prefer` where given.
    pub fn pick_preferring(
        &self,
        device: &DeviceProfile,
        constants: &Constants,
        prefer: Option<&Preference>,
    ) -> Result<Pick, PickError> {
        let key = format!(
            "{}\0{}\0{}\0{}\0{}\0{}",
            device.name,
            device.vendor,
            device.device_type,
            device.compute_units,
            constants_key(constants),
            prefer.map_or(String::new(), ToString::to_string)
        );
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(answer) = answers.by_question.get(&key) {
            return answer.clone();
        }
        let answer = match prefer {
            Some(p) => self.choose_from_front(device, constants, p),
            None => self.choose(device, constants),
        };
        answers.keep(key, answer.clone());
        answer
    }

    /// How many answers are remembered, and the bytes of their questions.
    pub fn remembered(&self) -> (usize, usize) {
        let answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        (answers.by_question.len(), answers.bytes)
    }

    /// The configuration on the exact (else the nearest tuned size's) entry's front that
    /// `prefer` chooses, among those valid here.
    fn choose_from_front(
        &self,
        device: &DeviceProfile,
        given: &Constants,
        prefer: &Preference,
    ) -> Result<Pick, PickError> {
        let kernel = &self.wisdom.kernel;
        let objectives: Vec<&crate::ObjectiveInfo> = std::iter::once(&self.wisdom.objective)
            .chain(&self.wisdom.more_objectives)
            .collect();
        if objectives.len() < 2 {
            return Err(PickError(format!(
                "kernel `{kernel}` was tuned for one objective ({}): a preference picks from the front of a campaign of several (`ndtune tune --objective time,power_w`)",
                self.wisdom.objective.metric
            )));
        }
        let index = |metric: &str| {
            objectives
                .iter()
                .position(|o| o.metric == metric)
                .ok_or_else(|| {
                    let names: Vec<&str> = objectives.iter().map(|o| o.metric.as_str()).collect();
                    PickError(format!(
                    "preference `{prefer}`: `{metric}` is no objective of kernel `{kernel}` ({})",
                    names.join(", ")
                ))
                })
        };
        let by = index(&prefer.best_by)?;
        let limits = prefer
            .limits
            .iter()
            .map(|l| Ok((index(&l.metric)?, l)))
            .collect::<Result<Vec<_>, PickError>>()?;
        let (spec, space) = self.space_here(device, given)?;
        let constants = &spec.problem.constants;
        let valid = |config: &Config| spec.codec.point(config).ok().filter(|p| space.contains(p));
        let mut tuned: Vec<(How, f64, &Entry)> = self
            .wisdom
            .entries
            .iter()
            .filter(|e| same_model(&e.device, device) && !e.front.is_empty())
            .map(|e| {
                let d = size_distance(constants, &e.constants);
                let how = if e.constants == *constants {
                    How::Exact
                } else {
                    How::Nearest
                };
                (how, d, e)
            })
            .filter(|(_, d, _)| d.is_finite())
            .collect();
        tuned.sort_by(|a, b| a.1.total_cmp(&b.1));
        let Some(&(how, _, e)) = tuned.first() else {
            return Err(PickError(format!(
                "kernel `{kernel}`: no front was tuned on a {} to pick from by `{prefer}`",
                device.name
            )));
        };
        let members: Vec<(&crate::FrontMember, Vec<i64>)> = e
            .front
            .iter()
            .filter_map(|m| Some((m, valid(&m.config)?)))
            .collect();
        let better = |k: usize, a: f64, b: f64| {
            if objectives[k].higher_is_better {
                a > b
            } else {
                a < b
            }
        };
        let best_of = |k: usize| {
            members
                .iter()
                .map(|(m, _)| m.values[k])
                .reduce(|a, b| if better(k, a, b) { a } else { b })
        };
        let bound = |k: usize, l: &Limit| {
            if l.of_best {
                best_of(k).map(|b| b * l.bound)
            } else {
                Some(l.bound)
            }
        };
        let within = |m: &crate::FrontMember| {
            limits.iter().all(|&(k, l)| {
                bound(k, l).is_some_and(|b| {
                    if l.at_most {
                        m.values[k] <= b
                    } else {
                        m.values[k] >= b
                    }
                })
            })
        };
        let chosen = members.iter().filter(|(m, _)| within(m)).reduce(|a, b| {
            if better(by, b.0.values[by], a.0.values[by]) {
                b
            } else {
                a
            }
        });
        let Some((m, point)) = chosen else {
            let least: Vec<String> = limits
                .iter()
                .map(|&(k, l)| {
                    let closest = members.iter().map(|(m, _)| m.values[k]).reduce(|a, b| {
                        if (a < b) == l.at_most {
                            a
                        } else {
                            b
                        }
                    });
                    format!(
                        "{} {} on it",
                        if l.at_most { "the least" } else { "the most" },
                        closest.map_or("none valid".into(), |v| format!("{} is {v:.4}", l.metric))
                    )
                })
                .collect();
            return Err(PickError(format!(
                "kernel `{kernel}`: no configuration on the front tuned on {} at {} ({} of them valid here) is within `{prefer}`: {}",
                e.device.name,
                show(&e.constants),
                members.len(),
                least.join("; ")
            )));
        };
        let values: Vec<String> = objectives
            .iter()
            .zip(&m.values)
            .map(|(o, v)| format!("{} {v:.4}", o.metric))
            .collect();
        let reason = format!(
            "by `{prefer}` from the front of {} configurations tuned on {} at {}: {}",
            e.front.len(),
            e.device.name,
            show(&e.constants),
            values.join(", ")
        );
        self.answer(&spec, how, m.config.clone(), point.clone(), reason)
            .map(|p| Pick {
                tuned_objective: Some(m.values[0]),
                tuned_constants: Some(e.constants.clone()),
                ..p
            })
    }

    /// The wisdom's spec at `given` constants, and its space valid on `device`.
    fn space_here(
        &self,
        device: &DeviceProfile,
        given: &Constants,
    ) -> Result<(Spec, ValidSpace), PickError> {
        let kernel = &self.wisdom.kernel;
        let spec = Spec::parse_with(&self.wisdom.spec, &self.spec_path, given)
            .map_err(|e| PickError(format!("kernel `{kernel}`: {e}")))?;
        let pruning = spec
            .problem
            .prune(&[Target::from_profile(&device.name, device)])
            .map_err(|e| PickError(format!("kernel `{kernel}`: {}", spec.locate(&e))))?;
        Ok((spec, ValidSpace::new(pruning.space)))
    }

    fn choose(&self, device: &DeviceProfile, given: &Constants) -> Result<Pick, PickError> {
        let kernel = &self.wisdom.kernel;
        let (spec, space) = self.space_here(device, given)?;
        let constants = &spec.problem.constants;
        let valid = |config: &Config| spec.codec.point(config).ok().filter(|p| space.contains(p));
        let shown = show(given);
        let entries = &self.wisdom.entries;
        let here: Vec<&Entry> = entries
            .iter()
            .filter(|e| same_model(&e.device, device))
            .collect();
        let found = |how, e: &Entry, config: &Config, point: Vec<i64>, reason: String| {
            self.answer(&spec, how, config.clone(), point, reason)
                .map(|p| Pick {
                    tuned_objective: Some(e.objective),
                    tuned_constants: Some(e.constants.clone()),
                    ..p
                })
        };

        // 1. Exact: of several drivers, the best.
        let mut exact: Vec<&Entry> = here
            .iter()
            .copied()
            .filter(|e| e.constants == *constants)
            .collect();
        let higher = self.wisdom.objective.higher_is_better;
        exact.sort_by(|a, b| {
            let o = a.objective.total_cmp(&b.objective);
            if higher {
                o.reverse()
            } else {
                o
            }
        });
        for e in &exact {
            if let Some(point) = valid(&e.config) {
                let reason = format!("tuned on {} at {shown}", e.device.name);
                return found(How::Exact, e, &e.config, point, reason);
            }
        }

        // 2. Nearest tuned sizes of this device model: the configuration that does best at the
        //    two that bracket these constants, else the nearest's best valid here.
        let mut near: Vec<(f64, &Entry)> = here
            .iter()
            .map(|e| (size_distance(constants, &e.constants), *e))
            .filter(|(d, _)| d.is_finite())
            .collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((a, b, ranked)) = self.between(constants, &near, &valid) {
            let reason = format!(
                "between the tuned sizes {} (distance {:.2}) and {} (distance {:.2}) on {}: {:.3} and {:.3} of their bests",
                show(&differing(&a.1.constants, constants)),
                a.0,
                show(&differing(&b.1.constants, constants)),
                b.0,
                a.1.device.name,
                ranked.1,
                ranked.2
            );
            let point = valid(&ranked.0).expect("checked by between");
            return self
                .answer(&spec, How::Nearest, ranked.0, point, reason)
                .map(|p| Pick {
                    tuned_objective: Some(a.1.objective),
                    tuned_constants: Some(a.1.constants.clone()),
                    ..p
                });
        }
        for (d, e) in &near {
            let tried = std::iter::once(&e.config).chain(e.ranked.iter().map(|r| &r.config));
            for (rank, config) in tried.enumerate() {
                if let Some(point) = valid(config) {
                    let which = if rank == 0 {
                        "its best"
                    } else {
                        "its best valid here"
                    };
                    let reason = format!(
                        "tuned on {} at {} (distance {d:.2}), {which} at {shown}",
                        e.device.name,
                        show(&differing(&e.constants, constants))
                    );
                    return found(How::Nearest, e, config, point, reason);
                }
            }
        }

        // 3. Predicted.
        let Some(model) = self.model.get_or_init(|| Model::learn(entries)) else {
            return Err(PickError(format!(
                "kernel `{kernel}`: the wisdom holds no tuned entry to predict from"
            )));
        };
        let row = model.features(device, constants);
        let predicted = model
            .tree
            .as_ref()
            .and_then(|t| t.predict(&row).ok())
            .and_then(|class| entries.get(class));
        if let Some(e) = predicted {
            if let Some(point) = valid(&e.config) {
                let reason = format!(
                    "a decision tree over {} tuned entries (device and size features) chose the configuration tuned on {} at {}",
                    entries.len(),
                    e.device.name,
                    show(&e.constants)
                );
                return self.answer(&spec, How::Predicted, e.config.clone(), point, reason);
            }
        }
        let mut by_features: Vec<(f64, &Entry)> = model
            .rows
            .iter()
            .zip(entries)
            .map(|(r, e)| (model.distance(r, &row), e))
            .collect();
        by_features.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, e) in &by_features {
            if let Some(point) = valid(&e.config) {
                let reason = format!(
                    "the tuned entry nearest in device and size features ({} at {}) is valid here",
                    e.device.name,
                    show(&e.constants)
                );
                return self.answer(&spec, How::Predicted, e.config.clone(), point, reason);
            }
        }
        let target = predicted.unwrap_or(by_features[0].1);
        let wanted = spec.codec.point(&target.config).ok();
        let closest = space.iter_from(0).take(SCAN_LIMIT as usize).min_by(|a, b| {
            let d = |p: &[i64]| {
                wanted
                    .as_deref()
                    .map_or(0.0, |w| param_distance(&spec, p, w))
            };
            d(a).total_cmp(&d(b))
        });
        match closest {
            Some(point) => {
                let config = spec.codec.config(&point);
                let reason = format!(
                    "no tuned configuration is valid here; the valid one closest to {}",
                    show(&target.config)
                );
                self.answer(&spec, How::Predicted, config, point, reason)
            }
            None => Err(PickError(format!(
                "kernel `{kernel}`: no configuration is valid on {} at {shown}",
                device.name
            ))),
        }
    }

    /// Of the entries `near` (distance, entry; nearest first), the nearest and the nearest on
    /// the other side of `constants` (none: `None`), and the configuration measured
    /// at both and valid here that does best at both: the most weighted mean of the logarithm
    /// of its fraction of each one's best, the nearer weighing more (linear interpolation in
    /// `slog2` of the sizes). With that configuration, its fractions of the two bests.
    #[allow(clippy::type_complexity)]
    fn between<'e>(
        &self,
        constants: &Constants,
        near: &[(f64, &'e Entry)],
        valid: &dyn Fn(&Config) -> Option<Vec<i64>>,
    ) -> Option<((f64, &'e Entry), (f64, &'e Entry), (Config, f64, f64))> {
        let (&(da, a), rest) = near.split_first()?;
        let towards = |e: &Entry| offsets(constants, &e.constants);
        let to_a = towards(a);
        let others: Vec<&(f64, &Entry)> = rest
            .iter()
            .filter(|(_, e)| e.constants != a.constants)
            .collect();
        let &&(db, b) = others.iter().find(|(_, e)| dot(&to_a, &towards(e)) < 0.0)?;
        let (wa, wb) = if da + db > 0.0 {
            (db / (da + db), da / (da + db))
        } else {
            (0.5, 0.5)
        };
        let higher = self.wisdom.objective.higher_is_better;
        let fraction = |best: f64, value: f64| if higher { value / best } else { best / value };
        let at_b: HashMap<String, f64> = b
            .ranked
            .iter()
            .map(|r| (ndtune_core::config_key(&r.config), r.objective))
            .collect();
        let mut chosen: Option<(f64, Config, f64, f64)> = None;
        for r in &a.ranked {
            let Some(&vb) = at_b.get(&ndtune_core::config_key(&r.config)) else {
                continue;
            };
            let (fa, fb) = (
                fraction(a.objective, r.objective),
                fraction(b.objective, vb),
            );
            if !(fa > 0.0 && fb > 0.0) || valid(&r.config).is_none() {
                continue;
            }
            let score = wa * fa.ln() + wb * fb.ln();
            if chosen.as_ref().is_none_or(|c| score > c.0) {
                chosen = Some((score, r.config.clone(), fa, fb));
            }
        }
        let (_, config, fa, fb) = chosen?;
        Some(((da, a), (db, b), (config, fa, fb)))
    }

    /// A pick of `config` (`point` in the spec's codec), with its build options and sizes.
    fn answer(
        &self,
        spec: &Spec,
        how: How,
        config: Config,
        point: Vec<i64>,
        reason: String,
    ) -> Result<Pick, PickError> {
        let defines = &self.wisdom.defines;
        let build_options =
            spec.build_options_with(&|n| defines.iter().any(|d| d == n), "", &point);
        let (global, local) = match &spec.problem.launch {
            Some(launch) => (
                sizes(spec, &launch.global, &point, "global")?,
                sizes(spec, &launch.local, &point, "local")?,
            ),
            None => (Vec::new(), Vec::new()),
        };
        Ok(Pick {
            how,
            config,
            build_options,
            global,
            local,
            tuned_objective: None,
            tuned_constants: None,
            reason,
        })
    }
}

/// `[launch] global` or `local` of `point`.
fn sizes(
    spec: &Spec,
    exprs: &[String],
    point: &[i64],
    what: &str,
) -> Result<Vec<usize>, PickError> {
    exprs
        .iter()
        .map(|src| {
            let node = spec
                .problem
                .int_expr(src)
                .map_err(|e| PickError(format!("[launch] {what} `{src}`: {e}")))?;
            node.eval(point)
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| {
                    PickError(format!(
                        "[launch] {what} `{src}` is no size for {:?}",
                        spec.codec.config(point)
                    ))
                })
        })
        .collect()
}

impl Model {
    fn learn(entries: &[Entry]) -> Option<Model> {
        let first = entries.first()?;
        let sizes: Vec<String> = first
            .constants
            .iter()
            .filter(|(n, v)| {
                v.as_f64().is_some()
                    && entries
                        .iter()
                        .all(|e| e.constants.get(*n).and_then(Value::as_f64).is_some())
            })
            .map(|(n, _)| n.clone())
            .collect();
        let mut model = Model {
            tree: None,
            sizes,
            rows: Vec::new(),
            spread: Vec::new(),
        };
        model.rows = entries
            .iter()
            .map(|e| model.features(&e.device, &e.constants))
            .collect();
        let width = model.rows[0].len();
        let n = model.rows.len() as f64;
        model.spread = (0..width)
            .map(|j| {
                let mean = model.rows.iter().map(|r| r[j]).sum::<f64>() / n;
                (model
                    .rows
                    .iter()
                    .map(|r| (r[j] - mean).powi(2))
                    .sum::<f64>()
                    / n)
                    .sqrt()
            })
            .collect();
        let labels: Vec<usize> = (0..entries.len())
            .map(|i| {
                // Entries of one configuration are one class: the first of them.
                entries
                    .iter()
                    .position(|e| e.config == entries[i].config)
                    .expect("the entry itself")
            })
            .collect();
        model.tree = Classifier::fit(ClassifierKind::DecisionTree, &model.rows, &labels, 0).ok();
        Some(model)
    }

    fn features(&self, device: &DeviceProfile, constants: &Constants) -> Vec<f64> {
        let mut row: Vec<f64> = device_features(device)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        row.extend(
            self.sizes
                .iter()
                .map(|n| constants.get(n).and_then(Value::as_f64).map_or(0.0, slog2)),
        );
        row
    }

    /// The standardised Euclidean distance of two feature rows.
    fn distance(&self, a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .zip(&self.spread)
            .filter(|(_, s)| **s > 0.0)
            .map(|((x, y), s)| ((x - y) / s).powi(2))
            .sum::<f64>()
            .sqrt()
    }
}

/// `sign(v) * log2(1 + |v|)`.
fn slog2(v: f64) -> f64 {
    v.signum() * v.abs().ln_1p() / std::f64::consts::LN_2
}

/// The distance of two sets of constants (module documentation); infinite where a text
/// constant differs or a name is missing from either.
fn size_distance(a: &Constants, b: &Constants) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    let mut sum = 0.0;
    for (name, x) in a {
        let Some(y) = b.get(name) else {
            return f64::INFINITY;
        };
        match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => sum += (slog2(x) - slog2(y)).powi(2),
            _ if x == y => {}
            _ => return f64::INFINITY,
        }
    }
    sum.sqrt()
}

/// The distance of two points in `slog2` of each parameter's value (text values: 0 or 1).
fn param_distance(spec: &Spec, a: &[i64], b: &[i64]) -> f64 {
    (0..a.len())
        .map(|i| {
            match (
                spec.codec.value(i, a[i]).as_f64(),
                spec.codec.value(i, b[i]).as_f64(),
            ) {
                (Some(x), Some(y)) => (slog2(x) - slog2(y)).abs(),
                _ => f64::from(u8::from(a[i] != b[i])),
            }
        })
        .sum()
}

/// `slog2` of each numeric constant of `to` less that of `from` (0 for the others).
fn offsets(from: &Constants, to: &Constants) -> Vec<f64> {
    from.iter()
        .map(
            |(name, x)| match (x.as_f64(), to.get(name).and_then(Value::as_f64)) {
                (Some(x), Some(y)) => slog2(y) - slog2(x),
                _ => 0.0,
            },
        )
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The constants of `a` whose values differ from `b`'s (all of them where none do).
fn differing(a: &Constants, b: &Constants) -> Constants {
    let d: Constants = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if d.is_empty() {
        a.clone()
    } else {
        d
    }
}

/// `N=768 T=float`, or `its spec's constants` where none was given.
fn show(c: &BTreeMap<String, Value>) -> String {
    if c.is_empty() {
        return "its spec's constants".into();
    }
    constants_text(c)
}

/// Constants as `NAME=VALUE`, space-separated, in name order (`N=768 T=float`).
pub fn constants_text(c: &BTreeMap<String, Value>) -> String {
    c.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Pick {
    /// The pick as `ndtune pick` prints it for `kernel` on `device` at `constants` (empty: the
    /// spec's): how and why, the configuration, its build options and launch sizes, and the
    /// tuned value it comes from (left out for a pick from a front, `preferred`).
    pub fn text(
        &self,
        kernel: &KernelWisdom,
        device: &str,
        constants: &Constants,
        preferred: bool,
    ) -> String {
        let pick = self;
        let mut out = String::new();
        let sizes = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        writeln!(
            out,
            "kernel `{}` on {} at {}: {}",
            kernel.kernel,
            device,
            if constants.is_empty() {
                "the spec's constants".to_string()
            } else {
                constants_text(constants)
            },
            pick.how.word()
        )
        .unwrap();
        writeln!(out, "  why            {}", pick.reason).unwrap();
        writeln!(out, "  config         {}", constants_text(&pick.config)).unwrap();
        writeln!(out, "  build options  {}", pick.build_options).unwrap();
        if !pick.global.is_empty() {
            writeln!(out, "  global         {}", sizes(&pick.global)).unwrap();
            writeln!(out, "  local          {}", sizes(&pick.local)).unwrap();
        }
        if let (Some(v), Some(at), false) = (pick.tuned_objective, &pick.tuned_constants, preferred)
        {
            let unit = kernel.objective.unit.as_deref().unwrap_or("");
            writeln!(
                out,
                "  tuned {:<8} {v} {unit} (at {})",
                kernel.objective.metric,
                constants_text(at)
            )
            .unwrap();
        }
        out
    }
}
