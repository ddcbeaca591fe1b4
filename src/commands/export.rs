//! `fsynclab export RUN`: a stored run written out, as its JSON result or its samples as CSV.

use std::io::{self, Write};

use anyhow::Result;

use super::select::run_id;
use crate::cli::{ExportArgs, ExportFormat};
use crate::recording;

/// `fsynclab export RUN`: the run as its JSON result, or its samples as CSV, streamed to a
/// file (atomically) or stdout.
pub(crate) fn export(args: &ExportArgs) -> Result<i32> {
    let id = run_id(&args.run, "export")?;
    let (store, store_path) = recording::open_for_reading(args.store.store.as_deref())?;
    if let Some(path) = &args.output {
        crate::named_file::check(path, store_path.as_file())?;
    }
    let run = recording::read_run(&store, id)?;
    let write = |out: &mut dyn Write| -> Result<()> {
        match args.format {
            ExportFormat::Json => {
                run.write_result_json(&mut *out, false)?;
                out.write_all(b"\n")?;
            }
            ExportFormat::Csv => run.samples.write_csv(&mut *out)?,
        }
        Ok(out.flush()?)
    };
    match &args.output {
        Some(path) => {
            crate::named_file::write(path, store_path.as_file(), |out| write(out))?;
            note!("run {id}: {} calls written to {}", run.samples.len(), path.display());
            Ok(0)
        }
        None => {
            let stdout = io::stdout();
            let mut out = io::BufWriter::with_capacity(1 << 20, stdout.lock());
            match write(&mut out) {
                Err(e)
                    if e.downcast_ref::<io::Error>()
                        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) =>
                {
                    Ok(141)
                }
                Err(e)
                    if e.downcast_ref::<serde_json::Error>()
                        .and_then(|e| e.io_error_kind())
                        .is_some_and(|k| k == io::ErrorKind::BrokenPipe) =>
                {
                    Ok(141)
                }
                r => r.map(|()| 0),
            }
        }
    }
}
