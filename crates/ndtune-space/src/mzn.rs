//! MiniZinc export of the same model the native pruner solves, as the seed does: a platform
//! model (`platform.mzn`), one data file per device (`.dzn`) and, per spec, a model of its
//! parameters, constraints and launch. `minizinc --all-solutions DIR/*.mzn DIR/*.dzn` prints one
//! solution per valid configuration.
//!
//! The language's semantics carry over exactly: `/` and `%` become `div` and `mod` (both truncate
//! toward zero), and each constraint `e` becomes `defined(e) /\ e`, where `defined` follows C's
//! short-circuit evaluation, so a division by zero that ndtune evaluates makes the whole constraint
//! false, as in ndtune (MiniZinc's own rule would make only the innermost condition false).
//! Conditionals, `in`, `**` and `true`/`false` carry over too. What has no exact MiniZinc
//! counterpart (real numbers, identifiers, `//`, Python's `%`, bitwise operators, the
//! functions beyond `min`/`max`/`abs`) is refused with the constraint that uses it.

use crate::domain::Values;
use crate::expr::{BinOp, Dialect, Expr, ExprKind, Func};
use crate::platform::Model;
use crate::problem::{Location, Problem, ProblemError};
use ndtune_core::{Coding, Value};
use ndtune_device::{DeviceProfile, PROPERTY_NAMES};
use std::fmt::Write;

/// The platform constraint model: device data declarations, the predicate of eq. 1-3
/// (`ndtune_platform`) and that of the legal model (`ndtune_platform_legal`, without eq. 3).
pub fn platform_model() -> String {
    let mut s = String::from(
        "% ndtune platform constraint model (Erdem et al. 2018, §2.1, eq. 1-3).\n\
         % Device data come from one .dzn file written by `ndtune devices --mzn DIR`.\n",
    );
    for p in PROPERTY_NAMES {
        let _ = writeln!(s, "int: device_{p};");
    }
    s.push_str(
        "array[1..3] of int: device_max_work_item_sizes =\n  \
         [device_max_work_item_size_x, device_max_work_item_size_y, device_max_work_item_size_z];\n\n\
         % A launch of global size `global` in work-groups of `local` (1 to 3 dimensions) needing\n\
         % `local_mem` bytes of local memory per work-group, within what the device enforces\n\
         % ([space] platform = \"legal\").\n\
         predicate ndtune_platform_legal(array[int] of var int: global, array[int] of var int: local,\n                                var int: local_mem) =\n  \
         forall(d in index_set(local))(1 <= local[d] /\\ local[d] <= device_max_work_item_sizes[d])\n  \
         /\\ product(local) <= device_max_work_group_size\n  \
         /\\ forall(d in index_set(local))(global[d] mod local[d] = 0)\n  \
         /\\ 0 <= local_mem /\\ local_mem <= device_local_mem_size;\n\n\
         % The seed's model (the default): also eq. 3, at least as many work-groups as compute units,\n\
         % the product of the per-dimension group counts (the paper typesets a sum; its text means the\n\
         % total).\n\
         predicate ndtune_platform(array[int] of var int: global, array[int] of var int: local,\n                          var int: local_mem) =\n  \
         ndtune_platform_legal(global, local, local_mem)\n  \
         /\\ product(d in index_set(local))(global[d] div local[d]) >= device_compute_units;\n",
    );
    s
}

/// One device's data file for [`platform_model`].
pub fn device_data(profile: &DeviceProfile) -> String {
    let mut s = format!("% {} ({})\n", profile.name, profile.vendor);
    for (name, value) in profile.properties() {
        let _ = writeln!(s, "device_{name} = {value};");
    }
    s
}

/// A file name for a device's data file: its index (or key) and a tidy form of its name.
pub fn data_file_name(prefix: &str, profile: &DeviceProfile) -> String {
    let tidy: String = profile
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    format!("{prefix}-{tidy}.dzn")
}

/// The model of one problem; solve it with [`platform_model`] and one device's data file.
pub fn problem_model(name: &str, problem: &Problem) -> Result<String, ProblemError> {
    let params = problem.resolve_params()?;
    let mut s = format!(
        "% ndtune space model of kernel `{name}`: solve with platform.mzn and one device .dzn\n"
    );
    for (k, v) in &problem.constants {
        match v {
            Value::Int(v) => {
                let _ = writeln!(s, "int: k_{k} = {v};");
            }
            // A constant no constraint can use in MiniZinc is left out; one that is used is
            // refused with that constraint (an unknown name to the translation).
            _ => {
                let _ = writeln!(s, "% constant {k} = {v} has no MiniZinc integer form");
            }
        }
    }
    for p in &params {
        if let Coding::Table(_) = p.coding {
            return Err(ProblemError {
                location: Location::Param(p.name.clone()),
                message: "a parameter of real or identifier values has no MiniZinc export".into(),
            });
        }
        let _ = writeln!(s, "var {}: p_{};", domain(&p.values), p.name);
    }
    let is_param = |n: &str| problem.params.iter().any(|p| p.name == n);
    let int_constant = |n: &str| matches!(problem.constants.get(n), Some(Value::Int(_)));
    let names = Names {
        is_param: &is_param,
        int_constant: &int_constant,
    };
    let parse = |src: &str, dialect: Dialect, location: Location| {
        let e = Expr::parse_in(src, dialect).map_err(|e| ProblemError {
            location: location.clone(),
            message: e.to_string(),
        })?;
        let t = translate(&e, &names).map_err(|message| ProblemError {
            location,
            message: format!("cannot be exported to MiniZinc: {message}"),
        })?;
        Ok::<_, ProblemError>(t)
    };
    for (src, dialect, location) in problem.user_constraints() {
        let (value, defined) = parse(src, dialect, location)?;
        let _ = writeln!(s, "% {src}\nconstraint {};", and(&defined, &value));
    }
    if let Some(l) = &problem.launch {
        let list = |items: &[String], loc: fn(usize) -> Location| -> Result<String, ProblemError> {
            let parts = items
                .iter()
                .enumerate()
                .map(|(d, src)| Ok(parse(src, Dialect::C, loc(d))?.0))
                .collect::<Result<Vec<_>, ProblemError>>()?;
            Ok(format!("[{}]", parts.join(", ")))
        };
        let mem = match &l.local_mem {
            Some(src) => parse(src, Dialect::C, Location::LocalMem)?.0,
            None => "0".to_string(),
        };
        let local = list(&l.local, Location::Local)?;
        let predicate = match problem.platform {
            Model::Erdem => "ndtune_platform",
            Model::Legal => "ndtune_platform_legal",
        };
        let _ = writeln!(
            s,
            "constraint {predicate}({}, {local}, {mem});",
            list(&l.global, Location::Global)?,
        );
    }
    s.push_str("solve satisfy;\noutput [");
    let fields: Vec<String> = params
        .iter()
        .map(|p| format!("\"{}=\\(p_{})\"", p.name, p.name))
        .collect();
    let _ = writeln!(s, "{}, \"\\n\"];", fields.join(", \" \", "));
    Ok(s)
}

fn domain(v: &Values) -> String {
    match v {
        Values::Arith { start, step: 1, .. } => format!("{start}..{}", v.max()),
        Values::Arith { start, step, len } => {
            format!("{{{start} + {step} * i | i in 0..{}}}", len - 1)
        }
        Values::Explicit(items) => {
            let items: Vec<String> = items.iter().map(i64::to_string).collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

fn and(a: &str, b: &str) -> String {
    match (a, b) {
        ("true", x) | (x, "true") => x.to_string(),
        _ => format!("({a} /\\ {b})"),
    }
}

fn or(a: &str, b: &str) -> String {
    if a == "true" || b == "true" {
        "true".into()
    } else {
        format!("({a} \\/ {b})")
    }
}

/// How names translate: parameters and integer constants.
struct Names<'a> {
    is_param: &'a dyn Fn(&str) -> bool,
    int_constant: &'a dyn Fn(&str) -> bool,
}

/// (value, definedness) of an expression in MiniZinc, or why it has none.
fn translate(e: &Expr, names: &Names) -> Result<(String, String), String> {
    let all = |args: &[Expr]| -> Result<(Vec<String>, String), String> {
        let parts = args
            .iter()
            .map(|a| translate(a, names))
            .collect::<Result<Vec<_>, String>>()?;
        let defined = parts
            .iter()
            .fold("true".to_string(), |acc, p| and(&acc, &p.1));
        Ok((parts.into_iter().map(|p| p.0).collect(), defined))
    };
    Ok(match &e.kind {
        ExprKind::Int(v) if *v < 0 => (format!("({v})"), "true".into()),
        ExprKind::Int(v) => (v.to_string(), "true".into()),
        ExprKind::Bool(b) => (b.to_string(), "true".into()),
        ExprKind::Name(n) => {
            let name = if let Some(p) = n.strip_prefix("device.") {
                format!("device_{p}")
            } else if (names.is_param)(n) {
                format!("p_{n}")
            } else if (names.int_constant)(n) {
                format!("k_{n}")
            } else {
                return Err(format!("`{n}` is not an integer"));
            };
            (name, "true".into())
        }
        ExprKind::Neg(a) => {
            let (v, d) = translate(a, names)?;
            (format!("(-{v})"), d)
        }
        ExprKind::Not(a) => {
            let (v, d) = translate(a, names)?;
            (format!("(not {v})"), d)
        }
        ExprKind::Call(f @ (Func::Min | Func::Max | Func::Abs), args) => {
            let (values, defined) = all(args)?;
            let text = match f {
                Func::Abs => format!("abs({})", values[0]),
                _ => format!("{}([{}])", f.name(), values.join(", ")),
            };
            (text, defined)
        }
        ExprKind::Cond(c, a, b) => {
            let (vc, dc) = translate(c, names)?;
            let (va, da) = translate(a, names)?;
            let (vb, db) = translate(b, names)?;
            let defined = and(&dc, &format!("(if {vc} then {da} else {db} endif)"));
            (format!("(if {vc} then {va} else {vb} endif)"), defined)
        }
        ExprKind::In {
            item,
            list,
            negated,
        } => {
            let (vi, di) = translate(item, names)?;
            let (values, dl) = all(list)?;
            let set = format!("{{{}}}", values.join(", "));
            let test = format!("({vi} in {set})");
            let value = if *negated {
                format!("(not {test})")
            } else {
                test
            };
            (value, and(&di, &dl))
        }
        ExprKind::Bin(op, a, b) => {
            let (va, da) = translate(a, names)?;
            let (vb, db) = translate(b, names)?;
            let sym = match op {
                BinOp::Div => "div",
                BinOp::Rem => "mod",
                BinOp::Eq => "=",
                BinOp::And => "/\\",
                BinOp::Or => "\\/",
                BinOp::Pow => "^",
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Ne => op.symbol(),
                BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => op.symbol(),
                other => {
                    return Err(format!(
                        "`{}` has no exact MiniZinc counterpart here",
                        other.symbol()
                    ))
                }
            };
            let defined = match op {
                BinOp::And => and(&da, &or(&format!("(not {va})"), &db)),
                BinOp::Or => and(&da, &or(&va, &db)),
                BinOp::Div | BinOp::Rem => and(&and(&da, &db), &format!("({vb} != 0)")),
                BinOp::Pow => and(&and(&da, &db), &format!("({vb} >= 0)")),
                _ => and(&da, &db),
            };
            (format!("({va} {sym} {vb})"), defined)
        }
        ExprKind::Real(v) => return Err(format!("the real number {v:?}")),
        ExprKind::Str(v) => return Err(format!("the identifier '{v}'")),
        ExprKind::BitNot(_) => return Err("`~` has no exact MiniZinc counterpart".into()),
        ExprKind::Call(f, _) => {
            return Err(format!(
                "`{}()` has no exact MiniZinc counterpart",
                f.name()
            ))
        }
    })
}

/// The platform model and one data file per device (its key in the file name, its profile), as
/// (file name, text): what `ndtune devices --mzn` and `ndtune space --mzn` write beside a
/// problem's model.
pub fn platform_files<'a>(
    devices: impl IntoIterator<Item = (&'a str, &'a DeviceProfile)>,
) -> Vec<(String, String)> {
    std::iter::once(("platform.mzn".to_string(), platform_model()))
        .chain(
            devices
                .into_iter()
                .map(|(key, p)| (data_file_name(key, p), device_data(p))),
        )
        .collect()
}

/// Why model files could not be written: the folder or the file, and the system's reason.
#[derive(Debug, thiserror::Error)]
pub enum ModelFileError {
    #[error("cannot create {}: {source}", dir.display())]
    Folder {
        dir: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    File {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// Writes `files` (name, text) into `dir`, made first where missing.
pub fn write_files(
    dir: &std::path::Path,
    files: &[(String, String)],
) -> Result<(), ModelFileError> {
    std::fs::create_dir_all(dir).map_err(|source| ModelFileError::Folder {
        dir: dir.to_path_buf(),
        source,
    })?;
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| ModelFileError::File { path, source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: Names = Names {
        is_param: &|_| true,
        int_constant: &|_| true,
    };

    #[test]
    fn what_has_no_minizinc_form_is_refused() {
        for src in [
            "X & 1 == 0",
            "X // 2 > 1",
            "X * 0.5 > 1",
            "T == 'float'",
            "sqrt(X) > 2",
        ] {
            let e = Expr::parse(src).unwrap();
            assert!(translate(&e, &NAMES).is_err(), "{src}");
        }
        let e = Expr::parse("(X > 2 ? X : 2) == 2 and X in [1, 2]").unwrap();
        let (v, _) = translate(&e, &NAMES).unwrap();
        assert_eq!(
            v,
            "(((if (p_X > 2) then p_X else 2 endif) = 2) /\\ (p_X in {1, 2}))"
        );
    }

    #[test]
    fn short_circuit_definedness_is_kept() {
        let e = Expr::parse("X == 0 || Y / X > 1").unwrap();
        let (v, d) = translate(&e, &NAMES).unwrap();
        assert_eq!(v, "((p_X = 0) \\/ ((p_Y div p_X) > 1))");
        assert_eq!(d, "((p_X = 0) \\/ (p_X != 0))");
    }

    #[test]
    fn names_are_prefixed_by_kind() {
        let e = Expr::parse("N % X <= device.local_mem_size").unwrap();
        let x_only = Names {
            is_param: &|n| n == "X",
            int_constant: &|_| true,
        };
        let (v, d) = translate(&e, &x_only).unwrap();
        assert_eq!(v, "((k_N mod p_X) <= device_local_mem_size)");
        assert_eq!(d, "(p_X != 0)");
    }
}
