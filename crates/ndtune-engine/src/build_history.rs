//! Build times kept in the store across campaigns: a study of kind `builds` per kernel and
//! device (any source version, any constants: they build alike), holding each build's parameter
//! values and seconds. A campaign's build pool orders its first builds by them
//! (`ndtune_bench::builder::BuildTimes`) and adds its own when it ends.

use ndtune_store::{Group, Store, StoreError, Study};
use serde::{Deserialize, Serialize};

/// The study's kind.
const KIND: &str = "builds";

/// At most this many build times are kept per kernel and device, the latest.
const KEPT: usize = 4096;

#[derive(Serialize, Deserialize)]
struct Body {
    /// The parameters, in the order of each build's values.
    names: Vec<String>,
    /// A build's parameter values, then its seconds.
    builds: Vec<(Vec<i64>, f64)>,
}

fn name(group: &Group) -> String {
    format!("{} on {}", group.kernel, group.device)
}

/// The build times kept for `group`'s kernel and device over the parameters `names` (none where
/// they were kept over other parameters, or cannot be read: they are only a guide).
pub(crate) fn load(store: &Store, group: &Group, names: &[String]) -> Vec<(Vec<i64>, f64)> {
    let studies = store.studies(Some(KIND)).unwrap_or_default();
    studies
        .into_iter()
        .find(|s| s.name == name(group))
        .and_then(|s| serde_json::from_value::<Body>(s.body).ok())
        .filter(|b| b.names == names)
        .map(|b| b.builds)
        .unwrap_or_default()
}

/// Keeps `builds` (what was loaded, then this campaign's) for `group`'s kernel and device.
pub(crate) fn save(
    store: &Store,
    group: &Group,
    names: &[String],
    builds: &[(Vec<i64>, f64)],
) -> Result<(), StoreError> {
    let body = Body {
        names: names.to_vec(),
        builds: builds[builds.len().saturating_sub(KEPT)..].to_vec(),
    };
    store.put_study(&Study {
        kind: KIND.into(),
        name: name(group),
        body: serde_json::to_value(body).expect("numbers and names serialise"),
        created_at: ndtune_store::now_ms(),
    })
}
