//! `/proc/vmstat`: lines `name value`, the kernel's memory counters (their names are those
//! of mm/vmstat.c; Documentation/admin-guide/sysctl/vm.rst explains the dirty limits).
//! Kept: the dirty limits the kernel computed last, in pages; every other counter is ignored.

use std::str::FromStr;

/// The value of line `name` in a `name value` file.
fn field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let rest = rest.strip_prefix(':').unwrap_or(rest);
        if !rest.starts_with(' ') {
            return None;
        }
        let mut words = rest.split_whitespace();
        let value: u64 = words.next()?.parse().ok()?;
        Some(if words.next() == Some("kB") {
            value * 1024
        } else {
            value
        })
    })
}

/// The fields of `/proc/vmstat` fsynclab reads (lines `name value`), in pages: the dirty
/// limits the kernel computed last; the other counters are ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Vmstat {
    pub(crate) dirty_threshold_pages: u64,
    pub(crate) dirty_background_threshold_pages: u64,
}

impl FromStr for Vmstat {
    type Err = String;

    fn from_str(text: &str) -> Result<Vmstat, String> {
        let get = |name: &str| field(text, name).ok_or_else(|| format!("vmstat: no {name} line"));
        Ok(Vmstat {
            dirty_threshold_pages: get("nr_dirty_threshold")?,
            dirty_background_threshold_pages: get("nr_dirty_background_threshold")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VMSTAT: &str = include_str!("../../tests/fixtures/proc-vmstat.txt");

    #[test]
    fn vmstat_fixture() {
        let v: Vmstat = VMSTAT.parse().unwrap();
        assert!(v.dirty_threshold_pages > v.dirty_background_threshold_pages);
        assert_eq!(
            (v.dirty_threshold_pages, v.dirty_background_threshold_pages),
            (780684, 600187)
        );
        assert!("nr_dirty 5".parse::<Vmstat>().is_err());
    }
}
