//! What a datasync run found: each (case, method) cell, the slots as they ran (Hifumi's line
//! per slot), and every method's rate against fsync's.

use serde::{Deserialize, Serialize};

use super::cells::{self, CellRow};
use crate::scenario::Views;
use crate::scenario::{Measured, Table};
use crate::units::{format_size, Bytes};

/// What the run measured: each (case, method) cell over all its slots, and each slot as it
/// ran (Hifumi's line per slot).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    pub(crate) write_size: u64,
    pub(crate) rounds: u64,
    pub(crate) cells: Vec<CellRow>,
    pub(crate) slots: Vec<cells::Slot>,
}

impl Views for Details {
    fn tables(&self) -> Vec<Table> {
        let title = format!(
            "datasync: {} write + sync per operation, {} interleaved round(s); latency in us",
            format_size(Bytes(self.write_size)),
            self.rounds
        );
        vec![Table::of(title, &cells::with_ratios(&self.cells))]
    }

    fn findings(&self) -> Vec<String> {
        cells::findings(&self.cells)
    }

    /// The first finding: fdatasync against fsync on the seed's case, when both ran.
    fn headline(&self, r: &Measured<'_>) -> String {
        match cells::findings(&self.cells).into_iter().next() {
            Some(f) => f,
            None => crate::scenario::default_headline(r),
        }
    }

    fn seed_lines(&self, _: &Measured<'_>) -> Vec<String> {
        self.slots.iter().map(|s| s.seed_line(self.write_size)).collect()
    }
}
