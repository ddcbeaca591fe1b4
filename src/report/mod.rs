//! Presentation: one exporter per `--format` (text, seed, json) behind [`Exporter`], and
//! [`Live`], the observer that shows progress on stderr and prints an exporter's live lines
//! while a run goes on. The engine never prints; it only emits events and a result.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::observe::{Event, Observer, Unit};
use crate::result::RunResult;
use crate::stop::Stop;
use crate::units::format_latency_ns;

pub(crate) mod failures;
pub(crate) mod json;
pub(crate) mod seed;
pub(crate) mod text;

pub(crate) trait Exporter {
    /// A line to print on stdout now, while the run goes on.
    fn live_line(&mut self, _event: &Event<'_>) -> Option<String> {
        None
    }
    /// The output once the run is over (or of a saved result).
    fn render(&self, result: &RunResult) -> String;
}

/// The exporter of `format`; `live` when a run is going on (the seed format then prints its
/// The output formats of `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A summary table per operation kind and the background writer's throughput.
    Text,
    /// The lines the seed's original programs printed, as they happen.
    Seed,
    /// The full result with every call (schema/result-v1.schema.json).
    Json,
}

/// lines as they happen, and nothing at the end).
pub(crate) fn exporter(format: Format, live: bool) -> Box<dyn Exporter> {
    match format {
        Format::Text => Box::new(text::Text),
        Format::Seed => Box::new(seed::Seed { live }),
        Format::Json => Box::new(json::Json),
    }
}

/// Prints `text` on stdout, reporting (not panicking on) a closed pipe.
pub(crate) fn print_stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// The exit status after writing `text` to stdout: 141 when its reader went away.
pub(crate) fn print(text: &str) -> anyhow::Result<i32> {
    match print_stdout(text) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(141),
        r => r.map(|()| 0).map_err(Into::into),
    }
}

/// Shows progress on stderr (when it is a terminal and not `--quiet`) and prints the
/// exporter's live lines on stdout without tearing the bar.
pub(crate) struct Live<'a> {
    exporter: &'a mut dyn Exporter,
    bar: Option<ProgressBar>,
    show_progress: bool,
    worst_ns: u64,
    sync_calls: u64,
    /// Set when stdout's reader went away (`| head`), to end the run.
    stop: Option<&'a Stop>,
    stdout_closed: bool,
}

impl<'a> Live<'a> {
    pub(crate) fn new(exporter: &'a mut dyn Exporter, quiet: bool, stop: Option<&'a Stop>) -> Live<'a> {
        Live {
            exporter,
            bar: None,
            show_progress: !quiet && std::io::stderr().is_terminal(),
            worst_ns: 0,
            sync_calls: 0,
            stop,
            stdout_closed: false,
        }
    }

    /// Whether a live line could not be printed because stdout's reader is gone.
    pub(crate) fn stdout_closed(&self) -> bool {
        self.stdout_closed
    }

    pub(crate) fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    fn start_phase(&mut self, name: &str, total: Option<u64>, unit: Unit) {
        self.finish();
        if !self.show_progress {
            return;
        }
        let bar = match total {
            Some(t) => ProgressBar::with_draw_target(Some(t), ProgressDrawTarget::stderr()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        };
        let template = match (total, unit) {
            (None, _) => "{spinner} {prefix} {elapsed} {msg}",
            (_, Unit::Bytes) => "{prefix} [{bar:30}] {bytes}/{total_bytes} {msg}",
            (_, Unit::Millis) => "{prefix} [{bar:30}] {elapsed}/{duration_total} {msg}",
            (_, Unit::Items) => "{prefix} [{bar:30}] {pos}/{len} {msg}",
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key(
                "duration_total",
                |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}s", s.len().unwrap_or(0) / 1000);
                },
            )
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(name.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        self.bar = Some(bar);
    }
}

impl Observer for Live<'_> {
    fn event(&mut self, event: Event<'_>) {
        if let Some(line) = self.exporter.live_line(&event).filter(|_| !self.stdout_closed) {
            let print = || print_stdout(&format!("{line}\n"));
            let printed = match &self.bar {
                Some(bar) => bar.suspend(print),
                None => print(),
            };
            if printed.is_err() {
                // A closed pipe or a full disk behind stdout: nobody sees the rest, so the
                // run ends (and cleans up) instead of measuring for nobody.
                self.stdout_closed = true;
                if let Some(stop) = self.stop {
                    stop.set();
                }
            }
        }
        match event {
            Event::Phase { name, total, unit } => self.start_phase(name, total, unit),
            Event::Progress { done } => {
                if let Some(bar) = &self.bar {
                    bar.set_position(done);
                }
            }
            Event::Sample(s) if s.op.is_sync() => {
                self.sync_calls += 1;
                self.worst_ns = self.worst_ns.max(s.latency_ns);
                if let Some(bar) = &self.bar {
                    bar.set_message(format!(
                        "{} calls, last {} {}, worst {}",
                        self.sync_calls,
                        s.op,
                        format_latency_ns(s.latency_ns),
                        format_latency_ns(self.worst_ns)
                    ));
                }
            }
            _ => {}
        }
    }
}
