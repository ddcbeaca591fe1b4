//! `/proc/meminfo`, per Documentation/filesystems/proc.rst, section 1.2 ("meminfo"): lines
//! `Name:   value kB`. Kept, in bytes: MemTotal, MemFree, MemAvailable, Active(file),
//! Inactive(file), Dirty, Writeback. Every other line is ignored (the HugePages_ counts,
//! which have no unit, among them); a kept line the kernel does not print is None.

use std::str::FromStr;

/// The fields of `/proc/meminfo` fsynclab reads, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Meminfo {
    pub(crate) total_bytes: Option<u64>,
    pub(crate) free_bytes: Option<u64>,
    /// The kernel's estimate of what can be allocated without swapping (MemAvailable).
    pub(crate) available_bytes: Option<u64>,
    pub(crate) active_file_bytes: Option<u64>,
    pub(crate) inactive_file_bytes: Option<u64>,
    pub(crate) dirty_bytes: Option<u64>,
    pub(crate) writeback_bytes: Option<u64>,
}

impl Meminfo {
    /// This machine's now; None where /proc is not mounted.
    pub(crate) fn read() -> Option<Meminfo> {
        std::fs::read_to_string("/proc/meminfo").ok()?.parse().ok()
    }
}

impl FromStr for Meminfo {
    type Err = String;

    /// Refuses only a text without a single `Name: value kB` line.
    fn from_str(text: &str) -> Result<Meminfo, String> {
        let mut m = Meminfo::default();
        let mut any = false;
        for line in text.lines() {
            let Some((name, rest)) = line.split_once(':') else {
                continue;
            };
            let mut words = rest.split_whitespace();
            let (Some(Ok(kib)), Some("kB")) = (words.next().map(str::parse::<u64>), words.next()) else {
                continue;
            };
            any = true;
            let field = match name {
                "MemTotal" => &mut m.total_bytes,
                "MemFree" => &mut m.free_bytes,
                "MemAvailable" => &mut m.available_bytes,
                "Active(file)" => &mut m.active_file_bytes,
                "Inactive(file)" => &mut m.inactive_file_bytes,
                "Dirty" => &mut m.dirty_bytes,
                "Writeback" => &mut m.writeback_bytes,
                _ => continue,
            };
            *field = Some(kib * 1024);
        }
        if any {
            Ok(m)
        } else {
            Err(format!("meminfo: no `Name: value kB` line in {text:?}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = include_str!("../../tests/fixtures/proc-meminfo.txt");

    #[test]
    fn meminfo_fixture() {
        let m: Meminfo = MEMINFO.parse().unwrap();
        assert_eq!(m.total_bytes, Some(24683656 * 1024));
        assert_eq!(m.free_bytes, Some(21526948 * 1024));
        assert_eq!(m.available_bytes, Some(24125144 * 1024));
        assert_eq!(m.active_file_bytes, Some(1268724 * 1024));
        assert_eq!(m.inactive_file_bytes, Some(1400384 * 1024));
        assert_eq!(
            (m.dirty_bytes, m.writeback_bytes),
            (Some(0), Some(0)),
            "an idle machine"
        );
    }

    #[test]
    fn names_match_whole_and_missing_lines_are_none() {
        // `WritebackTmp` is not taken for `Writeback`, nor `Active` for `Active(file)`.
        let m: Meminfo = "MemTotal: 9 kB\nWritebackTmp: 8 kB\nActive: 5 kB\nDirty:   92 kB\nWriteback:  4 kB\n"
            .parse()
            .unwrap();
        assert_eq!((m.dirty_bytes, m.writeback_bytes), (Some(92 * 1024), Some(4096)));
        assert_eq!((m.active_file_bytes, m.available_bytes), (None, None));
        assert!("nothing".parse::<Meminfo>().is_err());
        assert!("HugePages_Total: 0\n".parse::<Meminfo>().is_err());
    }
}
