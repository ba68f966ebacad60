//! A SkelCL-style 2D stencil skeleton (Cummins et al. 2016, §2).
//!
//! A stencil applies a user's *customising function* to every element of a `rows x cols` matrix.
//! The function reads the element's neighbours inside a *border region*: `north` rows above,
//! `south` rows below, `west` columns to the left and `east` columns to the right. Neighbours
//! that fall outside the matrix come from a padding constant or from the nearest cell inside it.
//!
//! From one [`Stencil`] this crate makes:
//! - [`Stencil::device_source`]: the OpenCL kernel `stencil`. Each work-group first copies its
//!   tile (the work-group's cells plus the border) into local memory, cooperatively, and then
//!   every work-item applies the function to its cell, reading the tile. The tile is a runtime
//!   `__local` argument ([`Stencil::tile_bytes`]), and the work-group size is read with
//!   `get_local_size`, so one build serves every work-group size: the size is a launch
//!   parameter only.
//! - [`Stencil::host_source`]: a C99 reference that applies the same function with plain loops
//!   and no tiles: an independent implementation to verify the device against, within
//!   [`Stencil::tolerance`].
//!
//! The paper's reference stencils (Table 2) come from [`reference`]; synthetic ones from
//! [`generate`] (§3.3).
//!
//! # The `.stencil.toml` file
//!
//! ```toml
//! name = "gaussian-3"                                # letters, digits, '-', '_', '.'
//! border = { north = 3, south = 3, east = 3, west = 3 }
//! input = "float"                                    # "int", "float" or "double"
//! output = "float"
//! padding = 0.0          # a number (the default is 0), or "nearest"
//! kind = "user"          # optional: "reference", "synthetic-a", "synthetic-b" or "user"
//! function = """
//! float s = 0.0f;
//! for (int dr = -3; dr <= 3; ++dr) for (int dc = -3; dc <= 3; ++dc) s += get(dr, dc);
//! return s / 49.0f;
//! """
//! ```
//!
//! Unknown keys are refused, and every error names the file, line and column. Each border value
//! is at most [`MAX_BORDER`]. With `int` input a constant padding must be a whole number that
//! fits an `int`.
//!
//! # The customising function
//!
//! `function` is the body of a C function that returns `OUT_T`. In it, `get(dr, dc)` is the
//! `IN_T` value of the neighbour `dr` rows down (negative: north) and `dc` columns right
//! (negative: west); `get(0, 0)` is the element itself. Offsets must lie inside the border: the
//! host reference aborts with a message naming the offending offsets, the device would read
//! outside its tile. The typedefs `IN_T` and `OUT_T` are defined.
//!
//! The body is compiled as OpenCL C on the device and as C99 on the host, so it must keep to
//! their common subset: scalars only, and of the math library `sqrt`, `fabs`, `exp`, `sin`,
//! `cos`, `floor`, `pow`, `fmin` and `fmax`. `min`, `max`, `clamp` and `abs` are the same
//! `int` functions on both sides (arguments converted to `int`; OpenCL's own `abs` would return
//! `uint`). Identifiers starting with `ndtune_` are reserved, and `WG_C`/`WG_R` are refused:
//! the work-group size is not known to the source.
//!
//! # The kernel
//!
//! ```c
//! __kernel void stencil(__global const IN_T *in, __global OUT_T *out, __local IN_T *tile,
//!                       const int rows, const int cols)
//! ```
//!
//! Matrices are row-major. The NDRange is 2D: dimension 0 runs over columns (work-group width
//! `wc`), dimension 1 over rows (height `wr`). The global size is `cols x rows` rounded up to
//! multiples of the work-group; work-items past the matrix help load the tile but write nothing.
//! A global offset is honoured (a launch may cover part of the matrix).
//!
//! # The host reference
//!
//! [`Stencil::host_source`] defines one external function of ndtune's host function ABI
//! (`ndtune.h`, docs/spec.md "Host functions"), `void ndtune_reference(const ndtune_args *args)`,
//! with `buffers[0]` the input, `buffers[1]` the output, and the `int` scalars `scalars[0]` the
//! rows and `scalars[1]` the columns. Compile it with `ndtune.h` included and `-lm`.

mod codegen;
mod file;
mod generate;
mod reference;
mod scenario;

pub use generate::generate;
pub use reference::{reference, reference_names};
pub use scenario::Measure;

use std::fmt;

/// The largest border value in any direction; it keeps the kernel's `int` tile arithmetic far
/// from overflow.
pub const MAX_BORDER: u32 = 1024;

/// An element type of the input or output matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Elem {
    Int,
    Float,
    Double,
}

impl Elem {
    pub const ALL: [Elem; 3] = [Elem::Int, Elem::Float, Elem::Double];

    /// The type's name in C and OpenCL C.
    pub fn c_name(self) -> &'static str {
        match self {
            Elem::Int => "int",
            Elem::Float => "float",
            Elem::Double => "double",
        }
    }

    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            Elem::Int | Elem::Float => 4,
            Elem::Double => 8,
        }
    }
}

/// Where the neighbours outside the matrix come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Padding {
    /// This value, converted to the input type.
    Constant(f64),
    /// The nearest cell inside the matrix (coordinates clamped to it).
    Nearest,
}

/// How many cells in each direction the customising function reads around its element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Border {
    pub north: u32,
    pub south: u32,
    pub east: u32,
    pub west: u32,
}

impl Border {
    /// Bytes of the `__local` tile of a `wc x wr` work-group (columns x rows) with this border,
    /// in elements of `element_bytes`.
    pub fn tile_bytes(&self, element_bytes: u64, wc: u64, wr: u64) -> u64 {
        (wr + u64::from(self.north + self.south))
            * (wc + u64::from(self.west + self.east))
            * element_bytes
    }
}

impl fmt::Display for Border {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "north {}, south {}, east {}, west {}",
            self.north, self.south, self.east, self.west
        )
    }
}

/// Where a stencil comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// One of the paper's reference applications (Table 2).
    Reference,
    /// Synthetic and light: a few neighbour reads, a weighted sum.
    SyntheticA,
    /// Synthetic and compute-heavy: loops over the border region, many math instructions.
    SyntheticB,
    /// Written by a user.
    User,
}

impl Kind {
    /// The name in `.stencil.toml` files (`kind = "synthetic-a"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Reference => "reference",
            Kind::SyntheticA => "synthetic-a",
            Kind::SyntheticB => "synthetic-b",
            Kind::User => "user",
        }
    }
}

/// A stencil: the customising function with its border, types and padding.
#[derive(Debug, Clone, PartialEq)]
pub struct Stencil {
    pub name: String,
    pub kind: Kind,
    pub border: Border,
    pub input: Elem,
    pub output: Elem,
    pub padding: Padding,
    /// The body of the customising function (see the crate documentation).
    pub function: String,
}

/// What can be wrong with a stencil file or with a stencil.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StencilError {
    /// A `.stencil.toml` that cannot be read, parsed or validated. `line` and `column` are
    /// 1-based, or 0 when the error concerns the whole file.
    #[error("{}", located(.path, *.line, *.column, .message))]
    File {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A stencil that is invalid in itself or cannot run on the given matrix.
    #[error("stencil `{stencil}`: {message}")]
    Stencil { stencil: String, message: String },
}

fn located(path: &str, line: usize, column: usize, message: &str) -> String {
    if line == 0 {
        format!("{path}: {message}")
    } else {
        format!("{path}:{line}:{column}: {message}")
    }
}

/// The part of a stencil a validation problem is about (to point at it in a file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Border,
    Padding,
    Function,
}

impl Stencil {
    /// Checks that the stencil is valid and can run on a `rows x cols` matrix: the window of the
    /// border (`north + 1 + south` by `west + 1 + east`) must fit in the matrix, and the matrix
    /// must be indexable with `int`.
    pub fn check(&self, rows: u64, cols: u64) -> Result<(), StencilError> {
        let fail = |message: String| StencilError::Stencil {
            stencil: self.name.clone(),
            message,
        };
        if let Some((_, message)) = self.problem() {
            return Err(fail(message));
        }
        if rows == 0 || cols == 0 {
            return Err(fail(format!(
                "the matrix must have at least one row and one column, not {rows} x {cols}"
            )));
        }
        if rows.saturating_mul(cols) > i32::MAX as u64 {
            return Err(fail(format!(
                "a {rows} x {cols} matrix has more than 2^31 - 1 elements, more than the \
                 kernel's int indices reach"
            )));
        }
        let b = &self.border;
        let (high, wide) = (
            u64::from(b.north + b.south) + 1,
            u64::from(b.west + b.east) + 1,
        );
        if high > rows || wide > cols {
            return Err(fail(format!(
                "its border ({b}) spans a {high} x {wide} window, larger than the {rows} x {cols} \
                 matrix (rows x columns)"
            )));
        }
        Ok(())
    }

    /// Bytes of the `__local` tile for a `wc x wr` work-group (columns x rows): the work-group
    /// plus the border, in input elements.
    pub fn tile_bytes(&self, wc: u64, wr: u64) -> u64 {
        self.border.tile_bytes(self.input.size() as u64, wc, wr)
    }

    /// `(rtol, atol)` for comparing the device's output with the host reference's:
    /// `|device - host| <= atol + rtol * |host|`. Exact for `int` output; float sized when
    /// `float` is involved (OpenCL's single-precision math functions are not correctly rounded,
    /// while C computes them in double); tight for `double` throughout.
    pub fn tolerance(&self) -> (f64, f64) {
        match (self.input, self.output) {
            (_, Elem::Int) => (0.0, 0.0),
            (Elem::Float, _) | (_, Elem::Float) => (1e-4, 1e-3),
            _ => (1e-9, 1e-9),
        }
    }

    /// Whether the generated sources need `double` (and OpenCL's `cl_khr_fp64`).
    fn uses_double(&self) -> bool {
        self.input == Elem::Double
            || self.output == Elem::Double
            || contains_word(&self.function, "double")
    }

    /// The first thing wrong with the stencil, and where.
    fn problem(&self) -> Option<(Field, String)> {
        let name_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if self.name.is_empty() || self.name.len() > 128 || !self.name.chars().all(name_ok) {
            return Some((
                Field::Name,
                format!(
                    "the name `{}` must be 1 to 128 letters, digits, '-', '_' or '.'",
                    self.name
                ),
            ));
        }
        let b = &self.border;
        for (dir, v) in [
            ("north", b.north),
            ("south", b.south),
            ("east", b.east),
            ("west", b.west),
        ] {
            if v > MAX_BORDER {
                return Some((
                    Field::Border,
                    format!("the border's {dir} = {v} is larger than {MAX_BORDER}"),
                ));
            }
        }
        if let Padding::Constant(v) = self.padding {
            let fits = match self.input {
                Elem::Int => v.fract() == 0.0 && v.abs() <= f64::from(i32::MAX),
                Elem::Float => v.abs() <= f64::from(f32::MAX),
                Elem::Double => v.is_finite(),
            };
            if !fits {
                return Some((
                    Field::Padding,
                    format!(
                        "the padding {v} is not a value of the input type {}",
                        self.input.c_name()
                    ),
                ));
            }
        }
        if self.function.trim().is_empty() {
            return Some((Field::Function, "the function is empty".into()));
        }
        if self.function.contains('\0') {
            return Some((Field::Function, "the function contains a NUL byte".into()));
        }
        for word in ["WG_C", "WG_R"] {
            if contains_word(&self.function, word) {
                return Some((
                    Field::Function,
                    format!(
                        "the function uses `{word}`: the work-group size is a launch parameter \
                         only and is not known to the source"
                    ),
                ));
            }
        }
        None
    }
}

/// Whether `text` contains `word` as a whole C identifier.
fn contains_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Stencil {
        reference("gaussian-2").unwrap()
    }

    #[test]
    fn words_are_whole_identifiers() {
        assert!(contains_word("x = WG_C * 2;", "WG_C"));
        assert!(contains_word("WG_R", "WG_R"));
        assert!(!contains_word("MY_WG_C + WG_CX", "WG_C"));
        assert!(contains_word("(double)x", "double"));
        assert!(!contains_word("doubled", "double"));
    }

    #[test]
    fn check_refuses_a_border_larger_than_the_matrix() {
        let s = sample();
        s.check(5, 5).unwrap();
        let e = s.check(4, 64).unwrap_err().to_string();
        assert_eq!(
            e,
            "stencil `gaussian-2`: its border (north 2, south 2, east 2, west 2) spans a 5 x 5 \
             window, larger than the 4 x 64 matrix (rows x columns)"
        );
        assert!(s.check(64, 3).is_err());
        assert!(s.check(0, 10).unwrap_err().to_string().contains("0 x 10"));
        assert!(s.check(1 << 16, 1 << 16).is_err());
    }

    #[test]
    fn check_refuses_invalid_stencils() {
        let mut s = sample();
        s.padding = Padding::Constant(f64::NAN);
        assert!(s.check(64, 64).unwrap_err().to_string().contains("padding"));
        let mut s = sample();
        s.input = Elem::Int;
        s.padding = Padding::Constant(0.5);
        assert!(s.check(64, 64).is_err());
        let mut s = sample();
        s.function = "return WG_C;".into();
        assert!(s.check(64, 64).unwrap_err().to_string().contains("WG_C"));
        let mut s = sample();
        s.border.east = MAX_BORDER + 1;
        assert!(s
            .check(64, 1 << 12)
            .unwrap_err()
            .to_string()
            .contains("east"));
        let mut s = sample();
        s.name = "a b".into();
        assert!(s.check(64, 64).is_err());
    }

    #[test]
    fn tile_bytes_cover_the_work_group_and_the_border() {
        let mut s = sample();
        assert_eq!(s.tile_bytes(16, 8), (8 + 4) * (16 + 4) * 4);
        s.border = Border {
            north: 1,
            south: 0,
            east: 3,
            west: 2,
        };
        s.input = Elem::Double;
        assert_eq!(s.tile_bytes(4, 4), 5 * 9 * 8);
    }

    #[test]
    fn tolerances_follow_the_types() {
        let mut s = sample();
        assert_eq!(s.tolerance(), (1e-4, 1e-3));
        s.output = Elem::Int;
        assert_eq!(s.tolerance(), (0.0, 0.0));
        s.input = Elem::Double;
        s.output = Elem::Double;
        assert_eq!(s.tolerance(), (1e-9, 1e-9));
    }
}
