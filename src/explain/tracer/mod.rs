//! The tracer: kernel events and off-CPU stacks of the measured threads, recorded in a
//! private tracefs instance for the length of a run.
//!
//! What is enabled, and why (filters keep the volume to what the attribution reads):
//! - `sched_switch` and `sched_wakeup` of the watched threads and of the filesystem's
//!   journal thread (jbd2, btrfs-transaction): when each left the CPU, in which state, and
//!   who woke it. A `stacktrace` trigger on `sched_switch` (`prev_state & 3`: sleeping,
//!   interruptible or not) prints the kernel stack at each sleep, which says what it waited
//!   for (`jbd2_log_wait_commit`, `folio_wait_writeback`, `balance_dirty_pages`...).
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
//! `trace_pipe` before it overflows (see `read_pipe` for why not more often); events the
//! kernel still had to drop are counted from the `[LOST N EVENTS]` notes and the per-CPU
//! `overrun`/`dropped events` statistics.
//!
//! The parts: `trace` (a finished trace, and its saved form), `filters` (which events, for
//! which threads), `reader` (the thread that drains the trace buffer as it fills).

use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};

use super::events::{parse_trace, Dev};
use crate::environment::device_numbers;
use crate::kernel::{block, mount_of, mounts};
use crate::measure::clock::monotonic_ns;
use crate::testbed::state::Undo;
use crate::testbed::tracefs::Instance;

mod filters;
mod reader;
#[cfg(test)]
mod tests;
mod trace;

use filters::{events_for, filters, journal_threads, Filter};
pub(crate) use reader::thread_cpu_ns;
use reader::{parse_cpu_stats_lost, read_pipe, Fill};
pub(crate) use trace::Trace;

/// The threads whose calls are measured: by thread id, and/or every thread with a given
/// name (comm), which also catches threads made after the tracer started.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Watch {
    pub(crate) tids: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) comms: Vec<String>,
}

impl Watch {
    pub(crate) fn threads(tids: &[u32]) -> Watch {
        Watch {
            tids: tids.to_vec(),
            comms: Vec::new(),
        }
    }

    /// Every thread named `comm` (at most 15 bytes, as the kernel keeps it).
    #[cfg(test)]
    pub(crate) fn comm(comm: &str) -> Watch {
        Watch {
            tids: Vec::new(),
            comms: vec![comm.chars().take(15).collect()],
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tids.is_empty() && self.comms.is_empty()
    }
}

/// The calling thread's id (`gettid(2)`), as the kernel names it in events.
pub(crate) fn current_tid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// A task and its name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Task {
    pub(crate) pid: u32,
    pub(crate) comm: String,
}

/// The filesystem under test, as far as tracing cares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct TracedFs {
    /// `ext4`, `xfs`, `btrfs`, ... (`ext2`/`ext3` are served by the ext4 driver).
    pub(crate) fstype: String,
    /// The block device the filesystem is on (a partition's own numbers).
    pub(crate) dev: Option<Dev>,
    /// Its kernel name (`loop0`, `vda1`), as jbd2 names its thread.
    pub(crate) dev_name: Option<String>,
    /// The whole disk, where block events are reported.
    pub(crate) disk: Option<Dev>,
}

impl TracedFs {
    /// The filesystem that holds `path`, from /proc/self/mountinfo and sysfs.
    pub(crate) fn of_path(path: &Path) -> TracedFs {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mounts = mounts();
        let Some(m) = mount_of(&mounts, &canonical) else {
            return TracedFs::default();
        };
        let (major, minor) = device_numbers(m);
        let dev = Dev { major, minor };
        let dev_name = block::name(major, minor);
        let disk = block::disk_dir(major, minor)
            .and_then(|d| std::fs::read_to_string(d.join("dev")).ok())
            .and_then(|s| s.trim().parse().ok());
        TracedFs {
            fstype: m.fstype.clone(),
            dev: dev_name.is_some().then_some(dev),
            dev_name,
            disk,
        }
    }

    fn is_ext4(&self) -> bool {
        matches!(self.fstype.as_str(), "ext2" | "ext3" | "ext4")
    }
}

/// What to trace.
#[derive(Clone, Debug)]
pub(crate) struct TraceConfig {
    pub(crate) watch: Watch,
    pub(crate) fs: TracedFs,
    /// CLOCK_MONOTONIC at the run clock's zero ([`crate::measure::RunClock::origin_monotonic_ns`]).
    pub(crate) origin_ns: u64,
    /// Ring buffer per CPU, KiB.
    pub(crate) buffer_kb_per_cpu: u32,
    /// Keep the raw trace text in [`Trace::text`] (for fixtures and debugging).
    pub(crate) keep_text: bool,
    /// Record the kernel stack at each sleep of a watched thread: what tells the causes of
    /// a wait apart, and most of the tracing's cost (`cargo bench --bench explain_overhead`).
    pub(crate) stacks: bool,
}

impl TraceConfig {
    pub(crate) fn new(watch: Watch, fs: TracedFs, origin_ns: u64) -> TraceConfig {
        TraceConfig {
            watch,
            fs,
            origin_ns,
            buffer_kb_per_cpu: 8192,
            keep_text: false,
            stacks: true,
        }
    }
}

/// Tracing in progress. [`Tracer::stop`] returns the trace; dropping it without stopping
/// still removes the instance.
pub(crate) struct Tracer {
    instance: Instance,
    config: TraceConfig,
    watch: Mutex<Watch>,
    journal: Vec<Task>,
    missing: Vec<String>,
    enabled: Vec<(&'static str, Filter)>,
    marker: Mutex<Option<std::fs::File>>,
    started_ns: u64,
    stop_flag: Arc<AtomicBool>,
    reader: Option<JoinHandle<Result<(String, u64)>>>,
    /// Removes the instance (and tracefs, if mounted here) on every way out.
    undo: Undo,
}

/// How often the reader checks how full the buffer is.
pub(super) const CHECK_INTERVAL: Duration = Duration::from_millis(100);

impl Tracer {
    /// Starts tracing as `config` says. Needs root and tracefs; the error says what is missing.
    pub(crate) fn start(config: TraceConfig) -> Result<Tracer> {
        Tracer::start_with(config, Undo::new())
    }

    /// [`Tracer::start`] recording its undo steps in `undo` (tests keep their state files apart).
    pub(crate) fn start_with(config: TraceConfig, mut undo: Undo) -> Result<Tracer> {
        if !crate::sys::is_root() {
            bail!(crate::error::Usage(
                "tracing the kernel needs root (tracefs): run fsynclab as root".into()
            ));
        }
        if config.watch.is_empty() {
            bail!("nothing to trace: no thread to watch");
        }
        let instance = Instance::make(&mut undo)?;
        let journal = journal_threads(&config.fs);
        let mut tracer = Tracer {
            instance,
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
        let inst = &self.instance;
        inst.write("tracing_on", "0")?;
        let clocks = inst.read("trace_clock")?;
        if !clocks.split_whitespace().any(|c| c.trim_matches(['[', ']']) == "mono") {
            bail!(
                "this kernel's tracefs offers no `mono` trace clock (offers: {})",
                clocks.trim()
            );
        }
        inst.write("trace_clock", "mono")?;
        inst.write("buffer_size_kb", &self.config.buffer_kb_per_cpu.to_string())?;
        for (event, filter) in events_for(&self.config.fs) {
            let dir = format!("events/{event}");
            if !inst.exists(&dir) {
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
                inst.write(&format!("{dir}/filter"), &expr)?;
            }
            self.enabled.push((event, filter));
        }
        let watch = self
            .watch
            .lock()
            .map_err(|_| anyhow::anyhow!("watch list poisoned"))?
            .clone();
        self.apply_thread_filters(&watch)?;
        for (event, _) in &self.enabled {
            inst.write(&format!("events/{event}/enable"), "1")?;
        }
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(inst.path("trace_pipe"))
            .context("cannot open trace_pipe")?;
        let marker = std::fs::OpenOptions::new()
            .write(true)
            .open(inst.path("trace_marker"))
            .context("cannot open trace_marker")?;
        *self.marker.lock().map_err(|_| anyhow::anyhow!("marker poisoned"))? = Some(marker);
        let flag = Arc::clone(&self.stop_flag);
        let fill = Fill::open(inst, self.config.buffer_kb_per_cpu);
        self.reader = Some(
            std::thread::Builder::new()
                .name("trace-reader".into())
                .spawn(move || read_pipe(pipe, fill, &flag))
                .context("cannot start the trace reader thread")?,
        );
        self.started_ns = monotonic_ns();
        inst.write("tracing_on", "1")
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

    /// Stops tracing, removes the instance and returns the trace.
    pub(crate) fn stop(mut self) -> Result<Trace> {
        let stopped_ns = monotonic_ns();
        let off = self.instance.write("tracing_on", "0");
        let (text, reader_cpu_ns) = self.join_reader()?;
        off?;
        let dropped = self.dropped_events();
        *self.marker.lock().map_err(|_| anyhow::anyhow!("marker poisoned"))? = None;
        let outcome = self.undo.undo_all();
        if !outcome.is_complete() {
            bail!("{}", outcome.failed.join("; "));
        }
        let parsed = parse_trace(&text);
        let watched = self
            .watch
            .lock()
            .map_err(|_| anyhow::anyhow!("watch list poisoned"))?
            .clone();
        Ok(Trace {
            origin_ns: self.config.origin_ns,
            started_ns: self.started_ns,
            stopped_ns,
            fs: self.config.fs.clone(),
            watched,
            journal_threads: self.journal.clone(),
            missing_events: std::mem::take(&mut self.missing),
            lost_events: parsed.lost_events.max(dropped),
            unparsed_lines: parsed.unparsed_lines,
            reader_cpu_ns,
            events: parsed.events,
            text: self.config.keep_text.then_some(text),
        })
    }

    fn join_reader(&mut self) -> Result<(String, u64)> {
        self.stop_flag.store(true, Ordering::SeqCst);
        match self.reader.take() {
            Some(h) => {
                h.thread().unpark();
                h.join()
                    .map_err(|_| anyhow::anyhow!("the trace reader thread panicked"))?
            }
            None => Ok((String::new(), 0)),
        }
    }

    /// Events lost on any CPU: the `overrun` (overwritten) and `dropped events` counts of
    /// `per_cpu/cpuN/stats` (ftrace.rst, "per_cpu/cpuX/stats").
    fn dropped_events(&self) -> u64 {
        let Ok(cpus) = std::fs::read_dir(self.instance.path("per_cpu")) else {
            return 0;
        };
        cpus.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stats")).ok())
            .map(|s| parse_cpu_stats_lost(&s))
            .sum()
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        // Stopped already, or stop failed: the reader is gone. Otherwise close everything
        // the instance holds open before the undo stack (dropped after this) removes it.
        let _ = self.instance.write("tracing_on", "0");
        let _ = self.join_reader();
        if let Ok(mut m) = self.marker.lock() {
            *m = None;
        }
    }
}
