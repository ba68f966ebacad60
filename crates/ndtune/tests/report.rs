//! `ndtune report` end to end: a real store filled on PoCL (a tuned example, a tiny stencil
//! campaign, a co-execution on the two halves of the CPU, a learning evaluation of the shipped
//! data), and a store of tuning alone (a two-parameter kernel tuned on both halves of the CPU),
//! rendered as HTML and Markdown; the HTML opened in headless Chromium, its screenshot checked
//! figure by figure. Chromium is required: without it the test fails, naming the package.

mod common;

use common::{examples, fails, ndtune, write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Figures the full store below gives: conv1d's tuning (convergence, times, effects), matmul's
/// tuning by the split (the same and a heatmap of its two parameters: the two halves of the CPU
/// are one kind of device, one campaign), the oracle frequency and one scenario heatmap, the
/// co-execution bars, sweep and the timeline of its schedulers, three learning distributions.
const FIGURES: usize = 3 + 4 + 2 + 3 + 3;

/// The browser window's width in CSS pixels.
const WIDTH: u32 = 1280;

fn run_ok(args: &[&str]) -> (String, String) {
    let out = ndtune().args(args).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "ndtune {args:?} failed: {stderr}");
    (stdout, stderr)
}

/// The headless Chromium binary; the test fails without one.
fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
        {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !path.is_empty() {
                return PathBuf::from(path);
            }
        }
    }
    panic!(
        "headless Chromium is needed to check the report's figures: install Debian's `chromium` \
         (`apt-get install --no-install-recommends chromium`; scripts/setup.sh does)"
    );
}

fn headless(args: &[&str], page: &Path) -> String {
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--no-first-run",
            "--disable-extensions",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the harness script measures of each figure in the page, in CSS pixels of the document.
#[derive(Debug)]
struct Placed {
    id: String,
    x: u32,
    y: u32,
    w: u32,
    h: u32,
    /// Drawn SVG elements (rect, path, circle, polyline, line, text).
    shapes: u32,
    text: u32,
}

/// Loads the page with a script that writes each figure's box and content into the DOM, and
/// reads them back with `--dump-dom`; returns them and the document's height.
fn measure(page: &str, dir: &Path) -> (Vec<Placed>, u32) {
    let script = r#"<script>
    const out = [];
    for (const f of document.querySelectorAll('figure')) {
      const svg = f.querySelector('svg');
      const r = (svg || f).getBoundingClientRect();
      const shapes = svg ? svg.querySelectorAll('rect,path,circle,polyline,line,text').length : 0;
      const text = svg ? svg.textContent.trim().length : 0;
      out.push([f.id, Math.round(r.left + scrollX), Math.round(r.top + scrollY),
                Math.round(r.width), Math.round(r.height), shapes, text].join(' '));
    }
    // A control: the first paragraph, text only.
    const p = document.querySelector('body > p').getBoundingClientRect();
    out.push(['control', Math.round(p.left + scrollX), Math.round(p.top + scrollY),
              Math.round(p.width), Math.round(p.height), 0, 0].join(' '));
    const pre = document.createElement('pre');
    pre.id = 'check';
    pre.textContent = 'height ' + document.documentElement.scrollHeight + '\n' + out.join('\n');
    document.body.appendChild(pre);
    </script></body>"#;
    let harness = dir.join("harness.html");
    std::fs::write(&harness, page.replace("</body>", script)).unwrap();
    // The width of the screenshot below, so that the layout is the same.
    let dom = headless(
        &["--dump-dom", &format!("--window-size={WIDTH},1000")],
        &harness,
    );
    let start = dom.find("<pre id=\"check\">").expect("the harness ran") + 16;
    let end = start + dom[start..].find("</pre>").unwrap();
    let mut lines = dom[start..end].lines();
    let height: u32 = lines.next().unwrap()["height ".len()..].parse().unwrap();
    let placed = lines
        .map(|l| {
            let v: Vec<&str> = l.split(' ').collect();
            let n = |i: usize| v[i].parse::<u32>().unwrap();
            Placed {
                id: v[0].into(),
                x: n(1),
                y: n(2),
                w: n(3),
                h: n(4),
                shapes: n(5),
                text: n(6),
            }
        })
        .collect();
    (placed, height)
}

/// Decodes an RGB(A) PNG: width, height, bytes per pixel, pixels.
fn decode(path: &Path) -> (u32, u32, usize, Vec<u8>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("{}: unexpected colour type {other:?}", path.display()),
    };
    buf.truncate(info.buffer_size());
    (info.width, info.height, bpp, buf)
}

/// In a box of a picture: the share of pixels that are not near-white, and how many are in colour
/// (not grey: the figures draw data in colour, axes and text in grey and black).
fn ink(png: &(u32, u32, usize, Vec<u8>), x: u32, y: u32, w: u32, h: u32) -> (f64, usize) {
    let (width, height, bpp, px) = png;
    let mut inked = 0usize;
    let mut coloured = 0usize;
    let mut total = 0usize;
    for yy in y..(y + h).min(*height) {
        for xx in x..(x + w).min(*width) {
            let i = (yy as usize * *width as usize + xx as usize) * bpp;
            let (r, g, b) = (px[i], px[i + 1], px[i + 2]);
            total += 1;
            if r.min(g).min(b) < 235 {
                inked += 1;
            }
            if r.max(g).max(b) - r.min(g).min(b) > 60 {
                coloured += 1;
            }
        }
    }
    (inked as f64 / total.max(1) as f64, coloured)
}

/// A store with every section the report draws, filled on PoCL.
fn fill_store(dir: &Path) -> String {
    let db = dir.join("r.db").to_string_lossy().into_owned();
    run_ok(&[
        "tune",
        examples().join("conv1d.toml").to_str().unwrap(),
        "--db",
        &db,
        "--json",
    ]);
    let campaign = write(
        dir,
        "tiny.toml",
        "devices = [\"0\"]\nkernels = [\"gaussian-1\"]\ndatasets = [[32, 32]]\n\
         [grid]\nwc = [2, 4, 8, 16]\nwr = [2, 4, 8]\n[measure]\nwarmup = 1\nruns = 2\nbest_of = 1\n",
    );
    run_ok(&["collect", &campaign, "--db", &db, "--json"]);
    run_ok(&[
        "split",
        examples().join("matmul.toml").to_str().unwrap(),
        "--set",
        "N=128",
        "--devices",
        "0:0/2,0:1/2",
        "--sweep",
        "0.5",
        "--schedule",
        "auto",
        "--db",
        &db,
        "--json",
    ]);
    let data = examples().join("../data/stencils-2026-11-21/stencils-h100-xeon.csv.gz");
    run_ok(&[
        "learn",
        "eval",
        "--data",
        data.to_str().unwrap(),
        "--protocol",
        "cv10",
        "--models",
        "tree",
        "--db",
        &db,
        "--json",
    ]);
    db
}

/// The page fetches nothing: no URL, no script, no external element; links are anchors.
fn assert_offline(page: &str) {
    for external in [
        "http:", "https:", "src=", "<link", "<script", "<img", "<iframe",
    ] {
        assert!(!page.contains(external), "the page has `{external}`");
    }
    assert_eq!(
        page.matches("url(").count(),
        page.matches("url(data:font/ttf;base64,").count()
    );
    assert!(page
        .match_indices("href=\"")
        .all(|(i, _)| page[i + 6..].starts_with('#')));
}

/// Chromium lays out each of the page's `figures` figures with its drawing (an SVG of shapes and
/// text, with alt text) and paints it: each figure's box in a screenshot is inked, its data in
/// colour.
fn assert_drawn(page: &str, dir: &Path, figures: usize) {
    assert_eq!(page.matches("<figure ").count(), figures);
    assert_eq!(page.matches(" role=\"img\" aria-label=\"").count(), figures);
    let (mut placed, height) = measure(page, dir);
    let control = placed.pop().unwrap();
    assert_eq!(control.id, "control");
    assert_eq!(placed.len(), figures, "{placed:?}");
    for p in &placed {
        assert!(p.w >= 300 && p.h >= 150, "{p:?}");
        assert!(p.shapes >= 10 && p.text >= 10, "{p:?}");
    }
    let shot = dir.join("shot.png");
    headless(
        &[
            &format!("--screenshot={}", shot.display()),
            &format!("--window-size={WIDTH},{height}"),
        ],
        &dir.join("harness.html"),
    );
    let png = decode(&shot);
    assert!(png.1 >= height.min(16384) - 1, "{}x{}", png.0, png.1);
    for p in &placed {
        let (share, coloured) = ink(&png, p.x, p.y, p.w, p.h);
        assert!(
            share > 0.003 && coloured >= 500,
            "{}: {:.2}% inked, {coloured} pixels in colour",
            p.id,
            share * 100.0
        );
    }
    // The measure tells drawings from text: a paragraph is inked, but not in colour.
    let (share, coloured) = ink(&png, control.x, control.y, control.w, control.h);
    assert!(
        share > 0.003 && coloured < 50,
        "{control:?}: {share} {coloured}"
    );
}

#[test]
fn a_real_store_renders_as_one_offline_page_whose_figures_chromium_draws() {
    let dir = tempfile::tempdir().unwrap();
    let db = fill_store(dir.path());
    let out = dir.path().join("report.html");
    let (stdout, stderr) = run_ok(&["report", "--db", &db, "--out", out.to_str().unwrap()]);
    assert_eq!(stdout.trim(), out.to_str().unwrap());
    assert!(
        stderr.contains("1 co-execution studies, 1 learning evaluations")
            && stderr.contains(&format!("{FIGURES} figures")),
        "{stderr}"
    );
    let page = std::fs::read_to_string(&out).unwrap();
    assert_offline(&page);

    // Every section has its content: Tables 1-2 for the tuned and collected kernels, the
    // tuning campaigns, the co-execution's Table 3 under both residue rules, the learning table.
    for text in [
        "bounded (Table 1)",
        "pruned (Table 2)",
        "<td>conv1d</td>",
        "<td>gaussian-1 32x32</td>",
        "gaussian-1 32x32 @ 0",
        "conv1d MASK=625 N=65536 on device",
        "Table 3",
        "residue rule <code>finish</code>",
        "Under the <code>paper</code> residue rule",
        "matmul N=128 on 0:0/2",
        "Predicted before running",
        "<td>hguided</td>",
        "matmul N=128: chunks per device",
        "cv10 (tree) on stencils-h100-xeon.csv.gz",
        "<td>tree</td><td>nearest</td>",
    ] {
        assert!(page.contains(text), "the page lacks `{text}`");
    }
    assert!(!page.contains("class=\"missing\""), "a section is empty");
    assert_drawn(&page, dir.path(), FIGURES);

    // Markdown: the same figures as PNG files beside it.
    let md = dir.path().join("md").join("report.md");
    std::fs::create_dir(md.parent().unwrap()).unwrap();
    run_ok(&[
        "report",
        "--db",
        &db,
        "--out",
        md.to_str().unwrap(),
        "--format",
        "md",
    ]);
    let text = std::fs::read_to_string(&md).unwrap();
    assert_eq!(text.matches("![").count(), FIGURES);
    for i in 1..=FIGURES {
        let png_path = md.with_file_name(format!("report-fig-{i}.png"));
        assert!(text.contains(&format!("(report-fig-{i}.png)")));
        let img = decode(&png_path);
        let (share, coloured) = ink(&img, 0, 0, img.0, img.1);
        assert!(
            share > 0.003 && coloured >= 500,
            "{}: {:.2}% inked, {coloured} pixels in colour",
            png_path.display(),
            share * 100.0
        );
    }
}

#[test]
fn a_missing_store_a_foreign_file_and_an_unwritable_output_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    let err = fails(&[
        "report",
        "--db",
        missing.to_str().unwrap(),
        "--out",
        dir.path().join("r.html").to_str().unwrap(),
    ]);
    assert!(err.contains("no such store"), "{err}");
    assert!(!missing.exists(), "the store was created");

    let foreign = write(dir.path(), "notes.txt", "not a store\n");
    let err = fails(&["report", "--db", &foreign, "--out", "r.html"]);
    assert!(err.contains("not a usable ndtune results store"), "{err}");

    let empty = dir.path().join("empty.db");
    ndtune_store::Store::open(&empty).unwrap();
    let err = fails(&[
        "report",
        "--db",
        empty.to_str().unwrap(),
        "--out",
        dir.path().join("no/such/dir/r.html").to_str().unwrap(),
    ]);
    assert!(
        err.contains("cannot write") && err.contains("r.html"),
        "{err}"
    );

    // An empty store is a page that says, section by section, what to run.
    let out = dir.path().join("empty.html");
    run_ok(&[
        "report",
        "--db",
        empty.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&out).unwrap();
    assert_eq!(page.matches("class=\"missing\"").count(), 5);
    assert!(!page.contains("<figure"));
}

const TRANSPOSE_CL: &str = "// out = transpose(in), N x N floats. Defines: N, WG_X, WG_Y.
__kernel void transpose(__global const float *in, __global float *out)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    out[x * N + y] = in[y * N + x];
}
";

/// A kernel of two parameters, 5 x 5 configurations.
const TRANSPOSE: &str = r#"
[kernel]
name = "transpose"
source = "transpose.cl"
[constants]
N = 256
[params]
WG_X = [1, 2, 4, 8, 16]
WG_Y = [1, 2, 4, 8, 16]
[launch]
global = ["N", "N"]
local = ["WG_X", "WG_Y"]
[[args]]
name = "in"
kind = "buffer"
type = "float"
len = "N * N"
init = "random"
access = "read"
[[args]]
name = "out"
kind = "buffer"
type = "float"
len = "N * N"
access = "write"
[verify]
outputs = ["out"]
reference = { config = { WG_X = 1, WG_Y = 1 } }
[measure]
warmup = 0
runs = 3
best_of = 2
"#;

#[test]
fn a_tuning_only_store_shows_each_campaign_and_the_devices_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("transpose.cl"), TRANSPOSE_CL).unwrap();
    let spec = write(dir.path(), "transpose.toml", TRANSPOSE);
    let db = dir.path().join("t.db");
    let db = db.to_str().unwrap();
    // The whole CPU and a half of it, one after the other (together they would share cores).
    run_ok(&["tune", &spec, "--device", "0", "--db", db, "--json"]);
    run_ok(&["tune", &spec, "--device", "0:1/2", "--db", db, "--json"]);
    let out = dir.path().join("report.html");
    let (_, stderr) = run_ok(&["report", "--db", db, "--out", out.to_str().unwrap()]);
    // Per device (the whole CPU and a half: two kinds): convergence, measured times, effects, the
    // WG_X x WG_Y heatmap; then the comparison of the two.
    let figures = 2 * 4 + 1;
    assert!(stderr.contains(&format!("{figures} figures")), "{stderr}");
    let page = std::fs::read_to_string(&out).unwrap();
    assert_offline(&page);
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    for text in [
        "transpose N=256 on device 1: convergence",
        "transpose N=256 on device 2: WG_X x WG_Y",
        "transpose N=256: across devices",
        "<th>parameter</th><th>value</th><th>evaluated</th><th>measured</th>",
        "<th>on device 2</th>",
        "25 configurations evaluated: measured 25.",
        "aria-label=\"Convergence of transpose N=256 on device 1: the best time (ms) improved",
    ] {
        assert!(page.contains(text), "the page lacks `{text}`");
    }
    // Nothing but tuning: the other sections say what to run, the tuning section does not.
    assert_eq!(page.matches("class=\"missing\"").count(), 3);
    assert_drawn(&page, dir.path(), figures);
}
