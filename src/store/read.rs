//! Reading the store: runs listed by a filter, one run whole with its samples, a matrix's
//! plan.

use std::collections::BTreeMap;

use rusqlite::OptionalExtension;
use serde_json::{Map, Value};

use super::{
    axes_from_text, codec, head_of, MatrixPlace, MatrixRecord, RunFilter, RunId, RunSummary, SampleColumns, Store,
    StoreError, StoredRun,
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
/// allows 32766 (issue 19: `compare 1-32767 1-3` failed with SQLite's own words).
const IDS_PER_QUERY: usize = 500;

/// The columns a run's result is kept in, in the order [`result_object`] reads them.
const RESULT_COLUMNS: &str = "scenario, started_at, duration_s, interrupted, result_schema_version, params, environment, ops, background, tables, findings, extra";

/// The result's JSON object without its samples, from the [`RESULT_COLUMNS`] of a row that
/// starts at column `at`.
fn result_object(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Map<String, Value>> {
    let mut result = Map::new();
    result.insert("schema_version".into(), r.get::<_, i64>(at + 4)?.into());
    result.insert("scenario".into(), r.get::<_, String>(at)?.into());
    result.insert("started_at".into(), r.get::<_, String>(at + 1)?.into());
    result.insert("duration_s".into(), r.get::<_, f64>(at + 2)?.into());
    result.insert("interrupted".into(), (r.get::<_, i64>(at + 3)? != 0).into());
    for (key, column) in [
        ("params", 5),
        ("environment", 6),
        ("ops", 7),
        ("background", 8),
        ("tables", 9),
        ("findings", 10),
    ] {
        result.insert(key.into(), json_col(r.get(at + column)?));
    }
    if let Value::Object(extra) = json_col(r.get(at + 11)?) {
        result.extend(extra);
    }
    Ok(result)
}

impl Store {
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
        let mut args: Vec<String> = Vec::new();
        let arg = |args: &mut Vec<String>, v: String| {
            args.push(v);
            format!("?{}", args.len())
        };
        let mut any_of: Vec<String> = Vec::new();
        if !filter.ids.is_empty() {
            let list: Vec<String> = filter.ids.iter().map(|id| arg(&mut args, id.0.to_string())).collect();
            any_of.push(format!("id IN ({})", list.join(", ")));
        }
        for (lo, hi) in &filter.ranges {
            let (lo, hi) = (arg(&mut args, lo.0.to_string()), arg(&mut args, hi.0.to_string()));
            any_of.push(format!("id BETWEEN {lo} AND {hi}"));
        }
        if !any_of.is_empty() {
            conditions.push(format!("({})", any_of.join(" OR ")));
        }
        if let Some(s) = &filter.scenario {
            let p = arg(&mut args, s.clone());
            conditions.push(format!("scenario = {p}"));
        }
        if let Some(s) = &filter.since {
            let p = arg(&mut args, s.clone());
            conditions.push(format!("started_at >= {p}"));
        }
        if let Some(m) = &filter.matrix_id {
            let p = arg(&mut args, m.clone());
            conditions.push(format!("matrix_id = {p}"));
        }
        for (k, v) in &filter.params {
            // Parameters are stored as compact JSON: a pair appears as "k":"v".
            let pair = format!("{}:{}", Value::from(k.as_str()), Value::from(v.as_str()));
            let p = arg(&mut args, like_anywhere(&pair));
            conditions.push(format!("params LIKE {p} ESCAPE '\\'"));
        }
        for text in &filter.contains {
            let p = arg(&mut args, like_anywhere(text));
            conditions.push(format!(
                "(params LIKE {p} ESCAPE '\\' OR environment LIKE {p} ESCAPE '\\' OR matrix_id LIKE {p} ESCAPE '\\')"
            ));
        }
        let mut sql = format!(
            "SELECT id, uid, recorded_at, sample_count, matrix_id, matrix_cell, matrix_repetition, {RESULT_COLUMNS}
             FROM runs"
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
        let mut stmt = self.conn.prepare(&sql).map_err(self.sql())?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                let params: BTreeMap<String, String> =
                    serde_json::from_str(&r.get::<_, String>(12)?).unwrap_or_default();
                let matrix_id: Option<String> = r.get(4)?;
                Ok(RunSummary {
                    id: RunId(r.get(0)?),
                    uid: r.get(1)?,
                    scenario: r.get(7)?,
                    started_at: r.get(8)?,
                    recorded_at: r.get(2)?,
                    duration_s: r.get(9)?,
                    interrupted: r.get::<_, i64>(10)? != 0,
                    sample_count: r.get::<_, i64>(3)? as u64,
                    params,
                    matrix: match matrix_id {
                        Some(matrix_id) => Some(MatrixPlace {
                            matrix_id,
                            axes: axes_from_text(r.get(5)?),
                            repetition: r.get::<_, Option<i64>>(6)?.unwrap_or(0) as u32,
                        }),
                        None => None,
                    },
                    head: head_of(result_object(r, 7)?),
                })
            })
            .map_err(self.sql())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())
    }

    /// One run, whole: its result JSON and its samples.
    pub fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        type Row = (
            String,
            String,
            Option<String>,
            Option<String>,
            Option<i64>,
            Map<String, Value>,
        );
        let row: Option<Row> = self
            .conn
            .query_row(
                &format!(
                    "SELECT uid, recorded_at, matrix_id, matrix_cell, matrix_repetition, {RESULT_COLUMNS}
                     FROM runs WHERE id = ?1"
                ),
                [id.0],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        result_object(r, 5)?,
                    ))
                },
            )
            .optional()
            .map_err(self.sql())?;
        let (uid, recorded_at, matrix_id, cell, repetition, result) = row.ok_or_else(|| StoreError::NoSuchRun {
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
            result,
            samples: self.samples(id)?,
        })
    }

    /// The unique id of run `id` (which tells it from a run of the same number in another
    /// store).
    pub fn uid(&self, id: RunId) -> Result<String, StoreError> {
        self.conn
            .query_row("SELECT uid FROM runs WHERE id = ?1", [id.0], |r| r.get(0))
            .optional()
            .map_err(self.sql())?
            .ok_or_else(|| StoreError::NoSuchRun {
                path: self.path.clone(),
                id,
            })
    }

    /// The samples of one run, decoded.
    pub fn samples(&self, id: RunId) -> Result<SampleColumns, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT data FROM sample_blocks WHERE run_id = ?1 ORDER BY block")
            .map_err(self.sql())?;
        let mut rows = stmt.query([id.0]).map_err(self.sql())?;
        let mut out = SampleColumns::default();
        while let Some(row) = rows.next().map_err(self.sql())? {
            let data = row
                .get_ref(0)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(self.sql())?;
            let block = codec::decode(data).map_err(|source| StoreError::Samples {
                path: self.path.clone(),
                id,
                source,
            })?;
            if out.is_empty() {
                out = block;
            } else {
                out.append(block);
            }
        }
        Ok(out)
    }

    pub fn matrix(&self, id: &str) -> Result<Option<MatrixRecord>, StoreError> {
        self.conn
            .query_row(
                "SELECT id, scenario, created_at, plan FROM matrices WHERE id = ?1",
                [id],
                |r| {
                    Ok(MatrixRecord {
                        id: r.get(0)?,
                        scenario: r.get(1)?,
                        created_at: r.get(2)?,
                        plan: json_col(r.get(3)?),
                    })
                },
            )
            .optional()
            .map_err(self.sql())
    }

    /// The matrices whose id starts with `prefix` (a reproduction's `reproduce3-`), by id.
    pub fn matrices_with_prefix(&self, prefix: &str) -> Result<Vec<MatrixRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, scenario, created_at, plan FROM matrices WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id",
            )
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([prefix], |r| {
                Ok(MatrixRecord {
                    id: r.get(0)?,
                    scenario: r.get(1)?,
                    created_at: r.get(2)?,
                    plan: json_col(r.get(3)?),
                })
            })
            .map_err(self.sql())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.sql())?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 19, item 10: ranges are never expanded, and any number of ids and ranges is
    /// read in groups under SQLite's limit of variables, merged in order, limit last.
    #[test]
    fn issue19_ranges_and_long_lists_of_ids_are_read_in_groups() {
        let mut store = Store::open_in_memory().unwrap();
        for i in 0..1200 {
            let r = serde_json::json!({"scenario": "probe", "started_at": format!("2026-01-01T00:{:02}:{:02}Z", i / 60 % 60, i % 60), "duration_s": 1.0});
            store
                .record_run(&r, &[] as &[(u64, &str, u64, u64, Option<&str>)], None)
                .unwrap();
        }
        let ids = |f: &RunFilter| store.runs(f).unwrap().iter().map(|r| r.id.0).collect::<Vec<_>>();
        let whole = RunFilter {
            ranges: vec![(RunId(1), RunId(i64::MAX))],
            ..Default::default()
        };
        assert_eq!(ids(&whole), (1..=1200).collect::<Vec<_>>());
        // 1,000 single ids and 700 ranges, overlapping: more than one query each.
        let many = RunFilter {
            ids: (1..=1000).rev().map(RunId).collect(),
            ranges: (0..700).map(|i| (RunId(500 + i), RunId(501 + i))).collect(),
            limit: Some(3),
            ..Default::default()
        };
        assert_eq!(ids(&many), [1198, 1199, 1200]);
    }

    /// Issue 20: a reproduction's matrices share its id as a prefix; the next id is past
    /// every one of them, and `--grep` finds their runs by the matrix id.
    #[test]
    fn issue20_prefixed_ids_count_past_the_groups_and_grep_finds_their_runs() {
        let mut store = Store::open_in_memory().unwrap();
        assert_eq!(store.next_prefixed_id("reproduce").unwrap(), "reproduce1");
        for id in ["reproduce1-000", "reproduce2-003-bdi", "m1", "reproduce10x"] {
            store
                .create_matrix(&MatrixRecord {
                    id: id.into(),
                    scenario: "probe".into(),
                    created_at: "2026-01-01T00:00:00Z".into(),
                    plan: serde_json::json!({}),
                })
                .unwrap();
        }
        assert_eq!(store.next_prefixed_id("reproduce").unwrap(), "reproduce11");
        let ids: Vec<String> = store
            .matrices_with_prefix("reproduce1-")
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(ids, ["reproduce1-000"]);
        let r = serde_json::json!({"scenario": "probe", "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.0});
        let none: &[(u64, &str, u64, u64, Option<&str>)] = &[];
        store.record_run(&r, none, None).unwrap();
        let place = MatrixPlace {
            matrix_id: "reproduce2-003-bdi".into(),
            axes: vec![("scratch".into(), "ext2".into())],
            repetition: 0,
        };
        let id = store.record_run(&r, none, Some(&place)).unwrap();
        let found = store
            .runs(&RunFilter {
                contains: vec!["reproduce2".into()],
                ..Default::default()
            })
            .unwrap();
        assert_eq!(found.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_anywhere("50%_a\\b"), "%50\\%\\_a\\\\b%");
    }
}
