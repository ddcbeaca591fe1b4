//! Emulated disks (`--device PROFILE`): what backs the scratch filesystem's loop device.
//!
//! - `host` (default): the image is a file on the host filesystem; a cache flush of the loop
//!   device is a real fsync of that file, so it costs what the host disk charges.
//! - `ram`: the image is on a private tmpfs; flushes cost nothing (the lower bound).
//! - `flush=DURATION[,write=RATE]` and the named profiles: the image is served by a FUSE
//!   file system inside fsynclab ([`fuse`]) where every fsync of the image — what the loop
//!   device turns a cache flush (REQ_PREFLUSH) into — waits the flush time, and writes are
//!   paced to RATE bytes per second. The daemon counts the flushes.

use std::fmt;
use std::time::Duration;

use crate::environment::DeviceProfileInfo;
use crate::error::Usage;
use crate::units::{format_duration, format_size, parse_duration, parse_size, Bytes};

pub mod fuse;

/// The named profiles and why their figures: a cache flush must wait for everything in
/// the drive's volatile cache to reach stable media.
pub const NAMED: [(&str, Duration, u64, &str); 4] = [
    (
        "hdd-5400",
        Duration::from_millis(20),
        80 << 20,
        "11 ms per rotation at 5400 rpm plus seeks to write back the cache: ~20 ms a flush",
    ),
    (
        "hdd-7200",
        Duration::from_millis(12),
        120 << 20,
        "8.3 ms per rotation at 7200 rpm plus seeks: ~12 ms a flush",
    ),
    (
        "ssd-sata",
        Duration::from_millis(2),
        400 << 20,
        "consumer SATA SSD without power-loss protection: FLUSH CACHE takes 1-3 ms",
    ),
    (
        "nvme",
        Duration::from_micros(500),
        1500 << 20,
        "consumer NVMe without power-loss protection: a flush takes a few hundred µs",
    ),
];

/// One line per named profile, for `--help` and the docs.
pub const PROFILES_HELP: &str = "\
The disk behind the scratch filesystem; emulated ones are served by FUSE inside fsynclab.
  host        image on the host filesystem (default): real flushes of the host disk
  ram         image on a private tmpfs: flushes cost nothing (the lower bound)
  flush=D[,write=R]  emulated: each flush waits D (20ms), writes paced to R/s (80M)
  hdd-5400    flush 20ms, write 80M/s    11 ms a rotation at 5400 rpm, plus seeks
  hdd-7200    flush 12ms, write 120M/s   8.3 ms a rotation at 7200 rpm, plus seeks
  ssd-sata    flush 2ms, write 400M/s    SATA SSD without power-loss protection
  nvme        flush 500us, write 1500M/s NVMe without power-loss protection";

/// An emulated disk's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlushProfile {
    /// What the cache flush waits.
    pub flush: Duration,
    /// Write bandwidth in bytes per second; unlimited when None.
    pub write_bytes_per_s: Option<u64>,
    /// Whether the loop device is marked rotational (the hdd profiles), which schedulers
    /// such as bfq and the block layer's merging heuristics take into account.
    pub rotational: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceProfile {
    #[default]
    Host,
    Ram,
    /// A FUSE-served image: the profile's name as typed, and its figures.
    Emulated {
        name: String,
        profile: FlushProfile,
    },
}

impl DeviceProfile {
    pub fn parse(text: &str) -> Result<DeviceProfile, Usage> {
        let t = text.trim();
        let bad = |why: &str| {
            Usage(format!(
                "--device {t}: {why}; expected host, ram, hdd-5400, hdd-7200, ssd-sata, nvme or flush=20ms[,write=80M]"
            ))
        };
        match t {
            "host" => return Ok(DeviceProfile::Host),
            "ram" => return Ok(DeviceProfile::Ram),
            _ => {}
        }
        if let Some((name, flush, write, _)) = NAMED.iter().find(|p| p.0 == t) {
            return Ok(DeviceProfile::Emulated {
                name: name.to_string(),
                profile: FlushProfile {
                    flush: *flush,
                    write_bytes_per_s: Some(*write),
                    rotational: name.starts_with("hdd"),
                },
            });
        }
        let mut flush = None;
        let mut write = None;
        for part in t.split(',') {
            match part.split_once('=') {
                Some(("flush", v)) => {
                    flush = Some(parse_duration(v).map_err(|e| bad(&format!("flush={v}: {e}")))?);
                }
                Some(("write", v)) => {
                    let v = v.strip_suffix("/s").unwrap_or(v);
                    let rate = parse_size(v).map_err(|e| bad(&format!("write={v}: {e} per second")))?;
                    if rate.get() == 0 {
                        return Err(bad("write=0 would never finish a write"));
                    }
                    write = Some(rate.get());
                }
                _ => return Err(bad("unknown profile")),
            }
        }
        let flush = flush.ok_or_else(|| bad("flush=DURATION is required"))?;
        Ok(DeviceProfile::Emulated {
            name: t.to_string(),
            profile: FlushProfile {
                flush,
                write_bytes_per_s: write,
                rotational: false,
            },
        })
    }
}

impl fmt::Display for DeviceProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceProfile::Host => write!(f, "host"),
            DeviceProfile::Ram => write!(f, "ram"),
            DeviceProfile::Emulated { name, profile } => {
                write!(f, "{name} (flush {}", format_duration(profile.flush))?;
                if let Some(w) = profile.write_bytes_per_s {
                    write!(f, ", write {}/s", format_size(Bytes(w)))?;
                }
                write!(f, ")")
            }
        }
    }
}

impl DeviceProfile {
    pub fn info(&self) -> DeviceProfileInfo {
        match self {
            DeviceProfile::Host | DeviceProfile::Ram => DeviceProfileInfo {
                name: self.to_string(),
                ..Default::default()
            },
            DeviceProfile::Emulated { name, profile } => DeviceProfileInfo {
                name: name.clone(),
                flush_ms: Some(profile.flush.as_secs_f64() * 1e3),
                write_bytes_per_s: profile.write_bytes_per_s,
                ..Default::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_named_and_custom_profiles() {
        assert_eq!(DeviceProfile::parse("host").unwrap(), DeviceProfile::Host);
        assert_eq!(DeviceProfile::parse("ram").unwrap(), DeviceProfile::Ram);
        let DeviceProfile::Emulated { profile, .. } = DeviceProfile::parse("hdd-5400").unwrap() else {
            panic!("hdd-5400 is emulated")
        };
        assert_eq!(profile.flush, Duration::from_millis(20));
        assert!(profile.rotational);
        let DeviceProfile::Emulated { profile, .. } = DeviceProfile::parse("flush=5ms,write=60M/s").unwrap() else {
            panic!("flush= is emulated")
        };
        assert_eq!(profile.flush, Duration::from_millis(5));
        assert_eq!(profile.write_bytes_per_s, Some(60 << 20));
    }

    #[test]
    fn bad_profiles_say_what_is_valid() {
        for bad in ["floppy", "write=1M", "flush=abc", "flush=1ms,write=0"] {
            let err = DeviceProfile::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with(&format!("--device {bad}")), "{err}");
            assert!(err.contains("expected host, ram"), "{err}");
        }
    }
}
