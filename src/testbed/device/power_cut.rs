//! Power cuts of the emulated disk as its users ask for them (issue 18): when the power goes
//! ([`CutTrigger`]: now, after a time, as the Nth flush or write is acknowledged, or at a
//! moment drawn from a seed), what survives of the drive's cache ([`Keep`]), and the seed of
//! every draw. [`CutPlan::parse`] reads `after=2s,keep=prefix,seed=7`; the device carries a
//! plan out ([`super::fuse::DeviceControl::arm_cut`]) and records what the cut did in a
//! [`crate::environment::PowerCut`].

use std::fmt;
use std::time::Duration;

pub use super::model::Keep;
use crate::rng::SplitMix64;
use crate::units::{format_duration, parse_duration};

/// When the power goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CutTrigger {
    /// As soon as the plan is armed.
    Now,
    /// Once this long has passed since the plan was armed.
    After(Duration),
    /// As the Nth flush since the plan was armed is acknowledged.
    Flushes(u64),
    /// As the Nth write since the plan was armed is acknowledged.
    Writes(u64),
    /// At a moment drawn from the seed, uniformly within this long after arming.
    Random { within: Duration },
}

/// A power cut to make: when, what survives, and the seed of its draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CutPlan {
    pub trigger: CutTrigger,
    pub keep: Keep,
    pub seed: u64,
}

/// What a cut plan takes, for error messages.
pub const CUT_SYNTAX: &str =
    "after=DURATION, flushes=N, writes=N, random=DURATION or now; then keep=none|prefix|any|torn and seed=N, e.g. after=2s,keep=prefix,seed=7";

/// The stream the random moment is drawn from: apart from the one the cut's survivors are
/// drawn from (the seed itself), so that the moment and what survives are independent.
const MOMENT_STREAM: u64 = 0x6D6F_6D65_6E74_2121;

impl CutPlan {
    /// A cut now that keeps nothing.
    pub fn now() -> CutPlan {
        CutPlan {
            trigger: CutTrigger::Now,
            keep: Keep::Nothing,
            seed: 0,
        }
    }

    /// Parses `TRIGGER[,keep=K][,seed=N]` (see [`CUT_SYNTAX`]). The error says what is wrong
    /// and what is valid, in one line; the caller puts the flag it came with in front.
    pub fn parse(text: &str) -> Result<CutPlan, String> {
        let bad = |why: String| format!("{why}; a cut takes {CUT_SYNTAX}");
        let mut trigger = None;
        let mut plan = CutPlan::now();
        for part in text.split(',').map(str::trim) {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            let duration =
                || parse_duration(value).map_err(|_| bad(format!("{part}: expected a duration like 2s or 250ms")));
            let count = || {
                value
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad(format!("{part}: expected a count, 1 or more")))
            };
            let next = match key {
                "now" if value.is_empty() => Some(CutTrigger::Now),
                "after" => Some(CutTrigger::After(duration()?)),
                "flushes" => Some(CutTrigger::Flushes(count()?)),
                "writes" => Some(CutTrigger::Writes(count()?)),
                "random" => {
                    let within = duration()?;
                    if within.is_zero() {
                        return Err(bad(format!("{part}: a moment within nothing is now; give a duration")));
                    }
                    Some(CutTrigger::Random { within })
                }
                "keep" => {
                    plan.keep = Keep::from_name(value).ok_or_else(|| bad(format!("{part}: unknown keep")))?;
                    None
                }
                "seed" => {
                    plan.seed = value
                        .parse()
                        .map_err(|_| bad(format!("{part}: expected a whole number")))?;
                    None
                }
                _ => return Err(bad(format!("unknown option '{key}'"))),
            };
            if let Some(t) = next {
                if trigger.replace(t).is_some() {
                    return Err(bad(format!("{part}: one trigger at a time")));
                }
            }
        }
        plan.trigger = trigger.ok_or_else(|| bad("no trigger: say when".into()))?;
        Ok(plan)
    }

    /// For a time trigger, how long after arming the cut comes: the random moment drawn
    /// from the seed (its own stream), in whole nanoseconds.
    pub fn delay(&self) -> Option<Duration> {
        match self.trigger {
            CutTrigger::Now => Some(Duration::ZERO),
            CutTrigger::After(d) => Some(d),
            CutTrigger::Random { within } => {
                let x = SplitMix64::new(self.seed ^ MOMENT_STREAM).next_u64();
                let ns = (u128::from(x) * within.as_nanos()) >> 64;
                Some(Duration::from_nanos(ns as u64))
            }
            CutTrigger::Flushes(_) | CutTrigger::Writes(_) => None,
        }
    }

    /// How the trigger reads in a cut's record: `after 2s`, `after 100 flushes`,
    /// `at 1.234567s (random within 5s)`.
    pub(crate) fn trigger_text(&self) -> String {
        match self.trigger {
            CutTrigger::Now => "now".into(),
            CutTrigger::After(d) => format!("after {}", format_duration(d)),
            CutTrigger::Flushes(n) => format!("after {n} flushes"),
            CutTrigger::Writes(n) => format!("after {n} writes"),
            CutTrigger::Random { within } => format!(
                "at {:.6}s (random within {})",
                self.delay().unwrap_or_default().as_secs_f64(),
                format_duration(within)
            ),
        }
    }
}

impl fmt::Display for CutPlan {
    /// The plan as [`CutPlan::parse`] reads it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.trigger {
            CutTrigger::Now => write!(f, "now")?,
            CutTrigger::After(d) => write!(f, "after={}", format_duration(d))?,
            CutTrigger::Flushes(n) => write!(f, "flushes={n}")?,
            CutTrigger::Writes(n) => write!(f, "writes={n}")?,
            CutTrigger::Random { within } => write!(f, "random={}", format_duration(within))?,
        }
        write!(f, ",keep={},seed={}", self.keep.name(), self.seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_and_read_back() {
        let p = CutPlan::parse("after=2s,keep=prefix,seed=7").unwrap();
        assert_eq!(
            p,
            CutPlan {
                trigger: CutTrigger::After(Duration::from_secs(2)),
                keep: Keep::Prefix,
                seed: 7
            }
        );
        assert_eq!(p.to_string(), "after=2s,keep=prefix,seed=7");
        assert_eq!(CutPlan::parse(&p.to_string()).unwrap(), p);
        assert_eq!(CutPlan::parse("flushes=100").unwrap().trigger, CutTrigger::Flushes(100));
        assert_eq!(CutPlan::parse("writes=3,keep=torn").unwrap().keep, Keep::Torn);
        assert_eq!(CutPlan::parse("now").unwrap(), CutPlan::now());
        assert_eq!(
            CutPlan::parse("flushes=100").unwrap().trigger_text(),
            "after 100 flushes"
        );
    }

    #[test]
    fn a_random_moment_comes_from_the_seed_within_the_window() {
        let plan = |seed| CutPlan::parse(&format!("random=10s,seed={seed}")).unwrap();
        let a = plan(1).delay().unwrap();
        assert_eq!(a, plan(1).delay().unwrap(), "the same seed, the same moment");
        assert_ne!(a, plan(2).delay().unwrap());
        let moments: Vec<Duration> = (0..200).map(|s| plan(s).delay().unwrap()).collect();
        assert!(moments.iter().all(|m| *m < Duration::from_secs(10)));
        // Spread over the window: some in each half.
        let early = moments.iter().filter(|m| **m < Duration::from_secs(5)).count();
        assert!((60..140).contains(&early), "{early} of 200 in the first half");
        assert!(plan(1).trigger_text().starts_with("at "), "{}", plan(1).trigger_text());
    }

    #[test]
    fn bad_plans_say_what_is_valid_in_one_line() {
        for (bad, says) in [
            ("after=soon", "after=soon: expected a duration like 2s"),
            ("flushes=0", "flushes=0: expected a count, 1 or more"),
            ("after=1s,writes=2", "writes=2: one trigger at a time"),
            ("keep=most,after=1s", "keep=most: unknown keep"),
            ("keep=any", "no trigger: say when"),
            ("random=0s", "a moment within nothing is now"),
            ("colour=red", "unknown option 'colour'"),
        ] {
            let err = CutPlan::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(err.ends_with(CUT_SYNTAX), "says what is valid: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }
}
