//! The journal of the filesystem under test, for the environment fingerprint: what explains
//! a whole class of results before any trace is read. An ext4 without a journal (the
//! project VMs' root filesystem) makes fsync a data write plus a cache flush, sub-
//! millisecond; with one, fsync waits for a jbd2 commit, whose cost depends on the data
//! mode (ordered: the commit first writes the transaction's file data), the commit
//! interval and the batch times.
//!
//! Sources: for ext2/3/4, `/proc/fs/ext4/DEV/options` and the jbd2 journal's `info`, present
//! exactly when it has one ([`crate::kernel::ext4`]); for xfs and btrfs, the superblock
//! options in mountinfo (xfs `logbufs=8,logbsize=32k`, Documentation/admin-guide/xfs.rst
//! gives the defaults; btrfs `commit=N` when not the default 30 s, `flushoncommit`,
//! Documentation/filesystems/btrfs.rst and the btrfs(5) manual page).

use serde::{Deserialize, Serialize};

use crate::kernel::ext4::{Ext4Options, Jbd2Info};

/// The journal settings of a filesystem.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JournalInfo {
    /// `jbd2` (ext3/ext4 with a journal), `none` (ext2, ext4 without one), `xfs log`,
    /// `btrfs` (transactions and a log tree, no separate journal).
    pub kind: String,
    /// ext3/ext4: `ordered`, `writeback` or `journal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_mode: Option<String>,
    /// Seconds between periodic commits (ext4 `commit=`, btrfs `commit=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_interval_s: Option<u64>,
    /// ext4: how long a commit may wait for more synchronous handles to join it, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_batch_time_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch_time_us: Option<u64>,
    /// Whether commits send cache flushes (ext4 `barrier`/`nobarrier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier: Option<bool>,
    /// jbd2: the largest transaction, in journal blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_transaction_blocks: Option<u64>,
    /// xfs: in-memory log buffers and their size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_buffers: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_buffer_bytes: Option<u64>,
    /// btrfs: data is flushed with every transaction commit (`flushoncommit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_on_commit: Option<bool>,
}

impl JournalInfo {
    /// One line for the text report: `jbd2, data=ordered, commit every 5s, batch 0-15000us,
    /// barrier`, or why fsync commits nothing: `none (no journal: fsync writes the data and
    /// flushes the device cache)`.
    pub fn describe(&self) -> String {
        let mut words = vec![self.kind.clone()];
        if self.kind == "none" {
            words[0] = "none (no journal: fsync writes the data and flushes the device cache)".into();
        }
        if let Some(m) = &self.data_mode {
            words.push(format!("data={m}"));
        }
        if let Some(s) = self.commit_interval_s {
            words.push(format!("commit every {s}s"));
        }
        if let (Some(lo), Some(hi)) = (self.min_batch_time_us, self.max_batch_time_us) {
            words.push(format!("batch {lo}-{hi}us"));
        }
        if let Some(b) = self.barrier {
            words.push(if b { "barrier" } else { "nobarrier" }.into());
        }
        if let Some(n) = self.max_transaction_blocks {
            words.push(format!("transactions up to {n} blocks"));
        }
        if let (Some(n), Some(size)) = (self.log_buffers, self.log_buffer_bytes) {
            words.push(format!("{n} log buffers of {}", crate::units::human_size(size)));
        }
        if self.flush_on_commit == Some(true) {
            words.push("flushoncommit".into());
        }
        words.join(", ")
    }
}

/// The value of `name=` among the options (the last one, as the kernel takes it).
fn option<'a>(options: impl Iterator<Item = &'a str>, name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    options.filter_map(|o| o.trim().strip_prefix(prefix.as_str())).last()
}

fn has(options: &str, sep: char, name: &str) -> bool {
    options.split(sep).any(|o| o.trim() == name)
}

/// ext2/3/4 from its options and, when the filesystem has a journal, the jbd2 journal's info.
pub fn ext4(options: &Ext4Options, jbd2: Option<&Jbd2Info>) -> JournalInfo {
    let journal = jbd2.is_some();
    let with_journal = |v: Option<u64>| if journal { v } else { None };
    JournalInfo {
        kind: if journal { "jbd2" } else { "none" }.into(),
        data_mode: options.data.clone(),
        commit_interval_s: with_journal(options.commit_s),
        min_batch_time_us: with_journal(options.min_batch_time_us),
        max_batch_time_us: with_journal(options.max_batch_time_us),
        barrier: options.barrier,
        max_transaction_blocks: jbd2.and_then(|j| j.max_transaction_blocks),
        ..JournalInfo::default()
    }
}

/// xfs from its superblock options in mountinfo.
pub fn xfs(super_options: &str) -> JournalInfo {
    let opts = || super_options.split(',');
    JournalInfo {
        kind: "xfs log".into(),
        log_buffers: option(opts(), "logbufs").and_then(|v| v.parse().ok()),
        log_buffer_bytes: option(opts(), "logbsize").and_then(|v| crate::units::parse_size(v).ok().map(|b| b.get())),
        ..JournalInfo::default()
    }
}

/// btrfs from its superblock options in mountinfo; the commit interval is 30 s unless
/// `commit=` says otherwise.
pub fn btrfs(super_options: &str) -> JournalInfo {
    let opts = || super_options.split(',');
    JournalInfo {
        kind: "btrfs".into(),
        commit_interval_s: Some(option(opts(), "commit").and_then(|v| v.parse().ok()).unwrap_or(30)),
        flush_on_commit: Some(has(super_options, ',', "flushoncommit")),
        ..JournalInfo::default()
    }
}

/// The journal of the filesystem of type `fstype` on device `dev_name` (`loop0`, `vda`),
/// read from /proc; None for filesystems without one (tmpfs, ...).
pub fn read(fstype: &str, dev_name: Option<&str>, super_options: &str) -> Option<JournalInfo> {
    match fstype {
        "ext2" | "ext3" | "ext4" => {
            let dev = dev_name?;
            Some(ext4(&Ext4Options::read(dev)?, Jbd2Info::read(dev).as_ref()))
        }
        "xfs" => Some(xfs(super_options)),
        "btrfs" => Some(btrfs(super_options)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ext4::fixtures::{JBD2_INFO, WITHOUT, WITH_JOURNAL};

    #[test]
    fn ext4_with_a_journal() {
        let j = ext4(&WITH_JOURNAL.parse().unwrap(), Some(&JBD2_INFO.parse().unwrap()));
        assert_eq!(j.kind, "jbd2");
        assert_eq!(j.data_mode.as_deref(), Some("ordered"));
        assert_eq!(j.commit_interval_s, Some(5));
        assert_eq!((j.min_batch_time_us, j.max_batch_time_us), (Some(0), Some(15000)));
        assert_eq!(j.barrier, Some(true));
        assert_eq!(j.max_transaction_blocks, Some(2730));
        assert_eq!(
            j.describe(),
            "jbd2, data=ordered, commit every 5s, batch 0-15000us, barrier, transactions up to 2730 blocks"
        );
    }

    #[test]
    fn ext4_without_a_journal_has_no_commits() {
        // The project VM's root: no jbd2 directory, no data= line.
        let j = ext4(&WITHOUT.parse().unwrap(), None);
        assert_eq!(j.kind, "none");
        assert_eq!(j.data_mode, None);
        assert_eq!(j.commit_interval_s, None);
        assert_eq!(j.max_transaction_blocks, None);
        assert!(j.describe().starts_with("none (no journal"), "{}", j.describe());
    }

    #[test]
    fn xfs_and_btrfs_from_super_options() {
        let x = xfs("rw,inode64,logbufs=8,logbsize=32k,noquota");
        assert_eq!((x.log_buffers, x.log_buffer_bytes), (Some(8), Some(32 * 1024)));
        let b = btrfs("rw,discard=async,space_cache=v2,subvolid=5,subvol=/");
        assert_eq!((b.commit_interval_s, b.flush_on_commit), (Some(30), Some(false)));
        let b = btrfs("rw,commit=120,flushoncommit");
        assert_eq!((b.commit_interval_s, b.flush_on_commit), (Some(120), Some(true)));
    }
}
