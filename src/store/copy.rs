//! Moving runs from one store to another (`fsynclab store copy FROM TO`): a laptop's SQLite
//! runs into the farm's PostgreSQL store, or the farm's back into a file.
//!
//! A run keeps what makes it that run — its unique id, when it was recorded, its result, its
//! host, its place in a matrix — and its samples go as their stored blocks, byte for byte;
//! only its number is the target's own (the target's database gives it). A run the target
//! has already (by unique id) is left alone, so copying twice copies once. Each run goes in
//! one transaction: an interrupted copy leaves whole runs, and copying again adds the rest.
//!
//! Matrices go first, since their runs name them: a matrix the target has already (same
//! scenario, creation time and plan, under any id) is that matrix; one whose id the target
//! uses for another matrix gets the target's next free id, and its runs follow it there.

use std::collections::HashMap;

use super::backend::{args, Begin, DbError};
use super::write::{insert_block, insert_matrix, insert_run, Block, RunRow};
use super::{MatrixPlace, RunFilter, Store, StoreError};

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Copied {
    /// Runs copied, and runs the target had already.
    pub runs: usize,
    pub already: usize,
    /// Matrices made in the target.
    pub matrices: usize,
    /// Matrices that got another id in the target: (source id, target id).
    pub renamed: Vec<(String, String)>,
}

/// Why one run could not be copied: reading the source, or writing the target.
enum Failed {
    Source(StoreError),
    Target(DbError),
}

impl From<DbError> for Failed {
    fn from(e: DbError) -> Failed {
        Failed::Target(e)
    }
}

impl Store {
    /// Copies every run and matrix of `self` into `to`, as [the module](self) says;
    /// `progress` hears of each run (copied or not) as (done, total).
    pub fn copy_into(&self, to: &mut Store, mut progress: impl FnMut(usize, usize)) -> Result<Copied, StoreError> {
        let mut done = Copied::default();
        let ids = self.copy_matrices(to, &mut done)?;
        let runs = self.runs(&RunFilter::default())?;
        let mut by_id = runs;
        by_id.sort_by_key(|r| r.id);
        let total = by_id.len();
        for (n, summary) in by_id.iter().enumerate() {
            if to.id_of_uid(&summary.uid)?.is_some() {
                done.already += 1;
                progress(n + 1, total);
                continue;
            }
            let run = self.run_head(summary.id)?;
            let row = RunRow::of(&serde_json::Value::Object(run.result))?;
            let place = run.matrix.map(|m| MatrixPlace {
                matrix_id: ids.get(&m.matrix_id).cloned().unwrap_or(m.matrix_id),
                ..m
            });
            let target = to.path.clone();
            // Immediate, and asked again inside: another copy of the same run into the same
            // store at once (two processes copying one laptop's store) finds it there.
            let copied = to
                .db
                .transaction(Begin::Immediate, |db| {
                    if db.exists("SELECT 1 FROM runs WHERE uid = ?1", args![run.uid.as_str()])? {
                        return Ok(false);
                    }
                    let id = insert_run(
                        db,
                        &row,
                        &run.uid,
                        &run.recorded_at,
                        summary.sample_count as i64,
                        place.as_ref(),
                    )?;
                    let mut written = Ok(());
                    self.with_sample_blocks(summary.id, |number, samples, format, data| {
                        let block = Block {
                            number,
                            samples,
                            format,
                            data,
                        };
                        written = insert_block(db, id, &block);
                        Ok(())
                    })
                    .map_err(Failed::Source)?;
                    written.map_err(Failed::Target).map(|()| true)
                })
                .map_err(|e| match e {
                    Failed::Source(e) => e,
                    Failed::Target(source) => StoreError::Database { path: target, source },
                })?;
            if copied {
                done.runs += 1;
            } else {
                done.already += 1;
            }
            progress(n + 1, total);
        }
        Ok(done)
    }

    /// Makes `self`'s matrices in `to`; the ids they have there, by their ids here.
    fn copy_matrices(&self, to: &mut Store, done: &mut Copied) -> Result<HashMap<String, String>, StoreError> {
        let theirs = to.matrices()?;
        let mut ids = HashMap::new();
        for m in self.matrices()? {
            let same = theirs
                .iter()
                .find(|t| (&t.scenario, &t.created_at, &t.plan) == (&m.scenario, &m.created_at, &m.plan));
            if let Some(t) = same {
                ids.insert(m.id.clone(), t.id.clone());
                continue;
            }
            let id = if to.matrix(&m.id)?.is_some() {
                let id = to.create_numbered_matrix(&m.scenario, &m.created_at, &m.plan)?;
                done.renamed.push((m.id.clone(), id.clone()));
                id
            } else {
                insert_matrix(&to.db, &m).map_err(to.sql())?;
                m.id.clone()
            };
            done.matrices += 1;
            ids.insert(m.id, id);
        }
        Ok(ids)
    }
}
