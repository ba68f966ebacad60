//! `ndtune export --format header`: a kernel's wisdom as a C header for programs that want no
//! library: a table with one row per tuned (device, constants), each with the build options
//! (the parameters' `-D`s) and the launch sizes (OpenCL's global and local sizes, and CUDA's grid
//! of blocks), and a lookup by device name and constants.
//!
//! ```c
//! #include "matmul_wisdom.h"
//! const ndtune_matmul_config *c = ndtune_matmul_find(device_name, "N=1024");
//! if (c) { clBuildProgram(p, 1, &dev, c->build_options, 0, 0);
//!          clEnqueueNDRangeKernel(q, k, c->dims, 0, c->global, c->local, 0, 0, 0); }
//! /* CUDA: the options to NVRTC, then
//!    matmul<<<dim3(c->grid[0], c->grid[1], c->grid[2]), dim3(c->local[0], c->local[1], c->local[2])>>>(...); */
//! ```
//!
//! Names come from users and drivers (kernel, metric, unit, device): whatever reaches a comment
//! is made unable to end it ([`c_comment`]), whatever reaches a string literal is escaped
//! ([`c_string`]), and no `??` is ever written, so trigraphs (C89, `-std=c99`) change nothing.
//! The header is C89, C99, C11 and C++.

use crate::pick::{PickError, Picker};
use crate::KernelWisdom;
use std::fmt::Write;

/// The header's text for `wisdom` (its picker `picker`): rows in the entries' order, one per
/// device model and constants.
pub fn header(wisdom: &KernelWisdom, picker: &Picker) -> Result<String, PickError> {
    let id: String = wisdom
        .kernel
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let guard = format!("NDTUNE_WISDOM_{}_H", id.to_ascii_uppercase());
    let ty = format!("ndtune_{id}_config");
    let mut rows = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for e in &wisdom.entries {
        let constants = crate::pick::constants_text(&e.constants);
        if !seen.insert((e.device.name.clone(), constants.clone())) {
            continue;
        }
        let p = picker.pick(&e.device, &e.constants)?;
        let dims = p.global.len().max(p.local.len());
        let three = |v: &[usize]| {
            let mut v: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            v.resize(3, "1".into());
            v.join(", ")
        };
        // CUDA's grid: blocks per dimension, as ndtune launches it (ceil(global / local)).
        let grid: Vec<usize> = (0..dims)
            .map(|d| {
                let global = p.global.get(d).copied().unwrap_or(1);
                global.div_ceil(p.local.get(d).copied().unwrap_or(1).max(1))
            })
            .collect();
        rows.push(format!(
            "    {{{}, {}, {}, {dims}, {{{}}}, {{{}}}, {{{}}}, {:e}}},",
            c_string(&e.device.name),
            c_string(&constants),
            c_string(&p.build_options),
            three(&p.global),
            three(&p.local),
            three(&grid),
            p.tuned_objective.unwrap_or(e.objective)
        ));
    }
    let unit = wisdom.objective.unit.as_deref().unwrap_or("");
    let mut h = String::new();
    let _ = writeln!(
        h,
        "/* Tuned configurations of kernel `{}`, written by ndtune {} (`ndtune export --format header`).\n   \
         One row per device and constants; `objective` is the tuned {} ({}, {}). Do not edit. */",
        c_comment(&wisdom.kernel),
        env!("CARGO_PKG_VERSION"),
        c_comment(&wisdom.objective.metric),
        c_comment(unit),
        if wisdom.objective.higher_is_better {
            "higher is better"
        } else {
            "lower is better"
        }
    );
    let _ = writeln!(
        h,
        "#ifndef {guard}\n#define {guard}\n\n#include <stddef.h>\n#include <string.h>\n\n\
         #ifndef NDTUNE_WISDOM_INLINE\n\
         #if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)\n\
         #define NDTUNE_WISDOM_INLINE static inline\n\
         #elif defined(__GNUC__)\n\
         #define NDTUNE_WISDOM_INLINE static __inline__\n\
         #else\n\
         #define NDTUNE_WISDOM_INLINE static\n\
         #endif\n\
         #endif\n"
    );
    let _ = writeln!(
        h,
        "typedef struct {{\n    const char *device;        /* CL_DEVICE_NAME */\n    \
         const char *constants;     /* NAME=VALUE, space-separated, names sorted */\n    \
         const char *build_options; /* for clBuildProgram or NVRTC: the parameters as -D */\n    \
         unsigned dims;\n    size_t global[3];\n    size_t local[3];\n    \
         size_t grid[3];            /* CUDA: blocks per dimension, ceil(global / local) */\n    \
         double objective;\n}} {ty};\n"
    );
    let _ = writeln!(
        h,
        "static const {ty} ndtune_{id}_configs[] = {{\n{}\n}};\n",
        rows.join("\n")
    );
    let _ = writeln!(
        h,
        "/* The row of device `device` at `constants` (as in the table), or NULL. */\n\
         NDTUNE_WISDOM_INLINE const {ty} *ndtune_{id}_find(const char *device, const char *constants) {{\n    \
         size_t i;\n    \
         for (i = 0; i < sizeof ndtune_{id}_configs / sizeof ndtune_{id}_configs[0]; i++)\n        \
         if (strcmp(ndtune_{id}_configs[i].device, device) == 0 &&\n            \
         strcmp(ndtune_{id}_configs[i].constants, constants) == 0)\n            \
         return &ndtune_{id}_configs[i];\n    \
         return NULL;\n}}\n\n#endif /* {guard} */"
    );
    Ok(h)
}

/// `s` as text inside a C comment: `*/` and `/*` broken apart, no `??` (a trigraph), control
/// and non-ASCII characters written as `\u{..}`.
fn c_comment(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let previous = out.chars().last();
        match c {
            '/' if previous == Some('*') => out.push_str(" /"),
            '*' if previous == Some('/') => out.push_str(" *"),
            '?' if previous == Some('?') => out.push_str(" ?"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => out.push_str(&c.escape_unicode().to_string()),
        }
    }
    out
}

/// `s` as a C string literal: quotes, backslashes and every `?` escaped (so that no trigraph
/// can form), other characters outside printable ASCII as octal escapes of their UTF-8 bytes.
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '?' => out.push_str("\\?"),
            '\n' => out.push_str("\\n"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut b = [0; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    let _ = write!(out, "\\{byte:03o}");
                }
            }
        }
    }
    out.push('"');
    out
}
