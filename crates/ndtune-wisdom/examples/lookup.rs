//! The cost of a pick (BENCHMARKS.md, "Using what was tuned"): a wisdom of 10,000 entries (100
//! device models x 100 sizes of a tiled kernel), the first answer to a question (pruning,
//! predicting) and the same question again (a kept answer), exact, nearest and predicted.
//!   cargo run --release -p ndtune-wisdom --example lookup
use ndtune_core::{Constants, Value};
use ndtune_wisdom::{Entry, KernelWisdom, ObjectiveInfo, Picker};
use std::time::Instant;

const SPEC: &str = r#"
[kernel]
name = "tiled"
source = "tiled.cl"
[constants]
N = 1024
[params]
TS = [4, 8, 16, 32]
UNROLL = [1, 2, 4]
[launch]
global = ["N", "N / UNROLL"]
local = ["TS", "TS / UNROLL"]
[space]
constraints = ["N % TS == 0", "TS % UNROLL == 0"]
"#;

fn n(v: i64) -> Constants {
    [("N".to_string(), Value::Int(v))].into_iter().collect()
}

fn main() {
    let base = ndtune_device::builtin::find("gtx-titan").unwrap();
    let model = |m: u64| ndtune_device::DeviceProfile {
        compute_units: m + 1,
        ..base.clone()
    };
    let mut entries = Vec::new();
    for m in 0..100u64 {
        for k in 1..=100i64 {
            let ts = [4, 8, 16, 32][(m as usize + k as usize) % 4];
            entries.push(Entry {
                device: model(m),
                constants: n(k * 256),
                config: [("TS", ts), ("UNROLL", 1 + (k % 2))]
                    .into_iter()
                    .map(|(p, v)| (p.to_string(), Value::Int(v)))
                    .collect(),
                objective: 1.0 + k as f64,
                setup: "0123456789abcdef".into(),
                measured: 12,
                ranked: Vec::new(),
                front: Vec::new(),
            });
        }
    }
    let wisdom = KernelWisdom {
        kernel: "tiled".into(),
        spec_file: "tiled.toml".into(),
        spec: SPEC.into(),
        defines: vec!["N".into(), "TS".into(), "UNROLL".into()],
        objective: ObjectiveInfo {
            metric: "time".into(),
            unit: Some("ms".into()),
            higher_is_better: false,
        },
        more_objectives: Vec::new(),
        entries,
    };
    let started = Instant::now();
    let picker = Picker::new(&wisdom, "lookup.json").unwrap();
    println!(
        "10,000 entries: loaded in {:.1} ms (the model is learnt at the first prediction)",
        started.elapsed().as_secs_f64() * 1e3
    );
    let never = ndtune_device::DeviceProfile {
        compute_units: 1000,
        ..base.clone()
    };
    for (what, device, size) in [
        ("exact", model(42), 256 * 37),
        ("nearest", model(42), 256 * 37 + 128),
        ("predicted", never, 256 * 37),
    ] {
        let question = n(size);
        let first = Instant::now();
        let pick = picker.pick(&device, &question).unwrap();
        let first = first.elapsed().as_secs_f64() * 1e6;
        assert_eq!(pick.how.word(), what);
        let calls = 1_000_000;
        let again = Instant::now();
        for _ in 0..calls {
            std::hint::black_box(picker.pick(&device, &question).unwrap());
        }
        let again = again.elapsed().as_secs_f64() * 1e9 / calls as f64;
        println!("{what:>9}: first answer {first:8.1} us, again {again:6.0} ns per call");
    }
}
