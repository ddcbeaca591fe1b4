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
//! is gone or its boot is over; on a farm, the scheduler's job that ran it has ended (the
//! claim names the job: `slurm:1234_5`), which is how one host takes over another's cells.
//! The claim is made in an immediate transaction on either database (on PostgreSQL under
//! the store's advisory lock), so that hosts sharing a PostgreSQL store never make one run
//! twice.

use super::backend::{args, Arg, Begin, DbError, Row};
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
    /// The scheduler's job the process runs in (`slurm:1234_5`), if any: whether it still
    /// runs says whether the claim holds when the process is on another host.
    pub job: Option<String>,
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

/// The owner of a claim from its columns, starting at `at`: host, boot_id, pid, pid_start,
/// claimed_at, job.
fn owner(r: &dyn Row, at: usize) -> Result<ClaimOwner, DbError> {
    Ok(ClaimOwner {
        host: r.text(at)?,
        boot_id: r.text(at + 1)?,
        pid: r.int(at + 2)? as u32,
        pid_start: r.opt_int(at + 3)?.map(|t| t as u64),
        claimed_at: r.text(at + 4)?,
        job: r.opt_text(at + 5)?,
    })
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
        let cell = axes_to_text(&place.axes);
        let rep = i64::from(place.repetition);
        let at = args![place.matrix_id.as_str(), cell.as_str(), rep];
        let path = self.path.clone();
        self.db
            .transaction(Begin::Immediate, |db| {
                let stored = db.exists(
                    "SELECT 1 FROM runs WHERE matrix_id = ?1 AND matrix_cell = ?2 AND matrix_repetition = ?3
                        AND interrupted = 0 LIMIT 1",
                    at,
                )?;
                if stored {
                    return Ok(Claim::Stored);
                }
                let held = db.query_opt(
                    "SELECT host, boot_id, pid, pid_start, claimed_at, job FROM matrix_claims
                     WHERE matrix_id = ?1 AND matrix_cell = ?2 AND matrix_repetition = ?3",
                    at,
                    |r| owner(r, 0),
                )?;
                if let Some(owner) = held {
                    if !owner.same_process(me) && !dead(&owner) {
                        return Ok(Claim::Held(owner));
                    }
                }
                // Portable (PostgreSQL has no INSERT OR REPLACE): the old claim goes, ours
                // comes.
                db.execute(
                    "DELETE FROM matrix_claims WHERE matrix_id = ?1 AND matrix_cell = ?2 AND matrix_repetition = ?3",
                    at,
                )?;
                db.execute(
                    "INSERT INTO matrix_claims (matrix_id, matrix_cell, matrix_repetition, host, boot_id, pid,
                         pid_start, claimed_at, job)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    args![
                        place.matrix_id.as_str(),
                        cell.as_str(),
                        rep,
                        me.host.as_str(),
                        me.boot_id.as_str(),
                        i64::from(me.pid),
                        me.pid_start.map(|t| t as i64),
                        me.claimed_at.as_str(),
                        me.job.as_deref(),
                    ],
                )?;
                Ok(Claim::Won)
            })
            .map_err(|source| StoreError::Database { path, source })
    }

    /// Gives up every claim `me` holds on `matrix_id` (a matrix that stops); how many.
    pub fn release_claims(&mut self, matrix_id: &str, me: &ClaimOwner) -> Result<usize, StoreError> {
        let start = me.pid_start.map(|t| t as i64);
        let n = match start {
            Some(t) => self.db.execute(
                "DELETE FROM matrix_claims WHERE matrix_id = ?1 AND host = ?2 AND boot_id = ?3 AND pid = ?4
                    AND pid_start = ?5",
                args![matrix_id, me.host.as_str(), me.boot_id.as_str(), i64::from(me.pid), t],
            ),
            None => self.db.execute(
                "DELETE FROM matrix_claims WHERE matrix_id = ?1 AND host = ?2 AND boot_id = ?3 AND pid = ?4
                    AND pid_start IS NULL",
                args![matrix_id, me.host.as_str(), me.boot_id.as_str(), i64::from(me.pid)],
            ),
        };
        n.map(|n| n as usize).map_err(self.sql())
    }

    /// Removes the claims on `matrix_id` whose owners `dead` calls dead (a farm's tasks that
    /// ended without recording their run); how many.
    pub fn release_dead_claims(
        &mut self,
        matrix_id: &str,
        dead: impl Fn(&ClaimOwner) -> bool,
    ) -> Result<usize, StoreError> {
        let mut n = 0;
        for (place, owner) in self.claims(matrix_id)? {
            if dead(&owner) {
                let cell = axes_to_text(&place.axes);
                n += self
                    .db
                    .execute(
                        "DELETE FROM matrix_claims WHERE matrix_id = ?1 AND matrix_cell = ?2
                            AND matrix_repetition = ?3 AND host = ?4 AND pid = ?5 AND claimed_at = ?6",
                        &[
                            Arg::from(matrix_id),
                            Arg::from(cell),
                            Arg::Int(i64::from(place.repetition)),
                            Arg::from(owner.host.as_str()),
                            Arg::Int(i64::from(owner.pid)),
                            Arg::from(owner.claimed_at.as_str()),
                        ],
                    )
                    .map_err(self.sql())?;
            }
        }
        Ok(n as usize)
    }

    /// The claims held on `matrix_id`, by place.
    pub fn claims(&self, matrix_id: &str) -> Result<Vec<(MatrixPlace, ClaimOwner)>, StoreError> {
        let job = if self.version >= super::schema::HOSTS_FROM {
            "job"
        } else {
            "NULL"
        };
        self.db
            .query_map(
                &format!(
                    "SELECT matrix_cell, matrix_repetition, host, boot_id, pid, pid_start, claimed_at, {job}
                     FROM matrix_claims WHERE matrix_id = ?1 ORDER BY matrix_repetition, matrix_cell"
                ),
                args![matrix_id],
                |r| {
                    Ok((
                        MatrixPlace {
                            matrix_id: matrix_id.to_string(),
                            axes: super::axes_from_text(r.opt_text(0)?),
                            repetition: r.int(1)? as u32,
                        },
                        owner(r, 2)?,
                    ))
                },
            )
            .map_err(self.sql())
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
            job: None,
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
    /// Issue 19.
    fn a_cell_is_claimed_once_and_taken_over_from_the_dead() {
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
