//! Per-device dirty limits (`--bdi strict_limit=1,max_bytes=4M`): the knobs of the scratch
//! loop device's backing device info in `/sys/class/bdi/MAJ:MIN/`, as
//! Documentation/ABI/testing/sysfs-class-bdi describes them.
//!
//! - `strict_limit` (0 or 1): the device's share of the dirty limit is enforced even while
//!   the system as a whole is below its own (balance_dirty_pages then throttles writers of
//!   this device alone);
//! - `max_ratio`, `min_ratio` (percent of the dirty limit), `max_bytes`, `min_bytes` (the
//!   byte forms, Linux 6.2 and later): the device's share of the dirty limit.
//!
//! The kernel keeps the byte forms as a ratio of the dirty limit at the time they are
//! written (`bdi_set_max_bytes` converts them; reading `max_bytes` back gives that ratio
//! of the current limit). So what a run changed is restored through the precise ratio files
//! (`max_ratio_fine`, `min_ratio_fine`, parts per million) and `strict_limit`: those are the
//! files [`restore_file`] names and the undo step writes back. `read_ahead_kb` is left alone.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{Context as _, Result};

use crate::error::Usage;
use crate::units::parse_size;

/// The knobs `--bdi` sets, as the kernel names them.
pub const KNOBS: [&str; 5] = ["strict_limit", "max_bytes", "max_ratio", "min_bytes", "min_ratio"];

/// The files an undo writes back: `fsynclab cleanup` writes no other, whatever a state file
/// says.
pub const RESTORED: [&str; 3] = ["strict_limit", "max_ratio_fine", "min_ratio_fine"];

/// `--bdi KNOB=VALUE,...` as typed, each value checked for its form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BdiSpec {
    /// In the order given: the kernel refuses a `min` above the `max` in force, so the
    /// order can matter.
    pub knobs: Vec<(&'static str, u64)>,
}

impl BdiSpec {
    pub fn parse(text: &str) -> Result<BdiSpec, Usage> {
        let bad = |why: String| {
            Usage(format!(
                "--bdi {text}: {why}; expected KNOB=VALUE,... with KNOB one of {} (e.g. strict_limit=1,max_bytes=4M)",
                KNOBS.join(", ")
            ))
        };
        // A value of the wrong form: what that knob takes is all the message needs.
        let bad_value = |why: String| Usage(format!("--bdi {text}: {why}"));
        let mut knobs: Vec<(&'static str, u64)> = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("'{part}' is not KNOB=VALUE")))?;
            let knob = KNOBS
                .into_iter()
                .find(|n| *n == k.trim())
                .ok_or_else(|| bad(format!("unknown knob '{}'", k.trim())))?;
            let v = v.trim();
            let value = match knob {
                "strict_limit" => match v {
                    "0" => 0,
                    "1" => 1,
                    _ => return Err(bad_value(format!("strict_limit={v}: expected 0 or 1"))),
                },
                "max_ratio" | "min_ratio" => v
                    .parse::<u64>()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| bad_value(format!("{knob}={v}: expected a percentage from 0 to 100")))?,
                _ => parse_size(v).map_err(|e| bad_value(format!("{knob}: {e}")))?.get(),
            };
            if knobs.iter().any(|(n, _)| *n == knob) {
                return Err(bad(format!("{knob} is given twice")));
            }
            knobs.push((knob, value));
        }
        if knobs.is_empty() {
            return Err(bad("no knob given".into()));
        }
        Ok(BdiSpec { knobs })
    }
}

impl fmt::Display for BdiSpec {
    /// As typed, sizes in bytes: `strict_limit=1,max_bytes=4194304`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.knobs.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { "" } else { "," })?;
        }
        Ok(())
    }
}

/// The file whose value, written back, undoes a change of `knob`.
pub fn restore_file(knob: &str) -> &'static str {
    match knob {
        "max_bytes" | "max_ratio" => "max_ratio_fine",
        "min_bytes" | "min_ratio" => "min_ratio_fine",
        _ => "strict_limit",
    }
}

/// `/sys/block/loop3/bdi` for `/dev/loop3`: the device's bdi directory.
fn dir(device: &str) -> String {
    format!("/sys/block/{}/bdi", device.trim_start_matches("/dev/"))
}

/// Reads knob or file `name` of `device`'s bdi.
pub fn read(device: &str, name: &str) -> Result<u64> {
    let path = format!("{}/{name}", dir(device));
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    text.trim()
        .parse()
        .with_context(|| format!("{path}: not a number: {}", text.trim()))
}

/// Writes knob or file `name` of `device`'s bdi; a value the kernel refuses (a min above
/// the max, a kernel without the byte knobs) is a one-line usage error.
pub fn write(device: &str, name: &str, value: u64) -> Result<()> {
    let path = format!("{}/{name}", dir(device));
    if !std::path::Path::new(&path).exists() {
        return Err(Usage(format!(
            "--bdi {name}: this kernel has no {path} (the byte knobs came with Linux 6.2, strict_limit with 3.18)"
        ))
        .into());
    }
    std::fs::write(&path, value.to_string())
        .map_err(|e| Usage(format!("--bdi {name}={value}: the kernel refused it ({e})")).into())
}

/// Every knob of `device`'s bdi that `--bdi` can set, as read now: what a result records.
pub fn read_all(device: &str) -> BTreeMap<String, u64> {
    KNOBS
        .into_iter()
        .filter_map(|k| Some((k.to_string(), read(device, k).ok()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_are_read_in_order_with_their_units() {
        let s = BdiSpec::parse("strict_limit=1, max_bytes=4M,min_ratio=2").unwrap();
        assert_eq!(s.knobs, [("strict_limit", 1), ("max_bytes", 4 << 20), ("min_ratio", 2)]);
        assert_eq!(s.to_string(), "strict_limit=1,max_bytes=4194304,min_ratio=2");
    }

    #[test]
    fn bad_knobs_and_values_are_refused_in_one_line() {
        let err = |t: &str| BdiSpec::parse(t).unwrap_err().to_string();
        assert!(err("dirty=1").contains("unknown knob 'dirty'"), "{}", err("dirty=1"));
        assert!(err("strict_limit=2").contains("expected 0 or 1"));
        assert!(err("max_ratio=101").contains("percentage"));
        assert!(
            err("max_bytes=lots").starts_with("--bdi max_bytes=lots: max_bytes: expected a size"),
            "{}",
            err("max_bytes=lots")
        );
        assert!(err("max_bytes=1M,max_bytes=2M").contains("given twice"));
        assert!(err("").contains("no knob given"));
        assert!(!err("x").contains('\n'));
    }

    #[test]
    fn byte_and_ratio_knobs_are_restored_through_the_fine_ratio() {
        assert_eq!(restore_file("max_bytes"), "max_ratio_fine");
        assert_eq!(restore_file("max_ratio"), "max_ratio_fine");
        assert_eq!(restore_file("min_bytes"), "min_ratio_fine");
        assert_eq!(restore_file("strict_limit"), "strict_limit");
        for k in KNOBS {
            assert!(RESTORED.contains(&restore_file(k)), "{k}");
        }
    }
}
