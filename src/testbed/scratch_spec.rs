//! `--scratch FS[:MOUNT_OPTIONS]` as typed: which filesystem, its mount options, and the
//! image size a run needs. Read by the testbed request ([`super::request`]) and made by
//! [`super::scratch`].

use crate::error::Usage;
use crate::units::Bytes;

/// The filesystems `--scratch` can make, and the Debian package with their mkfs.
pub const FILESYSTEMS: [(&str, &str); 5] = [
    ("ext2", "e2fsprogs"),
    ("ext3", "e2fsprogs"),
    ("ext4", "e2fsprogs"),
    ("xfs", "xfsprogs"),
    ("btrfs", "btrfs-progs"),
];

/// The smallest scratch image made when the scenario needs little.
pub const DEFAULT_MIN_SIZE: u64 = Bytes::GIB;

/// `FS[:MOUNT_OPTIONS]` as typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScratchSpec {
    pub fstype: String,
    pub mount_options: String,
}

impl ScratchSpec {
    pub fn parse(text: &str) -> Result<ScratchSpec, Usage> {
        let (fstype, opts) = text.split_once(':').unwrap_or((text, ""));
        if !FILESYSTEMS.iter().any(|(fs, _)| *fs == fstype) {
            let valid: Vec<&str> = FILESYSTEMS.iter().map(|f| f.0).collect();
            return Err(Usage(format!(
                "--scratch {text}: unknown filesystem '{fstype}'; valid: {} (mount options after a colon, e.g. ext4:nobarrier)",
                valid.join(", ")
            )));
        }
        Ok(ScratchSpec {
            fstype: fstype.to_string(),
            mount_options: opts.to_string(),
        })
    }

    /// The smallest image mkfs accepts for this filesystem.
    pub fn min_size(&self) -> u64 {
        match self.fstype.as_str() {
            "xfs" => 300 * Bytes::MIB,
            "btrfs" => 256 * Bytes::MIB,
            _ => 16 * Bytes::MIB,
        }
    }

    /// The image size for a run whose files need `needed` bytes: a quarter more plus 256 MiB
    /// for metadata and journal, at least [`DEFAULT_MIN_SIZE`], rounded up to a MiB.
    pub fn default_size(&self, needed: u64) -> u64 {
        let size = needed
            .saturating_add(needed / 4)
            .saturating_add(256 * Bytes::MIB)
            .max(DEFAULT_MIN_SIZE)
            .max(self.min_size());
        size.div_ceil(Bytes::MIB) * Bytes::MIB
    }
}
