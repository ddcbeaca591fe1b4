//! The emulated disks' figures: the named profiles, each figure with where it comes from,
//! and the `KEY=VALUE` syntax that builds or adjusts one (`--device hdd-5400,cache=0`,
//! `--device flush=20ms,write=80M`).
//!
//! The named profiles are drives of the seeds' era (2008–2010) and one of today's: a
//! figure is either read from a datasheet or review named beside it, derived from such
//! figures (the derivation is written out), or an assumption, marked as one.

use std::fmt::Write as _;
use std::time::Duration;

use super::model::{rotation_ns, DiskFigures, Mechanics};
use crate::units::{format_duration, human_size, parse_duration, parse_size, Bytes};

/// A named profile: its figures and the source of each.
pub struct NamedProfile {
    pub name: &'static str,
    /// What drive it stands for.
    pub summary: &'static str,
    pub figures: fn() -> DiskFigures,
    /// (figure, where it comes from), one per line of `fsynclab list-devices`.
    pub sources: &'static [(&'static str, &'static str)],
}

const MB: u64 = 1_000_000;

/// SATA 3.0 Gb/s: 8b/10b coding leaves 300 MB/s of payload.
const SATA_3G: u64 = 300 * MB;

fn hdd_5400() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Rotating {
            rpm: 5400,
            settle: Duration::from_micros(1100),
            full_stroke: Duration::from_millis(21),
            capacity_bytes: 320_000 * MB,
        },
        media_bytes_per_s: Some(70 * MB),
        bus_bytes_per_s: Some(SATA_3G),
        command_latency: Duration::ZERO,
        cache_bytes: 8 * Bytes::MIB,
        cache_durable: false,
        flush_cost: Duration::ZERO,
    }
}

fn hdd_7200() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Rotating {
            rpm: 7200,
            settle: Duration::from_micros(1100),
            full_stroke: Duration::from_micros(16_850),
            capacity_bytes: 1_000_000 * MB,
        },
        media_bytes_per_s: Some(138 * MB),
        bus_bytes_per_s: Some(SATA_3G),
        command_latency: Duration::ZERO,
        cache_bytes: 32 * Bytes::MIB,
        cache_durable: false,
        flush_cost: Duration::ZERO,
    }
}

fn ssd_sata() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Solid {
            per_request: Duration::from_micros(75),
        },
        media_bytes_per_s: Some(100 * MB),
        bus_bytes_per_s: Some(SATA_3G),
        command_latency: Duration::ZERO,
        cache_bytes: 32 * Bytes::MIB,
        cache_durable: false,
        flush_cost: Duration::from_millis(2),
    }
}

fn nvme() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Solid {
            per_request: Duration::from_micros(17),
        },
        media_bytes_per_s: Some(1500 * MB),
        bus_bytes_per_s: Some(3940 * MB),
        command_latency: Duration::ZERO,
        cache_bytes: 64 * Bytes::MIB,
        cache_durable: false,
        flush_cost: Duration::from_micros(500),
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
        flush_cost: Duration::ZERO,
    }
}

/// The profiles `--device NAME` knows, in the order `list-devices` prints them.
pub const NAMED: [NamedProfile; 5] = [
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

/// A profile's figures with its name as typed.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskProfile {
    pub name: String,
    pub figures: DiskFigures,
}

impl DiskProfile {
    /// Whether the loop device is marked rotational (schedulers and merging heuristics
    /// take it into account).
    pub fn rotational(&self) -> bool {
        matches!(self.figures.mechanics, Mechanics::Rotating { .. })
    }
}

/// The figures `key=value` pairs start from when no named profile comes first: a disk with
/// no positioning, no cache, unlimited bandwidth and free flushes (`flush=20ms` alone is
/// the previous release's fixed flush cost).
fn plain() -> DiskFigures {
    DiskFigures {
        mechanics: Mechanics::Solid {
            per_request: Duration::ZERO,
        },
        media_bytes_per_s: None,
        bus_bytes_per_s: None,
        command_latency: Duration::ZERO,
        cache_bytes: 0,
        cache_durable: false,
        flush_cost: Duration::ZERO,
    }
}

/// The keys `--device` takes, with what each sets.
pub const KEYS: [(&str, &str); 12] = [
    ("cache=SIZE", "volatile write cache (0: write-through)"),
    ("nvcache=SIZE", "battery-backed write cache (flushes wait for nothing)"),
    ("rpm=N", "rotating disk at N rpm (needs rate=)"),
    ("settle=DURATION", "single-track seek"),
    ("seek=DURATION", "full-stroke seek"),
    ("capacity=SIZE", "the drive the seek distance is a fraction of"),
    ("request=DURATION", "solid-state cost per media request (no seeks)"),
    ("rate=RATE", "media transfer rate per second (write=RATE is the same)"),
    ("bus=RATE", "host interface rate per second"),
    ("latency=DURATION", "command latency added to every request"),
    ("flush=DURATION", "fixed cost of every flush once the cache is drained"),
    ("write=RATE", "alias of rate= (the previous release's syntax)"),
];

/// Parses `NAME[,KEY=VALUE...]` or `KEY=VALUE[,...]`; `Err` says what is wrong with one
/// part (the caller adds what is valid).
pub fn parse(text: &str) -> Result<DiskProfile, String> {
    let mut parts = text.split(',').map(str::trim).peekable();
    let mut figures = match parts.peek() {
        Some(first) if !first.contains('=') => {
            let named = NAMED
                .iter()
                .find(|p| p.name == *first)
                .ok_or_else(|| format!("unknown profile '{first}'"))?;
            parts.next();
            (named.figures)()
        }
        _ => plain(),
    };
    let mut rpm_set = false;
    for part in parts {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' is not KEY=VALUE"))?;
        let size = || {
            parse_size(value)
                .map(Bytes::get)
                .map_err(|e| format!("{key}={value}: {e}"))
        };
        let rate = || -> Result<u64, String> {
            let v = value.strip_suffix("/s").unwrap_or(value);
            let r = parse_size(v).map_err(|e| format!("{key}={value}: {e} per second"))?;
            if r.get() == 0 {
                return Err(format!("{key}=0 would never finish a transfer"));
            }
            Ok(r.get())
        };
        let duration = || parse_duration(value).map_err(|e| format!("{key}={value}: {e}"));
        match key {
            "cache" => {
                figures.cache_bytes = size()?;
                figures.cache_durable = false;
            }
            "nvcache" => {
                figures.cache_bytes = size()?;
                figures.cache_durable = true;
            }
            "rate" | "write" => figures.media_bytes_per_s = Some(rate()?),
            "bus" => figures.bus_bytes_per_s = Some(rate()?),
            "latency" => figures.command_latency = duration()?,
            "flush" => figures.flush_cost = duration()?,
            "request" => {
                figures.mechanics = Mechanics::Solid {
                    per_request: duration()?,
                }
            }
            "rpm" | "settle" | "seek" | "capacity" => {
                let (mut rpm, mut settle, mut full_stroke, mut capacity_bytes) = match &figures.mechanics {
                    Mechanics::Rotating {
                        rpm,
                        settle,
                        full_stroke,
                        capacity_bytes,
                    } => (*rpm, *settle, *full_stroke, *capacity_bytes),
                    // A rotating disk built from keys starts from the laptop drive's seek curve.
                    Mechanics::Solid { .. } => match hdd_5400().mechanics {
                        Mechanics::Rotating {
                            rpm,
                            settle,
                            full_stroke,
                            capacity_bytes,
                        } => (rpm, settle, full_stroke, capacity_bytes),
                        Mechanics::Solid { .. } => unreachable!("hdd-5400 rotates"),
                    },
                };
                match key {
                    "rpm" => {
                        rpm = value
                            .parse()
                            .ok()
                            .filter(|r: &u32| (1..=100_000).contains(r))
                            .ok_or_else(|| format!("rpm={value}: expected revolutions per minute like 5400"))?;
                        rpm_set = true;
                    }
                    "settle" => settle = duration()?,
                    "seek" => full_stroke = duration()?,
                    _ => {
                        capacity_bytes = size()?;
                        if capacity_bytes == 0 {
                            return Err("capacity=0: a disk needs some capacity".into());
                        }
                    }
                }
                if !rpm_set && matches!(figures.mechanics, Mechanics::Solid { .. }) && key != "rpm" {
                    return Err(format!("{key}= applies to a rotating disk: give rpm= first"));
                }
                figures.mechanics = Mechanics::Rotating {
                    rpm,
                    settle,
                    full_stroke,
                    capacity_bytes,
                };
            }
            _ => return Err(format!("unknown key '{key}'")),
        }
    }
    if let Mechanics::Rotating {
        settle, full_stroke, ..
    } = &figures.mechanics
    {
        if figures.media_bytes_per_s.is_none() {
            return Err("a rotating disk needs rate= (its media transfer rate)".into());
        }
        if settle > full_stroke {
            return Err(format!(
                "settle={} is longer than the full-stroke seek={}",
                format_duration(*settle),
                format_duration(*full_stroke)
            ));
        }
    }
    Ok(DiskProfile {
        name: text.trim().to_string(),
        figures,
    })
}

/// `70 MB/s`: decimal, as datasheets print rates.
fn rate_text(rate: Option<u64>) -> String {
    match rate {
        None => "unlimited".into(),
        Some(r) if r % MB == 0 => format!("{} MB/s", r / MB),
        Some(r) => format!("{:.1} MB/s", r as f64 / MB as f64),
    }
}

fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    if v >= 1.0 {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
            + " ms"
    } else {
        format!("{:.0} us", d.as_secs_f64() * 1e6)
    }
}

/// One line of figures: `5400 rpm, seek 1.1-21 ms (average 11.7 ms) over 320 GB, ...`.
pub fn describe(f: &DiskFigures) -> String {
    let mut out = match &f.mechanics {
        Mechanics::Rotating {
            rpm,
            settle,
            full_stroke,
            capacity_bytes,
        } => format!(
            "{rpm} rpm ({} a rotation), seek {} to {} (average {}) over {} GB",
            ms(Duration::from_nanos(rotation_ns(*rpm))),
            ms(*settle),
            ms(*full_stroke),
            f.average_seek().map(ms).unwrap_or_default(),
            capacity_bytes / 1_000_000_000
        ),
        Mechanics::Solid { per_request } => format!("no seeks, {} per request", ms(*per_request)),
    };
    let _ = write!(out, ", media {}", rate_text(f.media_bytes_per_s));
    let _ = write!(
        out,
        ", cache {}",
        match (f.cache_bytes, f.cache_durable) {
            (0, _) => "none (write-through)".to_string(),
            (b, false) => format!("{} volatile", human_size(b)),
            (b, true) => format!("{} battery-backed", human_size(b)),
        }
    );
    let _ = write!(out, ", bus {}", rate_text(f.bus_bytes_per_s));
    if !f.command_latency.is_zero() {
        let _ = write!(out, ", latency {}", ms(f.command_latency));
    }
    if !f.flush_cost.is_zero() {
        let _ = write!(out, ", flush {}", ms(f.flush_cost));
    }
    out
}

/// What `fsynclab list-devices` and `--device help` print: every profile with its
/// figures and their sources, the keys, and the daemon's ceiling.
pub fn listing() -> String {
    let mut out = String::from(
        "Device profiles (--device PROFILE[,KEY=VALUE...] or --device KEY=VALUE,...):\n\n\
         host      the image is a file on the host filesystem: flushes cost what the host disk charges\n\
         ram       the image is on a private tmpfs: flushes cost nothing (the lower bound)\n\n",
    );
    for p in &NAMED {
        let f = (p.figures)();
        let _ = writeln!(out, "{:<9} {}", p.name, p.summary);
        let _ = writeln!(out, "          {}", describe(&f));
        for (figure, source) in p.sources {
            let _ = writeln!(out, "          - {figure}: {source}");
        }
        out.push('\n');
    }
    out.push_str("Keys (after a profile name to change it, or alone from a seekless, cacheless disk):\n");
    for (key, what) in KEYS {
        let _ = writeln!(out, "  {key:<17} {what}");
    }
    out.push_str(
        "\nExamples: hdd-5400,cache=0 (no write cache)   flush=20ms,write=80M (fixed flush cost, paced writes)\n\
         \x20         rpm=7200,rate=120M,seek=15ms,cache=16M\n\n",
    );
    out.push_str(super::fuse::CEILING_NOTE);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_profiles_parse_with_their_figures() {
        let p = parse("hdd-5400").unwrap();
        assert!(p.rotational());
        assert_eq!(p.figures.cache_bytes, 8 << 20);
        assert_eq!(p.figures.media_bytes_per_s, Some(70_000_000));
        let p = parse("nvme").unwrap();
        assert!(!p.rotational());
        for named in &NAMED {
            let p = parse(named.name).unwrap();
            assert_eq!(p.figures, (named.figures)(), "{}", named.name);
            assert!(!named.sources.is_empty(), "{} cites its figures", named.name);
        }
    }

    #[test]
    fn keys_adjust_a_named_profile() {
        let p = parse("hdd-5400,cache=0").unwrap();
        assert_eq!(p.figures.cache_bytes, 0);
        assert!(p.rotational());
        let p = parse("hdd-7200, nvcache=1G ,latency=100us").unwrap();
        assert!(p.figures.cache_durable);
        assert_eq!(p.figures.cache_bytes, 1 << 30);
        assert_eq!(p.figures.command_latency, Duration::from_micros(100));
        let p = parse("rpm=10000,rate=150M,seek=9ms,settle=500us,capacity=300G").unwrap();
        let Mechanics::Rotating {
            rpm,
            settle,
            full_stroke,
            capacity_bytes,
        } = p.figures.mechanics
        else {
            panic!("rpm= makes a rotating disk")
        };
        assert_eq!(
            (rpm, settle, full_stroke, capacity_bytes),
            (10000, Duration::from_micros(500), Duration::from_millis(9), 300 << 30)
        );
    }

    #[test]
    fn the_previous_release_syntax_keeps_its_meaning() {
        let p = parse("flush=20ms,write=80M").unwrap();
        assert_eq!(p.figures.flush_cost, Duration::from_millis(20));
        assert_eq!(p.figures.media_bytes_per_s, Some(80 << 20));
        assert_eq!(p.figures.cache_bytes, 0, "paced writes, acknowledged once written");
        assert_eq!(
            p.figures.mechanics,
            Mechanics::Solid {
                per_request: Duration::ZERO
            }
        );
        assert!(!p.rotational());
        let p = parse("flush=5ms").unwrap();
        assert_eq!(p.figures.media_bytes_per_s, None);
    }

    #[test]
    fn bad_profiles_say_which_part_is_wrong() {
        for (bad, says) in [
            ("floppy", "unknown profile 'floppy'"),
            ("hdd-5400,cache=lots", "cache=lots"),
            ("flush=1ms,write=0", "write=0 would never finish"),
            ("rpm=5400", "needs rate="),
            ("seek=9ms", "give rpm= first"),
            ("hdd-5400,settle=30ms", "longer than the full-stroke"),
            ("nvme,colour=red", "unknown key 'colour'"),
            ("hdd-5400,cache", "not KEY=VALUE"),
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn listing_names_every_profile_and_source() {
        let text = listing();
        for p in &NAMED {
            assert!(text.contains(p.name), "{}", p.name);
            for (figure, _) in p.sources {
                assert!(text.contains(figure), "{figure}");
            }
        }
        assert!(
            text.contains("5400 rpm (11.11 ms a rotation), seek 1.1 ms to 21 ms (average 11.71 ms) over 320 GB"),
            "{text}"
        );
    }
}
