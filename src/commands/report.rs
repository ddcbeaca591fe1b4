//! `fsynclab report RUN... | --matrix ID -o report.html`: the HTML page of [`crate::html`]
//! for runs named as `compare` names them, or for a stored matrix — its table, and of each
//! cell the run whose figure is the median (every repetition would make a page too large to
//! read, and the median run is the cell's typical one).

use anyhow::Result;

use super::select::{only_host, pick, Picked};
use crate::cli::ReportArgs;
use crate::html::{self, Page, PageRun};
use crate::matrix::table::StoredMatrix;
use crate::recording;
use crate::result::RunResult;
use crate::store::{SampleColumns, Store};

pub(crate) fn html_page(args: &ReportArgs) -> Result<i32> {
    // The store in use (read or not: a report of files still must not land on it).
    let store = recording::store_path(args.store.store.as_deref(), false).ok().flatten();
    crate::named_file::check(&args.output, store.as_ref().and_then(|s| s.as_file()))?;
    let page = match &args.matrix {
        Some(id) => matrix_page(args, id)?,
        None => runs_page(args)?,
    };
    let html = html::render(&page);
    crate::named_file::write(&args.output, store.as_ref().and_then(|s| s.as_file()), |out| {
        use std::io::Write;
        Ok(out.write_all(html.as_bytes())?)
    })?;
    note!(
        "{}: {} run{}{}, {} KB",
        args.output.display(),
        page.runs.len(),
        if page.runs.len() == 1 { "" } else { "s" },
        if page.matrix.is_some() {
            " and the matrix table"
        } else {
            ""
        },
        html.len() / 1000
    );
    Ok(0)
}

fn runs_page(args: &ReportArgs) -> Result<Page> {
    let mut opened: Option<Store> = None;
    let mut runs = Vec::new();
    for spec in &args.runs {
        let mut store = || recording::open_for_reading(args.store.store.as_deref()).map(|(s, _)| s);
        for picked in only_host(pick(spec, &mut store)?, args.host.as_deref(), spec)? {
            runs.push(match picked {
                Picked::Stored(summary) => {
                    if opened.is_none() {
                        opened = Some(store()?);
                    }
                    let store = opened.as_ref().ok_or_else(|| anyhow::anyhow!("no store"))?;
                    PageRun::from_stored(&recording::read_run(store, summary.id)?)?
                }
                Picked::File(path) => from_file(&path)?,
            });
        }
    }
    html::name_apart(&mut runs);
    let title = match runs.as_slice() {
        [one] => format!("fsynclab report: {}", one.label),
        _ => format!("fsynclab report: {} runs", runs.len()),
    };
    Ok(Page {
        title,
        runs,
        matrix: None,
    })
}

fn from_file(path: &std::path::Path) -> Result<PageRun> {
    let mut result = RunResult::load(path)?;
    if result.samples.is_empty() {
        if let Some(at) = result.stored.clone() {
            // A suite's file keeps its samples in the store; the page wants them.
            if let Ok(store) = Store::open_read_only(std::path::Path::new(&at.store)) {
                if let Ok(run) = store.run(crate::store::RunId(at.run)) {
                    if run.uid == at.uid {
                        result.samples = recording::samples_of(&run.samples).map_err(anyhow::Error::msg)?;
                    }
                }
            }
        }
    }
    let samples = SampleColumns::from_records(&result.samples);
    Ok(PageRun::from_result(&path.display().to_string(), &result, samples))
}

fn matrix_page(args: &ReportArgs, id: &str) -> Result<Page> {
    let (store, _) = recording::open_for_reading(args.store.store.as_deref())?;
    let mut stored = StoredMatrix::load(&store, id)?;
    if let Some(host) = &args.host {
        stored.runs.retain(|r| r.host.as_deref() == Some(host.as_str()));
        if stored.runs.is_empty() {
            return Err(crate::error::Usage(format!("matrix {id} has no run of host {host}")).into());
        }
    }
    let asked: Vec<String> = args.figure.iter().cloned().collect();
    let figure = stored
        .figures(&asked)?
        .into_iter()
        .next()
        .ok_or_else(|| crate::error::Usage(format!("matrix {id} has no complete run yet")))?;
    let table = stored.table(&figure, None)?;
    let mut runs = Vec::new();
    for (label, run_id) in stored.median_runs(&figure) {
        let mut run = PageRun::from_stored(&recording::read_run(&store, run_id)?)?;
        run.label = format!("{label} (run {run_id}, the median {figure})");
        runs.push(run);
    }
    Ok(Page {
        title: format!(
            "fsynclab matrix {id}: {} by {}",
            stored.plan.scenario, table.column_axis
        ),
        runs,
        matrix: Some(table),
    })
}
