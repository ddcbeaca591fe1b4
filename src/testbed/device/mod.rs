//! Emulated disks (`--device PROFILE`): what backs the scratch filesystem's loop device.
//!
//! - `host` (default): the image is a file on the host filesystem; a cache flush of the loop
//!   device is a real fsync of that file, so it costs what the host disk charges.
//! - `ram`: the image is on a private tmpfs; flushes cost nothing (the lower bound).
//! - the named profiles (`hdd-5400`, `nvme`, ... see [`profile`]) and `KEY=VALUE` lists:
//!   the image is served by a FUSE file system inside fsynclab ([`fuse`]) through a disk
//!   model ([`model`]): seeks, rotation, transfer, a write cache that drains in the
//!   background, flushes that wait for that drain. The daemon counts and times what it did.

use std::fmt;

use crate::environment::{DeviceProfileInfo, DiskModelInfo};
use crate::error::Usage;

pub mod fuse;
pub mod model;
pub mod profile;

use model::Mechanics;
pub use profile::DiskProfile;

/// One line for `--device` in `--help`; `fsynclab list-devices` prints the figures.
pub const PROFILES_HELP: &str = "\
The disk behind the scratch filesystem; emulated ones are served by FUSE inside fsynclab
through a disk model (seeks, rotation, a write cache that drains, flushes that wait for it).
  host        image on the host filesystem (default): real flushes of the host disk
  ram         image on a private tmpfs: flushes cost nothing (the lower bound)
  hdd-5400    5400 rpm laptop drive of 2008-2009, 8 MB cache (seed 000's laptop)
  hdd-7200    7200 rpm SATA desktop drive of 2010, 32 MB cache
  ssd-sata    Intel X25-M G2 SATA SSD (2009), no power-safe cache
  nvme        consumer NVMe SSD, no power-loss protection
  san         seed 001's SAN: Fibre Channel array, battery-backed cache
  PROFILE,KEY=VALUE...  change figures: hdd-5400,cache=0 (write-through)
  flush=D[,write=R]     fixed flush cost, writes paced to R/s (previous syntax)
`fsynclab list-devices` (or --device help) prints every figure and its source.";

#[derive(Clone, Debug, Default, PartialEq)]
pub enum DeviceProfile {
    #[default]
    Host,
    Ram,
    /// A FUSE-served image through the disk model.
    Emulated(DiskProfile),
}

impl DeviceProfile {
    pub fn parse(text: &str) -> Result<DeviceProfile, Usage> {
        let t = text.trim();
        match t {
            "host" => return Ok(DeviceProfile::Host),
            "ram" => return Ok(DeviceProfile::Ram),
            _ => {}
        }
        profile::parse(t).map(DeviceProfile::Emulated).map_err(|why| {
            Usage(format!(
                "--device {t}: {why}; expected host, ram, hdd-5400, hdd-7200, ssd-sata, nvme, san, \
                 PROFILE,KEY=VALUE... or flush=20ms[,write=80M] (`fsynclab list-devices` shows them all)"
            ))
        })
    }

    /// Whether this is an emulated disk (served by the FUSE daemon).
    pub fn is_emulated(&self) -> bool {
        matches!(self, DeviceProfile::Emulated(_))
    }

    pub fn info(&self) -> DeviceProfileInfo {
        match self {
            DeviceProfile::Host | DeviceProfile::Ram => DeviceProfileInfo {
                name: self.to_string(),
                ..Default::default()
            },
            DeviceProfile::Emulated(p) => {
                let f = &p.figures;
                let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
                let (rpm, settle, full, capacity, request) = match &f.mechanics {
                    Mechanics::Rotating {
                        rpm,
                        settle,
                        full_stroke,
                        capacity_bytes,
                    } => (
                        Some(*rpm),
                        Some(ms(*settle)),
                        Some(ms(*full_stroke)),
                        Some(*capacity_bytes),
                        None,
                    ),
                    Mechanics::Solid { per_request } => (None, None, None, None, Some(per_request.as_secs_f64() * 1e6)),
                };
                DeviceProfileInfo {
                    name: p.name.clone(),
                    flush_ms: Some(ms(f.flush_cost)),
                    write_bytes_per_s: f.media_bytes_per_s,
                    model: Some(DiskModelInfo {
                        mechanics: if rpm.is_some() { "rotating" } else { "solid" }.into(),
                        rpm,
                        seek_settle_ms: settle,
                        seek_full_stroke_ms: full,
                        seek_average_ms: f.average_seek().map(ms),
                        capacity_bytes: capacity,
                        request_us: request,
                        media_bytes_per_s: f.media_bytes_per_s,
                        bus_bytes_per_s: f.bus_bytes_per_s,
                        command_latency_us: f.command_latency.as_secs_f64() * 1e6,
                        cache_bytes: f.cache_bytes,
                        cache: match (f.cache_bytes, f.cache_durable) {
                            (0, _) => "none",
                            (_, false) => "volatile",
                            (_, true) => "battery-backed",
                        }
                        .into(),
                        flush_cost_ms: ms(f.flush_cost),
                    }),
                    ..Default::default()
                }
            }
        }
    }
}

impl fmt::Display for DeviceProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceProfile::Host => write!(f, "host"),
            DeviceProfile::Ram => write!(f, "ram"),
            DeviceProfile::Emulated(p) => write!(f, "{} ({})", p.name, profile::describe(&p.figures)),
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
        let DeviceProfile::Emulated(p) = DeviceProfile::parse("hdd-5400").unwrap() else {
            panic!("hdd-5400 is emulated")
        };
        assert!(p.rotational());
        let DeviceProfile::Emulated(p) = DeviceProfile::parse("flush=5ms,write=60M/s").unwrap() else {
            panic!("flush= is emulated")
        };
        assert_eq!(p.figures.flush_cost, std::time::Duration::from_millis(5));
        assert_eq!(p.figures.media_bytes_per_s, Some(60 << 20));
    }

    #[test]
    fn bad_profiles_say_what_is_valid() {
        for bad in ["floppy", "write=1M,colour=red", "flush=abc", "flush=1ms,write=0"] {
            let err = DeviceProfile::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with(&format!("--device {bad}")), "{err}");
            assert!(err.contains("expected host, ram"), "{err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    }

    #[test]
    fn the_result_records_the_model_figures() {
        let info = DeviceProfile::parse("hdd-5400").unwrap().info();
        let model = info.model.expect("emulated profiles record their figures");
        assert_eq!(model.rpm, Some(5400));
        assert_eq!(model.cache, "volatile");
        assert_eq!(model.cache_bytes, 8 << 20);
        assert_eq!(info.write_bytes_per_s, Some(70_000_000));
        assert_eq!(
            DeviceProfile::parse("hdd-5400,cache=0")
                .unwrap()
                .info()
                .model
                .unwrap()
                .cache,
            "none"
        );
        assert!(DeviceProfile::Ram.info().model.is_none());
    }
}
