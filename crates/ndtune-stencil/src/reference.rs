//! The reference stencils of the paper's Table 2: Gaussian blur with borders 1 to 10, Conway's
//! Game of Life, a heat equation step, the Sobel operator and non-maximum suppression (two
//! stages of Canny edge detection), and a threshold.

use crate::codegen::literal;
use crate::{Border, Elem, Kind, Padding, Stencil};

/// The largest Gaussian border: `gaussian-1` .. `gaussian-10`.
const GAUSSIANS: u32 = 10;

const GOL: &str = "\
/* Live neighbours (any non-zero cell is alive). */
int n = (get(-1, -1) != 0) + (get(-1, 0) != 0) + (get(-1, 1) != 0)
      + (get(0, -1) != 0) + (get(0, 1) != 0)
      + (get(1, -1) != 0) + (get(1, 0) != 0) + (get(1, 1) != 0);
return (n == 3 || (n == 2 && get(0, 0) != 0)) ? 1 : 0;
";

const HE: &str = "\
/* One explicit step of u_t = a (u_xx + u_yy), a dt / h^2 = 0.2; nearest padding insulates the
   edges. */
float u = get(0, 0);
return u + 0.2f * (get(-1, 0) + get(1, 0) + get(0, -1) + get(0, 1) - 4.0f * u);
";

const SOBEL: &str = "\
float gx = (get(-1, 1) + 2.0f * get(0, 1) + get(1, 1)) - (get(-1, -1) + 2.0f * get(0, -1) + get(1, -1));
float gy = (get(1, -1) + 2.0f * get(1, 0) + get(1, 1)) - (get(-1, -1) + 2.0f * get(-1, 0) + get(-1, 1));
return sqrt(gx * gx + gy * gy);
";

/// The direction decisions compare exact quantities only (differences of inputs, doubled), so
/// that the device and the host always take the same branch.
const NMS: &str = "\
/* The gradient by central differences, its direction in four sectors, and the two neighbours
   along it: the centre survives if neither is larger. */
float c = get(0, 0);
float gx = get(0, 1) - get(0, -1);
float gy = get(1, 0) - get(-1, 0);
float a, b;
if (2.0f * fabs(gy) <= fabs(gx)) {
    a = get(0, -1); b = get(0, 1);
} else if (2.0f * fabs(gx) <= fabs(gy)) {
    a = get(-1, 0); b = get(1, 0);
} else if ((gx > 0.0f) == (gy > 0.0f)) {
    a = get(-1, -1); b = get(1, 1);
} else {
    a = get(-1, 1); b = get(1, -1);
}
return (c >= a && c >= b) ? c : 0.0f;
";

const THRESHOLD: &str = "return get(0, 0) >= 0.5f ? 1 : 0;\n";

/// The names of the reference stencils, in Table 2's order.
pub fn reference_names() -> Vec<String> {
    (1..=GAUSSIANS)
        .map(|k| format!("gaussian-{k}"))
        .chain(["gol", "he", "nms", "sobel", "threshold"].map(String::from))
        .collect()
}

/// A reference stencil by name (see [`reference_names`]).
pub fn reference(name: &str) -> Option<Stencil> {
    let stencil = |border: u32, input, output, padding, function: &str| Stencil {
        name: name.to_string(),
        kind: Kind::Reference,
        border: Border {
            north: border,
            south: border,
            east: border,
            west: border,
        },
        input,
        output,
        padding,
        function: function.to_string(),
    };
    let zero = Padding::Constant(0.0);
    Some(match name {
        "gol" => stencil(1, Elem::Int, Elem::Int, zero, GOL),
        "he" => stencil(1, Elem::Float, Elem::Float, Padding::Nearest, HE),
        "sobel" => stencil(1, Elem::Float, Elem::Float, Padding::Nearest, SOBEL),
        "nms" => stencil(1, Elem::Float, Elem::Float, zero, NMS),
        "threshold" => stencil(0, Elem::Float, Elem::Int, zero, THRESHOLD),
        _ => {
            let k: u32 = name.strip_prefix("gaussian-")?.parse().ok()?;
            if !(1..=GAUSSIANS).contains(&k) || name != format!("gaussian-{k}") {
                return None;
            }
            stencil(k, Elem::Float, Elem::Float, Padding::Nearest, &gaussian(k))
        }
    })
}

/// A `(2k + 1) x (2k + 1)` Gaussian blur, sigma = (k + 1) / 2, as the outer product of a 1D
/// kernel whose weights sum to 1 (so the 2D weights do too).
fn gaussian(k: u32) -> String {
    let sigma = f64::from(k + 1) / 2.0;
    let radius = k as i32;
    let raw: Vec<f64> = (-radius..=radius)
        .map(|d| (-f64::from(d * d) / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = raw.iter().sum();
    let weights: Vec<String> = raw.iter().map(|w| literal(Elem::Float, w / sum)).collect();
    format!(
        "const float w[{n}] = {{ {weights} }};
float s = 0.0f;
for (int dr = -{k}; dr <= {k}; ++dr)
    for (int dc = -{k}; dc <= {k}; ++dc)
        s += w[dr + {k}] * w[dc + {k}] * get(dr, dc);
return s;
",
        n = 2 * k + 1,
        weights = weights.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_resolves_and_nothing_else() {
        let names = reference_names();
        assert_eq!(names.len(), 15);
        for name in &names {
            let s = reference(name).unwrap();
            assert_eq!(&s.name, name);
            s.check(64, 64).unwrap();
        }
        for bad in [
            "gaussian-0",
            "gaussian-11",
            "gaussian-03",
            "gaussian-",
            "canny",
            "",
        ] {
            assert!(reference(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn borders_and_types_follow_table_2() {
        assert_eq!(reference("gaussian-7").unwrap().border.west, 7);
        assert_eq!(reference("threshold").unwrap().border, Border::default());
        let t = reference("threshold").unwrap();
        assert_eq!((t.input, t.output), (Elem::Float, Elem::Int));
        let g = reference("gol").unwrap();
        assert_eq!(
            (g.input, g.output, g.border.north),
            (Elem::Int, Elem::Int, 1)
        );
    }

    #[test]
    fn gaussian_weights_are_symmetric_and_sum_to_one() {
        let text = gaussian(3);
        let list = text.split(['{', '}']).nth(1).unwrap();
        let w: Vec<f64> = list
            .split(',')
            .map(|x| x.trim().trim_end_matches('f').parse().unwrap())
            .collect();
        assert_eq!(w.len(), 7);
        assert_eq!(w[0], w[6]);
        assert!(w[3] > w[2] && w[2] > w[1]);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-6);
    }
}
