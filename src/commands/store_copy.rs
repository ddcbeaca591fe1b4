//! `fsynclab store ...`: commands on whole results stores. `store copy FROM TO` moves every
//! run and matrix of one store into another (a laptop's SQLite file into a farm's
//! PostgreSQL database, or back), as [`crate::store::Store::copy_into`] does it.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::StoreCommand;
use crate::error::Usage;
use crate::recording;
use crate::store::{Location, Store};

pub(crate) fn run(command: &StoreCommand) -> Result<i32> {
    match command {
        StoreCommand::Copy { from, to } => copy(from, to),
    }
}

/// Whether two locations name one store: the same database address, or the same file
/// (by device and inode, whatever the spelling).
fn same_store(a: &Location, b: &Location) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (a, b) {
        (Location::File(a), Location::File(b)) => match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => (x.dev(), x.ino()) == (y.dev(), y.ino()),
            _ => false,
        },
        (Location::Postgres(a), Location::Postgres(b)) => a.full() == b.full(),
        _ => false,
    }
}

fn copy(from: &Path, to: &Path) -> Result<i32> {
    let user = |p: &Path| Location::from_user(p).map_err(|e| Usage(format!("store copy: {e}")));
    let (from, to) = (user(from)?, user(to)?);
    if same_store(&from, &to) {
        return Err(Usage(format!(
            "store copy: {} and {} are one store: name two",
            recording::shown_store(&from),
            recording::shown_store(&to)
        ))
        .into());
    }
    let source = recording::read_store_at(&from)?;
    let refuse = |e: crate::store::StoreError| Usage(format!("{e}; nothing was copied"));
    let mut target = Store::open(&to).map_err(refuse)?;
    target.check_writable().map_err(refuse)?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("copy [{bar:30}] {pos}/{len} runs")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar
    });
    let copied = source.copy_into(&mut target, |done, total| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let copied = copied?;
    for (was, is) in &copied.renamed {
        println!(
            "matrix {was} is {is} in {} ({was} there is another matrix)",
            recording::shown_store(&to)
        );
    }
    println!(
        "copied {} run{} and {} matri{} from {} to {}{}",
        copied.runs,
        if copied.runs == 1 { "" } else { "s" },
        copied.matrices,
        if copied.matrices == 1 { "x" } else { "ces" },
        recording::shown_store(&from),
        recording::shown_store(&to),
        match copied.already {
            0 => String::new(),
            n => format!(" ({n} {} there already)", if n == 1 { "was" } else { "were" }),
        }
    );
    Ok(0)
}
