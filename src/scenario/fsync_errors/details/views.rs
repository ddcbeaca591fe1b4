//! The views of what `fsync-errors` measured: the behaviour table (one row per filesystem),
//! the published expectation beside it, and findings in words.

use super::published::published;
use super::{Behaviour, Call, Content, Details, Row};
use crate::scenario::table::{Cell, Table};
use crate::scenario::{Measured, Views};
use crate::testbed::remount::FsState;

/// Words of the kernel's messages that say what became of a filesystem.
const STATE_WORDS: [&str; 5] = ["shut down", "read-only", "readonly", "aborting journal", "aborted"];

const COLUMNS: [&str; 9] = [
    "filesystem",
    "1st fsync",
    "writeback",
    "2nd fsync",
    "fd before",
    "fd after",
    "page after",
    "on disk after remount",
    "filesystem after",
];

impl Behaviour {
    /// The row's cells under `fault`. With `block`, only the block's writes fail, so a
    /// failed write during the second fsync is the page written again (kept dirty); with
    /// `flush`, whether each call after the failed flush flushed the cache again.
    fn cells(&self, fault: &str) -> Vec<String> {
        let page = if fault == "block" && self.second_fsync.disk_failed > 0 {
            format!("{} (kept dirty)", self.page)
        } else {
            self.page.to_string()
        };
        let shown = |c: &Call| {
            if fault == "flush" {
                c.shown_with_flushes()
            } else {
                c.shown()
            }
        };
        vec![
            self.filesystem.clone(),
            self.first_fsync.shown(),
            self.writeback
                .map_or_else(|| "-".to_string(), |w| format!("syncfs {}", shown(&w))),
            shown(&self.second_fsync),
            shown(&self.fd_before),
            shown(&self.fd_after),
            page,
            match &self.on_disk {
                Ok(c) => c.to_string(),
                Err(why) => why.clone(),
            },
            self.state.to_string(),
        ]
    }

    /// With `fault=flush`: what the power cut found, and which call after the failed flush
    /// flushed the cache again.
    fn after_the_cut(&self) -> Vec<String> {
        let fs = &self.filesystem;
        let Some(cut) = &self.cut else {
            return vec![format!("{fs}: the power was not cut (the device was gone)")];
        };
        let later = [
            ("syncfs", self.writeback.as_ref()),
            ("the 2nd fsync", Some(&self.second_fsync)),
            ("the fsync through the descriptor opened before", Some(&self.fd_before)),
            ("the fsync through the descriptor opened after", Some(&self.fd_after)),
        ];
        let flushed: Vec<&str> = later
            .iter()
            .filter(|(_, c)| c.is_some_and(|c| c.flushes > 0 && c.error.is_none()))
            .map(|(what, _)| *what)
            .collect();
        let new_survived = self.on_disk.as_ref().is_ok_and(|c| *c == Content::New);
        let mut out = Vec::new();
        if flushed.is_empty() {
            let said_ok: Vec<&str> = later
                .iter()
                .filter(|(_, c)| c.is_some_and(|c| c.error.is_none()))
                .map(|(what, _)| *what)
                .collect();
            if !said_ok.is_empty() {
                out.push(format!(
                    "{fs}: after the failed flush, {} returned 0 without flushing the cache again",
                    said_ok.join(", ")
                ));
            }
        } else {
            out.push(format!(
                "{fs}: after the failed flush, {} flushed the cache again",
                flushed.join(", ")
            ));
        }
        if cut.held_writes == 0 && !new_survived {
            out.push(format!(
                "{fs}: the drive held nothing at the cut, and the new data is not on it"
            ));
        } else if cut.held_writes == 0 {
            out.push(format!(
                "{fs}: the drive had drained its cache before the cut, so the cut tells nothing of the flushes; a disk that drains slowly shows it (--set device=ssd-sata,request=200ms)"
            ));
        } else if !new_survived {
            out.push(format!(
                "{fs}: the cut lost {} writes the drive still held, the new data among them",
                cut.lost_writes
            ));
        }
        out
    }

    /// The fsyncgate outcome: an fsync returned 0 after the error while the new data is not
    /// on the disk.
    fn lost_silently(&self) -> bool {
        let told_ok_after = !self.second_fsync.reported() || !self.fd_after.reported();
        told_ok_after && self.on_disk.as_ref().is_ok_and(|c| *c != Content::New)
    }
}

impl Views for Details {
    fn tables(&self) -> Vec<Table> {
        let mut columns: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
        if self.fault == "flush" {
            columns[7] = "on disk after the power cut".into();
        }
        let measured = self
            .rows
            .iter()
            .map(|r| match r {
                Row::Measured(b) => b.cells(&self.fault).into_iter().map(Cell::Text).collect(),
                Row::NotMeasured { filesystem, why } => {
                    let mut cells = vec![
                        Cell::Text(filesystem.clone()),
                        Cell::Text(format!("not measured: {why}")),
                    ];
                    cells.extend((2..COLUMNS.len()).map(|_| Cell::Text(String::new())));
                    cells
                }
            })
            .collect();
        let expected = self
            .rows
            .iter()
            .filter_map(|r| {
                let fs = match r {
                    Row::Measured(b) => &b.filesystem,
                    Row::NotMeasured { filesystem, .. } => filesystem,
                };
                let p = published(fs)?;
                Some(
                    [
                        fs.as_str(),
                        p.first_fsync,
                        "-",
                        p.second_fsync,
                        p.fd_before,
                        p.fd_after,
                        p.page,
                        p.on_disk,
                        "writable",
                    ]
                    .map(|s| Cell::Text(s.to_string()))
                    .to_vec(),
                )
            })
            .collect::<Vec<_>>();
        let mut tables = vec![Table {
            title: format!(
                "after {} (disk {}): what each call returned, what the page and the disk hold",
                match self.fault.as_str() {
                    "disk" => "the disk stopped taking writes",
                    "flush" => "one failed cache flush, then a power cut",
                    _ => "a failed writeback of one data block",
                },
                self.device
            ),
            columns: columns.clone(),
            rows: measured,
        }];
        if !expected.is_empty() && self.fault == "block" {
            tables.push(Table {
                title: "published: Rebello et al., \"Can Applications Recover from fsync Failures?\", USENIX ATC 2020 (as CuttleFS encodes it)".into(),
                columns,
                rows: expected,
            });
        }
        tables
    }

    fn findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for row in &self.rows {
            let b = match row {
                Row::Measured(b) => b,
                Row::NotMeasured { filesystem, why } => {
                    out.push(format!("{filesystem}: not measured: {why}"));
                    continue;
                }
            };
            if b.disk_failed == 0 {
                out.push(format!(
                    "{}: the disk failed no request ({}): the row shows a filesystem that never met the fault",
                    b.filesystem, b.fault
                ));
                continue;
            }
            if b.lost_silently() {
                out.push(format!(
                    "{}: an fsync after the error returned 0 while the disk kept the {} data: the error is reported once, and a retried fsync does not write the page again",
                    b.filesystem,
                    b.on_disk.as_ref().map_or_else(|_| "old".to_string(), ToString::to_string)
                ));
            }
            if b.page == Content::New && b.on_disk.as_ref().is_ok_and(|c| *c != Content::New) {
                out.push(format!(
                    "{}: until the filesystem is mounted again, reads return the new data the disk does not hold",
                    b.filesystem
                ));
            }
            if b.state != FsState::Writable {
                let said: Vec<&str> = b
                    .kernel
                    .iter()
                    .map(String::as_str)
                    .filter(|m| STATE_WORDS.iter().any(|w| m.to_lowercase().contains(w)))
                    .collect();
                let said = if said.is_empty() {
                    String::new()
                } else {
                    format!("; the kernel said: {}", said.join(" | "))
                };
                out.push(format!(
                    "{}: {} once the disk was healthy again{said}",
                    b.filesystem, b.state
                ));
            }
            if self.fault == "flush" {
                out.extend(b.after_the_cut());
            }
            if let (Some(p), true) = (published(&b.filesystem), self.fault == "block") {
                let diff = b.differences(p);
                if !diff.is_empty() {
                    out.push(format!("{}: differs from ATC'20: {}", b.filesystem, diff.join(", ")));
                }
            }
        }
        out
    }

    fn headline(&self, _: &Measured<'_>) -> String {
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|r| match r {
                Row::Measured(b) => format!("{} {}/{}", b.filesystem, b.first_fsync.shown(), b.second_fsync.shown()),
                Row::NotMeasured { filesystem, .. } => format!("{filesystem} not measured"),
            })
            .collect();
        format!("1st/2nd fsync after a failed writeback: {}", rows.join(", "))
    }

    fn seed_lines(&self, _: &Measured<'_>) -> Vec<String> {
        Vec::new()
    }
}
