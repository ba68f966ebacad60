//! Bad input gets a clear error naming file, line and column; good input validates.

use crate::{ArgKind, ElemType, Init, Race, Reference, Spec};
use ndtune_core::Value;
use std::path::{Path, PathBuf};

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
    assert_eq!(s.kernel.sources, [Path::new("/x/matmul.cl")]);
    assert_eq!(s.problem.constants["NN"], Value::Int(4096));
    assert_eq!(s.args.len(), 4);
    assert!(matches!(
        s.args[0].kind,
        ArgKind::Buffer {
            init: Init::Random,
            ..
        }
    ));
    let v = s.verify.unwrap();
    assert!(matches!(v.reference, Some(Reference::Config(ref c)) if c["S"] == Value::Int(8)));
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
    let over = [("N".to_string(), Value::Int(8))].into_iter().collect();
    let s = Spec::parse_with(&text, Path::new("t.toml"), &over).unwrap();
    assert_eq!(
        (&s.problem.constants["N"], &s.problem.constants["NN"]),
        (&Value::Int(8), &Value::Int(64))
    );
    let bad = [("M".to_string(), Value::Int(8))].into_iter().collect();
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

#[test]
fn names_only_in_comments_or_literals_are_not_the_codes() {
    let text = "// BX x BY work-items \\\n  still CONT\n/* BLOCK\n * LINES */ int a = TX; /**/ int b = TY;\n\
                printf(\"Q=%d \\\" QQ\", R); char c = 'S'; char d = '\\''; int e = T2; // END";
    let ids = crate::source_names(text);
    for w in [
        "int", "a", "TX", "b", "TY", "printf", "R", "c", "d", "e", "T2",
    ] {
        assert!(ids.contains(w), "{w} is code");
    }
    for w in [
        "BX", "BY", "still", "CONT", "BLOCK", "LINES", "Q", "QQ", "S", "END",
    ] {
        assert!(!ids.contains(w), "{w} is not code");
    }
}

#[test]
fn the_platform_model_is_chosen_by_name() {
    use ndtune_space::platform::Model;
    let spec = |platform: &str| {
        parse(&format!(
            "{HEAD}[params]\nX = [1]\n[space]\nplatform = \"{platform}\"\n"
        ))
    };
    assert_eq!(spec("legal").unwrap().problem.platform, Model::Legal);
    assert_eq!(spec("erdem").unwrap().problem.platform, Model::Erdem);
    assert_eq!(
        parse(&format!("{HEAD}[params]\nX = [1]\n"))
            .unwrap()
            .problem
            .platform,
        Model::Erdem
    );
    let e = spec("lenient").unwrap_err();
    assert!(
        e.starts_with("t.toml:6:12: [space] platform is \"erdem\"") && e.contains("`lenient`"),
        "{e}"
    );
}

/// Writes `files` (name, text) into a new temporary directory with the spec `spec.toml`.
fn on_disk(spec: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let path = dir.path().join("spec.toml");
    std::fs::write(&path, spec).unwrap();
    (dir, path)
}

const GEMM_FILES: &[(&str, &str)] = &[
    (
        "src/a.cl",
        "#include \"common.h\"\nkernel void k(global float *x) { x[0] = TS; }\n",
    ),
    ("src/b.cl", "// the second file\n"),
    ("inc/common.h", "#define SCALE WPT\n"),
];

const GEMM: &str = r#"[kernel]
name = "k"
source = ["src/a.cl", "src/b.cl"]
include_dirs = ["inc"]
build_options = ["-cl-std=CL1.2", "-DTILE={TS}x{N}", { option = "-cl-mad-enable", when = "MAD == 1" }]
[constants]
N = 64
[params]
TS = [4, 8]
WPT = [1, 2]
MAD = [0, 1]
UNUSED = [1]
"#;

#[test]
fn sources_are_a_list_concatenated_and_options_follow_the_configuration() {
    let (dir, path) = on_disk(GEMM, GEMM_FILES);
    let spec = Spec::load(&path).unwrap();
    let d = dir.path();
    assert_eq!(
        spec.kernel.sources,
        [d.join("src/a.cl"), d.join("src/b.cl")]
    );
    assert_eq!(spec.kernel.include_dirs, [d.join("inc")]);
    let source = spec.kernel_source().unwrap().unwrap();
    assert!(source.text.ends_with("x[0] = TS; }\n// the second file\n"));
    let includes = format!(
        "-I {} -I {}",
        std::path::absolute(d.join("src")).unwrap().display(),
        std::path::absolute(d.join("inc")).unwrap().display()
    );
    // WPT is mentioned only in the header, TS in the source; MAD and UNUSED in neither.
    assert_eq!(
        spec.build_options(&source, &[8, 2, 1, 1]),
        format!("-cl-std=CL1.2 -DTILE=8x64 -cl-mad-enable {includes} -D TS=8 -D WPT=2")
    );
    assert_eq!(
        spec.build_options(&source, &[4, 1, 0, 1]),
        format!("-cl-std=CL1.2 -DTILE=4x64 {includes} -D TS=4 -D WPT=1")
    );
}

#[test]
fn inits_from_files_copies_and_distributions_are_checked() {
    let spec = |a_init: &str, b_type: &str, b_init: &str| {
        parse(&format!(
            "{HEAD}[params]\nX = [1]\n[[args]]\nname = \"a\"\nkind = \"buffer\"\ntype = \"float\"\nlen = 4\ninit = {a_init}\n[[args]]\nname = \"b\"\nkind = \"buffer\"\ntype = \"{b_type}\"\nlen = 4\ninit = {b_init}\n"
        ))
    };
    let s = spec("{ npy = \"data/a.npy\" }", "float", "{ copy = \"a\" }").unwrap();
    let init = |i: usize| match &s.args[i].kind {
        ArgKind::Buffer { init, .. } => init.clone(),
        _ => unreachable!(),
    };
    assert_eq!(init(0), Init::Npy(Path::new("data/a.npy").to_path_buf()));
    assert_eq!(init(1), Init::Copy("a".into()));
    let s = spec("{ uniform = [0, 10.5] }", "int", "{ normal = [0, 1] }").unwrap();
    assert!(matches!(
        s.args[0].kind,
        ArgKind::Buffer {
            init: Init::Uniform {
                low: 0.0,
                high: 10.5
            },
            ..
        }
    ));

    let e = spec("\"random\"", "int", "{ copy = \"a\" }").unwrap_err();
    assert!(
        e.starts_with("t.toml:11:")
            && e.contains("[[args]] b: init.copy: `a` holds float, not int"),
        "{e}"
    );
    let e = spec("{ copy = \"b\" }", "float", "{ copy = \"a\" }").unwrap_err();
    assert!(
        e.contains("[[args]] a: init.copy goes round in a circle"),
        "{e}"
    );
    let e = spec("{ copy = \"c\" }", "float", "\"zeros\"").unwrap_err();
    assert!(e.contains("init.copy: no argument `c`"), "{e}");
    let e = spec("{ uniform = [3, 1] }", "float", "\"zeros\"").unwrap_err();
    assert!(e.contains("low <= high, not [3, 1]"), "{e}");
    let e = spec("{ normal = [0] }", "float", "\"zeros\"").unwrap_err();
    assert!(e.contains("init.normal takes two numbers"), "{e}");
    let e = spec("{ gauss = [0, 1] }", "float", "\"zeros\"").unwrap_err();
    assert!(
        e.contains("init is random, bits, zeros, ones, iota, a number, { npy = ")
            && e.contains("not a table with `gauss`"),
        "{e}"
    );
}

#[test]
fn kernel_section_errors_name_the_spec_line_and_column() {
    let cases: [(&str, &str); 8] = [
        ("language = \"hip\"", "t.toml:3:12: [kernel] language `hip` is not one ndtune builds (opencl, cuda)"),
        ("source = 3", "t.toml:3:10: [kernel] source is a file name or a list of file names"),
        ("source = []", "t.toml:3:10: [kernel] source is a file name or a list"),
        ("include_dirs = [\"nowhere\"]", "t.toml:3:17: [kernel] include_dirs: `nowhere` is not a directory"),
        ("build_options = [\"-DX={TX}\"]", "t.toml:3:18: [kernel] build_options: `-DX={TX}`: `{TX}` names no parameter or constant"),
        ("build_options = [{ option = \"-O\", when = \"X = 1\" }]", "t.toml:3:18: [kernel] build_options: when = \"X = 1\":"),
        ("build_options = [{ option = \"-O\", if = \"X == 1\" }]", "t.toml:3:18: [kernel] build_options: unknown key `if`"),
        ("build_options = [{ when = \"X == 1\" }]", "t.toml:3:18: [kernel] build_options: a table entry needs `option"),
    ];
    for (line, expected) in cases {
        let e = parse(&format!("{HEAD}{line}\n[params]\nX = [1]\n")).unwrap_err();
        assert!(e.starts_with(expected), "{line}: {e}");
    }
}

#[test]
fn the_language_is_given_or_follows_the_first_sources_extension() {
    use ndtune_device::backend::Api;
    let language = |kernel: &str| {
        Spec::parse(
            &format!("[kernel]\nname = \"k\"\n{kernel}\n[params]\nX = [1]\n"),
            Path::new("t.toml"),
        )
        .unwrap()
        .kernel
        .language
    };
    assert_eq!(language("source = \"k.cl\""), Api::OpenCl);
    assert_eq!(language("source = [\"k.cu\", \"more.cl\"]"), Api::Cuda);
    assert_eq!(language("source = \"k.cuh\""), Api::Cuda);
    assert_eq!(language(""), Api::OpenCl);
    assert_eq!(
        language("source = \"k.cl\"\nlanguage = \"CUDA\""),
        Api::Cuda
    );
    assert_eq!(
        language("source = \"k.cu\"\nlanguage = \"opencl\""),
        Api::OpenCl
    );
}

#[test]
fn unreadable_sources_are_errors_at_the_source_entry() {
    let (dir, path) = on_disk(
        "[kernel]\nname = \"k\"\nsource = [\"ok.cl\", \"bad.cl\"]\n[params]\nX = [1]\n",
        &[("ok.cl", "kernel void k() {}\n")],
    );
    std::fs::write(dir.path().join("bad.cl"), b"\n\n  \xff").unwrap();
    let e = Spec::load(&path)
        .unwrap()
        .kernel_source()
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("{}:3:10: [kernel] source: ", path.display())),
        "{e}"
    );
    assert!(
        e.ends_with("bad.cl:3:3: the kernel source is not UTF-8 text"),
        "{e}"
    );
    let spec = Spec::parse(
        "[kernel]\nname = \"k\"\nsource = \"/dev/zero\"\n[params]\nX = [1]\n",
        Path::new("t.toml"),
    )
    .unwrap();
    let e = spec.kernel_source().unwrap_err().to_string();
    assert_eq!(e, "t.toml:3:10: [kernel] source: /dev/zero: the kernel source is not a regular file (a directory, a device or a pipe)");
}

/// The setup digest of `spec` (written over `GEMM`'s files) with seed 1, its description too.
fn setup_of(spec: &str, files: &[(&str, &str)], seed: u64) -> ndtune_core::setup::Setup {
    let (_dir, path) = on_disk(spec, files);
    let spec = Spec::load(&path).unwrap();
    spec.setup(&spec.kernel_source().unwrap().unwrap(), seed)
        .unwrap()
}

const TUNED: &str = r#"[kernel]
name = "k"
source = ["src/a.cl", "src/b.cl"]
include_dirs = ["inc"]
build_options = ["-DTILE={TS}"]
[constants]
N = 64
[params]
TS = [4, 8]
WPT = [1, 2]
[launch]
global = ["N"]
local = ["TS"]
[space]
constraints = ["TS >= 4"]
[[args]]
name = "x"
kind = "buffer"
type = "float"
len = "N"
init = "random"
[measure]
runs = 5
flops = "2 * N"
"#;

#[test]
fn the_setup_changes_with_everything_that_can_change_a_result_and_nothing_else() {
    let base = setup_of(TUNED, GEMM_FILES, 1);
    let description = base.description.to_string();
    for part in [
        r#""files":{"inc/common.h":"#,
        r#""src/a.cl":"#,
        r#""measure":{"best_of":5,"runs":5,"warmup":1}"#,
        r#""seed":1"#,
    ] {
        assert!(description.contains(part), "{part}: {description}");
    }
    // Each of these makes a new setup.
    let changed: Vec<(String, Vec<(&str, &str)>)> = vec![
        (
            TUNED.replace("-DTILE={TS}", "-DTILE={TS} -cl-fast-relaxed-math"),
            GEMM_FILES.to_vec(),
        ),
        (TUNED.replace("runs = 5", "runs = 6"), GEMM_FILES.to_vec()),
        (
            TUNED.replace("runs = 5", "runs = 5\nwarmup = 2"),
            GEMM_FILES.to_vec(),
        ),
        (
            TUNED.replace("init = \"random\"", "init = \"ones\""),
            GEMM_FILES.to_vec(),
        ),
        (
            TUNED.replace("local = [\"TS\"]", "local = [\"TS * 1\"]"),
            GEMM_FILES.to_vec(),
        ),
        (
            TUNED.replace(
                "[measure]",
                "[verify]\noutputs = [\"x\"]\nreference = \"builtin:conv1d\"\n[measure]",
            ),
            GEMM_FILES.to_vec(),
        ),
        (
            TUNED.replace(
                "source = [\"src/a.cl\", \"src/b.cl\"]",
                "source = [\"src/b.cl\", \"src/a.cl\"]",
            ),
            GEMM_FILES.to_vec(),
        ),
        (
            TUNED.to_string(),
            vec![
                GEMM_FILES[0],
                GEMM_FILES[1],
                ("inc/common.h", "#define SCALE (2 * WPT)\n"),
            ],
        ),
        (
            TUNED.to_string(),
            vec![
                GEMM_FILES[0],
                ("src/b.cl", "// the second file, edited\n"),
                GEMM_FILES[2],
            ],
        ),
    ];
    for (spec, files) in &changed {
        let other = setup_of(spec, files, 1);
        assert_ne!(other.digest, base.digest, "{spec}");
        assert!(!ndtune_core::setup::differences(&base.description, &other.description).is_empty());
    }
    assert_ne!(
        setup_of(TUNED, GEMM_FILES, 2).digest,
        base.digest,
        "random data follow the seed"
    );
    // These do not change what a configuration measures.
    let same = [
        TUNED.replace("flops = \"2 * N\"", "bytes = \"8 * N\""),
        TUNED.replace("N = 64", "N = 128"),
        TUNED.replace("WPT = [1, 2]", "WPT = [1, 2, 4]"),
        TUNED.replace("[\"TS >= 4\"]", "[\"TS >= 8\"]"),
        TUNED
            .replace("[measure]", "# a comment\n[measure]")
            .replace("runs = 5", "runs    =    5"),
        format!("{TUNED}[split]\ndim = 0\n"),
        // A raced timing names its rule itself (docs/tuning.md, "Racing").
        TUNED.replace(
            "runs = 5",
            "runs = 5\nrace_margin = 1.0\nrace_confidence = 0.9",
        ),
        TUNED.replace("runs = 5", "runs = 5\nrace = false"),
    ];
    for spec in &same {
        assert_eq!(setup_of(spec, GEMM_FILES, 1), base, "{spec}");
    }
    // Data that do not come from the seed do not depend on it.
    let ones = TUNED.replace("init = \"random\"", "init = \"ones\"");
    assert_eq!(
        setup_of(&ones, GEMM_FILES, 1),
        setup_of(&ones, GEMM_FILES, 2)
    );
    // A header that appears where a missing one was looked for changes it too.
    let missing = [
        ("src/a.cl", "#include \"later.h\"\nkernel void k() {}\n"),
        GEMM_FILES[1],
        GEMM_FILES[2],
    ];
    let before = setup_of(TUNED, &missing, 1);
    assert!(
        before.description["files"]["later.h"] == "missing",
        "{}",
        before.description
    );
    let mut with = missing.to_vec();
    with.push(("inc/later.h", ""));
    let after = setup_of(TUNED, &with, 1);
    let what = ndtune_core::setup::differences(&before.description, &after.description);
    assert_eq!(what.len(), 2, "{what:?}");
    assert!(
        what[0].starts_with("files.inc/later.h: none -> \""),
        "{what:?}"
    );
    assert_eq!(what[1], r#"files.later.h: "missing" -> none"#);
}

#[test]
fn a_reference_file_is_part_of_the_setup() {
    let spec = TUNED.replace(
        "[measure]",
        "[verify]\noutputs = [\"x\"]\nreference = { kernel = \"ref.cl\", name = \"r\" }\n[measure]",
    );
    let mut files = GEMM_FILES.to_vec();
    files.push(("ref.cl", "kernel void r() {}\n"));
    let one = setup_of(&spec, &files, 1);
    files.pop();
    files.push(("ref.cl", "kernel void r() { }\n"));
    let two = setup_of(&spec, &files, 1);
    assert_eq!(
        ndtune_core::setup::differences(&one.description, &two.description).len(),
        1
    );
    files.pop();
    let (_dir, path) = on_disk(&spec, &files);
    let spec = Spec::load(&path).unwrap();
    let e = spec
        .setup(&spec.kernel_source().unwrap().unwrap(), 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(":22:1: [verify] reference: ") && e.contains("ref.cl: cannot read"),
        "{e}"
    );
}

#[test]
fn a_host_check_and_an_input_file_are_part_of_the_setup() {
    let spec = TUNED
        .replace("init = \"random\"", "init = { npy = \"x.npy\" }")
        .replace(
            "[measure]",
            "[verify]\noutputs = [\"x\"]\ncheck = { host = \"check.c\", function = \"c\" }\n[measure]",
        );
    let with = |npy: &'static str, check: &'static str| {
        let mut files = GEMM_FILES.to_vec();
        files.push(("x.npy", npy));
        files.push(("check.c", check));
        setup_of(&spec, &files, 1)
    };
    let base = with("one", "int c;");
    assert_ne!(
        with("two", "int c;").digest,
        base.digest,
        "the input's bytes"
    );
    assert_ne!(
        with("one", "int c; ").digest,
        base.digest,
        "the check's source"
    );
    assert_eq!(with("one", "int c;"), base);
    // Drawn from no seed: the seed does not matter.
    let mut files = GEMM_FILES.to_vec();
    files.push(("x.npy", "one"));
    files.push(("check.c", "int c;"));
    assert_eq!(setup_of(&spec, &files, 2), base);
}

/// A scalar argument `a` of `ty` with `value` (TOML), in a spec with constant N = 4.
fn scalar(ty: &str, value: &str) -> Result<Spec, String> {
    Spec::parse(
        &format!(
            "{HEAD}[constants]\nN = 4\n[params]\nX = [1, 2]\n[[args]]\nname = \"a\"\nkind = \"scalar\"\ntype = \"{ty}\"\nvalue = {value}\n"
        ),
        Path::new("s.toml"),
    )
    .map_err(|e| e.to_string())
}

fn scalar_value(spec: &Spec, point: &[i64]) -> Value {
    let ArgKind::Scalar {
        value: crate::ScalarValue::Expr(node),
        ..
    } = &spec.args[0].kind
    else {
        panic!("a scalar of an expression")
    };
    node.value(point).unwrap()
}

/// The bytes the kernel gets for the spec's first argument, a scalar.
fn scalar_bytes(spec: &Spec) -> Result<Vec<u8>, String> {
    let ArgKind::Scalar { ty, value } = &spec.args[0].kind else {
        panic!("a scalar")
    };
    value.bytes(*ty, &[1]).expect("defined")
}

#[test]
fn scalars_take_their_type_and_never_change_silently() {
    let s = scalar("float", "0.5").unwrap();
    assert_eq!(scalar_value(&s, &[1]), Value::Real(0.5));
    // A real argument computes in double precision: 1 / 2 is 0.5, not 0.
    let s = scalar("float", "\"1 / 2\"").unwrap();
    assert_eq!(scalar_value(&s, &[1]), Value::Real(0.5));
    let s = scalar("double", "\"X / N\"").unwrap();
    assert_eq!(scalar_value(&s, &[1]), Value::Real(0.25));
    let s = scalar("int", "\"N / 2\"").unwrap();
    assert_eq!(scalar_value(&s, &[1]), Value::Int(2));
    let e = scalar("int", "\"1 / 2\"").unwrap_err();
    assert!(
        e.contains("[[args]] a value") && e.contains("not exact"),
        "{e}"
    );
    let e = scalar("int", "0.5").unwrap_err();
    assert!(
        e.contains("real number 0.5") && e.contains("s.toml:"),
        "{e}"
    );
    let e = scalar("uchar", "300").unwrap_err();
    assert!(e.contains("300 does not fit a uchar (0 to 255)"), "{e}");
    let e = scalar("half", "1e6").unwrap_err();
    assert!(e.contains("does not fit a half"), "{e}");
    let e = scalar("uint", "-1").unwrap_err();
    assert!(e.contains("does not fit a uint"), "{e}");
    assert_eq!(
        ElemType::Half.scalar_bytes(&Value::Real(0.5)).unwrap(),
        half::f16::from_f32(0.5).to_ne_bytes()
    );
    assert_eq!(
        ElemType::Short.scalar_bytes(&Value::Int(-2)).unwrap(),
        (-2i16).to_ne_bytes()
    );
    let e = scalar("int", "true").unwrap_err();
    assert!(e.contains("a number or an expression string"), "{e}");
    // A ulong holds values of 2^63 and up, beyond the expressions' 64-bit signed arithmetic.
    for text in ["\"18446744073709551615\"", "\"0xFFFFFFFFFFFFFFFF\""] {
        let s = scalar("ulong", text).unwrap();
        assert_eq!(scalar_bytes(&s).unwrap(), u64::MAX.to_ne_bytes());
    }
    let s = scalar("ulong", "\"9223372036854775808\"").unwrap();
    assert_eq!(scalar_bytes(&s).unwrap(), (1u64 << 63).to_ne_bytes());
    let s = scalar("ulong", "\"N * 2\"").unwrap();
    assert_eq!(scalar_bytes(&s).unwrap(), 8u64.to_ne_bytes());
    let e = scalar("ulong", "\"18446744073709551616\"").unwrap_err();
    assert!(e.contains("[[args]] a value"), "{e}");
    let e = scalar("long", "\"18446744073709551615\"").unwrap_err();
    assert!(e.contains("[[args]] a value"), "{e}");
}

#[test]
fn parameters_may_be_reals_and_identifiers_and_bounds_use_constants() {
    let text = format!(
        "{HEAD}[constants]\nN = 64\nMODE = \"'fast'\"\n[params]\nTYPE = [\"float\", \"half\"]\nALPHA = [0.5, 1.0]\nWG = {{ pow2 = [1, \"N / 4\"] }}\nV = {{ range = [1, \"N // 16\"] }}\n[space]\nconstraints = [\"TYPE == 'float' or WG <= 8\"]\nrestrictions = [\"WG / V >= 2 and MODE == 'fast'\"]\n"
    );
    let s = Spec::parse(&text, Path::new("p.toml")).unwrap();
    assert_eq!(s.problem.constants["MODE"], Value::from("fast"));
    let pruning = s.problem.prune(&[]).unwrap();
    // TYPE 2 x ALPHA 2 x WG {1..16} 5 x V {1..4} 4 = 80 declared.
    assert_eq!(pruning.stats.declared, 80);
    let dir = tempfile::tempdir().unwrap();
    let kernel = dir.path().join("k.cl");
    std::fs::write(&kernel, "TYPE ALPHA WG N").unwrap();
    let used = crate::KernelSource::read(&[kernel], &[]).unwrap();
    // Points hold the index of an identifier or a real, and the integer of an integer.
    assert_eq!(
        s.build_options(&used, &[1, 1, 8, 2]),
        "-D N=64 -D TYPE=half -D ALPHA=1.0 -D WG=8"
    );
    let count = |c: &str| {
        let t = text.replace("TYPE == 'float' or WG <= 8", c);
        Spec::parse(&t, Path::new("p.toml")).map(|s| s.problem.prune(&[]).unwrap().stats.pruned)
    };
    // WG / V >= 2 in Python: real division.
    assert_eq!(
        count("true").unwrap(),
        2 * 2
            * [1, 2, 4, 8, 16]
                .iter()
                .map(|wg: &i64| (1..=4).filter(|v| *wg as f64 / *v as f64 >= 2.0).count() as u128)
                .sum::<u128>()
    );
    let e = count("TYPE == 'double'").unwrap_err().to_string();
    assert!(
        e.contains("'double' is not one of `TYPE`'s values (float, half)") && e.contains("p.toml:"),
        "{e}"
    );
    let e = Spec::parse(
        &text.replace("\"float\", \"half\"", "\"float\", 2"),
        Path::new("p.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("mixes identifiers and numbers"), "{e}");
    let e = Spec::parse(
        &text.replace("[0.5, 1.0]", "[true, false]"),
        Path::new("p.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("write 0 and 1"), "{e}");
}

#[test]
fn spec_files_are_read_with_limits() {
    let dir = tempfile::tempdir().unwrap();
    let e = Spec::load(Path::new("/dev/zero")).unwrap_err().to_string();
    assert!(
        e.contains("/dev/zero: the spec file is not a regular file"),
        "{e}"
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, b"[kernel]\nname = \"k\"\n# \xff\xfe\n").unwrap();
    let e = Spec::load(&bad).unwrap_err().to_string();
    assert!(
        e.contains("bad.toml:3:3: the spec file is not UTF-8 text"),
        "{e}"
    );
    std::fs::write(&bad, b"[kernel]\nname = \"k\0\"\n").unwrap();
    let e = Spec::load(&bad).unwrap_err().to_string();
    assert!(
        e.contains("bad.toml:2:10: the spec file holds a NUL byte"),
        "{e}"
    );
}

#[test]
fn sizes_that_cannot_be_are_errors_naming_the_constants() {
    let spec = |consts: &str, launch: &str| {
        parse(&format!(
            "{HEAD}[constants]\n{consts}\n[params]\nWG = [1, 2]\n[launch]\n{launch}\n"
        ))
    };
    let e = spec("N = -5", "global = [\"N\"]\nlocal = [\"WG\"]").unwrap_err();
    assert!(
        e.contains("[launch] global[0]: `N` is -5 (N = -5): a size must be at least 1"),
        "{e}"
    );
    let e = spec(
        "N = 8",
        "global = [\"N\"]\nlocal = [\"WG\"]\nlocal_mem = \"N - 16\"",
    )
    .unwrap_err();
    assert!(e.contains("local memory must be at least 0"), "{e}");
    assert!(spec(
        "N = 8",
        "global = [\"N\"]\nlocal = [\"WG\"]\nlocal_mem = \"N * WG\""
    )
    .is_ok());
}

const METRICS: &str = "[kernel]\nname = \"k\"\n[constants]\nN = 100\n[params]\nTS = [1, 2]\n\
[measure]\nflops = \"2 * N\"\n[metrics]\nper_ts = \"gflops / TS\"\nhalf = { expr = \"1 / 2\", unit = \"x\" }\n";

#[test]
fn metrics_and_the_objective_are_checked_where_they_are_written() {
    use ndtune_core::{int_config, Outcome, Timing};
    let spec = parse(&format!(
        "{METRICS}[objective]\nmetric = \"per_ts\"\nhigher_is_better = true\n"
    ))
    .unwrap();
    let m = &spec.metrics;
    let names: Vec<&str> = m
        .definitions()
        .metrics
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(names, ["gflops", "per_ts", "half"]);
    assert_eq!(m.describe_objective(), "per_ts, higher is better");
    assert_eq!(m.label("gflops"), "gflops (GFLOP/s)");
    let outcome = Outcome::Measured(Timing::new(vec![0.5], 1));
    let config = int_config([("TS", 2)]);
    let constants = spec.problem.constants.clone();
    let v = m.evaluate(&ndtune_metrics::Inputs::new(&constants, &config, &outcome));
    assert_eq!(
        (v.get("gflops"), v.get("per_ts"), v.get("half")),
        (Some(4e-4), Some(2e-4), Some(0.5))
    );
    // The time stays the objective by default.
    assert!(parse(METRICS).unwrap().metrics.objective().metric == "time");

    let e = parse(&METRICS.replace("gflops / TS", "gflops / TSS")).unwrap_err();
    assert!(
        e.starts_with("t.toml:10:10: [metrics] metric `per_ts`: unknown name `TSS` (column 10)"),
        "{e}"
    );
    assert!(e.contains("did you mean `TS`?"), "{e}");
    let e = parse(&format!("{METRICS}[objective]\nmetric = \"per_ts\"\n")).unwrap_err();
    assert!(
        e.starts_with("t.toml:12:1: [objective] metric `per_ts`: say whether more is better"),
        "{e}"
    );
    let e = parse(&format!(
        "{METRICS}[objective]\nmetric = \"gflop\"\nhigher_is_better = true\n"
    ))
    .unwrap_err();
    assert!(
        e.starts_with("t.toml:12:1: [objective] objective `gflop`: is no metric; the metrics are: time, energy_j, power_w, temperature_c, core_clock_mhz, mem_clock_mhz, gflops, per_ts, half"),
        "{e}"
    );
    let e = parse(&METRICS.replace("unit = \"x\"", "units = \"x\"")).unwrap_err();
    assert!(
        e.starts_with("t.toml:11:") && e.contains("unknown field `units`"),
        "{e}"
    );
    let e = parse(&METRICS.replace("half = {", "TS = {")).unwrap_err();
    assert!(
        e.contains("[metrics] metric `TS`: `TS` is a parameter"),
        "{e}"
    );
    let e = parse(&METRICS.replace("\"2 * N\"", "\"2 * M\"")).unwrap_err();
    assert!(
        e.starts_with("t.toml:8:9: [measure] flops: unknown name `M`"),
        "{e}"
    );
    // The energy objective needs no direction: lower is better.
    let spec = parse(&format!("{METRICS}[objective]\nmetric = \"energy_j\"\n")).unwrap();
    assert_eq!(spec.metrics.needing_energy(), ["energy_j"]);
}

#[test]
fn several_objectives_are_lists_of_metrics_and_directions() {
    let spec = parse(&format!(
        "{METRICS}[objective]\nmetric = [\"time\", \"per_ts\", \"energy_j\"]\nhigher_is_better = [false, true, false]\n"
    ))
    .unwrap();
    let m = &spec.metrics;
    assert!(m.several());
    assert_eq!(
        m.describe_objective(),
        "time (ms), lower is better; per_ts, higher is better; energy_j (J), lower is better"
    );
    // Directions may be left out where each is known.
    let known = parse(&format!(
        "{METRICS}[objective]\nmetric = [\"time\", \"energy_j\"]\n"
    ))
    .unwrap();
    assert_eq!(known.metrics.objectives().len(), 2);
    for (objective, says) in [
        (
            "metric = [\"time\", \"per_ts\"]",
            "[objective] metric `per_ts`: say whether more is better",
        ),
        (
            "metric = [\"time\", \"per_ts\"]\nhigher_is_better = [true]",
            "2 metrics but 1 values of higher_is_better",
        ),
        ("metric = []", "an empty list"),
        ("metric = [\"time\", \"time\"]", "is an objective twice"),
    ] {
        let e = parse(&format!("{METRICS}[objective]\n{objective}\n")).unwrap_err();
        assert!(e.starts_with("t.toml:12:1: "), "{e}");
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn a_constant_argument_is_cudas_constant_memory_and_refused_for_opencl() {
    let args = "[[args]]\nname = \"out\"\ntype = \"float\"\nkind = \"buffer\"\nlen = 4\n\
                [[args]]\nname = \"coef\"\ntype = \"float\"\nkind = \"constant\"\nlen = 4\ninit = \"iota\"\n";
    let cuda = format!("{HEAD}language = \"cuda\"\n[params]\nX = [1]\n{args}");
    let s = parse(&cuda).unwrap();
    assert!(matches!(
        s.args[1].kind,
        ArgKind::Buffer {
            access: crate::Access::Constant,
            ty: ElemType::Float,
            init: Init::Iota,
            ..
        }
    ));
    let opencl = cuda.replace("language = \"cuda\"", "language = \"opencl\"");
    let e = parse(&opencl).unwrap_err();
    assert!(
        e.starts_with("t.toml:")
            && e.contains("[[args]] coef: a constant argument is CUDA's `__constant__` memory"),
        "{e}"
    );
    let written = cuda.replace("init = \"iota\"", "init = \"iota\"\naccess = \"read\"");
    let e = parse(&written).unwrap_err();
    assert!(
        e.contains("[[args]] coef: a constant argument is read only"),
        "{e}"
    );
    // What the kernel reads from constant memory is no output to check.
    let checked = format!("{cuda}[verify]\noutputs = [\"coef\"]\nreference = \"builtin:x\"\n");
    let e = parse(&checked).unwrap_err();
    assert!(
        e.contains("output `coef` must be a buffer the kernel writes"),
        "{e}"
    );
}

/// A document of sections (what the Python package hands over) as a table.
fn document(text: &str) -> toml::Table {
    text.parse().unwrap()
}

#[test]
fn a_document_is_written_as_the_spec_file_once_and_validated_where_it_was_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cl"),
        "kernel void k(global float *x) {}\n",
    )
    .unwrap();
    // Parameters in an order no sorting gives: the document's order is the space's.
    let given = document(
        "[kernel]\nname = \"k\"\nsource = \"k.cl\"\n[params]\nZ = [1, 2]\nA = [3]\n\
         [launch]\nglobal = [\"64\"]\nlocal = [\"Z\"]\n[measure]\nruns = 3\n",
    );
    let spec = Spec::write_document(dir.path(), &given).unwrap();
    let path = dir.path().join("spec.toml");
    assert_eq!(spec.path, path);
    let names: Vec<&str> = spec
        .problem
        .params
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["Z", "A"]);
    assert_eq!(spec.measure.runs, 3);
    // What was written is the spec a later command reads, and writing it again leaves it be.
    let written = std::fs::metadata(&path).unwrap().modified().unwrap();
    assert_eq!(Spec::load(&path).unwrap().text(), spec.text());
    std::thread::sleep(std::time::Duration::from_millis(20));
    Spec::write_document(dir.path(), &given).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        written
    );

    // A wrong document: the error names the written file's line and column, and the file is
    // there to look at.
    let wrong = document(
        "[kernel]\nname = \"k\"\nsource = \"k.cl\"\n[params]\nZ = [1, 2]\n\
         [space]\nrestrictions = [\"Q > 1\"]\n",
    );
    let e = Spec::write_document(dir.path(), &wrong).unwrap_err();
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text.lines().position(|l| l.contains("Q > 1")).unwrap() + 1;
    assert_eq!(
        (e.path.as_str(), e.line),
        (path.to_str().unwrap(), line),
        "{e}"
    );
    assert!(e.message.contains('Q'), "{e}");
}
