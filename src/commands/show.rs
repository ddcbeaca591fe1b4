//! `fsynclab show RUN|FILE`: a stored run or a saved result printed again, in any format.

use std::path::Path;

use anyhow::Result;

use super::select::run_id;
use crate::cli::Format;
use crate::error::Usage;
use crate::recording;
use crate::result::RunResult;
use crate::store::{RunId, Store};

/// `fsynclab show RUN|FILE`: a stored run or a saved result printed again, in any format.
pub(crate) fn show(what: &Path, format: Format, store: Option<&Path>) -> Result<i32> {
    let result = if what.is_file() {
        let mut result = RunResult::load(what)?;
        samples_from_store(&mut result, format)?;
        result
    } else {
        let id = run_id(&what.to_string_lossy(), "show")?;
        let (store, _) = recording::open_for_reading(store)?;
        recording::result_of(recording::read_run(&store, id)?)?
    };
    if format == Format::Seed && result.details.is_none() {
        return Err(Usage(format!(
            "{}: this result has no details to print the seed format from (an older fsynclab wrote it); rerun it with this version",
            what.display()
        ))
        .into());
    }
    crate::report::print(&crate::report::exporter(format, false).render(&result))
}
/// A result file without its samples (a suite's, whose samples are in the store) gets them
/// from the run it names, when the format prints calls and the store still has the run.
fn samples_from_store(result: &mut RunResult, format: Format) -> Result<()> {
    let Some(at) = result
        .stored
        .clone()
        .filter(|_| result.samples.is_empty() && format != Format::Text)
    else {
        return Ok(());
    };
    let at_store = crate::store::Location::parse(Path::new(&at.store));
    let found = at_store
        .as_file()
        .is_none_or(Path::is_file)
        .then(|| Store::open_read_only(&at_store).ok())
        .flatten()
        .and_then(|store| store.run(RunId(at.run)).ok())
        .filter(|run| run.uid == at.uid);
    match found {
        Some(run) => {
            result.samples = recording::samples_of(&run.samples).map_err(|e| anyhow::anyhow!("run {}: {e}", at.run))?;
            Ok(())
        }
        None => Err(Usage(format!(
            "this file leaves its samples to run {} of the results store {}, which no longer has it; `--format text` prints the file alone",
            at.run, at.store
        ))
        .into()),
    }
}
