//! Today's drives as profiles, each calibrated on a published measurement that anyone can
//! repeat under `fsynclab exec` (the benchmark's own command), and checked against it in
//! BENCHMARKS.md: a consumer NVMe drive without power-loss protection, whose flush is what
//! a database's commit waits for; an enterprise drive with power-loss protection, whose
//! write is durable when acknowledged; and Apple's M1 drive, whose flush is slower still.
//!
//! Figures no primary source gives are marked assumed; a figure derived from a benchmark
//! says how. The sources were read on 2026-11-26.

use std::time::Duration;

use super::super::model::{DiskFigures, Mechanics};
use super::builtin::{NamedProfile, MB};
use crate::units::Bytes;

/// PCIe 3.0 x4: 8 GT/s x 4 lanes, 128b/130b coding.
const PCIE3_X4: u64 = 3940 * MB;

/// PCIe 4.0 x4: 16 GT/s x 4 lanes, 128b/130b coding.
const PCIE4_X4: u64 = 7880 * MB;

/// Samsung 990 Pro 2 TB (2022), volatile write cache, no power-loss protection.
fn nvme_consumer() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Solid {
            per_request: Duration::from_micros(17),
        },
        media_bytes_per_s: Some(6900 * MB),
        bus_bytes_per_s: Some(PCIE4_X4),
        cache_bytes: 64 * Bytes::MIB,
        flush_cost: Duration::from_micros(1600),
        ..DiskFigures::plain()
    }
}

/// Intel Optane SSD DC P4800X 375 GB (2017): no volatile cache, power-loss protected.
fn nvme_plp() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Solid {
            per_request: Duration::from_micros(10),
        },
        media_bytes_per_s: Some(2000 * MB),
        bus_bytes_per_s: Some(PCIE3_X4),
        ..DiskFigures::plain()
    }
}

/// The internal NVMe drive of an Apple M1 Mac under Linux (Asahi's apple-nvme driver).
fn apple_m1() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Solid {
            per_request: Duration::from_micros(17),
        },
        media_bytes_per_s: Some(2000 * MB),
        bus_bytes_per_s: Some(PCIE4_X4),
        cache_bytes: 64 * Bytes::MIB,
        flush_cost: Duration::from_micros(17_500),
        sector_bytes: 4096,
        ..DiskFigures::plain()
    }
}

/// Today's drives, in the order `list-devices` prints them.
pub(super) const TODAY: [NamedProfile; 3] = [
    NamedProfile {
        name: "nvme-consumer",
        summary: "Samsung 990 Pro 2 TB (2022), a consumer NVMe SSD without power-loss protection",
        figures: nvme_consumer,
        sources: &[
            (
                "write cache volatile (write back, FUA supported)",
                "Tanel Poder, \"Using Postgres pg_test_fsync tool for testing low latency writes\" (tanelpoder.com, 2025-05-27): the drive's queue/write_cache reads \"write back\"",
            ),
            (
                "flush 1.6 ms (derived)",
                "same post: pg_test_fsync on xfs, one 8 kB write + fdatasync: 608.573/s = 1643 us, a write (~20 us) and a cache flush; checked in BENCHMARKS.md",
            ),
            (
                "media rate 6900 MB/s (sequential write)",
                "Samsung 990 PRO data sheet (2022): 2 TB model, sequential write up to 6,900 MB/s",
            ),
            (
                "17 us per request (assumed)",
                "as the nvme profile: no QD1 write latency of the 990 Pro is published",
            ),
            (
                "write cache 64 MB (assumed)",
                "not published; the drive's DRAM mostly holds the mapping table",
            ),
            ("bus 7880 MB/s", "PCIe 4.0 x4: 16 GT/s x 4 lanes, 128b/130b coding"),
            (
                "not modelled: FUA writes",
                "the same post's open_datasync (O_DSYNC, FUA writes) made 249.578/s, slower than write + flush; the scratch loop device has no FUA, so O_DSYNC here costs a write and a flush",
            ),
        ],
    },
    NamedProfile {
        name: "nvme-plp",
        summary: "Intel Optane SSD DC P4800X 375 GB (2017): power-loss protected, a write is durable when acknowledged",
        figures: nvme_plp,
        sources: &[
            (
                "no volatile cache (write-through): a flush has nothing to wait for, a power cut loses nothing acknowledged",
                "Optane writes go to the 3D XPoint media, with power-loss protection; Tanel Poder's listing (2025) shows an Intel Optane SSDPED1D280GA and a Micron 7400 with write cache \"write through\"",
            ),
            (
                "10 us per request",
                "Intel DC P4800X specifications, as tabled by AnandTech (2017): typical latency (read/write) under 10 us",
            ),
            (
                "published: fsync 20000/s (0.050 ms) on ext4",
                "Percona, \"Update on fsync Performance\" (2019-09-19): a write + fsync loop on the P4800X; 21200/s with O_DIRECT; checked in BENCHMARKS.md",
            ),
            (
                "FLOOR: the emulation is slower than this drive",
                "a 4 KiB write + fdatasync through the loop device and FUSE costs 170-250 us here even on a device that costs nothing (pg_test_fsync on ext4 over --device cache=0: 4063 fdatasyncs/s, median of 3 rounds, 2026-11-26), 4-5x the P4800X's 50 us: on this profile a sync call measures fsynclab's path, not the drive (BENCHMARKS.md)",
            ),
            (
                "media rate 2000 MB/s (assumed)",
                "Intel's rating of the 375 GB model's sequential write, not checked against a primary source",
            ),
            ("bus 3940 MB/s", "PCIe 3.0 x4: 8 GT/s x 4 lanes, 128b/130b coding"),
        ],
    },
    NamedProfile {
        name: "apple-m1",
        summary: "Apple M1 Mac's internal NVMe SSD under Linux: a cache flush costs 17-18 ms",
        figures: apple_m1,
        sources: &[
            (
                "flush 17.5 ms",
                "Jens Axboe, \"nvme-apple: defer cache flushes by a specified amount\" (Asahi Linux kernel tree, 2022-02-16): flushes take 17-18 msec, so random writes with a flush each are bound at 55-60 IOPS",
            ),
            (
                "write cache volatile",
                "Hector Martin (@marcan42, 2022-02-17): macOS's fsync() does not flush the drive's cache; with F_FULLFSYNC an M1 MacBook Air made 46 flushed writes/s",
            ),
            (
                "sector 4 KiB",
                "the drive's logical block size under Linux (Asahi's apple-nvme driver uses 4 KiB blocks)",
            ),
            (
                "media rate 2000 MB/s, 17 us per request, cache 64 MB (assumed)",
                "no figure of the M1 drive's media is published by Apple; these do not limit a flushed write",
            ),
            ("bus 7880 MB/s (assumed)", "PCIe 4.0 x4, as the nvme-consumer profile"),
        ],
    },
];
