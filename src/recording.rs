//! Recording runs in the results store ([`crate::store`]), as `run`, `load`, `probe`, `suite`
//! and `matrix` do, and reading them back as results.
//!
//! The store is opened and checked writable before anything is measured, so that a store
//! that cannot take the run is a one-line error (exit status 2) rather than a measurement
//! lost at the end. Should writing still fail after the run (a full disk), the result is
//! kept in a file in the current directory instead, and the message says where.
//!
//! Where the store is: `--store PATH` (or a `postgres://` address), else `FSYNCLAB_STORE`,
//! else `~/.local/share/fsynclab/results.sqlite`; `--no-store` or `FSYNCLAB_STORE=off`
//! records nothing.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use crate::error::Usage;
use crate::measure::{OpKind, Sample, TaskName};
use crate::result::{RunResult, StoredAt};
use crate::store::{self, Location, MatrixPlace, RunId, SampleColumns, SampleRecord, Store, StoredRun};
use crate::sys::Errno;

/// The value of `FSYNCLAB_STORE` that turns recording off.
pub(crate) const STORE_OFF: &str = "off";

/// A run's samples go into the store as they are, without a copy.
impl SampleRecord for Sample {
    fn t_ns(&self) -> u64 {
        self.t_ns
    }
    fn op(&self) -> &str {
        self.op.name()
    }
    fn latency_ns(&self) -> u64 {
        self.latency_ns
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn error(&self) -> Option<Cow<'_, str>> {
        self.error.map(Errno::name)
    }
    fn process(&self) -> Option<&str> {
        self.process.map(TaskName::as_str)
    }
}

/// The store the options name, or `None` when recording is off.
pub(crate) fn store_path(flag: Option<&Path>, no_store: bool) -> Result<Option<Location>, Usage> {
    if no_store {
        return Ok(None);
    }
    if flag.is_none() && std::env::var(store::STORE_ENV).is_ok_and(|v| v == STORE_OFF) {
        return Ok(None);
    }
    store::resolve(flag).map(Some).map_err(|e| Usage(e.to_string()))
}

/// A store for a message: its file with the home directory as `~`, or its database's
/// address without the password.
pub(crate) fn shown_store(at: &Location) -> String {
    match at {
        Location::File(path) => shown(path),
        Location::Postgres(url) => url.to_string(),
    }
}

/// `path` for a message, with the home directory as `~`.
pub(crate) fn shown(path: &Path) -> String {
    match std::env::var_os("HOME").map(PathBuf::from) {
        Some(home) if !home.as_os_str().is_empty() && home != Path::new("/") => match path.strip_prefix(&home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        },
        _ => path.display().to_string(),
    }
}

/// Opens the store at `path` for writing, or says in one line why it cannot be.
pub(crate) fn open_for_writing(path: &Location) -> Result<Store, Usage> {
    let refuse = |e: store::StoreError| {
        Usage(format!(
            "{e}; nothing was run. Give --store PATH (or set {}) to record elsewhere, or --no-store",
            store::STORE_ENV
        ))
    };
    let mut store = Store::open(path).map_err(refuse)?;
    store.check_writable().map_err(refuse)?;
    Ok(store)
}

/// Opens an existing store to read from it, read-only; a missing one is bad input, not a
/// new file.
pub(crate) fn open_for_reading(flag: Option<&Path>) -> Result<(Store, Location)> {
    let path = match store_path(flag, false)? {
        Some(p) => p,
        None => {
            return Err(Usage(format!(
                "{}={STORE_OFF} turns the results store off: give --store PATH to read one",
                store::STORE_ENV
            ))
            .into())
        }
    };
    let store = read_store_at(&path)?;
    Ok((store, path))
}

/// Opens the store at `path` to read from it, read-only; a missing file is bad input.
pub(crate) fn read_store_at(path: &Location) -> Result<Store> {
    if path.as_file().is_some_and(|p| !p.is_file()) {
        return Err(Usage(format!(
            "no results store at {}: `fsynclab run`, `suite` and `matrix` record runs there (or give --store PATH)",
            shown_store(path)
        ))
        .into());
    }
    Ok(Store::open_read_only(path).map_err(|e| Usage(e.to_string()))?)
}

/// One stored run, whole; a run the store does not have is bad input (exit status 2).
pub(crate) fn read_run(store: &Store, id: RunId) -> Result<StoredRun> {
    store.run(id).map_err(|e| match e {
        store::StoreError::NoSuchRun { .. } => Usage(e.to_string()).into(),
        e => e.into(),
    })
}

/// Where finished runs are recorded, if anywhere.
pub(crate) struct Recording {
    store: Option<(Store, Location)>,
    /// Inside a `--kernel` guest: the host's directory the results are written to, and
    /// how many were; the host records them in its store.
    guest: Option<(PathBuf, usize)>,
}

impl Recording {
    /// The store the options name, opened and checked writable before anything runs.
    pub(crate) fn open(flag: Option<&Path>, no_store: bool) -> Result<Recording, Usage> {
        if let Some(dir) = std::env::var_os(crate::testbed::vm::GUEST_RESULTS_ENV) {
            return Ok(Recording {
                store: None,
                guest: Some((PathBuf::from(dir), 0)),
            });
        }
        let store = match store_path(flag, no_store)? {
            Some(path) => Some((open_for_writing(&path)?, path)),
            None => None,
        };
        Ok(Recording { store, guest: None })
    }

    /// A recording into a store already open (a matrix's).
    pub(crate) fn into(store: Store, path: Location) -> Recording {
        Recording {
            store: Some((store, path)),
            guest: None,
        }
    }

    pub(crate) fn store(&self) -> Option<&Store> {
        self.store.as_ref().map(|(s, _)| s)
    }

    pub(crate) fn store_mut(&mut self) -> Option<&mut Store> {
        self.store.as_mut().map(|(s, _)| s)
    }

    pub(crate) fn path(&self) -> Option<&Location> {
        self.store.as_ref().map(|(_, p)| p)
    }

    /// Records `result` (at `place` in a matrix) and notes in it where it went; `None` when
    /// recording is off.
    pub(crate) fn record(&mut self, result: &mut RunResult, place: Option<&MatrixPlace>) -> Result<Option<RunId>> {
        if let Some((dir, written)) = &mut self.guest {
            // Whole, samples included: the host records it as it would its own.
            *written += 1;
            let path = dir.join(format!("{written:04}.json"));
            crate::result::write_compact_json_atomically(&*result, &path)?;
            return Ok(None);
        }
        let Some((store, path)) = &mut self.store else {
            return Ok(None);
        };
        let head = value_without_samples(result)?;
        let id = store.record_run(&head, &result.samples, place)?;
        let uid = store.uid(id)?;
        result.stored = Some(StoredAt {
            run: id.0,
            uid,
            store: path.to_string(),
        });
        Ok(Some(id))
    }
}

/// The error of a failed recording, with the result written to a file of the current
/// directory (or the temporary directory) so that it is not lost.
pub(crate) fn keep_elsewhere(result: &RunResult, e: anyhow::Error) -> anyhow::Error {
    let name = format!(
        "fsynclab-unstored-{}-{}.json",
        result.scenario,
        result.started_at.replace([':', '-'], "")
    );
    for dir in [PathBuf::from("."), std::env::temp_dir()] {
        let path = dir.join(&name);
        if crate::result::write_compact_json_atomically(result, &path).is_ok() {
            return e.context(format!(
                "the run could not be recorded; its result is kept in {} (`fsynclab show` reads it)",
                path.display()
            ));
        }
    }
    e.context("the run could not be recorded, nor its result written to a file")
}

/// The result's JSON object without its samples, to be written where the samples are kept
/// apart (column-wise in the store, beside a suite's file).
pub(crate) fn value_without_samples(result: &mut RunResult) -> Result<Value> {
    let samples = std::mem::take(&mut result.samples);
    let value = serde_json::to_value(&*result);
    result.samples = samples;
    let mut value = value?;
    if let Some(obj) = value.as_object_mut() {
        obj.remove("samples");
    }
    Ok(value)
}

/// A stored run's result without its samples; a run this version cannot read is an error
/// that says so.
pub(crate) fn head_of(run: &StoredRun) -> Result<RunResult> {
    run.head()
        .map_err(|e| anyhow::anyhow!("run {}: not a result this fsynclab can read ({e})", run.id))
}

/// A stored run as the result it was, to print it again in any format.
pub(crate) fn result_of(run: StoredRun) -> Result<RunResult> {
    let mut result = head_of(&run)?;
    result.samples = samples_of(&run.samples).map_err(|e| anyhow::anyhow!("run {}: {e}", run.id))?;
    Ok(result)
}

/// Decoded columns as the run's own samples.
pub(crate) fn samples_of(columns: &SampleColumns) -> Result<Vec<Sample>, String> {
    let ops: Vec<OpKind> = columns
        .op_names
        .iter()
        .map(|n| {
            OpKind::from_name(n).ok_or_else(|| format!("unknown operation kind '{n}' (a newer fsynclab wrote it)"))
        })
        .collect::<Result<_, _>>()?;
    let errors: Vec<Errno> = columns
        .error_names
        .iter()
        .map(|n| Errno::from_name(n).ok_or_else(|| format!("unknown error name '{n}'")))
        .collect::<Result<_, _>>()?;
    let tasks: Vec<TaskName> = columns.process_names.iter().map(|n| TaskName::new(n)).collect();
    Ok((0..columns.len())
        .map(|i| Sample {
            t_ns: columns.t_ns[i],
            op: ops[columns.op[i] as usize],
            latency_ns: columns.latency_ns[i],
            bytes: columns.bytes[i],
            error: match columns.error[i] {
                0 => None,
                e => Some(errors[e as usize - 1]),
            },
            process: match columns.process.get(i) {
                None | Some(0) => None,
                Some(&p) => Some(tasks[p as usize - 1]),
            },
            tid: 0,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_round_trip_through_the_codec() {
        let samples = vec![
            Sample {
                t_ns: 5,
                op: OpKind::Write,
                latency_ns: 900,
                bytes: 4096,
                error: None,
                process: None,
                tid: 0,
            },
            Sample {
                t_ns: 7,
                op: OpKind::Fdatasync,
                latency_ns: 5_000_000,
                bytes: 0,
                error: Some(Errno(libc::EIO)),
                process: Some(TaskName::new("postgres")),
                tid: 0,
            },
            Sample {
                t_ns: 9,
                op: OpKind::Fsync,
                latency_ns: 1,
                bytes: 0,
                error: Some(Errno(4095)),
                process: None,
                tid: 0,
            },
        ];
        let columns = store::codec::decode(&store::codec::encode(&samples)).unwrap();
        assert_eq!(samples_of(&columns).unwrap(), samples);
    }

    #[test]
    fn home_is_shown_as_a_tilde() {
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty() && h != "/") {
            let p = PathBuf::from(home).join(".local/share/fsynclab/results.sqlite");
            assert_eq!(shown(&p), "~/.local/share/fsynclab/results.sqlite");
        }
        assert_eq!(shown(Path::new("/srv/r.sqlite")), "/srv/r.sqlite");
    }
}
