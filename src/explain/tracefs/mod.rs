//! The tracer: kernel events and off-CPU stacks of the measured threads, recorded in a
//! private tracefs instance for the length of a run.
//!
//! What is enabled, and why (filters keep the volume to what the attribution reads):
//! - `sched_switch` and `sched_waking` of the watched threads and of the filesystem's
//!   journal thread (jbd2, btrfs-transaction): when each left the CPU, in which state, and
//!   who woke it. A `stacktrace` trigger on `sched_switch` (`prev_state & 2`: an
//!   uninterruptible sleep) prints the kernel stack at each such sleep, which says what it
//!   waited for (`jbd2_log_wait_commit`, `folio_wait_writeback`, `balance_dirty_pages`...);
//!   an interruptible sleep (a futex) is told by who woke it.
//! - `jbd2` commit phases and run statistics, `xfs_log_force`, `btrfs_transaction_commit`
//!   on the filesystem's device: the commits a sync call can wait behind.
//! - `block_rq_issue`/`block_rq_complete` on the disk under the filesystem: cache flushes
//!   (`F` in rwbs) and the writes the device worked through meanwhile.
//! - `balance_dirty_pages`, `folio_wait_writeback` and `global_dirty_state` of the watched
//!   threads; `writeback_start`/`written` of the disk's bdi.
//!
//! Every event costs the traced call a little; the kernel stacks cost the most (about
//! 10 µs per sleep on the project VM, `cargo bench --bench explain_overhead`). Events the
//! attribution does not read (`ext4_sync_file_enter`, `xfs_file_fsync`...) are left off.
//!
//! The trace clock is `mono`, CLOCK_MONOTONIC, the clock of Rust's `Instant` and so of the
//! run clock. A thread of its own watches how full the buffer is during the run and drains
//! `trace_pipe` before it overflows (see `reader::read_pipes` for why not more often); events the
//! kernel still had to drop are counted from the `[LOST N EVENTS]` notes and the per-CPU
//! `overrun`/`dropped events` statistics.
//!
//! A process tree (`exec --explain`: a command and everything it starts) is followed in a
//! second instance whose events the kernel keeps to the tree itself: its `set_event_pid`
//! holds the thread that starts the command (and the journal threads), and the
//! `event-fork` option adds every task a listed task forks, process or thread, as it is
//! made, and removes it when it exits (ftrace.rst, "set_event_pid", "event-fork"). No
//! task of the tree is missed between its fork and its first call, which a filter
//! rewritten as new pids are noticed could not promise. There, beside the thread events,
//! the system calls of [`filters::tree_syscalls`] are traced, with the thread group of each
//! event (`record-tgid`). The disk's and the journal's events stay in the first instance,
//! since they fire in other tasks' context (interrupts, kworkers, the journal thread).
//!
//! The trace is read into events as it comes: the reader hands each drain's text to a
//! parser thread, which reads it into events and drops it (the text is kept only when
//! [`TraceConfig::keep_text`] asks), each distinct kernel stack kept once and shared. Tracing
//! stops (and says so) once the events hold [`TraceConfig::budget_bytes`] of memory, so that
//! the trace's memory is bounded however long the run.
//!
//! The parts: `config` (what to trace: the threads, the filesystem, the settings), `trace`
//! (a finished trace, and its saved form), `filters` (which events, for which threads),
//! `reader` (the threads that drain the trace buffer as it fills and parse it); this file starts and
//! stops the tracefs instances.

use std::os::unix::fs::OpenOptionsExt as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};

use super::events::EventKind;
use crate::measure::clock::monotonic_ns;
use crate::testbed::state::Undo;
use crate::testbed::tracefs::Instance;

mod config;
mod filters;
mod reader;
#[cfg(test)]
mod tests;
mod trace;

pub(crate) use config::{current_tid, Task, TraceConfig, TracedFs, Watch, TRACE_BUDGET_BYTES};
use filters::{events_for, filters, journal_threads, tree_events, tree_syscalls, Filter, STACK_STATES};
pub(crate) use filters::{F_DUPFD, F_DUPFD_CLOEXEC, MS_SYNC, O_DSYNC, O_SYNC_ONLY};
#[cfg(test)]
use reader::merge_by_time;
pub(crate) use reader::thread_cpu_ns;
use reader::{parse_cpu_stats_lost, read_pipes, Fill, Read, Source};
pub(crate) use trace::Trace;

/// Tracing in progress. [`Tracing::stop`] returns the trace; dropping it without stopping
/// still removes the instance.
pub(crate) struct Tracing {
    instance: Instance,
    /// The process tree's instance, when one is followed.
    tree: Option<Instance>,
    config: TraceConfig,
    watch: Mutex<Watch>,
    journal: Vec<Task>,
    missing: Vec<String>,
    enabled: Vec<(&'static str, Filter)>,
    marker: Mutex<Option<std::fs::File>>,
    started_ns: u64,
    stop_flag: Arc<AtomicBool>,
    reader: Option<JoinHandle<Result<Read>>>,
    /// Removes the instance (and tracefs, if mounted here) on every way out.
    undo: Undo,
}

/// How often the reader checks how full the buffer is.
pub(super) const CHECK_INTERVAL: Duration = Duration::from_millis(100);

impl Tracing {
    /// Starts tracing as `config` says. Needs root and tracefs; the error says what is missing.
    pub(crate) fn start(config: TraceConfig) -> Result<Tracing> {
        Tracing::start_with(config, Undo::new())
    }

    /// [`Tracing::start`] recording its undo steps in `undo` (tests keep their state files apart).
    pub(crate) fn start_with(config: TraceConfig, mut undo: Undo) -> Result<Tracing> {
        if !crate::sys::is_root() {
            bail!(crate::error::Usage(
                "tracing the kernel needs root (tracefs): run fsynclab as root".into()
            ));
        }
        if config.watch.is_empty() {
            bail!("nothing to trace: no thread to watch");
        }
        let instance = Instance::make(&mut undo)?;
        let tree = match config.watch.process_tree {
            Some(_) => Some(Instance::make(&mut undo)?),
            None => None,
        };
        let journal = journal_threads(&config.fs);
        let mut tracer = Tracing {
            instance,
            tree,
            watch: Mutex::new(config.watch.clone()),
            journal,
            missing: Vec::new(),
            enabled: Vec::new(),
            marker: Mutex::new(None),
            started_ns: 0,
            stop_flag: Arc::new(AtomicBool::new(false)),
            reader: None,
            undo,
            config,
        };
        tracer.configure()?;
        Ok(tracer)
    }

    fn configure(&mut self) -> Result<()> {
        Self::set_clock_and_buffer(&self.instance, self.config.buffer_kb_per_cpu)?;
        let threads_here = self.tree.is_none();
        for (event, filter) in events_for(&self.config.fs, threads_here) {
            let dir = format!("events/{event}");
            if !self.instance.exists(&dir) {
                self.missing.push(event.to_string());
                continue;
            }
            let expr = match filter {
                Filter::FsDev => self.config.fs.dev.map(|d| format!("dev == {}", d.kernel_dev_t())),
                Filter::Disk => self.config.fs.disk.map(|d| format!("dev == {}", d.kernel_dev_t())),
                Filter::Bdi => self.config.fs.disk.map(|d| format!("name == \"{d}\"")),
                // Set with the threads below.
                Filter::Switch | Filter::Wakeup | Filter::Current | Filter::None => None,
            };
            if let Some(expr) = expr {
                self.instance.write(&format!("{dir}/filter"), &expr)?;
            }
            self.enabled.push((event, filter));
        }
        if threads_here {
            let watch = self
                .watch
                .lock()
                .map_err(|_| anyhow::anyhow!("watch list poisoned"))?
                .clone();
            self.apply_thread_filters(&watch)?;
        }
        for (event, _) in &self.enabled {
            self.instance.write(&format!("events/{event}/enable"), "1")?;
        }
        if self.config.watch.process_tree.is_some() {
            self.configure_tree()?;
        }
        let mut sources = vec![self.source(&self.instance)?];
        if let Some(tree) = &self.tree {
            sources.push(self.source(tree)?);
        }
        let marker = std::fs::OpenOptions::new()
            .write(true)
            .open(self.instance.path("trace_marker"))
            .context("cannot open trace_marker")?;
        *self.marker.lock().map_err(|_| anyhow::anyhow!("marker poisoned"))? = Some(marker);
        let flag = Arc::clone(&self.stop_flag);
        let (budget, keep_text) = (self.config.budget_bytes, self.config.keep_text);
        self.reader = Some(
            std::thread::Builder::new()
                .name("trace-reader".into())
                .spawn(move || read_pipes(sources, budget, keep_text, &flag))
                .context("cannot start the trace reader thread")?,
        );
        // The pid list last, once fsynclab's own threads (the reader) exist: a thread the
        // root starts from now on is followed as part of the tree.
        if let (Some(tree), Some(root)) = (&self.tree, self.config.watch.process_tree) {
            tree.write("options/event-fork", "1")?;
            let pids: Vec<String> = std::iter::once(root)
                .chain(self.journal.iter().map(|t| t.pid))
                .map(|p| p.to_string())
                .collect();
            tree.write("set_event_pid", &pids.join(" "))?;
        }
        self.started_ns = monotonic_ns();
        if let Some(tree) = &self.tree {
            tree.write("tracing_on", "1")?;
        }
        self.instance.write("tracing_on", "1")
    }

    /// Tracing off, the `mono` clock (the run clock's), and the buffer size.
    fn set_clock_and_buffer(inst: &Instance, buffer_kb_per_cpu: u32) -> Result<()> {
        inst.write("tracing_on", "0")?;
        let clocks = inst.read("trace_clock")?;
        if !clocks.split_whitespace().any(|c| c.trim_matches(['[', ']']) == "mono") {
            bail!(
                "this kernel's tracefs offers no `mono` trace clock (offers: {})",
                clocks.trim()
            );
        }
        inst.write("trace_clock", "mono")?;
        inst.write("buffer_size_kb", &buffer_kb_per_cpu.to_string())
    }

    /// The events of the process tree's instance (its pid list is set last, in `configure`).
    fn configure_tree(&mut self) -> Result<()> {
        let Some(tree) = &self.tree else {
            return Ok(());
        };
        Self::set_clock_and_buffer(tree, self.config.buffer_kb_per_cpu)?;
        tree.write("options/record-tgid", "1")?;
        let mut events: Vec<(String, Option<String>)> =
            tree_events().into_iter().map(|e| (e.to_string(), None)).collect();
        for (call, filter) in tree_syscalls() {
            events.push((format!("syscalls/sys_enter_{call}"), filter));
            if call != "close" {
                events.push((format!("syscalls/sys_exit_{call}"), None));
            }
        }
        for (event, filter) in events {
            let dir = format!("events/{event}");
            if !tree.exists(&dir) {
                self.missing.push(event);
                continue;
            }
            if let Some(expr) = filter {
                tree.write(&format!("{dir}/filter"), &expr)?;
            }
            tree.write(&format!("{dir}/enable"), "1")?;
        }
        if self.config.stacks && tree.exists("events/sched/sched_switch") {
            tree.write(
                "events/sched/sched_switch/trigger",
                &format!("stacktrace if {STACK_STATES}"),
            )?;
        }
        Ok(())
    }

    /// An instance's pipe, opened for the reader.
    fn source(&self, inst: &Instance) -> Result<Source> {
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(inst.path("trace_pipe"))
            .context("cannot open trace_pipe")?;
        Ok(Source {
            pipe,
            fill: Fill::open(inst, self.config.buffer_kb_per_cpu),
            tracing_on: inst.path("tracing_on"),
        })
    }

    /// Sets the filters and the stack trigger that follow the watched and journal threads.
    fn apply_thread_filters(&self, watch: &Watch) -> Result<()> {
        let f = filters(watch, &self.journal);
        let inst = &self.instance;
        for (event, filter) in &self.enabled {
            let expr = match filter {
                Filter::Switch => &f.switch,
                Filter::Wakeup => &f.wakeup,
                Filter::Current => &f.current,
                _ => continue,
            };
            inst.write(&format!("events/{event}/filter"), expr)?;
        }
        if self.config.stacks && self.enabled.iter().any(|(e, _)| *e == "sched/sched_switch") {
            let trigger = "events/sched/sched_switch/trigger";
            // A second stacktrace trigger is refused (EEXIST): remove the old one first.
            if inst.read(trigger)?.lines().any(|l| l.starts_with("stacktrace")) {
                inst.write(trigger, "!stacktrace")?;
            }
            inst.write(trigger, &f.trigger)?;
        }
        Ok(())
    }

    /// Writes `text` into the trace as a marker event (`tracing_mark_write`).
    pub(crate) fn mark(&self, text: &str) -> Result<()> {
        use std::io::Write as _;
        let mut guard = self.marker.lock().map_err(|_| anyhow::anyhow!("marker poisoned"))?;
        let file = guard.as_mut().context("the tracer is stopped")?;
        file.write_all(text.as_bytes()).context("cannot write to trace_marker")
    }

    /// Stops tracing, removes the instances and returns the trace.
    pub(crate) fn stop(mut self) -> Result<Trace> {
        let stopped_ns = monotonic_ns();
        let off = self.instance.write("tracing_on", "0");
        let tree_off = self.tree.as_ref().map_or(Ok(()), |t| t.write("tracing_on", "0"));
        let read = self.join_reader()?;
        off?;
        tree_off?;
        let dropped = self.dropped_events();
        *self.marker.lock().map_err(|_| anyhow::anyhow!("marker poisoned"))? = None;
        let outcome = self.undo.undo_all();
        if !outcome.is_complete() {
            bail!("{}", outcome.failed.join("; "));
        }
        let Some(read) = read else {
            bail!("the trace reader did not run");
        };
        let mut watched = self
            .watch
            .lock()
            .map_err(|_| anyhow::anyhow!("watch list poisoned"))?
            .clone();
        if let Some(root) = watched.process_tree {
            watched.tids = tree_members(root, &read.parsed.events);
        }
        Ok(Trace {
            origin_ns: self.config.origin_ns,
            started_ns: self.started_ns,
            stopped_ns: read.cut_at_ns.map_or(stopped_ns, |cut| cut.min(stopped_ns)),
            cut_at_ns: read.cut_at_ns,
            text_bytes: read.bytes,
            fs: self.config.fs.clone(),
            watched,
            journal_threads: self.journal.clone(),
            missing_events: std::mem::take(&mut self.missing),
            lost_events: read.parsed.lost_events.max(dropped),
            unparsed_lines: read.parsed.unparsed_lines,
            reader_cpu_ns: read.cpu_ns,
            events: read.parsed.events,
            text: read.text,
        })
    }

    fn join_reader(&mut self) -> Result<Option<Read>> {
        self.stop_flag.store(true, Ordering::SeqCst);
        match self.reader.take() {
            Some(h) => {
                h.thread().unpark();
                h.join()
                    .map_err(|_| anyhow::anyhow!("the trace reader thread panicked"))?
                    .map(Some)
            }
            None => Ok(None),
        }
    }

    /// Events lost on any CPU: the `overrun` (overwritten) and `dropped events` counts of
    /// `per_cpu/cpuN/stats` (ftrace.rst, "per_cpu/cpuX/stats").
    fn dropped_events(&self) -> u64 {
        std::iter::once(&self.instance)
            .chain(self.tree.as_ref())
            .filter_map(|inst| std::fs::read_dir(inst.path("per_cpu")).ok())
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stats")).ok())
            .map(|s| parse_cpu_stats_lost(&s))
            .sum()
    }
}

/// The root and every task it started, by the fork events of its tree, in order.
fn tree_members(root: u32, events: &[super::events::Event]) -> Vec<u32> {
    let mut members = vec![root];
    for e in events {
        if let EventKind::SchedProcessFork {
            parent_pid, child_pid, ..
        } = &e.kind
        {
            if members.contains(parent_pid) && !members.contains(child_pid) {
                members.push(*child_pid);
            }
        }
    }
    members
}

impl Drop for Tracing {
    fn drop(&mut self) {
        // Stopped already, or stop failed: the reader is gone. Otherwise close everything
        // the instance holds open before the undo stack (dropped after this) removes it.
        let _ = self.instance.write("tracing_on", "0");
        if let Some(tree) = &self.tree {
            let _ = tree.write("tracing_on", "0");
        }
        let _ = self.join_reader();
        if let Ok(mut m) = self.marker.lock() {
            *m = None;
        }
    }
}
