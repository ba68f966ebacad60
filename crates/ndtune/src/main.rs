//! `ndtune`: prune, tune, split and learn OpenCL launch configurations.
//!
//! This crate only orchestrates: it parses the command line (clap), resolves devices, calls the
//! library crates and prints tables or JSON. `main` is a thin wrapper around [`run`]; errors are
//! printed once, with their context.

mod cli;
mod cmd_devices;
mod cmd_space;
mod kernel_check;
mod output;
mod targets;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: cli::Cli) -> anyhow::Result<()> {
    match cli.command {
        cli::Command::Devices(args) => cmd_devices::run(&args),
        cli::Command::Space(args) => cmd_space::run(&args),
    }
}
