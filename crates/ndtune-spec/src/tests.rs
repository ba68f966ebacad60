//! Bad input gets a clear error naming file, line and column; good input validates.

use crate::{ArgKind, Init, Race, Reference, Spec};
use std::path::Path;

fn parse(text: &str) -> Result<Spec, String> {
    Spec::parse(text, Path::new("t.toml")).map_err(|e| e.to_string())
}

const HEAD: &str = "[kernel]\nname = \"k\"\n";

#[test]
fn malformed_toml_names_line_and_column() {
    let e = parse("[kernel]\nname = \"k\"\n[params]\nX = [1 2]\nY = [3]\n").unwrap_err();
    assert!(e.starts_with("t.toml:4:"), "{e}");
}

#[test]
fn unknown_keys_are_refused_where_they_stand() {
    let e = parse(&format!("{HEAD}nmae = 1\n[params]\nX = [1]\n")).unwrap_err();
    assert!(
        e.starts_with("t.toml:3:1:") && e.contains("unknown field `nmae`"),
        "{e}"
    );
    let e = parse(&format!("{HEAD}[params]\nX = [1]\n[spaec]\n")).unwrap_err();
    assert!(e.contains("unknown field `spaec`"), "{e}");
    let e = parse(&format!("{HEAD}[params]\nX = {{ rnage = [1, 4] }}\n")).unwrap_err();
    assert!(
        e.starts_with("t.toml:4:5:") && e.contains("unknown key `rnage`"),
        "{e}"
    );
}

#[test]
fn empty_domain_is_an_error() {
    let e = parse(&format!("{HEAD}[params]\nX = [1, 2]\nY = []\n")).unwrap_err();
    assert_eq!(e, "t.toml:5:5: [params] Y: the domain is empty");
    let e = parse(&format!("{HEAD}[params]\nY = {{ range = [9, 3] }}\n")).unwrap_err();
    assert!(e.ends_with("[params] Y: the domain is empty"), "{e}");
}

#[test]
fn unknown_name_in_a_constraint_points_at_it() {
    let text = format!(
        "{HEAD}[params]\nWG_X = [1, 2]\nWG_Y = [1, 2]\n[space]\nconstraints = [\"WG_X == WGY\"]\n"
    );
    let e = parse(&text).unwrap_err();
    assert!(
        e.starts_with("t.toml:7:16: [space] constraints[0]: unknown name `WGY` (column 9)"),
        "{e}"
    );
    assert!(e.contains("    WG_X == WGY\n            ^^^"), "{e}");
    assert!(e.contains("did you mean `WG_Y`?"), "{e}");
}

#[test]
fn division_by_zero_is_refused() {
    let e = parse(&format!("{HEAD}[constants]\nN = 4\n[params]\nX = [1]\n[space]\nconstraints = [\"X % (N - 4) == 0\"]\n")).unwrap_err();
    assert!(e.contains("division by zero: `N - 4` is always 0"), "{e}");
    let e = parse(&format!(
        "{HEAD}[constants]\nN = \"8 / 0\"\n[params]\nX = [1]\n"
    ))
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:4:5:") && e.contains("division by zero"),
        "{e}"
    );
}

#[test]
fn a_launch_has_one_to_three_dimensions() {
    let e = parse(&format!(
        "{HEAD}[params]\nX = [1]\n[launch]\nglobal = [8, 8, 8, 8]\nlocal = [\"X\", 1, 1, 1]\n"
    ))
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:5:1: [launch]: global has 4 and local 4 dimensions"),
        "{e}"
    );
    let e = parse(&format!(
        "{HEAD}[params]\nX = [1]\n[launch]\nglobal = [8]\nlocal = [\"X * Z\"]\n"
    ))
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:7:10: [launch] local[0]: unknown name `Z`"),
        "{e}"
    );
}

#[test]
fn bad_device_property_is_caught_without_a_device() {
    let e = parse(&format!(
        "{HEAD}[params]\nX = [1]\n[space]\nconstraints = [\"X <= device.max_wg_size\"]\n"
    ))
    .unwrap_err();
    assert!(
        e.contains("unknown device property `device.max_wg_size`"),
        "{e}"
    );
}

#[test]
fn a_full_spec_validates() {
    let text = r#"
[kernel]
name = "matmul"
source = "matmul.cl"
[constants]
N = 64
NN = "N * N"
[params]
TILE = { pow2 = [1, 64] }
V = { divisors = "N / 4" }
S = { range = [8, 32], step = 8 }
[launch]
global = ["N", "N"]
local = ["TILE", "TILE"]
local_mem = "2 * TILE * TILE * 4"
[space]
constraints = ["TILE >= V"]
[[args]]
name = "A"
kind = "buffer"
type = "float"
len = "NN"
init = "random"
access = "read"
[[args]]
name = "C"
kind = "buffer"
type = "float"
len = "NN"
access = "write"
[[args]]
name = "n"
kind = "scalar"
type = "int"
value = "N"
[[args]]
name = "tile"
kind = "local"
bytes = "TILE * 4"
[verify]
outputs = ["C"]
reference = { config = { TILE = 1, V = 1, S = 8 } }
[measure]
runs = 3
"#;
    let s = Spec::parse(text, Path::new("/x/m.toml")).unwrap();
    assert_eq!(s.kernel.source.as_deref(), Some(Path::new("/x/matmul.cl")));
    assert_eq!(s.problem.constants["NN"], 4096);
    assert_eq!(s.args.len(), 4);
    assert!(matches!(
        s.args[0].kind,
        ArgKind::Buffer {
            init: Init::Random,
            ..
        }
    ));
    let v = s.verify.unwrap();
    assert!(matches!(v.reference, Reference::Config(ref c) if c["S"] == 8));
    assert_eq!(
        (s.measure.warmup, s.measure.runs, s.measure.best_of),
        (1, 3, 3)
    );
    assert_eq!(
        s.measure.race,
        Some(Race::default()),
        "racing is on by default"
    );
}

#[test]
fn racing_is_set_or_turned_off_in_measure() {
    let base = format!("{HEAD}[params]\nX = [1]\n");
    let s = Spec::parse(
        &format!("{base}[measure]\nrace_margin = 2.0\nrace_confidence = 0.999\n"),
        Path::new("/x/r.toml"),
    )
    .unwrap();
    assert_eq!(s.measure.race, Some(Race::new(2.0, 0.999).unwrap()));
    let s = Spec::parse(
        &format!("{base}[measure]\nrace = false\n"),
        Path::new("/x/r.toml"),
    )
    .unwrap();
    assert_eq!(s.measure.race, None);
}

#[test]
fn verify_and_measure_are_checked() {
    let base = format!("{HEAD}[params]\nX = [1]\n[[args]]\nname = \"A\"\nkind = \"buffer\"\ntype = \"float\"\nlen = 4\naccess = \"read\"\n");
    let e = parse(&format!(
        "{base}[verify]\noutputs = [\"A\"]\nreference = \"builtin:x\"\n"
    ))
    .unwrap_err();
    assert!(e.contains("must be a buffer the kernel writes"), "{e}");
    let e = parse(&format!("{base}[measure]\nruns = 3\nbest_of = 5\n")).unwrap_err();
    assert!(e.contains("best_of <= runs"), "{e}");
    let e = parse(&format!("{base}[measure]\nrace_confidence = 1.5\n")).unwrap_err();
    assert!(
        e.contains("race_confidence must be between 0 and 1") && e.contains(":12:"),
        "{e}"
    );
    let e = parse(&format!(
        "{base}[measure]\nrace = false\nrace_margin = 1.0\n"
    ))
    .unwrap_err();
    assert!(e.contains("nothing to set"), "{e}");
    let e = parse(&format!("{HEAD}[params]\nX = [1]\n[[args]]\nname = \"A\"\nkind = \"buffer\"\ntype = \"flaot\"\nlen = 4\n")).unwrap_err();
    assert!(e.contains("unknown type `flaot`"), "{e}");
}

#[test]
fn constants_can_be_overridden_and_dependents_follow() {
    let text = format!(
        "{HEAD}[constants]\nN = 64\nNN = \"N * N\"\n[params]\nX = {{ divisors = \"N\" }}\n"
    );
    let over = [("N".to_string(), 8)].into_iter().collect();
    let s = Spec::parse_with(&text, Path::new("t.toml"), &over).unwrap();
    assert_eq!(
        (s.problem.constants["N"], s.problem.constants["NN"]),
        (8, 64)
    );
    let bad = [("M".to_string(), 8)].into_iter().collect();
    let e = Spec::parse_with(&text, Path::new("t.toml"), &bad)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot set `M`: the spec's constants are N, NN"),
        "{e}"
    );
}

#[test]
fn source_names_are_whole_words() {
    let ids = crate::source_names("#define TILE WG_X\nfloat a[N*2]; x_1 = 3e5;");
    for w in ["define", "TILE", "WG_X", "float", "a", "N", "x_1"] {
        assert!(ids.contains(w), "{w}");
    }
    assert!(!ids.contains("WG") && !ids.contains("3e5") && !ids.contains("e5"));
}
