//! `ndtune-worker [--env NAME=VALUE]... __worker|__builder|__campaign`: the engine's worker loops
//! as a program of their own, for a program that tunes through the engine and is not `ndtune`
//! (the engine's integration tests: `Processes::with_args` of `CARGO_BIN_EXE_ndtune-worker`).
//! `--env` sets a variable before the loop starts, so that campaigns run side by side in one
//! process can give their workers caches of their own (`NDTUNE_CACHE_DIR`, PoCL's).

fn main() {
    let mut args = std::env::args().skip(1);
    let mut sub = None;
    while let Some(arg) = args.next() {
        if arg != "--env" {
            sub = Some(arg);
            break;
        }
        let Some((name, value)) = args.next().and_then(|a| {
            a.split_once('=')
                .map(|(n, v)| (n.to_string(), v.to_string()))
        }) else {
            eprintln!("ndtune-worker: --env takes NAME=VALUE");
            std::process::exit(2);
        };
        // One thread so far: nothing else reads the environment while it changes.
        std::env::set_var(name, value);
    }
    let code = match sub.as_deref() {
        Some("__worker") => ndtune_bench::worker::serve(),
        Some("__builder") => ndtune_bench::builder::serve(),
        Some("__campaign") => ndtune_engine::pool::serve(),
        _ => {
            eprintln!("usage: ndtune-worker [--env NAME=VALUE]... __worker|__builder|__campaign");
            2
        }
    };
    std::process::exit(code)
}
