//! Injected faults (`--device PROFILE,fail=...`): requests the drive fails with EIO on
//! purpose, as dm-error and dm-flakey do below a filesystem, so that fsynclab can show what
//! the kernel then tells an application.
//!
//! A rule names the kind of request it fails (write, read or flush) and, optionally, when:
//! requests touching a byte range; once it has let `after=N` matching requests through, or
//! once `after=DURATION` has passed; each with a probability (drawn from the rule's seed, in
//! order of arrival); and transiently (`times=K`: K failures, then it lets everything
//! through). Every rule sees every request of its kind and range, and a request fails when
//! any rule fails it. A failed request changes nothing in the drive: a write does not enter
//! the cache, a flush drains nothing, and each returns at once.

use std::fmt;
use std::time::Duration;

use super::{Disk, Nanos};
use crate::rng::SplitMix64;
use crate::units::{format_duration, format_size, Bytes};

/// The kind of request a rule fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FaultKind {
    Write,
    Read,
    Flush,
}

impl FaultKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            FaultKind::Write => "write",
            FaultKind::Read => "read",
            FaultKind::Flush => "flush",
        }
    }
}

/// From when a rule fails the requests it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FaultStart {
    /// From the first request.
    Now,
    /// Once it has let this many matching requests through.
    AfterRequests(u64),
    /// Once this long has passed since the rules were set (the device's start).
    AfterTime(Duration),
}

/// One `fail=` rule.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FaultRule {
    pub(crate) kind: FaultKind,
    /// `(offset, length)`: only reads and writes touching these bytes (not for flushes).
    pub(crate) range: Option<(u64, u64)>,
    pub(crate) start: FaultStart,
    /// The chance that a request the rule applies to fails, in (0, 1].
    pub(crate) probability: f64,
    /// Transient: the rule fails this many requests, then none.
    pub(crate) times: Option<u64>,
    /// Seeds the probability's draws.
    pub(crate) seed: u64,
}

impl FaultRule {
    /// A rule failing every request of `kind`.
    pub(crate) fn always(kind: FaultKind) -> FaultRule {
        FaultRule {
            kind,
            range: None,
            start: FaultStart::Now,
            probability: 1.0,
            times: None,
            seed: 0,
        }
    }

    fn touches(&self, offset: u64, len: u64) -> bool {
        match self.range {
            None => true,
            Some((from, length)) => offset < from.saturating_add(length) && offset.saturating_add(len.max(1)) > from,
        }
    }
}

impl fmt::Display for FaultRule {
    /// The rule as `fail=` takes it, every condition spelled out once.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fail={}", self.kind.name())?;
        if let Some((offset, len)) = self.range {
            write!(f, ":range={}+{}", format_size(Bytes(offset)), format_size(Bytes(len)))?;
        }
        match self.start {
            FaultStart::Now => {}
            FaultStart::AfterRequests(n) => write!(f, ":after={n}")?,
            FaultStart::AfterTime(d) => write!(f, ":after={}", format_duration(d))?,
        }
        if self.probability < 1.0 {
            write!(f, ":p={}", self.probability)?;
        }
        if let Some(k) = self.times {
            write!(f, ":times={k}")?;
        }
        if self.seed != 0 {
            write!(f, ":seed={}", self.seed)?;
        }
        Ok(())
    }
}

/// The rules in force, each with what it has seen.
#[derive(Clone, Debug, Default)]
pub(super) struct Faults {
    rules: Vec<RuleState>,
    /// When the rules were set: `after=DURATION` counts from here.
    since: Nanos,
}

#[derive(Clone, Debug)]
struct RuleState {
    rule: FaultRule,
    /// Requests of its kind and range seen so far.
    matched: u64,
    /// Requests it failed.
    failed: u64,
    draws: SplitMix64,
}

impl Faults {
    pub(super) fn new(rules: &[FaultRule], since: Nanos) -> Faults {
        Faults {
            rules: rules
                .iter()
                .map(|rule| RuleState {
                    rule: rule.clone(),
                    matched: 0,
                    failed: 0,
                    draws: SplitMix64::new(rule.seed),
                })
                .collect(),
            since,
        }
    }

    /// Whether a request of `kind` touching `[offset, offset + len)` arriving at `now` fails.
    fn fails(&mut self, kind: FaultKind, now: Nanos, offset: u64, len: u64) -> bool {
        let elapsed = now.saturating_sub(self.since);
        let mut fails = false;
        for r in self.rules.iter_mut().filter(|r| r.rule.kind == kind) {
            if kind != FaultKind::Flush && !r.rule.touches(offset, len) {
                continue;
            }
            let seen_before = r.matched;
            r.matched += 1;
            let started = match r.rule.start {
                FaultStart::Now => true,
                FaultStart::AfterRequests(n) => seen_before >= n,
                FaultStart::AfterTime(d) => u128::from(elapsed) >= d.as_nanos(),
            };
            let spent = r.rule.times.is_some_and(|k| r.failed >= k);
            if !started || spent {
                continue;
            }
            let drawn = r.rule.probability >= 1.0
                || (r.draws.next_u64() as f64) < r.rule.probability * 18_446_744_073_709_551_616.0;
            if drawn {
                r.failed += 1;
                fails = true;
            }
        }
        fails
    }
}

impl Disk {
    /// Whether the drive fails a request of `kind` on `[offset, offset + len)` arriving at
    /// `now` (flushes: offset and length 0). A failed request is counted and changes nothing
    /// else; the caller answers it with EIO at once.
    pub(crate) fn fails(&mut self, kind: FaultKind, now: Nanos, offset: u64, len: u64) -> bool {
        if !self.faults.fails(kind, now, offset, len) {
            return false;
        }
        match kind {
            FaultKind::Write => self.stats.failed_writes += 1,
            FaultKind::Read => self.stats.failed_reads += 1,
            FaultKind::Flush => self.stats.failed_flushes += 1,
        }
        true
    }

    /// Replaces the rules in force from `now` (`after=DURATION` counts from then); an empty
    /// list makes the drive healthy again.
    pub(crate) fn set_faults(&mut self, rules: &[FaultRule], now: Nanos) {
        self.faults = Faults::new(rules, now);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{chunk, hdd, MS};
    use super::super::{DiskFigures, WriteOutcome};
    use super::*;

    fn disk(rules: Vec<FaultRule>) -> Disk {
        Disk::new(DiskFigures {
            faults: rules,
            ..hdd(1 << 20)
        })
    }

    #[test]
    fn a_write_rule_fails_requests_touching_its_range_after_n_of_them() {
        // fail=write:range=1M+64K:after=2
        let mut d = disk(vec![FaultRule {
            range: Some((1 << 20, 64 << 10)),
            start: FaultStart::AfterRequests(2),
            ..FaultRule::always(FaultKind::Write)
        }]);
        let w = FaultKind::Write;
        // Outside the range (ending where it starts, starting where it ends): never counted.
        assert!(!d.fails(w, 0, (1 << 20) - 4096, 4096));
        assert!(!d.fails(w, 0, (1 << 20) + (64 << 10), 4096));
        // The first two inside pass, every later one fails, reads are not its kind.
        assert!(!d.fails(w, 0, 1 << 20, 4096));
        assert!(!d.fails(w, 0, (1 << 20) + 8192, 512));
        assert!(d.fails(w, 0, (1 << 20) - 512, 1024), "straddles the start");
        assert!(d.fails(w, 0, 1 << 20, 4096));
        assert!(!d.fails(FaultKind::Read, 0, 1 << 20, 4096));
        assert_eq!((d.stats().failed_writes, d.stats().failed_reads), (2, 0));
        // A failed write never entered the drive.
        assert_eq!(d.stats().writes, 0);
    }

    #[test]
    fn a_timed_transient_rule_fails_k_requests_from_its_moment() {
        // fail=flush:after=10ms:times=2, set at 5 ms: from 15 ms, two flushes fail.
        let mut d = disk(Vec::new());
        d.set_faults(
            &[FaultRule {
                start: FaultStart::AfterTime(Duration::from_millis(10)),
                times: Some(2),
                ..FaultRule::always(FaultKind::Flush)
            }],
            5 * MS,
        );
        let f = FaultKind::Flush;
        let at = [14 * MS, 15 * MS, 16 * MS, 17 * MS, 100 * MS];
        let failed: Vec<bool> = at.iter().map(|&t| d.fails(f, t, 0, 0)).collect();
        assert_eq!(failed, [false, true, true, false, false]);
        assert_eq!(d.stats().failed_flushes, 2);
        // Cleared: healthy again.
        d.set_faults(&[], 100 * MS);
        assert!(!d.fails(f, 200 * MS, 0, 0));
    }

    #[test]
    fn a_probability_draws_from_the_seed_in_order_of_arrival() {
        let rule = FaultRule {
            probability: 0.25,
            seed: 42,
            ..FaultRule::always(FaultKind::Read)
        };
        let pattern = |rule: &FaultRule| -> Vec<bool> {
            let mut d = disk(vec![rule.clone()]);
            (0..400).map(|i| d.fails(FaultKind::Read, 0, i * 4096, 4096)).collect()
        };
        let a = pattern(&rule);
        assert_eq!(a, pattern(&rule), "the same seed fails the same requests");
        // About a quarter fail (a binomial(400, 0.25) falls in 70..130 but for 1e-4 of seeds).
        let failed = a.iter().filter(|f| **f).count();
        assert!((70..130).contains(&failed), "{failed} of 400 at p=0.25");
        let other = pattern(&FaultRule { seed: 43, ..rule });
        assert_ne!(a, other, "another seed, other requests");
    }

    #[test]
    fn a_failed_write_leaves_the_cache_as_it_was() {
        let mut d = disk(vec![FaultRule {
            times: Some(1),
            ..FaultRule::always(FaultKind::Write)
        }]);
        // The daemon asks first, and only a write that does not fail enters the drive.
        assert!(d.fails(FaultKind::Write, 0, 0, 4096));
        assert!(!d.fails(FaultKind::Write, 0, 0, 4096));
        assert!(matches!(d.write(0, 0, chunk(4096, 1)), WriteOutcome::Cached { .. }));
        assert_eq!((d.stats().writes, d.cached_bytes()), (1, 4096));
    }

    #[test]
    fn rules_read_back_as_typed() {
        let rule = FaultRule {
            range: Some((1 << 30, 64 << 20)),
            start: FaultStart::AfterRequests(100),
            probability: 0.5,
            times: Some(3),
            seed: 7,
            ..FaultRule::always(FaultKind::Write)
        };
        assert_eq!(
            rule.to_string(),
            "fail=write:range=1G+64M:after=100:p=0.5:times=3:seed=7"
        );
        assert_eq!(FaultRule::always(FaultKind::Flush).to_string(), "fail=flush");
    }
}
