//! A pruned space's configurations written out as a table or JSON lines (`ndtune space
//! --list`), fast enough for spaces of millions.

use crate::problem::Pruning;
use std::collections::HashSet;
use std::io::Write;
use std::ops::ControlFlow;

/// Streams the configurations of `p` but `excluded` to `out`: a header and tab-separated values,
/// or JSON lines. A closed pipe (`| head`) is the reader's choice: no error.
///
/// Consecutive configurations of the walk share most values, so the line is kept between
/// configurations and rebuilt only from the first column whose value changed; lines collect in a
/// large buffer written out in blocks.
pub fn write(
    out: &mut dyn Write,
    p: &Pruning,
    excluded: Option<&HashSet<Vec<i64>>>,
    json: bool,
) -> std::io::Result<()> {
    let names: Vec<&str> = p.space.params().iter().map(|q| q.name.as_str()).collect();
    let n = names.len();
    let stdout = out;
    let prefixes: Vec<Vec<u8>> = names
        .iter()
        .enumerate()
        .map(|(i, name)| match (json, i) {
            (true, 0) => format!("{{\"{name}\":").into_bytes(),
            (true, _) => format!(",\"{name}\":").into_bytes(),
            (false, 0) => vec![],
            (false, _) => b"\t".to_vec(),
        })
        .collect();
    let end: &[u8] = if json { b"}\n" } else { b"\n" };
    if !json {
        writeln!(stdout, "{}", names.join("\t"))?;
    }
    let mut last: Vec<Option<i64>> = vec![None; n];
    let mut cols: Vec<Vec<u8>> = prefixes.clone();
    let mut starts = vec![0usize; n];
    let mut line = Vec::with_capacity(256);
    let mut block = Vec::with_capacity(1 << 20);
    let mut digits = itoa::Buffer::new();
    let mut failed = None;
    p.space.for_each(|cfg| {
        if excluded.is_some_and(|e| e.contains(cfg)) {
            return ControlFlow::Continue(());
        }
        let mut first_changed = n;
        for (i, &v) in cfg.iter().enumerate() {
            if last[i] != Some(v) {
                last[i] = Some(v);
                cols[i].truncate(prefixes[i].len());
                cols[i].extend_from_slice(digits.format(v).as_bytes());
                first_changed = first_changed.min(i);
            }
        }
        if first_changed < n {
            line.truncate(starts[first_changed]);
            for i in first_changed..n {
                starts[i] = line.len();
                line.extend_from_slice(&cols[i]);
            }
        }
        block.extend_from_slice(&line);
        block.extend_from_slice(end);
        if block.len() >= (1 << 20) - 512 {
            if let Err(e) = stdout.write_all(&block) {
                failed = Some(e);
                return ControlFlow::Break(());
            }
            block.clear();
        }
        ControlFlow::Continue(())
    });
    let result = match failed {
        Some(e) => Err(e),
        None => stdout.write_all(&block).and_then(|()| stdout.flush()),
    };
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
