//! The `KEY=VALUE` syntax that builds a disk or adjusts a named one: `NAME[,KEY=VALUE...]`
//! (`--device hdd-5400,cache=0`) or `KEY=VALUE[,...]` from a seekless, cacheless disk
//! (`--device flush=20ms,write=80M`, the previous release's syntax, keeps its meaning).

use std::time::Duration;

use super::super::model::{DiskFigures, Mechanics};
use super::builtin::{HDD_5400_SPINDLE, NAMED};
use super::DiskProfile;
use crate::units::{format_duration, parse_duration, parse_size, Bytes};

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
pub(super) const KEYS: [(&str, &str); 12] = [
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

/// What is wrong with a `--device` text: the caller adds what is valid, which depends on
/// the kind (the profiles for an unknown name, the keys for an unknown key).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ParseError {
    UnknownProfile(String),
    UnknownKey(String),
    /// A known key with a value it cannot take, or figures that do not fit together.
    Bad(String),
}

impl From<String> for ParseError {
    fn from(why: String) -> ParseError {
        ParseError::Bad(why)
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::UnknownProfile(name) => write!(f, "unknown profile '{name}'"),
            ParseError::UnknownKey(key) => write!(f, "unknown key '{key}'"),
            ParseError::Bad(why) => f.write_str(why),
        }
    }
}

/// Parses `NAME[,KEY=VALUE...]` or `KEY=VALUE[,...]`; `Err` says what is wrong with one
/// part (the caller adds what is valid).
pub(crate) fn parse(text: &str) -> Result<DiskProfile, ParseError> {
    let mut parts = text.split(',').map(str::trim).peekable();
    let mut figures = match parts.peek() {
        Some(first) if !first.contains('=') => {
            let named = NAMED
                .iter()
                .find(|p| p.name == *first)
                .ok_or_else(|| ParseError::UnknownProfile(first.to_string()))?;
            parts.next();
            (named.figures)()
        }
        _ => plain(),
    };
    let mut rpm_set = false;
    for part in parts {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| ParseError::Bad(format!("'{part}' is not KEY=VALUE")))?;
        let size = || parse_size(value).map(Bytes::get).map_err(|e| format!("{key}: {e}"));
        let rate = || -> Result<u64, String> {
            let v = value.strip_suffix("/s").unwrap_or(value);
            let r = parse_size(v).map_err(|e| format!("{key}: {e} per second"))?;
            if r.get() == 0 {
                return Err(format!("{key}: a rate of 0 would never finish a transfer"));
            }
            Ok(r.get())
        };
        let duration = || parse_duration(value).map_err(|e| format!("{key}: {e}"));
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
                // A rotating disk built from keys starts from the laptop drive's seek curve.
                let mut spindle = figures.spindle().cloned().unwrap_or(HDD_5400_SPINDLE);
                match key {
                    "rpm" => {
                        spindle.rpm = value
                            .parse()
                            .ok()
                            .filter(|r: &u32| (1..=100_000).contains(r))
                            .ok_or_else(|| format!("rpm: expected revolutions per minute like 5400, not {value}"))?;
                        rpm_set = true;
                    }
                    "settle" => spindle.settle = duration()?,
                    "seek" => spindle.full_stroke = duration()?,
                    _ => {
                        spindle.capacity_bytes = size()?;
                        if spindle.capacity_bytes == 0 {
                            return Err(ParseError::Bad("capacity=0: a disk needs some capacity".into()));
                        }
                    }
                }
                if !rpm_set && matches!(figures.mechanics, Mechanics::Solid { .. }) && key != "rpm" {
                    return Err(format!("{key}= applies to a rotating disk: give rpm= first").into());
                }
                figures.mechanics = Mechanics::Rotating(spindle);
            }
            _ => return Err(ParseError::UnknownKey(key.to_string())),
        }
    }
    if let Some(spindle) = figures.spindle() {
        if figures.media_bytes_per_s.is_none() {
            return Err(ParseError::Bad(
                "a rotating disk needs rate= (its media transfer rate)".into(),
            ));
        }
        if spindle.settle > spindle.full_stroke {
            return Err(ParseError::Bad(format!(
                "settle={} is longer than the full-stroke seek={}",
                format_duration(spindle.settle),
                format_duration(spindle.full_stroke)
            )));
        }
    }
    Ok(DiskProfile {
        name: text.trim().to_string(),
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::super::super::model::Spindle;
    use super::*;

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
        assert_eq!(
            p.figures.mechanics,
            Mechanics::Rotating(Spindle {
                rpm: 10000,
                settle: Duration::from_micros(500),
                full_stroke: Duration::from_millis(9),
                capacity_bytes: 300 << 30,
            }),
            "rpm= makes a rotating disk"
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
            ("hdd-5400,cache=lots", "cache: "),
            ("flush=1ms,write=0", "write: a rate of 0 would never finish"),
            ("rpm=5400", "needs rate="),
            ("seek=9ms", "give rpm= first"),
            ("hdd-5400,settle=30ms", "longer than the full-stroke"),
            ("nvme,colour=red", "unknown key 'colour'"),
            ("hdd-5400,cache", "not KEY=VALUE"),
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
