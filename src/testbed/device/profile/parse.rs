//! The `KEY=VALUE` syntax that builds a disk or adjusts a named one: `NAME[,KEY=VALUE...]`
//! (`--device hdd-5400,cache=0`) or `KEY=VALUE[,...]` from a seekless, cacheless disk
//! (`--device flush=20ms,write=80M`, the previous release's syntax, keeps its meaning).

use std::time::Duration;

use super::super::model::{DiskFigures, FaultKind, FaultRule, FaultStart, Mechanics};
use super::builtin::HDD_5400_SPINDLE;
use super::named;
use super::DiskProfile;
use crate::units::{format_duration, parse_duration, parse_size, Bytes};

/// The keys `--device` takes, with what each sets.
pub(super) const KEYS: [(&str, &str); 17] = [
    ("cache=SIZE", "volatile write cache (0: write-through)"),
    (
        "segments=N",
        "runs of contiguous writes the cache holds at most (0: as many as fit; the hard disks: 32)",
    ),
    (
        "nvcache=SIZE",
        "battery-backed write cache (flushes wait for nothing; it survives a power cut)",
    ),
    ("rpm=N", "rotating disk at N rpm (needs rate=)"),
    ("settle=DURATION", "single-track seek"),
    ("seek=DURATION", "full-stroke seek"),
    ("capacity=SIZE", "the drive the seek distance is a fraction of"),
    ("request=DURATION", "solid-state cost per media request (no seeks)"),
    ("rate=RATE", "media transfer rate per second (write=RATE is the same)"),
    ("bus=RATE", "host interface rate per second"),
    ("latency=DURATION", "command latency added to every request"),
    (
        "latency-p99=DURATION",
        "its 99th percentile: each request's latency drawn from a log-normal with median latency=",
    ),
    ("flush=DURATION", "fixed cost of every flush once the cache is drained"),
    (
        "flush=ignore",
        "a lying drive: flushes acknowledged at once, never drained (diskchecker.pl's quarry)",
    ),
    ("write=RATE", "alias of rate= (the previous release's syntax)"),
    (
        "sector=SIZE",
        "the unit a write is persisted in: a power cut tears writes only between sectors (512)",
    ),
    ("fail=RULE", "fail requests with EIO (repeatable; see Faults below)"),
];

/// What `fail=` takes, for its error messages.
pub(super) const FAIL_SYNTAX: &str =
    "fail=write|read|flush[:range=OFFSET+LENGTH][:after=N|DURATION][:p=FRACTION][:times=K][:seed=N], e.g. fail=write:range=1G+64M:after=100";

/// The values a figure may take, each bound derived from a real drive: a profile beyond
/// them is not a slow disk but one that cannot make progress (issue 19: `write=1` put
/// `mount` in D state for minutes, `rpm=1` took 175 s to stop). `list-devices` prints them.
pub(super) const RANGES: [(&str, &str, &str); 7] = [
    (
        "rpm",
        "3600 to 15000",
        "the ST-506 of 1980 turned at 3600 rpm, as most drives of the 1980s; the Seagate Cheetah X15 of 2000 was the first at 15000, and none went faster",
    ),
    (
        "rate, bus",
        "600K to 64G per second",
        "the ST-506 of 1980, the first 5.25-inch hard disk, moved 625 KB/s; PCIe 5.0 x16 carries 63 GB/s",
    ),
    (
        "settle, seek",
        "up to 10ms and 250ms",
        "about ten times the single-track and full-stroke seeks of a 2010 laptop drive, 1.1 and 21 ms on the Travelstar 5K320",
    ),
    (
        "request, latency, latency-p99, flush",
        "up to 1s",
        "over 100 times the 7 ms random write of a 5400 rpm disk; a device slower than that is failing, not slow",
    ),
    ("capacity", "5M to 100T", "from the ST-506's 5 MB to beyond the largest drives, 30 TB in 2024"),
    ("sector", "512 to 64K, a power of two", "512 B on drives before 2010, 4 KiB on Advanced Format drives"),
    (
        "segments",
        "0 (no limit) to 1024",
        "drives split their buffer into tens of segments (32 by default in Seagate's desktop mode); 1024 is past any",
    ),
];

/// The smallest media or bus rate, in bytes per second: the ST-506's 625 KB/s, rounded down.
const MIN_RATE: u64 = 600 << 10;
const MAX_RATE: u64 = 64 << 30;
const MIN_RPM: u32 = 3600;
const MAX_RPM: u32 = 15_000;
const MAX_SETTLE: Duration = Duration::from_millis(10);
const MAX_FULL_STROKE: Duration = Duration::from_millis(250);
const MAX_COST: Duration = Duration::from_secs(1);
const MIN_CAPACITY: u64 = 5 << 20;
const MAX_CAPACITY: u64 = 100 << 40;
const MAX_SEGMENTS: u32 = 1024;

/// `key=value` beyond what any drive does: the one-line refusal naming the valid range and
/// where it comes from.
fn beyond(key: &str, value: &str) -> ParseError {
    let named = if key == "write" { "rate" } else { key };
    let (_, valid, why) = RANGES
        .iter()
        .find(|(keys, _, _)| keys.split(", ").any(|k| k == named))
        .copied()
        .unwrap_or((key, "", ""));
    ParseError::Bad(format!(
        "{key}={value} is beyond any real drive; valid: {valid} ({why})"
    ))
}

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

/// Parses `fail=RULE[,fail=RULE...]` (empty: no rule), for faults set on a running device.
pub(crate) fn fault_rules(text: &str) -> Result<Vec<FaultRule>, ParseError> {
    text.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| match part.strip_prefix("fail=") {
            Some(rule) => fault_rule(rule),
            None => Err(ParseError::Bad(format!(
                "'{part}' is not a fault; expected {FAIL_SYNTAX}"
            ))),
        })
        .collect()
}

/// Parses one `fail=` rule: `KIND[:CONDITION...]` (see [`FAIL_SYNTAX`]).
fn fault_rule(text: &str) -> Result<FaultRule, ParseError> {
    let bad = |why: String| ParseError::Bad(format!("fail={text}: {why}; expected {FAIL_SYNTAX}"));
    let mut parts = text.split(':');
    let kind = match parts.next().unwrap_or("") {
        "write" => FaultKind::Write,
        "read" => FaultKind::Read,
        "flush" => FaultKind::Flush,
        other => return Err(bad(format!("unknown kind '{other}'"))),
    };
    let mut rule = FaultRule::always(kind);
    for cond in parts {
        let (name, value) = cond
            .split_once('=')
            .ok_or_else(|| bad(format!("'{cond}' is not NAME=VALUE")))?;
        match name {
            "range" if kind == FaultKind::Flush => return Err(bad("a flush has no byte range".into())),
            "range" => {
                let (offset, len) = value
                    .split_once('+')
                    .ok_or_else(|| bad(format!("range={value}: expected OFFSET+LENGTH")))?;
                let size = |v: &str| {
                    parse_size(v)
                        .map(Bytes::get)
                        .map_err(|e| bad(format!("range={value}: {e}")))
                };
                let (offset, len) = (size(offset)?, size(len)?);
                if len == 0 {
                    return Err(bad(format!("range={value}: an empty range matches nothing")));
                }
                rule.range = Some((offset, len));
            }
            "after" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                let n = value.parse().map_err(|_| bad(format!("after={value}: too many")))?;
                rule.start = FaultStart::AfterRequests(n);
            }
            "after" => {
                let d = parse_duration(value).map_err(|_| {
                    bad(format!(
                        "after={value}: expected a number of requests or a duration like 5s"
                    ))
                })?;
                rule.start = FaultStart::AfterTime(d);
            }
            "p" => {
                let p = match value.strip_suffix('%') {
                    Some(percent) => percent.parse::<f64>().map(|v| v / 100.0),
                    None => value.parse::<f64>(),
                };
                rule.probability = p.ok().filter(|p| *p > 0.0 && *p <= 1.0).ok_or_else(|| {
                    bad(format!(
                        "p={value}: expected a probability above 0, at most 1 (or 100%)"
                    ))
                })?;
            }
            "times" => {
                rule.times = Some(
                    value
                        .parse()
                        .ok()
                        .filter(|k: &u64| *k > 0)
                        .ok_or_else(|| bad(format!("times={value}: expected how many requests fail, 1 or more")))?,
                );
            }
            "seed" => {
                rule.seed = value
                    .parse()
                    .map_err(|_| bad(format!("seed={value}: expected a whole number")))?
            }
            other => return Err(bad(format!("unknown condition '{other}'"))),
        }
    }
    Ok(rule)
}

/// Parses `NAME[,KEY=VALUE...]` or `KEY=VALUE[,...]`; `Err` says what is wrong with one
/// part (the caller adds what is valid).
pub(crate) fn parse(text: &str) -> Result<DiskProfile, ParseError> {
    let mut parts = text.split(',').map(str::trim).peekable();
    let mut figures = match parts.peek() {
        Some(first) if !first.contains('=') => {
            let named = named()
                .find(|p| p.name == *first)
                .ok_or_else(|| ParseError::UnknownProfile(first.to_string()))?;
            parts.next();
            (named.figures)()
        }
        // A seekless, cacheless disk (`flush=20ms` alone is the previous release's fixed
        // flush cost).
        _ => DiskFigures::plain(),
    };
    let mut rpm_set = false;
    for part in parts {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| ParseError::Bad(format!("'{part}' is not KEY=VALUE")))?;
        let size = || parse_size(value).map(Bytes::get).map_err(|e| format!("{key}: {e}"));
        let rate = || -> Result<u64, ParseError> {
            let v = value.strip_suffix("/s").unwrap_or(value);
            let r = parse_size(v).map_err(|e| format!("{key}: {e} per second"))?;
            if r.get() == 0 {
                return Err(format!("{key}: a rate of 0 would never finish a transfer").into());
            }
            if !(MIN_RATE..=MAX_RATE).contains(&r.get()) {
                return Err(beyond(key, value));
            }
            Ok(r.get())
        };
        let duration = || parse_duration(value).map_err(|e| ParseError::from(format!("{key}: {e}")));
        // A cost per request, per command or per flush: at most a second.
        let cost = || -> Result<Duration, ParseError> {
            let d = duration()?;
            if d > MAX_COST {
                return Err(beyond(key, value));
            }
            Ok(d)
        };
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
            "latency" => figures.command_latency = cost()?,
            "latency-p99" => figures.latency_p99 = Some(cost()?),
            "flush" if value == "ignore" => figures.ignores_flushes = true,
            "flush" => figures.flush_cost = cost()?,
            "request" => figures.mechanics = Mechanics::Solid { per_request: cost()? },
            "sector" => {
                let bytes = size()?;
                if !(512..=64 << 10).contains(&bytes) || !bytes.is_power_of_two() {
                    return Err(beyond(key, value));
                }
                figures.sector_bytes = bytes;
            }
            "segments" => {
                figures.cache_segments = value
                    .parse()
                    .map_err(|_| format!("segments: expected a count of cache segments like 32, not {value}"))?;
                if figures.cache_segments > MAX_SEGMENTS {
                    return Err(beyond(key, value));
                }
            }
            "fail" => figures.faults.push(fault_rule(value)?),
            "rpm" | "settle" | "seek" | "capacity" => {
                // A rotating disk built from keys starts from the laptop drive's seek curve.
                let mut spindle = figures.spindle().cloned().unwrap_or(HDD_5400_SPINDLE);
                match key {
                    "rpm" => {
                        spindle.rpm = value
                            .parse()
                            .map_err(|_| format!("rpm: expected revolutions per minute like 5400, not {value}"))?;
                        if !(MIN_RPM..=MAX_RPM).contains(&spindle.rpm) {
                            return Err(beyond(key, value));
                        }
                        rpm_set = true;
                    }
                    "settle" => {
                        spindle.settle = duration()?;
                        if spindle.settle > MAX_SETTLE {
                            return Err(beyond(key, value));
                        }
                    }
                    "seek" => {
                        spindle.full_stroke = duration()?;
                        if spindle.full_stroke > MAX_FULL_STROKE {
                            return Err(beyond(key, value));
                        }
                    }
                    _ => {
                        spindle.capacity_bytes = size()?;
                        if spindle.capacity_bytes == 0 {
                            return Err(ParseError::Bad("capacity=0: a disk needs some capacity".into()));
                        }
                        if !(MIN_CAPACITY..=MAX_CAPACITY).contains(&spindle.capacity_bytes) {
                            return Err(beyond(key, value));
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
    if let Some(p99) = figures.latency_p99 {
        if p99 < figures.command_latency || figures.command_latency.is_zero() {
            return Err(ParseError::Bad(format!(
                "latency-p99={} needs a median latency= below it (latency={})",
                format_duration(p99),
                format_duration(figures.command_latency)
            )));
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
mod tests;
