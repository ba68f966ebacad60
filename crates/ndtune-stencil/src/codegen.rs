//! The two programs made from a stencil: the OpenCL kernel (a local-memory tile per work-group,
//! sized at launch) and the C99 host reference (plain loops over the matrix, no tiles).

use crate::{contains_word, Elem, Padding, Stencil};
use std::fmt::Write;

/// `v` as a literal of type `ty` in both OpenCL C and C99: a float gets the `f` suffix (so that
/// float code never computes in double), a negative value is parenthesised.
pub(crate) fn literal(ty: Elem, v: f64) -> String {
    let text = match ty {
        Elem::Int => format!("{}", v as i64),
        Elem::Float => format!("{:?}f", v as f32),
        Elem::Double => format!("{v:?}"),
    };
    if text.starts_with('-') {
        format!("({text})")
    } else {
        text
    }
}

/// Integer `min`, `max`, `clamp` and `abs` with C's `int` semantics on both sides (OpenCL's
/// builtins are overloaded for floats, and its `abs` returns `uint`): a function and a macro
/// that replaces the builtin, for each one the function uses (unused static functions would
/// warn on the host). `storage` is `static ` on the host; nothing on the device, where OpenCL C
/// 1.1 refuses `static`.
const INT_HELPERS: [(&str, &str, &str); 4] = [
    (
        "min",
        "int ndtune_imin(int a, int b) { return a < b ? a : b; }",
        "min(a, b) ndtune_imin((int)(a), (int)(b))",
    ),
    (
        "max",
        "int ndtune_imax(int a, int b) { return a > b ? a : b; }",
        "max(a, b) ndtune_imax((int)(a), (int)(b))",
    ),
    (
        "clamp",
        "int ndtune_iclamp(int x, int lo, int hi) { return x < lo ? lo : x > hi ? hi : x; }",
        "clamp(x, lo, hi) ndtune_iclamp((int)(x), (int)(lo), (int)(hi))",
    ),
    (
        "abs",
        "int ndtune_iabs(int x) { return x < 0 ? -x : x; }",
        "abs(x) ndtune_iabs((int)(x))",
    ),
];

impl Stencil {
    /// The integer helpers the function uses (see [`INT_HELPERS`]).
    fn int_helpers(&self, storage: &str, out: &mut String) {
        let mut used = INT_HELPERS
            .iter()
            .filter(|(name, ..)| contains_word(&self.function, name))
            .peekable();
        if used.peek().is_some() {
            out.push('\n');
        }
        for (name, function, define) in used {
            let _ = writeln!(out, "{storage}{function}\n#undef {name}\n#define {define}");
        }
    }

    /// A comment that names and summarises the stencil.
    fn preamble(&self, out: &mut String) {
        let padding = match self.padding {
            Padding::Constant(v) => format!("constant {}", literal(self.input, v)),
            Padding::Nearest => "nearest cell".into(),
        };
        let _ = writeln!(
            out,
            "/* ndtune stencil `{}` ({}): border {}; {} -> {}; padding: {padding}. */",
            self.name,
            self.kind.as_str(),
            self.border,
            self.input.c_name(),
            self.output.c_name(),
        );
        out.push('\n');
    }

    /// The element types of the function.
    fn typedefs(&self, out: &mut String) {
        let _ = writeln!(out, "typedef {} IN_T;", self.input.c_name());
        let _ = writeln!(out, "typedef {} OUT_T;", self.output.c_name());
    }

    /// The OpenCL C source of kernel `stencil` (see the crate documentation for its arguments
    /// and NDRange). It does not depend on the work-group size: one build serves every size.
    pub fn device_source(&self) -> String {
        let b = &self.border;
        let mut s = String::new();
        self.preamble(&mut s);
        if self.uses_double() {
            s.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n\n");
        }
        self.typedefs(&mut s);
        self.int_helpers("", &mut s);
        let load = match self.padding {
            Padding::Constant(v) => format!(
                "(r >= 0 && r < rows && c >= 0 && c < cols) ? in[r * cols + c] : (IN_T){}",
                literal(self.input, v)
            ),
            Padding::Nearest => "in[(r < 0 ? 0 : r >= rows ? rows - 1 : r) * cols + \
                                 (c < 0 ? 0 : c >= cols ? cols - 1 : c)]"
                .into(),
        };
        let _ = write!(
            s,
            r#"
/* The element at (dr, dc) from the work-item's cell, in the tile. */
#define get(dr, dc) ((IN_T)ndtune_tile[(ndtune_r + (dr)) * ndtune_tw + ndtune_c + (dc)])

OUT_T ndtune_apply(__local const IN_T *ndtune_tile, const int ndtune_tw, const int ndtune_r,
                   const int ndtune_c)
{{
#line 1 "{name}.stencil function"
{function}
}}
#line NDTUNE_SKELETON_LINE "{name}.stencil skeleton"

#undef get

__kernel void stencil(__global const IN_T *in, __global OUT_T *out, __local IN_T *tile,
                      const int rows, const int cols)
{{
    const int wc = (int)get_local_size(0), wr = (int)get_local_size(1);
    const int lc = (int)get_local_id(0), lr = (int)get_local_id(1);
    /* The work-group's first cell; from the global id, so that a global offset is honoured. */
    const int c0 = (int)get_global_id(0) - lc, r0 = (int)get_global_id(1) - lr;
    /* The tile: the work-group's cells and the border around them, row-major. */
    const int tw = wc + {west} + {east}, th = wr + {north} + {south};
    for (int i = lr * wc + lc; i < tw * th; i += wc * wr) {{
        const int tr = i / tw, tc = i - tr * tw;
        const int r = r0 + tr - {north}, c = c0 + tc - {west};
        tile[i] = {load};
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    const int r = r0 + lr, c = c0 + lc;
    if (r < rows && c < cols)
        out[r * cols + c] = ndtune_apply(tile, tw, lr + {north}, lc + {west});
}}
"#,
            function = self.function.trim_end(),
            name = self.name,
            north = b.north,
            south = b.south,
            east = b.east,
            west = b.west,
        );
        with_line_numbers(s)
    }

    /// The C99 host reference: `void ndtune_reference(const ndtune_args *args)` of ndtune's
    /// host function ABI (see the crate documentation). Compile it with ndtune's `ndtune.h`
    /// included (`-include ndtune.h`, as `ndtune tune` does) and `-lm`.
    pub fn host_source(&self) -> String {
        let b = &self.border;
        let mut s = String::new();
        self.preamble(&mut s);
        s.push_str("#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n");
        self.typedefs(&mut s);
        self.int_helpers("static ", &mut s);
        let outside = match self.padding {
            Padding::Constant(v) => format!(
                "if (rr < 0 || rr >= rows || cc < 0 || cc >= cols)\n        return (IN_T){};",
                literal(self.input, v)
            ),
            Padding::Nearest => "rr = rr < 0 ? 0 : rr >= rows ? rows - 1 : rr;\n    \
                                 cc = cc < 0 ? 0 : cc >= cols ? cols - 1 : cc;"
                .into(),
        };
        let _ = write!(
            s,
            r#"
/* The element at (r + dr, c + dc), padded outside the matrix. Offsets outside the border are a
   bug of the function that the device cannot report (it would read outside its tile). */
static IN_T ndtune_get(const IN_T *in, long long rows, long long cols, long long r, long long c,
                       int dr, int dc)
{{
    if (dr < -{north} || dr > {south} || dc < -{west} || dc > {east}) {{
        fprintf(stderr, "stencil `{name}`: get(%d, %d) reads outside its border ({border})\n",
                dr, dc);
        abort();
    }}
    long long rr = r + dr, cc = c + dc;
    {outside}
    return in[rr * cols + cc];
}}

#define get(dr, dc) ndtune_get(ndtune_in, ndtune_rows, ndtune_cols, ndtune_r, ndtune_c, (dr), (dc))

static OUT_T ndtune_apply(const IN_T *ndtune_in, long long ndtune_rows, long long ndtune_cols,
                          long long ndtune_r, long long ndtune_c)
{{
#line 1 "{name}.stencil function"
{function}
}}
#line NDTUNE_SKELETON_LINE "{name}.stencil skeleton"

#undef get

void ndtune_reference(const ndtune_args *args)
{{
    const IN_T *in = (const IN_T *)args->buffers[0].data;
    OUT_T *out = (OUT_T *)args->buffers[1].data;
    const long long rows = args->scalars[0].value.i, cols = args->scalars[1].value.i;
    for (long long r = 0; r < rows; ++r)
        for (long long c = 0; c < cols; ++c)
            out[r * cols + c] = ndtune_apply(in, rows, cols, r, c);
}}
"#,
            name = self.name,
            border = self.border,
            function = self.function.trim_end(),
            north = b.north,
            south = b.south,
            east = b.east,
            west = b.west,
        );
        with_line_numbers(s)
    }
}

/// Build errors in the user's function point at its own lines ("NAME.stencil function:3: ...");
/// the skeleton after it (from the `NDTUNE_SKELETON_LINE` marker on) gets its true line numbers
/// back.
fn with_line_numbers(s: String) -> String {
    let at = s
        .lines()
        .position(|l| l.contains("NDTUNE_SKELETON_LINE"))
        .expect("sources mark where the skeleton resumes");
    s.replace("NDTUNE_SKELETON_LINE", &(at + 2).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference;

    #[test]
    fn literals_keep_their_type() {
        assert_eq!(literal(Elem::Int, -3.0), "(-3)");
        assert_eq!(literal(Elem::Float, 0.25), "0.25f");
        assert_eq!(literal(Elem::Float, 1.0), "1.0f");
        assert_eq!(literal(Elem::Float, 1e-7), "1e-7f");
        assert_eq!(literal(Elem::Double, -0.5), "(-0.5)");
    }

    #[test]
    fn sources_carry_border_types_and_padding() {
        let he = reference("he").unwrap();
        let d = he.device_source();
        assert!(d.contains("typedef float IN_T;"));
        assert!(d.contains("(r < 0 ? 0 : r >= rows ? rows - 1 : r)"));
        assert!(!d.contains("cl_khr_fp64"));
        assert!(!d.contains("WG_C") && !d.contains("WG_R"));
        let h = he.host_source();
        assert!(h.contains("void ndtune_reference(const ndtune_args *args)"));
        assert!(h.contains("rr = rr < 0 ? 0"));
        let gol = reference("gol").unwrap();
        assert!(gol.device_source().contains(": (IN_T)0;"));
        assert!(gol.host_source().contains("return (IN_T)0;"));
        let mut dbl = gol.clone();
        dbl.output = Elem::Double;
        assert!(dbl
            .device_source()
            .contains("#pragma OPENCL EXTENSION cl_khr_fp64 : enable"));
    }
}
