//! ext4's journal as /proc shows it:
//! - `/proc/fs/ext4/DEV/options`: one mount option per line, as the kernel applies them
//!   (fs/ext4/super.c `ext4_seq_options_show`; the options are those of
//!   Documentation/admin-guide/ext4.rst). Kept: `data=`, `commit=`, `min_batch_time=`,
//!   `max_batch_time=`, `barrier`/`nobarrier`; the other options are ignored. `data=` is
//!   listed only when the filesystem has a journal.
//! - `/proc/fs/jbd2/DEV-INO/info`, present exactly when a jbd2 journal is (fs/jbd2/journal.c
//!   `jbd2_seq_info_show`). Kept: from its first line, "N transactions (M requested), each
//!   up to B blocks", the largest transaction B; the statistics below it are ignored.

use std::str::FromStr;

/// The journal options of an ext2/3/4 filesystem, from `/proc/fs/ext4/DEV/options`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ext4Options {
    /// `ordered`, `writeback` or `journal`.
    pub(crate) data: Option<String>,
    pub(crate) commit_s: Option<u64>,
    pub(crate) min_batch_time_us: Option<u64>,
    pub(crate) max_batch_time_us: Option<u64>,
    /// `barrier` (true) or `nobarrier` (false), when listed.
    pub(crate) barrier: Option<bool>,
}

impl Ext4Options {
    /// The options of the filesystem on device `dev` (`loop0`, `vda1`).
    pub(crate) fn read(dev: &str) -> Option<Ext4Options> {
        std::fs::read_to_string(format!("/proc/fs/ext4/{dev}/options"))
            .ok()?
            .parse()
            .ok()
    }
}

impl FromStr for Ext4Options {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Ext4Options, Self::Err> {
        let lines = || text.lines().map(str::trim);
        // The last one counts, as when the kernel parses a repeated option.
        let value = |name: &str| {
            let prefix = format!("{name}=");
            lines()
                .rev()
                .find_map(|l| l.strip_prefix(prefix.as_str()).map(str::to_string))
        };
        let num = |name: &str| value(name).and_then(|v| v.parse().ok());
        let listed = |name: &str| lines().any(|l| l == name);
        Ok(Ext4Options {
            data: value("data"),
            commit_s: num("commit"),
            min_batch_time_us: num("min_batch_time"),
            max_batch_time_us: num("max_batch_time"),
            barrier: match (listed("barrier"), listed("nobarrier")) {
                (_, true) => Some(false),
                (true, _) => Some(true),
                _ => None,
            },
        })
    }
}

/// A jbd2 journal, from `/proc/fs/jbd2/DEV-INO/info`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Jbd2Info {
    /// The largest transaction, in journal blocks.
    pub(crate) max_transaction_blocks: Option<u64>,
}

impl Jbd2Info {
    /// The journal of the filesystem on device `dev`, if it has one: its directory is named
    /// after the device and the journal inode (`vda1-8`).
    pub(crate) fn read(dev: &str) -> Option<Jbd2Info> {
        std::fs::read_dir("/proc/fs/jbd2")
            .ok()?
            .filter_map(|e| e.ok())
            .find(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.rsplit_once('-'))
                    .is_some_and(|(d, _)| d == dev)
            })
            .and_then(|e| std::fs::read_to_string(e.path().join("info")).ok())?
            .parse()
            .ok()
    }
}

impl FromStr for Jbd2Info {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Jbd2Info, Self::Err> {
        let blocks = || -> Option<u64> {
            let first = text.lines().next()?;
            first
                .split_once("each up to ")?
                .1
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        Ok(Jbd2Info {
            max_transaction_blocks: blocks(),
        })
    }
}

/// Both files as the fixtures hold them, for the tests of these parsers and of the journal
/// description made from them (`environment::journal`).
#[cfg(test)]
pub(crate) mod fixtures {
    /// The options of an ext4 with a journal (data=ordered).
    pub(crate) const WITH_JOURNAL: &str = include_str!("../../tests/fixtures/proc-fs-ext4-options-journal.txt");
    /// The options of an ext4 without one (the project VM's root).
    pub(crate) const WITHOUT: &str = include_str!("../../tests/fixtures/proc-fs-ext4-options-nojournal.txt");
    /// jbd2's info of that journal.
    pub(crate) const JBD2_INFO: &str = include_str!("../../tests/fixtures/proc-fs-jbd2-info.txt");
}

#[cfg(test)]
mod tests {
    use super::fixtures::{JBD2_INFO, WITHOUT, WITH_JOURNAL};
    use super::*;

    #[test]
    fn ext4_options_fixtures() {
        let o: Ext4Options = WITH_JOURNAL.parse().unwrap();
        assert_eq!(o.data.as_deref(), Some("ordered"));
        assert_eq!(o.commit_s, Some(5));
        assert_eq!((o.min_batch_time_us, o.max_batch_time_us), (Some(0), Some(15000)));
        assert_eq!(o.barrier, Some(true));
        // The project VM's root: no journal, so no data= line.
        let o: Ext4Options = WITHOUT.parse().unwrap();
        assert_eq!(o.data, None);
        let o: Ext4Options = "commit=5\nnobarrier\ncommit=30\n".parse().unwrap();
        assert_eq!((o.commit_s, o.barrier), (Some(30), Some(false)));
    }

    #[test]
    fn jbd2_info_fixture() {
        let j: Jbd2Info = JBD2_INFO.parse().unwrap();
        assert_eq!(j.max_transaction_blocks, Some(2730));
        let j: Jbd2Info = "garbage".parse().unwrap();
        assert_eq!(j.max_transaction_blocks, None);
    }
}
