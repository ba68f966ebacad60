//! Synthetic stencils (the paper's §3.3): a seeded template engine. Each stencil draws a border
//! of 1 to 30 cells per direction, input and output types from {int, float, double}, a padding,
//! and a complexity: `synthetic-a` is light (a handful of neighbour reads in a weighted sum),
//! `synthetic-b` compute-heavy (loops over the border region with many arithmetic and math
//! instructions per read).
//!
//! Every template keeps the device and the host reference in agreement within
//! [`Stencil::tolerance`] for any input:
//! - with `int` output everything is computed in `int`: reads are clamped to [-4096, 4096]
//!   (floating inputs clamped, scaled by 16 and floored, all exact operations), constants are
//!   small and accumulators are reduced modulo a prime, so nothing overflows; divisors are
//!   non-zero constants;
//! - with floating output, constants are binary fractions (exact in float and double), heavy
//!   kernels clamp their reads to [-4, 4], take square roots and powers of arguments that are at
//!   least 0.25, and damp their accumulator geometrically, so values stay bounded and no
//!   operation is undefined.

use crate::codegen::literal;
use crate::{Border, Elem, Kind, Padding, Stencil};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;

/// The largest synthetic border in any direction (Table 2).
const MAX_SYNTHETIC_BORDER: u32 = 30;

/// `count` synthetic stencils from `seed`: the same seed gives the same stencils, and no two
/// have the same border, types and function. Named `synthetic-a-<seed>-<i>` (light) or
/// `synthetic-b-<seed>-<i>` (heavy), `i` counting from 0.
pub fn generate(seed: u64, count: usize) -> Vec<Stencil> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let heavy = rng.random_bool(0.5);
        let mut side = || rng.random_range(1..=MAX_SYNTHETIC_BORDER);
        let border = Border {
            north: side(),
            south: side(),
            east: side(),
            west: side(),
        };
        let input = Elem::ALL[rng.random_range(0..Elem::ALL.len())];
        let output = Elem::ALL[rng.random_range(0..Elem::ALL.len())];
        let padding = if rng.random_bool(0.5) {
            Padding::Nearest
        } else if input == Elem::Int {
            Padding::Constant(f64::from(rng.random_range(-2..=2)))
        } else {
            Padding::Constant(f64::from(rng.random_range(-8..=8)) / 4.0)
        };
        let mut template = Template {
            rng: &mut rng,
            border,
            input,
            work: working_type(input, output),
        };
        let function = if heavy {
            template.heavy()
        } else {
            template.light()
        };
        if !seen.insert((border, input, output, function.clone())) {
            continue;
        }
        let kind = if heavy {
            Kind::SyntheticB
        } else {
            Kind::SyntheticA
        };
        out.push(Stencil {
            name: format!("{}-{seed}-{}", kind.as_str(), out.len()),
            kind,
            border,
            input,
            output,
            padding,
            function,
        });
    }
    out
}

/// The type the function computes in: `int` for `int` output (exact on both sides), `double`
/// when either end is `double`, `float` otherwise.
fn working_type(input: Elem, output: Elem) -> Elem {
    match (input, output) {
        (_, Elem::Int) => Elem::Int,
        (Elem::Double, _) | (_, Elem::Double) => Elem::Double,
        _ => Elem::Float,
    }
}

/// One function being drawn.
struct Template<'a> {
    rng: &'a mut ChaCha8Rng,
    border: Border,
    input: Elem,
    work: Elem,
}

impl Template<'_> {
    /// A literal of the working type.
    fn lit(&self, v: f64) -> String {
        literal(self.work, v)
    }

    /// A binary fraction `k / 16`, `k` in `lo..=hi`: exact in float and double.
    fn frac(&mut self, lo: i32, hi: i32) -> f64 {
        f64::from(self.rng.random_range(lo..=hi)) / 16.0
    }

    /// An `int` literal in `lo..=hi`.
    fn int(&mut self, lo: i32, hi: i32) -> String {
        literal(Elem::Int, f64::from(self.rng.random_range(lo..=hi)))
    }

    /// A row offset inside the border.
    fn row(&mut self) -> i32 {
        self.rng
            .random_range(-(self.border.north as i32)..=self.border.south as i32)
    }

    /// A column offset inside the border.
    fn col(&mut self) -> i32 {
        self.rng
            .random_range(-(self.border.west as i32)..=self.border.east as i32)
    }

    /// `get(dr, dc)` as a value of the working type; an `int` one lies in [-4096, 4096].
    fn read(&self, dr: &str, dc: &str) -> String {
        let get = format!("get({dr}, {dc})");
        match (self.work, self.input) {
            (Elem::Int, Elem::Int) => format!("clamp({get}, -4096, 4096)"),
            // Clamping, scaling by a power of two and floor are exact: both sides agree.
            (Elem::Int, ty) => format!(
                "(int)floor(fmin(fmax({get}, {}), {}) * {})",
                literal(ty, -256.0),
                literal(ty, 256.0),
                literal(ty, 16.0)
            ),
            (work, Elem::Int) => format!("({})clamp({get}, -4096, 4096)", work.c_name()),
            (work, input) if work == input => get,
            (work, _) => format!("({}){get}", work.c_name()),
        }
    }

    /// `get` at the four extremes of the border, so that the whole declared region is needed.
    fn extremes(&mut self) -> [(i32, i32); 4] {
        let b = self.border;
        let (c1, c2, r1, r2) = (self.col(), self.col(), self.row(), self.row());
        [
            (-(b.north as i32), c1),
            (b.south as i32, c2),
            (r1, -(b.west as i32)),
            (r2, b.east as i32),
        ]
    }

    /// A few reads (the centre, the extremes, up to three more) in a weighted sum.
    fn light(&mut self) -> String {
        let mut offsets = vec![(0, 0)];
        offsets.extend(self.extremes());
        for _ in 0..self.rng.random_range(0..=3) {
            let offset = (self.row(), self.col());
            offsets.push(offset);
        }
        let ty = self.work.c_name();
        let mut body = String::new();
        let mut terms = Vec::new();
        for (i, (dr, dc)) in offsets.iter().enumerate() {
            let read = self.read(&dr.to_string(), &dc.to_string());
            body.push_str(&format!("const {ty} x{i} = {read};\n"));
            let weight = if self.work == Elem::Int {
                self.int(1, 5)
            } else {
                let w = self.frac(1, 32);
                self.lit(w)
            };
            let negative = self.rng.random_bool(0.5);
            terms.push(match (i, negative) {
                (0, false) => format!("{weight} * x{i}"),
                (0, true) => format!("-{weight} * x{i}"),
                (_, false) => format!(" + {weight} * x{i}"),
                (_, true) => format!(" - {weight} * x{i}"),
            });
        }
        let sum = terms.concat();
        body.push_str(&format!("return (OUT_T)({sum});\n"));
        body
    }

    /// Loops over a lattice of the border region (at most 8 x 8 reads), each read feeding 6 to
    /// 12 drawn terms into a damped accumulator; then the four extremes.
    fn heavy(&mut self) -> String {
        let b = self.border;
        let step = |extent: u32, reads: u32| extent.div_ceil(reads).max(1);
        let (step_r, step_c) = (
            step(b.north + b.south + 1, self.rng.random_range(4..=8)),
            step(b.west + b.east + 1, self.rng.random_range(4..=8)),
        );
        let n_terms = self.rng.random_range(6..=12);
        let ty = self.work.c_name();
        let (x, update, init) = if self.work == Elem::Int {
            let terms: Vec<String> = (0..n_terms).map(|_| self.int_term()).collect();
            (
                self.read("dr", "dc"),
                format!(
                    "acc = (acc * 3 + {}) % 65521;",
                    terms.join("\n               + ")
                ),
                self.int(0, 100),
            )
        } else {
            let terms: Vec<String> = (0..n_terms).map(|_| self.float_term()).collect();
            let damping = self.frac(4, 12);
            (
                format!(
                    "fmin(fmax({}, {}), {})",
                    self.read("dr", "dc"),
                    self.lit(-4.0),
                    self.lit(4.0)
                ),
                format!(
                    "acc = acc * {} + ({});",
                    self.lit(damping),
                    terms.join("\n               + ")
                ),
                self.lit(0.0),
            )
        };
        let edges = self
            .extremes()
            .map(|(dr, dc)| self.read(&dr.to_string(), &dc.to_string()));
        let (signs, bounded) = if self.work == Elem::Int {
            (["", " - ", " + ", " - "], "edge".to_string())
        } else {
            let (lo, hi) = (self.lit(-16.0), self.lit(16.0));
            let quarter = self.lit(0.25);
            (
                ["", "\n    + ", "\n    + ", "\n    + "],
                format!("{quarter} * fmin(fmax(edge, {lo}), {hi})"),
            )
        };
        let edge: String = signs
            .iter()
            .zip(&edges)
            .map(|(s, e)| format!("{s}{e}"))
            .collect();
        format!(
            "{ty} acc = {init};
for (int dr = -{north}; dr <= {south}; dr += {step_r}) {{
    for (int dc = -{west}; dc <= {east}; dc += {step_c}) {{
        const {ty} x = {x};
        {update}
    }}
}}
const {ty} edge = {edge};
return (OUT_T)(acc + {bounded});
",
            north = b.north,
            south = b.south,
            west = b.west,
            east = b.east,
        )
    }

    /// A term in `x` in [-4096, 4096], bounded by 28672 in magnitude.
    fn int_term(&mut self) -> String {
        match self.rng.random_range(0..9) {
            0 => format!("x * {}", self.int(-7, 7)),
            1 => format!("x * x % {}", self.int(2, 997)),
            2 => format!("abs(x - {})", self.int(-100, 100)),
            3 => format!("min(x, {})", self.int(-100, 100)),
            4 => format!("max(x, {})", self.int(-100, 100)),
            5 => {
                let bound = self.rng.random_range(1..=1000);
                format!("clamp(x * {}, {}, {bound})", self.int(-7, 7), -bound)
            }
            6 => format!("x / {}", self.int(2, 9)),
            7 => format!("x % {} * {}", self.int(2, 97), self.int(-7, 7)),
            _ => format!(
                "(x > {} ? {} : {})",
                self.int(-100, 100),
                self.int(-100, 100),
                self.int(-100, 100)
            ),
        }
    }

    /// A term in `x` in [-4, 4], bounded by 25 in magnitude and defined everywhere.
    fn float_term(&mut self) -> String {
        let (one, four) = (self.lit(1.0), self.lit(4.0));
        let choice = self.rng.random_range(0..11);
        let mut lit = |lo, hi| {
            let v = self.frac(lo, hi);
            self.lit(v)
        };
        match choice {
            0 => format!("{} * x", lit(-32, 32)),
            1 => format!("sin({} * x + {})", lit(-24, 24), lit(-16, 16)),
            2 => format!("cos({} * x)", lit(-24, 24)),
            3 => format!("sqrt(fabs(x) + {})", lit(4, 32)),
            4 => format!("exp({} * x)", lit(-8, 8)),
            5 => format!("pow(fabs(x) + {one}, {})", lit(8, 32)),
            6 => format!("fmin(x, {})", lit(-32, 32)),
            7 => format!("fmax(x * x, {})", lit(0, 64)),
            8 => format!("{} * x * x", lit(-16, 16)),
            // Exact: x is a clamped input and the scale a power of two.
            9 => format!("floor(x * {four}) * {}", lit(-8, 8)),
            _ => format!("fabs(x - {})", lit(-32, 32)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_stencils() {
        assert_eq!(generate(7, 20), generate(7, 20));
        assert_ne!(generate(7, 5), generate(8, 5));
        // A prefix of a longer run.
        assert_eq!(generate(7, 20)[..5], generate(7, 5)[..]);
    }

    #[test]
    fn stencils_are_valid_distinct_and_varied() {
        let all = generate(1, 200);
        let mut names = HashSet::new();
        let mut sources = HashSet::new();
        let mut kinds = HashSet::new();
        for s in &all {
            s.check(61, 61).unwrap();
            assert!(names.insert(s.name.clone()));
            assert!(sources.insert(s.function.clone()));
            kinds.insert((s.kind, s.input, s.output));
            for b in [s.border.north, s.border.south, s.border.east, s.border.west] {
                assert!((1..=30).contains(&b));
            }
            let prefix = format!("{}-1-", s.kind.as_str());
            assert!(s.name.starts_with(&prefix), "{}", s.name);
        }
        // Both complexities with every pair of types.
        assert_eq!(kinds.len(), 18);
    }

    #[test]
    fn heavy_stencils_compute_more_than_light_ones() {
        let all = generate(3, 60);
        let mean = |kind| {
            let lens: Vec<usize> = all
                .iter()
                .filter(|s| s.kind == kind)
                .map(|s| s.function.len())
                .collect();
            lens.iter().sum::<usize>() / lens.len()
        };
        assert!(mean(Kind::SyntheticB) > mean(Kind::SyntheticA));
        assert!(all
            .iter()
            .filter(|s| s.kind == Kind::SyntheticB)
            .all(|s| s.function.contains("for (int dr")));
    }
}
