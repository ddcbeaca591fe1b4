//! What the environment says about a run's figures, as findings: the emulated device's
//! daemon falling behind its model, the device cache flushes counted, writeback sysctls
//! another process changed while the run went on.
//!
//! Each is a type with the line it prints ([`fmt::Display`]) and a parser of that line
//! ([`FromStr`]), so that a result read back gives the finding again, not only its text.
//! A parser accepts a line only when the finding it reads prints that very line.

use std::fmt;
use std::str::FromStr;

/// A finding about the emulated (or counted) device.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceFinding {
    /// The emulated disk's daemon fell up to `lag_ms` behind its model: throughput figures
    /// are the daemon's ceiling, not the profile's.
    DaemonBehind { lag_ms: f64 },
    /// Device cache flushes during the run (setup included), and when the run made sync
    /// calls, the flushes per call with the number of calls.
    Flushes {
        flushes: u64,
        per_sync_call: Option<(f64, u64)>,
    },
}

const DAEMON_BEHIND: (&str, &str) = (
    "device: the emulated disk's daemon fell up to ",
    " ms behind its model (CPU or memory bandwidth): throughput figures here are the daemon's ceiling, not the profile's",
);
const FLUSHES: (&str, &str) = ("device: ", " cache flushes during the run");

impl fmt::Display for DeviceFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceFinding::DaemonBehind { lag_ms } => write!(f, "{}{lag_ms:.0}{}", DAEMON_BEHIND.0, DAEMON_BEHIND.1),
            DeviceFinding::Flushes { flushes, per_sync_call } => {
                write!(f, "{}{flushes}{}", FLUSHES.0, FLUSHES.1)?;
                match per_sync_call {
                    Some((per, calls)) => {
                        write!(f, ", {per:.2} per foreground sync call ({calls} calls; setup included)")
                    }
                    None => Ok(()),
                }
            }
        }
    }
}

/// The line a [`DeviceFinding`] is not.
#[derive(Debug, PartialEq, Eq)]
pub struct NotThisFinding;

impl FromStr for DeviceFinding {
    type Err = NotThisFinding;

    fn from_str(line: &str) -> Result<DeviceFinding, NotThisFinding> {
        let parsed = if let Some(lag) = between(line, DAEMON_BEHIND.0, DAEMON_BEHIND.1) {
            lag.parse().ok().map(|lag_ms| DeviceFinding::DaemonBehind { lag_ms })
        } else {
            let rest = line.strip_prefix(FLUSHES.0).ok_or(NotThisFinding)?;
            let (flushes, rest) = rest.split_once(FLUSHES.1).ok_or(NotThisFinding)?;
            let per_sync_call = match rest {
                "" => Some(None),
                _ => (|| {
                    let rest = rest.strip_prefix(", ")?;
                    let (per, rest) = rest.split_once(" per foreground sync call (")?;
                    let calls = rest.strip_suffix(" calls; setup included)")?;
                    Some(Some((per.parse().ok()?, calls.parse().ok()?)))
                })(),
            };
            match (flushes.parse(), per_sync_call) {
                (Ok(flushes), Some(per_sync_call)) => Some(DeviceFinding::Flushes { flushes, per_sync_call }),
                _ => None,
            }
        };
        parsed.filter(|f| f.to_string() == line).ok_or(NotThisFinding)
    }
}

/// A writeback sysctl whose value changed during a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysctlChange {
    /// Without the `vm.` prefix, as [`super::read_sysctls`] names it.
    pub name: String,
    pub was: u64,
    pub now: u64,
}

/// Writeback sysctls another process changed during the run (at least one); the
/// environment records the values at the start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysctlsChanged(pub Vec<SysctlChange>);

const SYSCTLS_CHANGED: (&str, &str) = (
    "sysctls: ",
    " during the run (set by another process); the environment records the values at the start",
);

impl fmt::Display for SysctlsChanged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let changes: Vec<String> = self
            .0
            .iter()
            .map(|c| format!("vm.{} {} -> {}", c.name, c.was, c.now))
            .collect();
        write!(f, "{}{}{}", SYSCTLS_CHANGED.0, changes.join(", "), SYSCTLS_CHANGED.1)
    }
}

impl FromStr for SysctlsChanged {
    type Err = NotThisFinding;

    fn from_str(line: &str) -> Result<SysctlsChanged, NotThisFinding> {
        let list = between(line, SYSCTLS_CHANGED.0, SYSCTLS_CHANGED.1).ok_or(NotThisFinding)?;
        let change = |text: &str| -> Option<SysctlChange> {
            let (name, values) = text.strip_prefix("vm.")?.split_once(' ')?;
            let (was, now) = values.split_once(" -> ")?;
            Some(SysctlChange {
                name: name.to_string(),
                was: was.parse().ok()?,
                now: now.parse().ok()?,
            })
        };
        let changes: Option<Vec<SysctlChange>> = list.split(", ").map(change).collect();
        changes
            .map(SysctlsChanged)
            .filter(|s| !s.0.is_empty() && s.to_string() == line)
            .ok_or(NotThisFinding)
    }
}

/// The text of `line` between `prefix` and `suffix`.
fn between<'a>(line: &'a str, prefix: &str, suffix: &str) -> Option<&'a str> {
    line.strip_prefix(prefix)?.strip_suffix(suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_findings_read_back_as_they_print() {
        let lines = [
            "device: the emulated disk's daemon fell up to 412 ms behind its model (CPU or memory bandwidth): throughput figures here are the daemon's ceiling, not the profile's",
            "device: 9 cache flushes during the run, 1.50 per foreground sync call (6 calls; setup included)",
            "device: 22238 cache flushes during the run",
        ];
        for line in lines {
            let finding: DeviceFinding = line.parse().expect(line);
            assert_eq!(finding.to_string(), line);
        }
        assert_eq!(
            lines[1].parse(),
            Ok(DeviceFinding::Flushes {
                flushes: 9,
                per_sync_call: Some((1.5, 6))
            })
        );
        // Lines that only look alike are not these findings: a scenario's, or one whose
        // number would print differently.
        for other in [
            "device: 9 cache flushes during the run, many per call",
            "device: 09 cache flushes during the run",
            "device: 9 cache flushes during the run, 1.5 per foreground sync call (6 calls; setup included)",
            "iozone under scheduler mq-deadline on vda: 4k files write+fsync at 9589 KB/s",
        ] {
            assert_eq!(other.parse::<DeviceFinding>(), Err(NotThisFinding), "{other}");
        }
    }

    #[test]
    fn changed_sysctls_read_back_as_they_print() {
        let line = "sysctls: vm.dirty_ratio 20 -> 5, vm.dirty_bytes 0 -> 4096 during the run (set by another process); the environment records the values at the start";
        let changed: SysctlsChanged = line.parse().unwrap();
        assert_eq!(changed.0.len(), 2);
        assert_eq!(
            changed.0[1],
            SysctlChange {
                name: "dirty_bytes".into(),
                was: 0,
                now: 4096
            }
        );
        assert_eq!(changed.to_string(), line);
        assert!(
            "sysctls:  during the run (set by another process); the environment records the values at the start"
                .parse::<SysctlsChanged>()
                .is_err()
        );
    }
}
