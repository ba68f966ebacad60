//! Every stencil on the real PoCL device against its host reference compiled with clang: the
//! reference stencils, generated ones of both complexities and all types, both padding modes,
//! work-groups that do not divide the matrix, a global offset, and a function that does not build.

use ndtune_backend::{discover, AnyDevice, Arg, DeviceError, Session};
use ndtune_stencil::{generate, reference, reference_names, Elem, Kind, Padding, Stencil};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

/// Work-groups (columns x rows): none divides the matrices below, one is wider than them.
const WORK_GROUPS: [[usize; 2]; 4] = [[8, 4], [16, 16], [3, 7], [64, 4]];

/// Reads the matrix from a file, applies the reference, writes the result.
const DRIVER: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include "ndtune.h"
int main(int argc, char **argv)
{
    if (argc != 7) return 2;
    ndtune_scalar scalars[2] = { { "rows", NDTUNE_INT, { 0 } }, { "cols", NDTUNE_INT, { 0 } } };
    scalars[0].value.i = atoi(argv[1]);
    scalars[1].value.i = atoi(argv[2]);
    size_t n = (size_t)scalars[0].value.i * (size_t)scalars[1].value.i;
    size_t in_size = (size_t)atoi(argv[3]) * n, out_size = (size_t)atoi(argv[4]) * n;
    ndtune_buffer buffers[2] = { { "in", NDTUNE_INT, n, malloc(in_size), NULL },
                                 { "out", NDTUNE_INT, n, malloc(out_size), NULL } };
    ndtune_args args = { 2, buffers, 2, scalars, 0, NULL, 0, NULL };
    FILE *f = fopen(argv[5], "rb");
    if (!f || fread(buffers[0].data, 1, in_size, f) != in_size) return 3;
    fclose(f);
    ndtune_reference(&args);
    f = fopen(argv[6], "wb");
    if (!f || fwrite(buffers[1].data, 1, out_size, f) != out_size) return 4;
    return fclose(f) != 0;
}
"#;

/// Compiles the stencil's host reference with [`DRIVER`] and ndtune's `ndtune.h` in `dir`, as
/// `ndtune tune` does (with every warning an error): the program's path.
fn build_reference(stencil: &Stencil, dir: &Path, strict: bool) -> std::path::PathBuf {
    let path = |name: &str| dir.join(name);
    std::fs::write(path("reference.c"), stencil.host_source()).unwrap();
    std::fs::write(path("driver.c"), DRIVER).unwrap();
    std::fs::write(path("ndtune.h"), ndtune_bench::host_c::HEADER).unwrap();
    let mut clang = Command::new("clang");
    clang.args(["-std=c99", "-O2"]);
    if strict {
        clang.args(["-Wall", "-Wextra", "-Werror"]);
    }
    let built = clang
        .args(["-DNDTUNE_REFERENCE=ndtune_reference", "-include"])
        .arg(path("ndtune.h"))
        .arg("-o")
        .args([path("reference"), path("reference.c"), path("driver.c")])
        .arg("-lm")
        .output()
        .expect("clang runs");
    assert!(
        built.status.success(),
        "{}: the host reference does not build:\n{}",
        stencil.name,
        String::from_utf8_lossy(&built.stderr)
    );
    path("reference")
}

fn pocl() -> AnyDevice {
    discover()
        .expect("an OpenCL platform")
        .into_iter()
        .find(|d| {
            d.profile()
                .platform_name
                .contains("Portable Computing Language")
        })
        .expect("a PoCL device")
}

/// A deterministic row-major matrix: cells 0/1 for the Game of Life, small integers for other
/// `int` inputs, uniform values in [-1, 1) for floating ones.
fn matrix(stencil: &Stencil, rows: usize, cols: usize, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = rows * cols;
    match stencil.input {
        Elem::Int if stencil.name == "gol" => (0..n)
            .flat_map(|_| i32::from(rng.random_bool(0.4)).to_ne_bytes())
            .collect(),
        Elem::Int => (0..n)
            .flat_map(|_| rng.random_range(-8i32..=8).to_ne_bytes())
            .collect(),
        Elem::Float => (0..n)
            .flat_map(|_| rng.random_range(-1.0f32..1.0).to_ne_bytes())
            .collect(),
        Elem::Double => (0..n)
            .flat_map(|_| rng.random_range(-1.0f64..1.0).to_ne_bytes())
            .collect(),
    }
}

fn values(ty: Elem, bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(ty.size())
        .map(|c| match ty {
            Elem::Int => f64::from(i32::from_ne_bytes(c.try_into().unwrap())),
            Elem::Float => f64::from(f32::from_ne_bytes(c.try_into().unwrap())),
            Elem::Double => f64::from_ne_bytes(c.try_into().unwrap()),
        })
        .collect()
}

/// The host reference's output: `host_source` compiled on its own (warnings are errors) and
/// linked with the driver.
fn host_output(stencil: &Stencil, rows: usize, cols: usize, input: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    build_reference(stencil, dir.path(), true);
    std::fs::write(path("in.bin"), input).unwrap();
    let ran = Command::new(path("reference"))
        .args([rows.to_string(), cols.to_string()])
        .args([
            stencil.input.size().to_string(),
            stencil.output.size().to_string(),
        ])
        .args([path("in.bin"), path("out.bin")])
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}: the host reference failed: {}",
        stencil.name,
        String::from_utf8_lossy(&ran.stderr)
    );
    std::fs::read(path("out.bin")).unwrap()
}

fn round_up(n: usize, multiple: usize) -> usize {
    n.div_ceil(multiple) * multiple
}

/// One build of the stencil on a device, launched on one matrix.
struct Run {
    session: Box<dyn Session>,
    kernel: ndtune_backend::Kernel,
    stencil: Stencil,
    rows: usize,
    cols: usize,
    input: ndtune_backend::Buffer,
    output: ndtune_backend::Buffer,
}

impl Run {
    fn new(device: &AnyDevice, stencil: &Stencil, rows: usize, cols: usize, input: &[u8]) -> Run {
        stencil.check(rows as u64, cols as u64).unwrap();
        let mut session = device.session().unwrap();
        let kernel = session
            .kernel(&stencil.device_source(), "stencil", "")
            .unwrap_or_else(|e| panic!("{}: {e}", stencil.name));
        let input = session.buffer(input).unwrap();
        let output = session
            .buffer(&vec![0; rows * cols * stencil.output.size()])
            .unwrap();
        Run {
            session,
            kernel,
            stencil: stencil.clone(),
            rows,
            cols,
            input,
            output,
        }
    }

    /// The output after one launch with a `wc x wr` work-group over rows `first..first + count`;
    /// the output starts as all-ones bytes (NaN or -1), so cells left unwritten show.
    fn launch(&mut self, [wc, wr]: [usize; 2], first: usize, count: usize) -> Vec<f64> {
        let (rows, cols) = (self.rows as i32, self.cols as i32);
        let tile = self.stencil.tile_bytes(wc as u64, wr as u64) as usize;
        let fill = vec![0xFF; self.output.len()];
        self.session.write(&mut self.output, &fill).unwrap();
        self.session
            .set_args(
                &self.kernel,
                &[
                    Arg::Buffer(&self.input),
                    Arg::Buffer(&self.output),
                    Arg::Local(tile),
                    Arg::Scalar(&rows.to_ne_bytes()),
                    Arg::Scalar(&cols.to_ne_bytes()),
                ],
            )
            .unwrap();
        let global = [round_up(self.cols, wc), round_up(count, wr)];
        self.session
            .launch(&self.kernel, &global, Some(&[wc, wr]), Some(&[0, first]))
            .unwrap_or_else(|e| panic!("{} with {wc}x{wr}: {e}", self.stencil.name));
        values(
            self.stencil.output,
            &self.session.read(&self.output).unwrap(),
        )
    }
}

/// Panics at the first cell where the device and the host disagree beyond the tolerance.
fn assert_close(stencil: &Stencil, what: &str, cols: usize, device: &[f64], host: &[f64]) {
    let (rtol, atol) = stencil.tolerance();
    for (i, (d, h)) in device.iter().zip(host).enumerate() {
        assert!(
            (d - h).abs() <= atol + rtol * h.abs(),
            "{} ({what}): cell ({}, {}) is {d} on the device, {h} on the host\n{}",
            stencil.name,
            i / cols,
            i % cols,
            stencil.function
        );
    }
}

/// The stencil on every work-group of [`WORK_GROUPS`] against the host reference; one build.
fn verify(device: &AnyDevice, stencil: &Stencil, rows: usize, cols: usize) {
    let input = matrix(stencil, rows, cols, 42);
    let host = values(stencil.output, &host_output(stencil, rows, cols, &input));
    let mut run = Run::new(device, stencil, rows, cols, &input);
    for wg in WORK_GROUPS {
        let out = run.launch(wg, 0, rows);
        assert_close(stencil, &format!("{}x{}", wg[0], wg[1]), cols, &out, &host);
    }
    assert_eq!(run.session.builds(), 1, "one build serves every work-group");
}

#[test]
fn reference_stencils_match_their_host_reference() {
    let device = pocl();
    for name in reference_names() {
        verify(&device, &reference(&name).unwrap(), 37, 53);
    }
}

#[test]
fn generated_stencils_of_every_kind_and_type_match_their_host_reference() {
    let device = pocl();
    // The first stencil of each complexity and input type, then of each output type that is not
    // covered yet: both complexities, every type in and out.
    let mut seen = HashSet::new();
    let mut picked = Vec::new();
    for s in generate(2016, 60) {
        if seen.insert((s.kind, s.input, 'i')) | seen.insert((s.kind, s.output, 'o')) {
            picked.push(s);
        }
    }
    assert!(picked.len() >= 6, "{} picked", picked.len());
    for kind in [Kind::SyntheticA, Kind::SyntheticB] {
        for ty in Elem::ALL {
            assert!(seen.contains(&(kind, ty, 'i')) && seen.contains(&(kind, ty, 'o')));
        }
    }
    // Borders reach 30: the window is at most 61 x 61.
    for s in &picked {
        verify(&device, s, 67, 71);
    }
}

#[test]
fn both_padding_modes_match_the_host_reference() {
    let device = pocl();
    let mut blur = reference("gaussian-2").unwrap();
    let mut life = reference("gol").unwrap();
    let mut paddings = Vec::new();
    for padding in [
        Padding::Nearest,
        Padding::Constant(0.5),
        Padding::Constant(-3.0),
    ] {
        blur.padding = padding;
        paddings.push(blur.clone());
    }
    life.padding = Padding::Nearest;
    paddings.push(life.clone());
    life.padding = Padding::Constant(1.0);
    paddings.push(life);
    let mut outputs = Vec::new();
    for s in &paddings {
        verify(&device, s, 37, 53);
        let input = matrix(s, 37, 53, 42);
        outputs.push(host_output(s, 37, 53, &input));
    }
    // The padding shows at the edges.
    assert_ne!(outputs[0], outputs[1]);
    assert_ne!(outputs[1], outputs[2]);
    assert_ne!(outputs[3], outputs[4]);
}

#[test]
fn a_global_offset_computes_only_its_rows() {
    let device = pocl();
    let stencil = reference("gaussian-3").unwrap();
    let (rows, cols) = (37, 53);
    let input = matrix(&stencil, rows, cols, 7);
    let host = values(stencil.output, &host_output(&stencil, rows, cols, &input));
    let mut run = Run::new(&device, &stencil, rows, cols, &input);
    // 19 rows from row 10 in work-groups of 4 rows: the global size rounds up to 20, so rows
    // 10..30 are computed, and nothing else.
    let out = run.launch([8, 4], 10, 19);
    let (first, end) = (10 * cols, 30 * cols);
    assert_close(
        &stencil,
        "rows 10..30",
        cols,
        &out[first..end],
        &host[first..end],
    );
    assert!(out[..first].iter().chain(&out[end..]).all(|v| v.is_nan()));
}

#[test]
fn a_function_that_does_not_compile_gives_a_readable_build_log() {
    let mut stencil = reference("he").unwrap();
    stencil.function = "return get(0, 0) * no_such_weight;".into();
    let mut session = pocl().session().unwrap();
    let err = session
        .kernel(&stencil.device_source(), "stencil", "")
        .unwrap_err();
    let DeviceError::Build { ref log, .. } = err else {
        panic!("not a build error: {err}");
    };
    assert!(log.contains("no_such_weight"), "{log}");
    assert!(err.to_string().contains("no_such_weight"), "{err}");
}

#[test]
fn the_host_reference_stops_at_reads_outside_the_border() {
    let mut stencil = reference("he").unwrap();
    stencil.function = "return get(0, 2);".into();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.bin");
    std::fs::write(&input, matrix(&stencil, 4, 4, 1)).unwrap();
    let exe = build_reference(&stencil, dir.path(), false);
    let ran = Command::new(&exe)
        .args(["4", "4", "4", "4"])
        .args([input.as_path(), Path::new("/dev/null")])
        .output()
        .unwrap();
    assert!(!ran.status.success());
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        stderr.contains(
            "stencil `he`: get(0, 2) reads outside its border (north 1, south 1, east 1, west 1)"
        ),
        "{stderr}"
    );
}

#[test]
fn device_sources_never_depend_on_the_work_group_size() {
    let all = reference_names()
        .into_iter()
        .map(|n| reference(&n).unwrap())
        .chain(generate(11, 100));
    for s in all {
        let source = s.device_source();
        for word in ["WG_C", "WG_R", "WG_SIZE", "reqd_work_group_size"] {
            assert!(!source.contains(word), "{}: {word}", s.name);
        }
    }
}
