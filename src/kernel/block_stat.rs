//! `/sys/block/DEV/stat` (also `/sys/class/block/DEV/stat`): a block device's I/O counters,
//! per Documentation/block/stat.rst (the same fields as /proc/diskstats, described in
//! Documentation/admin-guide/iostats.rst).

use std::str::FromStr;

/// `stat`: 11, 15 or 17 numbers depending on the kernel
/// (Documentation/block/stat.rst). Kept: completed reads and writes (field 1, 5), sectors
/// written (7), requests in flight (9), completed flushes (16, kernel 5.5+); the merge,
/// tick and discard fields are ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockStat {
    pub(crate) reads_completed: u64,
    pub(crate) writes_completed: u64,
    pub(crate) sectors_written: u64,
    pub(crate) in_flight: u64,
    pub(crate) flushes_completed: Option<u64>,
}

impl FromStr for BlockStat {
    type Err = String;

    fn from_str(text: &str) -> Result<BlockStat, String> {
        let f: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse().map_err(|_| format!("block stat: not a number: {w:?}")))
            .collect::<Result<_, String>>()?;
        if f.len() < 11 {
            return Err(format!("block stat: {} fields, expected at least 11", f.len()));
        }
        Ok(BlockStat {
            reads_completed: f[0],
            writes_completed: f[4],
            sectors_written: f[6],
            in_flight: f[8],
            flushes_completed: f.get(15).copied(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = include_str!("../../tests/fixtures/sys-block-stat.txt");

    #[test]
    fn block_stat_fixture() {
        let d: BlockStat = STAT.parse().unwrap();
        assert!(d.writes_completed > 0 && d.sectors_written >= d.writes_completed);
        assert_eq!(d.flushes_completed, Some(245874), "the sixteenth field");
        let old: BlockStat = "1 2 3 4 5 6 7 8 9 10 11".parse().unwrap();
        assert_eq!(
            (old.writes_completed, old.in_flight, old.flushes_completed),
            (5, 9, None)
        );
        assert!("1 2 3".parse::<BlockStat>().is_err());
    }
}
