//! `fsynclab completions SHELL` and `fsynclab manpages DIR`: what a shell and `man` need,
//! generated from the clap definitions so that they cannot drift from `--help`.
//!
//! One man page per command, named as git's are: `fsynclab.1`, `fsynclab-run.1`,
//! `fsynclab-store-copy.1`; hidden commands get none.

use std::fs;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;
use crate::error::Usage;

/// Prints the completion script of `shell` on stdout.
pub(crate) fn completions(shell: Shell) -> Result<i32> {
    let mut command = with_scenario_names(Cli::command());
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "fsynclab", &mut script);
    let mut out = std::io::stdout().lock();
    match out.write_all(&script).and_then(|()| out.flush()) {
        Ok(()) => Ok(0),
        // A closed pipe (`| head`) is the reader's choice, not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(e).context("writing the completion script"),
    }
}

/// The command line with the scenario arguments offering the scenarios' names, so that
/// `fsynclab run <TAB>` completes them (the parser itself keeps its own message for an
/// unknown name, which names `fsynclab list`).
fn with_scenario_names(command: clap::Command) -> clap::Command {
    let names: Vec<&'static str> = crate::scenario::all().iter().map(|s| s.name()).collect();
    let offer = |arg: clap::Arg| arg.value_parser(clap::builder::PossibleValuesParser::new(names.clone()));
    command
        .mut_subcommand("run", |c| c.mut_arg("scenario", offer))
        .mut_subcommand("list", |c| c.mut_arg("scenario", offer))
        .mut_subcommand("matrix", |c| c.mut_arg("scenario", offer))
}

/// Writes one man page per command into `dir` (made if missing) and lists them.
pub(crate) fn manpages(dir: &Path) -> Result<i32> {
    if dir.exists() && !dir.is_dir() {
        return Err(Usage(format!(
            "manpages {}: that is a file; name a directory to write the pages into (it is made if missing)",
            dir.display()
        ))
        .into());
    }
    // A place that cannot be written is bad input, as an unwritable --output is (exit 2).
    let unwritable = |why: String| {
        Usage(format!(
            "manpages {}: {why}; name a directory you can write",
            dir.display()
        ))
    };
    if let Err(e) = fs::create_dir_all(dir) {
        return Err(match e.kind() {
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                unwritable(format!("cannot make it ({e})")).into()
            }
            _ => anyhow::Error::new(e).context(format!("making {}", dir.display())),
        });
    }
    if !crate::sys::writable(dir) {
        return Err(unwritable(format!("cannot write into it ({})", crate::sys::why_not_writable(dir))).into());
    }
    let mut command = Cli::command();
    command.build();
    let mut written = Vec::new();
    write_pages(&command, "fsynclab", dir, &mut written)?;
    println!(
        "{} man pages in {} (try: man -l {})",
        written.len(),
        dir.display(),
        dir.join("fsynclab-run.1").display()
    );
    Ok(0)
}

/// Writes the page of `command` as `name.1`, then those of its visible subcommands.
fn write_pages(command: &clap::Command, name: &str, dir: &Path, written: &mut Vec<String>) -> Result<()> {
    let page = command.clone().name(name.to_string()).bin_name(name.replace('-', " "));
    let mut text = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut text)
        .context("rendering a man page")?;
    let path = dir.join(format!("{name}.1"));
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    written.push(name.to_string());
    for sub in command
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
