//! Inputs for the fuzz targets, three ways each: generators that know the format and build
//! inputs near its edges (extreme numbers, wrong types, missing parts), valid inputs mutated by
//! a few random edits (what a careless hand or a truncated file does), and raw bytes.
//!
//! Expressions nest a few levels at most: the depth limit of the expression parser is tested
//! where it is implemented.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

/// Numbers at the edges of what readers convert: `i64`/`u64`/`u32` limits, zero, negatives,
/// fractions, exponents, NaN and infinities as text, huge and tiny floats.
pub const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "8",
    "32",
    "1024",
    "-4",
    "32.5",
    "0.0",
    "-0",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "1e309",
    "1e-300",
    "5e-324",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "4294967295",
    "4294967296",
    "NaN",
    "inf",
    "-inf",
    "1_000",
    "0x10",
    "",
    " 7 ",
];

/// A number from [`NUMBERS`] or any integer or float.
pub fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(NUMBERS).prop_map(str::to_string),
        1 => any::<i64>().prop_map(|v| v.to_string()),
        1 => (0i64..5000).prop_map(|v| v.to_string()),
        1 => any::<f64>().prop_map(|v| v.to_string()),
    ]
}

/// Any bytes, as text where a reader takes text (invalid UTF-8 replaced).
pub fn raw_text() -> impl Strategy<Value = String> {
    prop_oneof![
        vec(any::<u8>(), 0..200).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        "\\PC{0,120}",
    ]
}

/// One edit of a text.
#[derive(Debug, Clone)]
enum Edit {
    /// Delete up to `len` characters from a position (a fraction of the text).
    Delete(f64, usize),
    /// Insert a fragment at a position.
    Insert(f64, String),
    /// Repeat a stretch of up to `len` characters in place.
    Repeat(f64, usize),
    /// Keep only the text before a position.
    Truncate(f64),
}

fn edit(fragments: &'static [&'static str]) -> impl Strategy<Value = Edit> {
    let fragment = prop_oneof![
        3 => select(fragments).prop_map(str::to_string),
        1 => number(),
        1 => "\\PC{1,4}",
    ];
    prop_oneof![
        2 => (0.0..1.0f64, 1usize..20).prop_map(|(at, n)| Edit::Delete(at, n)),
        3 => (0.0..1.0f64, fragment).prop_map(|(at, f)| Edit::Insert(at, f)),
        1 => (0.0..1.0f64, 1usize..40).prop_map(|(at, n)| Edit::Repeat(at, n)),
        1 => (0.0..1.0f64).prop_map(Edit::Truncate),
    ]
}

/// The character index nearest `at` (a fraction) of a text of `len` characters, as a byte offset.
fn offset(text: &str, at: f64) -> usize {
    let chars = text.chars().count();
    let k = ((chars as f64) * at) as usize;
    text.char_indices().nth(k).map_or(text.len(), |(i, _)| i)
}

fn apply(mut text: String, edits: Vec<Edit>) -> String {
    for e in edits {
        match e {
            Edit::Delete(at, n) => {
                let from = offset(&text, at);
                let to = text[from..]
                    .char_indices()
                    .nth(n)
                    .map_or(text.len(), |(i, _)| from + i);
                text.replace_range(from..to, "");
            }
            Edit::Insert(at, fragment) => {
                let at = offset(&text, at);
                text.insert_str(at, &fragment);
            }
            Edit::Repeat(at, n) => {
                let from = offset(&text, at);
                let to = text[from..]
                    .char_indices()
                    .nth(n)
                    .map_or(text.len(), |(i, _)| from + i);
                let stretch = text[from..to].to_string();
                text.insert_str(to, &stretch);
            }
            Edit::Truncate(at) => {
                let at = offset(&text, at);
                text.truncate(at);
            }
        }
    }
    text
}

/// Texts of `base` after up to three edits with `fragments` of the format.
pub fn mutated(
    base: impl Strategy<Value = String>,
    fragments: &'static [&'static str],
) -> impl Strategy<Value = String> {
    (base, vec(edit(fragments), 0..4)).prop_map(|(text, edits)| apply(text, edits))
}

/// Names an expression may use: the fuzz scope's parameters `X`, `Y`, `Z`, constants `N`, `M`,
/// device properties, and names nothing defines.
pub const NAMES: &[&str] = &[
    "X",
    "Y",
    "Z",
    "N",
    "M",
    "device.max_work_group_size",
    "device.local_mem_size",
    "device.compute_units",
    "device.no_such_property",
    "device",
    "Q",
    "min",
    "_x1",
];

const BINARY: &[&str] = &[
    "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||",
];

const EXPR_FRAGMENTS: &[&str] = &[
    "(",
    ")",
    ",",
    "&&",
    "||",
    "!",
    "-",
    "min(",
    "max(",
    "device.",
    " ",
    "\0",
    "é",
    "==",
    "<",
    "9223372036854775808",
    "1e3",
    ".",
    "$",
];

/// Expressions of the constraint language, a few levels deep, over [`NAMES`] and [`NUMBERS`].
pub fn expr_tree() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        2 => select(NAMES).prop_map(str::to_string),
        1 => select(&NUMBERS[..24]).prop_map(str::to_string),
        2 => (-3i64..300).prop_map(|v| v.to_string()),
    ];
    leaf.prop_recursive(5, 48, 3, |inner| {
        prop_oneof![
            (select(&["-", "!", "- -", "!!"][..]), inner.clone())
                .prop_map(|(op, e)| format!("{op}{e}")),
            (inner.clone(), select(BINARY), inner.clone())
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            inner.clone().prop_map(|e| format!("({e})")),
            (select(&["min", "max", "MIN", "abs"][..]), vec(inner, 0..4))
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
        ]
    })
}

/// Expression texts: generated, generated and edited, or raw.
pub fn expr() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => expr_tree(),
        3 => mutated(expr_tree(), EXPR_FRAGMENTS),
        1 => raw_text(),
    ]
}

/// The shipped example specs: real inputs to mutate.
pub const EXAMPLE_SPECS: &[&str] = &[
    include_str!("../../../examples/matmul.toml"),
    include_str!("../../../examples/conv1d.toml"),
    include_str!("../../../examples/cnn.toml"),
    include_str!("../../../examples/sgemm.toml"),
    include_str!("../../../examples/xgemm-space.toml"),
];

const SPEC_FRAGMENTS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    "=",
    "\"",
    ",",
    "\n",
    "[params]\n",
    "[launch]\n",
    "[[args]]\n",
    "[constants]\n",
    "[space]\n",
    "[verify]\n",
    "[measure]\n",
    "[split]\n",
    "range = [1, 8]",
    "pow2 = [1, 4096]",
    "divisors = \"N\"",
    "step = 0",
    "local_mem = ",
    "constraints = [\"",
    "#",
    "'''",
    "\\u0000",
    "true",
    "1e400",
    "-",
    "X = ",
    "N = ",
];

/// A TOML value as a spec's `[constants]`, sizes and expressions may hold it: integers at the
/// edges, expressions, and wrong types.
fn spec_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(&NUMBERS[..24]).prop_map(|n| n.replace("NaN", "nan")),
        2 => (-5i64..5000).prop_map(|v| v.to_string()),
        3 => expr_tree().prop_map(|e| format!("{e:?}")),
        1 => select(&["true", "[1, 2]", "{ a = 1 }", "\"\"", "1.5", "\"1.5\"", "-0.0"][..])
            .prop_map(str::to_string),
    ]
}

/// A parameter's domain as written in `[params]`.
fn domain() -> impl Strategy<Value = String> {
    let bound = || {
        prop_oneof![
            3 => (-4i64..5000).prop_map(|v| v.to_string()),
            1 => select(&NUMBERS[..24]).prop_map(str::to_string),
        ]
    };
    prop_oneof![
        (bound(), bound()).prop_map(|(a, b)| format!("{{ range = [{a}, {b}] }}")),
        (bound(), bound(), bound())
            .prop_map(|(a, b, s)| format!("{{ range = [{a}, {b}], step = {s} }}")),
        (bound(), bound()).prop_map(|(a, b)| format!("{{ pow2 = [{a}, {b}] }}")),
        vec(bound(), 0..6).prop_map(|v| format!("[{}]", v.join(", "))),
        select(&["\"N\"", "\"2 * M\"", "\"X\"", "\"N / 0\"", "\"1024\""][..])
            .prop_map(|e| format!("{{ divisors = {e} }}")),
        select(
            &[
                "{}",
                "{ range = [1] }",
                "3",
                "\"x\"",
                "{ range = [1, 2], pow2 = [1, 2] }"
            ][..]
        )
        .prop_map(str::to_string),
    ]
}

/// An `[[args]]` table.
fn arg() -> impl Strategy<Value = String> {
    (
        select(&["A", "B", "x", ""][..]),
        select(&["buffer", "scalar", "local", "image"][..]),
        select(&["float", "int", "double", "uint", "half", "quaternion"][..]),
        spec_value(),
        select(&["random", "zeros", "ones", "iota", "1.5", "\"x\"", "nan"][..]),
        select(&["read", "write", "read_write", "none"][..]),
        0usize..4,
    )
        .prop_map(|(name, kind, ty, size, init, access, form)| {
            let size = match form {
                0 => format!("len = {size}"),
                1 => format!("value = {size}"),
                2 => format!("bytes = {size}"),
                _ => String::new(),
            };
            let init = if init.starts_with(|c: char| c.is_ascii_alphabetic()) && init != "nan" {
                format!("\"{init}\"")
            } else {
                init.to_string()
            };
            format!(
                "[[args]]\nname = \"{name}\"\nkind = \"{kind}\"\ntype = \"{ty}\"\n{size}\ninit = {init}\naccess = \"{access}\"\n"
            )
        })
}

/// Spec files built section by section, each present or not, with values near the edges.
pub fn spec_tree() -> impl Strategy<Value = String> {
    let constants = vec(
        (select(&["N", "M", "WG", "device", "K-1"][..]), spec_value()),
        0..4,
    );
    let params = vec((select(&["X", "Y", "Z", "N", "WG"][..]), domain()), 0..4);
    let sizes = || vec(spec_value(), 0..4);
    let launch = proptest::option::of((sizes(), sizes(), proptest::option::of(spec_value())));
    let constraints = vec(expr_tree(), 0..4);
    let args = vec(arg(), 0..3);
    let measure = proptest::option::of(vec(
        (
            select(&["warmup", "runs", "best_of", "flops", "bytes"][..]),
            spec_value(),
        ),
        0..4,
    ));
    (
        select(&["k", "", "matmul", "1x"][..]),
        constants,
        params,
        launch,
        constraints,
        args,
        measure,
    )
        .prop_map(
            |(name, constants, params, launch, constraints, args, measure)| {
                let mut t = format!("[kernel]\nname = \"{name}\"\n");
                t += "[constants]\n";
                for (k, v) in constants {
                    t += &format!("{k} = {v}\n");
                }
                t += "[params]\n";
                for (k, d) in params {
                    t += &format!("{k} = {d}\n");
                }
                if let Some((global, local, local_mem)) = launch {
                    t += &format!(
                        "[launch]\nglobal = [{}]\nlocal = [{}]\n",
                        global.join(", "),
                        local.join(", ")
                    );
                    if let Some(m) = local_mem {
                        t += &format!("local_mem = {m}\n");
                    }
                }
                let quoted: Vec<String> = constraints.iter().map(|c| format!("{c:?}")).collect();
                t += &format!("[space]\nconstraints = [{}]\n", quoted.join(", "));
                for a in args {
                    t += &a;
                }
                if let Some(m) = measure {
                    t += "[measure]\n";
                    for (k, v) in m {
                        t += &format!("{k} = {v}\n");
                    }
                }
                t
            },
        )
}

/// Spec texts: built, shipped examples edited, built and edited, or raw.
pub fn spec() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => spec_tree(),
        3 => mutated(select(EXAMPLE_SPECS).prop_map(str::to_string), SPEC_FRAGMENTS),
        1 => mutated(spec_tree(), SPEC_FRAGMENTS),
        1 => raw_text(),
    ]
}

const CSV_FRAGMENTS: &[&str] = &[
    ",",
    "\n",
    "\"",
    "measured",
    "refused",
    "f_x",
    "wg_c",
    "runtime_ms",
    "\r\n",
    ",,",
    "s0",
];

/// The columns `ndtune learn` needs, in the collect format's order.
const LEARN_COLUMNS: &[&str] = &[
    "scenario",
    "device",
    "kernel",
    "dataset",
    "wg_c",
    "wg_r",
    "runtime_ms",
    "status",
];

/// Learning CSV files (the collect format): a header of the needed columns (now and then one
/// missing) and feature columns in any order, then rows of a few scenarios (each row of a
/// scenario with the same features), with a value from [`NUMBERS`] in a cell now and then.
pub fn learn_csv_tree() -> impl Strategy<Value = String> {
    let header = (
        prop_oneof![
            1 => vec(select(&["f_a", "f_b", "f_c", "f_a", "g"][..]), 0..3),
            4 => vec(select(&["f_a", "f_b", "f_c"][..]), 1..4),
        ],
        prop_oneof![
            6 => Just(LEARN_COLUMNS.to_vec()),
            1 => proptest::sample::subsequence(LEARN_COLUMNS, 6..=8),
        ],
        any::<bool>(),
    );
    let odd = || proptest::option::weighted(0.004, number());
    let row = (
        0usize..5,
        (
            select(&[1u64, 4, 8, 16, 32][..]),
            select(&[1u64, 2, 8, 16][..]),
        ),
        0.01f64..10.0,
        prop_oneof![
            60 => Just("measured"),
            4 => Just("refused"),
            2 => Just("crashed"),
            1 => Just("fast"),
        ],
        vec(odd(), 12),
    );
    let features = vec(vec(-1e3f64..1e3, 4), 5);
    (header, features, vec(row, 0..30)).prop_map(|((extra, needed, reverse), features, rows)| {
        let mut columns: Vec<&str> = needed.to_vec();
        columns.extend(extra.iter().copied());
        if reverse {
            columns.reverse();
        }
        let mut t = columns.join(",");
        t.push('\n');
        for (scenario, (wc, wr), ms, status, odd) in rows {
            let line: Vec<String> = columns
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    if let Some(v) = odd.get(i).cloned().flatten() {
                        return v;
                    }
                    match c {
                        "scenario" => format!("s{scenario}"),
                        "device" => format!("d{}", scenario % 2),
                        "kernel" => {
                            format!("{}{}", if scenario < 2 { "syn" } else { "k" }, scenario % 3)
                        }
                        "dataset" => format!("{}x64", 64 << (scenario % 2)),
                        "wg_c" => wc.to_string(),
                        "wg_r" => wr.to_string(),
                        "runtime_ms" => format!("{ms:.4}"),
                        "status" => status.to_string(),
                        _ => format!("{}", features[scenario][c.len() % 4]),
                    }
                })
                .collect();
            t += &line.join(",");
            t.push('\n');
        }
        t
    })
}

/// Learning CSV texts: built, built and edited, or raw.
pub fn learn_csv() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => learn_csv_tree(),
        2 => mutated(learn_csv_tree(), CSV_FRAGMENTS),
        1 => raw_text(),
    ]
}

/// A JSON value of any kind, with numbers at the edges.
fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        3 => select(&NUMBERS[..24]).prop_map(|n| n.replace("NaN", "0").replace("inf", "1e999")),
        1 => select(&["null", "true", "\"\"", "\"x\"", "\"InvalidConfig\"", "\"RuntimeFailedConfig\""][..])
            .prop_map(str::to_string),
        2 => (0i64..64).prop_map(|v| v.to_string()),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            vec((select(&["x", "y", "time", "times", "a"][..]), inner), 0..4).prop_map(|v| {
                let fields: Vec<String> = v.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

const KT_FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\"time\": ",
    "\"times\": [",
    "\"cache\": {",
    "\"ndtune_outcome\": ",
    "null",
    "1e999",
    "\"x\": 2.5",
    "\n",
];

/// Kernel Tuner caches: the header with parameter lists of integers (or not), entries keyed by
/// their values with times, error names or junk, closed or left open as Kernel Tuner leaves a
/// cache while it tunes.
pub fn kt_cache_tree() -> impl Strategy<Value = String> {
    let values = vec(
        prop_oneof![
            4 => (0i64..64).prop_map(|v| v.to_string()),
            1 => select(&NUMBERS[..24]).prop_map(|n| n.replace("NaN", "0")),
            1 => json_value(),
        ],
        0..4,
    );
    let entry = (
        vec(
            prop_oneof![
                4 => (0i64..64).prop_map(|v| v.to_string()),
                1 => json_value(),
            ],
            2,
        ),
        prop_oneof![
            3 => (0.001f64..100.0).prop_map(|t| format!("{t}")),
            1 => json_value(),
            1 => select(&["\"InvalidConfig\"", "\"CompilationFailedConfig\"", "\"RuntimeFailedConfig\"", "\"Nope\""][..])
                .prop_map(str::to_string),
        ],
        proptest::option::of(json_value()),
        proptest::option::of(json_value()),
    );
    (
        values.clone(),
        values,
        vec(entry, 0..6),
        any::<bool>(),
        select(&["\"x\", \"y\"", "\"x\"", "", "\"x\", \"x\"", "3"][..]),
    )
        .prop_map(|(xs, ys, entries, open, keys)| {
            let mut t = format!(
                "{{\"device_name\": \"d\", \"kernel_name\": \"k\", \"problem_size\": [1024], \"tune_params_keys\": [{keys}],\n\"tune_params\": {{\"x\": [{}], \"y\": [{}]}},\n\"objective\": \"time\", \"cache\": {{\n",
                xs.join(", "),
                ys.join(", ")
            );
            for ([x, y], time, times, outcome) in entries
                .into_iter()
                .map(|(v, t, ts, o)| ([v[0].clone(), v[1].clone()], t, ts, o))
            {
                t += &format!("\"{x},{y}\": {{\"x\": {x}, \"y\": {y}, \"time\": {time}");
                if let Some(ts) = times {
                    t += &format!(", \"times\": {ts}");
                }
                if let Some(o) = outcome {
                    t += &format!(", \"ndtune_outcome\": {o}");
                }
                t += "},\n";
            }
            if !open {
                let end = t.trim_end().trim_end_matches(',').len();
                t.truncate(end);
                t += "\n}\n}";
            }
            t
        })
}

/// Kernel Tuner cache files: built, built and edited, gzipped, or raw bytes.
pub fn kt_cache() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => kt_cache_tree().prop_map(String::into_bytes),
        3 => mutated(kt_cache_tree(), KT_FRAGMENTS).prop_map(String::into_bytes),
        1 => kt_cache_tree().prop_map(|t| gzip(t.as_bytes())),
        1 => vec(any::<u8>(), 0..200).prop_map(|mut b| {
            // Some claim to be gzip.
            if b.len() > 2 && b[2] % 2 == 0 {
                b[0] = 0x1f;
                b[1] = 0x8b;
            }
            b
        }),
    ]
}

/// `bytes` gzipped.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).expect("writing to memory");
    e.finish().expect("writing to memory")
}

/// CLTune tables: parameter columns, then run time columns named `... (ms)` (or not), rows of
/// integers and times with values at the edges now and then.
pub fn cltune_tree() -> impl Strategy<Value = String> {
    let cell = || {
        prop_oneof![
            5 => (1i64..128).prop_map(|v| v.to_string()),
            2 => (0.01f64..50.0).prop_map(|v| format!("{v:.2}")),
            1 => number(),
        ]
    };
    (
        vec(select(&["MWG", "NWG", "KWG", "MWG", " "][..]), 0..4),
        vec(
            select(&["Run1 (ms)", "Run2 (ms)", "Run3 (ms)", "time"][..]),
            0..3,
        ),
        vec(vec(cell(), 0..8), 0..12),
    )
        .prop_map(|(params, runs, rows)| {
            let mut t = params
                .iter()
                .chain(runs.iter())
                .copied()
                .collect::<Vec<_>>()
                .join(",");
            t.push('\n');
            for row in rows {
                t += &row.join(",");
                t.push('\n');
            }
            t
        })
}

/// CLTune files: built, built and edited, gzipped, or raw bytes.
pub fn cltune() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => cltune_tree().prop_map(String::into_bytes),
        2 => mutated(cltune_tree(), CSV_FRAGMENTS).prop_map(String::into_bytes),
        1 => cltune_tree().prop_map(|t| gzip(t.as_bytes())),
        1 => vec(any::<u8>(), 0..200),
    ]
}

/// A request to the prediction service: method, path and body.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: &'static str,
    pub path: &'static str,
    pub body: Vec<u8>,
}

const SERVE_FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "null",
    "1e308",
    "-1e308",
    "1e999",
    "\"features\"",
    "\"limits\"",
    "\"local\"",
    "\"scenario\"",
    "\"refused\": true",
    "18446744073709551615",
];

/// A feature value: ordinary, or at the edges of `f64`.
fn feature_value() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => (0.0f64..2048.0).prop_map(|v| format!("{v}")),
        2 => select(&["1e308", "-1e308", "1.7976931348623157e308", "-1.7976931348623157e308", "5e-324", "0", "-1", "4294967296", "18446744073709551615"][..])
            .prop_map(str::to_string),
        1 => any::<f64>().prop_filter("JSON numbers are finite", |v| v.is_finite()).prop_map(|v| format!("{v:e}")),
    ]
}

/// The features a model knows: its names, and its training rows' values.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    pub names: &'static [&'static str],
    pub rows: &'static [Vec<f64>],
}

/// A scenario of a request: features (a training row's, changed a little or to the edges of
/// `f64` here and there; or the model's names with any values, some missing or extra), or a
/// device, kernel and dataset, with limits now and then.
fn scenario_json(known: Known) -> impl Strategy<Value = String> {
    let feature_names = known.names;
    let near = (
        select(known.rows),
        vec((0..feature_names.len(), feature_value()), 0..3),
        -0.1f64..0.1,
    )
        .prop_map(move |(row, changes, scale)| {
            let mut values: Vec<String> = row
                .iter()
                .map(|v| format!("{}", v * (1.0 + scale)))
                .collect();
            for (j, v) in changes {
                values[j] = v;
            }
            let fields: Vec<String> = feature_names
                .iter()
                .zip(&values)
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect();
            format!("\"features\":{{{}}}", fields.join(","))
        });
    let features = vec(
        (
            prop_oneof![
                9 => select(feature_names).prop_map(str::to_string),
                1 => Just("f_unused".to_string()),
            ],
            feature_value(),
        ),
        0..feature_names.len() + 2,
    )
    .prop_map(|fs| {
        let fields: Vec<String> = fs.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("\"features\":{{{}}}", fields.join(","))
    });
    let big = || {
        prop_oneof![
            3 => (0u64..4096).prop_map(|v| v.to_string()),
            1 => select(&["0", "18446744073709551615", "4294967295", "-1", "1.5", "1e20"][..])
                .prop_map(str::to_string),
        ]
    };
    let limits = proptest::option::of((big(), big(), big(), big(), big(), big()))
        .prop_map(|l| match l {
            None => String::new(),
            Some((g, x, y, m, b, i)) => format!(
                ",\"limits\":{{\"max_work_group_size\":{g},\"max_work_item_sizes\":[{x},{y}],\"local_mem_size\":{m},\"border\":[{b},1,{b},1],\"input_bytes\":{i}}}"
            ),
        });
    let described = (
        select(&["\"gtx-titan\"", "\"gt550m\"", "\"no-such\"", "3", "{\"name\":\"x\"}"][..]),
        select(&["{\"hash\":\"0123\"}", "{\"source\":\"kernel void k(global float* a) { a[0] = 1.0f; }\"}", "{}", "{\"source\":\"x\",\"hash\":\"y\"}"][..]),
        big(),
        big(),
        select(&["float", "double", "int", "quaternion", ""][..]),
        big(),
    )
        .prop_map(|(device, kernel, rows, cols, ty, border)| {
            format!(
                "\"device\":{device},\"kernel\":{kernel},\"dataset\":{{\"rows\":{rows},\"cols\":{cols},\"input\":\"{ty}\",\"border\":[{border},0,{border},0]}}"
            )
        });
    (
        prop_oneof![4 => near, 2 => features, 1 => described],
        limits,
    )
        .prop_map(|(scenario, limits)| format!("{{{scenario}{limits}}}"))
}

/// Requests to the service: predictions and observations built from the model's feature names
/// with values at the edges (observations often enough to train again), edited, raw, and other
/// methods and paths.
pub fn serve_request(known: Known) -> impl Strategy<Value = HttpRequest> {
    let side = || {
        prop_oneof![
            4 => select(&[1u64, 2, 4, 8, 16, 32, 64][..]).prop_map(|v| v.to_string()),
            1 => select(&["0", "18446744073709551615", "4294967296", "-8", "2.5"][..]).prop_map(str::to_string),
        ]
    };
    let runtime = prop_oneof![
        4 => (0.01f64..100.0).prop_map(|v| format!("\"runtime_ms\":{v}")),
        1 => select(&["\"runtime_ms\":0", "\"runtime_ms\":-1", "\"runtime_ms\":1e-300", "\"runtime_ms\":1e300", "\"refused\":true", "\"runtime_ms\":1,\"refused\":true", ""][..])
            .prop_map(str::to_string),
    ];
    let predict = scenario_json(known).prop_map(|body| HttpRequest {
        method: "POST",
        path: "/v1/predict",
        body: body.into_bytes(),
    });
    let observe =
        (scenario_json(known), side(), side(), runtime).prop_map(|(scenario, c, r, runtime)| {
            let runtime = if runtime.is_empty() {
                String::new()
            } else {
                format!(",{runtime}")
            };
            HttpRequest {
                method: "POST",
                path: "/v1/observe",
                body: format!("{{\"scenario\":{scenario},\"local\":[{c},{r}]{runtime}}}")
                    .into_bytes(),
            }
        });
    let edited = (
        select(&["/v1/predict", "/v1/observe"][..]),
        mutated(scenario_json(known), SERVE_FRAGMENTS),
    )
        .prop_map(|(path, body)| HttpRequest {
            method: "POST",
            path,
            body: body.into_bytes(),
        });
    let other = (
        select(&["GET", "POST", "PUT", "DELETE"][..]),
        select(
            &[
                "/v1/predict",
                "/v1/observe",
                "/v1/health",
                "/metrics",
                "/",
                "/v1/../metrics",
            ][..],
        ),
        vec(any::<u8>(), 0..64),
    )
        .prop_map(|(method, path, body)| HttpRequest { method, path, body });
    prop_oneof![
        3 => predict,
        3 => observe,
        2 => edited,
        1 => other,
    ]
}

/// Where a generated kernel names the fuzz target's secret file (replaced by its path).
pub const SECRET: &str = "@SECRET@";

/// Pieces of the preprocessor and of clang's options that reach files, or that could be put
/// together to (digraphs, splices, pasting, pragmas), and harmless pieces around them.
const KERNEL_FRAGMENTS: &[&str] = &[
    "#include \"@SECRET@\"\n",
    "#include <@SECRET@>\n",
    "%:include \"@SECRET@\"\n",
    "#inc\\\nlude \"@SECRET@\"\n",
    "#  include_next <@SECRET@>\n",
    "#embed \"@SECRET@\"\n",
    "#import \"@SECRET@\"\n",
    "#pragma GCC dependency \"@SECRET@\"\n",
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
    "#if __has_include(\"@SECRET@\")\n#endif\n",
    "_Pragma(\"GCC dependency \\\"@SECRET@\\\"\")",
    "#define P(a, b) a ## b\n",
    "#define Q(a, b) a %:%: b\n",
    "??=include \"@SECRET@\"\n",
    "#define X 1\n",
    "#if X\n",
    "#endif\n",
    "/*",
    "*/",
    "//",
    "\"",
    "'",
    "\\",
    "\n",
    "#",
    "%:",
];

const KERNEL: &str = "#define W 4\nkernel void k(global float *a) {\n  // a comment\n  a[get_global_id(0)] *= (float)W;\n}\n";

/// Kernel sources as a client may send them: an ordinary kernel edited with
/// [`KERNEL_FRAGMENTS`], or raw text.
pub fn request_kernel() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => mutated(Just(KERNEL.to_string()), KERNEL_FRAGMENTS),
        1 => raw_text(),
    ]
}

/// Pieces that clang reads as white space, or as nothing, between a line's start, its `#`, the
/// directive's name and its operand: comments, line splices, a byte-order mark, form and line
/// feeds, carriage returns.
const DIRECTIVE_GAPS: &[&str] = &[
    "",
    " ",
    "\t",
    "\x0b",
    "\x0c",
    "/**/",
    "/* a\n b */",
    "\\\n",
    "\\\r\n",
    "\\ \n",
    "\u{feff}",
];

/// How a line may end before a directive: newline, lone carriage return, both, a comment.
const LINE_ENDS: &[&str] = &["\n", "\r", "\r\n", "// x\n", "/* x */\n"];

/// Spellings of `#` and of the directives and operators that read a file.
const HASHES: &[&str] = &["#", "%:", "??="];
const READING: &[&str] = &["include", "include_next", "import", "embed"];

/// A directive that reads [`SECRET`], respelt as clang would still read it (or nearly: the
/// generator does not know which it accepts): gaps inside and around the `#` and the name,
/// splices inside the name, lines ended every way; or the file named through a macro, a
/// `__has_include`, a `_Pragma`, a macro that expands to a pragma. Put before or after an
/// ordinary kernel.
pub fn directive_respelling() -> impl Strategy<Value = String> {
    let gap = || select(DIRECTIVE_GAPS);
    let direct = (
        select(LINE_ENDS),
        gap(),
        select(HASHES),
        gap(),
        select(READING),
        0usize..8,
        gap(),
        gap(),
        any::<bool>(),
    )
        .prop_map(
            |(end, before, hash, after, name, split, splice, operand, angled)| {
                let split = split.min(name.len());
                let name = format!("{}{}{}", &name[..split], splice, &name[split..]);
                let file = if angled { "<@SECRET@>" } else { "\"@SECRET@\"" };
                format!("int before;{end}{before}{hash}{after}{name}{operand}{file}\n")
            },
        );
    let indirect = prop_oneof![
        Just("#define H \"@SECRET@\"\n#include H\n".to_string()),
        Just("#define H(x) #x\n#include H(@SECRET@)\n".to_string()),
        Just("#define I include\n#I \"@SECRET@\"\n".to_string()),
        Just("#if __has_include(\"@SECRET@\")\n#error seen\n#endif\n".to_string()),
        Just("#if __has_include_next(<@SECRET@>)\n#endif\n".to_string()),
        Just("_Pragma(\"GCC dependency \\\"@SECRET@\\\"\")\n".to_string()),
        Just("#define P _Pragma(\"GCC dependency \\\"@SECRET@\\\"\")\nP\n".to_string()),
        Just("#define D(x) _Pragma(#x)\nD(GCC dependency \"@SECRET@\")\n".to_string()),
        Just("#pragma clang __debug parser_crash\n".to_string()),
        Just("#line 1 \"@SECRET@\"\n#error here\n".to_string()),
    ];
    (prop_oneof![3 => direct, 1 => indirect], any::<bool>()).prop_map(|(directive, first)| {
        match first {
            true => format!("{directive}{KERNEL}"),
            false => format!("{KERNEL}{directive}"),
        }
    })
}

const OPTION_WORDS: &[&str] = &[
    "-D",
    "-DN=4",
    "-D X=_Pragma(\"x\")",
    "-DY=a##b",
    "-U",
    "-UX",
    "-cl-mad-enable",
    "-cl-std=CL1.2",
    "-cl-ext=@@SECRET@",
    "-I",
    "-I/",
    "-o",
    "-MD",
    "-MF",
    "@@SECRET@",
    "@SECRET@",
    "-fplugin=@SECRET@",
    "-Xclang",
    "-load",
    "-include",
    "--",
    "-",
    "-x",
    "c",
];

/// Build options as a client may send them: words of [`OPTION_WORDS`].
pub fn request_options() -> impl Strategy<Value = String> {
    vec(select(OPTION_WORDS), 0..5).prop_map(|w| w.join(" "))
}

/// A file given to a reader: bytes (plain, gzipped, or a small gzip bomb), or something that is
/// no regular file.
#[derive(Debug, Clone)]
pub enum InputFile {
    Bytes(Vec<u8>),
    Gzip(Vec<u8>),
    /// `n` MiB of zeros, gzipped (some kilobytes).
    Bomb(usize),
    Fifo,
    DevZero,
    Directory,
}

/// Text near the readers' formats: JSON objects, CSV headers, an `.npy` header, TOML.
const FILE_SEEDS: &[&str] = &[
    "{}",
    "[]",
    "{\"format\": 1}",
    "{\"name\": \"gpu\", \"max_work_group_size\": 1024}",
    "scenario,device,kernel,dataset,f_a,wg_c,wg_r,runtime_ms,status\ns,d,k,x,1,8,8,1.0,measured\n",
    "\u{93}NUMPY\u{1}\u{0}v\u{0}{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
    "[campaign]\nname = \"x\"\n",
    "name = \"blur\"\n",
    "A,B,time (ms)\n1,2,3.5\n",
];

/// Files for every reader of the readers' target.
pub fn input_file() -> impl Strategy<Value = InputFile> {
    prop_oneof![
        4 => mutated(select(FILE_SEEDS).prop_map(String::from), KT_FRAGMENTS)
            .prop_map(|t| InputFile::Bytes(t.into_bytes())),
        2 => vec(any::<u8>(), 0..300).prop_map(InputFile::Bytes),
        1 => select(FILE_SEEDS).prop_map(|t| InputFile::Gzip(t.as_bytes().to_vec())),
        1 => (1usize..4).prop_map(InputFile::Bomb),
        1 => Just(InputFile::Fifo),
        1 => Just(InputFile::DevZero),
        1 => Just(InputFile::Directory),
    ]
}
