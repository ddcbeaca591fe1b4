//! `suite --expect`: the exit status as a verdict on the figures of the suite's scenarios,
//! each expectation naming a scenario (`overwrite-fsync.fsync.p99<50ms`) or holding for
//! every scenario that has its figure (`fsync.p99<50ms`), as `git bisect run` and a
//! database team's CI read it.

use crate::cli::SuiteArgs;
use crate::compare::expect::{self, Expectation, NamedRun};
use crate::error::{Usage, NOT_MADE};
use crate::result::RunResult;
use crate::scenario;

/// The `--expect` expressions, read: a malformed one, or one whose figure begins with a word
/// that is no scenario of the suite, is a usage error.
pub(crate) fn expectations(args: &SuiteArgs) -> Result<Vec<Expectation>, Usage> {
    let names: Vec<&str> = scenario::suite().iter().map(|s| s.name()).collect();
    args.expect
        .iter()
        .map(|text| {
            let e = Expectation::parse(text).map_err(Usage)?;
            match e.figure.subject.split_once('.') {
                Some((word, _)) if !names.contains(&word) => Err(Usage(format!(
                    "--expect {text}: '{word}' is not a scenario of the suite; name one of {} before the figure, or none to judge every scenario that has it",
                    names.join(", ")
                ))),
                _ => Ok(e),
            }
        })
        .collect()
}

/// A scenario's figures for [`judge`], or why it has none.
pub(crate) fn named(name: &str, result: Result<&RunResult, String>) -> NamedRun {
    NamedRun {
        name: name.to_string(),
        figures: result.and_then(|r| crate::compare::run_figures(name, r).map_err(|e| e.to_string())),
    }
}

/// Each expectation's line on stderr, then the exit status: 0 when every one is met and
/// every scenario ended clean, 1 when one is not met or `trouble` says why the suite did not
/// end clean, 125 when a figure is missing (a scenario failed, or has no such figure).
pub(crate) fn judge(expect: &[Expectation], runs: &[NamedRun], trouble: Option<String>) -> i32 {
    let (lines, all_met) = expect::verdict_over(expect, runs);
    for line in lines {
        note!("{line}");
    }
    match (all_met, trouble) {
        (None, _) => NOT_MADE,
        (Some(false), _) => 1,
        (Some(true), None) => 0,
        (Some(true), Some(why)) => {
            note!("fsynclab: --expect: {why}, so the suite does not meet what was expected");
            1
        }
    }
}

/// `--expect`'s exit status for a suite a guest ran (`--kernel`), on the results it brought
/// back and the guest's exit status (non-zero when a scenario did not end clean).
pub(crate) fn judged_in_guest(expect: &[Expectation], results: &[RunResult], code: i32) -> i32 {
    let runs: Vec<NamedRun> = results.iter().map(|r| named(&r.scenario, Ok(r))).collect();
    let trouble = (code != 0).then(|| format!("the suite exited with status {code} (a scenario did not end clean)"));
    judge(expect, &runs, trouble)
}
