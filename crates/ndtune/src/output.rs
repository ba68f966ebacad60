//! What the command line draws for people besides the reports the library crates write: a
//! campaign's progress bar.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

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
