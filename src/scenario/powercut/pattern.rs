//! The application patterns a power cut is tried on, and the ledger of what each
//! acknowledged. A step writes one record the pattern's way and makes it durable with the
//! chosen sync method (and, where the pattern names files, a directory fsync if asked); only
//! once every call of the step has returned without error is the record acknowledged, with
//! the time, in the [`Ledger`]: what an application would have told its client. The ledger
//! lives in memory (and then in the result), never on the disk whose power is cut.
//!
//! - `append`: records appended to one file (a log).
//! - `overwrite`: versioned records written in place over a file of `slots` slots (a page
//!   store); each slot's latest acknowledged version must survive.
//! - `rename`: each version written to `current.tmp` (synced or not), renamed over `current`
//!   (the directory synced or not): the replace-via-rename idiom of seed 000's thread.
//! - `create`: each record a new file `f-SEQ` (the directory synced or not).

use std::fs::File;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::record::Record;
use crate::measure::{OpKind, Recorder, RunClock};
use crate::params::Choice;
use crate::stop::Stop;
use crate::sync::SyncMethod;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Pattern {
    Append,
    Overwrite,
    Rename,
    Create,
}

impl Choice for Pattern {
    const ALL: &'static [Pattern] = &[Pattern::Append, Pattern::Overwrite, Pattern::Rename, Pattern::Create];
    const NAMES: &'static [&'static str] = &["append", "overwrite", "rename", "create"];
}

/// The log of `append`, the slots of `overwrite`, the file `rename` replaces.
pub(crate) const LOG: &str = "log";
pub(crate) const SLOTS: &str = "slots";
pub(crate) const CURRENT: &str = "current";
const CURRENT_TMP: &str = "current.tmp";

/// The file `create` makes for record `seq`.
pub(crate) fn created(seq: u64) -> String {
    format!("f-{seq:08}")
}

/// How a workload writes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Workload {
    pub(crate) pattern: Pattern,
    pub(crate) sync: SyncMethod,
    /// fsync the directory after a rename or a create.
    pub(crate) dir_sync: bool,
    pub(crate) record_size: usize,
    /// Slots of `overwrite`.
    pub(crate) slots: u32,
}

impl Workload {
    /// The record of step `seq` (from 1): `overwrite` goes round its slots.
    pub(crate) fn record(&self, seq: u64) -> Record {
        let slot = match self.pattern {
            Pattern::Overwrite => ((seq - 1) % u64::from(self.slots.max(1))) as u32,
            _ => 0,
        };
        Record { seq, slot }
    }
}

/// One acknowledged record.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ack {
    pub(crate) seq: u64,
    pub(crate) slot: u32,
    /// When the step's last call returned, ns since the run's start.
    pub(crate) at_ns: u64,
}

/// What the application told its client, and what it tried.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ledger {
    pub(crate) acks: Vec<Ack>,
    /// Records whose step was started: acknowledged or not (the one under way at the cut,
    /// and every record of a pattern without any sync).
    pub(crate) issued: u64,
}

impl Ledger {
    /// The latest acknowledged version of `slot`, if any.
    pub(crate) fn latest_ack(&self, slot: u32) -> Option<&Ack> {
        self.acks.iter().rev().find(|a| a.slot == slot)
    }
}

/// Why the workload stopped.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ended {
    /// The stop was set (the cut's moment passed, or a signal).
    Stopped,
    /// A call failed: after a cut, every call does (EIO).
    Failed { op: OpKind, error: String },
}

/// A workload under way: its files, its ledger, its calls.
pub(crate) struct Run<'a> {
    w: Workload,
    dir: &'a Path,
    clock: RunClock,
    pub(crate) recorder: Recorder,
    pub(crate) ledger: Ledger,
    /// The open file of `append` and `overwrite`.
    file: Option<File>,
    /// The directory, open for its fsync.
    dir_file: Option<File>,
    /// Bytes the pattern may write before it waits for the stop.
    limit: u64,
    written: u64,
}

impl<'a> Run<'a> {
    /// Opens what the pattern writes to in `dir`.
    pub(crate) fn start(w: Workload, dir: &'a Path, clock: RunClock) -> anyhow::Result<Run<'a>> {
        let file = match w.pattern {
            Pattern::Append => Some(w.sync.open_in(&dir.join(LOG), dir, "sync")?),
            Pattern::Overwrite => Some(w.sync.open_in(&dir.join(SLOTS), dir, "sync")?),
            Pattern::Rename | Pattern::Create => None,
        };
        let dir_file = File::open(dir)?;
        Ok(Run {
            w,
            dir,
            clock,
            recorder: Recorder::new(),
            ledger: Ledger::default(),
            file,
            dir_file: Some(dir_file),
            limit: u64::MAX,
            written: 0,
        })
    }

    /// Writes at most `bytes`, then waits for the stop: a pattern without a sync call
    /// writes at memory speed and would fill the filesystem before the cut.
    pub(crate) fn limited_to(mut self, bytes: u64) -> Run<'a> {
        self.limit = bytes;
        self
    }

    /// The calls and the ledger; the files are closed.
    pub(crate) fn finish(self) -> (Recorder, Ledger) {
        (self.recorder, self.ledger)
    }

    /// Makes steps until `stop` is set or a call fails.
    pub(crate) fn until(&mut self, stop: &Stop) -> Ended {
        let mut seq = self.ledger.issued;
        while !stop.is_set() {
            if self.written.saturating_add(self.w.record_size as u64) > self.limit {
                stop.sleep(std::time::Duration::from_millis(10));
                continue;
            }
            self.written += self.w.record_size as u64;
            seq += 1;
            self.ledger.issued = seq;
            let record = self.w.record(seq);
            if let Err((op, e)) = self.step(record) {
                return Ended::Failed {
                    op,
                    error: crate::sys::Errno::of(&e).name().into_owned(),
                };
            }
            self.ledger.acks.push(Ack {
                seq,
                slot: record.slot,
                at_ns: self.clock.now_ns(),
            });
        }
        Ended::Stopped
    }

    /// Times `call` as `op`, recording it.
    fn timed(
        &mut self,
        op: OpKind,
        bytes: u64,
        call: impl FnOnce() -> io::Result<()>,
    ) -> Result<(), (OpKind, io::Error)> {
        let (outcome, t_ns, latency_ns) = self.clock.time(call);
        self.recorder.record(op, t_ns, latency_ns, bytes, &outcome);
        outcome.map_err(|e| (op, e))
    }

    /// One step: write `record` the pattern's way and make it durable.
    fn step(&mut self, record: Record) -> Result<(), (OpKind, io::Error)> {
        let size = self.w.record_size;
        let bytes = record.encode(size);
        match self.w.pattern {
            Pattern::Append | Pattern::Overwrite => {
                let index = match self.w.pattern {
                    Pattern::Append => record.seq - 1,
                    _ => u64::from(record.slot),
                };
                let offset = index * size as u64;
                let file = self
                    .file
                    .take()
                    .ok_or_else(|| (OpKind::Write, io::Error::other("no file")))?;
                let r = self.write_and_sync(&file, &bytes, offset);
                self.file = Some(file);
                r
            }
            Pattern::Rename => {
                let tmp = self.dir.join(CURRENT_TMP);
                let file = self.create(&tmp)?;
                self.write_and_sync(&file, &bytes, 0)?;
                drop(file);
                let to = self.dir.join(CURRENT);
                self.timed(OpKind::Rename, 0, || std::fs::rename(&tmp, &to))?;
                self.dir_sync()
            }
            Pattern::Create => {
                let file = self.create(&self.dir.join(created(record.seq)))?;
                self.write_and_sync(&file, &bytes, 0)?;
                drop(file);
                self.dir_sync()
            }
        }
    }

    /// Creates (or empties) `path` for a new record, opened with the method's flags.
    fn create(&mut self, path: &Path) -> Result<File, (OpKind, io::Error)> {
        let sync = self.w.sync;
        let (opened, t_ns, latency_ns) = self.clock.time(|| -> io::Result<File> {
            let file = sync.open(path)?;
            file.set_len(0)?;
            Ok(file)
        });
        let outcome = match &opened {
            Ok(_) => Ok(()),
            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
        };
        self.recorder.record(OpKind::Create, t_ns, latency_ns, 0, &outcome);
        opened.map_err(|e| (OpKind::Create, e))
    }

    /// The write of a record and the method's call after it, if it has one.
    fn write_and_sync(&mut self, file: &File, bytes: &[u8], offset: u64) -> Result<(), (OpKind, io::Error)> {
        let sync = self.w.sync;
        let len = bytes.len() as u64;
        self.timed(sync.write_op(), len, || sync.write(file, bytes, offset))?;
        if let Some(op) = sync.sync_op() {
            let (outcome, t_ns, latency_ns) = self.clock.time(|| sync.sync(file, offset, len).unwrap_or(Ok(())));
            self.recorder.record(op, t_ns, latency_ns, 0, &outcome);
            outcome.map_err(|e| (op, e))?;
        }
        Ok(())
    }

    /// The directory's fsync, when the workload asks for one.
    fn dir_sync(&mut self) -> Result<(), (OpKind, io::Error)> {
        if !self.w.dir_sync {
            return Ok(());
        }
        let dir = self
            .dir_file
            .take()
            .ok_or_else(|| (OpKind::FsyncDir, io::Error::other("no directory")))?;
        let r = self.timed(OpKind::FsyncDir, 0, || crate::sys::fsync(&dir));
        self.dir_file = Some(dir);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(pattern: Pattern, sync: SyncMethod) -> Workload {
        Workload {
            pattern,
            sync,
            dir_sync: true,
            record_size: 4096,
            slots: 4,
        }
    }

    /// Makes `n` steps of `w` in a new directory, acknowledging each.
    fn steps(w: Workload, n: u64) -> (tempfile::TempDir, Ledger, Recorder) {
        let dir = tempfile::tempdir().unwrap();
        let mut run = Run::start(w, dir.path(), RunClock::start()).unwrap();
        for seq in 1..=n {
            let record = w.record(seq);
            run.ledger.issued = seq;
            run.step(record).unwrap();
            run.ledger.acks.push(Ack {
                seq,
                slot: record.slot,
                at_ns: 0,
            });
        }
        let Run { recorder, ledger, .. } = run;
        (dir, ledger, recorder)
    }

    #[test]
    fn each_pattern_writes_its_records_and_acknowledges_them() {
        let (dir, ledger, rec) = steps(workload(Pattern::Append, SyncMethod::Fdatasync), 5);
        assert_eq!(ledger.acks.len(), 5);
        assert_eq!(std::fs::metadata(dir.path().join(LOG)).unwrap().len(), 5 * 4096);
        assert_eq!(rec.op(OpKind::Fdatasync).unwrap().count, 5);

        let (dir, ledger, _) = steps(workload(Pattern::Overwrite, SyncMethod::Fsync), 6);
        assert_eq!(std::fs::metadata(dir.path().join(SLOTS)).unwrap().len(), 4 * 4096);
        assert_eq!(ledger.latest_ack(1).unwrap().seq, 6);
        assert_eq!(ledger.latest_ack(2).unwrap().seq, 3);

        let (dir, _, rec) = steps(workload(Pattern::Rename, SyncMethod::Fsync), 3);
        let current = std::fs::read(dir.path().join(CURRENT)).unwrap();
        assert_eq!(
            super::super::record::Record::decode(&current),
            super::super::record::Found::Intact(Record { seq: 3, slot: 0 })
        );
        assert!(!dir.path().join(CURRENT_TMP).exists());
        assert_eq!(rec.op(OpKind::Rename).unwrap().count, 3);
        assert_eq!(rec.op(OpKind::FsyncDir).unwrap().count, 3);

        let (dir, _, _) = steps(workload(Pattern::Create, SyncMethod::None), 3);
        for seq in 1..=3 {
            assert!(dir.path().join(created(seq)).is_file());
        }
    }

    #[test]
    fn a_stopped_workload_ends_and_a_failing_call_is_not_acknowledged() {
        let dir = tempfile::tempdir().unwrap();
        let stop = Stop::new();
        stop.set();
        let mut run = Run::start(
            workload(Pattern::Append, SyncMethod::Fsync),
            dir.path(),
            RunClock::start(),
        )
        .unwrap();
        assert_eq!(run.until(&stop), Ended::Stopped);
        assert_eq!(run.ledger.issued, 0);
        // A file that cannot be written (opened read-only): the step fails, nothing is acked.
        run.file = Some(File::open(dir.path().join(LOG)).unwrap());
        let ended = run.until(&Stop::new());
        assert!(matches!(ended, Ended::Failed { op: OpKind::Write, .. }), "{ended:?}");
        assert_eq!((run.ledger.issued, run.ledger.acks.len()), (1, 0));
    }
}
