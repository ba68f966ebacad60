//! The platform constraint model of Erdem et al. 2018 §2.1, generated from a spec's `[launch]`
//! and one device's limits.
//!
//! | rule | constraint |
//! |---|---|
//! | work-item limit (per dimension) | `1 <= local_d <= max_work_item_size_d` |
//! | eq. 1 | `local_x * local_y * local_z <= max_work_group_size` |
//! | eq. 2 | `global_d % local_d == 0` |
//! | eq. 3 | `(global_x / local_x) * (global_y / local_y) * ... >= compute_units` |
//! | local memory (eq. 10-11) | `0 <= local_mem <= local_mem_size` |
//!
//! Eq. 3 is a performance heuristic (an idle compute unit), not a limit: it empties the space of
//! a kernel meant to run as one work-group (a reduction's last stage). [`Model::Legal`] keeps
//! only what a device enforces (the work-item and work-group limits, eq. 2's divisibility, local
//! memory); [`Model::Erdem`], the seed's model, is the default.
//!
//! Per-kernel limits (`clGetKernelWorkGroupInfo`) depend on each configuration's own build, so they
//! are not part of this model: the `ndtune` command checks them build by build on live devices.
//!
//! Eq. 3 is typeset in the paper as a *sum* of per-dimension group counts, but its text says the
//! total number of work-groups must be at least the number of compute units: the total is the
//! product, which is what ndtune uses. (With the sum, a 1024x1024 launch of 512x512 groups would
//! count 4 groups as 2 + 2 = 4 by luck, but 1024x1 groups of 1x1024 as 1024 + 1 instead of 1024.)

use crate::expr::{BinOp, Expr};

/// The limits of one device that the platform model uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub max_work_group_size: i64,
    pub max_work_item_sizes: Vec<i64>,
    pub compute_units: i64,
    pub local_mem_size: i64,
}

/// Which platform model prunes a launch (`[space] platform`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Model {
    /// Eq. 1-3 and local memory, as the seed.
    #[default]
    Erdem,
    /// Only what the device enforces: eq. 3 is left out.
    Legal,
}

impl Model {
    pub const ALL: [(&'static str, Model); 2] = [("erdem", Model::Erdem), ("legal", Model::Legal)];

    /// The name a spec gives the model.
    pub fn name(self) -> &'static str {
        match self {
            Model::Erdem => "erdem",
            Model::Legal => "legal",
        }
    }

    /// The model of a spec's name, if any.
    pub fn parse(name: &str) -> Option<Model> {
        Model::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }
}

/// The launch of a kernel: expressions for the global and local size (1 to 3 dimensions, same
/// count) and the bytes of `__local` memory one work-group needs.
#[derive(Debug, Clone)]
pub struct Launch {
    pub global: Vec<Expr>,
    pub local: Vec<Expr>,
    pub local_mem: Option<Expr>,
}

/// Which rule of the platform model a generated constraint is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    WorkItemLimit(usize),
    WorkGroupSize,
    Divides(usize),
    MinWorkGroups,
    LocalMem,
}

impl Rule {
    /// Short name used in reports.
    pub fn name(self) -> String {
        const DIM: [char; 3] = ['x', 'y', 'z'];
        match self {
            Rule::WorkItemLimit(d) => format!("work-item limit {}", DIM[d]),
            Rule::WorkGroupSize => "eq. 1 work-group size".into(),
            Rule::Divides(d) => format!("eq. 2 divides {}", DIM[d]),
            Rule::MinWorkGroups => "eq. 3 work-groups >= compute units".into(),
            Rule::LocalMem => "local memory".into(),
        }
    }
}

fn product(items: impl Iterator<Item = Expr>) -> Expr {
    items
        .reduce(|a, b| Expr::bin(BinOp::Mul, a, b))
        .expect("a launch has at least one dimension")
}

/// The platform model `model` of `launch` on a device with `limits`, one constraint per rule.
pub fn constraints(launch: &Launch, limits: &Limits, model: Model) -> Vec<(Rule, Expr)> {
    let dims = launch.local.len();
    let local = || launch.local.iter().cloned();
    let mut out = Vec::new();
    for (d, l) in launch.local.iter().enumerate() {
        let max = limits.max_work_item_sizes.get(d).copied().unwrap_or(1);
        out.push((
            Rule::WorkItemLimit(d),
            Expr::bin(
                BinOp::And,
                Expr::bin(BinOp::Le, Expr::int(1), l.clone()),
                Expr::bin(BinOp::Le, l.clone(), Expr::int(max)),
            ),
        ));
    }
    out.push((
        Rule::WorkGroupSize,
        Expr::bin(
            BinOp::Le,
            product(local()),
            Expr::int(limits.max_work_group_size),
        ),
    ));
    for d in 0..dims {
        out.push((
            Rule::Divides(d),
            Expr::bin(
                BinOp::Eq,
                Expr::bin(
                    BinOp::Rem,
                    launch.global[d].clone(),
                    launch.local[d].clone(),
                ),
                Expr::int(0),
            ),
        ));
    }
    if model == Model::Erdem {
        let groups = product((0..dims).map(|d| {
            Expr::bin(
                BinOp::Div,
                launch.global[d].clone(),
                launch.local[d].clone(),
            )
        }));
        out.push((
            Rule::MinWorkGroups,
            Expr::bin(BinOp::Ge, groups, Expr::int(limits.compute_units)),
        ));
    }
    if let Some(mem) = &launch.local_mem {
        // Negative bytes are the spec's mistake for that configuration: never "fits".
        out.push((
            Rule::LocalMem,
            Expr::bin(
                BinOp::And,
                Expr::bin(BinOp::Le, Expr::int(0), mem.clone()),
                Expr::bin(BinOp::Le, mem.clone(), Expr::int(limits.local_mem_size)),
            ),
        ));
    }
    out
}
