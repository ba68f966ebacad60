//! Prints what discovery finds and the limits of a small kernel on each device.
//!
//! `cargo run -p ndtune-cl --example probe`; with `OCL_ICD_VENDORS=/nonexistent-dir` it shows
//! the no-platform error instead.

use ndtune_device::backend::Device;

fn main() {
    let devices = match ndtune_cl::discover() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let src = "__kernel void scale(__global float *a, float s) { a[get_global_id(0)] *= s; }";
    for d in &devices {
        println!("device {}: {:#?}", d.index(), d.profile());
        match d.kernel_limits(src, "scale", "") {
            Ok(k) => println!("kernel `scale`: {k:?}"),
            Err(e) => println!("kernel `scale`: {e}"),
        }
    }
}
