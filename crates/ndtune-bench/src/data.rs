//! Kernel argument data on the host: each buffer's initial contents (generated deterministically,
//! read from a NumPy `.npy` file, or copied from another argument), and conversion of device
//! bytes to f64 for verification.

use ndtune_spec::{ArgKind, ElemType, Init, Spec};
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::Path;

/// The initial bytes of buffer argument `arg` with `len` elements, for one configuration (values
/// in parameter declaration order: a copied argument's length is evaluated for it).
pub fn initial_bytes(
    spec: &Spec,
    arg: usize,
    len: usize,
    config: &[i64],
    seed: u64,
) -> Result<Vec<u8>, String> {
    let a = &spec.args[arg];
    let ArgKind::Buffer { ty, init, .. } = &a.kind else {
        return Err(format!("[[args]] {} is not a buffer", a.name));
    };
    match init {
        Init::Npy(path) => read_npy(path, *ty, len)
            .map_err(|e| format!("[[args]] {}: init.npy {}: {e}", a.name, path.display())),
        Init::Copy(from) => {
            let j = spec
                .args
                .iter()
                .position(|b| &b.name == from)
                .expect("validated: a copy's source is an argument");
            let ArgKind::Buffer {
                len: source_len, ..
            } = &spec.args[j].kind
            else {
                unreachable!("validated: a copy's source is a buffer")
            };
            let source_len = buffer_len(spec, j, source_len, config)?;
            if source_len != len {
                return Err(format!(
                    "[[args]] {}: init.copy: `{from}` has {source_len} elements and {} has {len} for configuration {config:?}; a copy has the length of its source",
                    a.name, a.name
                ));
            }
            initial_bytes(spec, j, len, config, seed)
        }
        generated => Ok(to_bytes(
            *ty,
            &generated_values(generated, *ty, len, seed, arg),
        )),
    }
}

/// What the initial contents of buffer argument `arg` with `len` elements depend on, as text
/// that two specs (a measurement worker's job and the next one it takes up) share exactly
/// where those contents are the same: the file's content (its BLAKE3) or the generator with
/// its seed and stream, and the types read and held. `None` where a file's content cannot be
/// read (then nothing is taken for the same).
pub fn input_identity(spec: &Spec, arg: usize, len: usize, seed: u64) -> Option<String> {
    let ArgKind::Buffer { ty, init, .. } = &spec.args[arg].kind else {
        return None;
    };
    let of_init = match init {
        Init::Npy(path) => format!("npy {}", ndtune_core::text::short_blake3_file(path).ok()?),
        Init::Copy(from) => {
            let j = spec.args.iter().position(|b| &b.name == from)?;
            format!("copy of {}", input_identity(spec, j, len, seed)?)
        }
        // The stream of a seeded one is the argument's position (`stream`).
        generated => format!("{generated:?} seed {seed} stream {arg}"),
    };
    Some(format!("{ty:?}[{len}] {of_init}"))
}

/// The length of buffer argument `arg` where no parameter changes it, nor, for a copy, the
/// length of what it copies: its input is then the same for every configuration.
pub fn fixed_len(spec: &Spec, arg: usize) -> Option<usize> {
    let ArgKind::Buffer { len, init, .. } = &spec.args[arg].kind else {
        return None;
    };
    if let Init::Copy(from) = init {
        fixed_len(spec, spec.args.iter().position(|b| &b.name == from)?)?;
    }
    let mut vars = Vec::new();
    len.vars(&mut vars);
    if !vars.is_empty() {
        return None;
    }
    len.eval(&[]).and_then(|v| usize::try_from(v).ok())
}

/// The length of buffer argument `arg` (its `len` expression) for a configuration.
fn buffer_len(
    spec: &Spec,
    arg: usize,
    len: &ndtune_space::resolve::Node,
    config: &[i64],
) -> Result<usize, String> {
    len.eval(config)
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| {
            format!(
                "[[args]] {} len is not a size for configuration {config:?}",
                spec.args[arg].name
            )
        })
}

/// The values a generated `init` gives `len` elements of type `ty`; the random ones draw from a
/// stream seeded by `seed` and the argument's position, so every run and every process sees the
/// same (docs/spec.md, "Inputs", says exactly what each draws).
fn generated_values(init: &Init, ty: ElemType, len: usize, seed: u64, arg: usize) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(stream(seed, arg));
    // Uniform in [0, 1), from the top 53 bits of a draw.
    let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let float = ty.is_real();
    match init {
        Init::Zeros => vec![0.0; len],
        Init::Ones => vec![1.0; len],
        Init::Value(v) => vec![*v; len],
        Init::Iota => (0..len).map(|i| i as f64).collect(),
        Init::Bits => (0..len).map(|_| (unit() * 2.0).floor()).collect(),
        Init::Random => (0..len)
            .map(|_| match ty {
                // Floats in [-1, 1); integers small enough that sums stay exact.
                _ if float => unit() * 2.0 - 1.0,
                ElemType::UChar | ElemType::UShort | ElemType::UInt | ElemType::ULong => {
                    (unit() * 16.0).floor()
                }
                _ => (unit() * 16.0).floor() - 8.0,
            })
            .collect(),
        Init::Uniform { low, high } if float => {
            (0..len).map(|_| low + unit() * (high - low)).collect()
        }
        Init::Uniform { low, high } => {
            let (low, high) = (low.ceil(), high.floor());
            (0..len)
                .map(|_| (low + (unit() * (high - low + 1.0)).floor()).min(high))
                .collect()
        }
        Init::Normal { mean, std_dev } => (0..len)
            .map(|_| {
                // Box-Muller, one value per pair of draws.
                let (u1, u2) = (1.0 - unit(), unit());
                let v =
                    mean + std_dev * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                if float {
                    v
                } else {
                    v.round()
                }
            })
            .collect(),
        Init::Npy(_) | Init::Copy(_) => unreachable!("read or copied, not generated"),
    }
}

/// The random stream of argument `arg` under `seed`.
fn stream(seed: u64, arg: usize) -> u64 {
    seed ^ (arg as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// NumPy's dtype string of an element type in this host's byte order (`<f4`).
fn native_descr(ty: ElemType) -> String {
    let order = match ty.size() {
        1 => '|',
        _ if cfg!(target_endian = "little") => '<',
        _ => '>',
    };
    let kind = match ty {
        ElemType::Half | ElemType::Float | ElemType::Double => 'f',
        ElemType::UChar | ElemType::UShort | ElemType::UInt | ElemType::ULong => 'u',
        ElemType::Char | ElemType::Short | ElemType::Int | ElemType::Long => 'i',
    };
    format!("{order}{kind}{}", ty.size())
}

/// NumPy's name of an element type (`float32`).
fn numpy_name(ty: ElemType) -> &'static str {
    match ty {
        ElemType::Char => "int8",
        ElemType::UChar => "uint8",
        ElemType::Short => "int16",
        ElemType::UShort => "uint16",
        ElemType::Int => "int32",
        ElemType::UInt => "uint32",
        ElemType::Long => "int64",
        ElemType::ULong => "uint64",
        ElemType::Half => "float16",
        ElemType::Float => "float32",
        ElemType::Double => "float64",
    }
}

/// The elements of a `.npy` file as bytes of `ty` in host order: its dtype must be `ty`'s
/// (either byte order) and it must hold `len` elements, in C order.
pub fn read_npy(path: &Path, ty: ElemType, len: usize) -> Result<Vec<u8>, String> {
    // A regular file only: a FIFO or a device would never end.
    let mut file = ndtune_core::input::open_regular(path, "NumPy file").map_err(|e| e.message)?;
    // npyz multiplies the shape without a check: an overflowing one is refused first.
    npy_count(&mut file)?;
    std::io::Seek::rewind(&mut file).map_err(|e| format!("cannot be read ({e})"))?;
    let npy = npyz::NpyFile::new(std::io::BufReader::new(file))
        .map_err(|e| format!("not a NumPy .npy file ({e})"))?;
    let count = npy.shape().iter().product::<u64>();
    if count != len as u64 {
        return Err(format!(
            "holds {count} elements (shape {:?}), not the argument's len {len}",
            npy.shape()
        ));
    }
    let dtype = npy.dtype().descr();
    let wrong_type = || {
        format!(
            "holds dtype {dtype}, not the argument's type {} ({})",
            ty.name(),
            numpy_name(ty)
        )
    };
    if npy.shape().len() > 1 && npy.order() == npyz::Order::Fortran {
        return Err("is in Fortran order; save it in C order (numpy.ascontiguousarray)".into());
    }
    // In the host's own byte order the data are the bytes as they stand: read them at once (an
    // input of 40 MB in milliseconds, where element by element took a tenth of a second).
    let native = matches!(npy.dtype(), npyz::DType::Plain(t) if t.to_string() == native_descr(ty));
    if native {
        let mut reader = npy.into_inner();
        return std::io::Seek::stream_position(&mut reader)
            .and_then(|at| read_at(reader.get_ref(), at, len * ty.size()))
            .map_err(|e| format!("cannot be read ({e})"));
    }
    macro_rules! read_as {
        ($t:ty) => {{
            let data = npy.data::<$t>().map_err(|_| wrong_type())?;
            if data.len() != len as u64 {
                return Err(format!(
                    "holds {} elements (shape {:?}), not the argument's len {len}",
                    data.len(),
                    data.shape()
                ));
            }
            data.map(|v| v.map(<$t>::to_ne_bytes))
                .collect::<std::io::Result<Vec<_>>>()
                .map_err(|e| format!("cannot be read ({e})"))?
                .concat()
        }};
    }
    Ok(match ty {
        ElemType::Char => read_as!(i8),
        ElemType::UChar => read_as!(u8),
        ElemType::Short => read_as!(i16),
        ElemType::UShort => read_as!(u16),
        ElemType::Int => read_as!(i32),
        ElemType::UInt => read_as!(u32),
        ElemType::Long => read_as!(i64),
        ElemType::ULong => read_as!(u64),
        ElemType::Half => read_as!(half::f16),
        ElemType::Float => read_as!(f32),
        ElemType::Double => read_as!(f64),
    })
}

/// `n` bytes of `file` from offset `at`. An input of gigabytes is read in pieces by several
/// threads at once: from the page cache one core copies 2-3 GB/s, and the measurement worker
/// reads its inputs as it starts (a reduction's 3.2 GB took 1.5 s).
fn read_at(file: &std::fs::File, at: u64, n: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    const PIECE: usize = 64 << 20;
    let mut bytes = vec![0u8; n];
    let threads = std::thread::available_parallelism()
        .map_or(1, |c| c.get())
        .clamp(1, 8)
        .min(n.div_ceil(PIECE))
        .max(1);
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let reads: Vec<_> = bytes
            .chunks_mut(chunk)
            .enumerate()
            .map(|(k, part)| s.spawn(move || file.read_exact_at(part, at + (k * chunk) as u64)))
            .collect();
        reads
            .into_iter()
            .try_for_each(|r| r.join().expect("a read does not panic"))
    })?;
    Ok(bytes)
}

/// The element count of the shape in an `.npy` header (magic, version, header length, then a
/// Python dict with `'shape': (d0, d1, ...)`), where it fits in 64 bits.
fn npy_count(file: &mut impl std::io::Read) -> Result<u64, String> {
    use std::io::Read;
    let not_npy = |why: &str| format!("not a NumPy .npy file ({why})");
    let mut start = [0u8; 12];
    file.read_exact(&mut start[..10])
        .map_err(|_| not_npy("too short"))?;
    if &start[..6] != b"\x93NUMPY" {
        return Err(not_npy("no magic string"));
    }
    let length = match start[6] {
        1 => u16::from_le_bytes([start[8], start[9]]) as u64,
        _ => {
            file.read_exact(&mut start[10..12])
                .map_err(|_| not_npy("too short"))?;
            u32::from_le_bytes([start[8], start[9], start[10], start[11]]) as u64
        }
    };
    let mut header = Vec::new();
    file.take(length.min(1 << 20))
        .read_to_end(&mut header)
        .map_err(|e| format!("cannot be read ({e})"))?;
    let header = String::from_utf8_lossy(&header);
    let shape = header
        .split_once("'shape'")
        .and_then(|(_, rest)| rest.split_once('(')?.1.split_once(')'))
        .map(|(dims, _)| dims)
        .ok_or_else(|| not_npy("no shape in its header"))?;
    let dims: Vec<u64> = shape
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.trim_end_matches('L').parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| not_npy("a shape that is not whole numbers"))?;
    dims.iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| format!("has shape {dims:?}, whose element count does not fit in 64 bits"))
}

/// Host bytes of `values` as elements of `ty` (host byte order, as the device expects on the
/// machines OpenCL runs on).
pub fn to_bytes(ty: ElemType, values: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * ty.size());
    for &v in values {
        match ty {
            ElemType::Char => out.extend((v as i8).to_ne_bytes()),
            ElemType::UChar => out.extend((v as u8).to_ne_bytes()),
            ElemType::Short => out.extend((v as i16).to_ne_bytes()),
            ElemType::UShort => out.extend((v as u16).to_ne_bytes()),
            ElemType::Int => out.extend((v as i32).to_ne_bytes()),
            ElemType::UInt => out.extend((v as u32).to_ne_bytes()),
            ElemType::Long => out.extend((v as i64).to_ne_bytes()),
            ElemType::ULong => out.extend((v as u64).to_ne_bytes()),
            ElemType::Half => out.extend(half::f16::from_f64(v).to_ne_bytes()),
            ElemType::Float => out.extend((v as f32).to_ne_bytes()),
            ElemType::Double => out.extend(v.to_ne_bytes()),
        }
    }
    out
}

/// The elements of `bytes` (of type `ty`) as f64.
pub fn from_bytes(ty: ElemType, bytes: &[u8]) -> Vec<f64> {
    struct Collect;
    impl ElementsTo for Collect {
        type Out = Vec<f64>;
        fn of(self, values: impl Iterator<Item = f64>) -> Vec<f64> {
            values.collect()
        }
    }
    elements(ty, bytes, Collect)
}

/// What to do with the elements of a buffer ([`elements`]).
pub trait ElementsTo {
    type Out;
    fn of(self, values: impl Iterator<Item = f64>) -> Self::Out;
}

/// Gives `to` the elements of type `ty` in `bytes` (native byte order) as f64, without a copy,
/// through an iterator of that one type, so that its loop is compiled for the type (a
/// per-element choice of the type makes a comparison of float outputs five times slower).
pub fn elements<T: ElementsTo>(ty: ElemType, bytes: &[u8], to: T) -> T::Out {
    fn read<const N: usize>(c: &[u8]) -> [u8; N] {
        c.try_into().expect("chunks of the element's size")
    }
    let n = ty.size();
    let each = bytes.chunks_exact(n);
    match ty {
        ElemType::Char => to.of(each.map(|c| c[0] as i8 as f64)),
        ElemType::UChar => to.of(each.map(|c| c[0] as f64)),
        ElemType::Short => to.of(each.map(|c| i16::from_ne_bytes(read(c)) as f64)),
        ElemType::UShort => to.of(each.map(|c| u16::from_ne_bytes(read(c)) as f64)),
        ElemType::Int => to.of(each.map(|c| i32::from_ne_bytes(read(c)) as f64)),
        ElemType::UInt => to.of(each.map(|c| u32::from_ne_bytes(read(c)) as f64)),
        ElemType::Long => to.of(each.map(|c| i64::from_ne_bytes(read(c)) as f64)),
        ElemType::ULong => to.of(each.map(|c| u64::from_ne_bytes(read(c)) as f64)),
        ElemType::Half => to.of(each.map(|c| half::f16::from_ne_bytes(read(c)).to_f64())),
        ElemType::Float => to.of(each.map(|c| f32::from_ne_bytes(read(c)) as f64)),
        ElemType::Double => to.of(each.map(|c| f64::from_ne_bytes(read(c)))),
    }
}

/// Every buffer argument's initial bytes for one configuration, by name: the same data the
/// tuner measures with (same seed, same streams).
pub fn spec_inputs(
    spec: &Spec,
    config: &[i64],
    seed: u64,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    for (i, a) in spec.args.iter().enumerate() {
        if let ArgKind::Buffer { len, .. } = &a.kind {
            let len = buffer_len(spec, i, len, config)?;
            out.insert(a.name.clone(), initial_bytes(spec, i, len, config, seed)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_is_fixed_where_no_parameter_changes_it_nor_what_it_copies() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("k.cl"),
            "__kernel void k(__global float *a) {}",
        )
        .unwrap();
        let arg = |name: &str, len: &str, init: &str| {
            format!("[[args]]\nname = \"{name}\"\nkind = \"buffer\"\ntype = \"float\"\nlen = \"{len}\"\n{init}\n")
        };
        let text = format!(
            "[kernel]\nname = \"k\"\nsource = \"k.cl\"\n[constants]\nN = 64\n[params]\nWG = [8, 16]\n\
             [launch]\nglobal = [\"N\"]\nlocal = [\"WG\"]\n{}{}{}{}",
            arg("fixed", "N * 2", "init = \"random\""),
            arg("sized", "N * WG", "init = \"random\""),
            arg("copy_of_fixed", "N * 2", "init = { copy = \"fixed\" }"),
            arg("copy_of_sized", "N * 2", "init = { copy = \"sized\" }"),
        );
        let path = dir.path().join("k.toml");
        std::fs::write(&path, text).unwrap();
        let spec = Spec::load(&path).unwrap();
        let lens: Vec<_> = (0..4).map(|i| fixed_len(&spec, i)).collect();
        assert_eq!(lens, [Some(128), None, Some(128), None]);
    }

    #[test]
    fn random_data_is_deterministic_per_seed_and_argument() {
        let a = generated_values(&Init::Random, ElemType::Float, 100, 7, 0);
        assert_eq!(
            a,
            generated_values(&Init::Random, ElemType::Float, 100, 7, 0)
        );
        assert_ne!(
            a,
            generated_values(&Init::Random, ElemType::Float, 100, 7, 1)
        );
        assert_ne!(
            a,
            generated_values(&Init::Random, ElemType::Float, 100, 8, 0)
        );
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
        let u = generated_values(&Init::Random, ElemType::UInt, 100, 7, 0);
        assert!(u
            .iter()
            .all(|v| (0.0..16.0).contains(v) && v.fract() == 0.0));
    }

    /// A spec of buffers `a` (float, `init`), `b` (a copy of `a`) and `c` (int, `c_init`), `N`
    /// elements each.
    fn spec(dir: &Path, n: usize, init: &str, c_init: &str) -> Spec {
        let buffer = |name: &str, ty: &str, init: &str| {
            format!("[[args]]\nname = \"{name}\"\nkind = \"buffer\"\ntype = \"{ty}\"\nlen = \"N\"\ninit = {init}\n")
        };
        let text = format!(
            "[kernel]\nname = \"k\"\n[constants]\nN = {n}\n[params]\nX = [1]\n{}{}{}",
            buffer("a", "float", init),
            buffer("b", "float", "{ copy = \"a\" }"),
            buffer("c", "int", c_init),
        );
        let path = dir.join("k.toml");
        std::fs::write(&path, text).unwrap();
        Spec::load(&path).unwrap()
    }

    /// A `.npy` file (version 1.0) of this header dictionary and these data bytes.
    fn npy(header: &str, data: &[u8]) -> Vec<u8> {
        let mut header = header.to_string();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend(data);
        bytes
    }

    #[test]
    fn npy_files_and_copies_give_their_exact_contents() {
        let dir = tempfile::tempdir().unwrap();
        let a = [0.5f32, -2.25, 1e-7, 3.0];
        npyz::to_file_1d(dir.path().join("a.npy"), a).unwrap();
        npyz::to_file_1d(dir.path().join("c.npy"), [7i32, -1, i32::MAX, 0]).unwrap();
        let s = spec(dir.path(), 4, "{ npy = \"a.npy\" }", "{ npy = \"c.npy\" }");
        let inputs = spec_inputs(&s, &[1], 1).unwrap();
        assert_eq!(from_bytes(ElemType::Float, &inputs["a"]), a.map(f64::from));
        assert_eq!(inputs["b"], inputs["a"], "a copy holds the same bytes");
        assert_eq!(
            from_bytes(ElemType::Int, &inputs["c"]),
            [7.0, -1.0, i32::MAX as f64, 0.0]
        );
        // The other byte order: read element by element and turned into this host's.
        let big: Vec<u8> = a.iter().flat_map(|v| v.to_be_bytes()).collect();
        std::fs::write(
            dir.path().join("big.npy"),
            npy(
                "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }",
                &big,
            ),
        )
        .unwrap();
        let big = read_npy(&dir.path().join("big.npy"), ElemType::Float, 4).unwrap();
        assert_eq!(from_bytes(ElemType::Float, &big), a.map(f64::from));
        // An input of more than a piece (64 MiB) is read in pieces at once: the same bytes, in
        // order; one element short, the file is an error.
        let n = (64 << 20) / 4 + 1001;
        let data: Vec<u8> = (0..n as u32).flat_map(u32::to_le_bytes).collect();
        let file = npy(
            &format!("{{'descr': '<u4', 'fortran_order': False, 'shape': ({n},), }}"),
            &data,
        );
        let large = dir.path().join("large.npy");
        std::fs::write(&large, &file).unwrap();
        assert_eq!(read_npy(&large, ElemType::UInt, n).unwrap(), data);
        std::fs::write(&large, &file[..file.len() - 4]).unwrap();
        let short = read_npy(&large, ElemType::UInt, n).unwrap_err();
        assert!(short.contains("cannot be read"), "{short}");
    }

    #[test]
    fn an_npy_file_of_another_type_or_length_is_an_error_naming_argument_and_file() {
        let dir = tempfile::tempdir().unwrap();
        npyz::to_file_1d(dir.path().join("d.npy"), [1.0f64, 2.0, 3.0, 4.0]).unwrap();
        npyz::to_file_1d(dir.path().join("short.npy"), [1.0f32, 2.0]).unwrap();
        let s = spec(dir.path(), 4, "{ npy = \"d.npy\" }", "\"zeros\"");
        let e = spec_inputs(&s, &[1], 1).unwrap_err();
        assert!(
            e.starts_with("[[args]] a: init.npy ")
                && e.contains("d.npy: holds dtype '<f8', not the argument's type float (float32)"),
            "{e}"
        );
        let s = spec(dir.path(), 4, "{ npy = \"short.npy\" }", "\"zeros\"");
        let e = spec_inputs(&s, &[1], 1).unwrap_err();
        assert!(
            e.contains("short.npy: holds 2 elements (shape [2]), not the argument's len 4"),
            "{e}"
        );
        let s = spec(dir.path(), 4, "{ npy = \"none.npy\" }", "\"zeros\"");
        let e = spec_inputs(&s, &[1], 1).unwrap_err();
        assert!(e.contains("none.npy: "), "{e}");
        // A shape whose element count overflows (npyz would wrap it to 1024).
        let bytes = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (18014398509481985, 1024), }",
            &[0u8; 4096],
        );
        std::fs::write(dir.path().join("huge.npy"), bytes).unwrap();
        let s = spec(dir.path(), 1024, "{ npy = \"huge.npy\" }", "\"zeros\"");
        let e = spec_inputs(&s, &[1], 1).unwrap_err();
        assert!(e.contains("does not fit in 64 bits"), "{e}");
        // A device or a FIFO never ends: refused before a byte is read.
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.npy")).unwrap();
        let s = spec(dir.path(), 4, "{ npy = \"zero.npy\" }", "\"zeros\"");
        let e = spec_inputs(&s, &[1], 1).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn named_distributions_draw_what_they_say() {
        let dir = tempfile::tempdir().unwrap();
        let n = 20_000;
        let s = spec(
            dir.path(),
            n,
            "{ normal = [10, 2] }",
            "{ uniform = [-3, 3] }",
        );
        let inputs = spec_inputs(&s, &[1], 5).unwrap();
        assert_eq!(inputs, spec_inputs(&s, &[1], 5).unwrap(), "deterministic");
        assert_ne!(inputs["a"], spec_inputs(&s, &[1], 6).unwrap()["a"]);
        let normal = from_bytes(ElemType::Float, &inputs["a"]);
        let mean = normal.iter().sum::<f64>() / n as f64;
        let sd = (normal.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!(
            (mean - 10.0).abs() < 0.05 && (sd - 2.0).abs() < 0.05,
            "{mean} {sd}"
        );
        let ints = from_bytes(ElemType::Int, &inputs["c"]);
        for v in -3..=3 {
            let count = ints.iter().filter(|&&x| x == v as f64).count();
            assert!(
                (count as f64 / n as f64 - 1.0 / 7.0).abs() < 0.01,
                "{v}: {count}"
            );
        }
        assert!(ints.iter().all(|v| (-3.0..=3.0).contains(v)));
        let s = spec(dir.path(), n, "{ uniform = [2, 2.5] }", "\"zeros\"");
        let u = from_bytes(ElemType::Float, &spec_inputs(&s, &[1], 5).unwrap()["a"]);
        assert!(u.iter().all(|v| (2.0..2.5).contains(v)));
    }

    #[test]
    fn bytes_round_trip_for_every_type() {
        let values = [0.0, 1.0, 7.0, 100.0];
        for (_, ty) in ElemType::ALL {
            assert_eq!(from_bytes(ty, &to_bytes(ty, &values)), values, "{ty:?}");
        }
        assert_eq!(
            from_bytes(ElemType::Float, &to_bytes(ElemType::Float, &[0.1])),
            [0.1f32 as f64]
        );
    }
}
