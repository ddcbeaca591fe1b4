//! What a small-files run found: iozone's rows and fs_mark's run, under the scheduler they
//! ran under, and the lines both programs printed.

use serde::{Deserialize, Serialize};

use super::{fs_mark, iozone};
use crate::measure::stats::mean;
use crate::scenario::Views;
use crate::scenario::{Measured, Table};
use crate::units::Bytes;

/// What the run measured: iozone's rows, fs_mark's run, and the scheduler they ran under.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    /// `mq-deadline on vda`.
    pub(crate) scheduler: String,
    pub(crate) runs: u64,
    #[serde(default)]
    pub(crate) iozone: Vec<iozone::SizeRow>,
    #[serde(default)]
    pub(crate) fs_mark: Option<fs_mark::FsMarkRun>,
}

impl Views for Details {
    fn tables(&self) -> Vec<Table> {
        let mut out = Vec::new();
        if !self.iozone.is_empty() {
            let title = format!(
                "iozone -e -i 0: KB/s including fsync, mean (median) of {} runs; scheduler {}",
                self.runs, self.scheduler
            );
            out.push(Table::of(title, &self.iozone));
        }
        if let Some(run) = &self.fs_mark {
            out.push(Table::of(run.title(&self.scheduler), std::slice::from_ref(run)));
        }
        out
    }

    fn findings(&self) -> Vec<String> {
        let mut out = iozone::findings(&self.iozone, self.runs, &self.scheduler);
        out.extend(self.fs_mark.as_ref().map(|r| r.finding(&self.scheduler)));
        out
    }

    /// `64k files write 1452 KB/s, rewrite 1788 KB/s; fs_mark 85.1 files/s, fsync p99 ...`
    /// (the 64k row, the seed's size, when it ran, else the first).
    fn headline(&self, r: &Measured<'_>) -> String {
        let mut parts = Vec::new();
        let row = self
            .iozone
            .iter()
            .find(|row| row.size == 64 * Bytes::KIB)
            .or(self.iozone.first());
        if let Some(row) = row {
            parts.push(format!(
                "{}k files write {} KB/s, rewrite {} KB/s",
                row.size / 1024,
                mean(&row.write_kbs).round() as u64,
                mean(&row.rewrite_kbs).round() as u64
            ));
        }
        if let Some(run) = &self.fs_mark {
            // As the table's cells print them (serde_json's number format).
            let cell = |x: f64, places| serde_json::json!(crate::units::rounded(x, places)).to_string();
            parts.push(format!(
                "fs_mark {} files/s, fsync p99 {} ms",
                cell(run.files_per_s(), 1),
                cell(crate::units::ms(run.fsync_ns.p99), 2)
            ));
        }
        let scheduler = r.environment.device.as_ref().and_then(|d| d.scheduler.clone());
        format!(
            "{} [{}]",
            parts.join("; "),
            scheduler.as_deref().unwrap_or("scheduler ?")
        )
    }

    fn seed_lines(&self, _: &Measured<'_>) -> Vec<String> {
        let mut lines = if self.iozone.is_empty() {
            Vec::new()
        } else {
            iozone::seed_lines(&self.iozone)
        };
        if let Some(run) = &self.fs_mark {
            lines.extend(run.seed_lines());
        }
        lines
    }
}
