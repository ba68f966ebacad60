//! ndtune's results store: one record per evaluated configuration, in an SQLite file (the
//! zero-setup default) or a PostgreSQL database (several machines sharing one campaign).
//!
//! This crate owns:
//! - the store ([`Store`], opened from a path or a `postgres://` URL, [`Location`]): its
//!   schema, the same on both backends, the migrations between schema versions
//!   ([`SCHEMA_VERSION`]), the refusal of files and databases that are not ndtune stores, and
//!   durable writes (SQLite: WAL journal, `synchronous=FULL`; one transaction per record, so a
//!   campaign killed at any moment loses nothing it committed);
//! - claims, by which workers share one campaign ([`Store::claim`], [`Store::complete`],
//!   [`Store::heartbeat`], [`Store::release`], [`Store::campaign_status`]);
//! - the identities it keys records by: [`fingerprint`] of a device profile, [`source_hash`]
//!   of a kernel source, and the digest of the setup a result was measured under
//!   ([`ndtune_core::setup`]), with each setup's description ([`Store::put_setup`]): a result is
//!   reused only by a campaign of the same setup, and results of other setups of the same
//!   kernel source, constants and device are its other campaigns ([`Store::other_setups`],
//!   [`Store::newest_other`]);
//! - import and export of other tools' formats ([`kt`]: Kernel Tuner caches, T4 results);
//! - with the `testing` feature, [`testing::PgServer`]: a throwaway PostgreSQL server for tests.
//!
//! It stores the vocabulary of `ndtune-core` ([`Config`], [`Outcome`]) and `ndtune-device`
//! ([`DeviceProfile`]) as they serialise; it never touches OpenCL, never measures anything and
//! never decides what to evaluate next.
//!
//! Timestamps are [`UnixMs`]: milliseconds since the Unix epoch, UTC.
//!
//! ```
//! use ndtune_core::{Outcome, Timing};
//! use ndtune_store::{Record, ResultKey, Store};
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(&dir.path().join("results.ndtune")).unwrap();
//! let key = ResultKey {
//!     device: "0123456789abcdef".into(),
//!     kernel: "gemm".into(),
//!     source_hash: ndtune_store::source_hash("kernel void gemm() {}"),
//!     setup: "0011223344556677".into(),
//!     constants: ndtune_core::int_config([("N", 1024)]),
//!     config: ndtune_core::int_config([("TX", 16)]),
//! };
//! let record = Record {
//!     key: key.clone(),
//!     outcome: Outcome::Measured(Timing::new(vec![2.0, 1.0], 1)),
//!     ndtune_version: ndtune_store::NDTUNE_VERSION.into(),
//!     started_at: 1_700_000_000_000,
//!     finished_at: 1_700_000_000_250,
//! };
//! store.insert(&record).unwrap();
//! assert_eq!(store.get(&key).unwrap(), Some(record));
//! ```

mod backend;
mod claims;
pub mod cltune;
mod error;
mod identity;
pub mod kt;
mod location;
mod open;
mod pg;
mod schema;
mod setups;
mod sqlite;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use claims::{CampaignStatus, WorkerStatus};
pub use error::StoreError;
pub use identity::{fingerprint, source_hash};
pub use location::Location;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use setups::SetupRecord;
pub use store::{Store, RECONNECT_FOR};

use ndtune_core::{Config, Constants, Outcome};
#[cfg(doc)]
use ndtune_device::DeviceProfile;

/// The version of ndtune this crate belongs to; recorded with every record it writes.
pub const NDTUNE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A point in time: milliseconds since 1970-01-01T00:00:00Z.
pub type UnixMs = i64;

/// The current time as [`UnixMs`].
pub fn now_ms() -> UnixMs {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// What identifies one record: a configuration of one kernel source, specialised with its
/// constants, measured under one setup on one device.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResultKey {
    /// The device's [`fingerprint`].
    pub device: String,
    pub kernel: String,
    /// [`source_hash`] of the kernel source.
    pub source_hash: String,
    /// The digest of the setup ([`ndtune_core::setup::Setup::digest`]).
    pub setup: String,
    /// The problem's constants (sizes and other fixed defines), by name.
    pub constants: Constants,
    pub config: Config,
}

impl ResultKey {
    /// The key of `config` in `group`.
    pub fn new(group: &Group, config: Config) -> ResultKey {
        ResultKey {
            device: group.device.clone(),
            kernel: group.kernel.clone(),
            source_hash: group.source_hash.clone(),
            setup: group.setup.clone(),
            constants: group.constants.clone(),
            config,
        }
    }

    /// The group this key belongs to: everything but the configuration.
    pub fn group(&self) -> Group {
        Group {
            device: self.device.clone(),
            kernel: self.kernel.clone(),
            source_hash: self.source_hash.clone(),
            setup: self.setup.clone(),
            constants: self.constants.clone(),
        }
    }
}

/// How the evaluation of one configuration ended, and when and by which ndtune.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub key: ResultKey,
    pub outcome: Outcome,
    /// The ndtune version that evaluated it ([`NDTUNE_VERSION`] for new records).
    pub ndtune_version: String,
    pub started_at: UnixMs,
    pub finished_at: UnixMs,
}

/// One campaign's worth of records: a kernel source with its constants, measured under one
/// setup on one device.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Group {
    pub device: String,
    pub kernel: String,
    pub source_hash: String,
    /// The digest of the setup ([`ndtune_core::setup::Setup::digest`]).
    pub setup: String,
    pub constants: Constants,
}

impl Group {
    /// Whether `other` is a campaign of the same problem: the same kernel source with the same
    /// constants on the same device (of this setup or another). The source counts: kernels of
    /// one name may be different kernels (every generated stencil is called `stencil`).
    pub fn same_problem(&self, other: &Group) -> bool {
        self.device == other.device
            && self.kernel == other.kernel
            && self.source_hash == other.source_hash
            && self.constants == other.constants
    }
}

/// A result that is not one configuration's: a co-execution study, a learning evaluation. The
/// store keeps one per (kind, name); its body is the studying command's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    pub kind: String,
    pub name: String,
    pub body: serde_json::Value,
    pub created_at: UnixMs,
}

/// What a program measured at run time for one local size of one scenario, as reported to the
/// prediction service.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Identifies the scenario: a hash of its features.
    pub scenario: String,
    /// The scenario's features, by name.
    pub features: Vec<(String, f64)>,
    /// The local size (columns, rows).
    pub local: [u64; 2],
    /// The runtime; `None` where the device refused the size.
    pub runtime_ms: Option<f64>,
    pub received_at: UnixMs,
}
