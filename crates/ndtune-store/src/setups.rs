//! Setups: what results were measured under besides device, constants and configuration
//! ([`ndtune_core::setup`]), kept by digest with the description people read, and the other
//! campaigns of a problem (the same kernel source and constants on the same device, under
//! another setup), which are never reused.

use crate::{Group, Store, StoreError, UnixMs};
use ndtune_core::setup::{differences, Setup};

/// A setup as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupRecord {
    pub digest: String,
    /// Canonical JSON ([`Setup::description`]).
    pub description: serde_json::Value,
    /// When a campaign first recorded it.
    pub first_seen: UnixMs,
}

impl Store {
    /// Records a setup; one recorded before keeps its description and first sighting (the
    /// digest is a hash of the description).
    pub fn put_setup(&self, setup: &Setup) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO setups (digest, description, first_seen) VALUES (?1, ?2, ?3)
             ON CONFLICT (digest) DO NOTHING",
            &[
                (&setup.digest).into(),
                setup.description.to_string().into(),
                crate::now_ms().into(),
            ],
        )?;
        Ok(())
    }

    /// The setup recorded under `digest`, if any.
    pub fn setup(&self, digest: &str) -> Result<Option<SetupRecord>, StoreError> {
        let rows = self.query(
            "SELECT digest, description, first_seen FROM setups WHERE digest = ?1",
            &[digest.into()],
        )?;
        rows.first()
            .map(|r| {
                Ok(SetupRecord {
                    digest: self.cell(r.text(0))?,
                    description: self.parse(&self.cell(r.text(1))?, "setup description")?,
                    first_seen: self.cell(r.int(2))?,
                })
            })
            .transpose()
    }

    /// The other campaigns of `group`'s problem: the same kernel source with the same constants
    /// on the same device, under another setup, that have results or claims. Their results are
    /// not `group`'s.
    pub fn other_setups(&self, group: &Group) -> Result<Vec<Group>, StoreError> {
        Ok(self
            .campaigns()?
            .into_iter()
            .filter(|g| g.same_problem(group) && g != group)
            .collect())
    }

    /// The newest campaign of `group`'s problem (the one with the latest result; of equals, the
    /// greatest), where that is not `group`, with what differs from `group`'s setup to it:
    /// `group` is then an earlier campaign, whose results the newest never reuses.
    pub fn newest_other(&self, group: &Group) -> Result<Option<(Group, Vec<String>)>, StoreError> {
        let last = |g: &Group| -> Result<_, StoreError> {
            Ok((self.campaign_status(g)?.last_result, g.clone()))
        };
        let mut newest = last(group)?;
        for other in self.other_setups(group)? {
            newest = newest.max(last(&other)?);
        }
        let newest = newest.1;
        if newest == *group {
            return Ok(None);
        }
        let what = self.setup_differences(&group.setup, &newest.setup)?;
        Ok(Some((newest, what)))
    }

    /// What differs from setup `from` to setup `to`, one `path: old -> new` line each
    /// ([`differences`]); a setup the store does not describe says so.
    pub fn setup_differences(&self, from: &str, to: &str) -> Result<Vec<String>, StoreError> {
        let (Some(a), Some(b)) = (self.setup(from)?, self.setup(to)?) else {
            return Ok(vec![format!(
                "setup {from} or {to} is not described in the store"
            )]);
        };
        Ok(differences(&a.description, &b.description))
    }
}
