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

pub(crate) mod fuse;
pub(crate) mod model;
pub mod power_cut;
pub(crate) mod profile;

pub use fuse::DeviceControl;
use model::Mechanics;
pub use power_cut::{CutPlan, CutTrigger, Keep};
pub(crate) use profile::DiskProfile;

/// One line for `--device` in `--help`; `fsynclab list-devices` prints the figures.
pub(crate) const PROFILES_HELP: &str = "\
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
  PROFILE,flush=ignore  a lying drive: flushes acknowledged without draining
  PROFILE,fail=RULE     fail requests with EIO: hdd-7200,fail=write:range=1G+64M:after=100
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
    pub(crate) fn parse(text: &str) -> Result<DeviceProfile, Usage> {
        let t = text.trim();
        match t {
            "host" => return Ok(DeviceProfile::Host),
            "ram" => return Ok(DeviceProfile::Ram),
            _ => {}
        }
        profile::parse(t).map(DeviceProfile::Emulated).map_err(|why| {
            let valid = match &why {
                profile::ParseError::UnknownProfile(_) => format!(
                    "; expected host, ram, {}, PROFILE,KEY=VALUE... or flush=20ms[,write=80M] (`fsynclab list-devices` shows them all)",
                    profile::names().join(", ")
                ),
                profile::ParseError::UnknownKey(_) => format!(
                    "; keys: {} (`fsynclab list-devices` says what each sets)",
                    profile::key_names().join(", ")
                ),
                profile::ParseError::Bad(_) => String::new(),
            };
            Usage(format!("--device {t}: {why}{valid}"))
        })
    }

    /// Whether this is an emulated disk (served by the FUSE daemon).
    pub(crate) fn is_emulated(&self) -> bool {
        matches!(self, DeviceProfile::Emulated(_))
    }

    pub(crate) fn info(&self) -> DeviceProfileInfo {
        match self {
            DeviceProfile::Host | DeviceProfile::Ram => DeviceProfileInfo {
                name: self.to_string(),
                ..Default::default()
            },
            DeviceProfile::Emulated(p) => {
                let f = &p.figures;
                let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
                let spindle = f.spindle();
                let request = match &f.mechanics {
                    Mechanics::Solid { per_request } => Some(per_request.as_secs_f64() * 1e6),
                    Mechanics::Rotating(_) => None,
                };
                DeviceProfileInfo {
                    name: p.name.clone(),
                    flush_ms: Some(ms(f.flush_cost)),
                    write_bytes_per_s: f.media_bytes_per_s,
                    model: Some(DiskModelInfo {
                        mechanics: if spindle.is_some() { "rotating" } else { "solid" }.into(),
                        rpm: spindle.map(|s| s.rpm),
                        seek_settle_ms: spindle.map(|s| ms(s.settle)),
                        seek_full_stroke_ms: spindle.map(|s| ms(s.full_stroke)),
                        seek_average_ms: f.average_seek().map(ms),
                        capacity_bytes: spindle.map(|s| s.capacity_bytes),
                        request_us: request,
                        media_bytes_per_s: f.media_bytes_per_s,
                        bus_bytes_per_s: f.bus_bytes_per_s,
                        command_latency_us: f.command_latency.as_secs_f64() * 1e6,
                        command_latency_p99_us: f.latency_p99.map(|d| d.as_secs_f64() * 1e6),
                        cache_bytes: f.cache_bytes,
                        cache_segments: (f.cache_segments > 0).then_some(f.cache_segments),
                        cache: f.cache_kind().into(),
                        flush_cost_ms: ms(f.flush_cost),
                        sector_bytes: Some(f.sector_bytes),
                        ignores_flushes: f.ignores_flushes,
                        faults: f.faults.iter().map(ToString::to_string).collect(),
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
        // Issue 8, item 11: each says what is wrong once, and lists what is valid for
        // that part: the profiles for a name, the keys for a key.
        let cases = [
            ("floppy", "--device floppy: unknown profile 'floppy'; expected host, ram, hdd-5400, hdd-7200, ssd-sata, nvme, san, nvme-consumer, nvme-plp, apple-m1, PROFILE,KEY=VALUE..."),
            ("write=1M,colour=red", "--device write=1M,colour=red: unknown key 'colour'; keys: cache, segments, nvcache, rpm, settle, seek, capacity, request, rate, bus, latency, latency-p99, flush, write"),
            ("flush=abc", "--device flush=abc: flush: expected a duration like 1s"),
            ("hdd-5400,seek=abc", "--device hdd-5400,seek=abc: seek: expected a duration like 1s"),
            ("flush=1ms,write=0", "--device flush=1ms,write=0: write: a rate of 0 would never finish a transfer"),
        ];
        for (bad, expected) in cases {
            let err = DeviceProfile::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with(expected), "{err}");
            assert!(!err.contains('\n'), "one line: {err}");
            // The part at fault is not repeated after the whole text.
            let part = bad.rsplit(',').next().unwrap_or(bad);
            assert!(!err.contains(&format!("{part}: {part}")), "said once: {err}");
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
