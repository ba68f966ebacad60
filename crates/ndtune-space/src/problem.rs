//! A tuning problem as a spec states it (parameters, constants, application constraints, launch)
//! and its pruning for one device, several devices, or none.

use crate::domain::Domain;
use crate::expr::{Dialect, Expr, ExprError};
use crate::platform::{self, Launch, Limits, Model, Rule};
use crate::resolve::{resolve, Node, Scope, Type};
use crate::space::{Constraint, Param, Space, Stats};
use ndtune_core::text::is_identifier;
use ndtune_core::Constants;
use std::collections::BTreeMap;
use std::fmt;

/// A tunable parameter and its declared domain.
#[derive(Debug, Clone)]
pub struct ParamDecl {
    pub name: String,
    pub domain: Domain,
}

/// `[launch]` as written: expression sources.
#[derive(Debug, Clone, Default)]
pub struct LaunchDecl {
    pub global: Vec<String>,
    pub local: Vec<String>,
    pub local_mem: Option<String>,
}

/// The device-independent description of a space.
#[derive(Debug, Clone, Default)]
pub struct Problem {
    pub params: Vec<ParamDecl>,
    pub constants: Constants,
    /// Application constraints (expression sources, C dialect).
    pub constraints: Vec<String>,
    /// Application constraints written as Kernel Tuner restrictions (Python dialect).
    pub restrictions: Vec<String>,
    pub launch: Option<LaunchDecl>,
    /// The platform model that prunes the launch (`[space] platform`).
    pub platform: Model,
}

/// One device a problem is pruned for.
#[derive(Debug, Clone)]
pub struct Target {
    /// Short name for reports (`hd4600`, `0: pthread-haswell`).
    pub label: String,
    /// `device.*` properties.
    pub properties: BTreeMap<String, i64>,
    pub limits: Limits,
}

/// Where in a problem an error is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Location {
    Param(String),
    Constraint(usize),
    Restriction(usize),
    Global(usize),
    Local(usize),
    LocalMem,
    Launch,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Param(p) => write!(f, "[params] {p}"),
            Location::Constraint(i) => write!(f, "[space] constraints[{i}]"),
            Location::Restriction(i) => write!(f, "[space] restrictions[{i}]"),
            Location::Global(d) => write!(f, "[launch] global[{d}]"),
            Location::Local(d) => write!(f, "[launch] local[{d}]"),
            Location::LocalMem => write!(f, "[launch] local_mem"),
            Location::Launch => write!(f, "[launch]"),
        }
    }
}

/// An error in a problem, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProblemError {
    pub location: Location,
    pub message: String,
}

impl fmt::Display for ProblemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for ProblemError {}

/// What a constraint of a pruned space is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The application constraint with this index (constraints first, then restrictions).
    User(usize),
    /// A rule of the platform model.
    Platform(Rule),
}

/// The result of pruning a problem.
pub struct Pruning {
    pub space: Space,
    /// Configurations within every device's per-dimension work-item limits: the paper's "without
    /// pruning" (Erdem Table 1).
    pub bounded: u128,
    pub stats: Stats,
    /// Per constraint of `space`: its origin and which target it belongs to (None: all).
    pub origins: Vec<(Origin, Option<usize>)>,
    params: Vec<Param>,
    constraints: Vec<Constraint>,
}

impl Pruning {
    /// Configurations that would remain without constraint `c`: how much it alone is to blame.
    pub fn count_without(&self, c: usize) -> u128 {
        let rest = self
            .constraints
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != c)
            .map(|(_, k)| k.clone())
            .collect();
        Space::new(self.params.clone(), rest).count()
    }

    /// How to keep what the platform model removed for performance or by the shape of the grid:
    /// configurations eq. 2 removed (a local size that does not divide the global size) are kept
    /// by a rounded-up global size, those eq. 3 removed (fewer work-groups than compute units) by
    /// the `legal` model. One line per rule that removed any, with how many; `launch` is the
    /// problem's.
    pub fn hints(&self, launch: &LaunchDecl) -> Vec<String> {
        let mut divides = [0u128; 3];
        let mut min_groups = 0u128;
        for ((origin, _), removed) in self.origins.iter().zip(&self.stats.removed) {
            match origin {
                Origin::Platform(Rule::Divides(d)) => divides[*d] += removed,
                Origin::Platform(Rule::MinWorkGroups) => min_groups += removed,
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (d, &removed) in divides.iter().enumerate().filter(|(_, r)| **r > 0) {
            let rounded: Vec<String> = launch
                .global
                .iter()
                .zip(&launch.local)
                .enumerate()
                .map(|(i, (g, l))| match i == d {
                    true => format!("\"{}\"", rounded_up(g, l)),
                    false => format!("\"{g}\""),
                })
                .collect();
            out.push(format!(
                "eq. 2 removed {removed} configurations whose local size `{}` does not divide the global size `{}`; \
                 a rounded-up grid keeps them: global = [{}], with the work-items past `{}` doing nothing \
                 in the kernel (docs/spec.md, \"A rounded-up grid\")",
                launch.local[d],
                launch.global[d],
                rounded.join(", "),
                launch.global[d],
            ));
        }
        if min_groups > 0 {
            out.push(format!(
                "eq. 3 removed {min_groups} configurations with fewer work-groups than the device has \
                 compute units (a performance heuristic, not a limit); [space] platform = \"legal\" keeps them"
            ));
        }
        out
    }

    /// Explains an empty space: each constraint that removed configurations (with the values
    /// of the constants it names: a constant is often the culprit), with what would be left
    /// without it alone.
    pub fn emptied_by(&self, problem: &Problem) -> Vec<(String, u128, u128)> {
        self.stats
            .removed
            .iter()
            .enumerate()
            .filter(|(_, r)| **r > 0)
            .map(|(c, r)| {
                let label = &self.space.labels()[c];
                let named = problem.constants_in(label);
                (format!("{label}{named}"), *r, self.count_without(c))
            })
            .collect()
    }
}

impl Problem {
    /// The scope of expressions over `params` (the resolved parameters: their codings).
    fn scope_of(&self, params: &[Param], device: Option<&BTreeMap<String, i64>>) -> Scope {
        Scope {
            params: params.iter().map(|p| p.name.clone()).collect(),
            codings: params.iter().map(|p| p.coding.clone()).collect(),
            constants: self.constants.clone(),
            device: device.cloned(),
        }
    }

    /// The scope of expressions, with the parameters resolved.
    pub fn scope(&self, device: Option<&BTreeMap<String, i64>>) -> Result<Scope, ProblemError> {
        Ok(self.scope_of(&self.resolve_params()?, device))
    }

    /// Resolves every domain.
    pub fn resolve_params(&self) -> Result<Vec<Param>, ProblemError> {
        let scope = Scope {
            constants: self.constants.clone(),
            ..Scope::default()
        };
        let mut seen = std::collections::HashSet::new();
        self.params
            .iter()
            .map(|p| {
                let err = |message: String| ProblemError {
                    location: Location::Param(p.name.clone()),
                    message,
                };
                if !seen.insert(&p.name) {
                    return Err(err("declared twice".into()));
                }
                if self.constants.contains_key(&p.name) {
                    return Err(err("is both a parameter and a constant".into()));
                }
                if !is_identifier(&p.name) {
                    return Err(err(
                        "is not a valid name (letters, digits and `_`, not starting with a digit)"
                            .into(),
                    ));
                }
                let (values, coding) = p.domain.values(&scope).map_err(err)?;
                Ok(Param {
                    name: p.name.clone(),
                    values,
                    coding,
                })
            })
            .collect()
    }

    /// Parses and resolves the launch expressions (so their errors point into their own source).
    fn launch(&self, scope: &Scope) -> Result<Option<Launch>, ProblemError> {
        let Some(l) = &self.launch else {
            return Ok(None);
        };
        let dims = l.global.len();
        if !(1..=3).contains(&dims) || l.local.len() != dims {
            return Err(ProblemError {
                location: Location::Launch,
                message: format!(
                    "global has {} and local {} dimensions; OpenCL launches have 1 to 3, the same for both",
                    dims,
                    l.local.len()
                ),
            });
        }
        // A size that is the same for every configuration must make sense by itself: a
        // non-positive global or local size (or negative local memory) is the spec's error, not
        // a reason to empty the space in silence.
        let parse = |src: &str, location: Location, least: i64| -> Result<Expr, ProblemError> {
            let err = |message: String| ProblemError {
                location: location.clone(),
                message,
            };
            let e = Expr::parse(src).map_err(|e| err(e.to_string()))?;
            let node = resolve(&e, src, scope, Type::Int).map_err(|e| err(e.to_string()))?;
            if let Node::Const(v) = node {
                if v < least {
                    let what = if least == 0 { "local memory" } else { "a size" };
                    return Err(err(format!(
                        "`{src}` is {v}{}: {what} must be at least {least}",
                        self.constants_in(src)
                    )));
                }
            }
            Ok(e)
        };
        Ok(Some(Launch {
            global: (0..dims)
                .map(|d| parse(&l.global[d], Location::Global(d), 1))
                .collect::<Result<_, _>>()?,
            local: (0..dims)
                .map(|d| parse(&l.local[d], Location::Local(d), 1))
                .collect::<Result<_, _>>()?,
            local_mem: l
                .local_mem
                .as_deref()
                .map(|s| parse(s, Location::LocalMem, 0))
                .transpose()?,
        }))
    }

    /// ` (N = -5, M = 3)`: the constants a text names, with their values; nothing where it
    /// names none.
    pub fn constants_in(&self, text: &str) -> String {
        let mut seen: Vec<String> = Vec::new();
        let words = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'));
        for n in words {
            if let Some(v) = self.constants.get(n) {
                let shown = format!("{n} = {v}");
                if !seen.contains(&shown) {
                    seen.push(shown);
                }
            }
        }
        if seen.is_empty() {
            String::new()
        } else {
            format!(" ({})", seen.join(", "))
        }
    }

    /// Every application constraint: the constraints, then the restrictions, each with its
    /// source and location.
    pub fn user_constraints(&self) -> impl Iterator<Item = (&str, Dialect, Location)> {
        let constraints = self
            .constraints
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), Dialect::C, Location::Constraint(i)));
        let restrictions = self
            .restrictions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), Dialect::Python, Location::Restriction(i)));
        constraints.chain(restrictions)
    }

    /// Parses every application constraint (no name resolution: see [`Problem::prune`]), with
    /// its source and location.
    fn parsed_constraints(&self) -> Result<Vec<(Expr, &str, Location)>, ProblemError> {
        self.user_constraints()
            .map(|(src, dialect, location)| {
                Expr::parse_in(src, dialect)
                    .map(|e| (e, src, location.clone()))
                    .map_err(|e| ProblemError {
                        location,
                        message: e.to_string(),
                    })
            })
            .collect()
    }

    /// Prunes for every target at once: the configurations valid on all of them. With no target,
    /// only the application constraints apply (and they may not name `device.*`).
    pub fn prune(&self, targets: &[Target]) -> Result<Pruning, ProblemError> {
        let params = self.resolve_params()?;
        let user = self.parsed_constraints()?;
        let mut constraints: Vec<Constraint> = Vec::new();
        let mut origins = Vec::new();
        let mut bounds: Vec<Constraint> = Vec::new();
        let device_scopes: Vec<Option<&Target>> = if targets.is_empty() {
            vec![None]
        } else {
            targets.iter().map(Some).collect()
        };
        let several = targets.len() > 1;
        for (i, (expr, src, location)) in user.iter().enumerate() {
            let per_device = expr.names().iter().any(|(n, _)| n.starts_with("device."));
            let instances: &[Option<&Target>] = if per_device { &device_scopes } else { &[None] };
            for (t, target) in instances.iter().enumerate() {
                let scope = self.scope_of(&params, target.map(|t| &t.properties));
                let node = resolve(expr, src, &scope, Type::Bool).map_err(|e| ProblemError {
                    location: location.clone(),
                    message: e.to_string(),
                })?;
                let label = match target {
                    Some(tg) if several && per_device => format!("[{}] {src}", tg.label),
                    _ => src.to_string(),
                };
                constraints.push(Constraint { label, node });
                origins.push((Origin::User(i), target.map(|_| t)));
            }
        }
        let launch = self.launch(&self.scope_of(&params, None))?;
        if let Some(launch) = &launch {
            let scope = self.scope_of(&params, None);
            for (t, target) in targets.iter().enumerate() {
                for (rule, expr) in platform::constraints(launch, &target.limits, self.platform) {
                    let node: Node = resolve(&expr, "", &scope, Type::Bool)
                        .expect("launch expressions were resolved already");
                    let prefix = if several {
                        format!("[{}] ", target.label)
                    } else {
                        String::new()
                    };
                    let c = Constraint {
                        label: format!("{prefix}{}: {expr}", rule.name()),
                        node,
                    };
                    if matches!(rule, Rule::WorkItemLimit(_)) {
                        bounds.push(c.clone());
                    }
                    constraints.push(c);
                    origins.push((Origin::Platform(rule), Some(t)));
                }
            }
        }
        let bounded = Space::new(params.clone(), bounds).count();
        let space = Space::new(params.clone(), constraints.clone());
        let stats = space.stats();
        Ok(Pruning {
            space,
            bounded,
            stats,
            origins,
            params,
            constraints,
        })
    }
}

/// `global` rounded up to a multiple of `local`, as an expression: `(N + WG - 1) / WG * WG`.
fn rounded_up(global: &str, local: &str) -> String {
    let atom = |e: &str| {
        let e = e.trim();
        match e
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            true => e.to_string(),
            false => format!("({e})"),
        }
    };
    let (g, l) = (atom(global), atom(local));
    format!("({g} + {l} - 1) / {l} * {l}")
}

impl Target {
    /// A target from a device profile.
    pub fn from_profile(
        label: impl Into<String>,
        profile: &ndtune_device::DeviceProfile,
    ) -> Target {
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        Target {
            label: label.into(),
            properties: profile
                .properties()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            limits: Limits {
                max_work_group_size: clamp(profile.max_work_group_size),
                max_work_item_sizes: profile
                    .max_work_item_sizes
                    .iter()
                    .map(|&v| clamp(v))
                    .collect(),
                compute_units: clamp(profile.compute_units),
                local_mem_size: clamp(profile.local_mem_size),
            },
        }
    }
}

impl Problem {
    /// Checks every expression (syntax, names, types) without a device: `device.*` names are
    /// checked against the known property names. Domains are resolved too.
    pub fn check(&self) -> Result<(), ProblemError> {
        let params = self.resolve_params()?;
        let any_device: BTreeMap<String, i64> = ndtune_device::PROPERTY_NAMES
            .iter()
            .map(|n| (n.to_string(), 1))
            .collect();
        let scope = self.scope_of(&params, Some(&any_device));
        for (e, src, location) in self.parsed_constraints()? {
            resolve(&e, src, &scope, Type::Bool).map_err(|e| ProblemError {
                location,
                message: e.to_string(),
            })?;
        }
        self.launch(&self.scope_of(&params, None))?;
        Ok(())
    }

    /// Resolves an integer expression over parameters and constants (argument lengths, sizes):
    /// the node reads parameter values in declaration order.
    pub fn int_expr(&self, src: &str) -> Result<Node, ExprError> {
        self.typed_expr(src, Type::Int)
    }

    /// Resolves an expression of type `ty` over parameters and constants (a real context
    /// computes in double precision: see [`crate::resolve`]).
    pub fn typed_expr(&self, src: &str, ty: Type) -> Result<Node, ExprError> {
        let e = Expr::parse(src)?;
        let scope = self
            .scope(None)
            .map_err(|e| ExprError::new(e.to_string(), src, 0..0))?;
        resolve(&e, src, &scope, ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `N` work-items in work-groups of `WG` (1 to 64) on a device of 4 compute units.
    fn problem(n: i64, platform: Model) -> (Problem, Target) {
        let problem = Problem {
            params: vec![ParamDecl {
                name: "WG".into(),
                domain: Domain::Pow2 {
                    start: "1".into(),
                    end: "64".into(),
                },
            }],
            constants: [("N".to_string(), ndtune_core::Value::Int(n))].into(),
            launch: Some(LaunchDecl {
                global: vec!["N".into()],
                local: vec!["WG".into()],
                local_mem: None,
            }),
            platform,
            ..Problem::default()
        };
        let target = Target {
            label: "d".into(),
            properties: BTreeMap::new(),
            limits: Limits {
                max_work_group_size: 1024,
                max_work_item_sizes: vec![1024, 1024, 1024],
                compute_units: 4,
                local_mem_size: 1 << 16,
            },
        };
        (problem, target)
    }

    #[test]
    fn the_legal_model_keeps_what_eq_3_removes_and_hints_say_how() {
        // 64 work-items: work-groups of 32 and 64 leave compute units idle (eq. 3).
        let (p, t) = problem(64, Model::Erdem);
        let erdem = p.prune(std::slice::from_ref(&t)).unwrap();
        assert_eq!(erdem.stats.pruned, 5);
        let hints = erdem.hints(p.launch.as_ref().unwrap());
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(
            hints[0].starts_with("eq. 3 removed 2 configurations")
                && hints[0].contains("platform = \"legal\""),
            "{hints:?}"
        );
        let (p, t) = problem(64, Model::Legal);
        let legal = p.prune(&[t]).unwrap();
        assert_eq!(legal.stats.pruned, 7);
        assert!(legal.hints(p.launch.as_ref().unwrap()).is_empty());
    }

    #[test]
    fn an_eq_2_hint_gives_the_rounded_up_global_size() {
        // 100 work-items: only 1, 2 and 4 divide them.
        let (p, t) = problem(100, Model::Legal);
        let pruning = p.prune(&[t]).unwrap();
        assert_eq!(pruning.stats.pruned, 3);
        let hints = pruning.hints(p.launch.as_ref().unwrap());
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(
            hints[0].starts_with("eq. 2 removed 4 configurations")
                && hints[0].contains(r#"global = ["(N + WG - 1) / WG * WG"]"#),
            "{hints:?}"
        );
        assert_eq!(rounded_up("N / 2", "WG"), "((N / 2) + WG - 1) / WG * WG");
    }
}
