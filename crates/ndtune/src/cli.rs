//! The command line, with clap derive.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "ndtune",
    version,
    about = "Autotuner and co-execution runtime for OpenCL kernels"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// List every OpenCL platform and device (or the built-in offline profiles).
    Devices(DevicesArgs),
    /// Count, explain and list the launch configurations of a spec that can run on a device.
    Space(SpaceArgs),
}

/// Where device limits come from: a live device, a built-in profile or a saved profile file.
#[derive(Args, Clone, Default)]
pub struct DeviceArgs {
    /// Device from `ndtune devices`: an index, a case-insensitive part of its name, or `all`.
    #[arg(long, value_name = "SEL", conflicts_with_all = ["profile", "profile_file"])]
    pub device: Option<String>,
    /// A built-in offline profile (`ndtune devices --builtin` lists them), e.g. hd4600.
    #[arg(long, value_name = "NAME", conflicts_with = "profile_file")]
    pub profile: Option<String>,
    /// A saved DeviceProfile JSON file (`ndtune devices --json --device SEL > F`).
    #[arg(long, value_name = "F")]
    pub profile_file: Option<PathBuf>,
}

#[derive(Args)]
pub struct DevicesArgs {
    /// Print DeviceProfile objects as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only this device (index or part of the name).
    #[arg(long, value_name = "SEL")]
    pub device: Option<String>,
    /// List the built-in offline profiles instead of live devices.
    #[arg(long)]
    pub builtin: bool,
    /// Write the MiniZinc platform model (platform.mzn) and one .dzn per device to DIR.
    #[arg(long, value_name = "DIR")]
    pub mzn: Option<PathBuf>,
}

#[derive(Args)]
pub struct SpaceArgs {
    /// The spec file (TOML).
    pub spec: PathBuf,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Print JSON (with --list: one JSON object per line).
    #[arg(long)]
    pub json: bool,
    /// Stream every valid configuration, one per line.
    #[arg(long)]
    pub list: bool,
    /// Write the full MiniZinc model (platform.mzn, the spec's model, the device's .dzn) to DIR.
    #[arg(long, value_name = "DIR")]
    pub mzn: Option<PathBuf>,
    /// On a live device, build each valid configuration to check its own kernel work-group
    /// limit when there are at most N of them (0: never).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub kernel_check: u128,
}
