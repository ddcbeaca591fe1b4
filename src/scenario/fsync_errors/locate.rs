//! Where a file's block is written on the disk, so that the emulated disk fails exactly
//! that write, as the published experiments fail one data block (Rebello et al. inject
//! the fault on a chosen block; xfstests' dm-error does it for a range):
//!
//! - ext4 and XFS overwrite an allocated block in place: `FS_IOC_FIEMAP` gives the byte
//!   on the device where it lives (Documentation/filesystems/fiemap.rst).
//! - Btrfs writes every change to a new place (copy on write), so the block of the new data
//!   is not known before it is written: the fault covers the data chunks instead, read from
//!   the chunk tree with `BTRFS_IOC_TREE_SEARCH` (include/uapi/linux/btrfs.h,
//!   btrfs_tree.h), less the superblock copies that lie inside them. Metadata chunks stay
//!   healthy, so a failure is one of data, as on the other filesystems.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// A byte range of the disk: `(offset, length)`.
pub(super) type Range = (u64, u64);

// --- FIEMAP ---

/// `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// Sync the file before mapping it.
const FIEMAP_FLAG_SYNC: u32 = 0x1;
/// Extent flags under which `fe_physical` is not where the block's bytes lie on the disk:
/// unknown location, delayed allocation, encoded (compressed), inline in metadata, not
/// block-aligned.
const FIEMAP_EXTENT_NOT_PLAIN: u32 = 0x2 | 0x4 | 0x8 | 0x200 | 0x100;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

const EXTENTS: usize = 8;

#[repr(C)]
#[derive(Default)]
struct Fiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [FiemapExtent; EXTENTS],
}

/// The byte on the disk where the `len` bytes of `file` at `offset` lie, when they lie
/// there in one piece, as they are (an error says why not).
pub(super) fn block_on_disk(file: &File, offset: u64, len: u64) -> io::Result<u64> {
    let mut map = Fiemap {
        fm_start: offset,
        fm_length: len,
        fm_flags: FIEMAP_FLAG_SYNC,
        fm_extent_count: EXTENTS as u32,
        ..Default::default()
    };
    // SAFETY: `map` is a `struct fiemap` followed by room for `fm_extent_count` extents, as
    // the ioctl expects; it lives across the call.
    let ret = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut map as *mut Fiemap) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    let mapped = (map.fm_mapped_extents as usize).min(EXTENTS);
    let extent = map.fm_extents[..mapped]
        .iter()
        .find(|e| e.fe_logical <= offset && offset + len <= e.fe_logical + e.fe_length)
        .ok_or_else(|| io::Error::other(format!("no extent holds bytes {offset}..{}", offset + len)))?;
    if extent.fe_flags & FIEMAP_EXTENT_NOT_PLAIN != 0 {
        return Err(io::Error::other(format!(
            "the extent's place on the disk is not plain (FIEMAP flags {:#x})",
            extent.fe_flags
        )));
    }
    Ok(extent.fe_physical + (offset - extent.fe_logical))
}

// --- Btrfs chunk tree ---

/// `_IOWR(0x94, 17, struct btrfs_ioctl_search_args)`, a 4096-byte argument.
const BTRFS_IOC_TREE_SEARCH: libc::c_ulong = 0xD000_9411;
const BTRFS_CHUNK_TREE_OBJECTID: u64 = 3;
const BTRFS_FIRST_CHUNK_TREE_OBJECTID: u64 = 256;
const BTRFS_CHUNK_ITEM_KEY: u32 = 228;
const BTRFS_BLOCK_GROUP_DATA: u64 = 1;
const BTRFS_BLOCK_GROUP_METADATA: u64 = 4;
/// Where btrfs keeps its superblock and its copies, 4 KiB each (fs/btrfs/disk-io.h).
const SUPERBLOCKS: [u64; 3] = [64 << 10, 64 << 20, 256 << 30];
const SUPERBLOCK_BYTES: u64 = 4096;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SearchKey {
    tree_id: u64,
    min_objectid: u64,
    max_objectid: u64,
    min_offset: u64,
    max_offset: u64,
    min_transid: u64,
    max_transid: u64,
    min_type: u32,
    max_type: u32,
    nr_items: u32,
    unused: u32,
    unused1: u64,
    unused2: u64,
    unused3: u64,
    unused4: u64,
}

const SEARCH_BUF: usize = 4096 - std::mem::size_of::<SearchKey>();

#[repr(C)]
struct SearchArgs {
    key: SearchKey,
    buf: [u8; SEARCH_BUF],
}

/// The byte ranges of the disk that hold data chunks of the Btrfs mounted at `dir`, less
/// its superblock copies.
pub(super) fn btrfs_data_ranges(dir: &File) -> io::Result<Vec<Range>> {
    let mut stripes = Vec::new();
    let mut from = 0u64;
    loop {
        let mut args = SearchArgs {
            key: SearchKey {
                tree_id: BTRFS_CHUNK_TREE_OBJECTID,
                min_objectid: BTRFS_FIRST_CHUNK_TREE_OBJECTID,
                max_objectid: BTRFS_FIRST_CHUNK_TREE_OBJECTID,
                min_offset: from,
                max_offset: u64::MAX,
                max_transid: u64::MAX,
                min_type: BTRFS_CHUNK_ITEM_KEY,
                max_type: BTRFS_CHUNK_ITEM_KEY,
                nr_items: 4096,
                ..Default::default()
            },
            buf: [0; SEARCH_BUF],
        };
        // SAFETY: `args` is a `struct btrfs_ioctl_search_args` (a 104-byte key and a buffer
        // making 4096 bytes), as the ioctl expects; it lives across the call.
        let ret = unsafe {
            libc::ioctl(
                dir.as_raw_fd(),
                BTRFS_IOC_TREE_SEARCH as _,
                &mut args as *mut SearchArgs,
            )
        };
        if ret < 0 {
            return Err(io::Error::last_os_error());
        }
        let (items, last) = chunk_items(&args.buf, args.key.nr_items)?;
        if items.is_empty() {
            break;
        }
        stripes.extend(items);
        match last.checked_add(1) {
            Some(next) => from = next,
            None => break,
        }
    }
    if stripes.iter().any(|s| s.mixed) {
        return Err(io::Error::other(
            "this Btrfs mixes data and metadata in its chunks (mkfs --mixed), so data cannot fail alone",
        ));
    }
    let data: Vec<Range> = stripes.into_iter().filter(|s| s.data).map(|s| s.range).collect();
    Ok(without_superblocks(&data))
}

/// One stripe of a chunk: where it lies on the disk, and what the chunk holds.
#[derive(Debug, PartialEq)]
struct Stripe {
    range: Range,
    data: bool,
    /// Data and metadata in one chunk.
    mixed: bool,
}

/// Reads `nr` search results (`struct btrfs_ioctl_search_header` followed by a `struct
/// btrfs_chunk`, little-endian) from `buf`: every stripe, and the key offset of the last item.
fn chunk_items(buf: &[u8], nr: u32) -> io::Result<(Vec<Stripe>, u64)> {
    let bad = || io::Error::other("a chunk tree search result this fsynclab cannot read");
    let u64_at = |b: &[u8], at: usize| -> io::Result<u64> {
        b.get(at..at + 8)
            .and_then(|s| s.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or_else(bad)
    };
    let u32_at = |b: &[u8], at: usize| -> io::Result<u32> {
        b.get(at..at + 4)
            .and_then(|s| s.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or_else(bad)
    };
    let mut stripes = Vec::new();
    let (mut at, mut last) = (0usize, 0u64);
    for _ in 0..nr {
        // The header: transid, objectid, offset (the chunk's logical address), type, len.
        last = u64_at(buf, at + 16)?;
        let kind = u32_at(buf, at + 24)?;
        let len = u32_at(buf, at + 28)? as usize;
        let item = buf.get(at + 32..at + 32 + len).ok_or_else(bad)?;
        at += 32 + len;
        if kind != BTRFS_CHUNK_ITEM_KEY {
            continue;
        }
        // struct btrfs_chunk: length, owner, stripe_len, type, io_align, io_width,
        // sector_size, num_stripes (u16 at 44), sub_stripes, then 32-byte stripes
        // (devid, offset, dev_uuid).
        let length = u64_at(item, 0)?;
        let flags = u64_at(item, 24)?;
        let num_stripes = item
            .get(44..46)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or_else(bad)?;
        let data = flags & BTRFS_BLOCK_GROUP_DATA != 0;
        let mixed = data && flags & BTRFS_BLOCK_GROUP_METADATA != 0;
        for s in 0..usize::from(num_stripes) {
            let offset = u64_at(item, 48 + s * 32 + 8)?;
            stripes.push(Stripe {
                range: (offset, length),
                data,
                mixed,
            });
        }
    }
    Ok((stripes, last))
}

/// `ranges` with the superblock copies cut out of them.
fn without_superblocks(ranges: &[Range]) -> Vec<Range> {
    let mut out = Vec::new();
    for &(offset, len) in ranges {
        let mut pieces = vec![(offset, offset + len)];
        for sb in SUPERBLOCKS {
            pieces = pieces
                .into_iter()
                .flat_map(|(a, b)| {
                    if sb + SUPERBLOCK_BYTES <= a || sb >= b {
                        vec![(a, b)]
                    } else {
                        [(a, sb), (sb + SUPERBLOCK_BYTES, b)]
                            .into_iter()
                            .filter(|(x, y)| y > x)
                            .collect()
                    }
                })
                .collect();
        }
        out.extend(pieces.into_iter().map(|(a, b)| (a, b - a)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ioctl_arguments_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<FiemapExtent>(), 56);
        assert_eq!(std::mem::size_of::<Fiemap>(), 32 + 56 * EXTENTS);
        assert_eq!(std::mem::size_of::<SearchKey>(), 104);
        assert_eq!(std::mem::size_of::<SearchArgs>(), 4096);
    }

    /// One search result: header, then a chunk with `stripes` at the given offsets.
    fn chunk(logical: u64, length: u64, flags: u64, stripes: &[u64]) -> Vec<u8> {
        let mut item = Vec::new();
        for v in [length, 2, 65536, flags] {
            item.extend(v.to_le_bytes());
        }
        for v in [65536u32, 65536, 4096] {
            item.extend(v.to_le_bytes());
        }
        item.extend((stripes.len() as u16).to_le_bytes());
        item.extend(1u16.to_le_bytes());
        for &s in stripes {
            item.extend(1u64.to_le_bytes());
            item.extend(s.to_le_bytes());
            item.extend([0u8; 16]);
        }
        let mut out = Vec::new();
        for v in [7u64, BTRFS_FIRST_CHUNK_TREE_OBJECTID, logical] {
            out.extend(v.to_le_bytes());
        }
        out.extend(BTRFS_CHUNK_ITEM_KEY.to_le_bytes());
        out.extend((item.len() as u32).to_le_bytes());
        out.extend(item);
        out
    }

    #[test]
    fn chunk_items_give_every_stripe_and_what_it_holds() {
        // As `btrfs inspect-internal dump-tree -t chunk` showed a fresh 300 MiB filesystem:
        // DATA|single at 13631488, SYSTEM|DUP and METADATA|DUP with two stripes each.
        let mut buf = chunk(13631488, 8 << 20, 1, &[13631488]);
        buf.extend(chunk(22020096, 8 << 20, 2 | 32, &[22020096, 30408704]));
        buf.extend(chunk(30408704, 32 << 20, 4 | 32, &[38797312, 72351744]));
        let (stripes, last) = chunk_items(&buf, 3).unwrap();
        assert_eq!(last, 30408704);
        let data: Vec<Range> = stripes.iter().filter(|s| s.data).map(|s| s.range).collect();
        assert_eq!(data, [(13631488, 8 << 20)]);
        assert_eq!(stripes.len(), 5);
        assert!(stripes.iter().all(|s| !s.mixed));
        let (mixed, _) = chunk_items(&chunk(0, 1 << 20, 1 | 4, &[1 << 20]), 1).unwrap();
        assert!(mixed[0].mixed);
        assert!(chunk_items(&buf[..40], 1).is_err(), "a truncated result is refused");
    }

    #[test]
    fn superblock_copies_are_cut_out_of_the_ranges() {
        let mib = 1u64 << 20;
        // A data chunk over the copy at 64 MiB is split around it; one elsewhere is whole.
        assert_eq!(
            without_superblocks(&[(60 * mib, 8 * mib), (100 * mib, mib)]),
            [(60 * mib, 4 * mib), (64 * mib + 4096, 4 * mib - 4096), (100 * mib, mib)]
        );
        // A range that is only the copy is gone.
        assert_eq!(without_superblocks(&[(64 << 10, 4096)]), []);
    }
}
