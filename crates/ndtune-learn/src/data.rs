//! Training data: the long CSV that `ndtune collect --export` writes (docs/collect.md), or any
//! CSV in that format. One row per (scenario, work-group size); the `f_*` columns are the
//! scenario's features and must agree on every row of a scenario. Errors name the file, the line
//! and the column. Features may be any finite number (see `crate::models` for how extreme ones
//! are scaled); work-group sides must be integers in [`WG_SIDE`] and the run times of measured
//! rows numbers in [`RUNTIME_MS`]. A collection for another objective than the time has a `cost`
//! column instead of `runtime_ms` (the objective's value where lower is better, its reciprocal
//! where higher is) and an `objective` column that names it, the same on every row.

use crate::oracle::{Observation, Status, Wg, RUNTIME_MS, WG_SIDE};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One scenario: a (device, kernel, dataset) and its features.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub id: String,
    pub device: String,
    pub kernel: String,
    pub dataset: String,
    pub features: Vec<f64>,
}

/// A loaded dataset.
#[derive(Debug, Clone)]
pub struct Data {
    pub feature_names: Vec<String>,
    pub scenarios: Vec<Scenario>,
    pub observations: Vec<Observation>,
    /// The objective the costs are of (`energy_j (lower is better)`); `None`: the run time.
    pub objective: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Csv {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("{path}: no column `{column}` (the format is in docs/collect.md)")]
    MissingColumn { path: PathBuf, column: String },
    #[error("{path}:{line}: column `objective`: `{value}`, where the rows before say `{first}`: a dataset ranks by one objective")]
    MixedObjectives {
        path: PathBuf,
        line: u64,
        value: String,
        first: String,
    },
    #[error("{path}: no feature columns (f_*)")]
    NoFeatures { path: PathBuf },
    #[error("{path}:{line}:{col}: column `{column}`: `{value}` is not {expected}")]
    BadValue {
        path: PathBuf,
        line: u64,
        /// 1-based column number.
        col: usize,
        column: String,
        value: String,
        expected: &'static str,
    },
    #[error("{path}:{line}:{col}: column `status`: `{value}` is none of measured, refused, illegal, wrong_result, build_failed, crashed, timed_out")]
    BadStatus {
        path: PathBuf,
        line: u64,
        col: usize,
        value: String,
    },
    #[error("{path}:{line}: scenario `{scenario}`: `{column}` differs from its first row")]
    Inconsistent {
        path: PathBuf,
        line: u64,
        scenario: String,
        column: String,
    },
    #[error("{path}: scenario `{scenario}` has no measured work-group size")]
    NoMeasured { path: PathBuf, scenario: String },
    #[error("{path}: no rows")]
    Empty { path: PathBuf },
}

impl Data {
    /// Reads a CSV file (gzip-compressed or plain), within the limits of
    /// [`ndtune_core::input::LEARNING_DATA`].
    pub fn load(path: &Path) -> Result<Data, DataError> {
        let reader =
            ndtune_core::input::reader(path, ndtune_core::input::LEARNING_DATA).map_err(|e| {
                DataError::Io {
                    path: path.to_path_buf(),
                    source: e.into(),
                }
            })?;
        Data::read(reader, path)
    }

    /// Reads CSV text; `path` names it in errors.
    pub fn read(reader: impl std::io::Read, path: &Path) -> Result<Data, DataError> {
        let p = || path.to_path_buf();
        let mut csv = csv::ReaderBuilder::new().from_reader(reader);
        let csv_err = |e: csv::Error| DataError::Csv {
            path: p(),
            line: e.position().map_or(0, |pos| pos.line()),
            message: e.to_string(),
        };
        let header: Vec<String> = csv
            .headers()
            .map_err(csv_err)?
            .iter()
            .map(str::to_string)
            .collect();
        let col = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| DataError::MissingColumn {
                    path: p(),
                    column: name.to_string(),
                })
        };
        // A collection for another objective has its costs and their objective's name.
        let objective_col = header.iter().position(|h| h == "objective");
        let value_col = if objective_col.is_some() {
            "cost"
        } else {
            "runtime_ms"
        };
        let [scenario, device, kernel, dataset, wg_c, wg_r, runtime, status_col] = [
            "scenario", "device", "kernel", "dataset", "wg_c", "wg_r", value_col, "status",
        ]
        .map(col);
        let (scenario, device, kernel, dataset) = (scenario?, device?, kernel?, dataset?);
        let (wg_c, wg_r, runtime, status_col) = (wg_c?, wg_r?, runtime?, status_col?);
        let feature_cols: Vec<usize> = (0..header.len())
            .filter(|&i| header[i].starts_with("f_"))
            .collect();
        if feature_cols.is_empty() {
            return Err(DataError::NoFeatures { path: p() });
        }
        let mut data = Data {
            feature_names: feature_cols.iter().map(|&i| header[i].clone()).collect(),
            scenarios: Vec::new(),
            observations: Vec::new(),
            objective: None,
        };
        let mut index: HashMap<String, usize> = HashMap::new();
        for record in csv.records() {
            let record = record.map_err(csv_err)?;
            let line = record.position().map_or(0, |pos| pos.line());
            let bad = |i: usize, expected: &'static str| DataError::BadValue {
                path: p(),
                line,
                col: i + 1,
                column: header[i].clone(),
                value: record.get(i).unwrap_or("").to_string(),
                expected,
            };
            let number = |i: usize| -> Result<f64, DataError> {
                let v = record.get(i).unwrap_or("").trim();
                match v.parse::<f64>() {
                    Ok(x) if x.is_finite() => Ok(x),
                    Ok(_) => Err(bad(i, "a finite number")),
                    Err(_) => Err(bad(i, "a number")),
                }
            };
            let side = |i: usize| -> Result<u64, DataError> {
                let v = record.get(i).unwrap_or("").trim();
                v.parse::<u64>()
                    .ok()
                    .filter(|s| WG_SIDE.contains(s))
                    .ok_or_else(|| bad(i, "a work-group size: an integer from 1 to 4294967295"))
            };
            let cost = |i: usize| -> Result<f64, DataError> {
                let v = record.get(i).unwrap_or("").trim();
                v.parse::<f64>()
                    .ok()
                    .filter(|t| RUNTIME_MS.contains(t))
                    .ok_or_else(|| {
                        bad(
                            i,
                            if objective_col.is_some() {
                                "the cost of a measured size: a number from 1e-9 to 1e12"
                            } else {
                                "the run time of a measured size: milliseconds from 1e-9 to 1e12"
                            },
                        )
                    })
            };
            let field = |i: usize| record.get(i).unwrap_or("").to_string();
            if let Some(i) = objective_col {
                let named = field(i);
                match &data.objective {
                    None => data.objective = Some(named),
                    Some(first) if *first != named => {
                        return Err(DataError::MixedObjectives {
                            path: p(),
                            line,
                            value: named,
                            first: first.clone(),
                        })
                    }
                    Some(_) => {}
                }
            }
            let features = feature_cols
                .iter()
                .map(|&i| number(i))
                .collect::<Result<Vec<f64>, _>>()?;
            let id = field(scenario);
            let s = match index.get(&id) {
                Some(&s) => {
                    let known = &data.scenarios[s];
                    let differs = [
                        ("device", &known.device, field(device)),
                        ("kernel", &known.kernel, field(kernel)),
                        ("dataset", &known.dataset, field(dataset)),
                    ]
                    .into_iter()
                    .find(|(_, a, b)| *a != b)
                    .map(|(c, ..)| c.to_string())
                    .or_else(|| {
                        known
                            .features
                            .iter()
                            .zip(&features)
                            .position(|(a, b)| a != b)
                            .map(|k| data.feature_names[k].clone())
                    });
                    if let Some(column) = differs {
                        return Err(DataError::Inconsistent {
                            path: p(),
                            line,
                            scenario: id,
                            column,
                        });
                    }
                    s
                }
                None => {
                    index.insert(id.clone(), data.scenarios.len());
                    data.scenarios.push(Scenario {
                        id,
                        device: field(device),
                        kernel: field(kernel),
                        dataset: field(dataset),
                        features,
                    });
                    data.scenarios.len() - 1
                }
            };
            let st = Status::parse(record.get(status_col).unwrap_or("")).ok_or_else(|| {
                DataError::BadStatus {
                    path: p(),
                    line,
                    col: status_col + 1,
                    value: field(status_col),
                }
            })?;
            let wg: Wg = (side(wg_c)?, side(wg_r)?);
            let cost = match st {
                Status::Measured => Some(cost(runtime)?),
                _ => None,
            };
            data.observations.push(Observation {
                scenario: s,
                wg,
                status: st,
                cost,
            });
        }
        if data.scenarios.is_empty() {
            return Err(DataError::Empty { path: p() });
        }
        let mut measured = vec![false; data.scenarios.len()];
        for o in &data.observations {
            measured[o.scenario] |= o.status == Status::Measured;
        }
        if let Some(i) = measured.iter().position(|m| !m) {
            return Err(DataError::NoMeasured {
                path: p(),
                scenario: data.scenarios[i].id.clone(),
            });
        }
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "scenario,device,kernel,dataset,f_a,f_b,wg_c,wg_r,runtime_ms,status\n";

    fn read(text: &str) -> Result<Data, DataError> {
        Data::read(text.as_bytes(), Path::new("t.csv"))
    }

    #[test]
    fn rows_become_scenarios_and_observations() {
        let d = read(&format!(
            "{HEAD}s1,gpu,k,64x64,1,2,8,8,0.5,measured\ns1,gpu,k,64x64,1,2,16,8,,refused\n\"s2, x\",cpu,k,64x64,3,4,8,8,1.5,measured\n"
        ))
        .unwrap();
        assert_eq!(d.feature_names, ["f_a", "f_b"]);
        assert_eq!(d.scenarios.len(), 2);
        assert_eq!(d.scenarios[1].id, "s2, x");
        assert_eq!(d.scenarios[1].features, [3.0, 4.0]);
        assert_eq!(d.observations[1].status, Status::Refused);
        assert_eq!(d.observations[1].cost, None);
        assert_eq!(d.observations[2].wg, (8, 8));
    }

    #[test]
    fn bad_input_is_named_by_file_line_and_column() {
        let e = read("scenario,device,kernel,dataset,f_a,wg_c,wg_r,status\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.csv: no column `runtime_ms` (the format is in docs/collect.md)"
        );
        let e = read(&format!("{HEAD}s1,gpu,k,d,1,x2,8,8,0.5,measured\n")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.csv:2:6: column `f_b`: `x2` is not a number"
        );
        let e = read(&format!("{HEAD}s1,gpu,k,d,1,2,8,8,0.5,fast\n")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.csv:2:10: column `status`: `fast`"),
            "{e}"
        );
        let e = read(&format!(
            "{HEAD}s1,gpu,k,d,1,2,8,8,0.5,measured\ns1,gpu,k,d,1,3,8,4,0.5,measured\n"
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.csv:3: scenario `s1`: `f_b` differs from its first row"
        );
        let e = read(&format!("{HEAD}s1,gpu,k,d,1,2,8,8,,refused\n")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.csv: scenario `s1` has no measured work-group size"
        );
        let e = read(&format!("{HEAD}s1,gpu,k,d,1,2,8,8,,measured\n")).unwrap_err();
        assert!(
            e.to_string()
                .contains("t.csv:2:9: column `runtime_ms`: `` is not the run time"),
            "{e}"
        );
        assert!(matches!(read(HEAD), Err(DataError::Empty { .. })));
    }

    #[test]
    fn sizes_run_times_and_features_out_of_their_domain_are_refused_where_they_are() {
        let row = |f_b: &str, c: &str, r: &str, ms: &str| {
            read(&format!("{HEAD}s1,gpu,k,d,1,{f_b},{c},{r},{ms},measured\n"))
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        for (c, r, col) in [
            ("0", "8", 7),
            ("-4", "8", 7),
            ("32.5", "8", 7),
            ("8", "4294967296", 8),
        ] {
            let e = row("2", c, r, "0.5").unwrap_err();
            assert!(
                e.starts_with(&format!("t.csv:2:{col}: column `wg_"))
                    && e.contains("is not a work-group size"),
                "{c}x{r}: {e}"
            );
        }
        for ms in ["0", "-1", "1e-300", "1e300", "inf", "NaN"] {
            let e = row("2", "8", "8", ms).unwrap_err();
            assert!(
                e.starts_with("t.csv:2:9: column `runtime_ms`") && e.contains("1e-9 to 1e12"),
                "{ms}: {e}"
            );
        }
        for f in ["inf", "-inf", "NaN", "1e309"] {
            let e = row(f, "8", "8", "0.5").unwrap_err();
            assert_eq!(
                e,
                format!("t.csv:2:6: column `f_b`: `{f}` is not a finite number"),
            );
        }
        // Extreme but finite features are data (scaled by the models).
        assert_eq!(row("1e308", "8", "8", "0.5"), Ok(()));
        assert_eq!(row("-1.7976931348623157e308", "8", "8", "1e12"), Ok(()));
        // A refused size needs no run time.
        assert!(read(&format!(
            "{HEAD}s1,gpu,k,d,1,2,8,8,0.5,measured\ns1,gpu,k,d,1,2,16,16,-3,refused\n"
        ))
        .is_ok());
    }
}
