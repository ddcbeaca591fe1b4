//! Claims on matrix cells: before a process makes a run of a matrix, it claims the run's
//! place (matrix, cell, repetition) in one immediate transaction, so that two processes
//! continuing one matrix (`matrix --resume ID` twice, or beside the matrix itself) never
//! make the same run (issue 19: two resumes made 7 runs of a 4-run matrix, and the duplicates
//! were folded into the medians).
//!
//! A claim names its owner — host, boot, process id and the process's start time — and the
//! time it was made. It ends when the owner's run is recorded (in the run's own
//! transaction), when the owner releases its claims (a matrix that stops), or when another
//! process finds the owner dead and takes the claim over. Whether an owner is dead is the
//! caller's to say ([`Store::claim_cell`] takes it as a function): on one host, its process
//! is gone or its boot is over. The table is the one a farm of hosts sharing a store (on
//! PostgreSQL) would use; for one host to take over another's cells, the farm would add a
//! lease: the owner renews `claimed_at`, and a claim not renewed in time is dead.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{axes_to_text, MatrixPlace, Store, StoreError};

/// Who holds a claim: a process on a host, during one boot of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimOwner {
    pub host: String,
    /// `/proc/sys/kernel/random/boot_id`: a process id means nothing across a reboot.
    pub boot_id: String,
    pub pid: u32,
    /// When the process started (clock ticks after boot), so that a reused process id is
    /// not taken for the owner.
    pub pid_start: Option<u64>,
    /// RFC 3339 UTC.
    pub claimed_at: String,
}

impl ClaimOwner {
    /// Whether `other` is the same process (whenever either claimed).
    pub fn same_process(&self, other: &ClaimOwner) -> bool {
        (&self.host, &self.boot_id, self.pid, self.pid_start)
            == (&other.host, &other.boot_id, other.pid, other.pid_start)
    }
}

/// What claiming a run's place found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The place is ours: make the run.
    Won,
    /// A complete run is stored there already.
    Stored,
    /// Another live process holds it.
    Held(ClaimOwner),
}

impl Store {
    /// Claims `place` for `me`, unless a complete run is stored there or a process that
    /// `dead` does not call dead holds it; a dead owner's claim is taken over.
    pub fn claim_cell(
        &mut self,
        place: &MatrixPlace,
        me: &ClaimOwner,
        dead: impl Fn(&ClaimOwner) -> bool,
    ) -> Result<Claim, StoreError> {
        let path = self.path.clone();
        let sql = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let cell = axes_to_text(&place.axes);
        let rep = i64::from(place.repetition);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&sql)?;
        let stored = tx
            .query_row(
                "SELECT 1 FROM runs WHERE matrix_id = ?1 AND matrix_cell = ?2 AND matrix_repetition = ?3
                    AND interrupted = 0 LIMIT 1",
                params![place.matrix_id, cell, rep],
                |_| Ok(()),
            )
            .optional()
            .map_err(&sql)?;
        if stored.is_some() {
            return Ok(Claim::Stored);
        }
        let held = tx
            .query_row(
                "SELECT host, boot_id, pid, pid_start, claimed_at FROM matrix_claims
                 WHERE matrix_id = ?1 AND matrix_cell = ?2 AND matrix_repetition = ?3",
                params![place.matrix_id, cell, rep],
                |r| {
                    Ok(ClaimOwner {
                        host: r.get(0)?,
                        boot_id: r.get(1)?,
                        pid: r.get::<_, i64>(2)? as u32,
                        pid_start: r.get::<_, Option<i64>>(3)?.map(|t| t as u64),
                        claimed_at: r.get(4)?,
                    })
                },
            )
            .optional()
            .map_err(&sql)?;
        if let Some(owner) = held {
            if !owner.same_process(me) && !dead(&owner) {
                return Ok(Claim::Held(owner));
            }
        }
        // Portable (PostgreSQL has no INSERT OR REPLACE): the old claim goes, ours comes.
        tx.execute(
            "DELETE FROM matrix_claims WHERE matrix_id = ?1 AND matrix_cell = ?2 AND matrix_repetition = ?3",
            params![place.matrix_id, cell, rep],
        )
        .map_err(&sql)?;
        tx.execute(
            "INSERT INTO matrix_claims (matrix_id, matrix_cell, matrix_repetition, host, boot_id, pid,
                 pid_start, claimed_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                place.matrix_id,
                cell,
                rep,
                me.host,
                me.boot_id,
                i64::from(me.pid),
                me.pid_start.map(|t| t as i64),
                me.claimed_at
            ],
        )
        .map_err(&sql)?;
        tx.commit().map_err(&sql)?;
        Ok(Claim::Won)
    }

    /// Gives up every claim `me` holds on `matrix_id` (a matrix that stops); how many.
    pub fn release_claims(&mut self, matrix_id: &str, me: &ClaimOwner) -> Result<usize, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "DELETE FROM matrix_claims WHERE matrix_id = ?1 AND host = ?2 AND boot_id = ?3 AND pid = ?4
                    AND (pid_start = ?5 OR (pid_start IS NULL AND ?5 IS NULL))",
            )
            .map_err(self.sql())?;
        stmt.execute(params![
            matrix_id,
            me.host,
            me.boot_id,
            i64::from(me.pid),
            me.pid_start.map(|t| t as i64)
        ])
        .map_err(self.sql())
    }

    /// The claims held on `matrix_id`, by place.
    pub fn claims(&self, matrix_id: &str) -> Result<Vec<(MatrixPlace, ClaimOwner)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT matrix_cell, matrix_repetition, host, boot_id, pid, pid_start, claimed_at
                 FROM matrix_claims WHERE matrix_id = ?1 ORDER BY matrix_repetition, matrix_cell",
            )
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([matrix_id], |r| {
                Ok((
                    MatrixPlace {
                        matrix_id: matrix_id.to_string(),
                        axes: super::axes_from_text(r.get(0)?),
                        repetition: r.get::<_, i64>(1)? as u32,
                    },
                    ClaimOwner {
                        host: r.get(2)?,
                        boot_id: r.get(3)?,
                        pid: r.get::<_, i64>(4)? as u32,
                        pid_start: r.get::<_, Option<i64>>(5)?.map(|t| t as u64),
                        claimed_at: r.get(6)?,
                    },
                ))
            })
            .map_err(self.sql())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MatrixRecord;

    fn owner(pid: u32) -> ClaimOwner {
        ClaimOwner {
            host: "h".into(),
            boot_id: "b".into(),
            pid,
            pid_start: Some(100 + u64::from(pid)),
            claimed_at: "2026-11-22T09:00:00Z".into(),
        }
    }

    fn store_with_matrix() -> Store {
        let mut store = Store::open_in_memory().unwrap();
        store
            .create_matrix(&MatrixRecord {
                id: "m1".into(),
                scenario: "probe".into(),
                created_at: "2026-11-22T09:00:00Z".into(),
                plan: serde_json::json!({}),
            })
            .unwrap();
        store
    }

    fn place(rep: u32) -> MatrixPlace {
        MatrixPlace {
            matrix_id: "m1".into(),
            axes: vec![("sync".into(), "fsync".into())],
            repetition: rep,
        }
    }

    /// Issue 19, item 8: a live owner's claim holds, a dead owner's is taken over, a stored
    /// run ends the claim, and released claims are gone.
    #[test]
    fn issue19_a_cell_is_claimed_once_and_taken_over_from_the_dead() {
        let mut store = store_with_matrix();
        let (a, b) = (owner(1), owner(2));
        let alive = |_: &ClaimOwner| false;
        assert_eq!(store.claim_cell(&place(0), &a, alive).unwrap(), Claim::Won);
        assert_eq!(
            store.claim_cell(&place(0), &a, alive).unwrap(),
            Claim::Won,
            "again, the same process"
        );
        assert_eq!(store.claim_cell(&place(0), &b, alive).unwrap(), Claim::Held(a.clone()));
        assert_eq!(store.claim_cell(&place(0), &b, |o| o.pid == 1).unwrap(), Claim::Won);
        assert_eq!(store.claims("m1").unwrap()[0].1, b);

        // The run recorded: the place is stored, the claim gone.
        let run = serde_json::json!({"scenario": "probe", "started_at": "2026-11-22T09:00:00Z", "duration_s": 1.0});
        store
            .record_run(&run, &[] as &[(u64, &str, u64, u64, Option<&str>)], Some(&place(0)))
            .unwrap();
        assert!(store.claims("m1").unwrap().is_empty());
        assert_eq!(store.claim_cell(&place(0), &a, alive).unwrap(), Claim::Stored);

        assert_eq!(store.claim_cell(&place(1), &a, alive).unwrap(), Claim::Won);
        assert_eq!(store.claim_cell(&place(2), &b, alive).unwrap(), Claim::Won);
        assert_eq!(store.release_claims("m1", &a).unwrap(), 1);
        let left: Vec<u32> = store.claims("m1").unwrap().iter().map(|(p, _)| p.repetition).collect();
        assert_eq!(left, [2]);
    }
}
