//! Sizes and durations as users type them (`4k`, `1M`, `8G`, `250ms`, `2m`) and as
//! reports print them.
//!
//! Sizes are binary: `1k` = 1024 bytes, as in fio and dd. A bare number is bytes.
//! Durations accept `ns`, `us`, `ms`, `s`, `m`, `h`; a bare number is seconds.

use std::fmt;
use std::time::Duration;

use thiserror::Error;

/// A number of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub(crate) struct Bytes(pub u64);

impl Bytes {
    pub(crate) const KIB: u64 = 1024;
    pub(crate) const MIB: u64 = 1024 * 1024;
    pub(crate) const GIB: u64 = 1024 * 1024 * 1024;

    pub(crate) fn get(self) -> u64 {
        self.0
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum UnitError {
    #[error("expected a size like 4k, 1M or 8G")]
    Size,
    #[error("expected a duration like 1s, 250ms or 2m")]
    Duration,
    #[error("too long a duration: at most 584 years")]
    DurationTooLong,
}

/// Parses `4k`, `1M`, `8G`, `512`, `1.5G`, `64KiB`.
pub(crate) fn parse_size(text: &str) -> Result<Bytes, UnitError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
    if number.is_empty() {
        return Err(UnitError::Size);
    }
    let multiplier: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => Bytes::KIB,
        "m" | "mb" | "mib" => Bytes::MIB,
        "g" | "gb" | "gib" => Bytes::GIB,
        "t" | "tb" | "tib" => Bytes::GIB * 1024,
        _ => return Err(UnitError::Size),
    };
    if number.contains('.') {
        let value: f64 = number.parse().map_err(|_| UnitError::Size)?;
        let bytes = value * multiplier as f64;
        if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 || bytes.fract() != 0.0 {
            return Err(UnitError::Size);
        }
        Ok(Bytes(bytes as u64))
    } else {
        let value: u64 = number.parse().map_err(|_| UnitError::Size)?;
        value.checked_mul(multiplier).map(Bytes).ok_or(UnitError::Size)
    }
}

/// Parses `250ms`, `1s`, `2m`, `1h`, `500us`, `1.5s`; a bare number is seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
    if number.is_empty() {
        return Err(UnitError::Duration);
    }
    let value: f64 = number.parse().map_err(|_| UnitError::Duration)?;
    let unit_ns: f64 = match suffix.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(UnitError::Duration),
    };
    let ns = value * unit_ns;
    if !ns.is_finite() || ns < 0.0 {
        return Err(UnitError::Duration);
    }
    if ns > u64::MAX as f64 {
        return Err(UnitError::DurationTooLong);
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// Prints a size the shortest exact way a user could type it back (`1M`, `4k`, `1536`).
pub(crate) fn format_size(bytes: Bytes) -> String {
    let b = bytes.0;
    for (unit, suffix) in [
        (Bytes::GIB * 1024, "T"),
        (Bytes::GIB, "G"),
        (Bytes::MIB, "M"),
        (Bytes::KIB, "k"),
    ] {
        if b >= unit && b % unit == 0 {
            return format!("{}{}", b / unit, suffix);
        }
    }
    b.to_string()
}

/// Prints a size for humans, rounded: `1.5 GiB`, `640 KiB`.
pub(crate) fn human_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= Bytes::GIB as f64 {
        format!("{:.1} GiB", b / Bytes::GIB as f64)
    } else if b >= Bytes::MIB as f64 {
        format!("{:.1} MiB", b / Bytes::MIB as f64)
    } else if b >= Bytes::KIB as f64 {
        format!("{:.1} KiB", b / Bytes::KIB as f64)
    } else {
        format!("{b} B")
    }
}

/// Prints a duration the shortest exact way a user could type it back (`1s`, `250ms`, `2m`).
pub(crate) fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    for (unit, suffix) in [
        (3_600_000_000_000u128, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ] {
        if ns >= unit && ns % unit == 0 {
            return format!("{}{}", ns / unit, suffix);
        }
    }
    if ns == 0 {
        "0s".to_string()
    } else {
        format!("{ns}ns")
    }
}

/// A latency in nanoseconds scaled to the unit that keeps three significant digits:
/// the value, its decimals, and the unit's index (ns, µs, ms, s).
fn scale_latency(ns: u64) -> (f64, usize, usize) {
    let v = ns as f64;
    if v >= 1e9 {
        (v / 1e9, 3, 3)
    } else if v >= 1e6 {
        (v / 1e6, 3, 2)
    } else if v >= 1e3 {
        (v / 1e3, 1, 1)
    } else {
        (v, 0, 0)
    }
}

/// Prints a latency in nanoseconds with a unit that keeps three significant digits, as
/// tables do: `1.234ms`, `12.5us`.
pub(crate) fn format_latency_ns(ns: u64) -> String {
    let (v, decimals, unit) = scale_latency(ns);
    format!("{v:.decimals$}{}", ["ns", "us", "ms", "s"][unit])
}

/// The same for prose and the HTML page: `1.234 ms`, `12.5 µs`.
pub(crate) fn latency_text(ns: u64) -> String {
    let (v, decimals, unit) = scale_latency(ns);
    format!("{v:.decimals$} {}", ["ns", "µs", "ms", "s"][unit])
}

/// Nanoseconds as seconds, milliseconds, microseconds: the units tables and seed lines print.
pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

pub(crate) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

pub(crate) fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// `x` rounded to `decimals` places, for table cells that should not print 17 digits.
pub(crate) fn rounded(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (x * scale).round() / scale
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(*self))
    }
}

/// A span of time for a person: `40s`, `2m40s`, `1h05m`.
pub(crate) fn clock(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary() {
        assert_eq!(parse_size("4k"), Ok(Bytes(4096)));
        assert_eq!(parse_size("4K"), Ok(Bytes(4096)));
        assert_eq!(parse_size("1M"), Ok(Bytes(1 << 20)));
        assert_eq!(parse_size("8G"), Ok(Bytes(8 << 30)));
        assert_eq!(parse_size("64KiB"), Ok(Bytes(65536)));
        assert_eq!(parse_size("512"), Ok(Bytes(512)));
        assert_eq!(parse_size("1.5k"), Ok(Bytes(1536)));
        assert_eq!(parse_size("0"), Ok(Bytes(0)));
    }

    #[test]
    fn bad_sizes_are_refused() {
        for bad in [
            "",
            "k",
            "abc",
            "4x",
            "-1M",
            "1.2.3M",
            "99999999999999999999",
            "20000000T",
            "0.1",
        ] {
            assert_eq!(parse_size(bad), Err(UnitError::Size), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn bad_durations_are_refused() {
        for bad in ["", "abc", "1x", "ms", "-1s", "1..2s"] {
            assert_eq!(parse_duration(bad), Err(UnitError::Duration), "{bad}");
        }
        assert_eq!(parse_duration("9999999h"), Err(UnitError::DurationTooLong));
    }

    #[test]
    fn formatting_round_trips() {
        for text in ["4k", "1M", "8G", "1536", "0"] {
            assert_eq!(format_size(parse_size(text).unwrap()), text);
        }
        for text in ["250ms", "1s", "2m", "1h", "500us", "0s"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
    }

    #[test]
    fn spans_of_time_read_as_a_clock() {
        assert_eq!(clock(Duration::from_secs(40)), "40s");
        assert_eq!(clock(Duration::from_secs(113)), "1m53s");
        assert_eq!(clock(Duration::from_secs(160)), "2m40s");
        assert_eq!(clock(Duration::from_secs(3900)), "1h05m");
    }
}
