//! `ndtune`: prune, tune, split and learn OpenCL launch configurations.
//!
//! This crate only orchestrates: it parses the command line (clap), resolves devices, calls the
//! library crates and prints tables or JSON. `main` is a thin wrapper around [`run`]; errors are
//! printed once, with their context.

mod cli;
mod cmd_bench_strategies;
mod cmd_collect;
mod cmd_devices;
mod cmd_export;
mod cmd_learn;
mod cmd_pick;
mod cmd_replay;
mod cmd_report;
mod cmd_serve;
mod cmd_show;
mod cmd_space;
mod cmd_split;
mod cmd_status;
mod cmd_stencil;
mod cmd_tune;
mod output;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    ndtune_engine::wall::start();
    let cli = cli::Cli::parse();
    // Like other Unix tools, end quietly when the reader of our output goes away (`| head`);
    // Rust ignores SIGPIPE by default and `println!` would panic instead. Not a pool's worker:
    // its reader is the pool, and one whose pool died must still give back its claims and
    // clean up, its writes failing instead. (The measurement and build workers keep the
    // default: they die with their campaign anyway, and the OpenCL driver in them runs as it
    // always has.)
    if !matches!(cli.command, cli::Command::PoolWorker) {
        // SAFETY: restoring a signal's default disposition before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // The OpenCL driver keeps its kernels in the user's cache folder: never, as root, inside
    // another user's home. Set before any thread starts; the worker processes inherit it.
    if let Some(dir) = ndtune_core::cache::driver_cache_override() {
        std::env::set_var("POCL_CACHE_DIR", dir);
    }
    // A campaign stopped by SIGTERM, SIGINT or SIGHUP ends its worker processes and keeps what
    // it measured (ndtune_bench::children).
    if let cli::Command::Tune(_) | cli::Command::Collect(_) | cli::Command::Split(_) = cli.command {
        if let Err(e) = ndtune_bench::children::end_with_signals() {
            eprintln!("error: cannot handle SIGTERM and SIGINT: {e}");
            return ExitCode::FAILURE;
        }
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ndtune_bench::children::stopping_status().map_or(ExitCode::FAILURE, ExitCode::from)
        }
    }
}

fn run(cli: cli::Cli) -> anyhow::Result<()> {
    match cli.command {
        cli::Command::Devices(args) => cmd_devices::run(&args),
        cli::Command::Space(args) => cmd_space::run(&args),
        cli::Command::Tune(args) => cmd_tune::run(&args),
        cli::Command::Export(args) => cmd_export::run(&args),
        cli::Command::Show(args) => cmd_show::run(&args),
        cli::Command::Pick(args) => cmd_pick::run(&args),
        cli::Command::Split(args) => cmd_split::run(&args),
        cli::Command::Stencil(cmd) => cmd_stencil::run(&cmd),
        cli::Command::Collect(args) => cmd_collect::run(&args),
        cli::Command::Learn(cmd) => cmd_learn::run(&cmd),
        cli::Command::Report(args) => cmd_report::run(&args),
        cli::Command::Status(args) => cmd_status::run(&args),
        cli::Command::Serve(args) => cmd_serve::run(&args),
        cli::Command::BenchStrategies(args) => cmd_bench_strategies::run(&args),
        cli::Command::Worker => std::process::exit(ndtune_bench::worker::serve()),
        cli::Command::Builder => std::process::exit(ndtune_bench::builder::serve()),
        cli::Command::PoolWorker => std::process::exit(ndtune_engine::pool::serve()),
    }
}
