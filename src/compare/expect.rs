//! `--expect 'fsync.p99<50ms'`: a condition on one run-level figure ([`super::figures`],
//! named as `compare --figure` names them), checked against a run's result. Several make
//! the run's exit status a verdict: 0 when all are met, 1 when one is not, so that `git
//! bisect run` and a CI job can act on a measurement.
//!
//! The bound is read in the figure's own terms: a latency (`p50`, `p99`, `max`) takes a
//! duration with its unit (`50ms`, `250us`, `1s`: a bare number would leave ms and s to a
//! guess); a rate, a count or a share takes a plain number (`fsync.ops/s>=100`,
//! `acked.rate<=0`, `acked.rate<1%`).

use std::fmt;

use super::figures::{Figure, Metric, RunFigures};
use crate::units::parse_duration;

/// How a measured figure must stand to its bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    Below,
    AtMost,
    Above,
    AtLeast,
}

impl Relation {
    fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Relation::Below => value < bound,
            Relation::AtMost => value <= bound,
            Relation::Above => value > bound,
            Relation::AtLeast => value >= bound,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Relation::Below => "<",
            Relation::AtMost => "<=",
            Relation::Above => ">",
            Relation::AtLeast => ">=",
        }
    }
}

/// One `--expect`: a figure, a relation and a bound in the figure's stored unit (ns for
/// latencies), with the bound as the user wrote it.
#[derive(Clone, Debug, PartialEq)]
pub struct Expectation {
    pub figure: Figure,
    pub relation: Relation,
    /// In the unit the figures are stored in ([`RunFigures::values`]): ns for latencies.
    pub bound: f64,
    written: String,
}

/// What checking an expectation against a run found.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Met(f64),
    NotMet(f64),
    /// The run has no such figure (no call of that kind was made).
    Missing,
}

/// `text` as an error echoes it: whole up to 60 characters, else its first 60 and how long
/// it was (a 100,000-character value made a 200 KB error).
fn shown(text: &str) -> String {
    const SHOWN: usize = 60;
    match text.char_indices().nth(SHOWN) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}... ({} characters)", &text[..cut], text.chars().count()),
    }
}

/// The help every malformed expression repeats.
const FORM: &str = "expected FIGURE<VALUE (or <=, >, >=), e.g. 'fsync.p99<50ms', 'fsync.ops/s>=100', 'commit.tps>500'";

impl Expectation {
    /// Parses `fsync.p99<50ms`; the error is one line saying what is valid.
    pub fn parse(text: &str) -> Result<Expectation, String> {
        let t = text.trim();
        // What the errors echo of it: a few words, not a pasted file.
        let text = &shown(text);
        let at = t
            .find(['<', '>'])
            .ok_or_else(|| format!("--expect {text}: no comparison; {FORM}"))?;
        let (name, rest) = t.split_at(at);
        let (relation, value) = match rest {
            r if r.starts_with("<=") => (Relation::AtMost, &r[2..]),
            r if r.starts_with(">=") => (Relation::AtLeast, &r[2..]),
            r if r.starts_with('<') => (Relation::Below, &r[1..]),
            r => (Relation::Above, &r[1..]),
        };
        let (name, value) = (name.trim(), value.trim());
        let figure = Figure::parse(name).ok_or_else(|| {
            let name = shown(name);
            format!("--expect {text}: '{name}' is not a figure: KIND.METRIC with METRIC one of p50, p99, max, ops/s, mb/s, tps, lost, torn, rate, as `fsynclab compare` shows them; {FORM}")
        })?;
        let bound = Self::bound(&figure, value).map_err(|why| format!("--expect {text}: {why}"))?;
        Ok(Expectation {
            written: format!("{figure}{}{value}", relation.symbol()),
            figure,
            relation,
            bound,
        })
    }

    /// The bound `value` in the figure's stored unit.
    fn bound(figure: &Figure, value: &str) -> Result<f64, String> {
        if value.is_empty() {
            return Err(format!("no value after the comparison; {FORM}"));
        }
        // What the errors echo of it.
        let said = shown(value);
        match figure.metric {
            Metric::P50 | Metric::P99 | Metric::Max => {
                if value.chars().all(|c| c.is_ascii_digit() || c == '.') {
                    return Err(format!(
                        "'{said}' needs a unit: {figure} is a latency, e.g. {said}ms or {said}us"
                    ));
                }
                parse_duration(value)
                    .map(|d| d.as_nanos() as f64)
                    .map_err(|_| format!("'{said}' is not a duration like 50ms, 250us or 1s"))
            }
            _ => {
                let (number, scale) = match value.strip_suffix('%') {
                    Some(n) if figure.metric == Metric::Rate => (n, 0.01),
                    _ => (value, 1.0),
                };
                number
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .map(|v| v * scale)
                    .ok_or_else(|| format!("'{said}' is not a number ({} is in {})", figure, figure.unit()))
            }
        }
    }

    /// Checks the expectation against a run's figures.
    pub fn check(&self, run: &RunFigures) -> Outcome {
        match run.values.get(&self.figure) {
            None => Outcome::Missing,
            Some(&v) if self.relation.holds(v, self.bound) => Outcome::Met(v),
            Some(&v) => Outcome::NotMet(v),
        }
    }

    /// The line a user reads: `expect fsync.p99<50ms: measured 12.3 ms, met`.
    pub fn line(&self, outcome: &Outcome, run: &RunFigures) -> String {
        let measured = |v: f64| format!("{} {}", self.figure.format(v), self.figure.unit());
        match outcome {
            Outcome::Met(v) => format!("expect {self}: measured {}, met", measured(*v)),
            Outcome::NotMet(v) => format!("expect {self}: measured {}, not met", measured(*v)),
            Outcome::Missing => {
                let has: Vec<String> = run.values.keys().map(Figure::to_string).collect();
                format!(
                    "expect {self}: the run has no {} (it has {}), cannot decide",
                    self.figure,
                    if has.is_empty() {
                        "no figures".into()
                    } else {
                        has.join(", ")
                    }
                )
            }
        }
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

/// The verdict of every expectation on a run: its lines, and whether all were met
/// (`Some(true)`), one was not (`Some(false)`), or one could not be decided (`None`, the
/// run lacks a figure; a figure missed outweighs one not met, since a misspelt kind must
/// not read as a regression).
pub fn verdict(expectations: &[Expectation], run: &RunFigures) -> (Vec<String>, Option<bool>) {
    let mut lines = Vec::new();
    let mut all = Some(true);
    for e in expectations {
        let outcome = e.check(run);
        lines.push(e.line(&outcome, run));
        all = combined(all, &outcome);
    }
    (lines, all)
}

/// The verdict so far with one more outcome: a figure missing outweighs one not met.
fn combined(all: Option<bool>, outcome: &Outcome) -> Option<bool> {
    match (all, outcome) {
        (None, _) | (_, Outcome::Missing) => None,
        (Some(ok), Outcome::Met(_)) => Some(ok),
        (Some(_), Outcome::NotMet(_)) => Some(false),
    }
}

/// One run of a set (a suite's scenario), by name, with its figures, or why it has none (it
/// failed, or was skipped).
pub struct NamedRun {
    pub name: String,
    pub figures: Result<RunFigures, String>,
}

impl Expectation {
    /// The run of `runs` this expectation names by its figure's first word
    /// (`overwrite-fsync.fsync.p99<50ms`), and the expectation without that word.
    fn named<'r>(&self, runs: &'r [NamedRun]) -> Option<(&'r NamedRun, Expectation)> {
        let run = runs.iter().find(|r| {
            self.figure.subject.len() > r.name.len() + 1
                && self.figure.subject.starts_with(&r.name)
                && self.figure.subject.as_bytes()[r.name.len()] == b'.'
        })?;
        let skip = run.name.len() + 1;
        let own = Expectation {
            figure: Figure::new(&self.figure.subject[skip..], self.figure.metric),
            relation: self.relation,
            bound: self.bound,
            written: self.written[skip..].to_string(),
        };
        Some((run, own))
    }
}

/// The verdict of every expectation on a set of named runs, as [`verdict`] gives it on one:
/// an expectation whose figure begins with a run's name (`overwrite-fsync.fsync.p99<50ms`)
/// is judged on that run alone, and cannot be decided when that run has no figures; one
/// without a name is judged on every run that has its figure, and cannot be decided when
/// none has. Each line begins with the run's name.
pub fn verdict_over(expectations: &[Expectation], runs: &[NamedRun]) -> (Vec<String>, Option<bool>) {
    let mut lines = Vec::new();
    let mut all = Some(true);
    let mut fold = |outcome: &Outcome| all = combined(all, outcome);
    for e in expectations {
        if let Some((run, own)) = e.named(runs) {
            match &run.figures {
                Ok(figures) => {
                    let outcome = own.check(figures);
                    lines.push(format!("{}: {}", run.name, own.line(&outcome, figures)));
                    fold(&outcome);
                }
                Err(why) => {
                    lines.push(format!("{}: expect {own}: {why}, cannot decide", run.name));
                    fold(&Outcome::Missing);
                }
            }
            continue;
        }
        let having: Vec<(&NamedRun, &RunFigures)> = runs
            .iter()
            .filter_map(|r| r.figures.as_ref().ok().map(|f| (r, f)))
            .filter(|(_, f)| f.values.contains_key(&e.figure))
            .collect();
        if having.is_empty() {
            let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
            lines.push(format!(
                "expect {e}: no run has {} (name one of {} before it, e.g. '{}.{e}'), cannot decide",
                e.figure,
                names.join(", "),
                names.first().copied().unwrap_or("SCENARIO")
            ));
            fold(&Outcome::Missing);
        }
        for (run, figures) in having {
            let outcome = e.check(figures);
            lines.push(format!("{}: {}", run.name, e.line(&outcome, figures)));
            fold(&outcome);
        }
    }
    (lines, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunFigures {
        RunFigures {
            run: "r".into(),
            values: [
                (Figure::new("fsync", Metric::P99), 12_000_000.0),
                (Figure::new("fsync", Metric::OpsPerSec), 180.0),
            ]
            .into(),
        }
    }

    #[test]
    fn a_latency_bound_reads_its_unit() {
        let e = Expectation::parse("fsync.p99<50ms").unwrap();
        assert_eq!(e.figure, Figure::new("fsync", Metric::P99));
        assert_eq!(e.relation, Relation::Below);
        assert_eq!(e.bound, 50e6);
        assert_eq!(e.check(&run()), Outcome::Met(12e6));
        assert_eq!(
            e.line(&e.check(&run()), &run()),
            "expect fsync.p99<50ms: measured 12.0 ms, met"
        );
        let e = Expectation::parse(" fsync.p99 >= 1h ").unwrap();
        assert_eq!(e.check(&run()), Outcome::NotMet(12e6));
    }

    #[test]
    fn rates_and_shares_take_plain_numbers() {
        let e = Expectation::parse("fsync.ops/s>=100").unwrap();
        assert_eq!(e.check(&run()), Outcome::Met(180.0));
        assert_eq!(Expectation::parse("acked.rate<1%").unwrap().bound, 0.01);
        assert!(Expectation::parse("fsync.ops/s>1%").is_err());
    }

    #[test]
    fn malformed_expressions_say_what_is_valid() {
        for bad in [
            "fsync.p99",
            "fsync.p99<",
            "fsync.p42<5ms",
            "p99<5ms",
            "fsync.p99<50",
            "fsync.p99<fast",
            "fsync.ops/s>many",
        ] {
            let e = Expectation::parse(bad).unwrap_err();
            assert!(e.starts_with(&format!("--expect {bad}:")) && !e.contains('\n'), "{e}");
        }
        assert!(Expectation::parse("fsync.p99<50").unwrap_err().contains("needs a unit"));
    }

    /// A pasted file as `--expect` is refused in a line of a few words, not echoed twice
    /// (a 100,000-character value made a 200 KB error).
    #[test]
    fn a_huge_expression_is_refused_in_a_short_line() {
        let huge = format!("fsync.p99<{}", "9".repeat(100_000));
        for bad in [huge.clone(), "x".repeat(100_000), format!("{}<1s", "y".repeat(100_000))] {
            let e = Expectation::parse(&bad).unwrap_err();
            assert!(e.len() < 600, "{} bytes: {}", e.len(), &e[..200]);
            assert!(e.contains("characters)"), "{e}");
        }
    }

    #[test]
    fn every_expectation_must_hold_and_a_missing_figure_cannot_decide() {
        let met = Expectation::parse("fsync.p99<1s").unwrap();
        let not_met = Expectation::parse("fsync.p99<1ns").unwrap();
        let missing = Expectation::parse("fdatasync.p99<1s").unwrap();
        assert_eq!(verdict(std::slice::from_ref(&met), &run()).1, Some(true));
        assert_eq!(verdict(&[met.clone(), not_met.clone()], &run()).1, Some(false));
        let (lines, v) = verdict(&[not_met, missing], &run());
        assert_eq!(v, None);
        assert!(lines[1].contains("has no fdatasync.p99"), "{}", lines[1]);
    }

    fn named(name: &str, figures: Result<RunFigures, String>) -> NamedRun {
        NamedRun {
            name: name.into(),
            figures,
        }
    }

    /// Issue 26 item 5: a suite's expectations name a scenario, or hold for every one that
    /// has the figure.
    #[test]
    fn a_set_judges_a_named_runs_figure_on_it_and_an_unnamed_one_on_every_run_that_has_it() {
        let mut fast = run();
        fast.values.insert(Figure::new("fsync", Metric::P99), 1_000_000.0);
        let runs = [named("overwrite-fsync", Ok(run())), named("fsync-tps", Ok(fast))];
        let e = |t: &str| Expectation::parse(t).unwrap();
        let (lines, v) = verdict_over(&[e("fsync-tps.fsync.p99<5ms")], &runs);
        assert_eq!(v, Some(true));
        assert_eq!(lines, ["fsync-tps: expect fsync.p99<5ms: measured 1.00 ms, met"]);
        let (lines, v) = verdict_over(&[e("fsync.p99<5ms")], &runs);
        assert_eq!(v, Some(false), "{lines:?}");
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("overwrite-fsync: ") && lines[0].ends_with("not met"),
            "{lines:?}"
        );
        let (lines, v) = verdict_over(&[e("fdatasync.p99<5ms")], &runs);
        assert_eq!(v, None);
        assert!(lines[0].contains("no run has fdatasync.p99"), "{lines:?}");
        let failed = [named("overwrite-fsync", Err("it failed".into()))];
        let (lines, v) = verdict_over(&[e("overwrite-fsync.fsync.p99<5ms")], &failed);
        assert_eq!(v, None);
        assert_eq!(
            lines,
            ["overwrite-fsync: expect fsync.p99<5ms: it failed, cannot decide"]
        );
    }
}
