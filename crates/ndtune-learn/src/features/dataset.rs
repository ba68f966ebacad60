//! Dataset features: the size of the 2D grid a stencil runs over, its element types and the
//! stencil's borders (Cummins et al. 2016 §3.2-3.3).

use super::FeatureError;

/// A 2D dataset and the borders of the stencil applied to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    pub rows: u64,
    pub cols: u64,
    /// OpenCL C scalar type of the input elements: "int", "float", "double", ...
    pub input: String,
    /// OpenCL C scalar type of the output elements.
    pub output: String,
    /// Cells the stencil reaches north, south, east and west of the cell it computes.
    pub border: [u32; 4],
}

/// The dataset feature names, in column order.
pub(super) const NAMES: [&str; 13] = [
    "f_data_rows",
    "f_data_cols",
    "f_data_cells",
    "f_data_log2_cells",
    "f_data_input_bytes",
    "f_data_input_is_float",
    "f_data_output_bytes",
    "f_data_output_is_float",
    "f_data_border_north",
    "f_data_border_south",
    "f_data_border_east",
    "f_data_border_west",
    "f_data_stencil_area",
];

/// Size in bytes and whether it is a floating-point type, of an OpenCL C scalar type.
fn scalar_type(name: &str) -> Option<(u32, bool)> {
    Some(match name {
        "char" | "uchar" => (1, false),
        "short" | "ushort" => (2, false),
        "int" | "uint" => (4, false),
        "long" | "ulong" => (8, false),
        "half" => (2, true),
        "float" => (4, true),
        "double" => (8, true),
        _ => return None,
    })
}

impl Dataset {
    /// Refuses an element type [`dataset_features`] does not know.
    pub fn check_types(&self) -> Result<(), FeatureError> {
        for (field, name) in [("input", &self.input), ("output", &self.output)] {
            if scalar_type(name).is_none() {
                return Err(FeatureError::UnknownType {
                    field,
                    name: name.clone(),
                });
            }
        }
        Ok(())
    }
}

/// A dataset's features, in column order. `f_data_stencil_area` is the number of cells each
/// output cell reads, (north + south + 1) x (east + west + 1). The size and float flag of an
/// element type that is no OpenCL C scalar type are NaN, a missing value.
pub fn dataset_features(d: &Dataset) -> Vec<(String, f64)> {
    let element = |name: &str| match scalar_type(name) {
        Some((bytes, is_float)) => (f64::from(bytes), f64::from(u8::from(is_float))),
        None => (f64::NAN, f64::NAN),
    };
    let (input_bytes, input_is_float) = element(&d.input);
    let (output_bytes, output_is_float) = element(&d.output);
    let [north, south, east, west] = d.border.map(f64::from);
    let cells = d.rows.saturating_mul(d.cols);
    let values = [
        d.rows as f64,
        d.cols as f64,
        cells as f64,
        (cells.max(1) as f64).log2(),
        input_bytes,
        input_is_float,
        output_bytes,
        output_is_float,
        north,
        south,
        east,
        west,
        (north + south + 1.0) * (east + west + 1.0),
    ];
    NAMES.iter().map(|n| n.to_string()).zip(values).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(input: &str, output: &str) -> Dataset {
        Dataset {
            rows: 512,
            cols: 2048,
            input: input.into(),
            output: output.into(),
            border: [1, 2, 3, 0],
        }
    }

    #[test]
    fn values_follow_the_names() {
        let f = dataset_features(&dataset("int", "double"));
        let value = |n: &str| f.iter().find(|(name, _)| name == n).unwrap().1;
        assert_eq!(value("f_data_cells"), 1_048_576.0);
        assert_eq!(value("f_data_log2_cells"), 20.0);
        assert_eq!(value("f_data_input_bytes"), 4.0);
        assert_eq!(value("f_data_input_is_float"), 0.0);
        assert_eq!(value("f_data_output_bytes"), 8.0);
        assert_eq!(value("f_data_output_is_float"), 1.0);
        assert_eq!(value("f_data_border_east"), 3.0);
        assert_eq!(value("f_data_stencil_area"), 4.0 * 4.0);
    }

    #[test]
    fn unknown_type_is_nan_and_refused() {
        let d = dataset("float", "flaot");
        let f = dataset_features(&d);
        assert!(f[6].1.is_nan() && f[7].1.is_nan());
        let msg = d.check_types().unwrap_err().to_string();
        assert!(msg.contains("output type `flaot`"), "{msg}");
        assert!(dataset("uchar", "half").check_types().is_ok());
    }
}
