//! Keeps one device busy with a competing kernel, to measure co-execution on a device that slows
//! down mid-study (bench/coexec_node.sh): `busy SEL SECONDS` launches a long arithmetic kernel
//! back to back on device SEL (as `ndtune devices` numbers them) until SECONDS have passed, from
//! its own context, as another program on the node would.

use ndtune_backend::Arg;
use std::time::{Duration, Instant};

const SOURCE: &str = r#"
__kernel void busy(__global float* x, int iters) {
    size_t i = get_global_id(0);
    float v = x[i];
    for (int k = 0; k < iters; k++) v = v * 1.0000001f + 0.5f;
    x[i] = v;
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(sel), Some(seconds)) = (args.get(1), args.get(2)) else {
        return Err("usage: busy SEL SECONDS".into());
    };
    let seconds: f64 = seconds.parse()?;
    let all = ndtune_backend::discover()?;
    let device = ndtune_backend::pick(&all, sel)?;
    let mut session = device.session()?;
    let kernel = session.kernel(SOURCE, "busy", "")?;
    let items = 1usize << 22;
    let buffer = session.buffer(&vec![0u8; items * 4])?;
    let iters = 4000i32.to_ne_bytes();
    session.set_args(&kernel, &[Arg::Buffer(&buffer), Arg::Scalar(&iters)])?;
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let mut launches = 0u64;
    let mut busy_ms = 0.0;
    while Instant::now() < until {
        busy_ms += session.launch(&kernel, &[items], Some(&[256]), None)?;
        launches += 1;
    }
    eprintln!(
        "busy: {launches} launches on {}, {:.0} ms of kernel ({:.1} ms each)",
        device.label(),
        busy_ms,
        busy_ms / launches.max(1) as f64
    );
    Ok(())
}
