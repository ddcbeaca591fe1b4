//! The progress of a series of recorded runs (a matrix, a farm's tasks followed, a
//! reproduction): a line per run counted `[done/total]`, and with an ETA from the mean wall
//! time of the runs made so far, a bar on a terminal instead of the lines (nothing with
//! `--quiet`).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::units::clock;

/// Shows progress: a bar on a terminal, a line per run elsewhere, nothing with `--quiet`;
/// or, [`Progress::counted`], a line per run without an ETA.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
    /// Whether a line says the time left.
    eta: bool,
    total: usize,
    done: usize,
    started: Instant,
    made: usize,
}

impl Progress {
    /// A matrix's progress: `done` of `total` runs already made, a bar and an ETA.
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
            eta: true,
            total,
            done,
            started: Instant::now(),
            made: 0,
        }
    }

    /// A line per run, `[done/total] line`, without a bar or an ETA (nothing when `quiet`).
    pub(crate) fn counted(total: usize, quiet: bool) -> Progress {
        Progress {
            bar: None,
            lines: !quiet,
            eta: false,
            total,
            done: 0,
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

    /// Counts one more run done, and says `line` about it.
    pub(crate) fn finished(&mut self, line: String) {
        self.done += 1;
        self.made += 1;
        let line = match self.total - self.done {
            left if left > 0 && self.eta => {
                format!("[{}/{}] {line}; about {} left", self.done, self.total, self.eta())
            }
            _ => format!("[{}/{}] {line}", self.done, self.total),
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
