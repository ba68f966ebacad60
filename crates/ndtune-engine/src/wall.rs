//! The command's wall time from the process's start, divided into what it did: the `time` object
//! of `ndtune tune --json` and the summary's last line. Each part is a lap of one clock, so the
//! parts add up to the whole; what no lap names is `other_s`.

use serde::Serialize;
use std::sync::OnceLock;
use std::time::Instant;

/// When `main` started.
static MAIN: OnceLock<Instant> = OnceLock::new();

/// Marks the start of `main`; call it first.
pub fn start() {
    MAIN.get_or_init(Instant::now);
}

/// Seconds from the process's start (its `exec`, as the kernel counts it in clock ticks) to
/// `main`: loading the executable and its libraries. 0 where `/proc` cannot say.
fn before_main_s() -> f64 {
    let main = *MAIN.get_or_init(Instant::now);
    let since_main = main.elapsed().as_secs_f64();
    let read = || -> Option<f64> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // The fields after the command name (which may hold spaces) in parentheses.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let start_ticks: f64 = fields.get(19)?.parse().ok()?;
        let uptime: f64 = std::fs::read_to_string("/proc/uptime")
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        // SAFETY: sysconf reads a constant of the running system.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Some(uptime - start_ticks / ticks - since_main)
    };
    read().unwrap_or(0.0).max(0.0)
}

/// Where a command's wall time went, in seconds; the parts add up to `wall_s`.
#[derive(Debug, Serialize, Clone, Default)]
pub struct Wall {
    /// From the process's start to the moment this account was closed.
    pub wall_s: f64,
    /// Loading the executable, until `main`.
    pub start_s: f64,
    /// Reading and checking the spec.
    pub spec_s: f64,
    /// Finding the devices and opening those picked (their profiles), starting their
    /// measurement workers.
    pub discovery_s: f64,
    /// Opening the store.
    pub store_s: f64,
    /// Pruning each device's space and recording it.
    pub prune_s: f64,
    /// The campaigns, each accounted for in its device's `time`.
    pub campaigns_s: f64,
    /// Everything else: argument parsing, printing the summaries.
    pub other_s: f64,
    #[serde(skip)]
    lap: Option<Instant>,
}

impl Wall {
    /// A clock whose first lap starts at `main`.
    pub fn new() -> Wall {
        Wall {
            lap: Some(*MAIN.get_or_init(Instant::now)),
            ..Wall::default()
        }
    }

    /// Seconds since the last lap (or `main`); starts the next lap.
    pub fn lap(&mut self) -> f64 {
        let now = Instant::now();
        let since = self.lap.map_or(0.0, |t| (now - t).as_secs_f64());
        self.lap = Some(now);
        since
    }

    /// Closes the account: the wall time so far, and what no part holds.
    pub fn close(&mut self) -> &Wall {
        let main = *MAIN.get_or_init(Instant::now);
        self.start_s = before_main_s();
        self.wall_s = self.start_s + main.elapsed().as_secs_f64();
        let parts = self.start_s
            + self.spec_s
            + self.discovery_s
            + self.store_s
            + self.prune_s
            + self.campaigns_s;
        self.other_s = (self.wall_s - parts).max(0.0);
        self
    }

    /// One line for the summary.
    pub fn line(&self) -> String {
        format!(
            "wall {:.2} s from the process's start: start {:.2} s, spec {:.2} s, devices {:.2} s, store {:.2} s, pruning {:.2} s, campaigns {:.2} s, other {:.2} s",
            self.wall_s,
            self.start_s,
            self.spec_s,
            self.discovery_s,
            self.store_s,
            self.prune_s,
            self.campaigns_s,
            self.other_s
        )
    }
}
