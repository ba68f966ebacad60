//! What the command line draws for people besides the reports the library crates write: a
//! campaign's progress bar, byte sizes.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// Bytes with a binary unit: `48 KiB`, `7.1 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A campaign's progress bar under `progress`, named `label`.
pub(crate) fn progress_bar(progress: &MultiProgress, label: &str) -> ProgressBar {
    let bar = progress.add(ProgressBar::new(0));
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_string());
    bar
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_pick_a_unit() {
        assert_eq!(super::bytes(49152), "48 KiB");
        assert_eq!(super::bytes(7610781696), "7.1 GiB");
        assert_eq!(super::bytes(64), "64 B");
    }
}
