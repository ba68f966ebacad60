//! `ndtune serve`: the prediction service (crates/ndtune-serve) with this machine's OpenCL
//! devices and the built-in profiles known by name.

use crate::cli::ServeArgs;
use anyhow::{anyhow, bail, Result};
use ndtune_serve::{HttpOptions, Listen, Options};
use std::io::Write;
use std::time::Duration;

pub fn run(args: &ServeArgs) -> Result<()> {
    let seconds = |name: &str, s: f64| {
        if s.is_finite() && s > 0.0 {
            Ok(Duration::from_secs_f64(s))
        } else {
            Err(anyhow!("--{name} {s}: a positive number of seconds"))
        }
    };
    if args.max_body == 0 {
        bail!("--max-body 0: a body must be allowed some bytes");
    }
    let listen = match (&args.listen, &args.socket) {
        (Some(addr), None) => Listen::Tcp(addr.clone()),
        (None, Some(path)) => Listen::Unix(path.clone()),
        _ => bail!("give --listen HOST:PORT or --socket PATH"),
    };
    let mut http = HttpOptions::new(listen);
    http.request_timeout = seconds("request-timeout", args.request_timeout)?;
    http.header_timeout = seconds("header-timeout", args.header_timeout)?;
    http.max_body = args.max_body;
    let store = args
        .db
        .as_deref()
        .map(ndtune_store::Store::open)
        .transpose()?;
    // Live devices by their names, then the built-in profiles; a machine without OpenCL still
    // serves requests that send features or whole profiles.
    let mut devices: Vec<_> = match ndtune_backend::discover() {
        Ok(found) => found.into_iter().map(|d| d.profile().clone()).collect(),
        Err(e) => {
            eprintln!("serve: no live device ({e}); built-in profiles only");
            Vec::new()
        }
    };
    devices.extend(
        ndtune_device::builtin::keys()
            .into_iter()
            .filter_map(ndtune_device::builtin::find),
    );
    // A client's kernel is compiled only inside walls the operating system enforces.
    match ndtune_learn::features::client_sandbox() {
        Ok(walls) => eprintln!(
            "serve: client kernels are compiled in a sandbox (Landlock) that can read only {} files and folders of clang's",
            walls.readable().len()
        ),
        Err(e) => eprintln!(
            "serve: client kernels are refused (503): {e}; requests with features or a known kernel hash are answered"
        ),
    }
    let options = Options {
        model_path: args.model.clone(),
        store,
        devices,
        retrain_after: args.retrain_after,
        seed: 1,
        wisdom: args.wisdom.clone(),
    };
    ndtune_serve::run(options, http, |address| {
        println!("listening on {address}");
        // Scripts and tests wait for this line.
        let _ = std::io::stdout().flush();
    })
    .map_err(|e| anyhow!(e))?;
    eprintln!("serve: stopped");
    Ok(())
}
