//! Making a matrix's runs: each one on a freshly made testbed, round-robin over the cells,
//! recorded in the store as soon as it ends (so an interruption loses at most the run under
//! way), with a progress bar (or a line per run off a terminal) and an ETA from the runs
//! made so far. [`make_run`] is the one way a run of a matrix is made: by this loop, and by
//! a scheduler's task (`--run-cell`) on a farm's node.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::compare::run_figures;
use crate::matrix::plan::{Cell, CellPlace, Plan};
use crate::recording::{self, Recording};
use crate::report::{self, Format, Live};
use crate::run::engine::Status;
use crate::run::session::{Opened, Session};
use crate::store::{MatrixPlace, RunFilter, Store};

/// How the matrix ended.
pub(crate) enum Ended {
    /// Every run is in the store.
    Complete,
    /// A signal stopped it; the run under way was not kept.
    Interrupted(i32),
}

/// The (repetition, cell) slots of `plan` that have no complete run in the store yet.
pub(crate) fn remaining(store: &Store, matrix_id: &str, plan: &Plan) -> Result<Vec<(u32, usize)>> {
    let done = store.runs(&RunFilter {
        matrix_id: Some(matrix_id.to_string()),
        ..Default::default()
    })?;
    let cells = plan.cells();
    Ok(plan
        .order()
        .into_iter()
        .filter(|(rep, c)| {
            !done.iter().any(|r| {
                !r.interrupted
                    && r.matrix
                        .as_ref()
                        .is_some_and(|m| m.repetition == *rep && m.axes == cells[*c])
            })
        })
        .collect())
}

/// A span of time for a person: `40s`, `2m40s`, `1h05m`.
pub(crate) fn clock(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// `device=ram coordination=none #2`.
pub(crate) fn slot_label(cell: &Cell, rep: u32) -> String {
    let axes: Vec<String> = cell.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{} #{}", axes.join(" "), rep + 1)
}

/// Shows progress: a bar on a terminal, a line per run elsewhere, nothing with `--quiet`.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
    total: usize,
    done: usize,
    started: Instant,
    made: usize,
}

impl Progress {
    pub(crate) fn new(total: usize, done: usize, quiet: bool) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} runs  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix("matrix");
            bar.set_position(done as u64);
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        Progress {
            bar,
            lines: !quiet && !terminal,
            total,
            done,
            started: Instant::now(),
            made: 0,
        }
    }

    /// The time left, from the mean wall time of the runs made so far.
    fn eta(&self) -> String {
        if self.made == 0 {
            return "?".into();
        }
        let per_run = self.started.elapsed().as_secs_f64() / self.made as f64;
        clock(Duration::from_secs_f64(per_run * (self.total - self.done) as f64))
    }

    pub(crate) fn starting(&self, label: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{label}, about {} left", self.eta()));
        }
    }

    pub(crate) fn finished(&mut self, line: String) {
        self.done += 1;
        self.made += 1;
        let line = match self.total - self.done {
            0 => format!("[{}/{}] {line}", self.done, self.total),
            _ => format!("[{}/{}] {line}; about {} left", self.done, self.total, self.eta()),
        };
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.done as u64);
                bar.println(line);
            }
            None if self.lines => note!("{line}"),
            None => {}
        }
    }

    pub(crate) fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => note!("{line}"),
        }
    }

    pub(crate) fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Runs counted as done so far, and how long since the progress began.
    pub(crate) fn made(&self) -> (usize, Duration) {
        (self.made, self.started.elapsed())
    }
}

/// What making one run of a matrix came to.
pub(crate) enum Made {
    /// Made and recorded; the line that says so, and a signal that came after the
    /// measurement (the run is whole and kept).
    Run { line: String, late_signal: Option<i32> },
    /// Another process makes it, or has stored it meanwhile: why.
    LeftToOther(String),
    /// A signal stopped it; the run was not kept.
    Interrupted(i32),
}

/// Makes the run of `cell`'s repetition `rep` of matrix `matrix_id`: claimed in the store,
/// measured on a freshly made testbed through a [`Session`], recorded at its place.
pub(crate) fn make_run(
    plan: &Plan,
    matrix_id: &str,
    rep: u32,
    cell: &Cell,
    recording: &mut Recording,
    progress: &Progress,
) -> Result<Made> {
    let label = slot_label(cell, rep);
    let place = MatrixPlace {
        matrix_id: matrix_id.to_string(),
        axes: cell.clone(),
        repetition: rep,
    };
    // A cell of another host is not this host's to make.
    super::placement::check_here(cell)?;
    // Claimed before anything is made: another process may be making this run.
    if let Some(store) = recording.store_mut() {
        if let Some(why) = crate::matrix::claim::take(store, &place)? {
            return Ok(Made::LeftToOther(format!("{label}: {why}; left to it")));
        }
    }
    progress.starting(&label);
    let t0 = Instant::now();
    let planned = plan.planned_for(cell)?;
    let request = plan.target_for(cell)?;
    // A freshly made testbed for every run: mkfs, loop device, emulated disk, sysctls,
    // all undone when the session closes at the end of the run.
    let opened = Session::open(&request, planned.plan.space_needed(), "that run was not made")
        .with_context(|| format!("matrix {matrix_id}, {label}: cannot prepare the testbed"))?;
    let session = match opened {
        Opened::Ready(s) => s,
        Opened::Interrupted(sig) => return Ok(Made::Interrupted(sig)),
    };
    let mut exporter = report::exporter(Format::Text, true);
    let finished = {
        let mut live = Live::new(exporter.as_mut(), true, None);
        session.measure(&planned, false, &mut live)
    };
    let late_signal = session.close();
    let mut finished = finished.with_context(|| format!("matrix {matrix_id}, {label}"))?;
    if let Status::Interrupted(sig) = finished.status {
        note!("fsynclab: matrix {matrix_id}: interrupted during {label}; that run was not kept");
        return Ok(Made::Interrupted(sig));
    }
    let id = match recording.record(&mut finished.result, Some(&place)) {
        Ok(id) => id,
        Err(e) => return Err(recording::keep_elsewhere(&finished.result, e)),
    };
    let status = match &finished.status {
        Status::Errors { count, .. } => format!(" ({count} calls failed, recorded)"),
        _ => String::new(),
    };
    // A scheduler's task says where it ran (unless host is an axis, which says it).
    let host = match &finished.result.environment.host {
        Some(h) if h.job.is_some() && cell.host().is_none() => format!(" on {}", h.name),
        _ => String::new(),
    };
    Ok(Made::Run {
        line: format!(
            "{label}: run {}{host}{}{status} in {:.1} s",
            id.map_or("-".to_string(), |i| i.to_string()),
            main_figure(&finished.result),
            t0.elapsed().as_secs_f64()
        ),
        late_signal,
    })
}

/// `, commit.tps 1070 tps`: the run's main figure for a progress line.
pub(crate) fn main_figure(result: &crate::result::RunResult) -> String {
    run_figures("", result)
        .ok()
        .and_then(|f| {
            f.main_figure()
                .and_then(|m| f.values.get(&m).map(|v| format!(", {m} {} {}", m.format(*v), m.unit())))
        })
        .unwrap_or_default()
}

/// Makes the runs of `slots`, recording each in `recording` at its place in `matrix_id`.
pub(crate) fn execute(
    plan: &Plan,
    matrix_id: &str,
    slots: &[(u32, usize)],
    recording: &mut Recording,
    quiet: bool,
) -> Result<Ended> {
    let cells = plan.cells();
    let total = plan.order().len();
    let mut progress = Progress::new(total, total - slots.len(), quiet);
    for &(rep, c) in slots {
        match make_run(plan, matrix_id, rep, &cells[c], recording, &progress) {
            Ok(Made::Run { line, late_signal }) => {
                progress.finished(line);
                if let Some(sig) = late_signal {
                    progress.clear();
                    return Ok(Ended::Interrupted(sig));
                }
            }
            Ok(Made::LeftToOther(why)) => progress.say(&why),
            Ok(Made::Interrupted(sig)) => {
                progress.clear();
                return Ok(Ended::Interrupted(sig));
            }
            Err(e) => {
                progress.clear();
                return Err(e);
            }
        }
    }
    progress.clear();
    if !quiet {
        let (made, took) = progress.made();
        progress.say(&format!("matrix {matrix_id}: {made} runs made in {}", clock(took)));
    }
    Ok(Ended::Complete)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_of_time_read_as_a_clock() {
        assert_eq!(clock(Duration::from_secs(40)), "40s");
        assert_eq!(clock(Duration::from_secs(113)), "1m53s");
        assert_eq!(clock(Duration::from_secs(160)), "2m40s");
        assert_eq!(clock(Duration::from_secs(3900)), "1h05m");
    }
}
