//! Kernel argument data on the host: deterministic buffer contents, scalar bytes, and conversion
//! of device bytes to f64 for verification.

use ndtune_spec::{ArgKind, ElemType, Init, Spec};
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// The values a buffer starts with: `init` over `len` elements; `Random` draws from a stream
/// seeded by `seed` and the argument's position, so every run and every process sees the same.
pub fn initial_values(init: Init, ty: ElemType, len: usize, seed: u64, arg: usize) -> Vec<f64> {
    match init {
        Init::Zeros => vec![0.0; len],
        Init::Ones => vec![1.0; len],
        Init::Value(v) => vec![v; len],
        Init::Iota => (0..len).map(|i| i as f64).collect(),
        Init::Bits => {
            let mut rng = ChaCha8Rng::seed_from_u64(stream(seed, arg));
            (0..len).map(|_| (rng.next_u64() >> 63) as f64).collect()
        }
        Init::Random => {
            let mut rng = ChaCha8Rng::seed_from_u64(stream(seed, arg));
            (0..len)
                .map(|_| {
                    let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
                    match ty {
                        // Reals in [-1, 1); integers small enough that sums stay exact.
                        ElemType::Half | ElemType::Float | ElemType::Double => unit * 2.0 - 1.0,
                        ElemType::UChar | ElemType::UShort | ElemType::UInt | ElemType::ULong => {
                            (unit * 16.0).floor()
                        }
                        _ => (unit * 16.0).floor() - 8.0,
                    }
                })
                .collect()
        }
    }
}

/// The random stream of argument `arg` under `seed`.
fn stream(seed: u64, arg: usize) -> u64 {
    seed ^ (arg as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
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
    elements(ty, bytes).collect()
}

/// The elements of type `ty` in `bytes` (native byte order), as f64, without a copy.
pub fn elements(ty: ElemType, bytes: &[u8]) -> impl Iterator<Item = f64> + '_ {
    bytes.chunks_exact(ty.size()).map(move |c| match ty {
        ElemType::Char => c[0] as i8 as f64,
        ElemType::UChar => c[0] as f64,
        ElemType::Short => i16::from_ne_bytes([c[0], c[1]]) as f64,
        ElemType::UShort => u16::from_ne_bytes([c[0], c[1]]) as f64,
        ElemType::Int => i32::from_ne_bytes(c.try_into().expect("4 bytes")) as f64,
        ElemType::UInt => u32::from_ne_bytes(c.try_into().expect("4 bytes")) as f64,
        ElemType::Long => i64::from_ne_bytes(c.try_into().expect("8 bytes")) as f64,
        ElemType::ULong => u64::from_ne_bytes(c.try_into().expect("8 bytes")) as f64,
        ElemType::Half => half::f16::from_ne_bytes([c[0], c[1]]).to_f64(),
        ElemType::Float => f32::from_ne_bytes(c.try_into().expect("4 bytes")) as f64,
        ElemType::Double => f64::from_ne_bytes(c.try_into().expect("8 bytes")),
    })
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
        if let ArgKind::Buffer { ty, len, init, .. } = &a.kind {
            let len = len
                .eval(config)
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| {
                    format!(
                        "[[args]] {} len is not a size for configuration {config:?}",
                        a.name
                    )
                })?;
            out.insert(
                a.name.clone(),
                to_bytes(*ty, &initial_values(*init, *ty, len, seed, i)),
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_data_is_deterministic_per_seed_and_argument() {
        let a = initial_values(Init::Random, ElemType::Float, 100, 7, 0);
        assert_eq!(a, initial_values(Init::Random, ElemType::Float, 100, 7, 0));
        assert_ne!(a, initial_values(Init::Random, ElemType::Float, 100, 7, 1));
        assert_ne!(a, initial_values(Init::Random, ElemType::Float, 100, 8, 0));
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
        let u = initial_values(Init::Random, ElemType::UInt, 100, 7, 0);
        assert!(u
            .iter()
            .all(|v| (0.0..16.0).contains(v) && v.fract() == 0.0));
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
