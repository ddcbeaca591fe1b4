//! Reading the store: runs listed by a filter, one run whole with its samples, a matrix's
//! plan.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::backend::{args, Arg, DbError, Row};
use super::{
    axes_from_text, codec, head_of, schema, MatrixPlace, MatrixRecord, RunFilter, RunId, RunSummary, SampleColumns,
    Store, StoreError, StoredRun,
};

/// LIKE pattern matching `text` anywhere, with LIKE's wildcards in it escaped by `\`.
fn like_anywhere(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

/// Parses a JSON column; a damaged one reads as null rather than failing a listing.
fn json_col(text: Option<String>) -> Value {
    text.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}

/// The most ids and ranges one query names: each takes one or two SQL variables, and SQLite
/// allows 32766 (issue 19: `compare 1-32767 1-3` failed with SQLite's own words), PostgreSQL
/// 65535.
const IDS_PER_QUERY: usize = 500;

/// The columns a run's result is kept in, in the order [`result_object`] reads them.
const RESULT_COLUMNS: &str = "scenario, started_at, duration_s, interrupted, result_schema_version, params, environment, ops, background, tables, findings, extra";

/// The result's JSON object without its samples, from the [`RESULT_COLUMNS`] of a row that
/// starts at column `at`.
fn result_object(r: &dyn Row, at: usize) -> Result<Map<String, Value>, DbError> {
    let mut result = Map::new();
    result.insert("schema_version".into(), r.int(at + 4)?.into());
    result.insert("scenario".into(), r.text(at)?.into());
    result.insert("started_at".into(), r.text(at + 1)?.into());
    result.insert("duration_s".into(), r.real(at + 2)?.into());
    result.insert("interrupted".into(), (r.int(at + 3)? != 0).into());
    for (key, column) in [
        ("params", 5),
        ("environment", 6),
        ("ops", 7),
        ("background", 8),
        ("tables", 9),
        ("findings", 10),
    ] {
        result.insert(key.into(), json_col(r.opt_text(at + column)?));
    }
    if let Value::Object(extra) = json_col(r.opt_text(at + 11)?) {
        result.extend(extra);
    }
    Ok(result)
}

impl Store {
    /// The host column, where the store has one (an older store read where it cannot be
    /// migrated has none).
    fn host_column(&self) -> &'static str {
        if self.version >= schema::HOSTS_FROM {
            "host"
        } else {
            "NULL"
        }
    }

    /// The runs `filter` selects, oldest first.
    pub fn runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        if filter.ids.len() + filter.ranges.len() <= IDS_PER_QUERY {
            return self.runs_in_one_query(filter);
        }
        // Many ids: a query per group, the groups' runs merged in order, the limit last.
        let mut out: Vec<RunSummary> = Vec::new();
        let each = RunFilter {
            ids: Vec::new(),
            ranges: Vec::new(),
            limit: None,
            ..filter.clone()
        };
        for ids in filter.ids.chunks(IDS_PER_QUERY) {
            out.extend(self.runs_in_one_query(&RunFilter {
                ids: ids.to_vec(),
                ..each.clone()
            })?);
        }
        for ranges in filter.ranges.chunks(IDS_PER_QUERY) {
            out.extend(self.runs_in_one_query(&RunFilter {
                ranges: ranges.to_vec(),
                ..each.clone()
            })?);
        }
        out.sort_by(|a, b| (&a.started_at, a.id).cmp(&(&b.started_at, b.id)));
        out.dedup_by_key(|r| r.id);
        if let Some(n) = filter.limit {
            out.drain(..out.len().saturating_sub(n));
        }
        Ok(out)
    }

    fn runs_in_one_query(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let mut conditions: Vec<String> = Vec::new();
        let mut args: Vec<Arg<'_>> = Vec::new();
        let arg = |args: &mut Vec<Arg<'_>>, v: Arg<'static>| {
            args.push(v);
            format!("?{}", args.len())
        };
        let mut any_of: Vec<String> = Vec::new();
        if !filter.ids.is_empty() {
            let list: Vec<String> = filter.ids.iter().map(|id| arg(&mut args, Arg::Int(id.0))).collect();
            any_of.push(format!("id IN ({})", list.join(", ")));
        }
        for (lo, hi) in &filter.ranges {
            let (lo, hi) = (arg(&mut args, Arg::Int(lo.0)), arg(&mut args, Arg::Int(hi.0)));
            any_of.push(format!("id BETWEEN {lo} AND {hi}"));
        }
        if !any_of.is_empty() {
            conditions.push(format!("({})", any_of.join(" OR ")));
        }
        if let Some(s) = &filter.scenario {
            let p = arg(&mut args, s.clone().into());
            conditions.push(format!("scenario = {p}"));
        }
        if let Some(s) = &filter.since {
            let p = arg(&mut args, s.clone().into());
            conditions.push(format!("started_at >= {p}"));
        }
        if let Some(m) = &filter.matrix_id {
            let p = arg(&mut args, m.clone().into());
            conditions.push(format!("matrix_id = {p}"));
        }
        if let Some(h) = &filter.host {
            let p = arg(&mut args, h.clone().into());
            conditions.push(format!("{} = {p}", self.host_column()));
        }
        for (k, v) in &filter.params {
            // Parameters are stored as compact JSON: a pair appears as "k":"v".
            let pair = format!("{}:{}", Value::from(k.as_str()), Value::from(v.as_str()));
            let p = arg(&mut args, like_anywhere(&pair).into());
            conditions.push(format!("params LIKE {p} ESCAPE '\\'"));
        }
        for text in &filter.contains {
            let p = arg(&mut args, like_anywhere(text).into());
            conditions.push(format!(
                "(params LIKE {p} ESCAPE '\\' OR environment LIKE {p} ESCAPE '\\' OR matrix_id LIKE {p} ESCAPE '\\')"
            ));
        }
        let mut sql = format!(
            "SELECT id, uid, recorded_at, sample_count, matrix_id, matrix_cell, matrix_repetition, {RESULT_COLUMNS}, {} AS host
             FROM runs",
            self.host_column()
        );
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        // The newest `limit`, shown oldest first.
        match filter.limit {
            Some(n) => {
                sql = format!(
                "SELECT * FROM ({sql} ORDER BY started_at DESC, id DESC LIMIT {n}) AS newest ORDER BY started_at, id"
            )
            }
            None => sql.push_str(" ORDER BY started_at, id"),
        }
        self.db
            .query_map(&sql, &args, |r| {
                let params: BTreeMap<String, String> = serde_json::from_str(&r.text(12)?).unwrap_or_default();
                let matrix_id = r.opt_text(4)?;
                Ok(RunSummary {
                    id: RunId(r.int(0)?),
                    uid: r.text(1)?,
                    scenario: r.text(7)?,
                    started_at: r.text(8)?,
                    recorded_at: r.text(2)?,
                    duration_s: r.real(9)?,
                    interrupted: r.int(10)? != 0,
                    sample_count: r.int(3)? as u64,
                    params,
                    matrix: match matrix_id {
                        Some(matrix_id) => Some(MatrixPlace {
                            matrix_id,
                            axes: axes_from_text(r.opt_text(5)?),
                            repetition: r.opt_int(6)?.unwrap_or(0) as u32,
                        }),
                        None => None,
                    },
                    host: r.opt_text(19)?,
                    head: head_of(result_object(r, 7)?),
                })
            })
            .map_err(self.sql())
    }

    /// One run, whole: its result JSON and its samples.
    pub fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let mut run = self.run_head(id)?;
        run.samples = self.samples(id)?;
        Ok(run)
    }

    /// One run without its samples.
    pub(crate) fn run_head(&self, id: RunId) -> Result<StoredRun, StoreError> {
        type Row = (
            String,
            String,
            Option<String>,
            Option<String>,
            Option<i64>,
            Option<String>,
            Map<String, Value>,
        );
        let row: Option<Row> = self
            .db
            .query_opt(
                &format!(
                    "SELECT uid, recorded_at, matrix_id, matrix_cell, matrix_repetition, {} AS host, {RESULT_COLUMNS}
                     FROM runs WHERE id = ?1",
                    self.host_column()
                ),
                args![id.0],
                |r| {
                    Ok((
                        r.text(0)?,
                        r.text(1)?,
                        r.opt_text(2)?,
                        r.opt_text(3)?,
                        r.opt_int(4)?,
                        r.opt_text(5)?,
                        result_object(r, 6)?,
                    ))
                },
            )
            .map_err(self.sql())?;
        let (uid, recorded_at, matrix_id, cell, repetition, host, result) =
            row.ok_or_else(|| StoreError::NoSuchRun {
                path: self.path.clone(),
                id,
            })?;
        Ok(StoredRun {
            id,
            uid,
            recorded_at,
            matrix: matrix_id.map(|matrix_id| MatrixPlace {
                matrix_id,
                axes: axes_from_text(cell),
                repetition: repetition.unwrap_or(0) as u32,
            }),
            host,
            result,
            samples: SampleColumns::default(),
        })
    }

    /// The unique id of run `id` (which tells it from a run of the same number in another
    /// store).
    pub fn uid(&self, id: RunId) -> Result<String, StoreError> {
        self.db
            .query_opt("SELECT uid FROM runs WHERE id = ?1", args![id.0], |r| r.text(0))
            .map_err(self.sql())?
            .ok_or_else(|| StoreError::NoSuchRun {
                path: self.path.clone(),
                id,
            })
    }

    /// The run of unique id `uid`, if the store has it.
    pub fn id_of_uid(&self, uid: &str) -> Result<Option<RunId>, StoreError> {
        self.db
            .query_opt("SELECT id FROM runs WHERE uid = ?1", args![uid], |r| {
                r.int(0).map(RunId)
            })
            .map_err(self.sql())
    }

    /// The samples of one run, decoded block by block as they are read.
    pub fn samples(&self, id: RunId) -> Result<SampleColumns, StoreError> {
        let mut out = SampleColumns::default();
        let mut damaged = None;
        self.db
            .query_map(
                "SELECT data FROM sample_blocks WHERE run_id = ?1 ORDER BY block",
                args![id.0],
                |r| {
                    r.with_blob(0, &mut |data| match codec::decode(data) {
                        Ok(block) if out.is_empty() => out = block,
                        Ok(block) => out.append(block),
                        Err(e) => damaged = damaged.take().or(Some(e)),
                    })
                },
            )
            .map_err(self.sql())?;
        match damaged {
            Some(source) => Err(StoreError::Samples {
                path: self.path.clone(),
                id,
                source,
            }),
            None => Ok(out),
        }
    }

    /// The sample blocks of one run as stored (number, sample count, format, bytes), each
    /// given to `f` in order: what `store copy` moves without decoding.
    pub(crate) fn with_sample_blocks(
        &self,
        id: RunId,
        mut f: impl FnMut(i64, i64, i64, &[u8]) -> Result<(), DbError>,
    ) -> Result<(), StoreError> {
        self.db
            .query_map(
                "SELECT block, sample_count, format, data FROM sample_blocks WHERE run_id = ?1 ORDER BY block",
                args![id.0],
                |r| {
                    let (block, count, format) = (r.int(0)?, r.int(1)?, r.int(2)?);
                    let mut out = Ok(());
                    r.with_blob(3, &mut |data| out = f(block, count, format, data))?;
                    out
                },
            )
            .map(|_| ())
            .map_err(self.sql())
    }

    /// Every matrix of the store, oldest first.
    pub fn matrices(&self) -> Result<Vec<MatrixRecord>, StoreError> {
        self.db
            .query_map(
                "SELECT id, scenario, created_at, plan FROM matrices ORDER BY created_at, id",
                &[],
                matrix_record,
            )
            .map_err(self.sql())
    }

    pub fn matrix(&self, id: &str) -> Result<Option<MatrixRecord>, StoreError> {
        self.db
            .query_opt(
                "SELECT id, scenario, created_at, plan FROM matrices WHERE id = ?1",
                args![id],
                matrix_record,
            )
            .map_err(self.sql())
    }

    /// The matrices whose id starts with `prefix` (a reproduction's `reproduce3-`), by id.
    pub fn matrices_with_prefix(&self, prefix: &str) -> Result<Vec<MatrixRecord>, StoreError> {
        self.db
            .query_map(
                "SELECT id, scenario, created_at, plan FROM matrices WHERE substr(id, 1, ?2) = ?1 ORDER BY id",
                args![prefix, chars(prefix)],
                matrix_record,
            )
            .map_err(self.sql())
    }
}

/// The length of `text` in characters, as `substr` counts on either database.
pub(super) fn chars(text: &str) -> i64 {
    i64::try_from(text.chars().count()).unwrap_or(i64::MAX)
}

fn matrix_record(r: &dyn Row) -> Result<MatrixRecord, DbError> {
    Ok(MatrixRecord {
        id: r.text(0)?,
        scenario: r.text(1)?,
        created_at: r.text(2)?,
        plan: json_col(r.opt_text(3)?),
    })
}

#[cfg(test)]
mod tests;
