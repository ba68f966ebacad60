//! Reading a complete space recorded by CLTune as CSV (the UCI "SGEMM GPU kernel performance"
//! layout of `../shared/data/sgemm-cltune-gtx680`): a header of parameter names followed by run
//! time columns named `... (ms)`, then a line per configuration with integer parameter values and
//! the run times in milliseconds. Plain or gzip-compressed.

use crate::kt::KtError;
use ndtune_core::{Config, Outcome, Timing};
use std::path::Path;

/// A recorded space: the parameter names in column order, and each configuration with its runs
/// (measured; the score is the mean of all runs).
#[derive(Debug, Clone, PartialEq)]
pub struct CltuneTable {
    pub names: Vec<String>,
    pub entries: Vec<(Config, Outcome)>,
}

/// Reads a CLTune CSV file; errors name the file and the line.
pub fn read_cltune_csv(path: &Path) -> Result<CltuneTable, KtError> {
    let bytes =
        ndtune_core::input::read_bytes(path, ndtune_core::input::RECORDING).map_err(|e| {
            KtError::Io {
                path: path.to_path_buf(),
                source: e.into(),
            }
        })?;
    parse_cltune_csv(&bytes, path)
}

/// A CLTune CSV from the bytes of its file (plain or gzipped); `path` names it in errors.
pub fn parse_cltune_csv(bytes: &[u8], path: &Path) -> Result<CltuneTable, KtError> {
    let invalid = |message: String| KtError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let bytes =
        ndtune_core::input::unpack(bytes, ndtune_core::input::RECORDING).map_err(invalid)?;
    let text = String::from_utf8(bytes.into_owned())
        .map_err(|e| invalid(format!("not a CSV text file: {e}")))?;
    let mut lines = text.lines().enumerate();
    let (_, header) = lines
        .next()
        .ok_or_else(|| invalid("empty: a header line was expected".into()))?;
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    let params = columns
        .iter()
        .position(|c| c.ends_with("(ms)"))
        .ok_or_else(|| invalid("line 1: no run time column (named `... (ms)`)".into()))?;
    if params == 0 || columns[params..].iter().any(|c| !c.ends_with("(ms)")) {
        return Err(invalid(
            "line 1: expected parameter columns, then run time columns named `... (ms)`".into(),
        ));
    }
    let names: Vec<String> = columns[..params].iter().map(|c| c.to_string()).collect();
    let mut entries = Vec::new();
    for (i, line) in lines.filter(|(_, l)| !l.trim().is_empty()) {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != columns.len() {
            return Err(invalid(format!(
                "line {}: {} values, the header has {}",
                i + 1,
                cells.len(),
                columns.len()
            )));
        }
        let config = names
            .iter()
            .zip(&cells)
            .map(|(name, cell)| {
                cell.parse::<i64>()
                    .map(|v| (name.clone(), ndtune_core::Value::Int(v)))
                    .map_err(|_| {
                        invalid(format!(
                            "line {}: `{name}` = `{cell}` is not an integer",
                            i + 1
                        ))
                    })
            })
            .collect::<Result<Config, KtError>>()?;
        let runs = cells[params..]
            .iter()
            .map(|cell| {
                cell.parse::<f64>()
                    .ok()
                    .filter(|ms| ms.is_finite() && *ms > 0.0)
                    .ok_or_else(|| invalid(format!("line {}: `{cell}` is not a time", i + 1)))
            })
            .collect::<Result<Vec<f64>, KtError>>()?;
        let best_of = runs.len();
        entries.push((config, Outcome::Measured(Timing::new(runs, best_of))));
    }
    Ok(CltuneTable { names, entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_parameters_and_runs_and_names_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csv");
        std::fs::write(
            &path,
            "MWG,NWG,Run1 (ms),Run2 (ms)\n16,32,2.0,4.0\n64,16,1.5,1.5\n",
        )
        .unwrap();
        let t = read_cltune_csv(&path).unwrap();
        assert_eq!(t.names, ["MWG", "NWG"]);
        assert_eq!(t.entries.len(), 2);
        let (config, outcome) = &t.entries[0];
        assert_eq!(config["NWG"], 32);
        assert_eq!(outcome.score_ms(), Some(3.0));

        std::fs::write(&path, "MWG,Run1 (ms)\n16,2.0\nx,1.0\n").unwrap();
        let err = read_cltune_csv(&path).unwrap_err().to_string();
        assert!(
            err.contains("s.csv: line 3: `MWG` = `x` is not an integer"),
            "{err}"
        );
        std::fs::write(&path, "MWG,NWG\n16,32\n").unwrap();
        let err = read_cltune_csv(&path).unwrap_err().to_string();
        assert!(err.contains("no run time column"), "{err}");
    }
}
