//! The named profiles (`--device hdd-5400`, ...): drives of the seeds' era (2008–2010) and
//! one consumer NVMe of 2016-2018 here, today's drives in `today.rs`. A figure is either read from a datasheet or review named beside it,
//! derived from such figures (the derivation is written out), or an assumption, marked as
//! one; `fsynclab list-devices` prints each with its source.

use std::time::Duration;

use super::super::model::{DiskFigures, Mechanics, Spindle};
use crate::units::Bytes;

/// A named profile: its figures and the source of each.
pub(super) struct NamedProfile {
    pub(super) name: &'static str,
    /// What drive it stands for.
    pub(super) summary: &'static str,
    pub(super) figures: fn() -> DiskFigures,
    /// (figure, where it comes from), one per line of `fsynclab list-devices`.
    pub(super) sources: &'static [(&'static str, &'static str)],
}

pub(super) const MB: u64 = 1_000_000;

/// Write cache segments of the hard disks: the separate writes the cache holds at most.
/// Drives of the era split the buffer into a fixed number of segments, 32 by default in
/// Seagate's desktop mode, and SATA's native command queue holds 32 commands.
const SEGMENTS: u32 = 32;

/// SATA 3.0 Gb/s: 8b/10b coding leaves 300 MB/s of payload.
const SATA_3G: u64 = 300 * MB;

/// The laptop drive's spindle and seek curve: also where a rotating disk built from keys
/// starts.
pub(super) const HDD_5400_SPINDLE: Spindle = Spindle {
    rpm: 5400,
    settle: Duration::from_micros(1100),
    full_stroke: Duration::from_millis(21),
    capacity_bytes: 320_000 * MB,
};

fn hdd_5400() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Rotating(HDD_5400_SPINDLE),
        media_bytes_per_s: Some(70 * MB),
        bus_bytes_per_s: Some(SATA_3G),
        cache_bytes: 8 * Bytes::MIB,
        cache_segments: SEGMENTS,
        ..DiskFigures::plain()
    }
}

fn hdd_7200() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Rotating(Spindle {
            rpm: 7200,
            settle: Duration::from_micros(1100),
            full_stroke: Duration::from_micros(16_850),
            capacity_bytes: 1_000_000 * MB,
        }),
        media_bytes_per_s: Some(138 * MB),
        bus_bytes_per_s: Some(SATA_3G),
        cache_bytes: 32 * Bytes::MIB,
        cache_segments: SEGMENTS,
        ..DiskFigures::plain()
    }
}

fn ssd_sata() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Solid {
            per_request: Duration::from_micros(75),
        },
        media_bytes_per_s: Some(100 * MB),
        bus_bytes_per_s: Some(SATA_3G),
        cache_bytes: 32 * Bytes::MIB,
        flush_cost: Duration::from_millis(2),
        ..DiskFigures::plain()
    }
}

fn nvme() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Solid {
            per_request: Duration::from_micros(17),
        },
        media_bytes_per_s: Some(1500 * MB),
        bus_bytes_per_s: Some(3940 * MB),
        cache_bytes: 64 * Bytes::MIB,
        flush_cost: Duration::from_micros(500),
        ..DiskFigures::plain()
    }
}

fn san() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Solid {
            per_request: Duration::from_micros(500),
        },
        media_bytes_per_s: Some(200 * MB),
        bus_bytes_per_s: Some(400 * MB),
        command_latency: Duration::from_micros(250),
        cache_bytes: 2 * Bytes::GIB,
        cache_durable: true,
        ..DiskFigures::plain()
    }
}

/// The drives of the seeds' era, in the order `list-devices` prints them.
pub(super) const ERA: [NamedProfile; 5] = [
    NamedProfile {
        name: "hdd-5400",
        summary: "2.5-inch 5400 rpm laptop drive of 2008-2009 (seed 000's laptop)",
        figures: hdd_5400,
        sources: &[
            (
                "5400 rpm: 11.1 ms a rotation, 5.5 ms average latency",
                "Hitachi Travelstar 5K320 OEM specification rev. 1.5 (2010), table 8",
            ),
            (
                "seek 1.1 ms single-track, 21 ms full stroke (write)",
                "same, tables 7 and 6; its average write seek is 13 ms, the curve gives 11.7 ms",
            ),
            ("capacity 320 GB", "the same drive's largest model, HTS543232L9A300"),
            (
                "media rate 70 MB/s",
                "Tom's Hardware, \"2.5\" HDD Galore\" (2008): the first 320 GB 5400 rpm notebook drive past 70 MB/s",
            ),
            (
                "write cache 8 MB, volatile",
                "Tom's Hardware (2008): the 320 GB 5400 rpm drives of 2008 all had 8 MB",
            ),
            (
                "32 cache segments",
                "assumed from the era's drives: a buffer split into a fixed number of segments, 32 by default in Seagate's desktop mode (iXBT's study of cache segmentation), and SATA NCQ's queue of 32 commands",
            ),
            ("bus 300 MB/s", "SATA 3.0 Gb/s (5K320 specification, section 1)"),
        ],
    },
    NamedProfile {
        name: "hdd-7200",
        summary: "3.5-inch 7200 rpm SATA desktop drive of 2010",
        figures: hdd_7200,
        sources: &[
            ("7200 rpm: 8.3 ms a rotation", "spindle speed"),
            (
                "seek 1.1 ms single-track (assumed), 16.85 ms full stroke (derived)",
                "Hitachi Deskstar 7K1000.C specification (2010), table 9: average write seek 9.5 ms; \
                 full stroke = 1.1 + (9.5 - 1.1) * 15/8 puts the curve's average there; single-track as Hitachi's 5K320/7K320",
            ),
            ("capacity 1 TB", "Deskstar 7K1000.C, 2-disk model"),
            (
                "media rate 138 MB/s",
                "Seagate Barracuda XT (2010) datasheet: sustained data rate at the outer diameter",
            ),
            ("write cache 32 MB, volatile", "Deskstar 7K1000.C HDS721010CLA332 (32 MB buffer)"),
            (
                "32 cache segments",
                "assumed from the era's drives: a buffer split into a fixed number of segments, 32 by default in Seagate's desktop mode (iXBT's study of cache segmentation), and SATA NCQ's queue of 32 commands",
            ),
            ("bus 300 MB/s", "SATA 3.0 Gb/s"),
        ],
    },
    NamedProfile {
        name: "ssd-sata",
        summary: "Intel X25-M G2 160 GB SATA SSD (2009), no power-safe write cache",
        figures: ssd_sata,
        sources: &[
            (
                "media rate 100 MB/s (sequential write)",
                "Intel X25-M G2 specifications as tabled by AnandTech (2010)",
            ),
            (
                "75 us per request (derived)",
                "same table: 8.6K random 4 KB write IOPS = 116 us a write, less 41 us of transfer at 100 MB/s",
            ),
            (
                "write cache 32 MB, volatile (assumed)",
                "the drive's DRAM; AnandTech's table: power-safe write cache: no",
            ),
            (
                "flush 2 ms (assumed)",
                "no datasheet gives it; the previous release's estimate for SATA SSDs without power-loss protection",
            ),
            ("bus 300 MB/s", "SATA 3.0 Gb/s"),
        ],
    },
    NamedProfile {
        name: "nvme",
        summary: "consumer NVMe SSD (Samsung 960/970 EVO 250 GB class), no power-loss protection",
        figures: nvme,
        sources: &[
            (
                "media rate 1500 MB/s (sequential write)",
                "Samsung 970 EVO 250 GB (2018) rated write, as listed by TheFPSReview; 960 EVO 250 GB: the same",
            ),
            (
                "17 us per request (derived)",
                "960 EVO specifications (HotHardware, 2016): 50K random 4 KB write IOPS at QD1 = 20 us, less 2.7 us of transfer",
            ),
            (
                "write cache 64 MB, volatile (assumed)",
                "not published; the drive's 512 MB of DRAM mostly holds the mapping table",
            ),
            (
                "flush 500 us (assumed)",
                "no datasheet gives it; the previous release's estimate for NVMe without power-loss protection",
            ),
            ("bus 3940 MB/s", "PCIe 3.0 x4: 8 GT/s x 4 lanes, 128b/130b coding"),
        ],
    },
    NamedProfile {
        name: "san",
        summary: "seed 001's SAN: a 2010 Fibre Channel array with a battery-backed write cache",
        figures: san,
        sources: &[
            ("bus 400 MB/s", "4 Gb/s Fibre Channel, 8b/10b coding"),
            (
                "250 us command latency (assumed)",
                "fabric and controller round trip; seed 001's SAN wrote a 64 KB file with fsync in 1.8 ms (35611 KB/s)",
            ),
            (
                "write cache 2 GB, battery-backed (assumed)",
                "mid-range arrays of 2010 mirrored GBs of write cache; durable, so a flush waits for nothing",
            ),
            (
                "back end 200 MB/s, 500 us per request (assumed)",
                "a RAID group behind the cache; only felt once 2 GB are waiting",
            ),
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::super::parse;

    #[test]
    fn named_profiles_parse_with_their_figures() {
        let p = parse("hdd-5400").unwrap();
        assert!(p.rotational());
        assert_eq!(p.figures.cache_bytes, 8 << 20);
        assert_eq!(p.figures.media_bytes_per_s, Some(70_000_000));
        let p = parse("nvme").unwrap();
        assert!(!p.rotational());
        for named in super::super::named() {
            let p = parse(named.name).unwrap();
            assert_eq!(p.figures, (named.figures)(), "{}", named.name);
            assert!(!named.sources.is_empty(), "{} cites its figures", named.name);
        }
    }
}
