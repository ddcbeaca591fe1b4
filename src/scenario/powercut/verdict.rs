//! What survived a power cut, read from the recovered filesystem against the [`Ledger`]:
//! every acknowledged record intact, lost or torn; every record not acknowledged kept or
//! lost (expected either way); for `rename` and `create`, what each file holds (new, old,
//! empty, missing, torn); and, for each acknowledged record that did not survive, how long
//! before the cut it had been acknowledged (diskchecker.pl's histogram).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::pattern::{created, Ledger, Pattern, Workload, CURRENT, LOG, SLOTS};
use super::record::{Found, Record};

/// The verdict of one cut.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Verdict {
    /// Acknowledged records (for `overwrite`: slots with an acknowledged version).
    pub(crate) acked: u64,
    pub(crate) acked_intact: u64,
    pub(crate) acked_lost: u64,
    pub(crate) acked_torn: u64,
    /// Records written but not acknowledged (under way at the cut, or never synced).
    pub(crate) unacked: u64,
    pub(crate) unacked_kept: u64,
    pub(crate) unacked_lost: u64,
    /// What the files of `rename` and `create` hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) files: Option<FileStates>,
    /// For each acknowledged record lost or torn: ns from its acknowledgement to the cut.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) lost_ack_ages_ns: Vec<u64>,
}

/// What each file of `rename` (one file) or `create` (a file a record) holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileStates {
    /// The newest version written (for `create`: the record, whole).
    pub(crate) new: u64,
    /// An older version than the newest written.
    pub(crate) old: u64,
    /// There, with nothing in it (the zero-length file of a rename without fsync).
    pub(crate) empty: u64,
    pub(crate) missing: u64,
    /// Its size there, its data not: zeros where the record was (the data blocks never
    /// written, as ext3/4 and xfs could leave a file after a cut).
    #[serde(default)]
    pub(crate) zeroed: u64,
    pub(crate) torn: u64,
}

impl FileStates {
    /// Each state's name and count, in the order the report's table shows them.
    pub(crate) fn counts(&self) -> [(&'static str, u64); 6] {
        [
            ("new", self.new),
            ("old", self.old),
            ("empty", self.empty),
            ("zeroed", self.zeroed),
            ("missing", self.missing),
            ("torn", self.torn),
        ]
    }
}

/// Adds each named count of `from` to the same count of `to`.
macro_rules! add_each {
    ($to:expr, $from:expr; $($count:ident),+) => {
        $($to.$count += $from.$count;)+
    };
}

impl Verdict {
    /// Whether an acknowledged write did not survive: what fsync promised was broken.
    pub(crate) fn lost_acknowledged(&self) -> bool {
        self.acked_lost + self.acked_torn > 0
    }

    /// Adds another cut's verdict to this one.
    pub(crate) fn add(&mut self, o: &Verdict) {
        add_each!(self, o; acked, acked_intact, acked_lost, acked_torn, unacked, unacked_kept, unacked_lost);
        if let Some(f) = &o.files {
            let mine = self.files.get_or_insert_with(FileStates::default);
            add_each!(mine, f; new, old, empty, missing, zeroed, torn);
        }
        self.lost_ack_ages_ns.extend(&o.lost_ack_ages_ns);
    }
}

/// The verdict when the filesystem does not mount after the cut: nothing can be read back,
/// so every acknowledged record is lost.
pub(crate) fn all_lost(w: &Workload, ledger: &Ledger, cut_at_ns: u64) -> Verdict {
    let mut v = Verdict::default();
    let acked: Vec<u64> = match w.pattern {
        // Each slot's latest acknowledged version, or the file's.
        Pattern::Overwrite => (0..w.slots)
            .filter_map(|s| ledger.latest_ack(s).map(|a| a.seq))
            .collect(),
        Pattern::Rename => ledger.acks.last().map(|a| a.seq).into_iter().collect(),
        Pattern::Append | Pattern::Create => ledger.acks.iter().map(|a| a.seq).collect(),
    };
    for seq in acked {
        let age = ledger
            .acks
            .iter()
            .find(|a| a.seq == seq)
            .map(|a| cut_at_ns.saturating_sub(a.at_ns));
        v.count(true, false, false, age);
    }
    v
}

/// Reads what `dir` (the work directory on the recovered filesystem) holds of the records
/// `ledger` names, written as `w` writes them; `cut_at_ns` is the cut's time on the run's
/// clock.
pub(crate) fn judge(dir: &Path, w: &Workload, ledger: &Ledger, cut_at_ns: u64) -> Verdict {
    let mut v = Verdict::default();
    let age = |seq: u64| {
        ledger
            .acks
            .iter()
            .find(|a| a.seq == seq)
            .map(|a| cut_at_ns.saturating_sub(a.at_ns))
    };
    let acked = |seq: u64| ledger.acks.iter().any(|a| a.seq == seq);
    match w.pattern {
        Pattern::Append => {
            let data = std::fs::read(dir.join(LOG)).unwrap_or_default();
            for seq in 1..=ledger.issued {
                let found = stretch(&data, (seq - 1) as usize, w.record_size);
                let whole = found == Found::Intact(w.record(seq));
                v.count(acked(seq), whole, found == Found::Torn, age(seq));
            }
        }
        Pattern::Overwrite => {
            let data = std::fs::read(dir.join(SLOTS)).unwrap_or_default();
            for slot in 0..w.slots {
                let found = stretch(&data, slot as usize, w.record_size);
                let latest_issued = (1..=ledger.issued).rev().find(|s| w.record(*s).slot == slot);
                let latest_ack = ledger.latest_ack(slot).map(|a| a.seq);
                let kept = |at_least: u64| matches!(found, Found::Intact(r) if r.slot == slot && r.seq >= at_least);
                if let Some(a) = latest_ack {
                    v.count(true, kept(a), found == Found::Torn, age(a));
                }
                // A version newer than the acknowledged one, under way at the cut.
                if let Some(i) = latest_issued.filter(|i| Some(*i) != latest_ack) {
                    v.count(false, kept(i), false, None);
                }
            }
        }
        Pattern::Rename => {
            let path = dir.join(CURRENT);
            let latest_ack = ledger.acks.last().map(|a| a.seq);
            let found = file_found(&path);
            let mut files = FileStates::default();
            let seq_found = match found {
                FileFound::Missing => {
                    files.missing += 1;
                    None
                }
                FileFound::Empty => {
                    files.empty += 1;
                    None
                }
                FileFound::Is(Found::Intact(r)) if r.seq == ledger.issued => {
                    files.new += 1;
                    Some(r.seq)
                }
                FileFound::Is(Found::Intact(r)) => {
                    files.old += 1;
                    Some(r.seq)
                }
                FileFound::Is(Found::Zero) => {
                    files.zeroed += 1;
                    None
                }
                FileFound::Is(Found::Torn) => {
                    files.torn += 1;
                    None
                }
            };
            if let Some(a) = latest_ack {
                let torn = matches!(found, FileFound::Is(Found::Torn));
                v.count(true, seq_found.is_some_and(|s| s >= a), torn, age(a));
            }
            if ledger.issued > 0 && latest_ack != Some(ledger.issued) {
                v.count(false, seq_found == Some(ledger.issued), false, None);
            }
            v.files = Some(files);
        }
        Pattern::Create => {
            let mut files = FileStates::default();
            for seq in 1..=ledger.issued {
                let found = file_found(&dir.join(created(seq)));
                let whole = found == FileFound::Is(Found::Intact(w.record(seq)));
                match found {
                    FileFound::Missing => files.missing += 1,
                    FileFound::Empty => files.empty += 1,
                    _ if whole => files.new += 1,
                    FileFound::Is(Found::Zero) => files.zeroed += 1,
                    _ => files.torn += 1,
                }
                let torn = !whole && matches!(found, FileFound::Is(Found::Torn));
                v.count(acked(seq), whole, torn, age(seq));
            }
            v.files = Some(files);
        }
    }
    v
}

impl Verdict {
    /// Counts one record: acknowledged or not, found whole or not (torn when part of it is).
    fn count(&mut self, acked: bool, whole: bool, torn: bool, age_ns: Option<u64>) {
        match (acked, whole) {
            (true, true) => {
                self.acked += 1;
                self.acked_intact += 1;
            }
            (true, false) => {
                self.acked += 1;
                if torn {
                    self.acked_torn += 1;
                } else {
                    self.acked_lost += 1;
                }
                self.lost_ack_ages_ns.extend(age_ns);
            }
            (false, true) => {
                self.unacked += 1;
                self.unacked_kept += 1;
            }
            (false, false) => {
                self.unacked += 1;
                self.unacked_lost += 1;
            }
        }
    }
}

/// The record at `index` of `data`, `size` bytes each; past the end reads as zero (never
/// written, or lost with the file's size).
fn stretch(data: &[u8], index: usize, size: usize) -> Found {
    let start = index * size;
    match data.get(start..start + size) {
        Some(bytes) => Record::decode(bytes),
        None if start >= data.len() => Found::Zero,
        // The file ends inside the record: part of it is there.
        None => Found::Torn,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileFound {
    Missing,
    Empty,
    Is(Found),
}

/// What a file that holds one record holds.
fn file_found(path: &Path) -> FileFound {
    match std::fs::read(path) {
        Err(_) => FileFound::Missing,
        Ok(b) if b.is_empty() => FileFound::Empty,
        Ok(b) => FileFound::Is(Record::decode(&b)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::pattern::Ack;
    use super::*;
    use crate::sync::SyncMethod;

    fn workload(pattern: Pattern) -> Workload {
        Workload {
            pattern,
            sync: SyncMethod::Fsync,
            dir_sync: false,
            record_size: 512,
            slots: 2,
        }
    }

    fn ledger(issued: u64, acked: &[u64], w: &Workload) -> Ledger {
        Ledger {
            acks: acked
                .iter()
                .map(|s| Ack {
                    seq: *s,
                    slot: w.record(*s).slot,
                    at_ns: *s * 1000,
                })
                .collect(),
            issued,
        }
    }

    #[test]
    fn append_counts_intact_lost_and_torn_acknowledgements() {
        let w = workload(Pattern::Append);
        let dir = tempfile::tempdir().unwrap();
        // Records 1-2 whole, 3 torn (its second half zero), 4 absent (the file ends), 5 issued only.
        let mut log = Vec::new();
        for seq in 1..=3 {
            log.extend(w.record(seq).encode(512));
        }
        log[2 * 512 + 256..].fill(0);
        std::fs::write(dir.path().join(LOG), &log).unwrap();
        let v = judge(dir.path(), &w, &ledger(5, &[1, 2, 3, 4], &w), 10_000);
        assert_eq!((v.acked, v.acked_intact, v.acked_torn, v.acked_lost), (4, 2, 1, 1));
        assert_eq!((v.unacked, v.unacked_kept, v.unacked_lost), (1, 0, 1));
        assert_eq!(v.lost_ack_ages_ns, [7_000, 6_000]);
        assert!(v.lost_acknowledged());
    }

    #[test]
    fn overwrite_needs_each_slots_latest_acknowledged_version() {
        let w = workload(Pattern::Overwrite);
        let dir = tempfile::tempdir().unwrap();
        // Slot 0 holds version 3 (acknowledged: fine); slot 1 holds version 2, but 4 was.
        let mut slots = w.record(3).encode(512);
        slots.extend(w.record(2).encode(512));
        std::fs::write(dir.path().join(SLOTS), &slots).unwrap();
        let v = judge(dir.path(), &w, &ledger(4, &[1, 2, 3, 4], &w), 10_000);
        assert_eq!((v.acked, v.acked_intact, v.acked_lost), (2, 1, 1));
        // Version 5 under way for slot 0, not there: an expected loss.
        let v = judge(dir.path(), &w, &ledger(5, &[1, 2, 3, 4], &w), 10_000);
        assert_eq!((v.unacked, v.unacked_lost), (1, 1));
    }

    #[test]
    fn rename_tells_new_old_empty_and_missing() {
        let w = workload(Pattern::Rename);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CURRENT);
        let state = |issued, acked: &[u64]| judge(dir.path(), &w, &ledger(issued, acked, &w), 0);
        assert_eq!(state(2, &[]).files.unwrap().missing, 1);
        std::fs::write(&path, b"").unwrap();
        let v = state(2, &[1]);
        assert_eq!((v.files.unwrap().empty, v.acked_lost), (1, 1));
        std::fs::write(&path, w.record(1).encode(512)).unwrap();
        let v = state(2, &[1]);
        assert_eq!((v.files.unwrap().old, v.acked_intact, v.unacked_lost), (1, 1, 1));
        std::fs::write(&path, w.record(2).encode(512)).unwrap();
        let v = state(2, &[]);
        assert_eq!((v.files.unwrap().new, v.unacked_kept), (1, 1));
    }

    #[test]
    fn create_checks_every_file() {
        let w = workload(Pattern::Create);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(created(1)), w.record(1).encode(512)).unwrap();
        std::fs::write(dir.path().join(created(2)), b"").unwrap();
        let v = judge(dir.path(), &w, &ledger(3, &[1, 2], &w), 0);
        assert_eq!(
            v.files,
            Some(FileStates {
                new: 1,
                empty: 1,
                missing: 1,
                ..Default::default()
            })
        );
        assert_eq!((v.acked_intact, v.acked_lost, v.unacked_lost), (1, 1, 1));
    }
}
